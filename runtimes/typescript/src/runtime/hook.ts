// Auto Recall: the provider as Qwen Code's UserPromptSubmit command hook
// (`node dist/main.js --hook user-prompt-submit --repository-root DIR`).
// The contract is that of Qwen's own hook (@qwen-code/external-context-mem0,
// src/auto-recall.ts) and of the Rust runtime's `hook` module, which holds
// the same rules: only `submitted_prompt` is read (at most 1 MiB of input),
// only when `cwd` is inside the repository root; the query is the prompt
// without fenced code, credentials and secret shapes, at most 512 code
// points; one search within the provider timeout (100 to 5000 ms, default
// 1500), the whole hook within 6500 ms; the output is the profile's
// envelope as `additionalContext`, and `{}` on anything else (fail open).
// Part of ecp's TypeScript runtime; `ecp new` copies it verbatim.

import { realpathSync, statSync } from "node:fs";
import { isAbsolute, parse, relative, sep } from "node:path";

export const HOOK_EVENT = "UserPromptSubmit";
export const HOOK_NAME = "user-prompt-submit";
export const MAX_HOOK_INPUT_BYTES = 1024 * 1024;
export const HOOK_WALL_CLOCK_MS = 6500;
export const DEFAULT_HOOK_TIMEOUT_MS = 1500;
export const MAX_SANITIZED_CODE_POINTS = 4096;
export const MAX_AUTO_RECALL_QUERY_CODE_POINTS = 512;
/** What a hook prints when it adds nothing. */
export const NOTHING = "{}";

const codePoints = (text: string, most: number) => Array.from(text).slice(0, most).join("");

// Each rule of the query, in order (the Rust runtime's hook/query.rs says
// them in words). Without the `u` flag, \w and \b are ASCII.
const CLOSED_FENCE = /(```|~~~)[^]*?\1/g;
const UNCLOSED_FENCE = /(?:```|~~~)[^]*$/;
const SECRET_SHAPES = [
  /["']?[\w.-]*(?:api[-_]?key|token|password|secret)[\w.-]*["']?[^\S\r\n]*[:=][^\S\r\n]*(?:"[^"\r\n]*"|'[^'\r\n]*'|[^\s,;]+)?/gi,
  /\bbearer\s+[\w.~+/=-]+/gi,
  /\b[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}\b/g,
  /\b[\w-]{32,}\b/g,
];

/** The query an Auto Recall search sends for `submitted`, without any of `credentials`; undefined when nothing is left. */
export function autoRecallQuery(submitted: string, credentials: readonly string[]): string | undefined {
  let text = codePoints(submitted, MAX_SANITIZED_CODE_POINTS).replace(CLOSED_FENCE, " ").replace(UNCLOSED_FENCE, " ");
  for (const credential of credentials) if (credential !== "") text = text.split(credential).join(" ");
  for (const shape of SECRET_SHAPES) text = text.replace(shape, " ");
  const query = text.replace(/\s+/g, " ").trim();
  return query === "" ? undefined : codePoints(query, MAX_AUTO_RECALL_QUERY_CODE_POINTS);
}

export interface HookSettings {
  repositoryRoot: string;
  timeoutMs: number;
}

/** `user-prompt-submit --repository-root DIR [--timeout-ms N]`, the arguments after `--hook`. */
export function hookSettings(args: readonly string[]): HookSettings | { refused: string } {
  const [hook, ...rest] = args;
  if (hook !== HOOK_NAME) return { refused: `--hook needs the hook's name: ${HOOK_NAME}` };
  let repositoryRoot: string | undefined;
  let timeoutMs = DEFAULT_HOOK_TIMEOUT_MS;
  for (let i = 0; i < rest.length; i++) {
    const flag = rest[i] ?? "";
    const equals = flag.indexOf("=");
    const name = equals < 0 ? flag : flag.slice(0, equals);
    const value = equals < 0 ? rest[++i] : flag.slice(equals + 1);
    if (value === undefined) return { refused: `${name} needs a value` };
    if (name === "--repository-root") repositoryRoot = value;
    else if (name === "--timeout-ms") {
      timeoutMs = /^[0-9]+$/.test(value) ? Number(value) : Number.NaN;
      if (!(timeoutMs >= 100 && timeoutMs <= 5000)) {
        return { refused: "--timeout-ms must be a whole number of milliseconds from 100 to 5000" };
      }
    } else return { refused: `unknown hook flag ${name}` };
  }
  if (repositoryRoot === undefined) return { refused: "--hook needs --repository-root DIR" };
  return { repositoryRoot, timeoutMs };
}

export interface HookInput {
  submittedPrompt: string;
  cwd: string;
}

/** The input of a UserPromptSubmit hook with a non-blank `submitted_prompt` and a `cwd`; anything else is none. */
export function hookInput(bytes: Buffer): HookInput | undefined {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString("utf8"));
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  const submitted = record["submitted_prompt"];
  const cwd = record["cwd"];
  if (record["hook_event_name"] !== HOOK_EVENT || typeof submitted !== "string" || typeof cwd !== "string") {
    return undefined;
  }
  return submitted.trim() === "" ? undefined : { submittedPrompt: submitted, cwd };
}

/** The repository root resolved: an existing folder that is not a file system root. */
export function resolvedRoot(root: string): string | undefined {
  if (!isAbsolute(root)) return undefined;
  try {
    const resolved = realpathSync(root);
    return statSync(resolved).isDirectory() && parse(resolved).root !== resolved ? resolved : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `cwd` resolves to a folder inside `root` (resolved). */
export function isWithin(root: string, cwd: string): boolean {
  if (!isAbsolute(cwd)) return false;
  try {
    const resolved = realpathSync(cwd);
    if (!statSync(resolved).isDirectory()) return false;
    const path = relative(root, resolved);
    return path === "" || (path !== ".." && !path.startsWith(`..${sep}`) && !isAbsolute(path));
  } catch {
    return false;
  }
}

/** The hook's output: `{}` or the context. */
export function hookOutput(context: string | undefined): string {
  return context === undefined
    ? NOTHING
    : JSON.stringify({ hookSpecificOutput: { hookEventName: HOOK_EVENT, additionalContext: context } });
}

/** Reads stdin up to the bound; more is no input. */
export async function readHookInput(stream: AsyncIterable<Buffer | string>): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    const bytes = Buffer.from(chunk);
    total += bytes.byteLength;
    if (total > MAX_HOOK_INPUT_BYTES) return undefined;
    chunks.push(bytes);
  }
  return Buffer.concat(chunks);
}
