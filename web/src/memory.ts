// The memory inspector's side of /agents/{id}/memory (docs/memory.md): every write to a
// block carries the version the page read, as If-Match, so an edit made meanwhile (by the
// agent in a turn, by another tab, by the API) is never overwritten; the server answers
// 412 `version_mismatch` instead and the page reloads the block.

import { ApiError, authFetch, get } from "./api";
import type { FormField } from "./forms/schema";

export interface Block {
  name: string;
  description: string;
  word_limit: number;
  is_default: boolean;
  lines: string[];
  word_count: number;
  percent_used: number;
  warning: boolean;
  version: number;
}

export interface LineChange {
  block: Block;
  line_number: number;
  line: string;
  previous: string | null;
  changed: boolean;
}

export interface MemoryForms {
  block: { fields: FormField[] };
  archival: { fields: FormField[] };
}

export interface ArchivalMemory {
  id: string;
  content: string;
  created_at: string;
  category: string | null;
  context: string | null;
  confidence: number | null;
  tags: string[];
}

export interface ArchivalHit extends ArchivalMemory {
  score: number;
  similarity: number | null;
}

export interface ArchivalPage {
  memories: ArchivalMemory[];
  cursor: string | null;
  /** Given when the listing is by category. */
  total?: number | null;
}

export interface ArchivalSearch {
  query: string;
  page: number;
  pages: number;
  total: number;
  mode: SearchMode;
  memories: ArchivalHit[];
}

export interface MessageHit {
  id: string;
  conversation_id: string;
  role: string;
  content: string;
  actor_id: string | null;
  created_at: string;
  score: number;
  similarity: number | null;
}

export interface MessageSearch {
  query: string;
  total: number;
  mode: SearchMode;
  messages: MessageHit[];
}

export type SearchMode = "hybrid" | "lexical" | "semantic";

export const memoryPath = (agentId: string, rest = "") => `/agents/${encodeURIComponent(agentId)}/memory${rest}`;

export const blockPath = (agentId: string, block: string, rest = "") =>
  memoryPath(agentId, `/blocks/${encodeURIComponent(block)}${rest}`);

/** A write to a block that happens only if the block is still at `version`. */
export async function writeBlock<T>(
  method: "POST" | "PUT" | "PATCH" | "DELETE",
  path: string,
  version: number,
  body?: unknown,
): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json", "If-Match": `"${version}"` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await authFetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

/** The version the block is at now when `error` is the server's 412, else null. */
export function conflictVersion(error: unknown): number | null {
  if (!(error instanceof ApiError) || error.status !== 412 || error.code !== "version_mismatch") return null;
  const current = (error.details as { current_version?: unknown } | undefined)?.current_version;
  return typeof current === "number" ? current : -1;
}

/** What the page says when a write lost the race: nothing was saved, and why. */
export function conflictNotice(block: string, yours: number, current: number): string {
  const now = current >= 0 ? ` (it is at version ${current} now; you had version ${yours})` : "";
  return (
    `[${block}] was changed by someone else while you edited it${now}. ` +
    "Your change was not saved; the block has been reloaded, so check it and redo your change if it still applies."
  );
}

/** "12 / 5000 words (0%)": what a block holds against its limit. */
export function capacity(block: Pick<Block, "word_count" | "word_limit" | "percent_used">): string {
  return `${block.word_count} / ${block.word_limit} words (${block.percent_used}%)`;
}

/** Scores are for comparing hits with each other: four digits are plenty. */
export function score(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "—";
  return value.toFixed(4);
}

export function searchQuery(params: Record<string, string | number | undefined | null>): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") query.set(key, String(value));
  }
  return query.toString();
}

export const loadBlocks = (agentId: string) => get<Block[]>(memoryPath(agentId, "/blocks"));
export const loadForms = (agentId: string) => get<MemoryForms>(memoryPath(agentId, "/schema"));

/** One version of a block's lines as its history tells it (GET .../history). */
export interface HistoryEntry {
  version: number;
  at: string;
  source: "tool" | "mcp" | "rest" | "memory_run" | "compaction";
  action: "append" | "replace" | "delete" | "rewrite";
  line_number: number | null;
  old_line: string | null;
  new_line: string | null;
  removed: string[];
  added: string[];
  run_id?: string | null;
  restored_from?: number | null;
}

export interface HistoryPage {
  changes: HistoryEntry[];
  cursor: string | null;
}

/** Who or what made a version, in words. */
export function changedBy(entry: Pick<HistoryEntry, "source" | "run_id" | "restored_from">): string {
  if (entry.restored_from) return `Restored from version ${entry.restored_from}`;
  switch (entry.source) {
    case "tool":
      return entry.run_id ? `The agent, in turn ${entry.run_id.slice(0, 8)}` : "The agent, in a turn";
    case "mcp":
      return "An MCP client";
    case "memory_run":
      return "A memory run";
    case "compaction":
      return "Compaction (old lines moved to archival memory)";
    default:
      return "Edited over the API or in this page";
  }
}

/** A version's change as diff lines: what went ("-") and what came ("+"), with the line
 * number where one line changed. */
export function diffLines(entry: HistoryEntry): { sign: "-" | "+"; text: string; line: number | null }[] {
  const at = entry.line_number;
  switch (entry.action) {
    case "append":
      return [{ sign: "+", text: entry.new_line ?? "", line: at }];
    case "delete":
      return [{ sign: "-", text: entry.old_line ?? "", line: at }];
    case "replace":
      return [
        { sign: "-", text: entry.old_line ?? "", line: at },
        { sign: "+", text: entry.new_line ?? "", line: at },
      ];
    default:
      return [
        ...entry.removed.map((text) => ({ sign: "-" as const, text, line: null })),
        ...entry.added.map((text) => ({ sign: "+" as const, text, line: null })),
      ];
  }
}

/** When a deleted archival memory can no longer be restored, from the DELETE's Undo-Until
 * header (an HTTP date); null when the server gave none. */
export function undoUntil(header: string | null): Date | null {
  if (!header) return null;
  const when = new Date(header);
  return Number.isNaN(when.getTime()) ? null : when;
}
