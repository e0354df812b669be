import { afterEach, describe, expect, it, vi } from "vitest";
import { act, cleanup, render, screen } from "@testing-library/react";
import { setAuthMode } from "../api";
import type { AgentDocument } from "../documents";
import { InspectorDocuments } from "./InspectorDocuments";

afterEach(() => {
  cleanup();
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

const json = (body: unknown) => new Response(JSON.stringify(body), { status: 200, headers: { "Content-Type": "application/json" } });

const guide = (state: AgentDocument["state"]): AgentDocument => ({
  id: "d1",
  file_name: "guide.md",
  media_type: "text/markdown",
  size_bytes: 2048,
  pages: null,
  passages: state === "ready" ? 3 : 0,
  state,
  error: null,
  created_at: "",
  updated_at: "",
});

/** A server whose document is processing for `polls` reads of it, then ready. */
function server(polls: number) {
  let reads = 0;
  return vi.fn(async (path: string) => {
    if (path === "/agents/a/documents") return json({ documents: [guide("processing")] });
    reads += 1;
    return json(guide(reads > polls ? "ready" : "processing"));
  });
}

/** Time going by a second at a time, so that React's effects run between the timers. */
async function wait(seconds: number) {
  for (let i = 0; i < seconds; i++) await act(() => vi.advanceTimersByTimeAsync(1000));
}

const reads = (fetch: ReturnType<typeof server>) => fetch.mock.calls.filter(([p]) => p === "/agents/a/documents/d1").length;

describe("the documents section", () => {
  it("reads a processing document again until it is ready, then stops", async () => {
    setAuthMode("local");
    vi.useFakeTimers();
    const fetch = server(2);
    vi.stubGlobal("fetch", fetch);
    render(<InspectorDocuments agentId="a" />);
    await act(() => vi.advanceTimersByTimeAsync(0));
    expect(screen.getByText("Processing…")).toBeTruthy();
    await wait(60);
    expect(screen.getByText("Ready")).toBeTruthy();
    expect(screen.getByText(/3 passages/)).toBeTruthy();
    expect(reads(fetch)).toBe(3);
    await wait(60);
    expect(reads(fetch)).toBe(3);
  });

  it("drops a document deleted elsewhere, and stops reading it", async () => {
    setAuthMode("local");
    vi.useFakeTimers();
    const fetch = vi.fn(async (path: string) => {
      if (path === "/agents/a/documents") return json({ documents: [guide("processing")] });
      return new Response(JSON.stringify({ code: "document_not_found", message: "No document with this id." }), {
        status: 404,
        headers: { "Content-Type": "application/json" },
      });
    });
    vi.stubGlobal("fetch", fetch);
    render(<InspectorDocuments agentId="a" />);
    await act(() => vi.advanceTimersByTimeAsync(0));
    expect(screen.getByText("Processing…")).toBeTruthy();
    await wait(60);
    expect(screen.queryByText("Processing…")).toBeNull();
    expect(screen.queryByText("guide.md")).toBeNull();
    expect(reads(fetch)).toBe(1);
  });

  it("stops reading once the page is left", async () => {
    setAuthMode("local");
    vi.useFakeTimers();
    const fetch = server(1000);
    vi.stubGlobal("fetch", fetch);
    const { unmount } = render(<InspectorDocuments agentId="a" />);
    await wait(3);
    const before = reads(fetch);
    expect(before).toBeGreaterThan(0);
    unmount();
    await wait(60);
    expect(reads(fetch)).toBe(before);
  });
});
