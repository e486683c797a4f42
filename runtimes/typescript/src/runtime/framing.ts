// JSON-RPC framing on stdio, in front of the runtime's server, as the Rust
// runtime frames it (crates/ecp-runtime/src/framing.rs), answer for answer
// and byte for byte: every line a client sends is either handed to the
// server or answered here with the JSON-RPC error, so that no request goes
// unanswered (a client would wait for its timeout) and nothing makes the
// process end silently.
//
// - a line that is not UTF-8 or not JSON: -32700. "Not JSON" is what the
//   Rust runtime's parser refuses: a byte order mark, nesting deeper than
//   MAX_DEPTH, a number too large for a double (JSON.parse would read
//   Infinity); a lone surrogate escape is read as U+FFFD, as it is there;
// - a batch, a non-object, a wrong `jsonrpc`, an `id` that is neither a
//   string nor an integer literal (`1.0`, `1e2` and `-0` are not), a
//   `method` that is not a string: -32600;
// - `params` that is not an object, `tools/call` arguments that are not an
//   object: -32602 (`null` counts as absent, and so does a `null` `_meta`);
// - a line longer than MAX_LINE_BYTES: -32600, and the rest of the line is
//   skipped without being held;
// - a request for a method the server serves that it cannot read (a
//   `tools/call` without `name`; ./messages.ts says what it reads, as the
//   MCP TypeScript SDK's schemas read it): -32601 naming the method, as
//   the Rust runtime's server answers.
//
// Notifications and responses get no answer, as JSON-RPC says; members a
// JSON-RPC message does not have are ignored. Answers are written with
// `jsonrpc` and `id` first, as the Rust runtime writes them. Writing stops
// reading: no line is read while the client has not taken the answers
// already written.
//
// Where it differs from the Rust runtime (whose server, rmcp, reads some
// lines the SDK's schemas cannot): an integer `id` beyond 2^53 - 1 is
// served there and answered -32600 here (JavaScript cannot hold it, and an
// answer with a rounded id would answer another request); a request the
// SDK's schemas refuse but rmcp reads (a `_meta.progressToken` that is no string or
// integer, a `cursor` that is no string) is served there and answered
// -32600 or -32601 here; a `_meta` that is no object, and a message
// without `method` that is no response, are answered there -32600 without
// any `id` member and here with the request's id, or id null; a line with
// two `id` members is refused there and read with the last one here (as
// JSON.parse reads it).
//
// Part of ecp's TypeScript runtime; `ecp new` copies it verbatim.

import { has, isNotification, isObject, isRequest, isResponse, servedParamsReadable } from "./messages.js";

/** A JSON-RPC message as the framing hands it on: an object with `jsonrpc` "2.0". */
export type JSONRPCMessage = Record<string, unknown> & { jsonrpc: "2.0" };

/**
 * A message channel between the server and its client: the shape of the
 * MCP TypeScript SDK's `Transport`, so that the SDK's own client and
 * transports (the runtime's tests use them) talk to the server too.
 */
export interface Transport {
  start(): Promise<void>;
  send(message: JSONRPCMessage): Promise<void>;
  close(): Promise<void>;
  // Methods, not function members: the SDK's transports type their
  // messages more narrowly, and a method's parameters are compared both ways.
  onclose?(): void;
  onerror?(error: Error): void;
  onmessage?(message: JSONRPCMessage): void;
}

/** The longest request line read (the Rust runtime's bound). */
export const MAX_LINE_BYTES = 4 * 1024 * 1024;

/** The deepest nesting of arrays and objects read (serde_json's, which the Rust runtime parses with). */
export const MAX_DEPTH = 127;

export type Verdict = { forward: JSONRPCMessage } | { answer: object } | { ignore: true };

const error = (id: unknown, code: number, message: string): Verdict => ({
  answer: { jsonrpc: "2.0", id, error: { code, message } },
});

/** The answer to a line over MAX_LINE_BYTES. */
const TOO_LONG = error(null, -32600, "Invalid Request: the line is too long.");

const NOT_JSON = error(null, -32700, "Parse error: the line is not JSON.");

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** ASCII whitespace, as Rust's `trim_ascii` trims it: tab, line feed, form feed, carriage return, space. */
const isSpace = (byte: number): boolean => byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0c || byte === 0x0d;

