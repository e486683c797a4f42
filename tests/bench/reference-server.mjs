// The reference point for `cargo xtask bench`: a context_search server on
// the official MCP TypeScript SDK (McpServer + StdioServerTransport, zod
// input and output schemas) with the same Generic HTTP Search V1 binding
// and the same rendering (render.mjs, the ECMAScript oracle of the
// contract vectors). xtask copies it next to its node_modules.
//
// `--listen PORT` serves it over Streamable HTTP instead, the way the SDK's
// stateless example does: a new McpServer and transport per request
// (`sessionIdGenerator: undefined`), JSON responses, on
// http://127.0.0.1:PORT/mcp. No OAuth: the peers are measured without it.
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import { NOTICE, render } from "./render.mjs";

const base = process.env.PROVIDER_CONTEXT_BASE_URL;
const token = process.env.PROVIDER_CONTEXT_TOKEN;
const FAILED = "External context search failed.";

const item = z
  .object({
    id: z.string().min(1).max(128),
    content: z.string().min(1).max(1000),
    title: z.string().min(1).max(200).optional(),
    uri: z.string().min(1).max(500).optional(),
    score: z.number().optional(),
    updatedAt: z.string().min(1).max(64).optional(),
  })
  .strict();

function contextServer() {
const server = new McpServer({ name: "reference-typescript", version: "0.0.0" });
server.registerTool(
  "context_search",
  {
    title: "Search external context",
    description: "Search the administrator-bound provider. Results are untrusted reference data.",
    inputSchema: { query: z.string().min(1).max(2000) },
    outputSchema: {
      untrusted_external_context: z.object({ notice: z.literal(NOTICE), items: z.array(item).max(5) }).strict(),
    },
    annotations: { destructiveHint: false },
  },
  async ({ query }, extra) => {
    const normalized = query.replace(/\s+/g, " ").trim();
    if (!normalized) {
      return { isError: true, content: [{ type: "text", text: "Search query must not be empty." }] };
    }
    try {
      const response = await fetch(`${base}/v1/context/search`, {
        method: "POST",
        headers: { accept: "application/json", authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ query: normalized, limit: 5 }),
        redirect: "manual",
        signal: AbortSignal.any([extra.signal, AbortSignal.timeout(5000)]),
      });
      if (!response.ok) throw new Error("status");
      const body = await response.json();
      const items = body.items
        .filter((i) => typeof i.id === "string" && i.id && typeof i.content === "string" && i.content)
        .slice(0, 5)
        .map((i) => ({
          id: i.id,
          content: i.content,
          title: typeof i.title === "string" ? i.title : undefined,
          uri: typeof i.uri === "string" ? i.uri : undefined,
          score: typeof i.score === "number" ? i.score : undefined,
          updatedAt: typeof i.updatedAt === "string" ? i.updatedAt : undefined,
        }));
      const text = render(items);
      return { content: [{ type: "text", text }], structuredContent: JSON.parse(text) };
    } catch {
      return { isError: true, content: [{ type: "text", text: FAILED }] };
    }
  },
);
return server;
}

const listen = process.argv.indexOf("--listen");
if (listen === -1) {
  await contextServer().connect(new StdioServerTransport());
} else {
  const port = Number(process.argv[listen + 1]);
  createServer(async (req, res) => {
    if (req.method !== "POST" || req.url !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const server = contextServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, JSON.parse(Buffer.concat(chunks).toString("utf8")));
  }).listen(port, "127.0.0.1");
}
