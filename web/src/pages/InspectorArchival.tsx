import { useEffect, useRef, useState, type FormEvent } from "react";
import { ApiError, authFetch, describe, get, post } from "../api";
import { SchemaForm } from "../forms/SchemaForm";
import type { FormField, Payload } from "../forms/schema";
import { InlineConfirm } from "../InlineConfirm";
import {
  memoryPath,
  score,
  searchQuery,
  undoUntil,
  type ArchivalMemory,
  type ArchivalPage,
  type ArchivalSearch,
  type SearchMode,
} from "../memory";
import { archivalAnchor } from "../sources";

const PAGE = 20;

/** Archival memory: the newest first, a search through the one engine (scores shown),
 * both narrowed to a category if asked, insert from the backend's form, delete. `linked`:
 * the memory a link named (a reply's "Used N memories"), shown marked and focused, read on
 * its own when it is not among the newest. */
export function InspectorArchival({ agentId, form, linked = null }: { agentId: string; form: FormField[]; linked?: string | null }) {
  const [memories, setMemories] = useState<ArchivalMemory[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [total, setTotal] = useState<number | null>(null);
  // The categories are the archival form's own options (seed 003's), not a list of ours.
  const categories = form.find((f) => f.name === "category")?.options ?? [];
  const [category, setCategory] = useState("");
  const [failure, setFailure] = useState<string | null>(null);
  const [query, setQuery] = useState("");
  const [mode, setMode] = useState<SearchMode | "">("");
  const [found, setFound] = useState<ArchivalSearch | null>(null);
  const [searchFailure, setSearchFailure] = useState<string | null>(null);
  const [formKey, setFormKey] = useState(0);
  const [pinned, setPinned] = useState<ArchivalMemory | null>(null);
  const [pinFailure, setPinFailure] = useState<string | null>(null);
  const shown = useRef<string | null>(null); // the linked memory last scrolled to
  // The memory deleted last, while the server keeps it restorable (its Undo-Until).
  const [undo, setUndo] = useState<{ memory: ArchivalMemory; until: Date } | null>(null);
  const [undoFailure, setUndoFailure] = useState<string | null>(null);
  const undoButton = useRef<HTMLButtonElement>(null);
  const offered = undo?.memory.id;
  useEffect(() => {
    // Focus on the offer: the deleted memory's own button is gone with it.
    if (offered) undoButton.current?.focus();
  }, [offered]);
  useEffect(() => {
    if (!undo) return;
    // The offer goes when the window closes: after it the server answers "too late".
    const timer = window.setTimeout(() => setUndo(null), Math.max(0, undo.until.getTime() - Date.now()));
    return () => window.clearTimeout(timer);
  }, [undo]);
  const loaded = memories !== null;
  const listed = Boolean(linked && memories?.some((m) => m.id === linked));

  useEffect(() => {
    setPinned(null);
    setPinFailure(null);
    if (!linked || !loaded || listed) return;
    let current = true;
    get<ArchivalMemory>(memoryPath(agentId, `/archival/${encodeURIComponent(linked)}`)).then(
      (m) => current && setPinned(m),
      (e) =>
        current &&
        setPinFailure(
          e instanceof ApiError && e.status === 404
            ? "The memory this link names is no longer in archival memory: it was deleted."
            : describe(e),
        ),
    );
    return () => {
      current = false;
    };
  }, [agentId, linked, loaded, listed]);

  // Once the linked memory is on the page, it comes into view with the focus, as a link to
  // a place in a page does.
  useEffect(() => {
    if (!linked || shown.current === linked) return;
    const target = document.getElementById(archivalAnchor(linked));
    if (!target) return;
    shown.current = linked;
    target.scrollIntoView({ block: "center" });
    target.focus({ preventScroll: true });
  });

  async function load(after: string | null = null, kind = category) {
    setFailure(null);
    try {
      const page = await get<ArchivalPage>(
        memoryPath(agentId, `/archival?${searchQuery({ limit: PAGE, cursor: after, category: kind })}`),
      );
      setMemories((old) => (after ? [...(old ?? []), ...page.memories] : page.memories));
      setCursor(page.cursor);
      setTotal(page.total ?? null);
    } catch (e) {
      setFailure(describe(e));
    }
  }
  useEffect(() => {
    load();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [agentId]);

  function narrow(kind: string) {
    setCategory(kind);
    setFound(null); // its hits were of the other category
    load(null, kind);
  }

  async function search(page = 1, event?: FormEvent) {
    event?.preventDefault();
    if (query.trim() === "") return;
    setSearchFailure(null);
    try {
      setFound(
        await get<ArchivalSearch>(
          memoryPath(agentId, `/archival/search?${searchQuery({ query, page, limit: 10, mode, category })}`),
        ),
      );
    } catch (e) {
      setFound(null);
      setSearchFailure(describe(e));
    }
  }

  async function insert(payload: Payload) {
    await post<ArchivalMemory>(memoryPath(agentId, "/archival"), payload);
    setFormKey((k) => k + 1); // an empty form for the next one
    await load();
  }

  async function remove(memory: ArchivalMemory) {
    try {
      const answer = await authFetch(memoryPath(agentId, `/archival/${encodeURIComponent(memory.id)}`), {
        method: "DELETE",
        headers: { Accept: "application/json" },
      });
      const until = undoUntil(answer.headers.get("Undo-Until"));
      setUndoFailure(null);
      setUndo(until ? { memory, until } : null);
      setMemories((old) => (old ?? []).filter((m) => m.id !== memory.id));
      setPinned((old) => (old?.id === memory.id ? null : old));
      setTotal((old) => (old === null ? old : old - 1));
      setFound((old) => (old ? { ...old, memories: old.memories.filter((m) => m.id !== memory.id) } : old));
    } catch (e) {
      setFailure(describe(e));
    }
  }

  async function restore(memory: ArchivalMemory) {
    setUndoFailure(null);
    try {
      await post<ArchivalMemory>(memoryPath(agentId, `/archival/${encodeURIComponent(memory.id)}/restore`));
      setUndo(null);
      await load();
    } catch (e) {
      setUndoFailure(describe(e));
      if (e instanceof ApiError && e.status !== 503) setUndo(null); // too late, or stored again: no retry
    }
  }

  return (
    <section aria-labelledby="archival-title" className="inspector-section">
      <h2 id="archival-title">Archival memory</h2>
      {undo && (
        <p className="notice undo" role="status">
          <span>
            Deleted “{undo.memory.content.length > 60 ? `${undo.memory.content.slice(0, 60)}…` : undo.memory.content}”. You
            can undo this until {undo.until.toLocaleTimeString()}.
          </span>
          <button type="button" ref={undoButton} onClick={() => restore(undo.memory)}>
            Undo
          </button>
          <button type="button" className="link" onClick={() => setUndo(null)}>
            Dismiss
          </button>
        </p>
      )}
      {undoFailure && (
        <p className="error" role="alert">
          {undoFailure}
        </p>
      )}
      {categories.length > 0 && (
        <p className="row filter">
          <label htmlFor="archival-category">Filter by category</label>
          <select id="archival-category" value={category} onChange={(e) => narrow(e.target.value)}>
            <option value="">Any category</option>
            {categories.map((o) => (
              <option key={String(o.value)} value={String(o.value)}>
                {o.label}
              </option>
            ))}
          </select>
        </p>
      )}
      <form className="search" role="search" aria-label="Archival search" onSubmit={(e) => search(1, e)}>
        <label htmlFor="archival-query">Search archival memory</label>
        <div className="row">
          <input id="archival-query" type="search" value={query} onChange={(e) => setQuery(e.target.value)} />
          <label className="sr-only" htmlFor="archival-mode">
            Archival search mode
          </label>
          <select id="archival-mode" value={mode} onChange={(e) => setMode(e.target.value as SearchMode | "")}>
            <option value="">Server default (hybrid)</option>
            <option value="hybrid">Hybrid</option>
            <option value="lexical">Lexical (BM25)</option>
            <option value="semantic">Semantic</option>
          </select>
          <button type="submit">Search</button>
        </div>
      </form>
      {searchFailure && (
        <p className="error" role="alert">
          {searchFailure}
        </p>
      )}
      {found && (
        <div className="results" aria-live="polite">
          <p className="muted" role="status">
            {found.total} found for “{found.query}” ({found.mode})
            {found.pages > 1 && ` · page ${found.page} of ${found.pages}`}
          </p>
          <ol className="hits" aria-label="Archival search results">
            {found.memories.map((m) => (
              <li key={m.id} className="hit">
                <span className="hit-text">{m.content}</span>
                <span className="scores">
                  score {score(m.score)} · similarity {score(m.similarity)}
                </span>
              </li>
            ))}
          </ol>
          {found.pages > 1 && (
            <p className="actions">
              <button type="button" className="secondary" disabled={found.page <= 1} onClick={() => search(found.page - 1)}>
                Previous results
              </button>
              <button
                type="button"
                className="secondary"
                disabled={found.page >= found.pages}
                onClick={() => search(found.page + 1)}
              >
                Next results
              </button>
            </p>
          )}
        </div>
      )}
      {failure && (
        <p className="error" role="alert">
          {failure}
        </p>
      )}
      {pinFailure && (
        <p className="error" role="alert">
          {pinFailure}
        </p>
      )}
      {pinned && (
        <>
          <h3 className="subhead">The memory a reply used</h3>
          <ul className="memories" aria-label="Linked memory">
            <MemoryItem memory={pinned} linked onDelete={remove} />
          </ul>
        </>
      )}
      <h3 className="subhead">
        {category ? `Memories of category ${category}, newest first` : "Every memory, newest first"}
        {total !== null && ` (${total})`}
      </h3>
      {memories === null && !failure && <p aria-live="polite">Loading…</p>}
      {memories?.length === 0 && (
        <p className="muted">{category ? `No archival memories of category ${category}.` : "No archival memories yet."}</p>
      )}
      {memories && memories.length > 0 && (
        <ul className="memories" aria-label="Archival memories">
          {memories.map((m) => (
            <MemoryItem key={m.id} memory={m} linked={m.id === linked} onDelete={remove} />
          ))}
        </ul>
      )}
      {cursor && (
        <button type="button" className="secondary" onClick={() => load(cursor)}>
          Older memories
        </button>
      )}
      {form.length > 0 && (
        <details className="panel">
          <summary>Insert an archival memory</summary>
          <SchemaForm key={formKey} fields={form} submitLabel="Insert memory" onSubmit={insert} />
        </details>
      )}
    </section>
  );
}

function MemoryItem({ memory: m, linked, onDelete }: { memory: ArchivalMemory; linked: boolean; onDelete: (m: ArchivalMemory) => Promise<void> }) {
  return (
    <li id={archivalAnchor(m.id)} tabIndex={-1} className={linked ? "memory linked" : "memory"} aria-current={linked ? "true" : undefined}>
      <div className="memory-text">{m.content}</div>
      <div className="muted small">
        {new Date(m.created_at).toLocaleString()}
        {m.category && ` · ${m.category}`}
        {m.tags.length > 0 && ` · ${m.tags.join(", ")}`}
      </div>
      <InlineConfirm
        label={`Delete archival memory: ${m.content.slice(0, 60)}`}
        what="Delete this memory?"
        confirmLabel="Delete memory"
        onConfirm={() => onDelete(m)}
      />
    </li>
  );
}
