// A streamed turn as the chat page shows it: what each SSE event (docs/sse.md) changes.

import type { Sources } from "./types";

export type Item =
  | { kind: "text"; step: number; text: string }
  | { kind: "tool"; callId: string; name: string; arguments: unknown; result?: string };

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
    case "text.delta": {
      const step = Number(data.step);
      const last = turn.items[turn.items.length - 1];
      if (last?.kind === "text" && last.step === step) {
        return { ...turn, items: [...turn.items.slice(0, -1), { ...last, text: last.text + String(data.text) }] };
      }
      return { ...turn, items: [...turn.items, { kind: "text", step, text: String(data.text) }] };
    }
    case "tool.call":
      return {
        ...turn,
        items: [...turn.items, { kind: "tool", callId: String(data.call_id), name: String(data.name), arguments: data.arguments }],
      };
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

