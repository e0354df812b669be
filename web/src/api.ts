// The one way the app talks to the API: JSON in and out, `{code, message}` errors thrown as
// ApiError, and in google mode the access token kept in memory (never in storage), renewed
// through the refresh cookie when a call answers 401, then the call retried once.

export type AuthMode = "local" | "google";

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: unknown;

  constructor(status: number, code: string, message: string, details?: unknown) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

let mode: AuthMode | null = null;
let accessToken: string | null = null;
let refreshing: Promise<boolean> | null = null;

/** The server writes its AUTH_MODE into the page it serves (api/webapp). */
export function authMode(): AuthMode {
  if (mode === null) {
    const meta = document.querySelector<HTMLMetaElement>('meta[name="auth-mode"]');
    mode = meta?.content === "google" ? "google" : "local";
  }
  return mode;
}

/** For tests and the Vite dev server, where no server wrote the page. */
export function setAuthMode(value: AuthMode): void {
  mode = value;
  accessToken = null;
}

export function signedIn(): boolean {
  return authMode() === "local" || accessToken !== null;
}

/** One refresh at a time: two calls failing together share it, as the cookie rotates. */
export function refreshSession(): Promise<boolean> {
  if (authMode() === "local") return Promise.resolve(true);
  refreshing ??= (async () => {
    try {
      const response = await fetch("/auth/refresh", { method: "POST", credentials: "same-origin" });
      if (!response.ok) {
        accessToken = null;
        return false;
      }
      const body = (await response.json()) as { access_token: string };
      accessToken = body.access_token;
      return true;
    } catch {
      accessToken = null;
      return false;
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

export function signInUrl(returnTo: string): string {
  return `/auth/google/login?return_to=${encodeURIComponent(returnTo)}`;
}

export async function signOut(): Promise<void> {
  if (authMode() === "google") {
    await fetch("/auth/logout", { method: "POST", credentials: "same-origin" });
  }
  accessToken = null;
}

function withAuth(init: RequestInit): RequestInit {
  const headers = new Headers(init.headers);
  if (accessToken !== null) headers.set("Authorization", `Bearer ${accessToken}`);
  return { ...init, headers, credentials: "same-origin" };
}

/** fetch with the session: a 401 in google mode refreshes the token and retries once. */
export async function authFetch(path: string, init: RequestInit = {}): Promise<Response> {
  let response = await fetch(path, withAuth(init));
  if (response.status === 401 && authMode() === "google" && (await refreshSession())) {
    response = await fetch(path, withAuth(init));
  }
  if (!response.ok) throw await errorOf(response);
  return response;
}

/** The thrown error for a failed answer: the API's `{code, message}`, or the bare status. */
export async function errorOf(response: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    // Not JSON: a proxy's page, say; the status is all there is.
  }
  if (body && typeof body === "object" && "code" in body && "message" in body) {
    const { code, message, details } = body as { code: string; message: string; details?: unknown };
    return new ApiError(response.status, String(code), String(message), details);
  }
  return new ApiError(
    response.status,
    `http_${response.status}`,
    `The server answered ${response.status} ${response.statusText}`.trim(),
  );
}

export async function api<T>(
  method: string,
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await authFetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

export const get = <T>(path: string, signal?: AbortSignal) => api<T>("GET", path, undefined, signal);
export const post = <T>(path: string, body?: unknown) => api<T>("POST", path, body);
export const put = <T>(path: string, body?: unknown) => api<T>("PUT", path, body);
export const patch = <T>(path: string, body?: unknown) => api<T>("PATCH", path, body);
export const del = (path: string) => api<void>("DELETE", path);

/** A person-readable line for anything thrown (the server's message, never its code). */
export function describe(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof Error) return error.message;
  return String(error);
}

/** POSTs a file as the request body with upload progress (fetch reports none), with the
 * session as authFetch sends it: a 401 in google mode refreshes and retries once. */
export async function upload<T>(path: string, file: Blob | FormData, onProgress: (fraction: number) => void): Promise<T> {
  const send = () =>
    new Promise<{ status: number; statusText: string; body: string }>((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", path);
      xhr.withCredentials = true;
      xhr.setRequestHeader("Accept", "application/json");
      if (accessToken !== null) xhr.setRequestHeader("Authorization", `Bearer ${accessToken}`);
      xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
      xhr.onload = () => resolve({ status: xhr.status, statusText: xhr.statusText, body: xhr.responseText });
      xhr.onerror = () => reject(new Error("The upload failed: the server could not be reached."));
      xhr.send(file);
    });
  let answer = await send();
  if (answer.status === 401 && authMode() === "google" && (await refreshSession())) answer = await send();
  const response = new Response(answer.body || null, { status: answer.status, statusText: answer.statusText });
  if (!response.ok) throw await errorOf(response);
  onProgress(1);
  return (await response.json()) as T;
}

/** Saves what a GET answers as a file named as the server names it (Content-Disposition). */
export async function download(path: string, fallbackName: string): Promise<void> {
  const response = await authFetch(path);
  const named = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") ?? "");
  const url = URL.createObjectURL(await response.blob());
  try {
    const link = document.createElement("a");
    link.href = url;
    link.download = named?.[1] ?? fallbackName;
    document.body.append(link);
    link.click();
    link.remove();
  } finally {
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  }
}
