// The MCP server of the one tool, on any Transport (./framing.ts's on
// stdio): `initialize`, `ping`, `tools/list` and `tools/call`, every other
// method -32601 naming it, `notifications/cancelled` aborting the call it
// names, and nothing answered for a call once it is cancelled. Its answers
// are those the MCP TypeScript SDK 1.32.2's `Server` gave the runtime
// before (version negotiation, members in the order the SDK wrote them, a
// request asking for a task refused as the SDK refuses it), without
// loading the SDK: see ./messages.ts for why. One difference, towards the
// Rust runtime: a cancellation of the request with id 0 cancels it (the
// SDK's check of the id skipped 0).
//
// Part of ecp's TypeScript runtime; `ecp new` copies it verbatim.

import type { JSONRPCMessage, Transport } from "./framing.js";
import { cancelledRequest, has, isObject, requestedTask } from "./messages.js";

/** The protocol versions the server speaks, newest first (the SDK 1.32.2's list). */
export const PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"];

/** JSON-RPC's error codes the server answers with. */
export const ErrorCode = { InvalidParams: -32602, MethodNotFound: -32601, InternalError: -32603 } as const;

/** An error answered to the client: its code and its message, nothing else. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** What `tools/call` answers: the result, in the members' order the SDK wrote. */
export interface CallToolResult {
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: true;
}

/** The server's parts: its name and version, its one tool, and the handler of `tools/call`. */
export interface ServerParts {
  name: string;
  version: string;
  tool: object;
  /** `params` as the client sent them (an object with a string `name`); `signal` aborts on cancellation. */
  callTool(params: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult>;
}

/** The MCP server: connect it to a transport, and it serves until the transport closes. */
export class McpServer {
  #transport: Transport | undefined;
  readonly #inFlight = new Map<string | number, AbortController>();

  constructor(private readonly parts: ServerParts) {}

  /** Serves on `transport` (started here). */
  async connect(transport: Transport): Promise<void> {
    this.#transport = transport;
    transport.onmessage = (message) => this.#receive(message);
    transport.onclose = () => this.#closed();
    await transport.start();
  }

  /** Closes the transport: the calls in flight are aborted and answer nothing. */
  async close(): Promise<void> {
    await this.#transport?.close();
  }

  #closed(): void {
    for (const controller of this.#inFlight.values()) controller.abort();
    this.#inFlight.clear();
    this.#transport = undefined;
  }

  #receive(message: JSONRPCMessage): void {
    // A response: the server asks nothing, so there is nothing to match it to.
    if (typeof message.method !== "string") return;
    if (!has(message, "id")) {
      if (message.method === "notifications/cancelled") {
        const id = cancelledRequest(message.params);
        if (id !== undefined) this.#inFlight.get(id)?.abort();
      }
      return;
    }
    this.#request(message.id as string | number, message.method, isObject(message.params) ? message.params : undefined);
  }

  #request(id: string | number, method: string, params: Record<string, unknown> | undefined): void {
    const transport = this.#transport;
    const controller = new AbortController();
    this.#inFlight.set(id, controller);
    const answer = (reply: object) => (controller.signal.aborted ? undefined : transport?.send({ jsonrpc: "2.0", id, ...reply }));
    Promise.resolve()
      .then(() => this.#handle(method, params, controller.signal))
      .then(
        (result) => answer({ result }),
        (error: unknown) => {
          const code = error instanceof RpcError ? error.code : ErrorCode.InternalError;
          const message = error instanceof Error ? error.message : "Internal error";
          return answer({ error: { code, message } });
        },
      )
      .catch(() => undefined)
      .finally(() => {
        if (this.#inFlight.get(id) === controller) this.#inFlight.delete(id);
      });
  }

  async #handle(method: string, params: Record<string, unknown> | undefined, signal: AbortSignal): Promise<object> {
    if (requestedTask(params) !== undefined) {
      throw new RpcError(ErrorCode.InternalError, `Server does not support task creation (required for ${method})`);
    }
    switch (method) {
      case "initialize": {
        const requested = params?.protocolVersion;
        const protocolVersion =
          typeof requested === "string" && PROTOCOL_VERSIONS.includes(requested) ? requested : PROTOCOL_VERSIONS[0];
        return {
          protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: this.parts.name, version: this.parts.version },
        };
      }
      case "ping":
        return {};
      case "tools/list":
        return { tools: [this.parts.tool] };
      case "tools/call":
        return this.parts.callTool(params ?? {}, signal);
      default:
        throw new RpcError(ErrorCode.MethodNotFound, method);
    }
  }
}
