import { useEffect, useState, type FormEvent } from "react";
import { describe, get, post } from "../api";
import { SchemaForm } from "../forms/SchemaForm";
import type { FormField, Payload } from "../forms/schema";
import { InlineConfirm } from "../InlineConfirm";
import {
  blockPath,
  capacity,
  changedBy,
  conflictNotice,
  conflictVersion,
  diffLines,
  memoryPath,
  writeBlock,
  type Block,
  type HistoryEntry,
  type HistoryPage,
  type LineChange,
} from "../memory";

interface Props {
  agentId: string;
  blocks: Block[];
  blockForm: FormField[];
  /** A block as the server answered a write with it. */
  onSaved: (block: Block) => void;
  /** Read every block again (after a conflict, a new block, a deleted one). */
  reload: () => Promise<void>;
}

/** Core memory: every block with its lines and capacity; each edit sends the version read. */
export function InspectorBlocks({ agentId, blocks, blockForm, onSaved, reload }: Props) {
  const [notice, setNotice] = useState<string | null>(null);
  const [creating, setCreating] = useState(false);
  const [formKey, setFormKey] = useState(0);

  /** Runs a write; a lost race says so and reloads, anything else is thrown to the caller. */
  async function guarded(block: Block, write: () => Promise<void>): Promise<boolean> {
    setNotice(null);
    try {
      await write();
      return true;
    } catch (e) {
      const current = conflictVersion(e);
      if (current === null) throw e;
      setNotice(conflictNotice(block.name, block.version, current));
      await reload();
      return false;
    }
  }

  async function create(payload: Payload) {
    await post<Block>(memoryPath(agentId, "/blocks"), payload);
    setCreating(false);
    setFormKey((k) => k + 1); // empty for the next one
    await reload();
  }

  return (
    <section aria-labelledby="core-title" className="inspector-section">
      <h2 id="core-title">Core memory</h2>
      {notice && (
        <p className="notice" role="alert">
          {notice}
        </p>
      )}
      <div className="blocks">
        {blocks.map((block) => (
          <BlockCard
            key={block.name}
            agentId={agentId}
            block={block}
            definition={blockForm.filter((f) => f.name === "description" || f.name === "word_limit")}
            guarded={guarded}
            onSaved={onSaved}
            reload={reload}
          />
        ))}
      </div>
      {blockForm.length > 0 && (
        <details className="panel" open={creating} onToggle={(e) => setCreating(e.currentTarget.open)}>
          <summary>New block</summary>
          <SchemaForm key={formKey} fields={blockForm} submitLabel="Create block" onSubmit={create} />
        </details>
      )}
    </section>
  );
}

interface CardProps {
  agentId: string;
  block: Block;
  definition: FormField[];
  guarded: (block: Block, write: () => Promise<void>) => Promise<boolean>;
  onSaved: (block: Block) => void;
  reload: () => Promise<void>;
}

