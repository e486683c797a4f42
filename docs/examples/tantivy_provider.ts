// A search engine with a query language and array-valued fields
// (tantivy-cli's `tantivy serve`), as a generated extension's
// `src/provider.ts` (docs/commands.md, "Shapes search engines answer
// with"; tests/it/mapping_examples.rs typechecks it in a generated project
// and runs test_examples.ts against it).
//
// `GET {base}/api/?q=<query>&nhits=5`, no credential, answered by
// `{"hits": [{"score", "doc": {"id": [7], "title": ["..."], "body":
// ["..."]}}]}`: every stored field is an array, the id a number.

import type { ProviderItem } from "./profile/contract.js";
import { type Provider, ProviderError, Upstream } from "./runtime/index.js";

/**
 * The query as plain words for a query language: every character that is
 * not a letter or a digit is a space (quotes, `:`, `-`, brackets are its
 * syntax), and the words are lower-cased so that none is an operator
 * (`AND`, `OR`, `NOT`).
 */
export const plainWords = (query: string): string =>
  query.replace(/[^\p{L}\p{N}]+/gu, " ").trim().split(" ").filter(Boolean).map((w) => w.toLowerCase()).join(" ");

type Hit = { score?: unknown; doc?: Record<string, unknown> | null } | null;

/** A stored field's first value (every field is an array). */
const first = (hit: Hit, name: string): unknown => {
  const values = hit?.doc?.[name];
  return Array.isArray(values) ? values[0] : undefined;
};
const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/** One hit as a profile item; a numeric id is written out. */
export const item = (hit: Hit): ProviderItem => {
  const id = first(hit, "id");
  const score = hit?.score;
  return {
    id: typeof id === "number" && Number.isFinite(id) ? String(id) : (text(id) ?? ""),
    content: text(first(hit, "body")) ?? "",
    title: text(first(hit, "title")),
    uri: text(first(hit, "url")),
    score: typeof score === "number" && Number.isFinite(score) ? score : undefined,
  };
};

export class SearchProvider implements Provider {
  constructor(private readonly upstream: Upstream) {}

  /** The service needs no credential: `_tokenVar` stays unread. */
  static fromEnv(baseUrlVar: string, _tokenVar: string): SearchProvider {
    return new SearchProvider(Upstream.fromEnv(baseUrlVar, "none"));
  }

  async search(query: string, limit: number, signal: AbortSignal): Promise<ProviderItem[]> {
    const words = plainWords(query);
    if (words === "") return []; // no word to search: the engine would refuse it
    const answer = await this.upstream.get("api/").query("q", words).query("nhits", limit).send(signal);
    const hits = (answer as { hits?: unknown } | null)?.hits;
    if (!Array.isArray(hits)) throw new ProviderError("the response has no hits array");
    return hits.map(item);
  }
}
