// A real OAuth authorization server on 127.0.0.1 for the end-to-end suite:
// the npm `oidc-provider` (panva), configured the way docs/remote-adapter.md,
// "Authorization server settings", says a provider's server must be for
// Qwen Code 0.24.4:
//
// - dynamic client registration open to public clients (Qwen registers
//   itself, `token_endpoint_auth_method: none`);
// - PKCE S256 required;
// - resource indicators (RFC 8707): the MCP endpoint is the one resource
//   server, its access tokens are JWTs (RFC 9068, ES256) with that URL as
//   `aud` and the `context.read` scope;
// - refresh tokens for every client allowed the grant (Qwen asks for no
//   `offline_access`);
// - a second resource, `https://other.invalid/api`, so that a test can
//   obtain a real token for another audience.
//
// The login and consent pages are oidc-provider's development
// interactions (forms a person fills in and submits).
//
// Usage: node authorization_server.mjs RESOURCE_URL TTL_FILE
// TTL_FILE holds the lifetime of new access tokens in seconds; it is read
// at every token, so a test can change it between phases.
// Prints one JSON line `{"issuer": ..., "jwks_uri": ...}` once it listens,
// then one JSON line per token request: `{"event": "token", "grant_type",
// "status", "resource"}`. It also registers a confidential client
// `ecp-probe` (secret `ecp-probe-secret`) allowed `client_credentials`,
// through which the test mints tokens Qwen never sees.

import { generateKeyPairSync } from "node:crypto";
import { createServer } from "node:http";
import { once } from "node:events";
import { readFileSync } from "node:fs";

import Provider, { errors } from "oidc-provider";

const [resource, ttlFile] = process.argv.slice(2);
if (!resource || !ttlFile) {
  console.error("usage: authorization_server.mjs RESOURCE_URL TTL_FILE");
  process.exit(2);
}
function accessTokenTTL() {
  const text = readFileSync(ttlFile, "utf8").trim();
  if (!/^\d+$/.test(text)) throw new Error(`${ttlFile}: not a number of seconds`);
  return Number(text);
}
const OTHER_RESOURCE = "https://other.invalid/api";

const server = createServer();
server.listen(0, "127.0.0.1");
await once(server, "listening");
const issuer = `http://127.0.0.1:${server.address().port}`;

const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
const signingKey = { ...privateKey.export({ format: "jwk" }), kid: "as-es256", alg: "ES256", use: "sig" };

const resourceServers = {
  [resource]: { scope: "context.read other.read" },
  [OTHER_RESOURCE]: { scope: "context.read" },
};

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: "ecp-probe",
      client_secret: "ecp-probe-secret",
      grant_types: ["client_credentials"],
      response_types: [],
      redirect_uris: [],
    },
  ],
  jwks: { keys: [signingKey] },
  clientDefaults: { id_token_signed_response_alg: "ES256" },
  scopes: ["openid", "offline_access", "context.read", "other.read"],
  features: {
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    devInteractions: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo(_ctx, indicator) {
        const known = resourceServers[indicator];
        if (!known) throw new errors.InvalidTarget();
        return {
          ...known,
          audience: indicator,
          accessTokenTTL: accessTokenTTL(),
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "ES256" } },
        };
      },
    },
  },
  pkce: { required: () => true },
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed("refresh_token"),
  ttl: { ClientCredentials: () => accessTokenTTL(), RefreshToken: 24 * 3600, Grant: 24 * 3600, Session: 24 * 3600, Interaction: 600 },
  cookies: { keys: ["ecp-e2e-cookie-key"] },
});

// One line per token request, for the test to count grants.
provider.use(async (ctx, next) => {
  await next();
  if (ctx.path === "/token") {
    const params = ctx.oidc?.params ?? {};
    console.log(JSON.stringify({
      event: "token",
      grant_type: params.grant_type ?? null,
      status: ctx.status,
      resource: params.resource ?? null,
    }));
  }
});

server.on("request", provider.callback());
const discovery = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
console.log(JSON.stringify({ issuer, jwks_uri: discovery.jwks_uri }));
