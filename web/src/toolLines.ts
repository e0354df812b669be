// A tool call as one line a person reads ("Saved to memory · human: Lives in: Lisbon"), from
// its name, arguments and the tool's reply (api/tools/native: the replies' first sentences
// are part of seed 001's format, so they are safe to read). A call that changed a core
// memory line also names that line, for a link to it.

export interface ToolLine {
  text: string;
  /** The core memory line it wrote, when it wrote one. */
  line?: { block: string; number: number };
}

const APPENDED = /^Appended to \[(.+?)\] at line (\d+): "(.*)"/;
const ALREADY = /^Line already exists in \[(.+?)\] at line (\d+): "(.*)"/;
const REPLACED = /^Replaced line (\d+) in \[(.+?)\]: "(.*)" -> "(.*)"/;
const DELETED = /^Deleted line (\d+) from \[(.+?)\]: "(.*)"/;

function argument(args: unknown, name: string): string {
  if (args && typeof args === "object" && name in args) return String((args as Record<string, unknown>)[name]);
  return "";
}

export function toolLine(name: string, args: unknown, result?: string): ToolLine {
  const first = (result ?? "").split("\n")[0];
  let m: RegExpMatchArray | null;
  if ((m = first.match(APPENDED))) {
    return { text: `Saved to memory · ${m[1]}: ${m[3]}`, line: { block: m[1], number: Number(m[2]) } };
  }
  if ((m = first.match(ALREADY))) {
    return { text: `Already in memory · ${m[1]}: ${m[3]}`, line: { block: m[1], number: Number(m[2]) } };
  }
  if ((m = first.match(REPLACED))) {
    return { text: `Changed memory · ${m[2]}: ${m[3]} → ${m[4]}`, line: { block: m[2], number: Number(m[1]) } };
  }
  if ((m = first.match(DELETED))) return { text: `Removed from memory · ${m[2]}: ${m[3]}` };
  const waiting = result === undefined ? " …" : "";
  switch (name) {
    case "core_memory_append":
      return { text: `Saving to memory · ${argument(args, "block")}: ${argument(args, "content")}${waiting}` };
    case "archival_memory_insert":
    case "store_memory":
      return { text: `Saved to archival memory: ${argument(args, "content")}${waiting}` };
    case "archival_memory_search":
    case "search_memories":
      return { text: `Searched memory for “${argument(args, "query")}”${waiting}` };
    case "conversation_search":
      return { text: `Searched past messages for “${argument(args, "query")}”${waiting}` };
    case "core_memory_read":
      return { text: `Read memory · ${argument(args, "block")}${waiting}` };
    default:
      // A specialist's tool (api/runtime/specialists.py): its name follows the prefix.
      if (name.startsWith("ask_")) return { text: `Asked ${name.slice(4)}: ${argument(args, "request")}${waiting}` };
      return { text: `Used ${name}${waiting}` };
  }
}

/** The id of a core memory line in the memory panel beside the chat (a link's target). */
export const lineAnchor = (block: string, number: number): string => `memory-${block}-${number}`;
