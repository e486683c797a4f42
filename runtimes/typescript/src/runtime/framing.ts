// JSON-RPC framing on stdio, in front of the MCP SDK's server, as the Rust
// runtime frames it (crates/ecp-runtime/src/framing.rs), answer for answer:
// every line a client sends is either handed to the server or answered here
// with the JSON-RPC error, so that no request goes unanswered (a client
// would wait for its timeout) and nothing makes the process end silently.
//
// - a line that is not UTF-8 or not JSON: -32700;
// - a batch, a non-object, a wrong `jsonrpc`, an `id` that is neither a
//   string nor an integer, a `method` that is not a string: -32600;
// - `params` that is not an object, `tools/call` arguments that are not an
//   object: -32602;
// - a line longer than MAX_LINE_BYTES: -32600, and the rest of the line is
//   skipped without being held.
//
// Notifications get no answer, as JSON-RPC says. Part of ecp's TypeScript
// runtime; `ecp new` copies it verbatim.

import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  type JSONRPCMessage,
  JSONRPCNotificationSchema,
  JSONRPCRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

/** The longest request line read (the Rust runtime's bound). */
export const MAX_LINE_BYTES = 4 * 1024 * 1024;

export type Verdict = { forward: JSONRPCMessage } | { answer: object } | { ignore: true };

const error = (id: unknown, code: number, message: string): Verdict => ({
  answer: { jsonrpc: "2.0", id, error: { code, message } },
});

const validId = (id: unknown): boolean => typeof id === "string" || (typeof id === "number" && Number.isSafeInteger(id));

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Judges one line (its bytes, without the line break). */
export function judge(bytes: Uint8Array): Verdict {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return error(null, -32700, "Parse error: the line is not UTF-8.");
  }
  text = text.replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, "");
  if (text === "") return { ignore: true };
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return error(null, -32700, "Parse error: the line is not JSON.");
  }
  if (!isObject(message)) {
    return error(null, -32600, "Invalid Request: send one JSON-RPC object per line (no batches).");
  }
  const hasId = "id" in message;
  const id = message.id;
  if (hasId && !validId(id)) return error(null, -32600, "Invalid Request: `id` must be a string or an integer.");
  const replyId = hasId ? id : null;
  if (message.jsonrpc !== "2.0") return error(replyId, -32600, 'Invalid Request: `jsonrpc` must be "2.0".');
  if (!("method" in message)) return { forward: message as JSONRPCMessage }; // a response to the server
  const method = message.method;
  if (typeof method !== "string") return error(replyId, -32600, "Invalid Request: `method` must be a string.");
  const params = message.params;
  const badParams = params !== undefined && params !== null && !isObject(params);
  const args = isObject(params) ? params.arguments : undefined;
  const badArguments = method === "tools/call" && args !== undefined && args !== null && !isObject(args);
  if (badParams || badArguments) {
    if (!hasId) return { ignore: true }; // a notification: nothing is owed
    const what = badParams ? "`params` must be an object." : "`arguments` must be an object.";
    return error(replyId, -32602, `Invalid params: ${what}`);
  }
  // What the SDK's own schema would drop without a word (a `_meta` that is
  // not an object, say) is answered here instead.
  if (hasId && !JSONRPCRequestSchema.safeParse(message).success) {
    return error(replyId, -32600, "Invalid Request: not a JSON-RPC request the server can read.");
  }
  if (!hasId && !JSONRPCNotificationSchema.safeParse(message).success) return { ignore: true };
  return { forward: message as JSONRPCMessage };
}

/** Splits a byte stream into lines of at most `max` bytes; a longer line is reported once, unheld. */
export class LineReader {
  private parts: Buffer[] = [];
  private length = 0;
  private tooLong = false;

  constructor(
    private readonly onLine: (line: Uint8Array | "too-long") => void,
    private readonly max = MAX_LINE_BYTES,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    while (start <= chunk.length) {
      const end = chunk.indexOf(0x0a, start);
      const piece = chunk.subarray(start, end === -1 ? chunk.length : end);
      if (!this.tooLong) {
        if (this.length + piece.length > this.max) {
          this.tooLong = true;
          this.parts = [];
          this.length = 0;
        } else if (piece.length > 0) {
          this.parts.push(Buffer.from(piece));
          this.length += piece.length;
        }
      }
      if (end === -1) return;
      this.finish();
      start = end + 1;
    }
  }

  /** The end of the stream: a last line without a line break still counts. */
  end(): void {
    if (this.length > 0 || this.tooLong) this.finish();
  }

  private finish(): void {
    const line = this.tooLong ? "too-long" : Buffer.concat(this.parts, this.length);
    this.parts = [];
    this.length = 0;
    this.tooLong = false;
    this.onLine(line);
  }
}

/** An MCP transport on stdin/stdout with the framing above in front of the server. */
export class FramedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  constructor(
    private readonly input: NodeJS.ReadableStream = process.stdin,
    private readonly output: NodeJS.WritableStream = process.stdout,
  ) {}

  async start(): Promise<void> {
    const lines = new LineReader((line) => {
      const verdict =
        line === "too-long" ? error(null, -32600, "Invalid Request: the line is too long.") : judge(line);
      if ("answer" in verdict) void this.write(verdict.answer);
      else if ("forward" in verdict) this.onmessage?.(verdict.forward);
    });
    this.input.on("data", (chunk: Buffer | string) => lines.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk));
    // The end of stdin is not a close: the calls in flight still answer
    // (the SDK aborts them on close), then nothing keeps Node running.
    this.input.on("end", () => lines.end());
    this.input.on("error", (error: Error) => this.onerror?.(error));
  }

  send(message: JSONRPCMessage): Promise<void> {
    return this.write(message);
  }

  async close(): Promise<void> {
    this.input.pause();
    this.onclose?.();
  }

  private write(message: object): Promise<void> {
    return new Promise((resolve) => {
      if (this.output.write(`${JSON.stringify(message)}\n`)) resolve();
      else this.output.once("drain", () => resolve());
    });
  }
}
