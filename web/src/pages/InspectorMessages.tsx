import { useState, type FormEvent } from "react";
import { describe, get } from "../api";
import { score, searchQuery, type MessageSearch, type SearchMode } from "../memory";
import { Link } from "../router";

const PAGE = 20;

interface Asked {
  q: string;
  role: string;
  mode: SearchMode | "";
  offset: number;
}

/** Every message of the agent found by what it says, across its conversations, a page of
 * results at a time. */
export function InspectorMessages({ agentId }: { agentId: string }) {
  const [query, setQuery] = useState("");
  const [role, setRole] = useState("");
  const [mode, setMode] = useState<SearchMode | "">("");
  const [found, setFound] = useState<{ page: MessageSearch; asked: Asked } | null>(null);
  const [failure, setFailure] = useState<string | null>(null);

  /** A page of results; paging goes on with the search that was made, not the boxes. */
  async function search(asked: Asked) {
    if (asked.q.trim() === "") return;
    setFailure(null);
    try {
      const params = searchQuery({ ...asked, limit: PAGE });
      const page = await get<MessageSearch>(`/agents/${encodeURIComponent(agentId)}/messages/search?${params}`);
      setFound({ page, asked });
    } catch (e) {
      setFound(null);
      setFailure(describe(e));
    }
  }

  function submit(event: FormEvent) {
    event.preventDefault();
    search({ q: query, role, mode, offset: 0 });
  }

  return (
    <section aria-labelledby="messages-title" className="inspector-section">
      <h2 id="messages-title">Messages</h2>
      <form className="search" role="search" aria-label="Message search" onSubmit={submit}>
        <label htmlFor="messages-query">Search messages</label>
        <div className="row">
          <input id="messages-query" type="search" value={query} onChange={(e) => setQuery(e.target.value)} />
          <label className="sr-only" htmlFor="messages-role">
            Role
          </label>
          <select id="messages-role" value={role} onChange={(e) => setRole(e.target.value)}>
            <option value="">Any role</option>
            <option value="user">User</option>
            <option value="assistant">Assistant</option>
          </select>
          <label className="sr-only" htmlFor="messages-mode">
            Message search mode
          </label>
          <select id="messages-mode" value={mode} onChange={(e) => setMode(e.target.value as SearchMode | "")}>
            <option value="">Server default</option>
            <option value="hybrid">Hybrid</option>
            <option value="lexical">Lexical</option>
            <option value="semantic">Semantic</option>
          </select>
          <button type="submit">Search</button>
        </div>
      </form>
      {failure && (
        <p className="error" role="alert">
          {failure}
        </p>
      )}
      {found && (
        <Results
          found={found.page}
          offset={found.asked.offset}
          agentId={agentId}
          page={(offset) => search({ ...found.asked, offset })}
        />
      )}
    </section>
  );
}

function Results({
  found,
  offset,
  agentId,
  page,
}: {
  found: MessageSearch;
  offset: number;
  agentId: string;
  page: (offset: number) => void;
}) {
  return (
    <div className="results" aria-live="polite">
      <p className="muted" role="status">
        {found.total} found for “{found.query}” ({found.mode})
        {found.total > PAGE &&
          ` · ${offset + 1}–${offset + found.messages.length} of ${found.total}`}
      </p>
      <ol className="hits" aria-label="Message search results">
        {found.messages.map((m) => (
          <li key={m.id} className="hit">
            <span className="who">{m.role}</span> <span className="hit-text">{m.content}</span>
            <span className="scores">
              score {score(m.score)} · similarity {score(m.similarity)} ·{" "}
              <Link href={`/agents/${encodeURIComponent(agentId)}/chat/${encodeURIComponent(m.conversation_id)}`}>
                open conversation
              </Link>
            </span>
          </li>
        ))}
      </ol>
      {found.total > PAGE && (
        <p className="actions">
          <button
            type="button"
            className="secondary"
            disabled={offset === 0}
            onClick={() => page(Math.max(0, offset - PAGE))}
          >
            Previous results
          </button>
          <button
            type="button"
            className="secondary"
            disabled={offset + PAGE >= found.total}
            onClick={() => page(offset + PAGE)}
          >
            Next results
          </button>
        </p>
      )}
    </div>
  );
}
