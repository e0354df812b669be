import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError, get, post, setAuthMode } from "./api";

type Call = { url: string; init: RequestInit };

function fakeFetch(answers: Response[]): Call[] {
  const calls: Call[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (url: string, init: RequestInit) => {
      calls.push({ url, init });
      const next = answers.shift();
      if (!next) throw new Error(`unexpected call to ${url}`);
      return next;
    }),
  );
  return calls;
}

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
const auth = (c: Call) => new Headers(c.init.headers).get("Authorization");

afterEach(() => {
  vi.unstubAllGlobals();
  setAuthMode("local");
});

describe("api", () => {
  it("throws the API's {code, message} as ApiError, with a 422's details", async () => {
    setAuthMode("local");
    fakeFetch([json({ code: "validation_error", message: "The request is not valid", details: { errors: [] } }, 422)]);
    const error = await post("/agents", { name: "" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 422, code: "validation_error", message: "The request is not valid" });
  });

  it("names the status when the answer is not the API's JSON", async () => {
    setAuthMode("local");
    fakeFetch([new Response("<html>bad gateway</html>", { status: 502, statusText: "Bad Gateway" })]);
    await expect(get("/agents")).rejects.toMatchObject({ code: "http_502" });
  });

  it("in local mode sends no token and never refreshes", async () => {
    setAuthMode("local");
    const calls = fakeFetch([json({ code: "not_authenticated", message: "no" }, 401)]);
    await expect(get("/agents")).rejects.toMatchObject({ status: 401 });
    expect(calls.map((c) => c.url)).toEqual(["/agents"]);
    expect(auth(calls[0])).toBeNull();
  });

  it("in google mode refreshes once on a 401 and retries with the new token", async () => {
    setAuthMode("google");
    const calls = fakeFetch([
      json({ code: "invalid_token", message: "expired" }, 401),
      json({ access_token: "fresh", token_type: "bearer", expires_in: 900 }),
      json([{ id: "a1" }]),
    ]);
    expect(await get("/agents")).toEqual([{ id: "a1" }]);
    expect(calls.map((c) => `${c.init.method ?? "GET"} ${c.url}`)).toEqual([
      "GET /agents",
      "POST /auth/refresh",
      "GET /agents",
    ]);
    expect(calls[1].init.credentials).toBe("same-origin");
    expect(auth(calls[2])).toBe("Bearer fresh");
  });

  it("in google mode gives up after one refresh that fails", async () => {
    setAuthMode("google");
    const calls = fakeFetch([
      json({ code: "invalid_token", message: "expired" }, 401),
      json({ code: "refresh_token_reused", message: "signed out" }, 401),
    ]);
    await expect(get("/agents")).rejects.toMatchObject({ code: "invalid_token" });
    expect(calls).toHaveLength(2);
  });

  it("shares one refresh between calls failing together (the cookie rotates)", async () => {
    setAuthMode("google");
    const calls = fakeFetch([
      json({ code: "invalid_token", message: "expired" }, 401),
      json({ code: "invalid_token", message: "expired" }, 401),
      json({ access_token: "t2", token_type: "bearer", expires_in: 900 }),
      json({ ok: 1 }),
      json({ ok: 2 }),
    ]);
    const both = await Promise.all([get("/a"), get("/b")]);
    expect(both).toEqual([{ ok: 1 }, { ok: 2 }]);
    expect(calls.filter((c) => c.url === "/auth/refresh")).toHaveLength(1);
  });
});
