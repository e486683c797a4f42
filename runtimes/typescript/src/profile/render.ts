// The profile's rendering algorithm (profile-v1, "Rendering algorithm of the
// reference starter"): provider items in, the bounded, escaped
// `untrusted_external_context` envelope out, as text and as the object the
// text parses to.

import { FIELD_LIMITS, MAX_ITEMS, MAX_TEXT_UNITS, NOTICE, type ProviderItem } from "./contract.js";

export interface Envelope {
  /** The one text block: the envelope serialized, `<` and `>` escaped. */
  text: string;
  /** `structuredContent`: exactly `JSON.parse(text)`. */
  structuredContent: { untrusted_external_context: { notice: string; items: ProviderItem[] } };
}

const codePoints = (text: string): string[] => Array.from(text);
const truncate = (text: string, max: number): string => codePoints(text).slice(0, max).join("");

/** JSON.stringify, then every `<` and `>` as `\u003c` and `\u003e`. */
export function serialize(items: ProviderItem[]): string {
  const json = JSON.stringify({ untrusted_external_context: { notice: NOTICE, items } });
  return json.replace(/</g, "\\u003c").replace(/>/g, "\\u003e");
}

/** Truncates every field to its bound, keeps a finite score, drops empty optional strings; keys in the serialization order. */
export function compact(item: ProviderItem): ProviderItem {
  const out: ProviderItem = { id: truncate(item.id, FIELD_LIMITS.id), content: truncate(item.content, FIELD_LIMITS.content) };
  if (typeof item.title === "string" && item.title !== "") out.title = truncate(item.title, FIELD_LIMITS.title);
  if (typeof item.uri === "string" && item.uri !== "") out.uri = truncate(item.uri, FIELD_LIMITS.uri);
  if (typeof item.score === "number" && Number.isFinite(item.score)) out.score = item.score;
  if (typeof item.updatedAt === "string" && item.updatedAt !== "") {
    out.updatedAt = truncate(item.updatedAt, FIELD_LIMITS.updatedAt);
  }
  return out;
}

const SHED_ORDER = ["score", "updatedAt", "title", "uri"] as const;

/** Renders the provider's items in provider order: the first five, each shed or cut until the text fits. */
export function render(providerItems: readonly ProviderItem[]): Envelope {
  const items: ProviderItem[] = [];
  const fits = (): boolean => serialize(items).length <= MAX_TEXT_UNITS;
  for (const raw of providerItems.slice(0, MAX_ITEMS)) {
    if (typeof raw.id !== "string" || raw.id === "") continue;
    if (typeof raw.content !== "string" || raw.content === "") continue;
    const item = compact(raw);
    items.push(item);
    if (fits()) continue;
    for (const key of SHED_ORDER) {
      delete item[key];
      if (fits()) break;
    }
    if (fits()) continue;
    // The longest content prefix, in code points, that fits.
    const content = codePoints(item.content);
    let fitting = 0;
    let tooLong = content.length;
    while (fitting < tooLong) {
      const middle = Math.ceil((fitting + tooLong) / 2);
      item.content = content.slice(0, middle).join("");
      if (fits()) fitting = middle;
      else tooLong = middle - 1;
    }
    if (fitting === 0) {
      items.pop();
      break;
    }
    item.content = content.slice(0, fitting).join("");
  }
  const text = serialize(items);
  return { text, structuredContent: JSON.parse(text) };
}
