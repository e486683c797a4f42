// The Generic HTTP Search V1 binding of Qwen's reference starter, a
// provider like any other on the hardened client of ./http.ts: `POST
// {base}/v1/context/search` with a bearer credential and `{"query": "...",
// "limit": 5}`, answered by `{"items": [...]}`. The binding keeps the
// profile's rule of a base URL without a path (`/` or empty), as the
// reference and the Rust runtime's binding do; a mapping on `Upstream`
// (src/provider.ts) may use one.
// src/provider.ts spells the same binding out in its own few lines, to be
// changed into another API's mapping. Part of ecp's TypeScript runtime;
// `ecp new` copies it verbatim.

import type { ProviderItem } from "../profile/contract.js";
import { ProviderError } from "./error.js";
import { baseUrl, isUnset, Upstream } from "./http.js";
import type { Provider } from "./provider.js";

/** The search path under the base URL. */
export const SEARCH_PATH = "v1/context/search";

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

/** The valid items of a V1 answer, at most `limit`; a document without an `items` array is a failure. */
export function itemsFromDocument(document: unknown, limit: number): ProviderItem[] {
  const items = (document as { items?: unknown } | null)?.items;
  if (!Array.isArray(items)) throw new ProviderError("the response has no items array");
  const valid: ProviderItem[] = [];
  for (const value of items) {
    if (valid.length >= limit) break;
    const item = itemFromJson(value);
    if (item) valid.push(item);
  }
  return valid;
}

/** The Generic HTTP Search V1 binding. */
export class HttpSearchProvider implements Provider {
  constructor(private readonly upstream: Upstream) {}

  /**
   * The binding configured from the environment: the base URL from
   * `baseUrlVar`, the bearer credential from `tokenVar`. Throws an Error
   * naming the variable and the rule, never the value.
   */
  static fromEnv(baseUrlVar: string, tokenVar: string): HttpSearchProvider {
    const upstream = Upstream.fromEnv(baseUrlVar, { bearer: tokenVar });
    const base = process.env[baseUrlVar];
    const parsed = isUnset(base) ? undefined : baseUrl(base);
    if (parsed && "url" in parsed && parsed.url.pathname !== "/") {
      throw new Error(`${baseUrlVar} is invalid: its path must be empty or /; the binding appends /v1/context/search`);
    }
    return new HttpSearchProvider(upstream);
  }

  async search(query: string, limit: number, signal: AbortSignal): Promise<ProviderItem[]> {
    const document = await this.upstream.post(SEARCH_PATH).json({ query, limit }).send(signal);
    return itemsFromDocument(document, limit);
  }
}
