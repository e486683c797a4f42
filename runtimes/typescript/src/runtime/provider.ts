// The one interface between the runtime and a provider's mapping, below
// both: the runtime (./index.ts) serves any Provider, and the V1 binding
// (./v1.ts) and src/provider.ts are Providers. Part of ecp's TypeScript
// runtime; `ecp new` copies it verbatim.

import type { ProviderItem } from "../profile/contract.js";

/** What a provider team implements: one search, at most one upstream request, no retry. */
export interface Provider {
  /**
   * Searches for `query` (already normalized) and returns items in rank
   * order (`limit` is the profile's 5, for an API that takes a size; the
   * runtime drops items without an `id` or `content` and renders the first
   * five). `signal` aborts when the budget runs out or the client cancels:
   * pass it to the request (`UpstreamRequest.send` takes it) so that the
   * upstream sees the connection close.
   */
  search(query: string, limit: number, signal: AbortSignal): Promise<ProviderItem[]>;
}
