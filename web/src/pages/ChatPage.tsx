import { useCallback, useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { ApiError, describe, get, post } from "../api";
import { Link, navigate, useLocation } from "../router";
import { CopyButton } from "../CopyButton";
import { Counter, tooLong } from "../Counter";
import { isMissingAgent, MissingAgent, NextStep } from "../errors";
import { postSse } from "../sse";
import { lineAnchor, toolLine } from "../toolLines";
import { messageAnchor } from "../sources";
import type { Agent, Conversation, ConversationPage, Message, MessagePage, Run, Sources, ToolCall } from "../types";
import { apply, layout, type Item, type LiveTurn, type Notice } from "../turn";
import { MemoryPanel } from "./MemoryPanel";
import { UsedSources } from "./UsedSources";
import { useSpecialistNames } from "../specialists";

const PAGE = 30;
const MESSAGE_LIMIT = 32000; // the server's, for one message

export function ChatPage({ agentId, conversationId }: { agentId: string; conversationId?: string }) {
  const [agent, setAgent] = useState<Agent | null>(null);
  const specialists = useSpecialistNames(agent);
  const [conversations, setConversations] = useState<Conversation[]>([]);
  const [conversationsCursor, setConversationsCursor] = useState<string | null>(null);
  const [history, setHistory] = useState<Message[]>([]);
  const [earlier, setEarlier] = useState<string | null>(null);
  const [live, setLive] = useState<LiveTurn | null>(null);
  const [notices, setNotices] = useState<Notice[]>([]);
  const [failure, setFailure] = useState<string | null>(null);
  const [missing, setMissing] = useState(false);
  const [memoryVersion, setMemoryVersion] = useState(0);
  const [me, setMe] = useState<string | null>(null); // messages this user sent show as "You"
  const [draft, setDraft] = useState("");
  // What each reply used, by its run: said by the live turn, or read from GET /runs/{id}
  // for stored replies (null: nothing to say, or it could not be read).
  const [used, setUsed] = useState<Record<string, Sources | null>>({});
  const asked = useRef(new Set<string>());
  const stopper = useRef<AbortController | null>(null);

  const loadConversations = useCallback(
    async (cursor: string | null = null) => {
      const query = `agent_id=${encodeURIComponent(agentId)}&limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const page = await get<ConversationPage>(`/conversations?${query}`);
      setConversations((old) => (cursor ? [...old, ...page.conversations] : page.conversations));
      setConversationsCursor(page.cursor);
    },
    [agentId],
  );

  const loadLatest = useCallback(async (id: string) => {
    const page = await get<MessagePage>(`/conversations/${id}/messages?order=newest&limit=${PAGE}`);
    setHistory([...page.messages].reverse());
    setEarlier(page.cursor);
  }, []);

  useEffect(() => {
    setFailure(null);
    setMissing(false);
    get<{ email: string }>("/users/me").then((u) => setMe(u.email), () => undefined);
    Promise.all([get<Agent>(`/agents/${agentId}`).then(setAgent), loadConversations()]).catch((e) =>
      isMissingAgent(e) ? setMissing(true) : setFailure(describe(e)),
    );
  }, [agentId, loadConversations]);

  // The agent's chat opens its latest conversation (the API lists the last active first),
  // unless a new one was asked for.
  const fresh = useLocation().searchParams.has("new");
  const latest = conversations[0]?.id;
  useEffect(() => {
    if (!conversationId && !fresh && latest && !stopper.current) navigate(`/agents/${agentId}/chat/${latest}`, true);
  }, [agentId, conversationId, fresh, latest]);

  useEffect(() => {
    const runs = new Set(history.filter((m) => m.role === "assistant" && m.run_id).map((m) => m.run_id!));
    for (const runId of runs) {
      if (asked.current.has(runId)) continue;
      asked.current.add(runId);
      get<Run>(`/runs/${encodeURIComponent(runId)}`).then(
        (run) => {
          // A run still going (in another tab) says what it used when it ends: asked again then.
          if (run.state === "running") asked.current.delete(runId);
          else setUsed((old) => ({ ...old, [runId]: run.sources }));
        },
        () => setUsed((old) => ({ ...old, [runId]: null })), // an expired run: nothing to say
      );
    }
  }, [history]);

  useEffect(() => {
    setHistory([]);
    setEarlier(null);
    if (conversationId && !stopper.current) loadLatest(conversationId).catch((e) => setFailure(describe(e)));
  }, [conversationId, loadLatest]);

  async function loadEarlier() {
    if (!conversationId || !earlier) return;
    try {
      const page = await get<MessagePage>(
        `/conversations/${conversationId}/messages?order=newest&limit=${PAGE}&cursor=${encodeURIComponent(earlier)}`,
      );
      setHistory((old) => [...[...page.messages].reverse(), ...old]);
      setEarlier(page.cursor);
    } catch (e) {
      setFailure(describe(e));
    }
  }

  // The conversation is made with its first message, and titled by it: a click on "New
  // conversation" only clears the page (?new keeps it from opening the latest one).
  async function startConversation(prompt: string): Promise<string> {
    const created = await post<Conversation>("/conversations", { agent_id: agentId, title: titleOf(prompt) });
    setConversations((old) => [created, ...old]);
    navigate(`/agents/${agentId}/chat/${created.id}`, true);
    return created.id;
  }

  async function send(event?: FormEvent) {
    event?.preventDefault();
    const prompt = draft.trim();
    if (!prompt || stopper.current || tooLong(draft, MESSAGE_LIMIT)) return;
    setFailure(null);
    setNotices([]);
    const controller = new AbortController();
    stopper.current = controller;
    let turn: LiveTurn = { prompt, items: [], status: "streaming", runId: null };
    const found: Notice[] = [];
    setLive(turn);
    setDraft("");
    let id = conversationId;
    try {
      id ??= await startConversation(prompt);
      for await (const e of postSse(`/conversations/${id}/messages`, { content: prompt }, controller.signal)) {
        let data: Record<string, unknown> = {};
        try {
          data = JSON.parse(e.data) as Record<string, unknown>;
        } catch {
          continue; // not one of ours
        }
        turn = apply(turn, e.event, data, found);
        if (e.event === "tool.result") setMemoryVersion((v) => v + 1);
        if (e.event === "context.used" && turn.runId && turn.sources) {
          const [runId, sources] = [turn.runId, turn.sources];
          asked.current.add(runId);
          setUsed((old) => ({ ...old, [runId]: sources }));
        }
        setLive(turn);
        setNotices([...found]);
      }
    } catch (e) {
      if (controller.signal.aborted) {
        turn = { ...turn, status: "stopped" };
        found.push({ kind: "stopped" });
      } else {
        turn = { ...turn, status: "failed" };
        if (e instanceof ApiError) found.push({ kind: "error", code: e.code, message: e.message });
        else found.push({ kind: "error", code: "network_error", message: describe(e) });
      }
      setLive(turn);
      setNotices([...found]);
    }
    // A failed turn's message goes back into the box, to send again once the cause is fixed.
    if (turn.status === "failed") setDraft((typed) => typed || prompt);
    try {
      if (turn.status === "stopped" && turn.runId) await runEnded(turn.runId);
      if (id) await loadLatest(id);
      setLive(null);
      setMemoryVersion((v) => v + 1);
      loadConversations().catch(() => undefined);
    } catch (e) {
      setFailure(describe(e));
    } finally {
      stopper.current = null;
    }
  }

  function onKey(event: KeyboardEvent<HTMLTextAreaElement>) {
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      send();
    }
  }

  const streaming = live?.status === "streaming";
  if (missing) return <MissingAgent />;
  return (
    <section className="chat">
      <aside aria-label="Conversations">
        <h1>{agent ? agent.name : "Chat"}</h1>
        <p className="actions">
          <button type="button" className="secondary" onClick={() => navigate(`/agents/${agentId}/chat?new`)} disabled={streaming}>
            New conversation
          </button>
          <Link href={`/agents/${agentId}`}>Memory</Link>
        </p>
        <h2>Conversations</h2>
        {conversations.length === 0 && <p className="muted">None yet: send a message to start one.</p>}
        <ul className="conversations">
          {conversations.map((c) => (
            <li key={c.id}>
              <Link href={`/agents/${agentId}/chat/${c.id}`} aria-current={c.id === conversationId ? "true" : undefined}>
                {c.title || "Conversation"}{" "}
                <span className="muted">
                  <time dateTime={c.last_activity_at}>{new Date(c.last_activity_at).toLocaleString()}</time>
                </span>
              </Link>
            </li>
          ))}
        </ul>
        {conversationsCursor && (
          <button type="button" className="link" onClick={() => loadConversations(conversationsCursor)}>
            More conversations
          </button>
        )}
      </aside>
      <div>
        {failure && (
          <p className="error" role="alert">
            {failure}
          </p>
        )}
        {earlier && (
          <p>
            <button type="button" className="secondary" onClick={loadEarlier}>
              Load earlier messages
            </button>
          </p>
        )}
        <div className="log" role="region" aria-label="Messages">
          <History messages={history} me={me} used={used} agentId={agentId} conversationId={conversationId} />
          {live && <Live turn={live} agentId={agentId} conversationId={conversationId} names={specialists} />}
        </div>
        <Notices notices={notices} />
        <p className="muted" aria-live="polite">
          {streaming ? "The agent is answering…" : live?.status === "stopped" ? "Stopped." : ""}
        </p>
        <form className="composer" onSubmit={send}>
          <label htmlFor="prompt">Message</label>
          <textarea
            id="prompt"
            value={draft}
            onChange={(e) => setDraft(e.target.value)}
            onKeyDown={onKey}
            placeholder="Write to the agent (Enter sends, Shift+Enter for a new line)"
            aria-describedby="prompt-count"
          />
          <Counter id="prompt-count" length={draft.length} limit={MESSAGE_LIMIT} />
          <div className="actions">
            <button type="submit" disabled={streaming || draft.trim() === "" || tooLong(draft, MESSAGE_LIMIT)}>
              Send
            </button>
            {streaming && (
              <button type="button" className="danger" onClick={() => stopper.current?.abort()}>
                Stop
              </button>
            )}
          </div>
        </form>
      </div>
      <MemoryPanel agentId={agentId} version={memoryVersion} />
    </section>
  );
}

/** Waits until a stopped turn is stored as interrupted (GET /runs/{id} leaves `running`). */
async function runEnded(runId: string): Promise<void> {
  for (let i = 0; i < 40; i++) {
    const run = await get<{ state: string }>(`/runs/${runId}`);
    if (run.state !== "running") return;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The text an agent answered with in a group of its messages (its steps' text, joined). */
const reply = (group: Message[]): string =>
  group
    .filter((m) => m.role === "assistant" && m.content)
    .map((m) => m.content)
    .join("\n\n");

/** Stored messages as the page shows them: a user's message, then one card for everything
 * the agent did in reply (its steps' tool calls with their results, and its text). */
function History({
  messages,
  me,
  used,
  agentId,
  conversationId,
}: {
  messages: Message[];
  me: string | null;
  used: Record<string, Sources | null>;
  agentId: string;
  conversationId?: string;
}) {
  const results = new Map<string, Message>();
  for (const m of messages) if (m.role === "tool" && m.tool_call_id) results.set(m.tool_call_id, m);
  const groups: Message[][] = [];
  for (const m of messages) {
    const last = groups[groups.length - 1];
    if (m.role !== "user" && last && last[0].role !== "user") last.push(m);
    else groups.push([m]);
  }
  return (
    <>
      {groups.map((group) => {
        const first = group[0];
        if (first.role === "user") {
          return (
            <article key={first.id} id={messageAnchor(first.id)} tabIndex={-1} className="msg user">
              <div className="who">
                {first.actor_id && first.actor_id !== me ? first.actor_id : "You"}
                {first.interrupted && <span className="badge">interrupted</span>}
              </div>
              <div className="text">{first.content}</div>
            </article>
          );
        }
        const answered = new Set(group.flatMap((m) => m.tool_calls.map((c) => c.id)));
        const runId = group.find((m) => m.run_id)?.run_id;
        const sources = runId ? used[runId] : null;
        return (
          <article key={first.id} className="msg assistant">
            <div className="who">
              assistant
              {group.some((m) => m.interrupted && m.role === "assistant") && <span className="badge">interrupted</span>}
            </div>
            {group.map((m) => (
              <div key={m.id} id={messageAnchor(m.id)} tabIndex={-1}>
                {m.tool_calls.map((c: ToolCall, i) => (
                  <ToolView key={c.id ?? i} name={c.name} args={c.arguments} result={c.id ? results.get(c.id)?.content : undefined} />
                ))}
                {m.role === "tool" && !(m.tool_call_id && answered.has(m.tool_call_id)) && (
                  <pre className="tool-result">{m.content}</pre>
                )}
                {m.role !== "tool" && m.content && <div className="text">{m.content}</div>}
              </div>
            ))}
            <MemoryChips
              calls={group.flatMap((m) =>
                m.tool_calls.map((c) => ({ name: c.name, args: c.arguments, result: c.id ? results.get(c.id)?.content : undefined })),
              )}
            />
            {sources && <UsedSources agentId={agentId} conversationId={conversationId} sources={sources} />}
            {reply(group) && <CopyButton text={reply(group)} what="the reply" />}
          </article>
        );
      })}
    </>
  );
}

function Live({
  turn,
  agentId,
  conversationId,
  names,
}: {
  turn: LiveTurn;
  agentId: string;
  conversationId?: string;
  names: Record<string, string>;
}) {
  return (
    <>
      <article className="msg user">
        <div className="who">You</div>
        <div className="text">{turn.prompt}</div>
      </article>
      <article className="msg assistant live" aria-busy={turn.status === "streaming"}>
        <div className="who">
          assistant
          {turn.status === "stopped" && <span className="badge">interrupted</span>}
        </div>
        {layout(turn.items).map((s) =>
          s.kind === "own" ? (
            <ItemView key={s.index} item={s.item} index={s.index} />
          ) : (
            // A specialist's turn, asked by the call above it: named, and indented by its depth.
            <div
              key={`n${s.index}`}
              className="nested"
              role="group"
              aria-label={`${names[s.agent] ?? "A specialist"} answers`}
              data-depth={s.depth}
              style={{ marginLeft: `${s.depth * 1.5}rem` }}
            >
              <div className="who">{names[s.agent] ?? "A specialist"}</div>
              {s.items.map((item, i) => (
                <ItemView key={i} item={item} index={s.index + i} />
              ))}
            </div>
          ),
        )}
        {turn.items.length === 0 && turn.status === "streaming" && <div className="muted">…</div>}
        <MemoryChips
          calls={turn.items.flatMap((i) =>
            i.kind === "tool" && !i.depth ? [{ name: i.name, args: i.arguments, result: i.result }] : [],
          )}
        />
        {turn.sources && <UsedSources agentId={agentId} conversationId={conversationId} sources={turn.sources} />}
      </article>
    </>
  );
}

function ItemView({ item, index }: { item: Item; index: number }) {
  if (item.kind === "tool") return <ToolView name={item.name} args={item.arguments} result={item.result} />;
  return (
    <div key={index} className="text">
      {item.text}
    </div>
  );
}

function ToolView({ name, args, result }: { name: string; args: unknown; result?: string }) {
  const said = toolLine(name, args, result);
  return (
    <details className="tool">
      <summary>{said.text}</summary>
      <div className="muted">
        Tool <code>{name}</code>, with
      </div>
      <pre className="tool-args">{JSON.stringify(args, null, 2)}</pre>
      <div className="muted">Result</div>
      <pre className="tool-result">{result ?? "(waiting for the tool…)"}</pre>
    </details>
  );
}

/** Links to the core memory lines a reply wrote, in the panel beside the chat. */
function MemoryChips({ calls }: { calls: { name: string; args: unknown; result?: string }[] }) {
  const lines = calls.map((c) => toolLine(c.name, c.args, c.result)).filter((l) => l.line && !l.text.startsWith("Already"));
  if (lines.length === 0) return null;
  return (
    <ul className="chips" aria-label="Saved to memory">
      {lines.map((l, i) => (
        <li key={i}>
          <a className="chip" href={`#${lineAnchor(l.line!.block, l.line!.number)}`}>
            {l.text}
          </a>
        </li>
      ))}
    </ul>
  );
}

