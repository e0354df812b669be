import { afterEach, describe, expect, it, vi } from "vitest";
import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { ApiError, setAuthMode } from "./api";
import {
  capacity,
  changedBy,
  conflictNotice,
  conflictVersion,
  diffLines,
  score,
  searchQuery,
  undoUntil,
  writeBlock,
  type Block,
  type HistoryEntry,
} from "./memory";
import { InspectorBlocks } from "./pages/InspectorBlocks";
import { storedSecrets } from "./pages/SettingsPage";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

const human = (version: number, lines: string[]): Block => ({
  name: "human",
  description: "Facts about the user",
  word_limit: 5000,
  is_default: true,
  lines,
  word_count: lines.join(" ").split(/\s+/).filter(Boolean).length,
  percent_used: 0,
  warning: false,
  version,
});

const conflict = (current: number) =>
  json(
    412,
    { code: "version_mismatch", message: "[human] has changed", details: { block: "human", current_version: current } },
    { ETag: `"${current}"` },
  );

describe("writeBlock", () => {
  it("sends the version read as If-Match, with the body as JSON", async () => {
    setAuthMode("local");
    const fetch = vi.fn(async () => json(200, { changed: true }));
    vi.stubGlobal("fetch", fetch);
    await writeBlock("PUT", "/agents/a/memory/blocks/human/lines/1", 7, { content: "Name: Ada" });
    const [path, init] = fetch.mock.calls[0] as unknown as [string, RequestInit];
    expect(path).toBe("/agents/a/memory/blocks/human/lines/1");
    expect(init.method).toBe("PUT");
    expect(new Headers(init.headers).get("If-Match")).toBe('"7"');
    expect(init.body).toBe('{"content":"Name: Ada"}');
  });

  it("turns the server's 412 into the version the block is at now", async () => {
    setAuthMode("local");
    vi.stubGlobal("fetch", vi.fn(async () => conflict(9)));
    const error = await writeBlock("DELETE", "/x", 7).catch((e) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(conflictVersion(error)).toBe(9);
  });
});

describe("conflictVersion", () => {
  it("is null for anything but a version mismatch", () => {
    expect(conflictVersion(new ApiError(422, "validation_error", "bad"))).toBeNull();
    expect(conflictVersion(new ApiError(412, "other", "x"))).toBeNull();
    expect(conflictVersion(new Error("offline"))).toBeNull();
    expect(conflictVersion(new ApiError(412, "version_mismatch", "no details"))).toBe(-1);
  });
});

describe("the words the inspector shows", () => {
  it("says what was lost and what to do", () => {
    expect(conflictNotice("human", 2, 3)).toMatch(/^\[human\] was changed by someone else.*version 3 now; you had version 2/);
    expect(conflictNotice("human", 2, -1)).not.toMatch(/version/);
    expect(conflictNotice("human", 2, 3)).toMatch(/not saved.*reloaded/);
  });

  it("formats capacity, scores and queries", () => {
    expect(capacity({ word_count: 12, word_limit: 5000, percent_used: 0 })).toBe("12 / 5000 words (0%)");
    expect(score(0.0327868852)).toBe("0.0328");
    expect(score(null)).toBe("—");
    expect(searchQuery({ query: "tea & coffee", page: 2, mode: "", cursor: null })).toBe("query=tea+%26+coffee&page=2");
  });

  it("knows which provider secrets are stored, from the masked values only", () => {
    const fields = [
      { name: "api_key", label: "API key", type: "string" as const, secret: true },
      { name: "secret_access_key", label: "Secret", type: "string" as const, secret: true },
      { name: "base_url", label: "Base URL", type: "url" as const },
    ];
    const stored = { provider: "p", label: "P", updated_at: "", values: { api_key: "••••", secret_access_key: null, base_url: "http://x" } };
    expect(storedSecrets(fields, stored)).toEqual(new Set(["api_key"]));
    expect(storedSecrets(fields, undefined)).toEqual(new Set());
  });
});

describe("InspectorBlocks", () => {
  it("on a conflict says so, reloads, and keeps the other edit", async () => {
    setAuthMode("local");
    const fetch = vi.fn(async () => conflict(3));
    vi.stubGlobal("fetch", fetch);
    const reload = vi.fn(async () => undefined);
    const onSaved = vi.fn();
    render(<InspectorBlocks agentId="a" blocks={[human(2, ["Name: Ada"])]} blockForm={[]} onSaved={onSaved} reload={reload} />);
    fireEvent.click(screen.getByRole("button", { name: "Edit line 1 of human" }));
    fireEvent.change(screen.getByLabelText("Line 1 of human"), { target: { value: "Name: Ada Lovelace" } });
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(screen.getByRole("alert").textContent).toMatch(/changed by someone else.*version 3/));
    expect(reload).toHaveBeenCalledTimes(1);
    expect(onSaved).not.toHaveBeenCalled();
    expect(screen.queryByLabelText("Line 1 of human")).toBeNull(); // the stale edit is closed
  });

  it("keeps a refused edit open with the server's reason, and saves an accepted one", async () => {
    setAuthMode("local");
    const fetch = vi
      .fn()
      .mockResolvedValueOnce(json(409, { code: "duplicate_line", message: "[human] already has that line" }))
      .mockResolvedValueOnce(json(200, { block: human(3, ["Likes tea"]), line_number: 1, line: "Likes tea", previous: "x", changed: true }));
    vi.stubGlobal("fetch", fetch);
    const onSaved = vi.fn();
    render(<InspectorBlocks agentId="a" blocks={[human(2, ["x"])]} blockForm={[]} onSaved={onSaved} reload={vi.fn()} />);
    fireEvent.click(screen.getByRole("button", { name: "Edit line 1 of human" }));
    fireEvent.change(screen.getByLabelText("Line 1 of human"), { target: { value: "Likes tea" } });
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(screen.getByRole("alert").textContent).toBe("[human] already has that line"));
    expect(screen.getByLabelText("Line 1 of human")).toHaveProperty("value", "Likes tea");
    fireEvent.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(onSaved).toHaveBeenCalledWith(human(3, ["Likes tea"])));
    expect(screen.queryByLabelText("Line 1 of human")).toBeNull();
  });
});

