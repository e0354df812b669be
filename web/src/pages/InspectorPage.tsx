import "./memory-and-settings.css";
import { useCallback, useEffect, useState } from "react";
import { describe, get } from "../api";
import { Failure, isMissingAgent, MissingAgent } from "../errors";
import { loadBlocks, loadForms, type Block, type MemoryForms } from "../memory";
import { Link, useLocation } from "../router";
import { linkedMemory } from "../sources";
import type { Agent } from "../types";
import { InspectorArchival } from "./InspectorArchival";
import { InspectorBlocks } from "./InspectorBlocks";
import { InspectorMessages } from "./InspectorMessages";
import { InspectorDocuments } from "./InspectorDocuments";
import { useSpecialistNames } from "../specialists";

/** The memory inspector of one agent (seed 004's dashboard_url lands here): core blocks,
 * archival memory, messages. */
export function InspectorPage({ agentId }: { agentId: string }) {
  const [agent, setAgent] = useState<Agent | null>(null);
  const [blocks, setBlocks] = useState<Block[] | null>(null);
  const [forms, setForms] = useState<MemoryForms | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [missing, setMissing] = useState(false);
  const [attempt, setAttempt] = useState(0); // a retry reads the page again
  // A reply's "Used N memories" links here with the memory's id in the hash.
  const linked = linkedMemory(useLocation().hash);

  const reload = useCallback(async () => {
    try {
      setBlocks(await loadBlocks(agentId));
    } catch (e) {
      setFailure(describe(e));
    }
  }, [agentId]);

  useEffect(() => {
    setFailure(null);
    setMissing(false);
    Promise.all([get<Agent>(`/agents/${encodeURIComponent(agentId)}`), loadBlocks(agentId), loadForms(agentId)]).then(
      ([a, b, f]) => {
        setAgent(a);
        setBlocks(b);
        setForms(f);
      },
      (e) => (isMissingAgent(e) ? setMissing(true) : setFailure(describe(e))),
    );
  }, [agentId, attempt]);

  const saved = (block: Block) => setBlocks((old) => (old ?? []).map((b) => (b.name === block.name ? block : b)));
  const agentPath = `/agents/${encodeURIComponent(agentId)}`;
  const specialists = useSpecialistNames(agent);

  if (missing) return <MissingAgent />;
  return (
    <section className="inspector">
      <h1>{agent ? `Memory of ${agent.name}` : "Memory"}</h1>
      <p className="actions">
        <Link href={`${agentPath}/chat`}>Chat with this agent</Link>
        <Link href={`${agentPath}/edit`}>Edit the agent</Link>
        <Link href={`${agentPath}/context`}>Context window</Link>
        <Link href="/agents">All agents</Link>
      </p>
      {agent?.specialists && agent.specialists.length > 0 && (
        <p className="specialists">
          Asks its specialists:{" "}
          {agent.specialists.map((id, i) => (
            <span key={id}>
              {i > 0 && ", "}
              <Link href={`/agents/${encodeURIComponent(id)}`}>{specialists[id] ?? "an agent"}</Link>
            </span>
          ))}
        </p>
      )}
      {failure && (
        <Failure
          message={failure}
          onRetry={
            !blocks || !forms
              ? () => {
                  setFailure(null);
                  setAttempt((n) => n + 1);
                }
              : undefined
          }
        />
      )}
      {!failure && (!blocks || !forms) && <p aria-live="polite">Loading…</p>}
      {blocks && forms && (
        <div className="inspector-grid">
          <InspectorBlocks agentId={agentId} blocks={blocks} blockForm={forms.block.fields} onSaved={saved} reload={reload} />
          <div className="inspector-side">
            <InspectorArchival agentId={agentId} form={forms.archival.fields} linked={linked} />
            <InspectorDocuments agentId={agentId} />
            <InspectorMessages agentId={agentId} />
          </div>
        </div>
      )}
    </section>
  );
}
