import { useEffect, useState } from "react";
import { authMode, describe, refreshSession, signedIn, signInUrl, signOut } from "./api";
import { signInFailure } from "./errors";
import { useFocusOnNavigation, useHeadingTitle } from "./headings";
import { Link, navigate, useLocation } from "./router";
import { page } from "./routes";

type Session = "checking" | "in" | "out";

export function App() {
  const url = useLocation();
  const [session, setSession] = useState<Session>(signedIn() ? "in" : "checking");
  const [failure, setFailure] = useState<string | null>(null);
  useHeadingTitle();
  useFocusOnNavigation(url.pathname);

  useEffect(() => {
    if (url.pathname === "/") navigate("/agents" + url.search, true); // keeps ?auth_error=
  }, [url.pathname]);

  useEffect(() => {
    if (session !== "checking") return;
    refreshSession().then(
      (ok) => setSession(ok ? "in" : "out"),
      (e) => {
        setFailure(describe(e));
        setSession("out");
      },
    );
  }, [session]);

  async function logOut() {
    try {
      await signOut();
    } finally {
      setSession("out");
    }
  }

  const authError = url.searchParams.get("auth_error");
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <Link href="/agents" className="brand">
          Agent memory
        </Link>
        {session === "in" && (
          <nav aria-label="Main">
            <Link href="/agents" aria-current={url.pathname.startsWith("/agents") ? "page" : undefined}>
              Agents
            </Link>
            <Link href="/settings" aria-current={url.pathname === "/settings" ? "page" : undefined}>
              Providers
            </Link>
            {authMode() === "google" && (
              <Link href="/api-keys" aria-current={url.pathname === "/api-keys" ? "page" : undefined}>
                API keys
              </Link>
            )}
            {authMode() === "google" && (
              <button type="button" className="link" onClick={logOut}>
                Log out
              </button>
            )}
          </nav>
        )}
      </header>
      <main id="main" tabIndex={-1}>
        {session === "checking" && <p aria-live="polite">Checking your session…</p>}
        {session === "out" && (
          <section className="sign-in">
            <h1>Sign in</h1>
            {authError && (
              <p className="error" role="alert">
                {signInFailure(authError)}
              </p>
            )}
            {failure && (
              <p className="error" role="alert">
                {failure}
              </p>
            )}
            <p>
              <a className="button" href={signInUrl(url.pathname === "/" ? "/agents" : url.pathname + url.search)}>
                Sign in with Google
              </a>
            </p>
          </section>
        )}
        {session === "in" && page(url.pathname)}
      </main>
    </>
  );
}
