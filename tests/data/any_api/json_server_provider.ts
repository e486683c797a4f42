// kb-context's search service, mapped to profile items: json-server (the
// one file tests/it/any_api.rs changes in a generated `ecp new --template
// local-ts` extension). The runtime's Upstream keeps every rule around it.
//
// `GET {base}/docs?q=<query>&_limit=5` answers a top-level JSON array of
// rows `{"id", "title", "body", "url", "updated"}`; an id may be a number,
// and a title an array of strings (as search engines store fields).

import type { ProviderItem } from "./profile/contract.js";
import { type Provider, ProviderError, Upstream } from "./runtime/index.js";

/** A string field of a row, or nothing. */
const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
/** A field that may be an array (a stored field): its first string. */
const first = (value: unknown): string | undefined => text(Array.isArray(value) ? value[0] : value);
/** A row's id as a string: a finite number is written out, a string kept. */
const id = (value: unknown): string =>
  typeof value === "number" && Number.isFinite(value) ? String(value) : (text(value) ?? "");

export class SearchProvider implements Provider {
  constructor(private readonly upstream: Upstream) {}

  /** The base URL from the environment; json-server takes no credential (`ecp new --auth none`). */
  static fromEnv(baseUrlVar: string, tokenVar?: string): SearchProvider {
    return new SearchProvider(Upstream.fromEnv(baseUrlVar, tokenVar === undefined ? "none" : { bearer: tokenVar }));
  }

  async search(query: string, limit: number, signal: AbortSignal): Promise<ProviderItem[]> {
    // The request: json-server's full-text filter, one request, never retried.
    // A GET carries the query in its URL, and Node refuses a head over 16 KiB
    // (431): the first 256 code points are searched (2000 emoji are 24 KB).
    const words = Array.from(query).slice(0, 256).join("");
    const rows = await this.upstream.get("docs").query("q", words).query("_limit", limit).send(signal);
    // The mapping: each row to a profile item.
    if (!Array.isArray(rows)) throw new ProviderError("the response is not an array of rows");
    return rows.map((row: { id?: unknown; title?: unknown; body?: unknown; url?: unknown; updated?: unknown } | null) => ({
      id: id(row?.id),
      content: text(row?.body) ?? "",
      title: first(row?.title),
      uri: text(row?.url),
      updatedAt: text(row?.updated),
    }));
  }
}
