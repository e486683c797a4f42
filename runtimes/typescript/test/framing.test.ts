// The stdio framing (src/runtime/framing.ts) in front of the real server:
// every malformed line answered with the Rust runtime's bytes, a line over
// the cap refused without being held, the server still serving after each,
// no more input read while the client does not take the answers; and a
// fuzz loop over random lines (random bytes, mutated and cut requests,
// batches, odd ids, deep nesting, long lines, CR/LF mixes) whose answers
// are checked against JSON-RPC's rules, said here without the framing's
// code: every line owed an answer gets exactly one, with its id, and
// nothing stops the server. ECP_FUZZ_SECONDS (default 3) and ECP_FUZZ_SEED
// replay or lengthen it.

import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { test } from "node:test";

import { contextSearchServer, FramedStdioTransport, judge, MAX_DEPTH, MAX_LINE_BYTES } from "../src/runtime/index.js";

/** The server behind the framing on two pipes; `lines` collects what it writes, `answers` the same parsed. */
async function serve(options: { read?: boolean } = {}) {
  const input = new PassThrough();
  const output = new PassThrough();
  const lines: string[] = [];
  const answers: Array<Record<string, unknown>> = [];
  let pending = "";
  const read = () =>
    output.on("data", (chunk: Buffer) => {
      pending += chunk.toString("utf8");
      let at: number;
      while ((at = pending.indexOf("\n")) !== -1) {
        const line = pending.slice(0, at);
        lines.push(line);
        answers.push(JSON.parse(line));
        pending = pending.slice(at + 1);
      }
    });
  if (options.read !== false) read();
  const provider = { search: async () => [{ id: "a", content: "x", score: 1 }] };
  const server = contextSearchServer(provider, { name: "acme-context", version: "0.1.0", budgetMs: 1000 });
  await server.connect(new FramedStdioTransport(input, output));
  const until = async (count: number) => {
    const start = Date.now();
    while (answers.length < count && Date.now() - start < 20000) await new Promise((r) => setTimeout(r, 5));
    return answers.length;
  };
  return { input, output, lines, answers, until, read };
}

const initialize = JSON.stringify({
  jsonrpc: "2.0",
  id: 0,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "0" } },
});

const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

