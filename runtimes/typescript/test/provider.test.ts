// The Generic HTTP Search V1 binding against a real HTTP server on
// 127.0.0.1: the request it sends, the answers it accepts and refuses, the
// budget and cancellation, proxies, and reasons that never carry the
// query, the endpoint, the credential or the body.

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { test } from "node:test";

import renderVectors from "../contracts/v1/render-vectors.json";
import { render } from "../src/profile/index.js";
import { configFromEnv, HttpSearchProvider, searchEndpoint } from "../src/provider.js";
import { ProviderError } from "../src/runtime/index.js";

const TOKEN = "upstream-secret-token";

interface Seen {
  method?: string;
  url?: string;
  headers: IncomingMessage["headers"];
  body: string;
}

type Handler = (request: IncomingMessage, response: ServerResponse, seen: Seen) => void;

/** A loopback HTTP server; `closed` resolves when a request's connection closes before it was answered. */
async function upstream(handler: Handler) {
  const seen: Seen[] = [];
  let closedEarly!: () => void;
  const closed = new Promise<void>((resolve) => (closedEarly = resolve));
  const server = createServer((request, response) => {
    const record: Seen = { method: request.method, url: request.url, headers: request.headers, body: "" };
    seen.push(record);
    request.on("data", (chunk) => (record.body += chunk));
    request.on("end", () => handler(request, response, record));
    response.on("close", () => {
      if (!response.writableFinished) closedEarly();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    seen,
    closed,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const json = (body: unknown, status = 200): Handler => (_, response) => {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(typeof body === "string" ? body : JSON.stringify(body));
};

function provider(base: string) {
  return new HttpSearchProvider({ endpoint: new URL("v1/context/search", base), token: TOKEN });
}

/** The reason of a failed search, checked for leaks. */
async function reason(search: Promise<unknown>, base: string): Promise<string> {
  try {
    await search;
  } catch (error) {
    assert.ok(error instanceof ProviderError, String(error));
    for (const secret of [TOKEN, base, "secret question", "upstream body"]) {
      assert.ok(!error.reason.includes(secret), `${error.reason} holds ${secret}`);
    }
    return error.reason;
  }
  assert.fail("the search succeeded");
}

const never = new AbortController().signal;

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
  assert.deepEqual(JSON.parse(seen.body), { query: "secret question", limit: 5 });
  await server.close();
});

test("through the binding, every render vector gives its httpText", async () => {
  for (const vector of renderVectors) {
    const server = await upstream(json({ items: vector.providerItems }));
    const items = await provider(server.base).search("q", 5, never);
    // `httpText` where the binding's filter-then-slice differs, else `text`.
    const expected = "httpText" in vector ? vector.httpText : vector.text;
    assert.equal(render(items).text, expected, vector.name);
    await server.close();
  }
});

test("redirects, errors, oversized, non-UTF-8 and malformed answers fail with a plain reason", async () => {
  const cases: [string, Handler, RegExp][] = [
    ["redirect", (_, r) => { r.writeHead(302, { location: "http://127.0.0.1:1/x" }); r.end(); }, /redirected \(HTTP 302\)/],
    ["unauthorized", json("upstream body", 401), /upstream failed \(HTTP 401\)/],
    ["rate limited", json("upstream body", 429), /HTTP 429/],
    ["declared too large", (_, r) => { r.writeHead(200, { "content-length": String(1024 * 1024 + 1) }); r.end(); }, /larger than 1 MiB/],
    ["streamed too large", (_, r) => { r.writeHead(200); r.write(Buffer.alloc(1024 * 1024, 32)); r.end("{}"); }, /larger than 1 MiB/],
    ["not UTF-8", (_, r) => { r.writeHead(200); r.end(Buffer.from([0x7b, 0xff, 0x7d])); }, /not UTF-8/],
    ["not JSON", json("upstream body {"), /not JSON/],
    ["no items", json({ results: [] }), /no items array/],
  ];
  for (const [name, handler, expected] of cases) {
    const server = await upstream(handler);
    const why = await reason(provider(server.base).search("secret question", 5, never), server.base);
    assert.match(why, expected, name);
    assert.equal(server.seen.length, 1, `${name}: one request, no retry`);
    await server.close();
  }
  // Exactly 1 MiB (a BOM included, which is stripped) is fine.
  const body = Buffer.alloc(1024 * 1024, 32);
  const document = Buffer.from('\ufeff{"items":[]}');
  document.copy(body);
  const server = await upstream((_, r) => { r.writeHead(200); r.end(body); });
  assert.deepEqual(await provider(server.base).search("q", 5, never), []);
  await server.close();
  // Nobody listening.
  const gone = await upstream(json({}));
  await gone.close();
  assert.match(await reason(provider(gone.base).search("q", 5, never), gone.base), /transport/);
});

test("an aborted signal closes the upstream request", async () => {
  const server = await upstream(() => {}); // never answers
  const controller = new AbortController();
  const search = provider(server.base).search("q", 5, controller.signal);
  while (server.seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  controller.abort();
  assert.match(await reason(search, server.base), /aborted/);
  await server.closed; // the upstream saw the connection close
  await server.close();
});

/** A forward proxy on 127.0.0.1 that tunnels CONNECT, as undici's ProxyAgent asks. */
async function forwardProxy() {
  const tunnels: string[] = [];
  const server = createServer((_, response) => {
    response.writeHead(405);
    response.end();
  });
  server.on("connect", (request: IncomingMessage, client: Socket, head: Buffer) => {
    tunnels.push(request.url ?? "");
    const [host, port] = (request.url ?? "").split(":");
    const upstreamSocket = connect(Number(port), host, () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      upstreamSocket.write(head);
      upstreamSocket.pipe(client);
      client.pipe(upstreamSocket);
    });
    const drop = () => {
      client.destroy();
      upstreamSocket.destroy();
    };
    upstreamSocket.on("error", drop);
    client.on("error", drop);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    tunnels,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

test("HTTP_PROXY is honoured and NO_PROXY bypasses it", async () => {
  const target = await upstream(json({ items: [{ id: "a", content: "A" }] }));
  const proxy = await forwardProxy();
  const saved = { ...process.env };
  try {
    process.env.HTTP_PROXY = proxy.url;
    delete process.env.NO_PROXY;
    delete process.env.no_proxy;
    assert.deepEqual(await provider(target.base).search("q", 5, never), [{ id: "a", content: "A" }]);
    const authority = target.base.replace("http://", "");
    assert.deepEqual(proxy.tunnels, [authority], "the request went through the proxy");
    process.env.NO_PROXY = "127.0.0.1";
    assert.deepEqual(await provider(target.base).search("q", 5, never), [{ id: "a", content: "A" }]);
    assert.equal(proxy.tunnels.length, 1, "NO_PROXY names the host: no tunnel");
    assert.equal(target.seen.length, 2);
  } finally {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
    await target.close();
    await proxy.close();
  }
});

test("configuration comes from the environment and errors name the variable, never the value", () => {
  const saved = { ...process.env };
  try {
    delete process.env.T_BASE;
    process.env.T_TOKEN = TOKEN;
    assert.throws(() => configFromEnv("T_BASE", "T_TOKEN"), /T_BASE is not set/);
    process.env.T_BASE = "${T_BASE}";
    assert.throws(() => configFromEnv("T_BASE", "T_TOKEN"), /T_BASE is not set/);
    for (const [base, rule] of [
      ["http://example.com", /must use https/],
      ["https://user:pw@example.com", /user information/],
      ["https://example.com/?q=1", /query/],
      ["https://example.com/#f", /fragment/],
      ["https://example.com/api", /path must be/],
      ["not a url", /absolute URL/],
    ] as const) {
      process.env.T_BASE = base;
      assert.throws(() => configFromEnv("T_BASE", "T_TOKEN"), (error: Error) => rule.test(error.message) && !error.message.includes(base));
    }
    process.env.T_BASE = "https://context.example.com/";
    process.env.T_TOKEN = "two words";
    assert.throws(() => configFromEnv("T_BASE", "T_TOKEN"), (error: Error) => /visible ASCII/.test(error.message) && !error.message.includes("two words"));
    process.env.T_TOKEN = TOKEN;
    assert.equal(configFromEnv("T_BASE", "T_TOKEN").endpoint.href, "https://context.example.com/v1/context/search");
    for (const loopback of ["http://localhost:8080", "http://127.0.0.1:1/", "http://[::1]:9"]) {
      assert.ok("url" in searchEndpoint(loopback), loopback);
    }
  } finally {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  }
});