function Notices({ notices }: { notices: Notice[] }) {
  if (notices.length === 0) return null;
  return (
    <ul className="notices" aria-label="Turn notices">
      {notices.map((n, i) => {
        switch (n.kind) {
          case "warning":
            return (
              <li key={i} className="notice">
                Memory block <strong>{n.block}</strong> is {n.percent}% full ({n.words}/{n.limit} words); warned{" "}
                {n.warned} turn(s), compacted at {n.compactsAfter}.
              </li>
            );
          case "compacted":
            return (
              <li key={i} className="notice">
                Memory block <strong>{n.block}</strong> was compacted: {n.before} → {n.after} words, {n.archived} line(s)
                moved to archival memory.
              </li>
            );
          case "error":
            return (
              <li key={i} className="error" role="alert">
                {n.message}
                <NextStep code={n.code} />
              </li>
            );
          case "stopped":
            return (
              <li key={i} className="notice">
                Stopped: the partial reply is kept, marked interrupted.
              </li>
            );
        }
      })}
    </ul>
  );
}

/** A conversation's title from its first message: its first line, cut at a word near 60
 * characters. */
export function titleOf(prompt: string): string {
  const line = prompt.split("\n").find((l) => l.trim() !== "")?.replace(/\s+/g, " ").trim() ?? "";
  if (line.length <= 60) return line;
  const cut = line.slice(0, 60);
  const space = cut.lastIndexOf(" ");
  return `${(space > 30 ? cut.slice(0, space) : cut).trimEnd()}…`;
}
