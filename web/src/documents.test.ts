import { describe, expect, it } from "vitest";
import { nextPoll, sizeText, stateText, type AgentDocument } from "./documents";

const doc = (state: AgentDocument["state"], error: string | null = null): AgentDocument => ({
  id: "d",
  file_name: "guide.md",
  media_type: "text/markdown",
  size_bytes: 10,
  pages: null,
  passages: 0,
  state,
  error,
  created_at: "",
  updated_at: "",
});

describe("documents", () => {
  it("say their state in words, a failure with its reason", () => {
    expect(stateText(doc("processing"))).toBe("Processing…");
    expect(stateText(doc("ready"))).toBe("Ready");
    expect(stateText(doc("failed", "The embedding backend is down."))).toBe("Failed: The embedding backend is down.");
    expect(stateText(doc("failed"))).toBe("Failed");
  });

  it("are asked about again while one processes, ever less often, and not once none does", () => {
    expect(nextPoll([doc("ready"), doc("failed")], 0)).toBeNull();
    expect(nextPoll([], 0)).toBeNull();
    const waits = [0, 1, 2, 3, 10, 30].map((n) => nextPoll([doc("ready"), doc("processing")], n)!);
    expect(waits[0]).toBe(1000);
    expect(waits).toEqual([...waits].sort((a, b) => a - b));
    expect(waits[waits.length - 1]).toBe(10_000);
  });

  it("give sizes a person reads", () => {
    expect(sizeText(512)).toBe("512 bytes");
    expect(sizeText(48_213)).toBe("47 KB");
    expect(sizeText(10 * 2 ** 20)).toBe("10 MB");
    expect(sizeText(1.5 * 2 ** 20)).toBe("1.5 MB");
  });
});
