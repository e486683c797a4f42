// The runtime's Generic HTTP Search V1 binding (src/runtime/v1.ts) against
// a real HTTP server on 127.0.0.1: the request it sends, the answers it
// accepts and refuses, the budget and cancellation, proxies, the base URL
// (a path is allowed and the binding appends v1/context/search to it), and
// reasons that never carry the query, the endpoint, the credential or the
// body.

import assert from "node:assert/strict";
import { test } from "node:test";

import renderVectors from "../contracts/v1/render-vectors.json";
import { type ProviderItem, render } from "../src/profile/index.js";
import { HttpSearchProvider, itemFromJson, usableItems } from "../src/runtime/index.js";
import { forwardProxy, type Handler, json, never, reason, until, upstream, withEnv, withEnvSync } from "./loopback.js";

const TOKEN = "upstream-secret-token";

function provider(base: string) {
  return withEnvSync({ T_BASE: base, T_TOKEN: TOKEN }, () => HttpSearchProvider.fromEnv("T_BASE", "T_TOKEN"));
}

const secrets = (base: string) => [TOKEN, base, "secret question", "upstream body"];

test("the request is POST {base}/v1/context/search with the bearer credential and {query, limit}", async () => {
  const server = await upstream(json({ items: [{ id: "a", content: "A", updated_at: "2026", updatedAt: "x" }] }));
  const items = await provider(server.base).search("secret question", 5, never);
  assert.deepEqual(items, [{ id: "a", content: "A", updatedAt: "2026" }]);
  const [seen] = server.seen;
  assert.equal(seen.method, "POST");
  assert.equal(seen.url, "/v1/context/search");
  assert.equal(seen.headers.authorization, `Bearer ${TOKEN}`);
  assert.equal(seen.headers.accept, "application/json");
  assert.equal(seen.headers["content-type"], "application/json");
  assert.equal(seen.body, '{"query":"secret question","limit":5}');
  // The profile's rule for the binding: a base URL has no path.
  assert.throws(() => provider(`${server.base}/tenant/a`), /path must be empty or \//);
  await provider(`${server.base}/`).search("q", 5, never);
  assert.deepEqual(server.seen.slice(1).map((s) => s.url), ["/v1/context/search"]);
  await server.close();
});

test("items: invalid ones dropped before the limit, updated_at wins over updatedAt unless null", async () => {
  assert.deepEqual(itemFromJson({ id: "a", content: "A", updated_at: null, updatedAt: "y" }), { id: "a", content: "A", updatedAt: "y" });
  assert.deepEqual(itemFromJson({ id: "a", content: "A", updated_at: 5, updatedAt: "y" }), { id: "a", content: "A" });
  assert.deepEqual(itemFromJson({ id: "a", content: "A", title: 1, uri: null, score: "1" }), { id: "a", content: "A" });
  for (const invalid of [null, 1, "a", [], {}, { id: "", content: "A" }, { id: "a", content: "" }, { id: 1, content: "A" }]) {
    assert.equal(itemFromJson(invalid), undefined, JSON.stringify(invalid));
  }
  const server = await upstream(json({ items: [null, { id: "" }, ...["a", "b", "c", "d", "e", "f"].map((id) => ({ id, content: id }))] }));
  const items = await provider(server.base).search("q", 5, never);
  assert.deepEqual(items.map((item) => item.id), ["a", "b", "c", "d", "e"]);
  await server.close();
});

test("through the binding, every render vector gives its httpText", async () => {
  const server = await upstream((request, response, seen) => {
    const name = JSON.parse(seen.body).query as string;
    const vector = renderVectors.find((v) => v.name === name);
    json({ items: vector?.providerItems })(request, response, seen);
  });
  for (const vector of renderVectors) {
    const items = await provider(server.base).search(vector.name, 5, never);
    // `httpText` where the binding's filter-then-slice differs, else `text`.
    const expected = "httpText" in vector ? vector.httpText : vector.text;
    assert.equal(render(items).text, expected, vector.name);
    // The runtime's own filter changes nothing after the binding's.
    assert.equal(render(usableItems(items)).text, expected, vector.name);
  }
  await server.close();
});

test("redirects, errors, oversized, non-UTF-8 and malformed answers fail with a plain reason", async () => {
  const cases: [string, Handler, RegExp][] = [
    ["redirect", (_, r) => { r.writeHead(302, { location: "http://127.0.0.1:1/x" }); r.end(); }, /redirected \(HTTP 302\)/],
    ["unauthorized", json("upstream body", 401), /upstream failed \(HTTP 401\)/],
    ["rate limited", json("upstream body", 429), /rate limited \(HTTP 429\)/],
    ["declared too large", (_, r) => { r.writeHead(200, { "content-length": String(1024 * 1024 + 1) }); r.end(); }, /larger than 1 MiB/],
    ["streamed too large", (_, r) => { r.writeHead(200); r.write(Buffer.alloc(1024 * 1024, 32)); r.end("{}"); }, /larger than 1 MiB/],
    ["not UTF-8", (_, r) => { r.writeHead(200); r.end(Buffer.from([0x7b, 0xff, 0x7d])); }, /not UTF-8/],
    ["not JSON", json("upstream body {"), /not JSON/],
    ["no items", json({ results: [] }), /no items array/],
    ["items not an array", json({ items: { id: "a", content: "upstream body" } }), /no items array/],
    ["null", json("null"), /no items array/],
  ];
  for (const [name, handler, expected] of cases) {
    const server = await upstream(handler);
    const why = await reason(provider(server.base).search("secret question", 5, never), secrets(server.base));
    assert.match(why, expected, name);
    assert.equal(server.seen.length, 1, `${name}: one request, no retry`);
    await server.close();
  }
  // Exactly 1 MiB (a BOM included, which is stripped) is fine.
  const body = Buffer.alloc(1024 * 1024, 32);
  Buffer.from('\ufeff{"items":[]}').copy(body);
  const server = await upstream((_, r) => { r.writeHead(200); r.end(body); });
  assert.deepEqual(await provider(server.base).search("q", 5, never), []);
  await server.close();
  // Nobody listening.
  const gone = await upstream(json({}));
  await gone.close();
  assert.match(await reason(provider(gone.base).search("q", 5, never), secrets(gone.base)), /transport/);
});

test("an aborted signal closes the upstream request", async () => {
  const server = await upstream(() => {}); // never answers
  const controller = new AbortController();
  const search = provider(server.base).search("secret question", 5, controller.signal);
  await until(() => server.seen.length > 0);
  controller.abort();
  assert.match(await reason(search, secrets(server.base)), /aborted/);
  await server.closed; // the upstream saw the connection close
  await server.close();
});

test("the V1 binding on a loopback http endpoint never goes through HTTP_PROXY", async () => {
  const target = await upstream(json({ items: [{ id: "a", content: "A" }] }));
  const proxy = await forwardProxy();
  const expected: ProviderItem[] = [{ id: "a", content: "A" }];
  try {
    await withEnv({ HTTP_PROXY: proxy.url, NO_PROXY: undefined, no_proxy: undefined }, async () => {
      assert.deepEqual(await provider(target.base).search("q", 5, never), expected);
    });
    assert.deepEqual(proxy.tunnels, [], "the token never reached the proxy");
    assert.equal(target.seen.length, 1);
  } finally {
    await target.close();
    await proxy.close();
  }
});

test("configuration comes from the environment and errors name the variable, never the value", () => {
  const fromEnv = (base: string | undefined, token: string | undefined = TOKEN) =>
    withEnvSync({ T_BASE: base, T_TOKEN: token }, () => HttpSearchProvider.fromEnv("T_BASE", "T_TOKEN"));
  assert.throws(() => fromEnv(undefined), /T_BASE is not set/);
  assert.throws(() => fromEnv("${T_BASE}"), /T_BASE is not set/);
  assert.throws(() => fromEnv("https://context.example.com", ""), /T_TOKEN is not set/);
  assert.throws(() => withEnvSync({ T_BASE: "https://context.example.com", T_TOKEN: undefined }, () => HttpSearchProvider.fromEnv("T_BASE", "T_TOKEN")), /T_TOKEN is not set/);
  for (const [base, rule] of [
    ["http://example.com", /must use https/],
    ["https://user:pw@example.com", /user information/],
    ["https://example.com/?q=1", /query/],
    ["https://example.com/#f", /fragment/],
    ["not a url", /absolute URL/],
  ] as const) {
    assert.throws(() => fromEnv(base), (error: Error) => rule.test(error.message) && !error.message.includes(base));
  }
  assert.throws(() => fromEnv("https://context.example.com/", "two words"), (error: Error) => /visible ASCII/.test(error.message) && !error.message.includes("two words"));
  assert.throws(() => fromEnv("https://context.example.com/api"), (error: Error) => /path must be empty/.test(error.message) && !error.message.includes("/api"));
  for (const base of ["http://localhost:8080", "http://127.0.0.1:1/", "http://[::1]:9"]) {
    assert.ok(fromEnv(base) instanceof HttpSearchProvider, base);
  }
});
