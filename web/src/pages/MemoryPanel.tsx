import { useEffect, useState } from "react";
import { describe } from "../api";
import { loadBlocks, type Block } from "../memory";
import { Link } from "../router";
import { lineAnchor } from "../toolLines";

/** The agent's core memory beside the chat, read again whenever `version` changes (a memory
 * tool answered, a turn ended): what the agent knows, as it learns it. */
export function MemoryPanel({ agentId, version }: { agentId: string; version: number }) {
  const [blocks, setBlocks] = useState<Block[] | null>(null);
  const [failure, setFailure] = useState<string | null>(null);

  useEffect(() => {
    let current = true;
    loadBlocks(agentId).then(
      (found) => {
        if (!current) return;
        setBlocks(found);
        setFailure(null);
      },
      (e) => current && setFailure(describe(e)),
    );
    return () => {
      current = false;
    };
  }, [agentId, version]);

  return (
    <aside className="memory-panel" aria-label="Core memory" aria-busy={blocks === null}>
      <h2>Core memory</h2>
      {failure && (
        <p className="error" role="alert">
          {failure}
        </p>
      )}
      {blocks?.map((block) => (
        <section key={block.name} aria-label={`Block ${block.name}`}>
          <h3>
            {block.name} <span className="muted small">{block.percent_used}% full</span>
          </h3>
          {block.lines.length === 0 ? (
            <p className="muted small">Empty.</p>
          ) : (
            <ol>
              {block.lines.map((line, i) => (
                <li key={i} id={lineAnchor(block.name, i + 1)} tabIndex={-1}>
                  {line}
                </li>
              ))}
            </ol>
          )}
        </section>
      ))}
      <p className="small">
        <Link href={`/agents/${encodeURIComponent(agentId)}`}>Edit memory</Link>
      </p>
    </aside>
  );
}
