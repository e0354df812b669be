import { describe, expect, it } from "vitest";
import { titleOf } from "./ChatPage";

describe("a conversation's title from its first message", () => {
  it("is its first line, spaces collapsed", () => {
    expect(titleOf("\n  Plan   my trip\nto Lisbon")).toBe("Plan my trip");
  });

  it("is cut at a word near 60 characters, and says so", () => {
    const title = titleOf("Could you help me plan a two week trip through Portugal and Spain next spring?");
    expect(title).toBe("Could you help me plan a two week trip through Portugal and…");
    expect(title.length).toBeLessThanOrEqual(61);
  });

  it("cuts a word with no space in it too", () => {
    expect(titleOf("x".repeat(100))).toBe(`${"x".repeat(60)}…`);
  });
});
