// What tests/it/mapping_examples.rs runs against each TypeScript example in
// docs/examples/, copied into a generated project as src/provider.ts and
// this file as test/examples.test.ts (bundled by esbuild, run by node:test).

import assert from "node:assert/strict";
import { test } from "node:test";

import * as provider from "../src/provider.js";

test("the example maps a hit with a numeric id to an item", () => {
  const mapped = provider as unknown as { item: (hit: unknown) => { id: string; content: string; title?: string } };
  const hit =
    "plainWords" in provider
      ? { score: 2.5, doc: { id: [7], title: ["T"], body: ["B", "more"] } }
      : { _id: 7, _score: 1.25, _source: { title: "T", body: "B" } };
  const item = mapped.item(hit);
  assert.deepEqual([item.id, item.content, item.title], ["7", "B", "T"]);
});

test("a query language's syntax becomes plain words", { skip: !("plainWords" in provider) && "no query language" }, () => {
  const { plainWords } = provider as unknown as { plainWords: (q: string) => string };
  assert.equal(plainWords('<script> "x" a:b -c OR it\'s'), "script x a b c or it s");
  assert.equal(plainWords("\u0085"), "");
});
