#!/usr/bin/env python3
"""A person at a browser, for Qwen Code's OAuth flow in the end-to-end suite.

Qwen Code opens the authorization URL with the command in `BROWSER`; this
script is that command. It does what a person does: it loads the page,
follows redirects (keeping cookies), fills the login form with a user name
and password, submits it, then submits the consent form as shown, until the
authorization server redirects to Qwen's loopback callback; it loads that
page too and checks that Qwen says the authentication succeeded.

It forks into the background at once (a browser returns to its caller), and
writes what it saw, one JSON object, to the file in `ECP_BROWSER_LOG`.

Usage: browser.py URL
"""

import http.cookiejar
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from html.parser import HTMLParser

USER = "ada@example.test"


class Forms(HTMLParser):
    """The forms of a page: action, method and the inputs with their values."""

    def __init__(self):
        super().__init__()
        self.forms = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append(
                {"action": attrs.get("action", ""), "method": attrs.get("method", "get").lower(), "fields": []}
            )
        elif tag in ("input", "button") and self.forms:
            if attrs.get("name"):
                self.forms[-1]["fields"].append((attrs.get("type", "text").lower(), attrs["name"], attrs.get("value", "")))


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def browse(url, log):
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)
    steps = []
    method, data = "GET", None
    for _ in range(20):
        request = urllib.request.Request(url, data=data, method=method)
        try:
            response = opener.open(request, timeout=10)
            status, headers, body = response.status, response.headers, response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as error:
            status, headers, body = error.code, error.headers, error.read().decode("utf-8", "replace")
        steps.append({"method": method, "url": url, "status": status})
        if status in (301, 302, 303, 307, 308):
            url = urllib.parse.urljoin(url, headers["Location"])
            method, data = "GET", None
            continue
        if urllib.parse.urlsplit(url).path == "/oauth/callback":
            log["callback_status"] = status
            log["callback_page"] = body
            return
        parser = Forms()
        parser.feed(body)
        if not parser.forms:
            log["stuck_at"] = body[:2000]
            return
        form = parser.forms[0]
        values, clicked = [], False
        for kind, name, value in form["fields"]:
            if kind in ("text", "email") or name == "login":
                values.append((name, value or USER))
            elif kind == "password":
                values.append((name, "correct horse battery staple"))
            elif kind == "hidden":
                values.append((name, value))
            elif kind == "submit" and not clicked:
                # The first button, as a person clicks it.
                values.append((name, value))
                clicked = True
        url = urllib.parse.urljoin(url, form["action"] or url)
        method = form["method"].upper()
        encoded = urllib.parse.urlencode(values)
        if method == "GET":
            url = f"{url}?{encoded}"
            data = None
        else:
            data = encoded.encode()
    log["stuck_at"] = "too many steps"


def main():
    url = sys.argv[-1]
    if os.fork() != 0:
        return
    os.setsid()
    log = {"opened": url}
    try:
        browse(url, log)
    except Exception as error:  # the log tells the test what went wrong
        log["error"] = repr(error)
    path = os.environ.get("ECP_BROWSER_LOG")
    if path:
        with open(path + ".tmp", "w") as out:
            json.dump(log, out)
        os.replace(path + ".tmp", path)


main()
