#!/usr/bin/env python3
"""A loopback stand-in for a Mem0-compatible memory service's search API,
for the tests of targets that take their endpoint from a configuration
file (tests/it/config_file.rs). The real service (Mem0's platform, or its
open-source server with a vector store and an embedding model) cannot run
on the machines that test ecp; this answers the one request Qwen's
provider sends through the dialect the tests use:

    POST {base}/v2/memories/search/
    Authorization: Token <MEM0_API_KEY>
    {"query": "...", "filters": {"user_id": "..."}, "top_k": 5}

with Mem0's v2 answer, a top-level array of memories
`{"id", "memory", "score", "updated_at", ...}` whose memory holds every
word of the query, for that user only, best first, at most top_k. A wrong
key is 401, a wrong path 404, a body that is not that request 400.

Only the Python standard library. `--base PATH` serves under that path
prefix. Prints `http://127.0.0.1:PORT<PATH>` on stdout, then serves until
stdin closes.
"""

import http.server
import json
import os
import sys
import threading

MEMORIES = [
    ("m-101", "repo-memory", "The release train leaves every Tuesday at 14:00 UTC.", 0.91),
    ("m-102", "repo-memory", "Hotfixes ride the release train only with a second reviewer.", 0.84),
    ("m-103", "repo-memory", "Deployment freezes start on the last Friday of the quarter.", 0.55),
    ("m-104", "someone-else", "The release train for the other team runs on Mondays.", 0.99),
    ("m-105", "repo-memory", "Release notes are drafted from merged pull requests; the train waits for them.", 0.77),
]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    base = ""
    key = ""

    def log_message(self, *args):
        pass

    def answer(self, status, document):
        data = json.dumps(document).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.answer(405, {"detail": "Method not allowed"})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if self.path != self.base + "/v2/memories/search/":
            self.answer(404, {"detail": "Not found"})
            return
        if self.headers.get("authorization") != "Token " + self.key:
            self.answer(401, {"detail": "Invalid API key"})
            return
        try:
            body = json.loads(raw.decode("utf-8"))
            query = body["query"]
            user = body["filters"]["user_id"]
            top_k = int(body.get("top_k", 10))
            if not isinstance(query, str) or not isinstance(user, str):
                raise ValueError()
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            self.answer(400, {"detail": "Invalid search request"})
            return
        words = [w for w in query.lower().split() if w]
        found = [
            {
                "id": mid,
                "memory": text,
                "user_id": owner,
                "score": score,
                "updated_at": "2026-11-02T09:30:00Z",
                "categories": ["engineering"],
            }
            for mid, owner, text, score in MEMORIES
            if owner == user and words and all(w in text.lower() for w in words)
        ]
        found.sort(key=lambda m: -m["score"])
        self.answer(200, found[:top_k])


def main():
    args = sys.argv[1:]
    base = ""
    if len(args) == 2 and args[0] == "--base":
        base = args[1].rstrip("/")
    Handler.base = base
    Handler.key = os.environ.get("MEM0_API_KEY", "")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("http://127.0.0.1:%d%s" % (server.server_address[1], base), flush=True)
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
