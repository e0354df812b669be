import { useId, useState, type ChangeEvent } from "react";
import { describe, upload } from "../api";
import { Link } from "../router";

interface Imported {
  agent_id: string;
  agent_name: string;
  created: boolean;
  written: Record<string, number>;
  skipped: { kind: string; reason: string; count: number }[];
  notes: string[];
}

/** Import an export file (ours, or Letta's `.af`) from the page, with the API's checks: the
 * upload's progress, then what was imported, what was skipped and what was changed to fit. */
export function ImportAgent({ onImported }: { onImported: () => void }) {
  const id = useId();
  const [progress, setProgress] = useState<number | null>(null);
  const [imported, setImported] = useState<Imported[] | null>(null);
  const [failure, setFailure] = useState<string | null>(null);

  async function chosen(event: ChangeEvent<HTMLInputElement>) {
    const input = event.currentTarget;
    const file = input.files?.[0];
    if (!file) return;
    setFailure(null);
    setImported(null);
    setProgress(0);
    try {
      const answer = await upload<{ agents: Imported[] }>("/agents/import", file, setProgress);
      setImported(answer.agents);
      onImported();
    } catch (e) {
      setFailure(describe(e));
    } finally {
      setProgress(null);
      input.value = ""; // the same file can be chosen again
    }
  }

  return (
    <details className="panel import">
      <summary>Import an agent</summary>
      <p className="muted small">
        An export file of this server (<code>.jsonl</code>) or a Letta agent file (<code>.af</code>). Importing the same
        file again changes nothing.
      </p>
      <label htmlFor={id}>Export file</label>
      <input id={id} type="file" accept=".jsonl,.af,.json,application/jsonl,application/json" onChange={chosen} disabled={progress !== null} />
      {progress !== null && (
        <p role="status">
          <progress value={progress} max={1} aria-label="Upload" /> {progress < 1 ? `Uploading… ${Math.round(progress * 100)}%` : "Importing…"}
        </p>
      )}
      {failure && (
        <p className="error" role="alert">
          {failure}
        </p>
      )}
      <div aria-live="polite">
      {imported && (
        <ul className="notices" aria-label="Imported">
          {imported.map((a) => (
            <li key={a.agent_id} className="notice ok">
              {a.created ? "Imported" : "Imported before (nothing changed):"} <strong>{a.agent_name}</strong>
              {a.created && ` — ${Object.entries(a.written).map(([kind, n]) => `${n} ${kind}`).join(", ")}`}.{" "}
              <Link href={`/agents/${a.agent_id}/chat`}>Chat with it</Link>
              {a.notes.length > 0 && (
                <ul>
                  {a.notes.map((n, i) => (
                    <li key={i}>{n}</li>
                  ))}
                </ul>
              )}
              {a.skipped.length > 0 && <p className="small">Skipped: {a.skipped.map((s) => `${s.count} ${s.kind} (${s.reason})`).join("; ")}</p>}
            </li>
          ))}
        </ul>
      )}
      </div>
    </details>
  );
}
