// Server-Sent Events over a fetch stream: EventSource cannot POST a body or send headers.
// Parsing follows the HTML standard's "event stream interpretation": lines end with CRLF, LF
// or CR; a blank line dispatches; `:` starts a comment; one space after the colon is dropped;
// data lines join with "\n"; an event with no data is not dispatched; `id` persists.

import { authFetch } from "./api";

export interface SseEvent {
  event: string;
  data: string;
  id: string | null;
}

export class SseParser {
  private buffer = "";
  private skipLf = false; // the last chunk ended with CR: a LF starting the next belongs to it
  private started = false;
  private eventType = "";
  private data: string[] = [];
  private hasData = false;
  lastEventId: string | null = null;
  comments: string[] = [];

  /** Feeds decoded text; returns the events it completed. */
  push(text: string): SseEvent[] {
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.skipLf && text.startsWith("\n")) text = text.slice(1);
    this.skipLf = false;
    this.buffer += text;
    const events: SseEvent[] = [];
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const c = this.buffer[i];
      if (c !== "\n" && c !== "\r") continue;
      const line = this.buffer.slice(start, i);
      if (c === "\r") {
        if (i + 1 < this.buffer.length) {
          if (this.buffer[i + 1] === "\n") i++;
        } else {
          this.skipLf = true;
        }
      }
      start = i + 1;
      const event = this.line(line);
      if (event) events.push(event);
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  private line(line: string): SseEvent | null {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) {
      this.comments.push(line.slice(1).replace(/^ /, ""));
      return null;
    }
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        this.eventType = value;
        break;
      case "data":
        this.data.push(value);
        this.hasData = true;
        break;
      case "id":
        if (!value.includes("\0")) this.lastEventId = value;
        break;
      default: // `retry` and unknown fields: nothing to do for a reader that does not reconnect
    }
    return null;
  }

  private dispatch(): SseEvent | null {
    const event = this.hasData
      ? { event: this.eventType || "message", data: this.data.join("\n"), id: this.lastEventId }
      : null;
    this.eventType = "";
    this.data = [];
    this.hasData = false;
    return event;
  }
}

/** The events of a byte stream, as they complete; an unfinished last event is dropped. */
export async function* readSse(stream: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const reader = stream.getReader();
  const decoder = new TextDecoder("utf-8");
  const parser = new SseParser();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
    yield* parser.push(decoder.decode());
  } finally {
    reader.releaseLock();
  }
}

/** POSTs `body` as JSON and yields the answer's events; aborting `signal` ends the stream
 * (and the server then stores the partial reply as interrupted). JSON errors answered
 * before the stream begins are thrown as ApiError.
 *
 * The events are read from a clone while the response itself is read whole, and awaited:
 * Chromium cancels a fetch whose body a stream reader read to its end before the load's
 * completion reached the page (a race of a few milliseconds, lost in most turns), so the
 * network log showed completed turns as cancelled (net::ERR_ABORTED). Reading the whole
 * response waits for that completion. A turn's stream is small: holding it twice is cheap. */
export async function* postSse(
  path: string,
  body: unknown,
  signal?: AbortSignal,
): AsyncGenerator<SseEvent> {
  const response = await authFetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify(body),
    signal,
  });
  const events = response.clone().body;
  const whole = response.arrayBuffer().catch(() => undefined); // settles when the load does
  if (!events) return;
  yield* readSse(events);
  await whole;
}
