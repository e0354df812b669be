import { useEffect, useRef, useState } from "react";
import { del, describe, download, get } from "../api";
import { Failure } from "../errors";
import { ImportAgent } from "./ImportAgent";
import { Link } from "../router";
import type { Agent } from "../types";

export function AgentsPage() {
  const [agents, setAgents] = useState<Agent[] | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [doomed, setDoomed] = useState<Agent | null>(null);

  async function load() {
    try {
      setAgents(await get<Agent[]>("/agents"));
    } catch (e) {
      setFailure(describe(e));
    }
  }
  useEffect(() => {
    load();
  }, []);

  return (
    <section>
      <div className="actions" style={{ justifyContent: "space-between" }}>
        <h1>Your agents</h1>
        <Link className="button" href="/agents/new">
          New agent
        </Link>
      </div>
      {failure && (
        <Failure
          message={failure}
          onRetry={
            agents === null
              ? () => {
                  setFailure(null);
                  load();
                }
              : undefined
          }
        />
      )}
      {agents === null && !failure && <p aria-live="polite">Loading…</p>}
      {agents?.length === 0 && <p>No agents yet. Create one to start chatting.</p>}
      {/* In the API's order: the last used first, then by name. */}
      {agents && agents.length > 0 && (
        <ul className="cards" aria-label="Agents">
          {agents.map((a) => (
            <li className="card" key={a.id}>
              <h2>{a.name}</h2>
              <p className="muted">
                {a.architecture} · {a.provider} / {a.model}
              </p>
              <p className="muted">
                {a.last_used_at ? (
                  <>
                    Last used <time dateTime={a.last_used_at}>{new Date(a.last_used_at).toLocaleString()}</time>
                  </>
                ) : (
                  "Not used yet"
                )}
              </p>
              <div className="actions">
                <Link className="button" href={`/agents/${a.id}/chat`} aria-label={`Chat with ${a.name}`}>
                  Chat
                </Link>
                <Link className="button secondary" href={`/agents/${a.id}`} aria-label={`Memory of ${a.name}`}>
                  Memory
                </Link>
                <Link className="button secondary" href={`/agents/${a.id}/edit`} aria-label={`Edit ${a.name}`}>
                  Edit
                </Link>
                <button
                  type="button"
                  className="secondary"
                  onClick={() => download(`/agents/${a.id}/export`, `agent-${a.id}.jsonl`).catch((e) => setFailure(describe(e)))}
                  aria-label={`Export ${a.name}`}
                >
                  Export
                </button>
                <button type="button" className="danger" onClick={() => setDoomed(a)} aria-label={`Delete ${a.name}`}>
                  Delete
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
      <ImportAgent onImported={load} />
      {doomed && (
        <ConfirmDelete
          agent={doomed}
          onClose={() => setDoomed(null)}
          onDeleted={() => {
            setDoomed(null);
            load();
          }}
        />
      )}
    </section>
  );
}

function ConfirmDelete({ agent, onClose, onDeleted }: { agent: Agent; onClose: () => void; onDeleted: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    dialog.current?.showModal();
    cancel.current?.focus(); // the safe choice first: Enter must not delete anything
  }, []);

  async function confirm() {
    setBusy(true);
    try {
      await del(`/agents/${agent.id}`);
      onDeleted();
    } catch (e) {
      setFailure(describe(e));
      setBusy(false);
    }
  }

  return (
    <dialog ref={dialog} onClose={onClose} aria-labelledby="delete-title" aria-describedby="delete-what">
      <h2 id="delete-title">Delete “{agent.name}”?</h2>
      <p id="delete-what">
        This deletes the agent with everything it keeps: its core memory blocks, its archival memories, and all its
        conversations with their messages. It cannot be undone.
      </p>
      {failure && (
        <p className="error" role="alert">
          {failure}
        </p>
      )}
      <div className="actions">
        <button type="button" className="danger" onClick={confirm} disabled={busy}>
          {busy ? "Deleting…" : "Delete agent and its memory"}
        </button>
        <button type="button" className="secondary" onClick={() => dialog.current?.close()} ref={cancel}>
          Cancel
        </button>
      </div>
    </dialog>
  );
}