/** Whether arrays and objects in `text` nest deeper than MAX_DEPTH (strings skipped). */
function tooDeep(text: string): boolean {
  let depth = 0;
  for (let at = 0; at < text.length; at++) {
    const c = text.charCodeAt(at);
    if (c === 0x22) {
      // A string: to its closing quote, escapes skipped.
      for (at++; at < text.length && text.charCodeAt(at) !== 0x22; at++) {
        if (text.charCodeAt(at) === 0x5c) at++;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_DEPTH) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

const hex4 = (text: string, at: number): number | undefined =>
  /^[0-9a-fA-F]{4}$/.test(text.slice(at, at + 4)) ? Number.parseInt(text.slice(at, at + 4), 16) : undefined;
const isHigh = (unit: number | undefined) => unit !== undefined && unit >= 0xd800 && unit < 0xdc00;
const isLow = (unit: number | undefined) => unit !== undefined && unit >= 0xdc00 && unit < 0xe000;

/**
 * `text` with every lone surrogate escape (`"\ud800"`) written `\ufffd`,
 * as the Rust runtime reads it (its strings cannot hold one).
 */
function withoutLoneSurrogates(text: string): string {
  let out = "";
  let copied = 0;
  let inString = false;
  let at = 0;
  while (at < text.length) {
    const c = text[at];
    if (!inString) {
      if (c === '"') inString = true;
      at += 1;
    } else if (c === '"') {
      inString = false;
      at += 1;
    } else if (c === "\\" && text[at + 1] === "u") {
      const unit = hex4(text, at + 2);
      const lone = isHigh(unit) ? !(text.slice(at + 6, at + 8) === "\\u" && isLow(hex4(text, at + 8))) : isLow(unit);
      if (isHigh(unit) && !lone) {
        at += 12;
      } else if (lone) {
        out += `${text.slice(copied, at)}\\ufffd`;
        at += 6;
        copied = at;
      } else {
        at += 2;
      }
    } else {
      at += c === "\\" ? 2 : 1;
    }
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Whether every number in `value` is finite: JSON.parse reads a literal
 * too large for a double as Infinity, which the Rust runtime's parser
 * refuses. `value` nests at most MAX_DEPTH deep.
 */
function finite(value: unknown): boolean {
  if (typeof value === "number") return Number.isFinite(value);
  if (typeof value !== "object" || value === null) return true;
  return Object.values(value).every(finite);
}

/**
 * The source text of the value of the last top-level `id` member of
 * `text`, a JSON object JSON.parse has read (so that `1.0` and `1` can be
 * told apart, as the Rust runtime's parser tells them).
 */
function idSource(text: string): string | undefined {
  let at = text.indexOf("{") + 1;
  let found: string | undefined;
  const space = () => {
    while (at < text.length && isSpace(text.charCodeAt(at))) at++;
  };
  const skipString = () => {
    for (at++; text.charCodeAt(at) !== 0x22; at++) if (text.charCodeAt(at) === 0x5c) at++;
    at++;
  };
  const skipValue = () => {
    const c = text[at];
    if (c === '"') return skipString();
    if (c === "{" || c === "[") {
      let depth = 0;
      do {
        const d = text[at];
        if (d === '"') {
          skipString();
          continue;
        }
        if (d === "{" || d === "[") depth++;
        else if (d === "}" || d === "]") depth--;
        at++;
      } while (depth > 0);
      return;
    }
    while (at < text.length && !",}] \t\n\r".includes(text[at])) at++;
  };
  for (;;) {
    space();
    if (at >= text.length || text[at] === "}") return found;
    const keyStart = at;
    skipString();
    const key: unknown = JSON.parse(text.slice(keyStart, at));
    space();
    at++; // ':'
    space();
    const valueStart = at;
    skipValue();
    if (key === "id") found = text.slice(valueStart, at);
    space();
    if (text[at] === ",") at++;
  }
}

const INTEGER = /^-?(0|[1-9][0-9]*)$/;
const I64_MIN = -(2n ** 63n);
const U64_MAX = 2n ** 64n - 1n;

/** Why `id` cannot be used (its value and its source text), or undefined when it can. */
function badId(id: unknown, text: string): string | undefined {
  if (typeof id === "string") return undefined;
  const anyIdRule = "Invalid Request: `id` must be a string or an integer.";
  if (typeof id !== "number") return anyIdRule;
  const source = idSource(text) ?? "";
  // The Rust runtime's parser reads `1.0`, `1e2` and `-0` as floats.
  if (!INTEGER.test(source) || source === "-0") return anyIdRule;
  const exact = BigInt(source);
  if (exact < I64_MIN || exact > U64_MAX) return anyIdRule;
  if (!Number.isSafeInteger(id)) {
    return "Invalid Request: an integer `id` must be from -9007199254740991 to 9007199254740991 (JavaScript holds no larger one exactly).";
  }
  return undefined;
}

/** Only the members a JSON-RPC message has, in their order; `null` params, arguments and `_meta` left out. */
function reduced(message: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const keys = has(message, "method") ? ["jsonrpc", "id", "method", "params"] : ["jsonrpc", "id", "result", "error"];
  for (const key of keys) if (has(message, key)) out[key] = message[key];
  if (out.params === null) delete out.params;
  if (isObject(out.params)) {
    const params: Record<string, unknown> = { ...out.params };
    if (params._meta === null) delete params._meta;
    if (out.method === "tools/call" && params.arguments === null) delete params.arguments;
    out.params = params;
  }
  return out;
}

/** Judges one line (its bytes, without the line break). */
export function judge(line: Uint8Array): Verdict {
  let start = 0;
  let end = line.length;
  while (start < end && isSpace(line[start])) start++;
  while (end > start && isSpace(line[end - 1])) end--;
  if (start === end) return { ignore: true };
  let text: string;
  try {
    text = utf8.decode(line.subarray(start, end));
  } catch {
    return error(null, -32700, "Parse error: the line is not UTF-8.");
  }
  if (tooDeep(text)) return NOT_JSON;
  if (/\\u[dD][89a-fA-F]/.test(text)) text = withoutLoneSurrogates(text);
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
  if (!finite(message)) return NOT_JSON;
  if (!isObject(message)) {
    return error(null, -32600, "Invalid Request: send one JSON-RPC object per line (no batches).");
  }
  const hasId = has(message, "id");
  const id = message.id;
  if (hasId) {
    const why = badId(id, text);
    if (why !== undefined) return error(null, -32600, why);
  }
  const replyId = hasId ? id : null;
  if (message.jsonrpc !== "2.0") return error(replyId, -32600, 'Invalid Request: `jsonrpc` must be "2.0".');
  if (!has(message, "method")) {
    // A response to the server (which sends no request): the server drops it.
    const response = reduced(message);
    if (isResponse(response)) return { forward: response as JSONRPCMessage };
    return error(null, -32600, "Invalid Request: a message without `method` must be a response, with `result` or `error`.");
  }
  const method = message.method;
  if (typeof method !== "string") return error(replyId, -32600, "Invalid Request: `method` must be a string.");
  const params = message.params;
  const badParams = params !== undefined && params !== null && !isObject(params);
  const args = isObject(params) && has(params, "arguments") ? params.arguments : undefined;
  const badArguments = method === "tools/call" && args !== undefined && args !== null && !isObject(args);
  if (badParams || badArguments) {
    if (!hasId) return { ignore: true }; // a notification: nothing is owed
    const what = badParams ? "`params` must be an object." : "`arguments` must be an object.";
    return error(replyId, -32602, `Invalid params: ${what}`);
  }
  const forward = reduced(message);
  // What the server could not read (a `_meta` that is not an object, say)
  // is answered here instead.
  if (hasId && !isRequest(forward)) {
    return error(replyId, -32600, "Invalid Request: not a JSON-RPC request the server can read.");
  }
  // A request for a method the server serves that it cannot read (a
  // `tools/call` without `name`, say) is answered as the Rust runtime's
  // server answers it: -32601 naming the method.
  if (hasId && servedParamsReadable(method, forward.params as Record<string, unknown> | undefined) === false) {
    return error(replyId, -32601, method);
  }
  if (!hasId && !isNotification(forward)) return { ignore: true };
  return { forward: forward as JSONRPCMessage };
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

/** A message as the Rust runtime writes it: `jsonrpc` and `id` first, one line. */
function serialize(message: object): string {
  const { jsonrpc, id, ...rest } = message as Record<string, unknown>;
  const ordered = has(message, "id") ? { jsonrpc, id, ...rest } : { jsonrpc, ...rest };
  return `${JSON.stringify(ordered)}\n`;
}

/** An MCP transport on stdin/stdout with the framing above in front of the server. */
export class FramedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private drained?: Promise<void>;

  constructor(
    private readonly input: NodeJS.ReadableStream = process.stdin,
    private readonly output: NodeJS.WritableStream = process.stdout,
  ) {}

  async start(): Promise<void> {
    const lines = new LineReader((line) => {
      const verdict = line === "too-long" ? TOO_LONG : judge(line);
      if ("answer" in verdict) void this.write(verdict.answer);
      else if ("forward" in verdict) this.onmessage?.(verdict.forward);
    });
    this.input.on("data", (chunk: Buffer | string) => lines.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk));
    // The end of stdin is not a close: the calls in flight still answer
    // (the server aborts them on close), then nothing keeps Node running.
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

  /** Writes one line; while the client has not taken what was written, no more input is read. */
  private write(message: object): Promise<void> {
    if (this.output.write(serialize(message))) return Promise.resolve();
    if (this.drained === undefined) {
      this.input.pause();
      this.drained = new Promise((resolve) =>
        this.output.once("drain", () => {
          this.drained = undefined;
          this.input.resume();
          resolve();
        }),
      );
    }
    return this.drained;
  }
}
