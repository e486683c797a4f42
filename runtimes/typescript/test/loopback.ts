// What the provider tests share: a real HTTP server on 127.0.0.1 that
// records what it is sent, a forward proxy that tunnels CONNECT, the
// environment set for one test, and the reason of a failed request
// checked for leaks. Every server is closed after its test, passed or
// failed, so a failing assertion never holds `npm test` open.

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { afterEach } from "node:test";

import { ProviderError } from "../src/runtime/index.js";

export interface Seen {
  method?: string;
  url?: string;
  headers: IncomingMessage["headers"];
  body: string;
}

export type Handler = (request: IncomingMessage, response: ServerResponse, seen: Seen) => void;

/**
 * Every server a test opened and has not closed: closed after each test,
 * whether it passed or failed, so that a failing assertion (which skips
 * the test's own `close()`) never leaves a server holding `npm test` open.
 */
const open = new Set<() => Promise<void>>();
afterEach(async () => {
  const closing = [...open];
  open.clear();
  await Promise.all(closing.map((close) => close()));
});

/** `server` closed once, by the test or after it. */
function closer(server: Server): () => Promise<void> {
  let done: Promise<void> | undefined;
  const close = () => {
    open.delete(close);
    done ??= new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
    return done;
  };
  open.add(close);
  return close;
}

/** A loopback HTTP server; `closed` resolves when a request's connection closes before it was answered. */
export async function upstream(handler: Handler) {
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
    close: closer(server),
  };
}

/** Answers `body` (JSON-serialized unless it is a string) with `status`. */
export const json = (body: unknown, status = 200): Handler => (_, response) => {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(typeof body === "string" ? body : JSON.stringify(body));
};

/** A forward proxy on 127.0.0.1 that tunnels CONNECT; `tunnels` and `authorizations` are what each CONNECT asked with. */
export async function forwardProxy() {
  const tunnels: string[] = [];
  const authorizations: string[] = [];
  const server = createServer((_, response) => {
    response.writeHead(405);
    response.end();
  });
  server.on("connect", (request: IncomingMessage, client: Socket, head: Buffer) => {
    tunnels.push(request.url ?? "");
    authorizations.push(request.headers["proxy-authorization"] ?? "");
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
    // Either end gone, the tunnel goes (the server's half-open sockets
    // would otherwise hold its close, which does not track tunnels).
    for (const socket of [upstreamSocket, client]) {
      socket.on("error", drop);
      socket.on("close", drop);
      socket.on("end", drop);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    tunnels,
    authorizations,
    close: closer(server),
  };
}

/** Runs `body` with `vars` set (`undefined` deletes one), then puts the environment back as it was. */
export async function withEnv<T>(vars: Record<string, string | undefined>, body: () => T | Promise<T>): Promise<T> {
  const saved = { ...process.env };
  try {
    for (const [name, value] of Object.entries(vars)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    return await body();
  } finally {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  }
}

/** The same, for a synchronous body. */
export function withEnvSync<T>(vars: Record<string, string | undefined>, body: () => T): T {
  const saved = { ...process.env };
  try {
    for (const [name, value] of Object.entries(vars)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    return body();
  } finally {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  }
}

/** The reason of a failed request, checked to hold none of `secrets`. */
export async function reason(request: Promise<unknown>, secrets: readonly string[]): Promise<string> {
  try {
    await request;
  } catch (error) {
    assert.ok(error instanceof ProviderError, String(error));
    for (const secret of secrets) {
      assert.ok(!error.reason.includes(secret), `${error.reason} holds ${secret}`);
      assert.ok(!error.message.includes(secret), `${error.message} holds ${secret}`);
    }
    return error.reason;
  }
  assert.fail("the request succeeded");
}

/** A signal that never aborts. */
export const never = new AbortController().signal;

/** Waits until `condition` holds (polling every 5 ms). */
export async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}
