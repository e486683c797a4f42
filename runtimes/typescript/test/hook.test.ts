// Auto Recall (src/runtime/hook.ts): the query rules against the vectors
// the Rust runtime's scanner produced (auto-recall-vectors.json: a table
// and seeded random prompts; JavaScript's own regular expressions here),
// the command line, the input and the repository rule.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import {
  autoRecallQuery,
  hookInput,
  hookOutput,
  hookSettings,
  isWithin,
  resolvedRoot,
} from "../src/runtime/hook.js";
import vectors from "./auto-recall-vectors.json";

test("the query of every vector is the Rust runtime's", () => {
  assert.ok(vectors.cases.length > 100, "the vectors are there");
  for (const vector of vectors.cases) {
    const query = autoRecallQuery(vector.prompt, vectors.credentials);
    assert.equal(query ?? null, vector.query, JSON.stringify(vector.prompt));
  }
});

test("the hook's command line", () => {
  assert.deepEqual(hookSettings(["user-prompt-submit", "--repository-root", "/r"]), {
    repositoryRoot: "/r",
    timeoutMs: 1500,
  });
  assert.deepEqual(hookSettings(["user-prompt-submit", "--timeout-ms=100", "--repository-root=/r"]), {
    repositoryRoot: "/r",
    timeoutMs: 100,
  });
  for (const bad of [
    ["user-prompt-submit"],
    ["stop", "--repository-root", "/r"],
    ["user-prompt-submit", "--repository-root", "/r", "--timeout-ms", "99"],
    ["user-prompt-submit", "--repository-root", "/r", "--timeout-ms", "5001"],
    ["user-prompt-submit", "--repository-root"],
    ["user-prompt-submit", "--repository-root", "/r", "--retries", "1"],
  ]) {
    assert.ok("refused" in hookSettings(bad), bad.join(" "));
  }
});

test("the hook reads submitted_prompt only", () => {
  const input = (value: unknown) => hookInput(Buffer.from(JSON.stringify(value)));
  const event = "UserPromptSubmit";
  assert.deepEqual(input({ hook_event_name: event, cwd: "/r", prompt: "expanded", submitted_prompt: "typed" }), {
    submittedPrompt: "typed",
    cwd: "/r",
  });
  assert.equal(input({ hook_event_name: event, cwd: "/r", prompt: "expanded" }), undefined);
  assert.equal(input({ hook_event_name: event, cwd: "/r", submitted_prompt: " \n" }), undefined);
  assert.equal(input({ hook_event_name: "Stop", cwd: "/r", submitted_prompt: "x" }), undefined);
  assert.equal(input({ hook_event_name: event, submitted_prompt: "x" }), undefined);
  assert.equal(hookInput(Buffer.from("not json")), undefined);
});

test("the cwd must resolve inside the root", () => {
  const made = mkdtempSync(join(tmpdir(), "ecp-hook-root-"));
  mkdirSync(join(made, "sub"));
  try {
    const root = resolvedRoot(made);
    assert.ok(root !== undefined);
    assert.ok(isWithin(root, root));
    assert.ok(isWithin(root, join(root, "sub")));
    assert.ok(isWithin(root, `${root}/sub/..`));
    assert.ok(!isWithin(root, `${root}/..`));
    assert.ok(!isWithin(root, `${root}-other`));
    assert.ok(!isWithin(root, "sub"));
    assert.ok(!isWithin(root, join(root, "missing")));
    assert.equal(resolvedRoot("/"), undefined);
    assert.equal(resolvedRoot("relative"), undefined);
  } finally {
    rmSync(made, { recursive: true });
  }
});

test("the output is Qwen's hook shape or nothing", () => {
  assert.equal(hookOutput(undefined), "{}");
  assert.deepEqual(JSON.parse(hookOutput('{"x":1}')), {
    hookSpecificOutput: { hookEventName: "UserPromptSubmit", additionalContext: '{"x":1}' },
  });
});
