import { describe, expect, it } from "vitest";
import { howUsed, linkedMemory, sourceHref, usedSummary } from "./sources";
import type { Source, Sources } from "./types";

const memory = (id: string, extra: Partial<Source> = {}): Source => ({
  kind: "archival",
  id,
  via: "archival_memory_search",
  score: 0.016393,
  similarity: null,
  preview: `Memory ${id}`,
  conversation_id: null,
  ...extra,
});
const message = (id: string, conversation = "c1"): Source => ({
  kind: "message",
  id,
  via: "recent_conversation",
  score: null,
  similarity: null,
  preview: `Message ${id}`,
  conversation_id: conversation,
});
const used = (items: Source[], left_out = 0): Sources => ({ items, blocks: [{ label: "human", version: 2 }], left_out });

describe("what a reply used", () => {
  it("counts memories and past messages, one or many", () => {
    expect(usedSummary(used([memory("a")]))).toBe("Used 1 memory");
    expect(usedSummary(used([memory("a"), message("m"), memory("b")]))).toBe("Used 2 memories · 1 past message");
    expect(usedSummary(used([message("m"), message("n")]))).toBe("Used 2 past messages");
    expect(usedSummary(used([memory("a")], 3))).toBe("Used 1 memory · 3 more");
  });

  it("says nothing when only the blocks were in the prompt", () => {
    expect(usedSummary(used([]))).toBeNull();
  });

  it("says how each came in", () => {
    expect(howUsed(memory("a"))).toBe("memory · searched · score 0.0164");
    expect(howUsed(memory("a", { via: "list_memories", score: null }))).toBe("memory · listed");
    expect(howUsed(memory("a", { via: "my_recall", score: 0.5 }))).toBe("memory · recalled (my_recall) · score 0.5000");
    expect(howUsed(message("m"))).toBe("past message · recent conversation");
  });

  it("links a memory to the inspector and a message to its conversation", () => {
    expect(sourceHref("ag 1", memory("m/1"))).toBe("/agents/ag%201#archival-m%2F1");
    expect(linkedMemory("#archival-m%2F1")).toBe("m/1");
    expect(linkedMemory("#memory-human-1")).toBeNull();
    expect(sourceHref("ag", message("m", "c1"), "c1")).toBe("#message-m");
    expect(sourceHref("ag", message("m", "c2"), "c1")).toBe("/agents/ag/chat/c2#message-m");
  });
});
