"""MCP over HTTP for profile_server.py (`--listen PORT`): POST /mcp with one
JSON-RPC message, answered with one JSON response; no sessions, no SSE.
Written from MCP revision 2026-07-28's transport rules, Python standard
library only; not ecp's and sharing nothing with it.

From 2026-07-28 on (by the MCP-Protocol-Version header) the standard
headers must agree with the body: Mcp-Method with the method, Mcp-Name
with a tools/call's tool name, and the header's revision with the body's
_meta (400, -32020). The defect ignore-headers serves them anyway.

Not a defect, sse-held: from 2026-07-28 on, a 200 answer comes as a
server-sent event stream (chunked; the message indented, a data line for
each of its lines, CRLF line ends, a comment and a notification first) that stays open for
120 s after the answer, as the transport allows (the server SHOULD close
it and need not): a client must take the answer's event, not the stream's
end.
"""

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import sys
import time

STATELESS_REVISION = "2026-07-28"
MAX_BODY = 4 * 1024 * 1024


def header_problem(headers, message):
    """Why the standard headers disagree with the body, or None."""
    version = headers.get("MCP-Protocol-Version")
    method = message.get("method")
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    in_meta = meta.get("io.modelcontextprotocol/protocolVersion")
    if in_meta is not None and version != in_meta:
        return "MCP-Protocol-Version does not match the request's _meta"
    if version is None or version < STATELESS_REVISION or method in (None, "initialize"):
        return None
    said = headers.get_all("Mcp-Method") or []
    if len(said) != 1 or said[0] != method:
        return "Mcp-Method does not match the body's method"
    if method == "tools/call":
        names = headers.get_all("Mcp-Name") or []
        if len(names) != 1 or names[0] != params.get("name"):
            return "Mcp-Name does not match the tool's name"
    return None


def serve(port, handle, sink, defect):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def respond(self, status, body=None, extra=()):
            data = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
            self.send_response(status)
            for name, value in extra:
                self.send_header(name, value)
            if body is not None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def stream(self, body):
            """body as one held-open event stream (sse-held)."""
            # Indented: one data line a line of JSON, joined again with LF.
            lines = json.dumps(body, indent=1).split("\n")
            notification = {"jsonrpc": "2.0", "method": "notifications/message",
                            "params": {"level": "info", "data": "held"}}
            events = (": held open\r\n\r\n"
                      + "data: " + json.dumps(notification) + "\r\n\r\n"
                      + "event: message\r\n"
                      + "".join("data:" + line + "\r\n" for line in lines)
                      + "\r\n")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            data = events.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            time.sleep(120)
            try:
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass  # the client took its answer and left

        def refuse_method(self):
            self.respond(405, extra=[("Allow", "POST")])

        do_GET = refuse_method
        do_DELETE = refuse_method
        do_PUT = refuse_method

        def do_POST(self):
            if self.path != "/mcp":
                self.respond(404)
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self.respond(413)
                return
            if not (self.headers.get("Content-Type") or "").startswith("application/json"):
                self.respond(415)
                return
            try:
                message = json.loads(self.rfile.read(length))
            except ValueError:
                self.respond(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error."}})
                return
            if not isinstance(message, dict):
                self.respond(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid request."}})
                return
            request_id = message.get("id")
            problem = header_problem(self.headers, message)
            if problem is not None and defect != "ignore-headers":
                self.respond(400, {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32020, "message": problem}})
                return
            sink.messages = []
            try:
                handle(message)
                answers = [m for m in sink.messages if m.get("id") == request_id]
            finally:
                sink.messages = None
            if request_id is None or not answers:
                self.respond(202)
                return
            answer = answers[0]
            code = (answer.get("error") or {}).get("code")
            text = (answer.get("error") or {}).get("message") or ""
            meta_refused = code == -32602 and text.startswith("Invalid params: the request _meta")
            if code in (-32020, -32022) or meta_refused:
                status = 400
            elif code == -32601:
                status = 404
            else:
                status = 200
            version = self.headers.get("MCP-Protocol-Version") or ""
            if defect == "sse-held" and status == 200 and version >= STATELESS_REVISION:
                self.stream(answer)
                return
            self.respond(status, answer)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    sys.stdout.write("http://127.0.0.1:%d/mcp\n" % server.server_address[1])
    sys.stdout.flush()
    server.serve_forever()
