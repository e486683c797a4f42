// The MCP runtime through the SDK's own client (in memory): the one tool
// with the canonical schemas, the profile's input messages, the rendered
// envelope, the budget (a provider that never answers still gets the stable
// error in time), redaction, and cancellation reaching the provider.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";

import renderVectors from "../contracts/v1/render-vectors.json";
import { type ProviderItem, render, SEARCH_FAILED, TOOL } from "../src/profile/index.js";
import { contextSearchServer, type Provider, ProviderError, usableItems } from "../src/runtime/index.js";

async function connect(provider: Provider, budgetMs = 5000) {
  const server = contextSearchServer(provider, { name: "acme-context", version: "0.1.0", budgetMs });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "test", version: "0" });
  await client.connect(clientSide);
  return { client, close: () => client.close() };
}

/** stderr lines written while `body` runs. */
async function capturingStderr<T>(body: () => Promise<T>): Promise<[T, string]> {
  const write = process.stderr.write.bind(process.stderr);
  let said = "";
  process.stderr.write = ((chunk: string | Uint8Array) => {
    said += chunk.toString();
    return true;
  }) as typeof process.stderr.write;
  try {
    return [await body(), said];
  } finally {
    process.stderr.write = write;
  }
}

const items: ProviderItem[] = [{ id: "policy-1", content: "Use the reviewed <deploy> workflow.", score: 1 }];

test("tools/list offers exactly context_search with the canonical schemas", async () => {
  const { client, close } = await connect({ search: async () => items });
  const { tools } = await client.listTools();
  assert.equal(tools.length, 1);
  assert.deepEqual(tools[0].inputSchema, TOOL.inputSchema);
  assert.deepEqual(tools[0].outputSchema, TOOL.outputSchema);
  assert.deepEqual(tools[0].annotations, { destructiveHint: false });
  await close();
});

test("a call renders the envelope as text and structuredContent; the provider sees the normalized query", async () => {
  const seen: [string, number][] = [];
  const { client, close } = await connect({
    search: async (query, limit) => {
      seen.push([query, limit]);
      return items;
    },
  });
  const result = await client.callTool({ name: "context_search", arguments: { query: "  deployment \n policy " } });
  assert.deepEqual(seen, [["deployment policy", 5]]);
  assert.equal(result.isError, undefined);
  const [block] = result.content as { type: string; text: string }[];
  assert.ok(block.text.includes("\\u003cdeploy\\u003e"), block.text);
  assert.deepEqual(result.structuredContent, JSON.parse(block.text));
  await close();
});

test("items without a string id or content are dropped before the first five are rendered", async () => {
  const valid = ["a", "b", "c", "d", "e", "f"].map((id) => ({ id, content: `content ${id}` }));
  const invalid = [
    { id: "", content: "no id" },
    { id: "x", content: "" },
    { id: 7, content: "numeric id" },
    { id: "y" },
    { content: "no id at all" },
  ] as unknown as ProviderItem[];
  const { client, close } = await connect({ search: async () => [...invalid, valid[0], ...invalid, ...valid.slice(1)] });
  const result = await client.callTool({ name: "context_search", arguments: { query: "q" } });
  const rendered = (result.structuredContent as { untrusted_external_context: { items: ProviderItem[] } })
    .untrusted_external_context.items;
  assert.deepEqual(rendered, valid.slice(0, 5));
  // The render vectors' httpText (the V1 binding's filter-then-slice) is what
  // the runtime renders from a provider that does not filter.
  for (const vector of renderVectors) {
    const expected = "httpText" in vector ? vector.httpText : vector.text;
    assert.equal(render(usableItems(vector.providerItems as ProviderItem[])).text, expected, vector.name);
  }
  await close();
});

test("refused arguments get the profile's messages and never reach the provider", async () => {
  let calls = 0;
  const { client, close } = await connect({
    search: async () => {
      calls += 1;
      return items;
    },
  });
  for (const [args, message] of [
    [{}, "Search query is required."],
    [{ query: "x", corpus: "all" }, "Only the query argument is accepted; remove any other argument."],
    [{ query: "   " }, "Search query must not be empty."],
    [{ query: 7 }, "Search query must be a string."],
  ] as const) {
    const result = await client.callTool({ name: "context_search", arguments: args });
    assert.equal(result.isError, true);
    assert.deepEqual(result.content, [{ type: "text", text: message }]);
  }
  assert.equal(calls, 0);
  await close();
});

test("a provider past the budget gets the stable error in time, and failures are redacted", async () => {
  const { client, close } = await connect({ search: () => new Promise(() => {}) }, 100);
  const started = Date.now();
  const [result, said] = await capturingStderr(() =>
    client.callTool({ name: "context_search", arguments: { query: "secret question" } }),
  );
  assert.ok(Date.now() - started < 2000, `${Date.now() - started} ms`);
  assert.deepEqual(result.content, [{ type: "text", text: SEARCH_FAILED }]);
  assert.equal(result.structuredContent, undefined);
  assert.match(said, /acme-context: context_search failed: provider budget exceeded/);
  assert.ok(!said.includes("secret question"));
  await close();

  const failing = await connect({
    search: async () => {
      throw new ProviderError("upstream failed (HTTP 401)");
    },
  });
  const [failed, log] = await capturingStderr(() =>
    failing.client.callTool({ name: "context_search", arguments: { query: "secret question" } }),
  );
  assert.deepEqual(failed.content, [{ type: "text", text: SEARCH_FAILED }]);
  assert.match(log, /context_search failed: upstream failed \(HTTP 401\)/);
  // Anything else thrown is not echoed at all.
  const crashing = await connect({
    search: async () => {
      throw new Error("token=abc at https://secret.example");
    },
  });
  const [crashed, crashLog] = await capturingStderr(() =>
    crashing.client.callTool({ name: "context_search", arguments: { query: "q" } }),
  );
  assert.deepEqual(crashed.content, [{ type: "text", text: SEARCH_FAILED }]);
  assert.ok(!crashLog.includes("secret") && !crashLog.includes("abc"), crashLog);
  // Thrown before any promise exists, or items that are not objects: the
  // same stable error, nothing echoed.
  const throwing = await connect({
    search: () => {
      throw new Error("token=abc");
    },
  });
  const broken = await connect({ search: async () => [null as unknown as ProviderItem] });
  for (const { client } of [throwing, broken]) {
    const [result, log] = await capturingStderr(() => client.callTool({ name: "context_search", arguments: { query: "q" } }));
    assert.deepEqual(result.content, [{ type: "text", text: SEARCH_FAILED }]);
    assert.ok(!log.includes("abc"), log);
  }
  await failing.close();
  await crashing.close();
  await throwing.close();
  await broken.close();
});

test("a cancelled call aborts the provider's signal", async () => {
  let aborted!: () => void;
  const reached = new Promise<void>((resolve) => (aborted = resolve));
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const { client, close } = await connect({
    search: (_query, _limit, signal) =>
      new Promise((_, reject) => {
        started();
        signal.addEventListener("abort", () => {
          aborted();
          reject(new ProviderError("the request was aborted"));
        });
      }),
  });
  const controller = new AbortController();
  const call = client.callTool({ name: "context_search", arguments: { query: "q" } }, undefined, {
    signal: controller.signal,
  });
  await running;
  const [, said] = await capturingStderr(async () => {
    controller.abort();
    await assert.rejects(call);
    await reached;
  });
  assert.match(said, /cancelled by the client/);
  await close();
});
