// What a JSON-RPC message must be for the server to read it, said by hand:
// the readings the MCP TypeScript SDK 1.32.2 makes with its zod schemas
// (`JSONRPCRequestSchema`, `JSONRPCNotificationSchema`, the result and
// error responses, and the requests the server serves: `initialize`,
// `ping`, `tools/list`, `tools/call`), member for member, without loading
// zod or the SDK (together most of the memory a Node process of the
// runtime used to start with: 62 MiB where bare Node takes 40). The
// runtime's tests hold these readings to the SDK's own schemas on
// generated messages (test/messages.test.ts).
//
// The framing (./framing.ts) hands on only objects with `jsonrpc` "2.0",
// an `id` that is a string or a safe integer when there is one, and the
// members JSON-RPC has; the readings here hold on any object all the same.
//
// Part of ecp's TypeScript runtime; `ecp new` copies it verbatim.

/** A JSON object (not an array, not null). */
export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Whether `object` has its own member `key` (JSON.parse makes every member its own). */
export const has = (object: object, key: string): boolean => Object.prototype.hasOwnProperty.call(object, key);

/** `object[key]` is absent, or passes `rule` (a present `null` fails, as zod's `optional` reads it). */
const optional = (object: Record<string, unknown>, key: string, rule: (value: unknown) => boolean): boolean =>
  !has(object, key) || rule(object[key]);

const isString = (value: unknown): value is string => typeof value === "string";
const isBoolean = (value: unknown): boolean => typeof value === "boolean";
const isFiniteNumber = (value: unknown): boolean => typeof value === "number" && Number.isFinite(value);
/** A string or a safe integer: a request id or a progress token. */
export const isId = (value: unknown): value is string | number =>
  typeof value === "string" || (typeof value === "number" && Number.isSafeInteger(value));
/** Anything but `null` that is an object, arrays included (the SDK's `AssertObjectSchema`). */
const isAnyObject = (value: unknown): boolean => typeof value === "object" && value !== null;
const isRecordOf = (rule: (value: unknown) => boolean) => (value: unknown): boolean =>
  isObject(value) && Object.values(value).every(rule);

/** The key under `_meta` that names a related task. */
const RELATED_TASK = "io.modelcontextprotocol/related-task";

/** `_meta`: any members, `progressToken` a string or an integer, a related task's `taskId` a string. */
function isMeta(value: unknown): boolean {
  return (
    isObject(value) &&
    optional(value, "progressToken", isId) &&
    optional(value, RELATED_TASK, (task) => isObject(task) && isString(task.taskId))
  );
}

/** The params every request and notification may have: an object whose `_meta`, if any, is one. */
function isBaseParams(value: unknown): value is Record<string, unknown> {
  return isObject(value) && optional(value, "_meta", isMeta);
}

/** `task` on a request: an object whose `ttl`, if any, is a number. */
const isTask = (value: unknown): boolean => isObject(value) && optional(value, "ttl", isFiniteNumber);

/** Whether `message` is JSON-RPC 2.0 and has no member but `members`. */
const only = (message: Record<string, unknown>, members: readonly string[]): boolean =>
  message.jsonrpc === "2.0" && Object.keys(message).every((key) => members.includes(key));

/** A request the server can read: params, if any, are base params. */
export function isRequest(message: Record<string, unknown>): boolean {
  return (
    only(message, ["jsonrpc", "id", "method", "params"]) &&
    isString(message.method) &&
    isId(message.id) &&
    optional(message, "params", isBaseParams)
  );
}

/** A notification the server can read. */
export function isNotification(message: Record<string, unknown>): boolean {
  return only(message, ["jsonrpc", "method", "params"]) && isString(message.method) && optional(message, "params", isBaseParams);
}

/** A response (to a request the server never sent: it is read and dropped). */
export function isResponse(message: Record<string, unknown>): boolean {
  if (!only(message, ["jsonrpc", "id", "result", "error"])) return false;
  if (has(message, "result")) {
    return !has(message, "error") && isId(message.id) && isObject(message.result) && optional(message.result, "_meta", isMeta);
  }
  const error = message.error;
  return (
    optional(message, "id", isId) &&
    isObject(error) &&
    typeof error.code === "number" &&
    Number.isSafeInteger(error.code) &&
    isString(error.message)
  );
}

