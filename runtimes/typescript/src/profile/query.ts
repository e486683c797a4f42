// The `context_search` input: argument validation and query normalization.
// Messages are bounded and never contain the query or any argument name or
// value the model sent.

import { MAX_QUERY_CODE_POINTS } from "./contract.js";

export const QUERY_MESSAGES = {
  missing: "Search query is required.",
  unknownArgument: "Only the query argument is accepted; remove any other argument.",
  notAString: "Search query must be a string.",
  tooLong: "Search query is too long.",
  empty: "Search query must not be empty.",
} as const;

export type QueryResult = { ok: true; query: string } | { ok: false; message: string };

/** ECMAScript's `\s`: WhiteSpace and LineTerminator. */
const WHITESPACE = /[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+/g;

/** Checks the raw bound (code points) and normalizes: every whitespace run becomes one space, the ends are trimmed. */
export function normalizeQuery(raw: string): QueryResult {
  let codePoints = 0;
  for (const _ of raw) {
    codePoints += 1;
    if (codePoints > MAX_QUERY_CODE_POINTS) return { ok: false, message: QUERY_MESSAGES.tooLong };
  }
  const query = raw.replace(WHITESPACE, " ").replace(/^ | $/g, "");
  if (query === "") return { ok: false, message: QUERY_MESSAGES.empty };
  return { ok: true, query };
}

/** Validates the whole `arguments` of a `tools/call`; `undefined` is a missing query. */
export function queryFromArguments(args: unknown): QueryResult {
  if (args === undefined || args === null || typeof args !== "object" || Array.isArray(args)) {
    return { ok: false, message: QUERY_MESSAGES.missing };
  }
  const keys = Object.keys(args);
  if (keys.some((key) => key !== "query")) return { ok: false, message: QUERY_MESSAGES.unknownArgument };
  if (!keys.includes("query")) return { ok: false, message: QUERY_MESSAGES.missing };
  const raw = (args as { query: unknown }).query;
  if (typeof raw !== "string") return { ok: false, message: QUERY_MESSAGES.notAString };
  return normalizeQuery(raw);
}
