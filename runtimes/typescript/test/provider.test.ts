// YOUR provider (src/provider.ts) against a real HTTP server on 127.0.0.1.
// The tests marked "changes with the mapping" serve the example below:
// the Generic HTTP Search V1 answer the template maps, until your
// service's own answers are recorded in tests/upstream.cassette.json
// (`ecp check . --upstream URL --query WORDS --record
// tests/upstream.cassette.json`); from then on they serve your service's
// answer and follow your mapping. The tests marked "the V1 example" check
// the template's V1 mapping in detail and are skipped, saying why, once
// your API is mapped. The hardening under it (the base URL's rules,
// statuses, the 1 MiB cap, UTF-8, redirects, proxies) is the runtime's and
// has its own tests (test/http.test.ts).

import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";

import renderVectors from "../contracts/v1/render-vectors.json";
import { normalizeQuery, render } from "../src/profile/index.js";
import { SearchProvider } from "../src/provider.js";
import { usableItems } from "../src/runtime/index.js";
import { type Handler, json, never, reason, until, upstream, withEnvSync } from "./loopback.js";

const TOKEN = "upstream-secret-token";

function provider(base: string) {
  return withEnvSync({ T_BASE: base, T_TOKEN: TOKEN }, () => SearchProvider.fromEnv("T_BASE", "T_TOKEN"));
}

const secrets = (base: string) => [TOKEN, base, "secret question", "upstream body"];

/** Where your service's recorded answers are, once recorded. */
const CASSETTE = "tests/upstream.cassette.json";

/** Said when the mapping no longer reads the example these tests serve. */
const RECORD =
  "these tests serve the Generic HTTP Search V1 example until your service's own answers are recorded: after mapping your API in src/provider.ts, run `ecp check . --upstream URL --query WORDS --record tests/upstream.cassette.json`";

/** What the tests that change with the mapping serve, and the request the mapping must send for it. */
interface Example {
  query: string;
  method: string;
  /** The path under the server, without the query string. */
  path: string;
  /** Where the base URL points on the server (`/`, or `/api/`). */
  basePath: string;
  status: number;
  contentType?: string;
  body: string;
  /** The V1 example (no cassette yet). */
  v1: boolean;
}

/** Your service's answer to the first call it answered with a 2xx, once recorded; until then the V1 example. */
function example(): Example {
  if (!existsSync(CASSETTE)) {
    const items = [{ id: "a", content: "A", title: "T" }, { id: "", content: "dropped" }];
    return { query: "secret question", method: "POST", path: "/v1/context/search", basePath: "/", status: 200, contentType: "application/json", body: JSON.stringify({ items }), v1: true };
  }
  const cassette = JSON.parse(readFileSync(CASSETTE, "utf8"));
  const tape = (cassette.exchanges ?? []).find(
    (t: { status: number; input?: string }) => t.status >= 200 && t.status < 300 && t.input === undefined,
  );
  assert.ok(tape, `${CASSETTE} has no call your service answered with a 2xx; record it again`);
  const path = String(tape.target).split("?")[0];
  return { query: tape.query, method: tape.method, path, basePath: cassette.base_path, status: tape.status, contentType: tape.content_type, body: tape.response, v1: false };
}

/** Serves the example's answer, as recorded. */
const answer = (e: Example): Handler => (_request, response) => {
  response.writeHead(e.status, e.contentType === undefined ? {} : { "content-type": e.contentType });
  response.end(e.body);
};

/** Skips the V1 example's detailed tests once your API is mapped. */
const v1Only = { skip: existsSync(CASSETTE) && `the V1 example: ${CASSETTE} drives the tests that change with your mapping` };

test("changes with the mapping: one request for the example's query, and items kept of the answer", async () => {
  const e = example();
  const server = await upstream(answer(e));
  const query = normalizeQuery(e.query);
  assert.ok(query.ok, e.query);
  const items = await provider(`${server.base}${e.basePath}`)
    .search(query.query, 5, never)
    .catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
  assert.equal(server.seen.length, 1, "one request, no retry");
  const [seen] = server.seen;
  assert.equal(`${seen.method} ${seen.url?.split("?")[0]}`, `${e.method} ${e.path}`, RECORD);
  if (items instanceof Error) assert.fail(`the mapping failed on the answer (${items.message}): ${RECORD}`);
  assert.ok(usableItems(items).length > 0, `the mapping kept no item of the answer (${RECORD})`);
  await server.close();
});

test("the V1 example: the request is POST {base}/v1/context/search with the bearer credential and {query, limit}", v1Only, async () => {
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

test("the V1 example: the answer's items map to profile items; what the runtime renders drops those without id or content", v1Only, async () => {
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

test("the V1 example: through the provider and the runtime, every render vector gives its httpText", v1Only, async () => {
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

test("the V1 example: an answer without an items array fails with a plain reason", v1Only, async () => {
  for (const body of [{ results: [] }, "null", { items: "upstream body" }]) {
    const server = await upstream(json(body));
    assert.match(await reason(provider(server.base).search("secret question", 5, never), secrets(server.base)), /no items array/);
    await server.close();
  }
});

test("the upstream's failures fail with a plain reason, after one request", async () => {
  for (const [answer, expected] of [
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
