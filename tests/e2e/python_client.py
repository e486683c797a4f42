"""An independent MCP client (the official Python SDK) against a profile
server: list the tools, call context_search, and check what the SDK
validated. Prints one JSON line; exits 1 on any problem.

usage: python_client.py QUERY -- COMMAND [ARGS...]   (a stdio server)
       python_client.py QUERY --url URL               (Streamable HTTP, with
                                                       the bearer token in
                                                       ECP_E2E_BEARER)
"""
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def transport():
    if sys.argv[2] == "--url":
        token = os.environ["ECP_E2E_BEARER"]
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        return streamable_http_client(sys.argv[3], http_client=client)
    command = sys.argv[sys.argv.index("--") + 1 :]
    return stdio_client(StdioServerParameters(command=command[0], args=command[1:]))


async def main() -> int:
    query = sys.argv[1]
    async with transport() as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = (await session.list_tools()).tools
            names = [tool.name for tool in tools]
            # The SDK validates structuredContent against the declared
            # outputSchema and raises when it does not conform.
            result = await session.call_tool("context_search", {"query": query})
            text = result.content[0].text if result.content else None
            print(
                json.dumps(
                    {
                        "protocolVersion": init.protocol_version,
                        "tools": names,
                        "outputSchema": tools[0].output_schema is not None,
                        "isError": result.is_error,
                        "structuredContent": result.structured_content,
                        "text": text,
                    }
                )
            )
            ok = names == ["context_search"] and not result.is_error and result.structured_content is not None
            return 0 if ok else 1


sys.exit(asyncio.run(main()))