function BlockCard({ agentId, block, definition, guarded, onSaved, reload }: CardProps) {
  const [editing, setEditing] = useState<number | null>(null);
  const [text, setText] = useState("");
  const [newLine, setNewLine] = useState("");
  const [said, setSaid] = useState<string | null>(null); // what an append did, when not the obvious
  const [failure, setFailure] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // The line whose Edit button gets the focus back once its edit closes (saved, cancelled,
  // or moot after a conflict) or the line is deleted: keyboard users stay where they were.
  const [focusLine, setFocusLine] = useState<number | null>(null);
  const titleId = `block-${block.name}`;
  useEffect(() => {
    if (focusLine === null) return;
    setFocusLine(null);
    // That line may be gone (the last one deleted, a reload): then the block's title.
    (document.getElementById(`${titleId}-edit-${focusLine}`) ?? document.getElementById(titleId))?.focus();
  }, [focusLine, titleId]);

  function closeEdit(n: number) {
    setEditing(null);
    setFocusLine(n);
  }

  /** "conflict": the block was reloaded and the edit is moot; "failed": said on the card. */
  async function run(write: () => Promise<void>): Promise<"saved" | "conflict" | "failed"> {
    setFailure(null);
    setBusy(true);
    try {
      return (await guarded(block, write)) ? "saved" : "conflict";
    } catch (e) {
      setFailure(describe(e));
      return "failed";
    } finally {
      setBusy(false);
    }
  }

  const lineWrite = (method: "PUT" | "DELETE", n: number, body?: unknown) => async () => {
    const change = await writeBlock<LineChange>(method, blockPath(agentId, block.name, `/lines/${n}`), block.version, body);
    onSaved(change.block);
  };

  async function saveLine(event: FormEvent, n: number) {
    event.preventDefault();
    // Kept open on a refusal, to fix the text; after a conflict the line may be another one.
    if ((await run(lineWrite("PUT", n, { content: text }))) !== "failed") closeEdit(n);
  }

  async function append(event: FormEvent) {
    event.preventDefault();
    const content = newLine;
    setSaid(null);
    const ok = await run(async () => {
      const change = await writeBlock<LineChange>("POST", blockPath(agentId, block.name, "/lines"), block.version, { content });
      onSaved(change.block);
      if (!change.changed) setSaid(`Line ${change.line_number} already says “${change.line}”: nothing was added.`);
    });
    if (ok === "saved") setNewLine("");
  }

  async function saveDefinition(payload: Payload) {
    // The form's errors (422 and the like) belong to the form; a conflict to the block.
    let thrown: unknown = null;
    await guarded(block, async () => {
      try {
        onSaved(await writeBlock<Block>("PATCH", blockPath(agentId, block.name), block.version, payload));
      } catch (e) {
        if (conflictVersion(e) !== null) throw e;
        thrown = e;
      }
    });
    if (thrown) throw thrown;
  }

  return (
    <article className="block card" aria-labelledby={titleId}>
      <header className="block-head">
        <h3 id={titleId} tabIndex={-1}>
          {block.name}
        </h3>
        {block.is_default && <span className="badge">default</span>}
        {block.warning && <span className="badge warn">near its limit</span>}
        <span className="muted version">version {block.version}</span>
      </header>
      {block.description && <p className="muted">{block.description}</p>}
      <div className="capacity">
        <meter
          min={0}
          max={block.word_limit}
          high={block.word_limit * 0.8}
          value={block.word_count}
          aria-label={`Words used in ${block.name}`}
        />
        <span>{capacity(block)}</span>
      </div>
      {failure && (
        <p className="error" role="alert">
          {failure}
        </p>
      )}
      {block.lines.length === 0 && <p className="muted">No lines yet.</p>}
      <ol className="lines" aria-label={`Lines of ${block.name}`}>
        {block.lines.map((line, i) => {
          const n = i + 1;
          return (
            <li key={`${n}:${line}`}>
              {editing === n ? (
                <form
                  className="line-edit"
                  onSubmit={(e) => saveLine(e, n)}
                  onKeyDown={(e) => {
                    if (e.key === "Escape") closeEdit(n);
                  }}
                >
                  <label className="sr-only" htmlFor={`${titleId}-line-${n}`}>
                    Line {n} of {block.name}
                  </label>
                  <input
                    id={`${titleId}-line-${n}`}
                    value={text}
                    autoFocus
                    onChange={(e) => setText(e.target.value)}
                  />
                  <button type="submit" disabled={busy || text.trim() === ""}>
                    Save
                  </button>
                  <button type="button" className="secondary" onClick={() => closeEdit(n)}>
                    Cancel
                  </button>
                </form>
              ) : (
                <div className="line">
                  <span className="line-text">{line}</span>
                  <span className="line-actions">
                    <button
                      type="button"
                      className="link"
                      id={`${titleId}-edit-${n}`}
                      aria-label={`Edit line ${n} of ${block.name}`}
                      onClick={() => {
                        setEditing(n);
                        setText(line);
                      }}
                    >
                      Edit
                    </button>
                    <InlineConfirm
                      label={`Delete line ${n} of ${block.name}`}
                      what="Remove this line?"
                      confirmLabel="Remove"
                      onConfirm={async () => {
                        await run(lineWrite("DELETE", n));
                        setFocusLine(n); // the line that took its place
                      }}
                    />
                  </span>
                </div>
              )}
            </li>
          );
        })}
      </ol>
      <form className="append" onSubmit={append}>
        <label htmlFor={`${titleId}-append`}>New line for {block.name}</label>
        <div className="row">
          <input
            id={`${titleId}-append`}
            value={newLine}
            onChange={(e) => {
              setNewLine(e.target.value);
              setSaid(null);
            }}
          />
          <button type="submit" disabled={busy || newLine.trim() === ""}>
            Append
          </button>
        </div>
        {said && (
          <p className="notice" role="status">
            {said}
          </p>
        )}
      </form>
      <BlockHistory
        agentId={agentId}
        block={block}
        restore={async (version) => {
          const ok = await run(async () => {
            onSaved(await writeBlock<Block>("POST", blockPath(agentId, block.name, "/restore"), block.version, { version }));
          });
          if (ok === "saved") document.getElementById(titleId)?.focus();
        }}
      />
      {definition.length > 0 && (
        <details>
          <summary>Definition of {block.name}</summary>
          <SchemaForm
            key={block.version}
            fields={definition}
            values={{ description: block.description, word_limit: block.word_limit }}
            submitLabel="Save definition"
            onSubmit={saveDefinition}
          />
          {!block.is_default && (
            <p className="actions">
              <InlineConfirm
                label={`Delete block ${block.name}`}
                what={`Delete [${block.name}] and its ${block.lines.length} lines?`}
                confirmLabel="Delete block"
                onConfirm={async () => {
                  const ok = await run(() => writeBlock<void>("DELETE", blockPath(agentId, block.name), block.version));
                  if (ok === "saved") await reload();
                }}
              />
            </p>
          )}
        </details>
      )}
    </article>
  );
}

