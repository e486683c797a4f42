// The one error a provider throws on purpose. Part of ecp's TypeScript
// runtime; `ecp new` copies it verbatim. Edit src/provider.ts instead.

/**
 * A failed search. `reason` goes to the server's stderr log (so it must not
 * hold the query, a credential, the endpoint or the upstream body); the
 * client only ever sees the stable message.
 */
export class ProviderError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = "ProviderError";
  }
}
