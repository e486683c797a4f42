// Outbound proxies from the environment, read as the Rust runtime reads
// them (crates/ecp-runtime/src/proxy_env.rs), which reads them as the
// reference (undici's `EnvHttpProxyAgent`) does:
//
// - `http_proxy`, else `HTTP_PROXY`, for `http` endpoints;
// - `https_proxy`, else `HTTPS_PROXY`, for `https` endpoints; when neither
//   is set, the HTTP proxy serves `https` too;
// - `no_proxy`, else `NO_PROXY`: entries separated by commas or spaces;
//   `*` alone turns proxying off; `host` matches that host exactly,
//   `.domain` and `*.domain` match the domain and its hosts; `host:port`
//   only that port; IPv6 addresses with or without brackets.
//
// A plain `http` endpoint on loopback (`localhost` and `*.localhost`,
// `127.0.0.0/8`, `::1`) is never proxied, whatever `NO_PROXY` says: plain
// http is allowed only there, because the credential then never crosses a
// network (runtime 0.4.3). An empty value counts as unset; `ALL_PROXY` is
// not read. A proxy value without a scheme (`proxy:3128`) means `http://`;
// `user:password@` in it is sent as `proxy-authorization: Basic`, a
// credential nothing here formats into a message.
//
// Part of ecp's TypeScript runtime; `ecp new` copies it verbatim.

import { isIP } from "node:net";

/** One `NO_PROXY` entry: every host, or a host (a domain suffix when it starts with `.`) and maybe a port. */
type Bypass = "all" | { name: string; port: number | undefined };

/** The proxy settings of one process. */
export interface ProxyEnv {
  http: URL | undefined;
  https: URL | undefined;
  bypass: Bypass[];
}

function parseBypass(raw: string): Bypass | undefined {
  let entry = raw.trim().toLowerCase();
  if (entry === "") return undefined;
  if (entry === "*") return "all";
  if (entry.startsWith("*")) entry = entry.slice(1);
  const port = (text: string | undefined) => (text !== undefined && /^[0-9]{1,5}$/.test(text) && Number(text) < 65536 ? Number(text) : undefined);
  // `[::1]:8080`, `[::1]`, `::1` (several colons: an address, no port), `host:8080`, `host`.
  if (entry.startsWith("[")) {
    const close = entry.indexOf("]");
    if (close === -1) return { name: entry.slice(1), port: undefined };
    const tail = entry.slice(close + 1);
    return { name: entry.slice(1, close), port: tail.startsWith(":") ? port(tail.slice(1)) : undefined };
  }
  const colons = entry.split(":").length - 1;
  if (colons === 1) {
    const [host, wanted] = entry.split(":");
    const number = port(wanted);
    return number === undefined ? { name: entry, port: undefined } : { name: host, port: number };
  }
  return { name: entry, port: undefined };
}

/** A proxy variable's value as a URL (`host:port` alone means `http://`), or undefined. */
function proxyUrl(value: string): URL | undefined {
  const trimmed = value.trim();
  if (trimmed === "") return undefined;
  try {
    const url = new URL(trimmed.includes("://") ? trimmed : `http://${trimmed}`);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "" ? url : undefined;
  } catch {
    return undefined;
  }
}

/** The settings from a variable lookup (the lower-case name wins; an empty value counts as unset). */
export function proxyEnv(get: (name: string) => string | undefined = (name) => process.env[name]): ProxyEnv {
  const first = (names: string[]) => names.map(get).find((value) => value !== undefined && value.trim() !== "");
  const read = (names: string[]) => {
    const value = first(names);
    return value === undefined ? undefined : proxyUrl(value);
  };
  const list = first(["no_proxy", "NO_PROXY"]) ?? "";
  return {
    http: read(["http_proxy", "HTTP_PROXY"]),
    https: read(["https_proxy", "HTTPS_PROXY"]),
    bypass: list.split(/[, \t\n]/).flatMap((entry) => parseBypass(entry) ?? []),
  };
}

/** `url`'s host without an IPv6 address's brackets, lower-case (the URL parser already lower-cases a name). */
export const bareHost = (url: URL): string => url.hostname.replace(/^\[|\]$/g, "").toLowerCase();

/** `url`'s port, or its scheme's. */
export const portOf = (url: URL): number => (url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80);

/** Whether `url`'s host is this machine's loopback: `localhost` or a name under it, `127.0.0.0/8`, `::1` (also IPv4-mapped). */
export function isLoopback(url: URL): boolean {
  const host = bareHost(url);
  const kind = isIP(host);
  if (kind === 4) return host.startsWith("127.");
  if (kind === 6) return host === "::1" || /^::ffff:(127\.|7f[0-9a-f]{2}:)/.test(host);
  const name = host.replace(/\.+$/, "");
  return name === "localhost" || name.endsWith(".localhost");
}

function bypassed(env: ProxyEnv, url: URL): boolean {
  const host = bareHost(url);
  const port = portOf(url);
  return env.bypass.some((entry) => {
    if (entry === "all") return true;
    const matches = entry.name.startsWith(".")
      ? host.endsWith(entry.name) || host === entry.name.slice(1)
      : host === entry.name;
    return matches && (entry.port === undefined || entry.port === port);
  });
}

/** The proxy a request to `url` goes through, if any (never one for plain `http` on loopback). */
export function proxyFor(env: ProxyEnv, url: URL): URL | undefined {
  let proxy: URL | undefined;
  if (url.protocol === "https:") proxy = env.https ?? env.http;
  else if (url.protocol === "http:" && !isLoopback(url)) proxy = env.http;
  return proxy !== undefined && !bypassed(env, url) ? proxy : undefined;
}
