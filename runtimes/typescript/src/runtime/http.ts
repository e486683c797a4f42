// The hardened HTTP client every provider mapping builds on: the provider
// says which request to send and how the answer maps to items; this module
// keeps the profile's rules around it (the mirror of the Rust runtime's
// `ecp_runtime::http`). Part of ecp's TypeScript runtime; `ecp new` copies
// it verbatim. Edit src/provider.ts instead.
//
// - The base URL comes from the environment: `https`, or `http` only for
//   `localhost`, `127.0.0.1` and `[::1]`; no user info, no query, no
//   fragment. A path is allowed (`https://api.example.com/search/v2`, with
//   or without a trailing slash): a request path is joined under it, as
//   under a folder, and may not leave it. A request path is RELATIVE: a
//   leading `/` is refused (as are an absolute URL, any `:`, `?`, `#` or
//   `\`, control characters, and `.` or `..` segments, percent-encoded or
//   not); the query string goes through `query()`.
// - The credential comes from the environment too, sent as a bearer
//   `authorization` or under another header name; it is never part of an
//   error.
// - `accept: application/json` always; no redirect is followed (a 3xx is a
//   failure), nothing is retried, `HTTP_PROXY`/`HTTPS_PROXY`/`NO_PROXY` are
//   honoured as the Rust runtime and the reference honour them (./proxy.ts;
//   an `https` endpoint through a `CONNECT` tunnel).
// - Node's own `node:http` and `node:https`, with their keep-alive agents:
//   no HTTP library is loaded (undici alone took 17 MiB of a process that
//   bare Node starts at 40). No `accept-encoding` is sent, as the Rust
//   runtime sends none, so the answer comes as it is.
// - The body is read up to MAX_BODY_BYTES (a larger declared length or a
//   longer body is a failure; exactly the cap is fine), must be strict
//   UTF-8 (a leading BOM is stripped) and is parsed by JSON.parse.
// - Statuses: 3xx redirected, 429 rate limited, any other non-2xx failed.
// - The caller's AbortSignal (the runtime's budget and the client's
//   cancellation) aborts the request and closes its connection; a body that
//   is not read is released.
//
// Every failure is a ProviderError whose reason names a category (and a
// status at most): never the query, the endpoint, the credential or a byte
// of the body.

import { type ClientRequest, type IncomingMessage, request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import { isIP, type Socket } from "node:net";

import { ProviderError } from "./error.js";
import { bareHost, portOf, proxyEnv, proxyFor } from "./proxy.js";

/** Strict UTF-8, a leading BOM stripped; one for every response (each would hold a native converter until collected). */
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** Largest accepted response body (exactly this many bytes is fine). */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * How the upstream wants its credential. `bearer` and `variable` are the
 * NAMES of the environment variables holding it, never the value:
 * `{ bearer: "ACME_CONTEXT_TOKEN" }` sends `authorization: Bearer <value>`,
 * `{ header: "x-api-key", variable: "ACME_CONTEXT_TOKEN" }` sends
 * `x-api-key: <value>`, `"none"` sends nothing.
 */
export type Credential = { bearer: string } | { header: string; variable: string } | "none";

/** An unresolved manifest variable stays literal in Qwen (`${NAME}`), so it counts as missing, like an empty value. */
export function isUnset(value: string | undefined): value is undefined {
  const trimmed = value?.trim() ?? "";
  return trimmed === "" || (trimmed.startsWith("${") && trimmed.endsWith("}"));
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** A base URL under the rules, its path ending in `/` so that request paths join under it; or the rule it breaks. */
export function baseUrl(text: string): { url: URL } | { rule: string } {
  const raw = text.trim();
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { rule: "it is not an absolute URL" };
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && LOOPBACK.has(url.hostname.toLowerCase()))) {
    return { rule: "it must use https (http only for localhost, 127.0.0.1 or [::1])" };
  }
  if (url.username !== "" || url.password !== "") {
    return { rule: "it must not hold user information; the credential has its own variable" };
  }
  if (url.search !== "" || raw.includes("?")) return { rule: "it must not have a query" };
  if (url.hash !== "" || raw.includes("#")) return { rule: "it must not have a fragment" };
  if (!url.pathname.endsWith("/")) url.pathname = `${url.pathname}/`;
  return { url };
}

