// The runtime's hardened HTTP client (src/runtime/http.ts) against a real
// HTTP server on 127.0.0.1: the base URL's rules, request paths under it,
// the query string, JSON bodies, credentials, statuses, the 1 MiB cap,
// strict UTF-8, JSON, abort and proxies, and reasons that never carry the
// query, the endpoint, the credential or the body.

import assert from "node:assert/strict";
import { test } from "node:test";
import { inspect } from "node:util";

import { type Credential, MAX_BODY_BYTES, Upstream } from "../src/runtime/index.js";
import {
  forwardProxy,
  type Handler,
  json,
  never,
  reason,
  until,
  upstream,
  withEnv,
  withEnvSync,
} from "./loopback.js";

const TOKEN = "upstream-secret-token";

/** An Upstream on `base` with `credential` (its variable holds TOKEN). */
function client(base: string, credential: Credential = { bearer: "T_TOKEN" }): Upstream {
  return withEnvSync({ T_BASE: base, T_TOKEN: TOKEN }, () => Upstream.fromEnv("T_BASE", credential));
}

/** What a reason must never hold. */
const secrets = (base: string) => [TOKEN, base, "secret question", "upstream body"];

test("base URLs: https, or http on loopback; a path is allowed; no user info, query or fragment", () => {
  for (const base of [
    "https://context.example.com",
    "https://context.example.com/",
    "https://context.example.com/api",
    "https://context.example.com/api/v2/",
    " https://context.example.com ",
    "http://localhost:8080",
    "http://LOCALHOST:8080/x",
    "http://127.0.0.1:1/",
    "http://[::1]:9/api",
  ]) {
    assert.ok(client(base) instanceof Upstream, base);
  }
  for (const [base, rule] of [
    ["http://context.example.com", /must use https/],
    ["http://127.0.0.2:1", /must use https/],
    ["ftp://context.example.com", /must use https/],
    ["https://user:hunter2@context.example.com", /user information/],
    ["https://context.example.com/api?key=hunter2", /query/],
    ["https://context.example.com/hunter2?", /query/],
    ["https://context.example.com/api#hunter2", /fragment/],
    ["https://context.example.com/hunter2#", /fragment/],
    ["hunter2.example.com", /absolute URL/],
  ] as const) {
    assert.throws(
      () => client(base),
      (error: Error) =>
        rule.test(error.message) &&
        error.message.startsWith("T_BASE is invalid: ") &&
        !error.message.includes("hunter2") &&
        !error.message.includes(TOKEN),
      base,
    );
  }
});

test("a missing or invalid base URL or credential names its variable and the rule, never the value", () => {
  const fromEnv = (vars: Record<string, string | undefined>, credential: Credential = { bearer: "T_TOKEN" }) =>
    withEnvSync(vars, () => Upstream.fromEnv("T_BASE", credential));
  const base = "https://context.example.com/api";
  for (const unset of [undefined, "", "  ", "${T_BASE}"]) {
    assert.throws(() => fromEnv({ T_BASE: unset, T_TOKEN: TOKEN }), /^Error: T_BASE is not set;/);
  }
  for (const unset of [undefined, "", "${T_TOKEN}"]) {
    assert.throws(() => fromEnv({ T_BASE: base, T_TOKEN: unset }), /^Error: T_TOKEN is not set;/);
    assert.throws(
      () => fromEnv({ T_BASE: base, T_TOKEN: unset }, { header: "x-api-key", variable: "T_TOKEN" }),
      /^Error: T_TOKEN is not set;/,
    );
  }
  for (const invalid of ["two words", "tab\there", "line\nbreak", "caf\u00e9"]) {
    assert.throws(
      () => fromEnv({ T_BASE: base, T_TOKEN: invalid }),
      (error: Error) => /T_TOKEN is invalid: .*visible ASCII/.test(error.message) && !error.message.includes(invalid),
    );
  }
  for (const name of ["bad name", "content-type", "accept", "host", ""]) {
    assert.throws(
      () => fromEnv({ T_BASE: base, T_TOKEN: TOKEN }, { header: name, variable: "T_TOKEN" }),
      (error: Error) => /T_TOKEN is invalid: its header name/.test(error.message) && !error.message.includes(TOKEN),
      name,
    );
  }
  // The credential is said before the base URL's rules; "none" reads no variable.
  assert.throws(() => fromEnv({ T_BASE: "http://example.com", T_TOKEN: undefined }), /T_TOKEN is not set/);
  assert.ok(fromEnv({ T_BASE: base, T_TOKEN: undefined }, "none") instanceof Upstream);
  // Nothing of the credential or the endpoint shows when an Upstream is printed.
  const shown = inspect(client("https://hidden.example/api"), { showHidden: true, depth: 5 });
  assert.ok(!shown.includes(TOKEN) && !shown.includes("hidden.example"), shown);
});

