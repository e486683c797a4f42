// The provider: YOURS to edit. It maps your search API to profile items.
//
// It starts as the Generic HTTP Search V1 binding of Qwen's reference
// starter: `POST {base}/v1/context/search` with a bearer credential and
// `{"query": "...", "limit": 5}`, answered by `{"items": [...]}`. It honours
// HTTP_PROXY, HTTPS_PROXY and NO_PROXY (undici's EnvHttpProxyAgent, as the
// reference does), reads at most 1 MiB of strict UTF-8, follows no redirect,
// never retries, and aborts the request when the runtime's signal fires
// (budget or client cancellation). Failure reasons name what failed, never
// the query, the endpoint, the credential or the body.

import { EnvHttpProxyAgent, fetch } from "undici";

import type { ProviderItem } from "./profile/contract.js";
import { type Provider, ProviderError } from "./runtime/index.js";

/** The search path under the base URL. */
export const SEARCH_PATH = "v1/context/search";
/** Largest accepted response body (exactly this many bytes is fine). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** An unresolved manifest variable stays literal in Qwen (`${NAME}`), so it counts as missing. */
function isUnset(value: string | undefined): value is undefined {
  const trimmed = value?.trim() ?? "";
  return trimmed === "" || (trimmed.startsWith("${") && trimmed.endsWith("}"));
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** The search endpoint for a base URL, or the rule it breaks. */
export function searchEndpoint(baseUrl: string): { url: URL } | { rule: string } {
  let url: URL;
  try {
    url = new URL(baseUrl.trim());
  } catch {
    return { rule: "it is not an absolute URL" };
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && LOOPBACK.has(url.hostname.toLowerCase()))) {
    return { rule: "it must use https (http only for localhost, 127.0.0.1 or [::1])" };
  }
  if (url.username !== "" || url.password !== "") return { rule: "it must not hold user information" };
  if (url.search !== "" || baseUrl.includes("?")) return { rule: "it must not have a query" };
  if (url.hash !== "" || baseUrl.includes("#")) return { rule: "it must not have a fragment" };
  if (url.pathname !== "/") return { rule: "its path must be / or empty" };
  return { url: new URL(SEARCH_PATH, url) };
}

export interface HttpSearchConfig {
  endpoint: URL;
  token: string;
}

/** Reads the base URL and credential from the environment; throws an Error naming the variable and the rule, never the value. */
export function configFromEnv(baseUrlVar: string, tokenVar: string): HttpSearchConfig {
  const missing = (name: string) =>
    new Error(`${name} is not set; export it before starting (an empty value or a literal \${${name}} counts as unset)`);
  const base = process.env[baseUrlVar];
  const token = process.env[tokenVar];
  if (isUnset(base)) throw missing(baseUrlVar);
  if (isUnset(token)) throw missing(tokenVar);
  const endpoint = searchEndpoint(base);
  if ("rule" in endpoint) throw new Error(`${baseUrlVar} is invalid: ${endpoint.rule}`);
  if (!/^[\x21-\x7e]+$/.test(token.trim())) {
    throw new Error(`${tokenVar} is invalid: a credential must be visible ASCII without spaces or line breaks`);
  }
  return { endpoint: endpoint.url, token: token.trim() };
}

/** One item of the upstream answer as profile item, or `undefined` when it is not valid. */
export function itemFromJson(value: unknown): ProviderItem | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const raw = value as Record<string, unknown>;
  if (typeof raw.id !== "string" || raw.id === "" || typeof raw.content !== "string" || raw.content === "") {
    return undefined;
  }
  const item: ProviderItem = { id: raw.id, content: raw.content };
  if (typeof raw.title === "string") item.title = raw.title;
  if (typeof raw.uri === "string") item.uri = raw.uri;
  if (typeof raw.score === "number" && Number.isFinite(raw.score)) item.score = raw.score;
  // `updated_at` wins when present and not null; present but not a string means none.
  const updated = "updated_at" in raw && raw.updated_at !== null ? raw.updated_at : raw.updatedAt;
  if (typeof updated === "string") item.updatedAt = updated;
  return item;
}

/** Reads at most MAX_BODY_BYTES of the body; larger is a failure. */
async function readBody(response: Awaited<ReturnType<typeof fetch>>): Promise<Uint8Array> {
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw new ProviderError("the response is larger than 1 MiB");
  const chunks: Uint8Array[] = [];
  let length = 0;
  if (response.body) {
    for await (const chunk of response.body) {
      length += chunk.byteLength;
      if (length > MAX_BODY_BYTES) throw new ProviderError("the response is larger than 1 MiB");
      chunks.push(chunk);
    }
  }
  const body = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    body.set(chunk, at);
    at += chunk.byteLength;
  }
  return body;
}

const PROXY_VARIABLES = ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"];

/** The Generic HTTP Search V1 binding. */
export class HttpSearchProvider implements Provider {
  // undici's environment proxy agent when a proxy is configured (it reads
  // NO_PROXY too), else undici's direct default.
  private readonly dispatcher = PROXY_VARIABLES.some((name) => process.env[name])
    ? new EnvHttpProxyAgent()
    : undefined;

  constructor(private readonly config: HttpSearchConfig) {}

  async search(query: string, limit: number, signal: AbortSignal): Promise<ProviderItem[]> {
    let response: Awaited<ReturnType<typeof fetch>>;
    try {
      response = await fetch(this.config.endpoint, {
        method: "POST",
        headers: {
          accept: "application/json",
          authorization: `Bearer ${this.config.token}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ query, limit }),
        redirect: "manual",
        signal,
        dispatcher: this.dispatcher,
      });
    } catch {
      throw new ProviderError(signal.aborted ? "the request was aborted" : "the request failed in transport");
    }
    try {
      if (response.status >= 300 && response.status < 400) throw new ProviderError(`upstream redirected (HTTP ${response.status})`);
      if (response.status < 200 || response.status > 299) throw new ProviderError(`upstream failed (HTTP ${response.status})`);
      let body: Uint8Array;
      try {
        body = await readBody(response);
      } catch (error) {
        if (error instanceof ProviderError) throw error;
        throw new ProviderError("the response body could not be read");
      }
      let text: string;
      try {
        text = new TextDecoder("utf-8", { fatal: true }).decode(body);
      } catch {
        throw new ProviderError("the response is not UTF-8");
      }
      let document: unknown;
      try {
        document = JSON.parse(text);
      } catch {
        throw new ProviderError("the response is not JSON");
      }
      const items = (document as { items?: unknown } | null)?.items;
      if (!Array.isArray(items)) throw new ProviderError("the response has no items array");
      const valid: ProviderItem[] = [];
      for (const value of items) {
        const item = itemFromJson(value);
        if (item) valid.push(item);
        if (valid.length === limit) break;
      }
      return valid;
    } finally {
      // Whatever was not read is released, not left to a pool.
      if (!response.bodyUsed) await response.body?.cancel().catch(() => {});
    }
  }
}
