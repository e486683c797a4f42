// The MCP runtime around a Provider: the one `context_search` tool on the
// runtime's own MCP server over stdio (./server.ts, answering as the
// official MCP TypeScript SDK's `Server` did), with the profile's input rules,
// rendering, stable redacted errors, a provider budget inside the client's
// timeout, cancellation that aborts the provider's request, and no retry.
// Part of ecp's TypeScript runtime; `ecp new` copies it verbatim. Edit
// src/provider.ts instead.

import { setFlagsFromString } from "node:v8";

import {
  DEFAULT_BUDGET_MS,
  MAX_BUDGET_MS,
  MAX_ITEMS,
  type ProviderItem,
  SEARCH_FAILED,
  TOOL,
  TOOL_NAME,
} from "../profile/contract.js";
import { queryFromArguments } from "../profile/query.js";
import { render } from "../profile/render.js";
import { ProviderError } from "./error.js";
import { FramedStdioTransport } from "./framing.js";
import {
  autoRecallQuery,
  HOOK_WALL_CLOCK_MS,
  hookInput,
  hookOutput,
  hookSettings,
  isWithin,
  readHookInput,
  resolvedRoot,
} from "./hook.js";
import { configuredCredentials } from "./http.js";
import type { Provider } from "./provider.js";
import { type CallToolResult, ErrorCode, McpServer, RpcError } from "./server.js";

export { ProviderError } from "./error.js";
export { FramedStdioTransport, judge, MAX_DEPTH, MAX_LINE_BYTES } from "./framing.js";
export { autoRecallQuery, HOOK_NAME, hookSettings } from "./hook.js";
export { baseUrl, configuredCredentials, type Credential, isUnset, joinUnder, MAX_BODY_BYTES, Upstream, UpstreamRequest } from "./http.js";
export type { Provider } from "./provider.js";
export { McpServer, PROTOCOL_VERSIONS } from "./server.js";
export { HttpSearchProvider, itemFromJson, itemsFromDocument, SEARCH_PATH } from "./v1.js";

/**
 * The items the runtime renders: those whose `id` and `content` are
 * non-empty strings, in provider order (the renderer then keeps the first
 * five). Dropping them before the five are kept is the V1 binding's rule,
 * so a mapping need neither filter nor limit. An item that is not an
 * object at all is kept, and fails the call (a mapping gone wrong).
 */
export function usableItems(items: readonly ProviderItem[]): ProviderItem[] {
  return items.filter(
    (item) =>
      item === null ||
      typeof item !== "object" ||
      (typeof item.id === "string" && item.id !== "" && typeof item.content === "string" && item.content !== ""),
  );
}

export interface AdapterOptions {
  /** The server name (the extension name). */
  name: string;
  version: string;
  /** The provider budget in milliseconds (default 5000). */
  budgetMs?: number;
}

/** One line on stderr: `name: message`. Never the query or a credential. */
export function log(name: string, message: string): void {
  process.stderr.write(`${name}: ${message}\n`);
}

type Outcome = { found: ProviderItem[] } | { failed: string } | { cancelled: true };

/** Runs one search within the budget; a provider that ignores the signal is abandoned, not awaited. */
async function searchWithin(
  provider: Provider,
  query: string,
  budgetMs: number,
  cancelled: AbortSignal,
): Promise<Outcome> {
  // One signal for the provider: the budget or the client's cancellation
  // (combined by hand: AbortSignal.any needs Node 20.3).
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outOfTime = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve({ failed: "provider budget exceeded" });
    }, budgetMs);
  });
  const whenCancelled = new Promise<Outcome>((resolve) => {
    const cancel = () => {
      controller.abort();
      resolve({ cancelled: true });
    };
    if (cancelled.aborted) cancel();
    else cancelled.addEventListener("abort", cancel, { once: true });
  });
  // A provider that throws before it returns a promise fails like any other.
  const searched = Promise.resolve()
    .then(() => provider.search(query, MAX_ITEMS, controller.signal))
    .then(
    (items): Outcome => ({ found: Array.isArray(items) ? items : [] }),
    (error: unknown): Outcome => ({
      failed: error instanceof ProviderError ? error.reason : "the provider failed",
    }),
  );
  try {
    return await Promise.race([searched, outOfTime, whenCancelled]);
  } finally {
    clearTimeout(timer);
  }
}