/** A dot segment, as the URL parser reads one (`%2e` is a dot too). */
const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;

/** `path` joined under `base`, or `undefined` when it is not a relative path that stays under it. */
export function joinUnder(base: URL, path: string): URL | undefined {
  if (path.startsWith("/") || /[:?#\\\x00-\x1f\x7f]/.test(path)) return undefined;
  if (path.split("/").some((segment) => DOT_SEGMENT.test(segment))) return undefined;
  let url: URL;
  try {
    url = new URL(path, base);
  } catch {
    return undefined;
  }
  // Whatever the parser made of it, it stays under the base.
  if (url.origin !== base.origin || !url.pathname.startsWith(base.pathname) || url.search !== "" || url.hash !== "") {
    return undefined;
  }
  return url;
}

/** An HTTP header name (RFC 9110 token). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Headers the client sets itself: `accept`, `content-type` and the framing. */
const CLIENT_HEADERS = new Set(["accept", "connection", "content-length", "content-type", "host", "transfer-encoding"]);
/** Headers that carry credentials: only `Credential` (from the environment) sets those. */
const CREDENTIAL_HEADERS = new Set(["authorization", "cookie", "proxy-authorization"]);

/** The credentials this process's upstreams were configured with: an Auto Recall query never carries one. */
const CONFIGURED_CREDENTIALS: string[] = [];

/** Every credential an `Upstream` of this process was configured with. */
export function configuredCredentials(): readonly string[] {
  return CONFIGURED_CREDENTIALS;
}

/** A search service: its base URL, its credential, and the way out (direct or through the environment's proxy). */
export class Upstream {
  readonly #base: URL;
  readonly #credential: [string, string] | undefined;
  /** The proxy every request goes through, read once from the environment (./proxy.ts), or none. */
  readonly #proxy: URL | undefined;

  private constructor(base: URL, credential: [string, string] | undefined) {
    this.#base = base;
    this.#credential = credential;
    // Every request is under the base, so one decision serves them all. A
    // plain http endpoint is on loopback (the one place http is allowed):
    // never proxied.
    this.#proxy = base.protocol === "https:" ? proxyFor(proxyEnv(), base) : undefined;
  }

  /**
   * Reads the base URL from the variable `baseUrlVar` and the credential
   * from the variable `credential` names. Throws an Error naming the
   * variable and the rule it breaks, never the value.
   */
  static fromEnv(baseUrlVar: string, credential: Credential): Upstream {
    const missing = (name: string) =>
      new Error(`${name} is not set; export it before starting (an empty value or a literal \${${name}} counts as unset)`);
    const base = process.env[baseUrlVar];
    if (isUnset(base)) throw missing(baseUrlVar);
    // The credential is said before the base URL's rules, as in Rust.
    let header: [string, string] | undefined;
    if (credential !== "none") {
      const variable = "bearer" in credential ? credential.bearer : credential.variable;
      const name = "bearer" in credential ? "authorization" : credential.header.toLowerCase();
      if (!TOKEN.test(name) || CLIENT_HEADERS.has(name)) {
        throw new Error(`${variable} is invalid: its header name must be an HTTP token and not one the client sets itself`);
      }
      const secret = process.env[variable];
      if (isUnset(secret)) throw missing(variable);
      if (!/^[\x21-\x7e]+$/.test(secret.trim())) {
        throw new Error(`${variable} is invalid: a credential must be visible ASCII without spaces or line breaks`);
      }
      header = [name, "bearer" in credential ? `Bearer ${secret.trim()}` : secret.trim()];
      if (!CONFIGURED_CREDENTIALS.includes(secret.trim())) CONFIGURED_CREDENTIALS.push(secret.trim());
    }
    const url = baseUrl(base);
    if ("rule" in url) throw new Error(`${baseUrlVar} is invalid: ${url.rule}`);
    return new Upstream(url.url, header);
  }

  /** A GET of `path`, relative to the base URL's path (no leading `/`). */
  get(path: string): UpstreamRequest {
    return new UpstreamRequest("GET", joinUnder(this.#base, path), this.#credential, this.#proxy);
  }

  /** A POST to `path`, relative to the base URL's path (no leading `/`). */
  post(path: string): UpstreamRequest {
    return new UpstreamRequest("POST", joinUnder(this.#base, path), this.#credential, this.#proxy);
  }
}

/**
 * One request being built; nothing is sent before `send`. A path that
 * leaves the base URL, a header HTTP cannot carry or a body that is not
 * JSON makes `send` fail with a ProviderError (a defect of the mapping).
 */
export class UpstreamRequest {
  readonly #headers: Record<string, string> = { accept: "application/json" };
  readonly #credentialHeader: string | undefined;
  #body: string | undefined;
  #defect: string | undefined;

  /** @internal Made by `Upstream.get` and `Upstream.post`. */
  constructor(
    private readonly method: "GET" | "POST",
    private readonly url: URL | undefined,
    credential: [string, string] | undefined,
    private readonly proxy: URL | undefined,
  ) {
    if (url === undefined) this.#defect = "the request path does not stay under the base URL";
    if (credential) this.#headers[credential[0]] = credential[1];
    this.#credentialHeader = credential?.[0];
  }

  /** Appends `name=value` to the query string, form-encoded (a space is `+`, `&` is `%26`). */
  query(name: string, value: string | number): this {
    this.url?.searchParams.append(name, String(value));
    return this;
  }

  /** A JSON body, and `content-type: application/json`. */
  json(body: unknown): this {
    let text: string | undefined;
    try {
      text = JSON.stringify(body);
    } catch {
      text = undefined;
    }
    if (typeof text !== "string") this.#defect ??= "the request body cannot be written as JSON";
    this.#body = text;
    this.#headers["content-type"] = "application/json";
    return this;
  }

  /**
   * Another header (set again, it replaces the earlier value). Not a
   * credential (`authorization`, `cookie`, the credential's own header:
   * those come from the environment through `Credential`), nor `accept`,
   * `content-type` or a framing header (the client's own).
   */
  header(name: string, value: string): this {
    const lower = name.toLowerCase();
    if (!TOKEN.test(name) || CLIENT_HEADERS.has(lower) || CREDENTIAL_HEADERS.has(lower) || lower === this.#credentialHeader) {
      this.#defect ??= "a request header name is invalid or the client's own";
    } else if (!/^[\t\x20-\x7e]*$/.test(value)) {
      this.#defect ??= "a request header value is not visible ASCII";
    } else {
      this.#headers[lower] = value;
    }
    return this;
  }

  /**
   * Sends the request (once, never retried) and returns the parsed JSON
   * document. `signal` is the runtime's: when it aborts (budget or
   * cancellation) the request is aborted and its connection closed.
   */
  async send(signal: AbortSignal): Promise<unknown> {
    if (this.#defect !== undefined || this.url === undefined) {
      throw new ProviderError(this.#defect ?? "the request path does not stay under the base URL");
    }
    if (this.method === "GET" && this.#body !== undefined) throw new ProviderError("a GET request cannot have a body");
    if (signal.aborted) throw new ProviderError("the request was aborted");
    const headers: Record<string, string> = { ...this.#headers };
    const body = this.#body === undefined ? undefined : Buffer.from(this.#body, "utf8");
    if (body !== undefined) headers["content-length"] = String(body.length);
    let response: IncomingMessage;
    try {
      response = await exchange(this.method, this.url, headers, body, this.proxy, signal);
    } catch {
      throw new ProviderError(signal.aborted ? "the request was aborted" : "the request failed in transport");
    }
    try {
      const status = response.statusCode ?? 0;
      if (status >= 300 && status < 400) throw new ProviderError(`upstream redirected (HTTP ${status})`);
      if (status === 429) throw new ProviderError("upstream rate limited (HTTP 429)");
      if (status < 200 || status > 299) throw new ProviderError(`upstream failed (HTTP ${status})`);
      let bytes: Uint8Array;
      try {
        bytes = await readBody(response, signal);
      } catch (error) {
        if (error instanceof ProviderError) throw error;
        throw new ProviderError(signal.aborted ? "the request was aborted" : "the response body could not be read");
      }
      let text: string;
      try {
        // Strict UTF-8; a leading BOM is stripped (TextDecoder's default).
        text = UTF8.decode(bytes);
      } catch {
        throw new ProviderError("the response is not UTF-8");
      }
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new ProviderError("the response is not JSON");
      }
    } finally {
      // Whatever was not read closes its connection, rather than wait in a pool.
      if (!response.complete) response.destroy();
    }
  }
}

/**
 * Sends one request and resolves with the response (its head read, its
 * body not yet); through `proxy` when there is one. `signal` destroys the
 * request, and its connection, whenever it aborts until the body is read.
 */
function exchange(
  method: string,
  url: URL,
  headers: Record<string, string>,
  body: Buffer | undefined,
  proxy: URL | undefined,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    let request: ClientRequest | undefined;
    let tunnel: Socket | undefined;
    const abort = () => {
      request?.destroy();
      tunnel?.destroy();
      reject(new Error("aborted"));
    };
    signal.addEventListener("abort", abort, { once: true });
    const send = (createConnection?: () => Socket) => {
      const options = { method, headers, ...(createConnection && { createConnection }) };
      request = url.protocol === "https:" ? httpsRequest(url, options) : httpRequest(url, options);
      request.on("response", (response) => {
        // The signal still destroys the request while the body is read (readBody listens too).
        response.on("end", () => signal.removeEventListener("abort", abort));
        resolve(response);
      });
      request.on("error", (error) => {
        // A tunnel is the request's own: it goes with it.
        tunnel?.destroy();
        reject(error);
      });
      request.end(body);
    };
    if (proxy === undefined) return send();
    // An https endpoint through the proxy: a CONNECT tunnel, then TLS inside it.
    openTunnel(proxy, url, signal).then((socket) => {
      tunnel = socket;
      const host = bareHost(url);
      // The certificate is checked against the endpoint's host; SNI only for a name.
      const secure: TLSSocket = tlsConnect({ socket, host, ...(isIP(host) === 0 && { servername: host }) });
      send(() => secure);
    }, reject);
  });
}

/** A `CONNECT` tunnel through `proxy` to `url`'s host and port: the socket, once the proxy answered 2xx. */
function openTunnel(proxy: URL, url: URL, signal: AbortSignal): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const authority = `${url.hostname}:${portOf(url)}`;
    const headers: Record<string, string> = { host: authority };
    if (proxy.username !== "" || proxy.password !== "") {
      const pair = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
      headers["proxy-authorization"] = `Basic ${Buffer.from(pair).toString("base64")}`;
    }
    const options = { method: "CONNECT", path: authority, headers, agent: false as const, signal };
    const target = { protocol: proxy.protocol, hostname: bareHost(proxy), port: portOf(proxy) };
    const request = proxy.protocol === "https:" ? httpsRequest({ ...target, ...options }) : httpRequest({ ...target, ...options });
    request.on("connect", (response: IncomingMessage, socket: Socket, head: Buffer) => {
      const status = response.statusCode ?? 0;
      if (status < 200 || status > 299 || head.length > 0) {
        socket.destroy();
        reject(new Error(`the proxy answered ${status}`));
        return;
      }
      resolve(socket);
    });
    request.on("error", reject);
    request.end();
  });
}

/** Reads at most MAX_BODY_BYTES of the body; larger, declared or streamed, is a failure. */
function readBody(response: IncomingMessage, signal: AbortSignal): Promise<Uint8Array> {
  const declared = Number(response.headers["content-length"] ?? "0");
  if (declared > MAX_BODY_BYTES) return Promise.reject(new ProviderError("the response is larger than 1 MiB"));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const abort = () => {
      response.destroy();
      reject(new Error("aborted"));
    };
    if (signal.aborted) return abort();
    signal.addEventListener("abort", abort, { once: true });
    const done = () => signal.removeEventListener("abort", abort);
    response.on("data", (chunk: Buffer) => {
      length += chunk.length;
      if (length > MAX_BODY_BYTES) {
        done();
        response.destroy();
        reject(new ProviderError("the response is larger than 1 MiB"));
        return;
      }
      chunks.push(chunk);
    });
    response.on("end", () => {
      done();
      resolve(Buffer.concat(chunks, length));
    });
    response.on("error", (error) => {
      done();
      reject(error);
    });
    // A connection closed before the body's end (after it, this changes nothing).
    response.on("close", () => {
      done();
      reject(new Error("the response was cut short"));
    });
  });
}
