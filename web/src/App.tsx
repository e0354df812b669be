import { useEffect, useState, type ReactNode } from "react";
import { authMode, describe, refreshSession, signedIn, signInUrl, signOut } from "./api";
import { Link, match, navigate, useLocation, type Params } from "./router";
import { AgentsPage } from "./pages/AgentsPage";
import { AgentEditPage } from "./pages/AgentEditPage";
import { ChatPage } from "./pages/ChatPage";
import { InspectorPage } from "./pages/InspectorPage";
import { SettingsPage } from "./pages/SettingsPage";
import { ApiKeysPage } from "./pages/ApiKeysPage";
import PAGES from "./pages.json";

// Every page of the app: the paths are in pages.json, which the server reads too (it answers
// a browser's page request there with the app, the app's fetches with JSON: some paths are
// also the API's). Typed by that file's keys, so a page without a screen does not compile.
const SCREENS: Record<keyof typeof PAGES, (p: Params) => ReactNode> = {
  agents: () => <AgentsPage />,
  "agent-new": () => <AgentEditPage />,
  "agent-edit": (p) => <AgentEditPage agentId={p.id} />,
  chat: (p) => <ChatPage agentId={p.id} />,
  conversation: (p) => <ChatPage agentId={p.id} conversationId={p.conversation} />,
  inspector: (p) => <InspectorPage agentId={p.id} />,
  settings: () => <SettingsPage />,
  "api-keys": () => <ApiKeysPage />,
};

// In the file's order: "/agents/new" comes before "/agents/:id".
export const ROUTES = Object.entries(PAGES).map(
  ([name, pattern]) => [pattern, SCREENS[name as keyof typeof PAGES]] as const,
);

function page(path: string): ReactNode {
  for (const [pattern, render] of ROUTES) {
    const params = match(pattern, path);
    if (params) return render(params);
  }
  return (
    <section>
      <h1>Not found</h1>
      <p>
        There is no page at <code>{path}</code>. <Link href="/agents">Go to your agents</Link>.
      </p>
    </section>
  );
}

type Session = "checking" | "in" | "out";

export function App() {
  const url = useLocation();
  const [session, setSession] = useState<Session>(signedIn() ? "in" : "checking");
  const [failure, setFailure] = useState<string | null>(null);

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
                Sign-in failed ({authError}). Please try again.
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
