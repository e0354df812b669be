// The route table: the paths are in pages.json, which the server reads too (it answers a
// browser's page request there with the app, the app's fetches with JSON: some paths are
// also the API's). Typed by that file's keys, so a page without a screen does not compile.

import type { ReactNode } from "react";
import { Link, match, type Params } from "./router";
import { AgentsPage } from "./pages/AgentsPage";
import { AgentEditPage } from "./pages/AgentEditPage";
import { ChatPage } from "./pages/ChatPage";
import { InspectorPage } from "./pages/InspectorPage";
import { ContextPage } from "./pages/ContextPage";
import { SettingsPage } from "./pages/SettingsPage";
import { ApiKeysPage } from "./pages/ApiKeysPage";
import PAGES from "./pages.json";

const SCREENS: Record<keyof typeof PAGES, (p: Params) => ReactNode> = {
  agents: () => <AgentsPage />,
  "agent-new": () => <AgentEditPage />,
  "agent-edit": (p) => <AgentEditPage agentId={p.id} />,
  chat: (p) => <ChatPage agentId={p.id} />,
  conversation: (p) => <ChatPage agentId={p.id} conversationId={p.conversation} />,
  context: (p) => <ContextPage agentId={p.id} />,
  inspector: (p) => <InspectorPage agentId={p.id} />,
  settings: () => <SettingsPage />,
  "api-keys": () => <ApiKeysPage />,
};

// In the file's order: "/agents/new" comes before "/agents/:id".
export const ROUTES = Object.entries(PAGES).map(
  ([name, pattern]) => [pattern, SCREENS[name as keyof typeof PAGES]] as const,
);

/** The page at `path`, or one saying there is none. */
export function page(path: string): ReactNode {
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
