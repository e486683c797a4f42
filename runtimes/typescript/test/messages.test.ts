// The runtime's own reading of JSON-RPC messages (src/runtime/messages.ts)
// held to the MCP TypeScript SDK's zod schemas, which the runtime read
// them with before (the SDK is a development dependency only): on valid
// messages of every kind the server reads, and on the same messages with
// members removed, replaced by odd values or added, every reading agrees.
// ECP_FUZZ_SECONDS (default 2) and ECP_FUZZ_SEED replay or lengthen it.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  InitializeRequestSchema,
  isJSONRPCErrorResponse,
  isJSONRPCResultResponse,
  isTaskAugmentedRequestParams,
  JSONRPCNotificationSchema,
  JSONRPCRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

import { cancelledRequest, isNotification, isRequest, isResponse, requestedTask, servedParamsReadable } from "../src/runtime/messages.js";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A small seeded generator (mulberry32), so that a failure can be replayed. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, below: (n: number) => Math.floor(next() * n), pick: <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] };
}

/** Values that sit on the schemas' edges. */
const ODD: Json[] = [null, true, false, 0, -1, 7, 1.5, 2 ** 53, -(2 ** 53), 1e300, "", "x", "light", "dark", [], [1], ["a"], [{}], {}, { x: 1 }];

/** Members the schemas name, to add where they do not belong too. */
const KEYS = [
  "_meta", "progressToken", "io.modelcontextprotocol/related-task", "taskId", "task", "ttl", "protocolVersion",
  "capabilities", "clientInfo", "name", "version", "title", "websiteUrl", "description", "icons", "src", "mimeType",
  "sizes", "theme", "experimental", "sampling", "context", "tools", "elicitation", "form", "applyDefaults", "url",
  "roots", "listChanged", "tasks", "list", "cancel", "requests", "createMessage", "create", "extensions", "cursor",
  "arguments", "requestId", "reason", "result", "error", "code", "message", "data", "x",
];

/** Valid messages of every kind, as a client sends them (`jsonrpc` "2.0", a usable id). */
function valid(r: ReturnType<typeof random>): Record<string, Json> {
  const meta = { progressToken: r.pick(["t", 3]), "io.modelcontextprotocol/related-task": { taskId: "k" }, extra: [1] };
  const id = r.pick<Json>([1, "a", 0, -5]);
  const params = (base: Record<string, Json>): Record<string, Json> => (r.next() < 0.5 ? { ...base, _meta: meta } : base);
  const capabilities: Record<string, Json> = {
    experimental: { a: {}, b: [] },
    sampling: { context: {}, tools: [] },
    elicitation: r.pick<Json>([{}, { form: { applyDefaults: true, more: 1 }, url: {} }]),
    roots: { listChanged: true },
    tasks: { list: {}, cancel: {}, requests: { sampling: { createMessage: {} }, elicitation: { create: {} }, other: 1 } },
    extensions: { "acme/x": {} },
    unknown: 5,
  };
  const clientInfo = {
    name: "qwen",
    version: "1",
    title: "Qwen",
    websiteUrl: "https://qwen.example",
    description: "d",
    icons: [{ src: "i.png", mimeType: "image/png", sizes: ["48x48"], theme: "dark" }],
  };
  switch (r.below(8)) {
    case 0:
      return { jsonrpc: "2.0", id, method: "initialize", params: params({ protocolVersion: "2025-06-18", capabilities, clientInfo }) };
    case 1:
      return { jsonrpc: "2.0", id, method: "ping", ...(r.next() < 0.5 && { params: params({}) }) };
    case 2:
      return { jsonrpc: "2.0", id, method: "tools/list", params: params({ cursor: "c" }) };
    case 3:
      return { jsonrpc: "2.0", id, method: "tools/call", params: params({ name: "context_search", arguments: { query: "q" }, task: { ttl: 5 } }) };
    case 4:
      return { jsonrpc: "2.0", method: "notifications/cancelled", params: params({ requestId: id, reason: "r" }) };
    case 5:
      return { jsonrpc: "2.0", method: "notifications/initialized", params: params({}) };
    case 6:
      return { jsonrpc: "2.0", id, result: { _meta: meta, value: 1 } };
    default:
      return { jsonrpc: "2.0", id, error: { code: -32000, message: "m", data: [1] } };
  }
}

