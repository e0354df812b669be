// What a reply used (docs/sse.md, `context.used`; GET /runs/{id}'s `sources`), as the chat
// page says it: "Used 2 memories · 1 past message", and where each one is shown.

import { score } from "./memory";
import type { Source, Sources } from "./types";

const plural = (count: number, one: string, many: string) => `${count} ${count === 1 ? one : many}`;

/** "Used 2 memories · 1 past message"; null when the reply used no memory or message (the
 * blocks of core memory are in every prompt, so they alone say nothing about the reply). */
export function usedSummary(sources: Sources): string | null {
  const memories = sources.items.filter((s) => s.kind === "archival").length;
  const messages = sources.items.length - memories;
  const parts = [];
  if (memories > 0) parts.push(plural(memories, "memory", "memories"));
  if (messages > 0) parts.push(plural(messages, "past message", "past messages"));
  if (sources.left_out > 0) parts.push(`${sources.left_out} more`);
  return parts.length === 0 ? null : `Used ${parts.join(" · ")}`;
}

/** How it came into the reply's context, for a person: "searched · score 0.0164". */
export function howUsed(source: Source): string {
  const kind = source.kind === "archival" ? "memory" : "past message";
  let how: string;
  if (source.via === "recent_conversation") how = "recent conversation";
  else if (source.via === "list_memories") how = "listed";
  else if (/search/.test(source.via)) how = "searched";
  else how = `recalled (${source.via})`;
  const scored = source.score === null ? "" : ` · score ${score(source.score)}`;
  return `${kind} · ${how}${scored}`;
}

/** The id of an archival memory in the inspector (a link's target). */
export const archivalAnchor = (memoryId: string): string => `archival-${memoryId}`;

/** The id of a message on the chat page (a link's target). */
export const messageAnchor = (messageId: string): string => `message-${messageId}`;

/** The archival memory a location's hash names (`#archival-{id}`), if it names one. */
export function linkedMemory(hash: string): string | null {
  const found = /^#archival-(.+)$/.exec(hash);
  return found ? decodeURIComponent(found[1]) : null;
}

/** Where a source is shown: an archival memory in the agent's inspector, a message in its
 * conversation (on this page when it is the one open: `sameConversation`). */
export function sourceHref(agentId: string, source: Source, openConversation?: string): string {
  const agent = `/agents/${encodeURIComponent(agentId)}`;
  if (source.kind === "archival") return `${agent}#${archivalAnchor(encodeURIComponent(source.id))}`;
  const hash = `#${messageAnchor(source.id)}`;
  if (!source.conversation_id || source.conversation_id === openConversation) return hash;
  return `${agent}/chat/${encodeURIComponent(source.conversation_id)}${hash}`;
}
