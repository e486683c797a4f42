// Outbound proxies (src/runtime/proxy.ts): the variables read as the Rust
// runtime reads them (the cases of crates/ecp-runtime/src/proxy_env.rs,
// one for one), and an https endpoint reached through a CONNECT tunnel of
// a real forward proxy on loopback, with the proxy's credential sent as
// Basic and never in a reason. (The whole way, TLS inside the tunnel to a
// trusted endpoint, runs in ecp's own suite: Debian's tinyproxy in front
// of nginx, against the built bundle.)

import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";

import { Upstream } from "../src/runtime/index.js";
import { proxyEnv, proxyFor } from "../src/runtime/proxy.js";
import { forwardProxy, never, reason, withEnvSync } from "./loopback.js";

/** The proxy host a request to `url` goes through under `vars`, or undefined. */
function via(vars: Record<string, string>, url: string): string | undefined {
  return proxyFor(proxyEnv((name) => vars[name]), new URL(url))?.hostname;
}

test("each scheme picks its variable; the HTTP proxy serves https too; lower case wins; empty is unset", () => {
  const both = { HTTP_PROXY: "http://plain:3128", HTTPS_PROXY: "http://secure:3128" };
  assert.equal(via(both, "http://search.acme.example:9/x"), "plain");
  assert.equal(via(both, "https://api.acme.example/"), "secure");
  assert.equal(via({ HTTP_PROXY: "plain:3128" }, "https://api.acme.example/"), "plain");
  assert.equal(via({ HTTPS_PROXY: "http://secure:3128" }, "http://127.0.0.1:9/"), undefined);
  assert.equal(via({ http_proxy: "http://lower:1", HTTP_PROXY: "http://upper:1" }, "http://x/"), "lower");
  assert.equal(via({ http_proxy: "", HTTP_PROXY: "http://upper:1" }, "http://x/"), "upper");
  assert.equal(via({}, "https://x/"), undefined);
  assert.equal(via({ HTTP_PROXY: "socks5://x:1" }, "http://x/"), undefined);
});

test("NO_PROXY takes hosts, domains, ports and a star; plain http on loopback is never proxied", () => {
  const base = { HTTP_PROXY: "http://p:3128", HTTPS_PROXY: "http://p:3128" };
  const withList = (list: string) => ({ ...base, NO_PROXY: list });
  for (const url of [
    "http://127.0.0.1:8080/",
    "http://127.1.2.3/",
    "http://localhost:8080/",
    "http://LOCALHOST./",
    "http://api.localhost/",
    "http://[::1]:8080/",
    "http://[::ffff:127.0.0.1]/",
  ]) {
    assert.equal(via(withList(""), url), undefined, url);
  }
  assert.equal(via(withList(""), "https://localhost:8443/"), "p");
  assert.equal(via(withList(""), "http://localhost.evil.example/"), "p");
  assert.equal(via(withList(""), "http://128.0.0.1/"), "p");
  const list = withList("localhost, 127.0.0.1 ::1,.corp.example,*.internal.example,api.acme.example:8443");
  for (const url of [
    "http://127.0.0.1:8080/",
    "http://localhost:8080/",
    "http://[::1]:8080/",
    "https://search.corp.example/",
    "https://corp.example/",
    "https://a.internal.example/",
    "https://api.acme.example:8443/",
  ]) {
    assert.equal(via(list, url), undefined, url);
  }
  assert.equal(via(list, "https://api.acme.example/"), "p", "another port");
  assert.equal(via(list, "https://notcorp.example/"), "p");
  assert.equal(via(list, "https://localhost.evil.example/"), "p");
  assert.equal(via(withList("*"), "https://anything.example/"), undefined);
  assert.equal(via(withList("[::1]:8080"), "http://[::1]:8080/"), undefined);
  const lower = { HTTP_PROXY: "http://p:1", no_proxy: "a.example", NO_PROXY: "b.example" };
  assert.equal(via(lower, "http://a.example/"), undefined);
  assert.equal(via(lower, "http://b.example/"), "p");
});

/** A TCP listener on loopback that is no TLS server: whatever connects is closed at once. */
async function notTls() {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

test("an https endpoint goes through the proxy's CONNECT tunnel, with its credential as Basic; NO_PROXY sends it direct", async () => {
  const proxy = await forwardProxy();
  const target = await notTls();
  const base = `https://127.0.0.1:${target.port}/api`;
  const proxyUrl = proxy.url.replace("http://", "http://proxy%20user:pa%3Ass@");
  try {
    const through = withEnvSync(
      { T_BASE: base, T_TOKEN: "upstream-secret-token", HTTPS_PROXY: proxyUrl, https_proxy: undefined, NO_PROXY: undefined, no_proxy: undefined },
      () => Upstream.fromEnv("T_BASE", { bearer: "T_TOKEN" }),
    );
    const why = await reason(through.get("search").send(never), ["upstream-secret-token", "pa:ss", "pa%3Ass", base]);
    assert.equal(why, "the request failed in transport");
    assert.deepEqual(proxy.tunnels, [`127.0.0.1:${target.port}`]);
    assert.deepEqual(proxy.authorizations, [`Basic ${Buffer.from("proxy user:pa:ss").toString("base64")}`]);
    const direct = withEnvSync(
      { T_BASE: base, T_TOKEN: "upstream-secret-token", HTTPS_PROXY: proxyUrl, NO_PROXY: "127.0.0.1", no_proxy: undefined },
      () => Upstream.fromEnv("T_BASE", { bearer: "T_TOKEN" }),
    );
    assert.equal(await reason(direct.get("search").send(never), ["upstream-secret-token"]), "the request failed in transport");
    assert.equal(proxy.tunnels.length, 1, "NO_PROXY: no second tunnel");
  } finally {
    await proxy.close();
    await target.close();
  }
});

test("a proxy that cannot be reached fails the request in transport, naming neither proxy nor endpoint", async () => {
  const gone = await notTls();
  await gone.close();
  const upstream = withEnvSync(
    { T_BASE: "https://api.acme.example/", T_TOKEN: "t0ken", HTTPS_PROXY: `http://user:s3cret@127.0.0.1:${gone.port}`, NO_PROXY: undefined, no_proxy: undefined },
    () => Upstream.fromEnv("T_BASE", { bearer: "T_TOKEN" }),
  );
  assert.equal(await reason(upstream.get("s").send(never), ["t0ken", "s3cret", "acme", String(gone.port)]), "the request failed in transport");
});
