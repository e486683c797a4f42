//! Whether a JavaScript bundle is self-contained: the package specifiers it
//! still imports that are not Node built-ins. Qwen copies an extension and
//! never runs `npm install`, so such an import fails at start-up.
//!
//! The scan is lexical and bounded: static `require("x")`,
//! `import ... from "x"`, `export ... from "x"`, `import "x"` and
//! `import("x")` with a string literal. A bundler's output writes its
//! externals exactly so; a computed `require(name)` is not judged.

use std::sync::LazyLock;

use regex::Regex;

/// Node's built-in modules (`require("module").builtinModules` of Node 20
/// and 22, without the `node:` prefix, which is always a built-in).
pub const NODE_BUILTINS: &[&str] = &[
    "_http_agent", "_http_client", "_http_common", "_http_incoming", "_http_outgoing",
    "_http_server", "_stream_duplex", "_stream_passthrough", "_stream_readable",
    "_stream_transform", "_stream_wrap", "_stream_writable", "_tls_common", "_tls_wrap",
    "assert", "async_hooks", "buffer", "child_process", "cluster", "console", "constants",
    "crypto", "dgram", "diagnostics_channel", "dns", "domain", "events", "fs", "http", "http2",
    "https", "inspector", "module", "net", "os", "path", "perf_hooks", "process", "punycode",
    "querystring", "readline", "repl", "stream", "string_decoder", "sys", "timers", "tls",
    "trace_events", "tty", "url", "util", "v8", "vm", "wasi", "worker_threads", "zlib",
];

/// The most specifiers a finding names.
const SHOWN: usize = 5;

static SPECIFIER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?x)
        (?: \brequire \s* \( \s* | \bimport \s* \( \s* | \bfrom \s* | \bimport \s* )
        (?: "([^"\\\n]{1,214})" | '([^'\\\n]{1,214})' )
        "#,
    )
    .expect("the specifier pattern is valid")
});

/// Whether `specifier` needs nothing from `node_modules`.
pub fn is_self_contained(specifier: &str) -> bool {
    if specifier.starts_with("node:")
        || specifier.starts_with("./")
        || specifier.starts_with("../")
        || specifier.starts_with('/')
        || specifier.starts_with("data:")
        || specifier.starts_with("file:")
    {
        return true;
    }
    let base = specifier.split('/').next().unwrap_or(specifier);
    NODE_BUILTINS.contains(&base)
}

/// The package specifiers `source` imports that are not built-ins, in
/// order of first appearance, without repeats.
pub fn external_imports(source: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for captures in SPECIFIER.captures_iter(source) {
        let Some(specifier) = captures.get(1).or_else(|| captures.get(2)) else {
            continue;
        };
        let specifier = specifier.as_str();
        if !is_self_contained(specifier) && !found.iter().any(|f| f == specifier) {
            found.push(specifier.to_owned());
        }
    }
    found
}

/// "`zod`, `@modelcontextprotocol/sdk/server/mcp.js` and 3 more".
pub fn describe(imports: &[String]) -> String {
    let mut shown: Vec<String> = imports.iter().take(SHOWN).map(|s| format!("`{}`", super::secrets::shown(s))).collect();
    if imports.len() > SHOWN {
        shown.push(format!("{} more", imports.len() - SHOWN));
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_packages_a_bundle_still_needs() {
        let source = r#"
            import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
            import fs from "node:fs";
            import path from 'path';
            import "./side-effect.js";
            const z = require("zod");
            const p = require('fs/promises');
            const later = await import("undici");
            export { x } from "./x.js";
            const text = "this import is prose";
            require(name);
        "#;
        assert_eq!(
            external_imports(source),
            ["@modelcontextprotocol/sdk/server/mcp.js", "zod", "undici"]
        );
        assert_eq!(external_imports("import fs from 'node:fs'; require('crypto')"), Vec::<String>::new());
    }
}