const failure = (text: string): CallToolResult => ({ content: [{ type: "text", text }], isError: true });

/** The MCP server offering `context_search` around `provider`, not yet connected. */
export function contextSearchServer(provider: Provider, options: AdapterOptions): McpServer {
  const budgetMs = options.budgetMs ?? DEFAULT_BUDGET_MS;
  return new McpServer({ name: options.name, version: options.version, tool: TOOL, callTool });

  async function callTool(params: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> {
    // An unknown tool: the Rust runtime's answer (-32602, this message).
    if (params.name !== TOOL_NAME) throw new RpcError(ErrorCode.InvalidParams, "Unknown tool: this server offers only context_search.");
    const input = queryFromArguments(params.arguments);
    if (!input.ok) return failure(input.message);
    let outcome = await searchWithin(provider, input.query, budgetMs, signal);
    if ("found" in outcome) {
      try {
        const envelope = render(usableItems(outcome.found));
        return { content: [{ type: "text", text: envelope.text }], structuredContent: envelope.structuredContent };
      } catch {
        // Items that are not objects (a provider's own mapping gone wrong).
        outcome = { failed: "the provider returned items that cannot be rendered" };
      }
    }
    if ("failed" in outcome) log(options.name, `context_search failed: ${outcome.failed}`);
    else log(options.name, "context_search cancelled by the client");
    return failure(SEARCH_FAILED);
  }
}

/** The budget from `variable` (milliseconds, 1 to 600000), or the default; `undefined` with a message when it is refused. */
export function budgetFromEnv(variable: string): { budgetMs: number } | { refused: string } {
  const raw = process.env[variable];
  if (raw === undefined || raw.trim() === "" || /^\$\{.*\}$/.test(raw.trim())) return { budgetMs: DEFAULT_BUDGET_MS };
  const value = Number(raw.trim());
  if (!/^[0-9]+$/.test(raw.trim()) || value < 1 || value > MAX_BUDGET_MS) {
    return { refused: `${variable} must be a whole number of milliseconds from 1 to ${MAX_BUDGET_MS}` };
  }
  return { budgetMs: value };
}

/**
 * Holds V8's heap growth in, on Node 20 (V8 11) only. A server of one tool
 * keeps about 6 MiB alive, but V8 grows its young generation to 16 MiB a
 * half and lets the old one swell between collections: measured
 * 2026-12-07 on Node 20.20.2 (sequential calls over stdio, three items of
 * 300 code points each), peak RSS 63 MiB after 2000 calls, 73 after 5000
 * and 88 after 20000; with the young generation kept at its start size and
 * the old one grown by half its live size, 61 MiB after 5000 and 62 after
 * 20000, at the same time a call. Both are heuristics V8 reads at each
 * collection, so setting them after start takes effect (the heap's size
 * limits, read at start, do not). On Node 22 and 24 (V8 12 and 13) they
 * changed nothing measured (65 and 78 MiB after 5000 calls), so they are
 * left alone there.
 */
function holdHeapGrowth(): void {
  if (!process.versions.v8.startsWith("11.")) return;
  setFlagsFromString("--semi-space-growth-factor=1");
  setFlagsFromString("--heap-growing-percent=50");
}

/** Why an Auto Recall added nothing: quietly (not a prompt for it), or a failure worth one stderr line. */
class Nothing {
  constructor(readonly reason?: string) {}
}

/** One Auto Recall for the prompt on `input`: the context, or why there is none. */
async function recall(
  args: readonly string[],
  makeProvider: () => Provider,
  input: AsyncIterable<Buffer | string>,
): Promise<string | undefined> {
  const settings = hookSettings(args);
  if ("refused" in settings) throw new Nothing(settings.refused);
  const bytes = await readHookInput(input);
  const prompt = bytes === undefined ? undefined : hookInput(bytes);
  if (prompt === undefined) throw new Nothing();
  const root = resolvedRoot(settings.repositoryRoot);
  if (root === undefined) throw new Nothing("the repository root is not an absolute path to a folder");
  if (!isWithin(root, prompt.cwd)) throw new Nothing();
  let provider: Provider;
  try {
    provider = makeProvider();
  } catch (error) {
    throw new Nothing(`configuration error: ${error instanceof Error ? error.message : "the provider could not be configured"}`);
  }
  const query = autoRecallQuery(prompt.submittedPrompt, configuredCredentials());
  if (query === undefined) throw new Nothing();
  const outcome = await searchWithin(provider, query, settings.timeoutMs, new AbortController().signal);
  if (!("found" in outcome)) throw new Nothing(`the search failed: ${"failed" in outcome ? outcome.failed : "cancelled"}`);
  const items = usableItems(outcome.found);
  if (items.length === 0) return undefined;
  try {
    return render(items).text;
  } catch {
    throw new Nothing("the search failed: the provider returned items that cannot be rendered");
  }
}

/**
 * Qwen's Auto Recall hook, once: reads the hook input on stdin, prints the
 * context or `{}`, and exits 0 whatever happens (fail open), within 6500 ms.
 * `args` are those after `--hook`.
 */
export async function runHook(name: string, args: readonly string[], makeProvider: () => Provider): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outOfTime = new Promise<string | undefined>((_, reject) => {
    timer = setTimeout(() => reject(new Nothing("the hook ran out of time")), HOOK_WALL_CLOCK_MS);
  });
  const work = recall(args, makeProvider, process.stdin);
  // A search that fails after the wall clock is nobody's to report.
  work.catch(() => undefined);
  let context: string | undefined;
  try {
    context = await Promise.race([work, outOfTime]);
  } catch (error) {
    const reason = error instanceof Nothing ? error.reason : "an unexpected error";
    if (reason !== undefined) log(name, `auto recall added nothing: ${reason}`);
  }
  clearTimeout(timer);
  // Exit once written: a provider that ignores its signal, or stdin still
  // open, must not keep the hook alive; a stdout gone is no failure either.
  process.stdout.on("error", () => process.exit(0));
  process.stdout.write(hookOutput(context), () => process.exit(0));
}

