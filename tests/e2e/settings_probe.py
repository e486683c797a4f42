#!/usr/bin/env python3
"""A tiny MCP server that records the environment it was started with.

usage: settings_probe.py OUTFILE   (writes {"env": {...}} at start)
"""
import json
import os
import sys

with open(sys.argv[1], "w") as f:
    json.dump({"env": dict(os.environ)}, f)

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "settings-probe", "version": "0"},
        }
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    elif method == "tools/list":
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}}
    else:
        reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not found"}}
    print(json.dumps(reply), flush=True)
