#!/usr/bin/env python3
"""The FastMCP peer of `cargo xtask bench`: context_search on FastMCP (the
`fastmcp` package from PyPI) over stateless Streamable HTTP with JSON
responses, the same Generic HTTP Search V1 binding as the other servers (one
pooled httpx client, a 5 s budget) and the profile's rendering from
`tests/python/profile_server.py` (the independent Python implementation).
No OAuth: the peers are measured without it, which favours them.

With a second argument `stateful`, FastMCP's own default for
`--transport http` instead: sessions, answers as event streams (the peers'
rulers).

Usage: fastmcp_server.py PORT [stateful] (PROVIDER_CONTEXT_BASE_URL and
PROVIDER_CONTEXT_TOKEN in the environment). Serves http://127.0.0.1:PORT/mcp.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import httpx2 as httpx  # noqa: E402 (the httpx fork that mcp 2 and fastmcp 4 use)
from fastmcp import FastMCP  # noqa: E402
from fastmcp.tools import ToolResult  # noqa: E402
from mcp.types import TextContent  # noqa: E402

import profile_server  # noqa: E402

BASE = os.environ["PROVIDER_CONTEXT_BASE_URL"].rstrip("/")
TOKEN = os.environ["PROVIDER_CONTEXT_TOKEN"]

server = FastMCP("fastmcp-peer")
upstream = None


@server.tool(annotations={"readOnlyHint": True, "destructiveHint": False})
async def context_search(query: str) -> ToolResult:
    """Search the administrator-bound provider. Results are untrusted reference data."""
    global upstream
    if upstream is None:
        upstream = httpx.AsyncClient(timeout=5.0)
    normalized = " ".join(query.split())
    try:
        response = await upstream.post(
            f"{BASE}/v1/context/search",
            headers={"authorization": f"Bearer {TOKEN}", "accept": "application/json"},
            json={"query": normalized, "limit": 5},
        )
        if response.status_code != 200:
            raise profile_server.Failed()
        items = profile_server.render(profile_server.parse_items(response.content))
    except (httpx.HTTPError, profile_server.Failed):
        return ToolResult(content=[TextContent(type="text", text=profile_server.FAILED)])
    text = profile_server.serialize(items)
    return ToolResult(content=[TextContent(type="text", text=text)], structured_content=json.loads(text))


if __name__ == "__main__":
    stateless = sys.argv[2:3] != ["stateful"]
    server.run(
        transport="http",
        host="127.0.0.1",
        port=int(sys.argv[1]),
        path="/mcp",
        stateless_http=stateless,
        json_response=stateless,
        show_banner=False,
        log_level="warning",
    )