describe("a block's history", () => {
  const entry = (fields: Partial<HistoryEntry>): HistoryEntry => ({
    version: 3,
    at: "2026-11-29T12:00:00Z",
    source: "rest",
    action: "append",
    line_number: null,
    old_line: null,
    new_line: null,
    removed: [],
    added: [],
    ...fields,
  });

  it("reads each kind of change as lines removed and added", () => {
    expect(diffLines(entry({ action: "append", line_number: 2, new_line: "B" }))).toEqual([{ sign: "+", text: "B", line: 2 }]);
    expect(diffLines(entry({ action: "delete", line_number: 1, old_line: "A" }))).toEqual([{ sign: "-", text: "A", line: 1 }]);
    expect(diffLines(entry({ action: "replace", line_number: 1, old_line: "A", new_line: "B" }))).toEqual([
      { sign: "-", text: "A", line: 1 },
      { sign: "+", text: "B", line: 1 },
    ]);
    expect(diffLines(entry({ action: "rewrite", removed: ["A"], added: ["B", "C"] })).map((d) => d.sign + d.text)).toEqual([
      "-A",
      "+B",
      "+C",
    ]);
  });

  it("says who or what made a version", () => {
    expect(changedBy({ source: "tool", run_id: "0123456789abcdef" })).toBe("The agent, in turn 01234567");
    expect(changedBy({ source: "tool" })).toBe("The agent, in a turn");
    expect(changedBy({ source: "rest", restored_from: 2 })).toBe("Restored from version 2");
    expect(changedBy({ source: "memory_run" })).toBe("A memory run");
  });

  it("reads the delete's Undo-Until, or none", () => {
    expect(undoUntil("Sun, 29 Nov 2026 13:30:00 GMT")?.toISOString()).toBe("2026-11-29T13:30:00.000Z");
    expect(undoUntil(null)).toBeNull();
    expect(undoUntil("soon")).toBeNull();
  });
});
