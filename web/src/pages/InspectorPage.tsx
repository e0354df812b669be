import { Link } from "../router";

/** The memory inspector (seed 004's dashboard_url lands here): part 2 of issue 16. */
export function InspectorPage({ agentId }: { agentId: string }) {
  return (
    <section>
      <h1>Memory</h1>
      <p className="muted">The memory inspector for this agent is not built yet.</p>
      <p className="actions">
        <Link href={`/agents/${encodeURIComponent(agentId)}/chat`}>Chat with this agent</Link>
        <Link href="/agents">All agents</Link>
      </p>
    </section>
  );
}
