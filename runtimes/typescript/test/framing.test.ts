// The stdio framing (src/runtime/framing.ts) in front of the real server:
// every malformed line answered as the Rust runtime answers it, a line over
// the cap refused without being held, the server still serving after each;
// and a fuzz loop over random lines: every line is answered exactly as often
// as JSON-RPC says, and nothing stops the server.

import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { test } from "node:test";

import { contextSearchServer, FramedStdioTransport, judge, MAX_LINE_BYTES } from "../src/runtime/index.js";

/** The server behind the framing on two pipes; `answers` collects what it writes. */
async function serve() {
  const input = new PassThrough();
  const output = new PassThrough();
  const answers: Array<Record<string, unknown>> = [];
  let pending = "";
  output.on("data", (chunk: Buffer) => {
    pending += chunk.toString("utf8");
    let at: number;
    while ((at = pending.indexOf("\n")) !== -1) {
      answers.push(JSON.parse(pending.slice(0, at)));
      pending = pending.slice(at + 1);
    }
  });
  const provider = { search: async () => [{ id: "a", content: "x", score: 1 }] };
  const server = contextSearchServer(provider, { name: "acme-context", version: "0.1.0", budgetMs: 1000 });
  await server.connect(new FramedStdioTransport(input, output));
  const until = async (count: number) => {
    const start = Date.now();
    while (answers.length < count && Date.now() - start < 20000) await new Promise((r) => setTimeout(r, 5));
    return answers.length;
  };
  return { input, answers, until };
}

const initialize = JSON.stringify({
  jsonrpc: "2.0",
  id: 0,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "0" } },
});

test("each malformed line gets the Rust runtime's answer and the server keeps serving", async () => {
  const { input, answers, until } = await serve();
  const cases: Array<[string | Buffer, number, unknown]> = [
    ["not json", -32700, null],
    [Buffer.from([0x7b, 0xff, 0x7d]), -32700, null],
    ["[]", -32600, null],
    ['[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600, null],
    ['{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', -32600, null],
    ['{"jsonrpc":"2.0","id":1.5,"method":"ping"}', -32600, null],
    ['{"jsonrpc":"1.0","id":7,"method":"ping"}', -32600, 7],
    ['{"jsonrpc":"2.0","id":8,"method":5}', -32600, 8],
    ['{"jsonrpc":"2.0","id":9,"method":"tools/list","params":[1]}', -32602, 9],
    ['{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"context_search","arguments":"q"}}', -32602, 10],
    ['{"jsonrpc":"2.0","id":11,"method":"tools/list","params":{"_meta":5}}', -32600, 11],
  ];
  input.write(`${initialize}\n`);
  assert.equal(await until(1), 1);
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
  cases.forEach(([, code, id], index) => {
    const answer = answers[index + 1] as { id: unknown; error: { code: number } };
    assert.equal(answer.error?.code, code, `case ${index}: ${JSON.stringify(answer)}`);
    assert.equal(answer.id, id, `case ${index}`);
  });
  const tooLong = answers[cases.length + 1] as { id: unknown; error: { code: number; message: string } };
  assert.deepEqual(tooLong, {
    jsonrpc: "2.0",
    id: null,
    error: { code: -32600, message: "Invalid Request: the line is too long." },
  });
  const last = answers[cases.length + 2] as { id: unknown; result: { tools: Array<{ name: string }> } };
  assert.equal(last.id, "last");
  assert.equal(last.result.tools[0].name, "context_search");
  input.end();
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
  '{"jsonrpc":"2.0","id":ID,"method":"ping"}',
  '{"jsonrpc":"2.0","method":"notifications/initialized"}',
  '{"jsonrpc":"2.0","id":ID,"result":{}}',
  '{"jsonrpc":"2.0","id":ID,"method":"nope","params":{"_meta":{}}}',
];

test("fuzz: every random line is answered as JSON-RPC says, and the server never stops", async () => {
  const seconds = Number(process.env.ECP_FUZZ_SECONDS ?? "3");
  const seed = Number(process.env.ECP_FUZZ_SEED ?? Date.now() % 100000);
  const next = random(seed);
  const { input, answers, until } = await serve();
  input.write(`${initialize}\n`);
  let expected = 1;
  let lines = 0;
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    let line: Buffer;
    const kind = next(10);
    if (kind < 3) {
      line = Buffer.from(Array.from({ length: next(64) }, () => next(256)));
    } else if (kind < 8) {
      const text = shapes[next(shapes.length)].replace("ID", String(next(3) === 0 ? `"s${next(99)}"` : next(1000)));
      const bytes = Buffer.from(text);
      // Mutate a few bytes, or cut the line short.
      for (let n = next(4); n > 0; n--) bytes[next(bytes.length)] = next(128);
      line = next(5) === 0 ? bytes.subarray(0, next(bytes.length)) : bytes;
    } else if (kind < 9) {
      line = Buffer.from(JSON.stringify(next(2) ? [next(9)] : { jsonrpc: "2.0", id: [next(9)], method: "ping" }));
    } else {
      line = Buffer.alloc(next(20) === 0 ? MAX_LINE_BYTES + 1 : next(4096), 0x20 + next(90));
    }
    line = Buffer.from(line.filter((b) => b !== 0x0a));
    const verdict = line.length > MAX_LINE_BYTES ? { answer: {} } : judge(line);
    if ("answer" in verdict) expected += 1;
    else if ("forward" in verdict && "method" in verdict.forward && "id" in verdict.forward) expected += 1;
    input.write(Buffer.concat([line, Buffer.from(next(4) === 0 ? "\r\n" : "\n")]));
    lines += 1;
    if (lines % 200 === 0) await until(expected);
  }
  assert.equal(await until(expected), expected, `seed ${seed}: ${lines} lines`);
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(answers.length, expected, `seed ${seed}: more answers than lines that are owed one`);
  input.end();
});
