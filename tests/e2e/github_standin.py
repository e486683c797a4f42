"""A stand-in for the parts of GitHub that Qwen Code's extension installer
talks to, served over HTTPS on 127.0.0.1:443 inside a test's own network
namespace (where api.github.com, github.com, objects.githubusercontent.com
and raw.githubusercontent.com resolve to 127.0.0.1 through a bind-mounted
hosts file).

    python3 github_standin.py STATE.json CERT.pem KEY.pem LOG.jsonl READY

STATE.json is read on every request, so a test changes the releases
between two runs of the installer:

    {"repos": {"acme/acme-context": {
        "latest": "v0.1.0",
        "releases": {"v0.1.0": {"dir": "/path/to/release-folder",
                                "assets": ["SHA256SUMS", "linux.x64...."]}}}}}

`assets` is the order of the release's asset list (GitHub's order, which
the installer's first-match lookup depends on). What is served:

- api.github.com /repos/O/R/releases/latest and /releases/tags/T: the
  release JSON (tag_name, assets with name, size, browser_download_url);
- api.github.com /repos/O/R/contents/...: 404 (no marketplace file);
- github.com /O/R/releases/download/T/NAME: a 302 to
  objects.githubusercontent.com, as GitHub does;
- objects.githubusercontent.com /O/R/T/NAME: the file's bytes;
- anything else: 404.

Every request is appended to LOG.jsonl as {"host", "path", "status"}.
READY is created once the socket listens.
"""

import http.server
import json
import os
import ssl
import sys
import urllib.parse

STATE, CERT, KEY, LOG, READY = sys.argv[1:6]


def state():
    with open(STATE, encoding="utf-8") as f:
        return json.load(f)


def release_json(owner_repo, tag, release):
    assets = []
    for index, name in enumerate(release["assets"]):
        path = os.path.join(release["dir"], name)
        assets.append(
            {
                "id": index + 1,
                "name": name,
                "size": os.path.getsize(path),
                "content_type": "application/octet-stream",
                "url": f"https://api.github.com/repos/{owner_repo}/releases/assets/{index + 1}",
                "browser_download_url": f"https://github.com/{owner_repo}/releases/download/{tag}/{urllib.parse.quote(name)}",
            }
        )
    return {
        "tag_name": tag,
        "name": tag,
        "draft": False,
        "prerelease": False,
        "assets": assets,
        "tarball_url": f"https://api.github.com/repos/{owner_repo}/tarball/{tag}",
        "zipball_url": f"https://api.github.com/repos/{owner_repo}/zipball/{tag}",
    }


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", content_type="application/json", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        # Logged before the body goes out: the test reads the log as soon
        # as the client exits.
        host = (self.headers.get("Host") or "").split(":")[0]
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps({"host": host, "path": self.path, "status": status}) + "\n")
        self.end_headers()
        self.wfile.write(body)

    def not_found(self):
        self.answer(404, b'{"message":"Not Found"}')

    def do_GET(self):
        host = (self.headers.get("Host") or "").split(":")[0]
        path = urllib.parse.urlsplit(self.path).path
        parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
        repos = state()["repos"]
        if host == "api.github.com" and len(parts) >= 4 and parts[0] == "repos":
            owner_repo = f"{parts[1]}/{parts[2]}"
            repo = repos.get(owner_repo)
            if repo is None or parts[3] != "releases":
                return self.not_found()
            if parts[4:] == ["latest"]:
                tag = repo["latest"]
            elif len(parts) == 6 and parts[4] == "tags":
                tag = parts[5]
            else:
                return self.not_found()
            release = repo["releases"].get(tag)
            if release is None:
                return self.not_found()
            body = json.dumps(release_json(owner_repo, tag, release)).encode()
            return self.answer(200, body)
        if host == "github.com" and len(parts) == 6 and parts[2:4] == ["releases", "download"]:
            owner_repo, tag, name = f"{parts[0]}/{parts[1]}", parts[4], parts[5]
            location = f"https://objects.githubusercontent.com/{owner_repo}/{tag}/{urllib.parse.quote(name)}"
            return self.answer(302, b"", "text/plain", [("Location", location)])
        if host == "objects.githubusercontent.com" and len(parts) == 4:
            owner_repo, tag, name = f"{parts[0]}/{parts[1]}", parts[2], parts[3]
            repo = repos.get(owner_repo)
            release = repo and repo["releases"].get(tag)
            if not release or name not in release["assets"] or "/" in name:
                return self.not_found()
            with open(os.path.join(release["dir"], name), "rb") as f:
                body = f.read()
            return self.answer(200, body, "application/octet-stream")
        return self.not_found()


server = http.server.ThreadingHTTPServer(("127.0.0.1", 443), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(CERT, KEY)
server.socket = context.wrap_socket(server.socket, server_side=True)
open(READY, "w").close()
server.serve_forever()
