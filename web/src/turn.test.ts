import { describe, expect, it } from "vitest";
import { apply, layout, type Item, type LiveTurn, type Notice } from "./turn";

function play(events: [string, Record<string, unknown>][]): { turn: LiveTurn; notices: Notice[] } {
  const notices: Notice[] = [];
  let turn: LiveTurn = { prompt: "hi", items: [], status: "streaming", runId: null };
  for (const [event, data] of events) turn = apply(turn, event, data, notices);
  return { turn, notices };
}

describe("a streamed turn", () => {
  it("places a specialist's words and calls, marked with its agent and depth, inside the call", () => {
    const nested = (depth: number, agent: string, event: string, payload: Record<string, unknown>) =>
      ["nested", { depth, agent_id: agent, call_id: "c1", event, payload }] as [string, Record<string, unknown>];
    const { turn } = play([
      ["run.started", { run_id: "r1" }],
      ["tool.call", { step: 1, call_id: "c1", name: "ask_billing", arguments: { request: "Balance?" } }],
      nested(1, "b", "run.started", { run_id: "r2" }),
      nested(1, "b", "tool.call", { step: 1, call_id: "c2", name: "ask_ledger", arguments: { request: "Sum" } }),
      nested(2, "l", "text.delta", { step: 1, text: "12 " }),
      nested(2, "l", "text.delta", { step: 1, text: "euros" }),
      nested(1, "b", "tool.result", { step: 1, call_id: "c2", content: "12 euros" }),
      nested(1, "b", "text.delta", { step: 2, text: "The balance is 12." }),
      ["tool.result", { step: 1, call_id: "c1", content: "The balance is 12." }],
      ["text.delta", { step: 2, text: "You have 12." }],
    ]);
    expect(turn.items).toEqual([
      { kind: "tool", callId: "c1", name: "ask_billing", arguments: { request: "Balance?" }, result: "The balance is 12." },
      { kind: "tool", callId: "c2", name: "ask_ledger", arguments: { request: "Sum" }, result: "12 euros", depth: 1, agent: "b" },
      { kind: "text", step: 1, text: "12 euros", depth: 2, agent: "l" },
      { kind: "text", step: 2, text: "The balance is 12.", depth: 1, agent: "b" },
      { kind: "text", step: 2, text: "You have 12." },
    ]);
  });

  it("joins a step's text, places tool calls in order and pairs each with its result", () => {
    const { turn, notices } = play([
      ["run.started", { run_id: "r1" }],
      ["tool.call", { step: 1, call_id: "c1", name: "core_memory_append", arguments: { block: "human", content: "Name: Alice" } }],
      ["tool.result", { step: 1, call_id: "c1", name: "core_memory_append", content: "Appended" }],
      ["text.delta", { step: 2, text: "Nice " }],
      ["text.delta", { step: 2, text: "to meet you" }],
      ["message", { message_id: "m", content: "Nice to meet you", interrupted: false }],
      ["run.completed", { steps: 2, usage: {} }],
    ]);
    expect(turn.runId).toBe("r1");
    expect(turn.status).toBe("completed");
    expect(turn.items).toEqual([
      { kind: "tool", callId: "c1", name: "core_memory_append", arguments: { block: "human", content: "Name: Alice" }, result: "Appended" },
      { kind: "text", step: 2, text: "Nice to meet you" },
    ]);
    expect(notices).toEqual([]);
  });

  it("collects memory warnings and compactions", () => {
    const { notices } = play([
      ["memory.warning", { block: "human", percent_used: 85, word_count: 85, word_limit: 100, warned_turns: 2, compacts_after: 3 }],
      ["memory.compacted", { block: "human", archived_lines: 4, words_before: 95, words_after: 40 }],
    ]);
    expect(notices).toEqual([
      { kind: "warning", block: "human", percent: 85, words: 85, limit: 100, warned: 2, compactsAfter: 3 },
      { kind: "compacted", block: "human", archived: 4, before: 95, after: 40 },
    ]);
  });

  it("keeps what the answer used", () => {
    const item = { kind: "archival", id: "m1", via: "archival_memory_search", score: 0.5, similarity: null, preview: "Coffee", conversation_id: null };
    const { turn, notices } = play([
      ["context.used", { run_id: "r1", items: [item], blocks: [{ label: "human", version: 3 }], left_out: 0 }],
    ]);
    expect(turn.sources).toEqual({ items: [item], blocks: [{ label: "human", version: 3 }], left_out: 0 });
    expect(notices).toEqual([]);
    const odd = play([["context.used", { run_id: "r1" }]]);
    expect(odd.turn.sources).toEqual({ items: [], blocks: [], left_out: 0 });
  });

  it("ends failed on an error, and stopped when the server says interrupted", () => {
    const failed = play([
      ["error", { code: "provider_unavailable", message: "The server cannot be reached." }],
      ["run.failed", { code: "provider_unavailable" }],
    ]);
    expect(failed.turn.status).toBe("failed");
    expect(failed.notices).toEqual([{ kind: "error", code: "provider_unavailable", message: "The server cannot be reached." }]);
    const stopped = play([
      ["error", { code: "interrupted", message: "The server is shutting down." }],
      ["run.failed", { code: "interrupted" }],
    ]);
    expect(stopped.turn.status).toBe("stopped");
  });

  it("ignores events it does not know", () => {
    const { turn } = play([["run.something_new", { x: 1 }]]);
    expect(turn).toEqual({ prompt: "hi", items: [], status: "streaming", runId: null });
  });
});

describe("a live turn laid out", () => {
  it("gathers a specialist's consecutive items under one heading, the agent's own apart", () => {
    const items: Item[] = [
      { kind: "tool", callId: "c1", name: "ask_weather", arguments: {} },
      { kind: "text", step: 0, text: "Sunny", depth: 1, agent: "w" },
      { kind: "tool", callId: "c2", name: "core_memory_read", arguments: {}, depth: 1, agent: "w" },
      { kind: "text", step: 1, text: "Deep", depth: 2, agent: "x" },
      { kind: "text", step: 0, text: "It is sunny." },
    ];
    expect(layout(items).map((s) => (s.kind === "own" ? "own" : `${s.agent}:${s.items.length}`))).toEqual([
      "own",
      "w:2",
      "x:1",
      "own",
    ]);
  });
});