/**
 * The entry point (`--hook ...` runs Auto Recall once, `runHook`): builds the provider (a configuration error is one line on
 * stderr and exit 1; a refused budget exit 2), then serves MCP on stdio
 * until stdin closes and the calls in flight have answered.
 */
export async function main(options: AdapterOptions & { budgetEnv?: string }, makeProvider: () => Provider): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === "--hook") return runHook(options.name, args.slice(1), makeProvider);
  let budgetMs = options.budgetMs;
  if (budgetMs === undefined && options.budgetEnv !== undefined) {
    const budget = budgetFromEnv(options.budgetEnv);
    if ("refused" in budget) {
      log(options.name, budget.refused);
      process.exit(2);
    }
    budgetMs = budget.budgetMs;
  }
  let provider: Provider;
  try {
    provider = makeProvider();
  } catch (error) {
    log(options.name, error instanceof Error ? error.message : "the provider could not be configured");
    process.exit(1);
  }
  holdHeapGrowth();
  const server = contextSearchServer(provider, { ...options, budgetMs });
  // Never a silent end: whatever escapes, a stdout gone (the client went
  // away; the Rust runtime reads on until stdin ends) or stdin failing, is
  // one line on stderr and exit 1. The line names the kind of error, never
  // its message (which could hold provider data), as the Rust runtime's
  // panic line does.
  const fatal = (what: string) => (error: unknown) => {
    const code = (error as { code?: unknown } | null)?.code;
    const kind = error instanceof Error ? `${error.name}${typeof code === "string" ? ` ${code}` : ""}` : typeof error;
    log(options.name, `${what} (${kind.slice(0, 100)})`);
    process.exit(1);
  };
  process.on("uncaughtException", fatal("stopped on an unexpected error"));
  process.on("unhandledRejection", fatal("stopped on an unexpected error"));
  process.stdout.on("error", fatal("cannot write to stdout"));
  process.stdin.on("error", fatal("cannot read stdin"));
  // When stdin closes, nothing is left to keep Node running but the calls in
  // flight: it exits once they have answered (within the budget).
  await server.connect(new FramedStdioTransport());
}
