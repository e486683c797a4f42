// A search engine that nests its hits (Elasticsearch's `_search`), as a
// generated extension's `src/provider.ts` (docs/commands.md, "Shapes
// search engines answer with"; tests/it/mapping_examples.rs typechecks it
// in a generated project and runs test_examples.ts against it).
//
// `POST {base}/docs/_search` with a `simple_query_string` query, which
// never fails on the query's syntax, answered by `{"hits": {"hits":
// [{"_id", "_score", "_source": {"title", "body", "url", "updated"}}]}}`.

import type { ProviderItem } from "./profile/contract.js";
import { type Provider, ProviderError, Upstream } from "./runtime/index.js";

const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
const finite = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) ? value : undefined;

/** An id as text, whether the engine writes a string or a number: read as a string only, a numeric id drops every item. */
export const id = (value: unknown): string => (finite(value) !== undefined ? String(value) : (text(value) ?? ""));

type Hit = { _id?: unknown; _score?: unknown; _source?: { title?: unknown; body?: unknown; url?: unknown; updated?: unknown } | null } | null;

/** One hit: the id and score beside `_source`, the fields inside it. */
export const item = (hit: Hit): ProviderItem => ({
  id: id(hit?._id),
  content: text(hit?._source?.body) ?? "",
  title: text(hit?._source?.title),
  uri: text(hit?._source?.url),
  score: finite(hit?._score),
  updatedAt: text(hit?._source?.updated),
});

export class SearchProvider implements Provider {
  constructor(private readonly upstream: Upstream) {}

  static fromEnv(baseUrlVar: string, tokenVar: string): SearchProvider {
    return new SearchProvider(Upstream.fromEnv(baseUrlVar, { bearer: tokenVar }));
  }

  async search(query: string, limit: number, signal: AbortSignal): Promise<ProviderItem[]> {
    const body = { query: { simple_query_string: { query, fields: ["title", "body"] } }, size: limit };
    const answer = await this.upstream.post("docs/_search").json(body).send(signal);
    const hits = (answer as { hits?: { hits?: unknown } } | null)?.hits?.hits;
    if (!Array.isArray(hits)) throw new ProviderError("the response has no hits.hits array");
    return hits.map(item);
  }
}