/** A line and the answer the Rust runtime writes for it, byte for byte. */
const RUST: Array<[string | Buffer, string]> = [
  ["not json", '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON."}}'],
  [
    Buffer.from([0x7b, 0xff, 0x7d]),
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not UTF-8."}}',
  ],
  // A byte order mark is not JSON to the Rust runtime's parser.
  [
    Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}')]),
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON."}}',
  ],
  // Nor is a number too large for a double, nor nesting past MAX_DEPTH.
  [
    '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1e400}}',
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON."}}',
  ],
  [nested(MAX_DEPTH + 1), '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON."}}'],
  [
    nested(MAX_DEPTH),
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: send one JSON-RPC object per line (no batches)."}}',
  ],
  [
    "[]",
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: send one JSON-RPC object per line (no batches)."}}',
  ],
  [
    '[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: send one JSON-RPC object per line (no batches)."}}',
  ],
  [
    "null",
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: send one JSON-RPC object per line (no batches)."}}',
  ],
  ...['{"a":1}', "[1]", "1.5", "1.0", "1e2", "-0", "null", "true", "18446744073709551616"].map(
    (id): [string, string] => [
      `{"jsonrpc":"2.0","id":${id},"method":"ping"}`,
      '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: `id` must be a string or an integer."}}',
    ],
  ),
  [
    '{"jsonrpc":"1.0","id":7,"method":"ping"}',
    '{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid Request: `jsonrpc` must be \\"2.0\\"."}}',
  ],
  // A lone surrogate escape is read as U+FFFD; the id comes back escaped as serde_json writes it.
  [
    '{"jsonrpc":"1.0","id":"a\\ud800\\u0001\\/é","method":"ping"}',
    '{"jsonrpc":"2.0","id":"a\ufffd\\u0001/é","error":{"code":-32600,"message":"Invalid Request: `jsonrpc` must be \\"2.0\\"."}}',
  ],
  [
    '{"jsonrpc":"2.0","id":8,"method":5}',
    '{"jsonrpc":"2.0","id":8,"error":{"code":-32600,"message":"Invalid Request: `method` must be a string."}}',
  ],
  [
    '{"jsonrpc":"2.0","id":9,"method":"tools/list","params":[1]}',
    '{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"Invalid params: `params` must be an object."}}',
  ],
  [
    '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"context_search","arguments":"q"}}',
    '{"jsonrpc":"2.0","id":10,"error":{"code":-32602,"message":"Invalid params: `arguments` must be an object."}}',
  ],
  // What the server cannot read is answered as the Rust runtime's server answers it.
  ['{"jsonrpc":"2.0","id":11,"method":"nope"}', '{"jsonrpc":"2.0","id":11,"error":{"code":-32601,"message":"nope"}}'],
  ['{"jsonrpc":"2.0","id":12,"method":"tools/call"}', '{"jsonrpc":"2.0","id":12,"error":{"code":-32601,"message":"tools/call"}}'],
  [
    '{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"other","arguments":{}}}',
    '{"jsonrpc":"2.0","id":13,"error":{"code":-32602,"message":"Unknown tool: this server offers only context_search."}}',
  ],
  // `null` params and arguments count as absent; members JSON-RPC does not have are ignored.
  ['{"jsonrpc":"2.0","id":14,"method":"ping","params":null,"extra":1}', '{"jsonrpc":"2.0","id":14,"result":{}}'],
  [
    '{"jsonrpc":"2.0","id":"q","method":"tools/call","params":{"name":"context_search","arguments":null}}',
    '{"jsonrpc":"2.0","id":"q","result":{"content":[{"type":"text","text":"Search query is required."}],"isError":true}}',
  ],
  [`{"jsonrpc":"2.0","id":15,"method":"ping","params":{"a":${nested(MAX_DEPTH - 2)}}}`, '{"jsonrpc":"2.0","id":15,"result":{}}'],
  [" \f\t" + '{"jsonrpc":"2.0","id":16,"method":"ping"}' + "\r", '{"jsonrpc":"2.0","id":16,"result":{}}'],
];

/** Where the TypeScript runtime answers what the Rust one serves or answers without an id (src/runtime/framing.ts says why). */
const OWN: Array<[string, string]> = [
  [
    '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}',
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: an integer `id` must be from -9007199254740991 to 9007199254740991 (JavaScript holds no larger one exactly)."}}',
  ],
  [
    '{"jsonrpc":"2.0","id":17,"method":"tools/list","params":{"_meta":5}}',
    '{"jsonrpc":"2.0","id":17,"error":{"code":-32600,"message":"Invalid Request: not a JSON-RPC request the server can read."}}',
  ],
  [
    '{"jsonrpc":"2.0","id":18}',
    '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a message without `method` must be a response, with `result` or `error`."}}',
  ],
];

test("each malformed line gets the Rust runtime's answer, byte for byte, and the server keeps serving", async () => {
  const { input, lines, answers, until } = await serve();
  input.write(`${initialize}\n`);
  assert.equal(await until(1), 1);
  // Nothing is owed for a blank line, a notification or a response.
  input.write("\n \r\n");
  input.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  input.write('{"jsonrpc":"2.0","method":"notifications/x","params":[1]}\n');
  input.write('{"jsonrpc":"2.0","id":99,"result":{}}\n');
  const cases = [...RUST, ...OWN];
  for (const [line] of cases) {
    input.write(line);
    input.write("\n");
  }
  // A line over the cap, in pieces: refused once, never held whole.
  const piece = Buffer.alloc(1024 * 1024, 0x61);
  for (let sent = 0; sent <= MAX_LINE_BYTES + 2 * 1024 * 1024; sent += piece.length) input.write(piece);
  input.write("\n");
  input.write('{"jsonrpc":"2.0","id":"last","method":"tools/list"}\n');
  assert.equal(await until(cases.length + 3), cases.length + 3);
  assert.equal(answers[0].id, 0);
  // The server's own answers may come after the framing's: the lines are compared as a set.
  const tooLong = '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: the line is too long."}}';
  const last = lines.findIndex((line) => line.startsWith('{"jsonrpc":"2.0","id":"last","result":{"tools":[{"name":"context_search"'));
  assert.ok(last > 0, lines.join("\n"));
  const said = lines.filter((_, at) => at !== 0 && at !== last).sort();
  assert.deepEqual(said, [...cases.map(([, answer]) => answer), tooLong].sort());
  input.end();
});

