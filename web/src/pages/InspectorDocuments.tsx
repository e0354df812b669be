import { useCallback, useEffect, useRef, useState, type FormEvent } from "react";
import { ApiError, del, describe, get } from "../api";
import {
  ACCEPT,
  MAX_BYTES,
  documentsPath,
  nextPoll,
  sizeText,
  stateText,
  uploadDocument,
  type AgentDocument,
} from "../documents";
import { InlineConfirm } from "../InlineConfirm";

/** The agent's documents: upload one, see it processed until it is ready (or why it failed),
 * delete one. */
export function InspectorDocuments({ agentId }: { agentId: string }) {
  const [docs, setDocs] = useState<AgentDocument[] | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [progress, setProgress] = useState<number | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [polled, setPolled] = useState(0);
  const picker = useRef<HTMLInputElement>(null);

  const load = useCallback(async () => {
    try {
      setDocs((await get<{ documents: AgentDocument[] }>(documentsPath(agentId))).documents);
    } catch (e) {
      setFailure(describe(e));
    }
  }, [agentId]);

  useEffect(() => {
    load();
  }, [load]);

  // While one is processing, each such document is read again (its own GET, which also sends
  // one whose worker stopped to another), less often as time goes by; leaving the page stops it.
  useEffect(() => {
    const wait = docs && nextPoll(docs, polled);
    if (wait == null) return;
    let current = true;
    const timer = setTimeout(async () => {
      const fresh = await Promise.all(
        (docs ?? []).map((d) =>
          d.state === "processing"
            ? get<AgentDocument>(`${documentsPath(agentId)}/${d.id}`).catch((e: unknown) =>
                // Deleted meanwhile (another tab): gone from the list, and no longer polled.
                e instanceof ApiError && e.status === 404 ? null : d,
              )
            : Promise.resolve(d),
        ),
      );
      if (!current) return;
      const gone = new Set((docs ?? []).filter((_, i) => fresh[i] === null).map((d) => d.id));
      setDocs((old) =>
        (old ?? [])
          .filter((d) => !gone.has(d.id))
          .map((d) => fresh.find((f) => f?.id === d.id) ?? d),
      );
      setPolled((n) => n + 1);
    }, wait);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [docs, polled, agentId]);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const file = picker.current?.files?.[0];
    setFailure(null);
    setDone(null);
    if (!file) {
      setFailure("Choose a file to upload first.");
      picker.current?.focus();
      return;
    }
    setProgress(0);
    try {
      const doc = await uploadDocument(agentId, file, setProgress);
      setDocs((old) => [doc, ...(old ?? []).filter((d) => d.id !== doc.id)]);
      setPolled(0);
      setDone(`Uploaded ${doc.file_name}.`);
      if (picker.current) picker.current.value = "";
    } catch (e) {
      setFailure(describe(e));
    } finally {
      setProgress(null);
    }
  }

  async function remove(doc: AgentDocument) {
    setFailure(null);
    setDone(null);
    try {
      await del(`${documentsPath(agentId)}/${doc.id}`);
      setDocs((old) => (old ?? []).filter((d) => d.id !== doc.id));
      setDone(`Deleted ${doc.file_name}.`);
    } catch (e) {
      setFailure(describe(e));
    }
  }

  return (
    <section aria-labelledby="documents-title" className="inspector-section documents">
      <h2 id="documents-title">Documents</h2>
      <p className="muted">Files the agent searches with its retrieve tool, citing where each passage comes from.</p>
      <form className="upload" aria-label="Upload a document" onSubmit={submit}>
        <label htmlFor="document-file">File</label>
        <div className="row">
          <input id="document-file" ref={picker} type="file" accept={ACCEPT} aria-describedby="document-file-help" />
          <button type="submit" disabled={progress !== null}>
            Upload
          </button>
        </div>
        <p id="document-file-help" className="muted">
          Text (.txt), Markdown (.md), HTML (.html) or PDF (.pdf), up to {sizeText(MAX_BYTES)}.
        </p>
        {progress !== null && (
          <p aria-live="polite">
            Uploading… <progress value={progress} max={1} aria-label="Upload progress" />
          </p>
        )}
      </form>
      {failure && (
        <p className="error" role="alert">
          {failure}
        </p>
      )}
      <p className="muted" aria-live="polite">
        {done}
      </p>
      {docs === null && !failure && <p aria-live="polite">Loading…</p>}
      {docs?.length === 0 && <p className="muted">No documents yet.</p>}
      {docs && docs.length > 0 && (
        <ul className="document-list" aria-label="Documents">
          {docs.map((d) => (
            <li key={d.id} className="document">
              <span className="document-name">{d.file_name}</span>
              <span className={`document-state ${d.state}`} aria-live="polite">
                {stateText(d)}
              </span>
              <span className="muted">
                {sizeText(d.size_bytes)}
                {d.pages != null && ` · ${d.pages} ${d.pages === 1 ? "page" : "pages"}`}
                {d.state === "ready" && ` · ${d.passages} ${d.passages === 1 ? "passage" : "passages"}`}
              </span>
              <InlineConfirm
                label={`Delete ${d.file_name}`}
                what={`${d.file_name} and its passages go; the agent no longer finds them.`}
                confirmLabel="Yes, delete"
                onConfirm={() => remove(d)}
              />
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