const HISTORY_PAGE = 20;

/** A block's versions, newest first, each as the lines it removed and added, who or what
 * made it and when; any earlier version can be brought back as a new one. Read when opened,
 * and again whenever the block moves to another version. */
function BlockHistory({
  agentId,
  block,
  restore,
}: {
  agentId: string;
  block: Block;
  restore: (version: number) => Promise<void>;
}) {
  const [open, setOpen] = useState(false);
  const [entries, setEntries] = useState<HistoryEntry[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const id = `block-${block.name}-history`;
  // The version before the oldest change listed, once the whole history is: the server can
  // rebuild it too (a block's first lines, say).
  const oldest = entries && entries.length > 0 && cursor === null ? entries[entries.length - 1].version - 1 : 0;
  const earliest = oldest >= 1 ? oldest : null;

  async function load(after: string | null = null) {
    setFailure(null);
    try {
      const query = `?limit=${HISTORY_PAGE}${after ? `&cursor=${encodeURIComponent(after)}` : ""}`;
      const page = await get<HistoryPage>(blockPath(agentId, block.name, `/history${query}`));
      setEntries((old) => (after ? [...(old ?? []), ...page.changes] : page.changes));
      setCursor(page.cursor);
    } catch (e) {
      setFailure(describe(e));
    }
  }

  async function bringBack(version: number) {
    setBusy(true);
    try {
      await restore(version);
    } finally {
      setBusy(false);
    }
  }

  useEffect(() => {
    if (open) load();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [open, block.version]);

  return (
    <details className="history" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>History of {block.name}</summary>
      {failure && (
        <p className="error" role="alert">
          {failure}
        </p>
      )}
      {entries === null && !failure && <p aria-live="polite">Loading…</p>}
      {entries?.length === 0 && <p className="muted">No changes to its lines yet.</p>}
      {entries && entries.length > 0 && (
        <ol className="versions" aria-label={`Versions of ${block.name}`} id={id}>
          {entries.map((entry) => (
            <li key={entry.version} className="version-entry">
              <div className="version-head">
                <strong>Version {entry.version}</strong>
                <span className="muted small">
                  {changedBy(entry)} · <time dateTime={entry.at}>{new Date(entry.at).toLocaleString()}</time>
                </span>
              </div>
              <ul className="diff" aria-label={`What version ${entry.version} changed`}>
                {diffLines(entry).map((d, i) => (
                  <li key={i} className={d.sign === "+" ? "added" : "removed"}>
                    <span className="sr-only">{d.sign === "+" ? "Added" : "Removed"}</span>
                    <span aria-hidden="true" className="sign">
                      {d.sign}
                    </span>
                    {d.line !== null && <span className="muted line-no">line {d.line}</span>}
                    <span className="diff-text">{d.text}</span>
                  </li>
                ))}
              </ul>
              {entry.version !== block.version && (
                <button
                  type="button"
                  className="secondary"
                  disabled={busy}
                  aria-label={`Restore version ${entry.version} of ${block.name}`}
                  onClick={() => bringBack(entry.version)}
                >
                  Restore this version
                </button>
              )}
              {entry.version === block.version && <span className="muted small">The current version</span>}
            </li>
          ))}
          {earliest !== null && (
            <li className="version-entry">
              <div className="version-head">
                <strong>Version {earliest}</strong>
                <span className="muted small">Before the changes above</span>
              </div>
              <button
                type="button"
                className="secondary"
                disabled={busy}
                aria-label={`Restore version ${earliest} of ${block.name}`}
                onClick={() => bringBack(earliest)}
              >
                Restore this version
              </button>
            </li>
          )}
        </ol>
      )}
      {cursor && (
        <button type="button" className="secondary" onClick={() => load(cursor)}>
          Older versions
        </button>
      )}
    </details>
  );
}