test("a request path joins under the base URL's path, with or without its trailing slash", async () => {
  const server = await upstream(json({ ok: true }));
  for (const [base, path, expected] of [
    [`${server.base}/api`, "db/docs.json", "/api/db/docs.json"],
    [`${server.base}/api/`, "db/docs.json", "/api/db/docs.json"],
    [server.base, "db/docs.json", "/db/docs.json"],
    [`${server.base}/`, "v1/context/search", "/v1/context/search"],
    [`${server.base}/api/v2`, "", "/api/v2/"],
    [`${server.base}/api`, "a b/caf\u00e9", "/api/a%20b/caf%C3%A9"],
    [`${server.base}/api`, "a..b/.c/..d", "/api/a..b/.c/..d"],
  ] as const) {
    assert.deepEqual(await client(base).get(path).send(never), { ok: true }, `${base} + ${path}`);
    assert.equal(server.seen.at(-1)?.url, expected, `${base} + ${path}`);
  }
  await server.close();
});

test("a request path that is absolute or leaves the base is refused, and nothing is sent", async () => {
  const server = await upstream(json({}));
  const api = client(`${server.base}/api/`);
  for (const path of [
    "/etc",
    "/api/db",
    "//other.example/x",
    "../up",
    "a/../../b",
    "a/..",
    "./a",
    ".",
    "%2e%2e/x",
    "a/%2E%2e/%2e./b",
    ".%2E",
    "https://other.example/x",
    "mailto:x",
    "a:b",
    "a?b=1",
    "a#b",
    "a\\..\\..\\b",
    "a\n/../../b",
    "a\t..",
  ]) {
    for (const request of [api.get(path), api.post(path).json({})]) {
      assert.match(await reason(request.send(never), secrets(server.base)), /does not stay under the base URL/, path);
    }
  }
  assert.equal(server.seen.length, 0);
  await server.close();
});

test("GET: the query string is form-encoded, accept is application/json, nothing else is sent", async () => {
  const server = await upstream(json({ data: { rows: [] } }));
  const answer = await client(`${server.base}/api`)
    .get("search")
    .query("q", "a b&c=d \u00e9 \u{1F600} +/?#%")
    .query("size", 5)
    .query("q", "second")
    .send(never);
  assert.deepEqual(answer, { data: { rows: [] } });
  const [seen] = server.seen;
  assert.equal(seen.method, "GET");
  assert.equal(seen.url, "/api/search?q=a+b%26c%3Dd+%C3%A9+%F0%9F%98%80+%2B%2F%3F%23%25&size=5&q=second");
  assert.equal(seen.headers.accept, "application/json");
  assert.equal(seen.headers.authorization, `Bearer ${TOKEN}`);
  assert.equal(seen.headers["content-type"], undefined);
  assert.equal(seen.body, "");
  await server.close();
});

test("POST: a JSON body with content-type application/json", async () => {
  const server = await upstream(json({ items: [] }));
  const body = { query: "secret question \u00e9 \"quoted\" <b>", limit: 5, nested: { list: [1, null, true] } };
  assert.deepEqual(await client(server.base).post("v1/context/search").json(body).send(never), { items: [] });
  const [seen] = server.seen;
  assert.equal(seen.method, "POST");
  assert.equal(seen.url, "/v1/context/search");
  assert.equal(seen.headers["content-type"], "application/json");
  assert.equal(seen.headers.accept, "application/json");
  assert.equal(seen.headers["content-length"], String(Buffer.byteLength(JSON.stringify(body))));
  assert.deepEqual(JSON.parse(seen.body), body);
  // A body JSON cannot write, or a GET with a body, is the mapping's defect: nothing is sent.
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const api = client(server.base);
  assert.match(await reason(api.post("x").json(cyclic).send(never), []), /cannot be written as JSON/);
  assert.match(await reason(api.post("x").json(undefined).send(never), []), /cannot be written as JSON/);
  assert.match(await reason(api.get("x").json({}).send(never), []), /GET request cannot have a body/);
  assert.equal(server.seen.length, 1);
  await server.close();
});

