// Errors as a person reads them: the server's message (written for people), and where a
// code says what to do next, a link to do it. Machine codes stay out of the text.

import { ApiError } from "./api";
import { Link } from "./router";

const PROVIDER_CODES = new Set([
  "provider_auth_failed",
  "provider_not_configured",
  "stored_settings_invalid",
  "credentials_required",
]);

/** What to do about an error, when the page knows (else nothing). */
export function NextStep({ code }: { code: string }) {
  if (PROVIDER_CODES.has(code)) {
    return (
      <>
        {" "}
        Check the provider's key in <Link href="/settings">Providers</Link>.
      </>
    );
  }
  if (code === "provider_rate_limited" || code === "provider_timeout" || code === "provider_unavailable") {
    return <> Try again in a moment.</>;
  }
  return null;
}

/** An error's message with its next step. */
export function ErrorText({ error }: { error: unknown }) {
  if (error instanceof ApiError) {
    return (
      <>
        {error.message}
        <NextStep code={error.code} />
      </>
    );
  }
  return <>{error instanceof Error ? error.message : String(error)}</>;
}

/** A failure said in words; with `onRetry` (a page whose reading failed), a button that
 * reads it again, so a passing outage does not need a reload that would lose what was typed. */
export function Failure({ message, onRetry }: { message: string; onRetry?: () => void }) {
  return (
    <div className="error failure" role="alert">
      <span>{message}</span>
      {onRetry && (
        <button type="button" className="secondary" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** A 404 for the agent a page is about. */
export const isMissingAgent = (error: unknown): boolean =>
  error instanceof ApiError && error.status === 404 && error.code === "agent_not_found";

/** The page of an agent that does not exist (deleted, or a wrong link): no links into it. */
export function MissingAgent() {
  return (
    <section>
      <h1>No such agent</h1>
      <p>
        There is no agent at this address: it may have been deleted, or the link is wrong.{" "}
        <Link href="/agents">Go to your agents</Link>.
      </p>
    </section>
  );
}

const SIGN_IN_FAILURES: Record<string, string> = {
  access_denied: "Google sign-in was cancelled.",
  email_not_verified: "Your Google account's email address is not verified. Verify it with Google, then sign in again.",
  invalid_state: "The sign-in took too long or was started in another tab. Please sign in again.",
};

/** Why a sign-in failed, from the code the server put in the address. */
export function signInFailure(code: string): string {
  return SIGN_IN_FAILURES[code] ?? "Sign-in failed. Please try again.";
}