test("no more input is read while the client has not taken the answers", async () => {
  const { input, output, answers, until, read } = await serve({ read: false });
  // 64 KiB pieces, as a pipe delivers them, of lines each answered -32700.
  const piece = Buffer.from("x\n".repeat(32 * 1024));
  for (let n = 0; n < 4; n++) input.write(piece);
  await new Promise((r) => setTimeout(r, 200));
  assert.ok(input.isPaused(), "stdin is still read");
  assert.ok(input.readableLength > 0, "every line was taken");
  // What waits for the client is bounded by one piece's answers, not all of them.
  const held = output.readableLength + output.writableLength;
  assert.ok(held < 4 * 1024 * 1024, `${held} bytes held`);
  read();
  assert.equal(await until(4 * 32 * 1024), 4 * 32 * 1024);
  assert.ok(answers.every((a) => (a.error as { code: number }).code === -32700));
  input.end();
});

test("the server answers as the SDK's Server did: versions negotiated, a task refused, a cancelled call unanswered (id 0 too)", async () => {
  const input = new PassThrough();
  const output = new PassThrough();
  const lines: string[] = [];
  let pending = "";
  output.on("data", (chunk: Buffer) => {
    pending += chunk.toString("utf8");
    for (let at = pending.indexOf("\n"); at !== -1; at = pending.indexOf("\n")) {
      lines.push(pending.slice(0, at));
      pending = pending.slice(at + 1);
    }
  });
  const aborted: string[] = [];
  const provider = {
    search: (query: string, _limit: number, signal: AbortSignal) =>
      new Promise<never>((_, reject) =>
        signal.addEventListener("abort", () => {
          aborted.push(query);
          reject(new Error("aborted"));
        }),
      ),
  };
  const server = contextSearchServer(provider, { name: "acme-context", version: "0.1.0", budgetMs: 60000 });
  await server.connect(new FramedStdioTransport(input, output));
  const init = (id: number, version: string) =>
    `{"jsonrpc":"2.0","id":${id},"method":"initialize","params":{"protocolVersion":"${version}","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n`;
  const call = (id: unknown, query: string) =>
    `${JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "context_search", arguments: { query } } })}\n`;
  input.write(init(1, "2024-11-05"));
  input.write(init(2, "1999-01-01"));
  input.write('{"jsonrpc":"2.0","id":3,"method":"ping","params":{"task":{"ttl":5}}}\n');
  input.write('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"context_search","arguments":{"query":"q"},"task":{}}}\n');
  input.write(call(0, "zero"));
  input.write(call("s", "string"));
  input.write(call(5, "kept"));
  const until = async (condition: () => boolean) => {
    const start = Date.now();
    while (!condition() && Date.now() - start < 20000) await new Promise((r) => setTimeout(r, 5));
  };
  await until(() => lines.length >= 4);
  input.write('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0,"reason":"r"}}\n');
  input.write('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s"}}\n');
  // Not a cancellation the server can read: `reason` is no string.
  input.write('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":7}}\n');
  input.write('{"jsonrpc":"2.0","id":"end","method":"ping"}\n');
  await until(() => lines.some((line) => line.includes('"id":"end"')));
  await until(() => aborted.length >= 2);
  const serverInfo = '"capabilities":{"tools":{}},"serverInfo":{"name":"acme-context","version":"0.1.0"}}}';
  assert.deepEqual(lines, [
    `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2024-11-05",${serverInfo}`,
    `{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25",${serverInfo}`,
    '{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Server does not support task creation (required for ping)"}}',
    '{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"Server does not support task creation (required for tools/call)"}}',
    '{"jsonrpc":"2.0","id":"end","result":{}}',
  ]);
  assert.deepEqual(aborted.sort(), ["string", "zero"]);
  input.end();
  await server.close();
});

