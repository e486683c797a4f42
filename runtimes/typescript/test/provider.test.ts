// YOUR provider (src/provider.ts) against a real HTTP server on 127.0.0.1.
// As generated it speaks the Generic HTTP Search V1 binding; when you map
// your own API, change these tests with it: the request it sends, how the
// answer maps to items, and what it refuses. The hardening under it (the
// base URL's rules, statuses, the 1 MiB cap, UTF-8, redirects, proxies)
// is the runtime's and has its own tests (test/http.test.ts).

import assert from "node:assert/strict";
import { test } from "node:test";

import renderVectors from "../contracts/v1/render-vectors.json";
import { render } from "../src/profile/index.js";
import { SearchProvider } from "../src/provider.js";
import { usableItems } from "../src/runtime/index.js";
import { json, never, reason, until, upstream, withEnvSync } from "./loopback.js";

const TOKEN = "upstream-secret-token";

function provider(base: string) {
  return withEnvSync({ T_BASE: base, T_TOKEN: TOKEN }, () => SearchProvider.fromEnv("T_BASE", "T_TOKEN"));
}

const secrets = (base: string) => [TOKEN, base, "secret question", "upstream body"];

test("the request is POST {base}/v1/context/search with the bearer credential and {query, limit}", async () => {
  const server = await upstream(json({ items: [{ id: "a", content: "A" }] }));
  await provider(`${server.base}/tenant`).search("secret question", 5, never);
  const [seen] = server.seen;
  assert.equal(seen.method, "POST");
  assert.equal(seen.url, "/tenant/v1/context/search");
  assert.equal(seen.headers.authorization, `Bearer ${TOKEN}`);
  assert.equal(seen.headers.accept, "application/json");
  assert.equal(seen.headers["content-type"], "application/json");
  assert.deepEqual(JSON.parse(seen.body), { query: "secret question", limit: 5 });
  await server.close();
});

test("the answer's items map to profile items; what the runtime renders drops those without id or content", async () => {
  const server = await upstream(
    json({
      items: [
        { id: "a", content: "A", title: "T", uri: "https://u.example/a", score: 0.5, updated_at: "2026", updatedAt: "x" },
        { id: "b", content: "B", updated_at: null, updatedAt: "y", title: 1, uri: null, score: "1" },
        { id: "c", content: "C", updated_at: 5, updatedAt: "z" },
        { id: 7, content: "numeric id" },
        { id: "d", content: "" },
        null,
        "upstream body",
      ],
    }),
  );
  const items = await provider(server.base).search("q", 5, never);
  assert.equal(items.length, 7, "the mapping neither filters nor limits");
  assert.deepEqual(usableItems(items).map((item) => JSON.parse(JSON.stringify(item))), [
    { id: "a", content: "A", title: "T", uri: "https://u.example/a", score: 0.5, updatedAt: "2026" },
    { id: "b", content: "B", updatedAt: "y" },
    { id: "c", content: "C" },
  ]);
  await server.close();
});

test("through the provider and the runtime, every render vector gives its httpText", async () => {
  const server = await upstream((request, response, seen) => {
    const vector = renderVectors.find((v) => v.name === JSON.parse(seen.body).query);
    json({ items: vector?.providerItems })(request, response, seen);
  });
  for (const vector of renderVectors) {
    const items = await provider(server.base).search(vector.name, 5, never);
    const expected = "httpText" in vector ? vector.httpText : vector.text;
    assert.equal(render(usableItems(items)).text, expected, vector.name);
  }
  await server.close();
});

test("an answer without an items array, and the upstream's failures, fail with a plain reason", async () => {
  for (const [answer, expected] of [
    [json({ results: [] }), /no items array/],
    [json("null"), /no items array/],
    [json({ items: "upstream body" }), /no items array/],
    [json("upstream body", 500), /upstream failed \(HTTP 500\)/],
    [json("upstream body {"), /not JSON/],
  ] as const) {
    const server = await upstream(answer);
    assert.match(await reason(provider(server.base).search("secret question", 5, never), secrets(server.base)), expected);
    assert.equal(server.seen.length, 1, "one request, no retry");
    await server.close();
  }
});

test("the runtime's signal aborts the request", async () => {
  const server = await upstream(() => {});
  const controller = new AbortController();
  const search = provider(server.base).search("secret question", 5, controller.signal);
  await until(() => server.seen.length > 0);
  controller.abort();
  assert.match(await reason(search, secrets(server.base)), /aborted/);
  await server.closed;
  await server.close();
});

test("its configuration errors name the variable, never the value", () => {
  const fromEnv = (base: string | undefined, token: string | undefined) =>
    withEnvSync({ T_BASE: base, T_TOKEN: token }, () => SearchProvider.fromEnv("T_BASE", "T_TOKEN"));
  assert.throws(() => fromEnv(undefined, TOKEN), /T_BASE is not set/);
  assert.throws(() => fromEnv("https://context.example.com", "${T_TOKEN}"), /T_TOKEN is not set/);
  assert.throws(() => fromEnv("http://hunter2.example", TOKEN), (e: Error) => /T_BASE is invalid/.test(e.message) && !e.message.includes("hunter2"));
  assert.ok(fromEnv("https://context.example.com/api", TOKEN) instanceof SearchProvider);
});
