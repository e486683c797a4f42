// The provider: YOURS to edit. It maps your search API to profile items.
//
// It starts as the Generic HTTP Search V1 binding of Qwen's reference
// starter: `POST {base}/v1/context/search` with a bearer credential and
// `{"query": "...", "limit": 5}`, answered by `{"items": [...]}`. Change
// the request and the mapping below into your API's. The hardening is the
// runtime's `Upstream` (src/runtime/http.ts): the base URL's rules (a path
// is fine; request paths are relative to it), the credential,
// HTTP(S)_PROXY/NO_PROXY, no redirect, no retry, at most 1 MiB of strict
// UTF-8 JSON, the budget and cancellation through `signal`, and failure
// reasons that never hold the query, the endpoint, the credential or the
// body. The runtime drops items whose `id` or `content` is empty and
// renders the first five: a mapping needs neither filter nor limit.
//
// Another API, e.g. `GET {base}/db/docs.json?q=<query>&size=5` with the
// credential in an `x-api-key` header, answering
// `{"data": {"rows": [{"id", "title", "body", "url", "updated"}]}}`:
// in `fromEnv`, `{ header: "x-api-key", variable: tokenVar }`, and in `search`
//
//   const answer = await this.upstream.get("db/docs.json").query("q", query).query("size", limit).send(signal);
//   const rows = (answer as { data?: { rows?: unknown } } | null)?.data?.rows;
//   if (!Array.isArray(rows)) throw new ProviderError("the response has no data.rows array");
//   return rows.map((row) => ({
//     id: text(row?.id) ?? "", // a numeric id: typeof row?.id === "number" ? String(row.id) : ""
//     content: text(row?.body) ?? "",
//     title: text(row?.title),
//     uri: text(row?.url),
//     updatedAt: text(row?.updated),
//   }));

import type { ProviderItem } from "./profile/contract.js";
import { type Credential, type Provider, ProviderError, Upstream } from "./runtime/index.js";

/** A string field of the answer, or nothing. */
const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
/** A finite number field of the answer, or nothing. */
const finite = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) ? value : undefined;

export class SearchProvider implements Provider {
  constructor(private readonly upstream: Upstream) {}

  /**
   * The base URL and the credential from the environment: `tokenVar`'s value as a bearer token, or under the
   * header `header`; none without `tokenVar` (`ecp new --auth none`). Throws naming the variable and the rule,
   * never the value.
   */
  static fromEnv(baseUrlVar: string, tokenVar?: string, header?: string): SearchProvider {
    const credential: Credential =
      tokenVar === undefined ? "none" : header === undefined ? { bearer: tokenVar } : { header, variable: tokenVar };
    return new SearchProvider(Upstream.fromEnv(baseUrlVar, credential));
  }

  async search(query: string, limit: number, signal: AbortSignal): Promise<ProviderItem[]> {
    // The request: one, never retried; `signal` aborts it (budget, cancellation).
    const answer = await this.upstream.post("v1/context/search").json({ query, limit }).send(signal);
    // The mapping: the answer's items to profile items.
    const items = (answer as { items?: unknown } | null)?.items;
    if (!Array.isArray(items)) throw new ProviderError("the response has no items array");
    return items.map((item) => ({
      id: text(item?.id) ?? "",
      content: text(item?.content) ?? "",
      title: text(item?.title),
      uri: text(item?.uri),
      score: finite(item?.score),
      // `updated_at` wins over `updatedAt` when it is present and not null.
      updatedAt: text(item?.updated_at ?? item?.updatedAt),
    }));
  }
}