/** A small deterministic generator (xorshift), so that a failure replays. */
function random(seed: number) {
  let state = seed >>> 0 || 1;
  return (n: number) => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state % n;
  };
}

const shapes = [
  '{"jsonrpc":"2.0","id":ID,"method":"tools/list"}',
  '{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"context_search","arguments":{"query":"deploy"}}}',
  '{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"context_search","arguments":{"query":1e400}}}',
  '{"jsonrpc":"2.0","id":ID,"method":"ping","params":{"_meta":{"progressToken":ID}}}',
  '{"jsonrpc":"2.0","method":"notifications/initialized"}',
  '{"jsonrpc":"2.0","method":"notifications/x","params":{"a":[1,2]}}',
  '{"jsonrpc":"2.0","id":ID,"result":{}}',
  '{"jsonrpc":"2.0","id":ID,"error":{"code":-1,"message":"m"}}',
  '{"jsonrpc":"2.0","id":ID,"method":"nope","params":{"_meta":{}}}',
  '{"jsonrpc":"2.0","id":ID,"method":"ping","params":null}',
];

const ids = ['"s"', '"\\ud800"', "7", "-3", "1.5", "1e2", "-0", "null", "[1]", "{}", "9007199254740993", "99999999999999999999"];

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

const depthOf = (value: unknown): number =>
  typeof value === "object" && value !== null ? 1 + Math.max(0, ...Object.values(value).map(depthOf)) : 0;
const finite = (value: unknown): boolean =>
  typeof value === "number" ? Number.isFinite(value) : typeof value !== "object" || value === null || Object.values(value).every(finite);

/**
 * The ids of the answers `line` is owed (none, or one: its id, or null),
 * from JSON-RPC's rules and the Rust runtime's readings, not from the
 * framing's code.
 */
function owed(line: Buffer): Array<unknown> {
  if (line.length > MAX_LINE_BYTES) return [null];
  const space = (b: number) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0c || b === 0x0d;
  let start = 0;
  let end = line.length;
  while (start < end && space(line[start])) start++;
  while (end > start && space(line[end - 1])) end--;
  if (start === end) return [];
  let text: string;
  let message: unknown;
  try {
    text = utf8.decode(line.subarray(start, end));
    message = JSON.parse(text);
  } catch {
    return [null];
  }
  if (!finite(message) || depthOf(message) > MAX_DEPTH) return [null];
  if (typeof message !== "object" || message === null || Array.isArray(message)) return [null];
  const m = message as Record<string, unknown>;
  // The id as written: a string, or an integer literal JavaScript holds exactly.
  const source = /"id"[\t\n\r ]*:[\t\n\r ]*(-?[0-9][0-9eE.+-]*)[\t\n\r ]*[,}]/.exec(text)?.[1];
  const usable =
    typeof m.id === "string" ||
    (typeof m.id === "number" && Number.isSafeInteger(m.id) && source !== undefined && /^-?(0|[1-9][0-9]*)$/.test(source) && source !== "-0");
  const lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
  const id = typeof m.id === "string" ? m.id.replace(lone, "\ufffd") : usable ? m.id : null;
  if ("method" in m) {
    if ("id" in m) return [id];
    return m.jsonrpc !== "2.0" || typeof m.method !== "string" ? [null] : [];
  }
  // A response: the server drops it; anything else without `method` is answered.
  const error = m.error as Record<string, unknown> | undefined;
  // (An error response may leave its id out, as the SDK reads it.)
  const response =
    m.jsonrpc === "2.0" &&
    ("result" in m) !== ("error" in m) &&
    ("result" in m
      ? usable && typeof m.result === "object" && m.result !== null && !Array.isArray(m.result)
      : (usable || !("id" in m)) &&
        typeof error === "object" &&
        error !== null &&
        Number.isSafeInteger(error.code) &&
        typeof error.message === "string");
  if (response) return [];
  return m.jsonrpc !== "2.0" && "id" in m ? [id] : [null];
}

