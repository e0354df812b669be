import { describe, expect, it } from "vitest";
import { shares, type TurnContext } from "./context";

const context = (window: number | null): TurnContext => ({
  agent_id: "a",
  session_id: null,
  provider: "openai",
  model: "gpt-4o",
  architecture: "krishna-memgpt",
  prompt_known: true,
  parts: [
    { name: "system", tokens: 300, count: 0, text: "", items: [] },
    { name: "tools", tokens: 100, count: 0, text: "", items: [] },
  ],
  total_tokens: 400,
  estimated: true,
  context_window: window,
  percent_used: window ? (100 * 400) / window : null,
});

describe("the context bar's shares", () => {
  it("are of the window when it is known", () => {
    expect(shares(context(1000))).toEqual([
      { name: "system", percent: 30 },
      { name: "tools", percent: 10 },
    ]);
  });
  it("are of the total when the window is unknown", () => {
    expect(shares(context(null)).map((s) => s.percent)).toEqual([75, 25]);
  });
});
