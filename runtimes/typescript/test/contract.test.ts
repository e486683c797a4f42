// The profile against contracts/v1: every render vector byte for byte,
// every input vector, the schemas on the tool, and properties of the
// renderer over generated items (the same ones the Rust core is held to).

import assert from "node:assert/strict";
import { test } from "node:test";

import Ajv2020 from "ajv/dist/2020";

import inputSchema from "../contracts/v1/context_search.input.schema.json";
import outputSchema from "../contracts/v1/context_search.output.schema.json";
import renderVectors from "../contracts/v1/render-vectors.json";
import testVectors from "../contracts/v1/test-vectors.json";
import {
  MAX_ITEMS,
  MAX_TEXT_UNITS,
  NOTICE,
  type ProviderItem,
  queryFromArguments,
  render,
  TOOL,
} from "../src/profile/index.js";

const ajv = new Ajv2020({ allErrors: true, strict: false });
const validOutput = ajv.compile(outputSchema);
const validInput = ajv.compile(inputSchema);

test("every render vector renders byte for byte", () => {
  assert.ok(renderVectors.length > 20, "the vectors are there");
  for (const vector of renderVectors) {
    const envelope = render(vector.providerItems as ProviderItem[]);
    assert.equal(envelope.text, vector.text, vector.name);
    assert.deepEqual(envelope.structuredContent, JSON.parse(vector.text), vector.name);
    assert.ok(validOutput(envelope.structuredContent), `${vector.name}: ${ajv.errorsText(validOutput.errors)}`);
  }
});

test("valid inputs are accepted and invalid ones refused, as the schema says", () => {
  assert.ok(testVectors.validInputs.length > 0 && testVectors.invalidInputs.length > 0);
  for (const vector of testVectors.validInputs) {
    assert.ok(validInput(vector.value), vector.name);
    assert.equal(queryFromArguments(vector.value).ok, true, vector.name);
  }
  for (const vector of testVectors.invalidInputs) {
    assert.equal(queryFromArguments(vector.value).ok, false, vector.name);
  }
  for (const vector of testVectors.validOutputs) assert.ok(validOutput(vector.value), vector.name);
  for (const vector of testVectors.invalidOutputs) assert.ok(!validOutput(vector.value), vector.name);
});

test("queries are normalized with ECMAScript whitespace and bounded in code points", () => {
  const query = (raw: string) => queryFromArguments({ query: raw });
  assert.deepEqual(query("\ufeff deploy\t\n\v\f\r\u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000policy  "), {
    ok: true,
    query: "deploy policy",
  });
  assert.deepEqual(query("a\u0085b"), { ok: true, query: "a\u0085b" });
  assert.equal(query("😀".repeat(2000)).ok, true);
  assert.deepEqual(query("😀".repeat(2001)), { ok: false, message: "Search query is too long." });
  assert.deepEqual(query(" ".repeat(2001)), { ok: false, message: "Search query is too long." });
  assert.deepEqual(query(" \u3000 "), { ok: false, message: "Search query must not be empty." });
  assert.deepEqual(queryFromArguments(undefined), { ok: false, message: "Search query is required." });
  assert.deepEqual(queryFromArguments({ query: "x", corpus: "all" }), {
    ok: false,
    message: "Only the query argument is accepted; remove any other argument.",
  });
  assert.deepEqual(queryFromArguments({ query: 7 }), { ok: false, message: "Search query must be a string." });
});

test("the tool declares the canonical schemas and the one annotation", () => {
  assert.equal(TOOL.name, "context_search");
  assert.deepEqual(TOOL.inputSchema, inputSchema);
  assert.deepEqual(TOOL.outputSchema, outputSchema);
  assert.deepEqual(TOOL.annotations, { destructiveHint: false });
});

// A small seeded generator (xorshift32), so that a failure repeats.
function generator(seed: number) {
  let state = seed >>> 0 || 1;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
  const alphabet = ["a", "Z", " ", "<", ">", "&", '"', "\\", "\n", "\u0001", "é", "\u2028", "😀", "\ud800"];
  const text = (max: number) => {
    const length = Math.floor(next() ** 3 * max);
    let out = "";
    for (let i = 0; i < length; i++) out += pick(alphabet);
    return out;
  };
  const item = (): ProviderItem => {
    const out: ProviderItem = { id: text(140), content: text(1200) };
    if (next() < 0.5) out.title = text(220);
    if (next() < 0.5) out.uri = text(520);
    if (next() < 0.5) out.score = pick([0, 1, -0.5, 0.91, 1e21, 1e-7, Number.NaN, Infinity, 123456789.125]);
    if (next() < 0.5) out.updatedAt = text(70);
    return out;
  };
  return { next, item };
}

test("rendered envelopes stay bounded, ordered and self-consistent over 3000 generated inputs", () => {
  for (let seed = 1; seed <= 3000; seed++) {
    const random = generator(seed);
    const count = Math.floor(random.next() * 8);
    const items = Array.from({ length: count }, () => random.item());
    const envelope = render(items);
    const where = `seed ${seed}`;
    assert.ok(envelope.text.length <= MAX_TEXT_UNITS, where);
    assert.ok(!/[<>]/.test(envelope.text), where);
    assert.deepEqual(envelope.structuredContent, JSON.parse(envelope.text), where);
    const rendered = envelope.structuredContent.untrusted_external_context;
    assert.equal(rendered.notice, NOTICE, where);
    assert.ok(rendered.items.length <= MAX_ITEMS, where);
    // Items keep provider order, each a prefix of its own provider item.
    let from = 0;
    for (const out of rendered.items) {
      const index = items.findIndex((item, i) => i >= from && item.id.startsWith(out.id) && item.content.length > 0);
      assert.ok(index >= 0, where);
      from = index + 1;
      assert.deepEqual(Object.keys(out), ["id", "content", "title", "uri", "score", "updatedAt"].filter((k) => k in out), where);
    }
    assert.ok(validOutput(envelope.structuredContent), `${where}: ${ajv.errorsText(validOutput.errors)}`);
  }
});
