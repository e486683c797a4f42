//! The catalogue of lint rules: stable IDs, default severities, one-line
//! summaries and the long explanations `ecp explain <RULE>` prints.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

macro_rules! rules {
    ($($variant:ident = $id:literal, $severity:ident, $summary:literal, $explain:literal;)*) => {
        /// A lint rule. The ID is stable: CI configurations and SARIF
        /// baselines refer to it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Rule { $($variant,)* }

        impl Rule {
            pub const ALL: &'static [Rule] = &[$(Rule::$variant,)*];

            pub fn id(self) -> &'static str {
                match self { $(Rule::$variant => $id,)* }
            }

            pub fn severity(self) -> Severity {
                match self { $(Rule::$variant => Severity::$severity,)* }
            }

            /// One line: what the rule requires.
            pub fn summary(self) -> &'static str {
                match self { $(Rule::$variant => $summary,)* }
            }

            /// The long form: why, and how to fix it.
            pub fn explanation(self) -> &'static str {
                match self { $(Rule::$variant => $explain,)* }
            }
        }
    };
}

rules! {
    ManifestShape = "manifest-shape", Error,
        "qwen-extension.json must be a JSON object",
        "The manifest is read as one JSON object. Arrays, strings and other values install nothing.";
    NameMissing = "name-missing", Error,
        "the manifest needs a string `name`",
        "Qwen Code requires `name`; the install folder and the MCP tool prefix are derived from it.";
    NameFormat = "name-format", Error,
        "the name must be stable and globally distinctive",
        "Extension and MCP server names must be lower-case ASCII letters, digits and single dashes, \
3 to 64 characters, with at least two words (`acme-context`). Generic names (`external-context`, \
`context`, `search`, `mcp`, `qwen-...`, `...-mcp`, `...-extension`) collide with other providers and \
with Qwen's private external-context integration. Use `<org>-context`.";
    ServerCount = "server-count", Error,
        "the manifest must declare exactly one MCP server",
        "A profile extension contributes exactly one MCP server, keyed by the extension name, that offers \
`context_search`. Publish other servers as separate extensions.";
    ServerKey = "server-key", Error,
        "the MCP server key must equal the extension name",
        "Qwen exposes the tool as `mcp__<server>__context_search`; keying the server by the extension's \
stable name keeps that identifier distinctive and predictable. Rename the key under `mcpServers`.";
    IncludeTools = "include-tools", Error,
        "`includeTools` must be exactly [\"context_search\"]",
        "Without `includeTools` Qwen installs every tool the server offers; an empty list installs none. \
A profile manifest pins the one profile tool: `\"includeTools\": [\"context_search\"]`.";
    ExcludeTools = "exclude-tools", Error,
        "`excludeTools` must not list context_search",
        "In Qwen, `excludeTools` wins over `includeTools`: listing the profile tool there removes it. \
Remove `context_search` from `excludeTools`.";
    Trust = "trust", Error,
        "the manifest must not carry `trust`",
        "Qwen Code 0.24 honours `trust: true` from an extension manifest (measured; the docs say it is \
stripped): the tool then runs without the user's approval. A profile manifest never sets `trust`; \
remove the field whatever its value.";
    CommandSpaces = "command-spaces", Error,
        "`command` holds spaces but there are no `args`",
        "Qwen does not split `command` on spaces: `\"command\": \"node main.js\"` fails to connect. Put the \
executable in `command` and every argument in `args`.";
    CommandInstaller = "command-installer", Error,
        "`command` runs a package installer or runner",
        "Installing or starting an extension must not run an unreviewed package installer (`npx`, `uvx`, \
`npm`, `pnpm`, `yarn`, `bunx`, `pip`, `pipx`, `docker`...). Ship a self-contained entry point in the \
archive and start it as `${extensionPath}${/}dist${/}main`.";
    CommandEntryPoint = "command-entry-point", Error,
        "`command` must be the bundled entry point under ${extensionPath}, or `node` running the bundle",
        "The released archive is self-contained: its MCP server starts the entry point it ships, \
`${extensionPath}${/}dist${/}main` (a native binary), or `node` with the bundle it ships \
(`\"command\": \"node\"`, `\"args\": [\"${extensionPath}${/}dist${/}main.js\"]`), never another \
program found on the user's PATH or elsewhere on disk.";
    NodeScript = "node-script", Error,
        "`node` must run a script inside the extension",
        "The bundled-JavaScript shape of Qwen's own starter runs `\"command\": \"node\"` with \
`\"args\": [\"${extensionPath}${/}dist${/}main.js\"]`: Qwen runs on Node, so `node` is always there, \
and the bundle ships in the archive. The first argument that is not a Node option must be a `.js`, \
`.mjs` or `.cjs` file under `${extensionPath}`; a script elsewhere on disk (or none, which starts a \
REPL) is code nobody reviewed in the release.";
    NodeOption = "node-option", Error,
        "`node` must not get options that load or evaluate other code",
        "Node options that run code besides the bundle defeat the review of the release: `-e`/`--eval` \
and `-p`/`--print` evaluate a string, `-r`/`--require`, `--import`, `--loader` and \
`--experimental-loader` load another module first, and `--inspect*` opens a debugger port through \
which anyone on the machine can run code. The same options in `env.NODE_OPTIONS` count. Remove them; \
put everything the adapter needs into the bundle.";
    PathEscape = "path-escape", Error,
        "a path in the manifest must stay inside the extension",
        "`command`, the script in `args`, `cwd` and `contextFileName` are resolved as Qwen resolves \
them (`${extensionPath}` and `${/}` substituted), then normalized. A `..` that climbs out of the \
extension folder, an absolute path elsewhere or a `$VAR` that the environment fills in at run time \
would run or load files that are not part of the reviewed release. Name files inside the extension: \
`${extensionPath}${/}dist${/}main`.";
    EntryPointMissing = "entry-point-missing", Error,
        "the bundle `node` runs is not in the extension folder",
        "The script that `args` names (`dist/main.js`) must exist in the folder that is packaged or \
installed; without it the server fails to start. Build the bundle before linting the release folder.";
    BundleNotSelfContained = "bundle-not-self-contained", Warning,
        "the bundle still imports packages that are not Node built-ins",
        "Qwen installs an extension by copying its files; it never runs `npm install`. A bundle that \
still does `require(\"zod\")` or `import ... from \"@modelcontextprotocol/sdk\"` fails at start-up on \
a machine without that package. Bundle every dependency (esbuild `--bundle --platform=node`), so that \
only `node:` built-ins remain. The scan reads static `require(\"...\")`, `import ... from \"...\"`, \
`import \"...\"` and `import(\"...\")` specifiers; relative paths and built-ins are fine.";
    CwdMissing = "cwd-missing", Warning,
        "a local server should set `cwd` to ${extensionPath}",
        "Without `cwd` the adapter starts in whatever folder Qwen was started from. The reference shape \
sets `\"cwd\": \"${extensionPath}\"`.";
    TimeoutMissing = "timeout-missing", Warning,
        "the server sets no `timeout`, so Qwen's 10-minute default applies",
        "Without `timeout` Qwen Code 0.24.4 waits up to 10 minutes (600000 ms) for a tool call. That \
still keeps the profile's rule that the provider budget ends before the MCP call timeout, so the \
adapter's stable `External context search failed.` arrives first; but a stuck server can then hold a \
turn for 10 minutes. Set `timeout` a little above the budget your provider needs: the reference \
adapter's 5000 ms budget fits `\"timeout\": 8000`. Do not copy 8000 for a provider that is given a \
longer budget (Qwen's mem0 provider allows budgets of 8 to 30 s, for example): a timeout at or below \
the budget cuts its calls off before the provider answers. `timeout-headroom` is the error for a \
`timeout` that leaves no room over the budget.";
    TimeoutHeadroom = "timeout-headroom", Error,
        "`timeout` must leave headroom over the provider budget",
        "The adapter's provider budget (5000 ms by default) must end before Qwen's MCP call timeout, so \
the stable `External context search failed.` arrives instead of a client-side timeout. Use a positive \
integer of at least 6000 ms; the reference uses 8000.";
    EnvLiteral = "env-literal", Warning,
        "`env` values should be ${VAR} placeholders",
        "Credentials and endpoints come from the administrator's environment at run time. A literal in \
`env` ships with the extension to every machine; write `\"ACME_CONTEXT_TOKEN\": \"${ACME_CONTEXT_TOKEN}\"`.";
    ServerTransport = "server-transport", Error,
        "a server needs one transport: `command` (local) or `httpUrl` (remote)",
        "A local profile server sets `command` (the bundled entry point); a remote one sets `httpUrl`, its \
HTTPS Streamable HTTP endpoint, and no `command`. `url` is the legacy SSE transport and `tcp` is not \
part of the profile.";
    RemoteHttps = "remote-https", Error,
        "`httpUrl` must be https",
        "A published remote endpoint is reached over TLS: `https://context.acme.example/mcp`.";
    RemotePlaceholder = "remote-placeholder", Error,
        "`httpUrl` must name a real endpoint, not a placeholder or reserved domain",
        "`ecp new --template remote` without `--endpoint` writes a placeholder, \
`https://context.<org>.example/mcp`, so that the manifest is complete; it is not an endpoint. Names \
under the reserved `.example`, `.test`, `.invalid` and `.localhost` domains (RFC 2606, RFC 6761), \
`localhost` and `example.com`, `example.net` and `example.org` never reach a provider's service: \
an extension released with one installs, then every call fails to resolve or reaches the wrong \
machine. Set `httpUrl` (and the `oauth.audiences` that name it) to the deployed endpoint, or \
generate the manifest again with `ecp new NAME --template remote --endpoint URL`.";
    RemoteOauth = "remote-oauth", Error,
        "a remote server needs OAuth enabled with scopes and an audience",
        "Protected remote services use MCP OAuth with a least-privilege read scope and resource-bound \
tokens: `\"oauth\": {\"enabled\": true, \"scopes\": [\"context.read\"], \"audiences\": [\"<httpUrl>\"]}`.";
    RemoteCredentialHeader = "remote-credential-header", Error,
        "`headers` must not carry credentials",
        "A released manifest must not contain a bearer token or API key, not even as a placeholder \
header: the remote path authenticates with OAuth. Remove `Authorization`, `Cookie` and key headers.";
    SecretBearer = "secret-bearer", Error,
        "a `Bearer` credential is written in the manifest",
        "`Authorization: Bearer ...` in JSON is missed by common secret-scanner rules. The token ships to \
every machine that installs the extension. Remove it, rotate it, and read it from the environment.";
    SecretBasic = "secret-basic", Error,
        "a `Basic` credential is written in the manifest",
        "HTTP Basic credentials are a base64 user:password pair, not an encryption. Remove and rotate them.";
    SecretJwt = "secret-jwt", Error,
        "a JSON Web Token is written in the manifest",
        "A signed JWT is a bearer credential until it expires. Remove it and rotate its signing session.";
    SecretPrivateKey = "secret-private-key", Error,
        "a private key is written in the manifest",
        "PEM private keys must never ship in an extension. Remove the key and replace it.";
    SecretKnownFormat = "secret-known-format", Error,
        "a credential in a well-known format is written in the manifest",
        "The value matches the format of a provider's API key (GitHub, OpenAI, Anthropic, AWS, Google, \
Slack, Stripe, GitLab, npm, Hugging Face...). Remove it, rotate it, and read it from the environment.";
    SecretEntropy = "secret-entropy", Error,
        "a high-entropy value sits under a secret-like key",
        "The key names a secret (token, secret, password, api key, credential...) and the value looks \
random. If it is a real credential, remove and rotate it; write a `${VAR}` placeholder instead.";
    SecretUrlUserinfo = "secret-url-userinfo", Error,
        "a URL carries user info",
        "`https://user:password@host` embeds a credential in the URL. Use OAuth or an environment \
variable instead.";
    SecretUrlQuery = "secret-url-query", Error,
        "a URL carries a token-like query parameter",
        "Query parameters such as `access_token`, `api_key` or `sig` end up in logs and history. Remove \
the credential from the URL.";
    SettingsCredential = "settings-credential", Warning,
        "a setting is declared as the credential path",
        "In Qwen Code 0.24 values set with `qwen extensions settings set` are stored but do not reach the \
MCP child process (neither as an environment variable nor through `$VAR` in `env`). A sensitive \
setting is therefore not a working credential path: document an environment variable instead. \
Measured by ecp's end-to-end test `settings_do_not_reach_the_mcp_child` (tests/e2e), which installs \
a probe extension with a sensitive setting into the real client and records the child's environment.";
    VersionMissing = "version-missing", Error,
        "the manifest needs a `version`",
        "Without `version` the extension installs and then lists as `(undefined)`; updates cannot be told \
apart. Set a semantic version such as `\"0.1.0\"`.";
    VersionSemver = "version-semver", Error,
        "`version` must be a semantic version",
        "Use MAJOR.MINOR.PATCH with optional pre-release and build parts, e.g. `1.4.0` or `1.4.0-rc.1`.";
    RuntimeOutdated = "runtime-outdated", Warning,
        "the extension's runtime is older than the one ecp carries",
        "`ecp new` vendors the runtime crate (`vendor/ecp-runtime`) and records its version in Cargo.toml \
under `[package.metadata.ecp.runtime]`; ecp 0.1.0 copied it into `src/profile/` and `src/runtime/`. Fixes to \
the runtime reach an extension only when its copy is replaced: run `ecp upgrade`, which shows the changes, \
refuses to overwrite local edits (unless `--force`) and never touches `src/provider.rs`.";
    RuntimeSecurityFix = "runtime-security-fix", Error,
        "a newer runtime fixes a security problem in the extension's",
        "A release of the runtime after the one this extension vendors fixes a security problem (the list is \
kept in the runtime crate, `src/releases.rs`, and shown by `ecp upgrade`). Publishing the extension as it \
is would ship the problem: run `ecp upgrade`, then `cargo test`, `ecp package` and `ecp check`.";
    VersionDrift = "version-drift", Error,
        "the manifest version differs from the crate or package version",
        "For a Rust extension the manifest `version` and `Cargo.toml`'s `package.version` describe the same \
release, as do the manifest and `package.json`'s `version` for a Node one. Bump them together.";
    ContextFileMissing = "context-file-missing", Error,
        "a context file named by `contextFileName` is missing",
        "Qwen loads the files named by `contextFileName` into the model context. Add the file or remove \
its name.";
    ArchiveManifest = "archive-manifest", Error,
        "the archive has no qwen-extension.json at its root or in one top-level folder",
        "Qwen looks for the manifest at the archive root, or inside a single top-level folder.";
    ArchiveEntryPoint = "archive-entry-point", Error,
        "the entry point is missing from the archive or not executable",
        "The command `${extensionPath}${/}dist${/}main` must exist in the archive with mode 0755, or the \
server fails to start after installation.";
    ArchiveSecretFile = "archive-secret-file", Error,
        "the archive holds an environment or key file",
        "`.env*`, private keys, keystores and credential files must never ship. Remove them from the \
staged tree.";
    ArchiveLink = "archive-link", Error,
        "the archive holds a symlink or hard link",
        "Qwen rejects release archives with symlinks or hard links. Package regular files only.";
    ArchivePath = "archive-path", Error,
        "an archive entry has an absolute or `..` path",
        "Entries must stay inside the extension folder when extracted.";
    ArchiveDuplicate = "archive-duplicate", Error,
        "an archive entry appears twice",
        "Duplicate entries extract differently with different tools, and so do paths that differ only \
in letter case (`QWEN-EXTENSION.JSON` beside `qwen-extension.json`): a case-insensitive file system \
(macOS, Windows) keeps one of them. Package each path once.";
    ArchiveSpecialFile = "archive-special-file", Error,
        "the archive holds a device, FIFO, socket or unusual entry type",
        "A release archive holds regular files and folders. Devices and FIFOs extract as special files \
(a FIFO hangs whatever opens it), and entry types such as GNU sparse files or volume labels are read \
differently by different extractors.";
    ArchiveMalformed = "archive-malformed", Error,
        "the archive is read differently by different extractors",
        "Lint reads a `.tar.gz` the way GNU tar and Node's tar read it, every gzip member included, and \
refuses what they would disagree on: a wrong header checksum, a truncated stream, malformed numbers or \
PAX records, two long-name headers for one entry, a global PAX path, or data after the end-of-archive \
marker (a second archive hidden there). Write the archive again with `ecp package`.";
    ArchiveLimits = "archive-limits", Error,
        "the archive exceeds what lint reads",
        "Lint bounds what an archive can make it do: names and links of at most 4096 bytes, PAX headers of \
at most 64 KiB, at most 200,000 entries and 512 MiB unpacked. A release of a context provider is far \
smaller; an archive past these bounds is refused rather than read without end.";
    ReleaseAsset = "release-asset", Error,
        "on every platform, Qwen's installer must find an archive among the release's assets",
        "`qwen extensions install owner/repo` takes the first asset, in GitHub's order, whose lower-cased \
name starts with `{platform}.{arch}.`, else `{platform}.`, else the only asset when there is exactly \
one and its name mentions no platform; with no match it clones the repository. It never looks at \
the extension. So a checksum or signature named `linux.x64.acme-context.tar.gz.sha256` can be \
installed as the extension, and a platform-less archive stops being found once anything else is \
uploaded beside it. Lint judges linux, darwin and win32 on x64 and arm64, in every order of the \
list. Only `.tar.gz` and `.zip` archives may start with a platform; sums go in `SHA256SUMS`; a \
platform-less extension ships `{platform}.{name}.tar.gz` for each platform (what `ecp package` \
writes).";
    ReleaseArchitecture = "release-architecture", Error,
        "an archive named for a platform holds a binary built for another",
        "The entry point's header (ELF, Mach-O or PE) says what it runs on. An archive named `linux.x64.` \
that holds an arm64 binary installs on every x64 Linux and fails to start there. Package each \
target's own build: `ecp package --binary target/<triple>/release/<bin> --target <triple>`.";
    ReleasePlatformMissing = "release-platform-missing", Warning,
        "a platform would install a binary built for another platform or architecture",
        "When no asset starts with `{platform}.{arch}.`, Qwen takes one that starts with `{platform}.`: an \
Intel Mac gets the `darwin.arm64.` build, an arm64 Linux the `linux.x64.` one, and the server does \
not start. Build and package every target (the generated release workflow builds five), or accept \
that the platform named is not supported. Windows on Arm runs x64 builds, so `win32.x64.` serves it.";
    ReleaseSums = "release-sums", Error,
        "`SHA256SUMS` must list every archive of the release with its digest",
        "A release folder carries one `SHA256SUMS` (`sha256sum` format, `<digest>  <file>`) so that a \
reviewer can check what was downloaded. Every archive must be listed, every listed file must be in \
the folder with that digest. `ecp package` run once per target into one folder keeps one merged \
file.";
    ClientGemini = "client-gemini", Error,
        "Gemini CLI would refuse gemini-extension.json",
        "Gemini CLI 0.61.0 loads `gemini-extension.json` only with a string `name` of letters, digits and \
dashes (no `_`, no `.`) and a string `version`; a `contextFileName` must exist and stay inside the \
extension. `gemini extensions validate` checks only these; ecp also checks the server (see \
`client-profile`). `ecp package --clients gemini` writes the file from qwen-extension.json.";
    ClientClaude = "client-claude", Error,
        "Claude Code (or Qwen's reading of a Claude plugin) would refuse or drop the plugin",
        "Claude Code 2.1.332 `plugin validate --strict` needs a `name` without spaces, a `version`, and \
only the fields it knows. Qwen Code reads a Claude plugin's servers from an inline `mcpServers` \
object or a wrapped `.mcp.json` (`{\"mcpServers\": {...}}`): a flat `.mcp.json` is dropped without a \
word, and a path in `mcpServers` becomes one broken server named `mcpServers`. An unset `${VAR}` \
reaches the server as that literal text; write `${VAR:-}`. `ecp package --clients claude` writes \
the plugin from qwen-extension.json.";
    ClientMcpb = "client-mcpb", Error,
        "`mcpb validate` would refuse the bundle manifest, or the bundle cannot start",
        "An MCP Bundle's `manifest.json` (manifest_version 0.3, what mcpb 2.1.2 validates) needs \
`name`, `version`, `description`, `author.name` and a `server` of type node, python or binary with \
an `entry_point` in the bundle and an `mcp_config.command`; unknown top-level fields are refused, \
and every `user_config` entry needs a `type` and a `title`. `ecp package --clients mcpb` writes it \
from qwen-extension.json.";
    ClientProfile = "client-profile", Error,
        "a client manifest breaks the profile: more than one server, or a tool besides context_search",
        "Every client must see one MCP server offering exactly `context_search`. Where the format can \
say so (Gemini's `includeTools`, a bundle's `tools`), it must name `context_search` alone; Claude \
Code has no tool list, so its plugin relies on the one-tool server.";
    ClientDrift = "client-drift", Error,
        "a client manifest no longer says what qwen-extension.json says",
        "The client manifests are derived from qwen-extension.json: the same name, version, entry \
point and environment names. One that drifted starts another server or an older version in that \
client. Run `ecp package --clients CLIENT` (or `ecp new --clients` for a new extension) to write it \
again.";
    RegistryServer = "registry-server", Error,
        "server.json does not validate against the MCP registry's 2025-12-11 schema, or its package is not the one built",
        "The MCP registry refuses a `server.json` the published schema refuses (the schema is vendored \
in ecp, sha256 3fba0959...). ecp also checks what the schema cannot: an `mcpb` package needs the \
`fileSha256` of the bundle actually built, a remote `url` must be https, and no value may hold a \
literal secret. `ecp package --registry NAME` writes it.";
    NpmPackage = "npm-package", Error,
        "Qwen Code cannot install this npm package, or it would run code when installed",
        "Qwen Code installs only scoped packages (`@scope/name`), downloads the one tarball and installs \
no dependencies: the bundle must be self-contained and `package.json` lists none. Install scripts \
(`preinstall`, `install`, `postinstall`, `prepare`) run for whoever installs the package with npm. \
`ecp package --npm` writes such a package.";
    Mem0Read = "mem0-read", Error,
        "Qwen's Mem0 provider cannot read this configuration file: over 64 KiB, or a byte-order mark",
        "`@qwen-code/external-context-mem0` reads its InstanceConfig and DialectV1 files with a 64 KiB \
cap and `JSON.parse` on the UTF-8 text: a larger file, or one starting with a byte-order mark (which \
`JSON.parse` does not skip), stops the provider at startup with `configuration is invalid`. Save the \
file as plain UTF-8 JSON under 64 KiB.";
    Mem0Schema = "mem0-schema", Error,
        "a Mem0 InstanceConfig or DialectV1 file does not validate against Qwen's published schema",
        "The provider validates `schemaVersion: 2` (on-demand), `schemaVersion: 3` (Auto Recall) and \
`dialectVersion: 1` files against its published draft-07 schemas (vendored in ecp, \
`contracts/qwen-mem0/`) and refuses any file they refuse: extra fields (even `$schema`), missing \
ones, a `timeoutMs` outside 100-30000 (v2) or 100-5000 (v3), a `credentialEnv` that is not an \
upper-case variable name, values outside the dialect's closed enums. ecp recognises these files by \
their `schemaVersion` (with `dialectPath`, `endpoint` or `credentialEnv`) or `dialectVersion` field.";
    Mem0Endpoint = "mem0-endpoint", Error,
        "the InstanceConfig's endpoint.origin is not an https origin the provider accepts",
        "`endpoint.origin` holds only a scheme and authority: no user info, query, fragment or path \
(a shared prefix goes in `endpoint.basePath`). It must be https, or http with \
`allowInsecureHttp: true`; anything else stops the provider with `endpoint is invalid`.";
    Mem0InsecureHttp = "mem0-insecure-http", Warning,
        "the Mem0 endpoint is plain http to a host that is not loopback or a private address",
        "With `allowInsecureHttp: true` the provider sends the credential over plain HTTP to any host. \
Qwen's README allows it only for a trusted private-network endpoint and never over public HTTP. \
Use https, or an address on loopback or a private network.";
    Mem0Path = "mem0-path", Error,
        "endpoint.basePath or the dialect's search.path is not a static path the provider accepts",
        "Both paths are static: they start with `/` (basePath may also be empty) and hold no `//`, `?`, \
`#`, backslash, `%`, control character, or `.`/`..` segment. Otherwise the provider stops with \
`path is invalid`.";
    Mem0DialectPath = "mem0-dialect-path", Error,
        "the InstanceConfig's dialectPath is not an absolute path",
        "The provider reads `dialectPath` only as an absolute local path: it is not resolved against \
the instance file, expanded from variables or loaded from a URL. A relative one stops it with \
`dialect path must be absolute`.";
    Mem0DialectGet = "mem0-dialect-get", Error,
        "a GET dialect places the query or a scope value in a JSON body",
        "A `GET` search has no body: `queryLocation`, `userIdLocation`, `agentIdLocation` and \
`appIdLocation` must be `query` (or `omit` for a scope). The provider refuses the dialect \
otherwise (`dialect is invalid`).";
    Mem0Scope = "mem0-scope", Error,
        "the instance's scope does not match the dialect's scope locations",
        "Every dialect scope location other than `omit` needs that value (`userId`, `agentId`, `appId`) \
in the instance's `scope`, and every `omit` needs it absent. ecp checks this when the dialect file \
named by `dialectPath` is readable where lint runs; the provider refuses a mismatch at startup \
(`scope is invalid`).";
    Mem0RepositoryRoot = "mem0-repository-root", Error,
        "a v3 InstanceConfig's autoRecall.repositoryRoot is not an absolute folder below a filesystem root",
        "The Auto Recall hook runs only in `autoRecall.repositoryRoot` and below; the provider refuses \
a relative path or a filesystem root (`/`, `C:\\`). Whether the folder exists is checked on the \
host that runs Qwen, not here.";
    ReleaseVersion = "release-version", Error,
        "the release tag, the manifest `version` and the archives must agree",
        "Qwen decides updates of a GitHub install by comparing the release's `tag_name` with \
`releases/latest`, and of an archive or local install by the manifest `version`. A tag `v1.2.0` \
whose archives say `1.1.0` makes the two disagree forever. Every archive of a release carries the \
same name and version, and `--release-tag vX.Y.Z` (or `X.Y.Z`) must name that version.";
}

impl Rule {
    /// Looks a rule up by ID.
    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::ALL.iter().copied().find(|rule| rule.id() == id)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl From<crate::text::secrets::SecretKind> for Rule {
    fn from(kind: crate::text::secrets::SecretKind) -> Rule {
        use crate::text::secrets::SecretKind;
        match kind {
            SecretKind::Bearer => Rule::SecretBearer,
            SecretKind::Basic => Rule::SecretBasic,
            SecretKind::Jwt => Rule::SecretJwt,
            SecretKind::PrivateKey => Rule::SecretPrivateKey,
            SecretKind::KnownFormat => Rule::SecretKnownFormat,
            SecretKind::Entropy => Rule::SecretEntropy,
            SecretKind::UrlUserinfo => Rule::SecretUrlUserinfo,
            SecretKind::UrlQuery => Rule::SecretUrlQuery,
        }
    }
}
