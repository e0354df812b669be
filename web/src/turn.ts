// A streamed turn as the chat page shows it: what each SSE event (docs/sse.md) changes.

import type { Sources } from "./types";

/** Where an item comes from when a specialist said it (a `nested` event): its agent and
 * depth (1: a specialist of the turn's agent); absent for the agent's own. */
export interface Nesting {
  depth?: number;
  agent?: string;
}

export type Item =
  | ({ kind: "text"; step: number; text: string } & Nesting)
  | ({ kind: "tool"; callId: string; name: string; arguments: unknown; result?: string } & Nesting);

export type Notice =
  | { kind: "warning"; block: string; percent: number; words: number; limit: number; compactsAfter: number; warned: number }
  | { kind: "compacted"; block: string; archived: number; before: number; after: number }
  | { kind: "error"; code: string; message: string }
  | { kind: "stopped" };

export type Status = "streaming" | "completed" | "failed" | "stopped";

export interface LiveTurn {
  prompt: string;
  items: Item[];
  status: Status;
  runId: string | null;
  /** What the answer used (`context.used`), once said. */
  sources?: Sources;
}

/** What one SSE event changes in the live turn; notices are collected apart. */
export function apply(turn: LiveTurn, event: string, data: Record<string, unknown>, notices: Notice[]): LiveTurn {
  switch (event) {
    case "run.started":
      return { ...turn, runId: String(data.run_id) };
    case "text.delta":
    case "tool.call":
      return { ...turn, items: said(turn.items, event, data, {}) };
    case "nested": {
      // A specialist's turn, run by one of the turn's tool calls: its words and tool calls
      // go in, marked (and shown indented); the rest of its run is told by the call's result.
      const inner = String(data.event);
      const payload = (data.payload ?? {}) as Record<string, unknown>;
      const from = { depth: Number(data.depth) || 1, agent: String(data.agent_id) };
      if (inner === "tool.result") return apply(turn, inner, payload, notices);
      if (inner !== "text.delta" && inner !== "tool.call") return turn;
      return { ...turn, items: said(turn.items, inner, payload, from) };
    }
    case "tool.result":
      return {
        ...turn,
        items: turn.items.map((i) =>
          i.kind === "tool" && i.callId === data.call_id ? { ...i, result: String(data.content) } : i,
        ),
      };
    case "context.used":
      return {
        ...turn,
        sources: {
          items: Array.isArray(data.items) ? (data.items as Sources["items"]) : [],
          blocks: Array.isArray(data.blocks) ? (data.blocks as Sources["blocks"]) : [],
          left_out: Number(data.left_out) || 0,
        },
      };
    case "memory.warning":
      notices.push({
        kind: "warning",
        block: String(data.block),
        percent: Number(data.percent_used),
        words: Number(data.word_count),
        limit: Number(data.word_limit),
        warned: Number(data.warned_turns),
        compactsAfter: Number(data.compacts_after),
      });
      return turn;
    case "memory.compacted":
      notices.push({
        kind: "compacted",
        block: String(data.block),
        archived: Number(data.archived_lines),
        before: Number(data.words_before),
        after: Number(data.words_after),
      });
      return turn;
    case "error":
      notices.push({ kind: "error", code: String(data.code), message: String(data.message) });
      return turn;
    case "run.completed":
      return { ...turn, status: "completed" };
    case "run.failed":
      return { ...turn, status: data.code === "interrupted" ? "stopped" : "failed" };
    default:
      return turn;
  }
}


/** The items after a text delta or a tool call of the agent (`from` empty) or of a
 * specialist: a step's text grows while the same speaker goes on. */
function said(items: Item[], event: string, data: Record<string, unknown>, from: Nesting): Item[] {
  if (event === "tool.call") {
    return [...items, { kind: "tool", callId: String(data.call_id), name: String(data.name), arguments: data.arguments, ...from }];
  }
  const step = Number(data.step);
  const last = items[items.length - 1];
  if (last?.kind === "text" && last.step === step && last.depth === from.depth && last.agent === from.agent) {
    return [...items.slice(0, -1), { ...last, text: last.text + String(data.text) }];
  }
  return [...items, { kind: "text", step, text: String(data.text), ...from }];
}

/** A live turn's items as the page lays them out: the agent's own one by one, and each
 * specialist's consecutive items together, so its name is said once above what it said. */
export type Shown =
  | { kind: "own"; item: Item; index: number }
  | { kind: "nested"; agent: string; depth: number; items: Item[]; index: number };

export function layout(items: Item[]): Shown[] {
  const shown: Shown[] = [];
  items.forEach((item, index) => {
    const last = shown[shown.length - 1];
    if (!item.depth) shown.push({ kind: "own", item, index });
    else if (last?.kind === "nested" && last.agent === item.agent && last.depth === item.depth) last.items.push(item);
    else shown.push({ kind: "nested", agent: item.agent ?? "", depth: item.depth, items: [item], index });
  });
  return shown;
}