/** `message` with one member, somewhere inside, removed, replaced or added. */
function mutated(r: ReturnType<typeof random>, message: Record<string, Json>): Record<string, Json> {
  const copy = structuredClone(message);
  const objects: Record<string, Json>[] = [];
  const walk = (value: Json) => {
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      objects.push(value);
      Object.values(value).forEach(walk);
    } else if (Array.isArray(value)) value.forEach(walk);
  };
  walk(copy);
  const target = r.pick(objects);
  const keys = Object.keys(target).filter((key) => target !== copy || (key !== "jsonrpc" && key !== "id" && key !== "method"));
  const action = r.below(3);
  if (action === 0 && keys.length > 0) delete target[r.pick(keys)];
  else if (action === 1 && keys.length > 0) target[r.pick(keys)] = r.pick(ODD);
  else target[target === copy ? r.pick(["params", "result", "error"]) : r.pick(KEYS)] = r.pick(ODD);
  return copy;
}

const SERVED = new Map<string, { safeParse(value: unknown): { success: boolean } }>([
  ["initialize", InitializeRequestSchema],
  ["ping", PingRequestSchema],
  ["tools/list", ListToolsRequestSchema],
  ["tools/call", CallToolRequestSchema],
]);

/** Every reading of `message`, by the runtime and by the SDK's schemas. */
function readings(message: Record<string, Json>) {
  const params = message.params;
  const objectParams = params !== null && typeof params === "object" && !Array.isArray(params) ? params : undefined;
  const request = JSONRPCRequestSchema.safeParse(message).success;
  const method = typeof message.method === "string" ? message.method : "";
  const cancelled = CancelledNotificationSchema.safeParse({ method: "notifications/cancelled", params });
  return {
    ours: {
      request: isRequest(message),
      notification: isNotification(message),
      response: isResponse(message),
      served: request ? servedParamsReadable(method, objectParams) : undefined,
      task: objectParams !== undefined && requestedTask(objectParams) !== undefined,
      cancelled: cancelledRequest(params),
    },
    sdk: {
      request,
      notification: JSONRPCNotificationSchema.safeParse(message).success,
      response: isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message),
      served: request ? SERVED.get(method)?.safeParse(message).success : undefined,
      task: objectParams !== undefined && isTaskAugmentedRequestParams(objectParams) && objectParams.task !== undefined,
      cancelled: cancelled.success && typeof cancelled.data.params.requestId !== "undefined" ? cancelled.data.params.requestId : undefined,
    },
  };
}

test("every valid message is read as the SDK's schemas read it", () => {
  const r = random(1);
  for (let n = 0; n < 400; n++) {
    const message = valid(r);
    const { ours, sdk } = readings(message);
    assert.deepEqual(ours, sdk, JSON.stringify(message));
    assert.ok(ours.request || ours.notification || ours.response, JSON.stringify(message));
  }
});

test("edges: each reading agrees with the SDK's on what it refuses", () => {
  const cases: Array<Record<string, Json>> = [
    { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "v", capabilities: { elicitation: {} }, clientInfo: { name: "n", version: "1" } } },
    { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "v", capabilities: { experimental: { a: null } }, clientInfo: { name: "n", version: "1" } } },
    { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "v", capabilities: { sampling: [] }, clientInfo: { name: "n", version: "1" } } },
    { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "v", capabilities: {}, clientInfo: { name: "n", version: "1", icons: [{ src: "s", theme: "blue" }] } } },
    { jsonrpc: "2.0", id: 1, method: "tools/list", params: { cursor: null } },
    { jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: { progressToken: 1.5 } } },
    { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "context_search", task: {} } },
    { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "context_search", task: [] } },
    { jsonrpc: "2.0", id: 1, method: "ping", params: { task: { ttl: "1" } } },
    { jsonrpc: "2.0", id: 1, result: [] },
    { jsonrpc: "2.0", id: 1, result: {}, error: { code: 1, message: "m" } },
    { jsonrpc: "2.0", error: { code: 1.5, message: "m" } },
    { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 0 } },
    { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1, reason: 5 } },
  ];
  for (const message of cases) {
    const { ours, sdk } = readings(message);
    assert.deepEqual(ours, sdk, JSON.stringify(message));
  }
});

test("fuzz: messages with a member removed, replaced or added are read as the SDK's schemas read them", () => {
  const seconds = Number(process.env.ECP_FUZZ_SECONDS ?? "2");
  const seed = Number(process.env.ECP_FUZZ_SEED ?? Date.now() % 1_000_000);
  const r = random(seed);
  const until = Date.now() + seconds * 1000;
  let count = 0;
  while (Date.now() < until) {
    let message = valid(r);
    for (let times = 1 + r.below(3); times > 0; times--) message = mutated(r, message);
    const { ours, sdk } = readings(message);
    assert.deepEqual(ours, sdk, `seed ${seed}, message ${count}: ${JSON.stringify(message)}`);
    count++;
  }
  assert.ok(count > 100, `only ${count} messages in ${seconds} s`);
});
