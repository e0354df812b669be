import "./memory-and-settings.css";
import { useEffect, useState } from "react";
import { describe, get } from "../api";
import { loadContext, PART_LABELS, shares, type ContextPart, type TurnContext } from "../context";
import { Failure, isMissingAgent, MissingAgent } from "../errors";
import { Link } from "../router";
import type { Agent, Conversation } from "../types";

const number = new Intl.NumberFormat("en");

/** What the agent's next turn sends its model, by part, against the model's window. */
export function ContextPage({ agentId }: { agentId: string }) {
  const [agent, setAgent] = useState<Agent | null>(null);
  const [sessions, setSessions] = useState<Conversation[]>([]);
  const [session, setSession] = useState<string>("");
  const [prompt, setPrompt] = useState("");
  const [asked, setAsked] = useState("");
  const [context, setContext] = useState<TurnContext | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const [missing, setMissing] = useState(false);
  const [attempt, setAttempt] = useState(0); // a retry reads the page again
  const agentPath = `/agents/${encodeURIComponent(agentId)}`;

  useEffect(() => {
    Promise.all([
      get<Agent>(agentPath),
      get<{ conversations: Conversation[] }>(`/conversations?agent_id=${encodeURIComponent(agentId)}&limit=50`),
    ]).then(
      ([a, c]) => {
        setAgent(a);
        setSessions(c.conversations);
        // The latest conversation, as the chat opens it: its next turn is the one to preview.
        if (c.conversations.length > 0) setSession(c.conversations[0].session_id);
      },
      (e) => (isMissingAgent(e) ? setMissing(true) : setFailure(describe(e))),
    );
  }, [agentId, agentPath, attempt]);

  useEffect(() => {
    if (!agent) return;
    let current = true;
    setFailure(null);
    loadContext(agentId, session || null, asked).then(
      (c) => current && setContext(c),
      (e) => current && setFailure(describe(e)),
    );
    return () => {
      current = false;
    };
  }, [agent, agentId, session, asked, attempt]);

  if (missing) return <MissingAgent />;
  return (
    <section className="context-page">
      <h1>{agent ? `Context window of ${agent.name}` : "Context window"}</h1>
      <p className="actions">
        <Link href={agentPath}>Memory</Link>
        <Link href={`${agentPath}/chat`}>Chat with this agent</Link>
      </p>
      <form
        className="context-controls"
        onSubmit={(e) => {
          e.preventDefault();
          setAsked(prompt.trim());
        }}
      >
        <label>
          Conversation
          <select value={session} onChange={(e) => setSession(e.target.value)}>
            <option value="">None (no recent turns)</option>
            {sessions.map((c) => (
              <option key={c.id} value={c.session_id}>
                {conversationLabel(c)}
              </option>
            ))}
          </select>
        </label>
        <label>
          Message you are about to send
          <input value={prompt} maxLength={32000} onChange={(e) => setPrompt(e.target.value)} placeholder="Optional" />
        </label>
        <button type="submit">Show</button>
      </form>
      {failure && (
        <Failure
          message={failure}
          onRetry={
            !context
              ? () => {
                  setFailure(null);
                  setAttempt((n) => n + 1);
                }
              : undefined
          }
        />
      )}
      {!failure && !context && <p aria-live="polite">Loading…</p>}
      {context && <ContextView context={context} />}
    </section>
  );
}

function ContextView({ context }: { context: TurnContext }) {
  const window = context.context_window;
  return (
    <div className="context-view">
      <p className="context-total" data-testid="context-total">
        <strong>{number.format(context.total_tokens)}</strong> tokens
        {window ? (
          <>
            {" "}
            of {number.format(window)} ({context.percent_used}% of {context.model}'s window)
          </>
        ) : (
          <> — the window of {context.model} is not known to this server</>
        )}
        {context.estimated && <span className="muted"> · estimated: characters ÷ 4</span>}
      </p>
      <div className="context-bar" role="img" aria-label={barLabel(context)}>
        {shares(context).map((s) =>
          s.percent > 0 ? (
            <span key={s.name} className={`part-${s.name}`} style={{ width: `${Math.max(s.percent, 0.5)}%` }} />
          ) : null,
        )}
      </div>
      {!context.prompt_known && (
        <p className="notice">This agent's architecture makes its prompt only as its turn runs: its system prompt is not shown.</p>
      )}
      <ul className="context-parts">
        {context.parts.map((p) => (
          <li key={p.name}>
            <PartView part={p} />
          </li>
        ))}
      </ul>
    </div>
  );
}

function PartView({ part }: { part: ContextPart }) {
  const label = PART_LABELS[part.name];
  const empty = part.items.length === 0 && !part.text;
  return (
    <details className="context-part" data-part={part.name}>
      <summary>
        <span className={`swatch part-${part.name}`} aria-hidden="true" />
        <span className="part-name">{label}</span>
        {part.items.length > 0 && <span className="muted"> ({part.count})</span>}
        <span className="part-tokens" data-testid="part-tokens">
          {number.format(part.tokens)} tokens
        </span>
      </summary>
      {empty && <p className="muted">Nothing.</p>}
      {part.name === "system" && part.text && (
        <>
          <p className="muted">
            The whole system message; its blocks, recent turns and recalled memories are counted in their own parts.
          </p>
          <pre className="context-text">{part.text}</pre>
        </>
      )}
      {part.name !== "system" && part.items.length === 0 && part.text && <pre className="context-text">{part.text}</pre>}
      {part.items.length > 0 && (
        <ol className="context-items">
          {part.items.map((item, i) => (
            <li key={`${item.name}-${item.id ?? i}`}>
              <details>
                <summary>
                  <span className="part-name">{item.name}</span>
                  <span className="part-tokens">{number.format(item.tokens)} tokens</span>
                </summary>
                {item.via && <p className="muted">Came in by {item.via}</p>}
                <pre className="context-text">{item.text}</pre>
              </details>
            </li>
          ))}
        </ol>
      )}
    </details>
  );
}

/** A conversation as the picker lists it: a /chat session's default title is its long
 * session id (`{user}_{agent}_default`), which says less than when it was last used. */
function conversationLabel(c: Conversation): string {
  const when = new Date(c.last_activity_at).toLocaleString();
  const title = c.title === c.session_id && c.session_id.endsWith("_default") ? "Default session" : c.title;
  return `${title} · ${when}`;
}

function barLabel(context: TurnContext): string {
  const parts = context.parts.filter((p) => p.tokens > 0).map((p) => `${PART_LABELS[p.name]} ${p.tokens}`);
  const of = context.context_window ? ` of ${context.context_window}` : "";
  return `${context.total_tokens} tokens${of}: ${parts.join(", ")}`;
}
