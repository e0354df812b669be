import { describe, expect, it } from "vitest";
import { SseParser, readSse, type SseEvent } from "./sse";

function streamOf(chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(typeof c === "string" ? encoder.encode(c) : c);
      controller.close();
    },
  });
}

async function all(stream: ReadableStream<Uint8Array>): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of readSse(stream)) out.push(e);
  return out;
}

describe("SseParser", () => {
  it("reads the server's events with names, ids and JSON data", () => {
    const parser = new SseParser();
    const events = parser.push(
      'id: 1\nevent: run.started\ndata: {"run_id": "r"}\n\nid: 2\nevent: text.delta\ndata: {"text": "Hi"}\n\n',
    );
    expect(events).toEqual([
      { event: "run.started", data: '{"run_id": "r"}', id: "1" },
      { event: "text.delta", data: '{"text": "Hi"}', id: "2" },
    ]);
  });

  it("joins multi-line data with newlines and drops one leading space only", () => {
    const events = new SseParser().push("data:first\ndata:  second\ndata\n\n");
    expect(events).toEqual([{ event: "message", data: "first\n second\n", id: null }]);
  });

  it("skips comments (keep-alive pings) and events without data", () => {
    const parser = new SseParser();
    const events = parser.push(": ping - 2026-11-26\n\nevent: lonely\n\nid: 7\n\ndata: x\n\n");
    expect(events).toEqual([{ event: "message", data: "x", id: "7" }]);
    expect(parser.comments).toEqual(["ping - 2026-11-26"]);
  });

  it("accepts CRLF and CR line ends, also split across chunks", () => {
    const parser = new SseParser();
    const got = [
      ...parser.push("event: a\r"),
      ...parser.push("\ndata: 1\r\n\r"),
      ...parser.push("\ndata: 2\r\r"),
    ];
    expect(got).toEqual([
      { event: "a", data: "1", id: null },
      { event: "message", data: "2", id: null },
    ]);
  });

  it("keeps the last id across events, ignores an id with NUL, and strips a BOM", () => {
    const parser = new SseParser();
    const got = parser.push("\uFEFFid: 5\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\nid\ndata: d\n\n");
    expect(got.map((e) => e.id)).toEqual(["5", "5", "5", ""]);
  });

  it("ignores retry and unknown fields, and a field name without a colon", () => {
    const got = new SseParser().push("retry: 10\nfoo: bar\nevent\ndata: z\n\n");
    expect(got).toEqual([{ event: "message", data: "z", id: null }]);
  });
});

describe("readSse", () => {
  it("decodes UTF-8 split inside a character and yields events as they complete", async () => {
    const bytes = new TextEncoder().encode('event: text.delta\ndata: {"text": "é😀"}\n\n');
    const cut = bytes.indexOf(0xf0) + 2; // inside the emoji's four bytes
    const events = await all(streamOf([bytes.slice(0, cut), bytes.slice(cut)]));
    expect(events).toEqual([{ event: "text.delta", data: '{"text": "é😀"}', id: null }]);
  });

  it("drops an unfinished last event, as the standard says", async () => {
    const events = await all(streamOf(["data: done\n\n", "data: cut off"]));
    expect(events.map((e) => e.data)).toEqual(["done"]);
  });

  it("stops when the stream is aborted", async () => {
    const controller = new AbortController();
    let pushMore: ((chunk: string) => void) | null = null;
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        pushMore = (chunk) => c.enqueue(new TextEncoder().encode(chunk));
        controller.signal.addEventListener("abort", () => c.error(new DOMException("aborted", "AbortError")));
      },
    });
    const seen: string[] = [];
    const reading = (async () => {
      for await (const e of readSse(stream)) {
        seen.push(e.data);
        controller.abort();
      }
    })();
    pushMore!("data: one\n\n");
    await expect(reading).rejects.toThrow("aborted");
    expect(seen).toEqual(["one"]);
  });
});