test("credentials: bearer, a header of the provider's choice, or none; extra headers that are not credentials", async () => {
  const server = await upstream(json({}));
  await client(server.base, { bearer: "T_TOKEN" }).get("a").send(never);
  await client(server.base, { header: "X-Api-Key", variable: "T_TOKEN" }).get("b").header("x-trace", "t 1").send(never);
  await client(server.base, { header: "authorization", variable: "T_TOKEN" }).get("c").send(never);
  await client(server.base, "none").get("d").send(never);
  const [bearer, header, raw, none] = server.seen;
  assert.equal(bearer.headers.authorization, `Bearer ${TOKEN}`);
  assert.equal(header.headers["x-api-key"], TOKEN);
  assert.equal(header.headers.authorization, undefined);
  assert.equal(header.headers["x-trace"], "t 1");
  assert.equal(raw.headers.authorization, TOKEN);
  assert.equal(none.headers.authorization, undefined);
  assert.equal(none.headers["x-api-key"], undefined);
  // Credentials come from the environment only; accept, content-type and
  // the framing are the client's; a value HTTP cannot carry is refused.
  const keyed = client(server.base, { header: "x-api-key", variable: "T_TOKEN" });
  for (const [name, value] of [
    ["authorization", "Bearer other"],
    ["Cookie", "a=b"],
    ["x-api-key", "other"],
    ["accept", "text/html"],
    ["content-type", "text/plain"],
    ["host", "other.example"],
    ["content-length", "0"],
    ["bad name", "x"],
    ["x-ok", "line\r\nx-injected: 1"],
    ["x-ok", "caf\u00e9"],
  ]) {
    assert.match(await reason(keyed.get("e").header(name, value).send(never), [TOKEN, value]), /request header/, name);
  }
  assert.equal(server.seen.length, 4);
  await server.close();
});

test("redirects are not followed: exactly one request, and the reason names the status", async () => {
  for (const status of [301, 302, 303, 307, 308]) {
    const server = await upstream((request, response) => {
      if (request.url === "/elsewhere") return json({ followed: true })(request, response, server.seen[0]);
      response.writeHead(status, { location: "/elsewhere" });
      response.end("upstream body");
    });
    const why = await reason(client(server.base).get("here").send(never), secrets(server.base));
    assert.equal(why, `upstream redirected (HTTP ${status})`);
    assert.equal(server.seen.length, 1, `${status}: one request`);
    await server.close();
  }
});

test("statuses: 429 is rate limited, any other non-2xx failed, any 2xx fine; never retried", async () => {
  for (const [status, expected] of [
    [429, "upstream rate limited (HTTP 429)"],
    [500, "upstream failed (HTTP 500)"],
    [503, "upstream failed (HTTP 503)"],
    [401, "upstream failed (HTTP 401)"],
    [404, "upstream failed (HTTP 404)"],
  ] as const) {
    const server = await upstream(json("upstream body", status));
    assert.equal(await reason(client(server.base).post("s").json({ query: "secret question" }).send(never), secrets(server.base)), expected);
    assert.equal(server.seen.length, 1, `${status}: one request, no retry`);
    await server.close();
  }
  const server = await upstream(json({ created: true }, 201));
  assert.deepEqual(await client(server.base).get("s").send(never), { created: true });
  await server.close();
});

test("the body is capped at 1 MiB, declared or streamed; exactly 1 MiB is fine", async () => {
  assert.equal(MAX_BODY_BYTES, 1024 * 1024);
  /** A JSON document of exactly `size` bytes: a string padded with spaces. */
  const document = (size: number) => {
    const body = Buffer.alloc(size, 32);
    body.write('{"a":"upstream body"}');
    return body;
  };
  const cases: [string, Handler, RegExp | object][] = [
    ["declared too large", (_, r) => { r.writeHead(200, { "content-length": String(MAX_BODY_BYTES + 1) }); r.end(); }, /larger than 1 MiB/],
    ["streamed too large", (_, r) => { r.writeHead(200); r.write(document(MAX_BODY_BYTES)); r.end(" "); }, /larger than 1 MiB/],
    ["streamed in small chunks", (_, r) => {
      r.writeHead(200);
      for (let i = 0; i < 1025; i++) r.write(Buffer.alloc(1024, 32));
      r.end();
    }, /larger than 1 MiB/],
    ["exactly 1 MiB, declared", (_, r) => { r.writeHead(200, { "content-length": String(MAX_BODY_BYTES) }); r.end(document(MAX_BODY_BYTES)); }, { a: "upstream body" }],
    ["exactly 1 MiB, streamed", (_, r) => { r.writeHead(200); r.write(document(MAX_BODY_BYTES).subarray(0, 1000)); r.end(document(MAX_BODY_BYTES).subarray(1000)); }, { a: "upstream body" }],
  ];
  for (const [name, handler, expected] of cases) {
    const server = await upstream(handler);
    const request = client(server.base).get("s").send(never);
    if (expected instanceof RegExp) assert.match(await reason(request, [TOKEN, server.base]), expected, name);
    else assert.deepEqual(await request, expected, name);
    await server.close();
  }
});

