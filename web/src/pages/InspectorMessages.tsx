import { useState, type FormEvent } from "react";
import { describe, get } from "../api";
import { score, searchQuery, type MessageSearch, type SearchMode } from "../memory";
import { Link } from "../router";

/** Every message of the agent found by what it says, across its conversations. */
export function InspectorMessages({ agentId }: { agentId: string }) {
  const [query, setQuery] = useState("");
  const [role, setRole] = useState("");
  const [mode, setMode] = useState<SearchMode | "">("");
  const [found, setFound] = useState<MessageSearch | null>(null);
  const [failure, setFailure] = useState<string | null>(null);

  async function search(event: FormEvent) {
    event.preventDefault();
    if (query.trim() === "") return;
    setFailure(null);
    try {
      const params = searchQuery({ q: query, role, mode, limit: 20 });
      setFound(await get<MessageSearch>(`/agents/${encodeURIComponent(agentId)}/messages/search?${params}`));
    } catch (e) {
      setFound(null);
      setFailure(describe(e));
    }
  }

  return (
    <section aria-labelledby="messages-title" className="inspector-section">
      <h2 id="messages-title">Messages</h2>
      <form className="search" role="search" aria-label="Message search" onSubmit={search}>
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
        <div className="results" aria-live="polite">
          <p className="muted" role="status">
            {found.total} found for “{found.query}” ({found.mode})
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
        </div>
      )}
    </section>
  );
}
