import { describe, expect, it } from "vitest";
import { toolLine } from "./toolLines";

describe("a tool call as one line", () => {
  it("names the core memory line an append wrote", () => {
    const said = toolLine("core_memory_append", { block: "human", content: "Lives in: Lisbon" }, 'Appended to [human] at line 3: "Lives in: Lisbon" (9 / 5000 words)');
    expect(said).toEqual({ text: "Saved to memory · human: Lives in: Lisbon", line: { block: "human", number: 3 } });
  });

  it("says a replace with the old and new text", () => {
    const said = toolLine("core_memory_replace", {}, 'Replaced line 1 in [human]: "Name: Alice" -> "Name: Bob" (4 / 5000 words)');
    expect(said).toEqual({ text: "Changed memory · human: Name: Alice → Name: Bob", line: { block: "human", number: 1 } });
  });

  it("says what is still running from its arguments", () => {
    expect(toolLine("archival_memory_search", { query: "tea" }).text).toBe("Searched memory for “tea” …");
    expect(toolLine("archival_memory_search", { query: "tea" }, "Page 1 of 1").text).toBe("Searched memory for “tea”");
  });

  it("falls back to the tool's name", () => {
    expect(toolLine("get_weather", {}, "sunny")).toEqual({ text: "Used get_weather" });
  });

  it("says which specialist was asked, and what", () => {
    expect(toolLine("ask_weather", { request: "Rain in Lisbon?" }).text).toBe("Asked weather: Rain in Lisbon? …");
  });
});