/** One random line: bytes, a mutated or cut request, a batch, an odd id, deep nesting, a long line. */
function randomLine(next: (n: number) => number): Buffer {
  const kind = next(12);
  let line: Buffer;
  if (kind < 2) {
    line = Buffer.from(Array.from({ length: next(64) }, () => next(256)));
  } else if (kind < 8) {
    const id = next(3) === 0 ? ids[next(ids.length)] : next(3) === 0 ? `"s${next(99)}"` : String(next(1000));
    const bytes = Buffer.from(shapes[next(shapes.length)].replaceAll("ID", id));
    // Mutate a few bytes, or cut the line short, or neither.
    for (let n = next(3); n > 0; n--) bytes[next(bytes.length)] = next(2) ? next(128) : 0x20 + next(95);
    line = next(5) === 0 ? bytes.subarray(0, next(bytes.length)) : bytes;
  } else if (kind < 9) {
    line = Buffer.from(next(2) ? `[${next(9)}]` : `{"jsonrpc":"2.0","id":[${next(9)}],"method":"ping"}`);
  } else if (kind < 10) {
    const depth = MAX_DEPTH - 3 + next(6);
    line = Buffer.from(next(2) ? nested(depth) : `{"jsonrpc":"2.0","id":${next(99)},"method":"ping","params":{"a":${nested(depth - 1)}}}`);
  } else {
    line = Buffer.alloc(next(30) === 0 ? MAX_LINE_BYTES + 1 + next(1000) : next(4096), 0x20 + next(95));
  }
  line = Buffer.from(line.filter((b) => b !== 0x0a));
  // CR/LF mixes: a CR inside the line is JSON whitespace or a byte like any other.
  if (next(6) === 0) line = Buffer.concat([line.subarray(0, line.length >> 1), Buffer.from("\r"), line.subarray(line.length >> 1)]);
  return line;
}

test("fuzz: every random line is answered as JSON-RPC says, with its id, and the server never stops", async () => {
  const seconds = Number(process.env.ECP_FUZZ_SECONDS ?? "3");
  const seed = Number(process.env.ECP_FUZZ_SEED ?? Date.now() % 100000);
  const next = random(seed);
  const { input, answers, until } = await serve();
  input.write(`${initialize}\n`);
  const expected: unknown[] = [0];
  let lines = 0;
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    const line = randomLine(next);
    const ids = owed(line);
    expected.push(...ids);
    // The verdict of the framing agrees (a line over the cap never reaches it).
    if (line.length <= MAX_LINE_BYTES) {
      const verdict = judge(line);
      const answer = "answer" in verdict ? (verdict.answer as { id: unknown }) : undefined;
      const request = "forward" in verdict && "method" in verdict.forward && "id" in verdict.forward ? verdict.forward : undefined;
      const said = answer ? [answer.id] : request ? [request.id] : [];
      assert.deepEqual(said, ids, `seed ${seed}: ${JSON.stringify(line.toString("latin1").slice(0, 200))}`);
    }
    input.write(Buffer.concat([line, Buffer.from(next(3) === 0 ? "\r\n" : "\n")]));
    lines += 1;
    if (lines % 200 === 0) await until(expected.length);
  }
  assert.equal(await until(expected.length), expected.length, `seed ${seed}: ${lines} lines`);
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(answers.length, expected.length, `seed ${seed}: more answers than lines that are owed one`);
  const key = (id: unknown) => JSON.stringify(id);
  assert.deepEqual(answers.map((a) => key(a.id)).sort(), expected.map(key).sort(), `seed ${seed}: the ids answered`);
  for (const answer of answers) {
    assert.equal(answer.jsonrpc, "2.0");
    assert.ok("result" in answer !== "error" in answer, `seed ${seed}: ${JSON.stringify(answer)}`);
    if ("error" in answer) {
      const code = (answer.error as { code: number }).code;
      assert.ok([-32700, -32600, -32601, -32602].includes(code), `seed ${seed}: ${JSON.stringify(answer)}`);
    }
  }
  input.end();
});
