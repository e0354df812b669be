// An agent's documents (docs/documents.md) as the inspector shows them: what a file may be,
// how each document's state reads, and how long to wait before asking again.

import { upload } from "./api";

export interface AgentDocument {
  id: string;
  file_name: string;
  media_type: string;
  size_bytes: number;
  pages: number | null;
  passages: number;
  state: "processing" | "ready" | "failed";
  error: string | null;
  created_at: string;
  updated_at: string;
}

/** The types the server reads (api/documents/reading.py), for the file picker: by suffix
 * and by media type, since browsers name some files by one and some by the other. */
export const ACCEPT = ".txt,.md,.markdown,.html,.htm,.pdf,text/plain,text/markdown,text/html,application/pdf";

/** The server's default DOCUMENT_MAX_BYTES; a server set otherwise says its own in its refusal. */
export const MAX_BYTES = 10 * 2 ** 20;

export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 2 ** 20) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / 2 ** 20).toFixed(1).replace(/\.0$/, "")} MB`;
}

/** What a person reads as a document's state. */
export function stateText(doc: AgentDocument): string {
  if (doc.state === "ready") return "Ready";
  if (doc.state === "failed") return doc.error ? `Failed: ${doc.error}` : "Failed";
  return "Processing…";
}

/** The wait before the next look at documents still processing: short at first (a small
 * file is ready in a second or two), then longer, so a large PDF is not asked about twice
 * a second for minutes; null when nothing is processing. */
export function nextPoll(docs: AgentDocument[], polled: number): number | null {
  if (!docs.some((d) => d.state === "processing")) return null;
  return Math.min(1000 * 1.5 ** polled, 10_000);
}

export const documentsPath = (agentId: string) => `/agents/${encodeURIComponent(agentId)}/documents`;

/** Uploads one file as multipart (one part `file`), with progress. */
export function uploadDocument(agentId: string, file: File, onProgress: (fraction: number) => void): Promise<AgentDocument> {
  const body = new FormData();
  body.append("file", file, file.name);
  return upload<AgentDocument>(documentsPath(agentId), body, onProgress);
}