test("strict UTF-8 with a leading BOM stripped, then JSON.parse", async () => {
  const cases: [string, Buffer, RegExp | unknown][] = [
    ["invalid byte", Buffer.from([0x7b, 0xff, 0x7d]), /not UTF-8/],
    ["overlong encoding", Buffer.from('{"a":"\xc0\xaf"}', "latin1"), /not UTF-8/],
    ["encoded surrogate", Buffer.from('{"a":"\xed\xa0\x80"}', "latin1"), /not UTF-8/],
    ["truncated sequence", Buffer.from('{"a":"\xe2\x82"}', "latin1"), /not UTF-8/],
    ["a BOM is stripped", Buffer.from('\ufeff{"a":"caf\u00e9"}'), { a: "caf\u00e9" }],
    ["only one BOM is stripped", Buffer.from("\ufeff\ufeff{}"), /not JSON/],
    ["malformed JSON", Buffer.from('{"a": "upstream body"'), /not JSON/],
    ["empty body", Buffer.alloc(0), /not JSON/],
    ["a JSON scalar is a document", Buffer.from(" 42 "), 42],
    ["JSON.parse's reading", Buffer.from('{"big":1e400,"s":"\\ud800"}'), { big: Infinity, s: "\ud800" }],
  ];
  for (const [name, body, expected] of cases) {
    const server = await upstream((_, r) => { r.writeHead(200); r.end(body); });
    const request = client(server.base).get("s").send(never);
    if (expected instanceof RegExp) assert.match(await reason(request, secrets(server.base)), expected, name);
    else assert.deepEqual(await request, expected, name);
    await server.close();
  }
});

test("the caller's signal aborts the request and the upstream sees its connection close", async () => {
  // Before any answer.
  let server = await upstream(() => {});
  let controller = new AbortController();
  let request = client(server.base).post("s").json({ query: "secret question" }).send(controller.signal);
  await until(() => server.seen.length > 0);
  controller.abort();
  assert.equal(await reason(request, secrets(server.base)), "the request was aborted");
  await server.closed;
  await server.close();
  // In the middle of the body.
  server = await upstream((_, r) => { r.writeHead(200); r.write('{"a": "upstream body'); });
  controller = new AbortController();
  request = client(server.base).get("s").send(controller.signal);
  await until(() => server.seen.length > 0);
  await new Promise((resolve) => setTimeout(resolve, 50));
  controller.abort();
  assert.equal(await reason(request, secrets(server.base)), "the request was aborted");
  await server.closed;
  await server.close();
  // Already aborted: nothing reaches the upstream.
  server = await upstream(json({}));
  controller = new AbortController();
  controller.abort();
  assert.equal(await reason(client(server.base).get("s").send(controller.signal), []), "the request was aborted");
  assert.equal(server.seen.length, 0);
  await server.close();
});

test("a body that is not read is released: the failed status's endless body closes its connection", async () => {
  const server = await upstream((_, r) => { r.writeHead(500); r.write("upstream body"); });
  assert.equal(await reason(client(server.base).get("s").send(never), secrets(server.base)), "upstream failed (HTTP 500)");
  // At once, not when the response is collected (seconds later).
  const late = new Promise<string>((resolve) => setTimeout(() => resolve("still open"), 1000).unref());
  assert.equal(await Promise.race([server.closed.then(() => "closed"), late]), "closed");
  await server.close();
});

test("a failed connection is a transport failure", async () => {
  const gone = await upstream(json({}));
  await gone.close();
  assert.equal(await reason(client(gone.base).get("s").send(never), secrets(gone.base)), "the request failed in transport");
});

test("a plain http endpoint on loopback never goes through HTTP_PROXY, whatever NO_PROXY says", async () => {
  const target = await upstream(json({ ok: 1 }));
  const proxy = await forwardProxy();
  try {
    for (const env of [
      { HTTP_PROXY: proxy.url, NO_PROXY: undefined, no_proxy: undefined },
      { http_proxy: proxy.url, HTTPS_PROXY: proxy.url, NO_PROXY: "other.example" },
    ]) {
      await withEnv(env, async () => {
        const api = client(`${target.base}/api`);
        assert.deepEqual(await api.get("s").query("q", "x").send(never), { ok: 1 });
      });
    }
    assert.deepEqual(proxy.tunnels, [], "the credential never reached the proxy");
    assert.equal(target.seen.length, 2);
    assert.equal(target.seen[0].url, "/api/s?q=x");
  } finally {
    await target.close();
    await proxy.close();
  }
});