/** An icon of an `Implementation`. */
function isIcon(value: unknown): boolean {
  return (
    isObject(value) &&
    isString(value.src) &&
    optional(value, "mimeType", isString) &&
    optional(value, "sizes", (sizes) => Array.isArray(sizes) && sizes.every(isString)) &&
    optional(value, "theme", (theme) => theme === "light" || theme === "dark")
  );
}

/** `clientInfo`: `name` and `version` strings; `title`, `websiteUrl`, `description` strings and `icons` if any. */
function isImplementation(value: unknown): boolean {
  return (
    isObject(value) &&
    isString(value.name) &&
    isString(value.version) &&
    optional(value, "title", isString) &&
    optional(value, "websiteUrl", isString) &&
    optional(value, "description", isString) &&
    optional(value, "icons", (icons) => Array.isArray(icons) && icons.every(isIcon))
  );
}

/** `capabilities.elicitation`: an object; `form` an object whose `applyDefaults` is a boolean; `url` any object. */
function isElicitation(value: unknown): boolean {
  return (
    isObject(value) &&
    optional(value, "form", (form) => isObject(form) && optional(form, "applyDefaults", isBoolean)) &&
    optional(value, "url", isAnyObject)
  );
}

/** `capabilities.tasks`: `list` and `cancel` any objects, `requests.sampling.createMessage` and `requests.elicitation.create` too. */
function isTasks(value: unknown): boolean {
  const nested = (inner: string) => (request: unknown) => isObject(request) && optional(request, inner, isAnyObject);
  return (
    isObject(value) &&
    optional(value, "list", isAnyObject) &&
    optional(value, "cancel", isAnyObject) &&
    optional(
      value,
      "requests",
      (requests) =>
        isObject(requests) &&
        optional(requests, "sampling", nested("createMessage")) &&
        optional(requests, "elicitation", nested("create")),
    )
  );
}

/** The client's capabilities as the SDK reads them (members it does not know are ignored). */
function isClientCapabilities(value: unknown): boolean {
  return (
    isObject(value) &&
    optional(value, "experimental", isRecordOf(isAnyObject)) &&
    optional(
      value,
      "sampling",
      (sampling) => isObject(sampling) && optional(sampling, "context", isAnyObject) && optional(sampling, "tools", isAnyObject),
    ) &&
    optional(value, "elicitation", isElicitation) &&
    optional(value, "roots", (roots) => isObject(roots) && optional(roots, "listChanged", isBoolean)) &&
    optional(value, "tasks", isTasks) &&
    optional(value, "extensions", isRecordOf(isAnyObject))
  );
}

/**
 * Whether the params of a request for a method the server serves are ones
 * it can read; `undefined` for a method it does not serve. `params` is
 * absent or base params (`isRequest`).
 */
export function servedParamsReadable(method: string, params: Record<string, unknown> | undefined): boolean | undefined {
  switch (method) {
    case "initialize":
      return (
        params !== undefined &&
        isString(params.protocolVersion) &&
        isClientCapabilities(params.capabilities) &&
        isImplementation(params.clientInfo)
      );
    case "ping":
      return true;
    case "tools/list":
      return params === undefined || optional(params, "cursor", isString);
    case "tools/call":
      return (
        params !== undefined &&
        isString(params.name) &&
        optional(params, "arguments", isObject) &&
        optional(params, "task", isTask)
      );
    default:
      return undefined;
  }
}

/**
 * The `task` a request asks to run as (the SDK refuses every one: the
 * server has no task capability), or `undefined`.
 */
export function requestedTask(params: unknown): unknown {
  return isBaseParams(params) && has(params, "task") && isTask(params.task) ? params.task : undefined;
}

/** The id a `notifications/cancelled` names, when it is one the server can read. */
export function cancelledRequest(params: unknown): string | number | undefined {
  if (!isBaseParams(params) || !optional(params, "reason", isString) || !optional(params, "requestId", isId)) return undefined;
  return params.requestId as string | number | undefined;
}
