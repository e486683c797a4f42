//! Whether a JavaScript bundle is self-contained: the package specifiers it
//! still imports that are not Node built-ins. Qwen copies an extension and
//! never runs `npm install`, so such an import fails at start-up.
//!
//! The scan is lexical, linear and bounded: it reads the code outside
//! strings, template literals, comments and regular expression literals,
//! and takes static `require("x")`, `import ... from "x"`,
//! `export ... from "x"`, `import "x"` and `import("x")` with a string
//! literal. A bundler writes its externals exactly so; code that only sits
//! in a string (Ajv's code generator holds `'require("ajv/dist/runtime/equal")'`
//! in every bundle of the MCP SDK) is not an import, and a computed
//! `require(name)` is not judged.

/// Node's built-in modules (`require("module").builtinModules` of Node 20
/// and 22, without the `node:` prefix, which is always a built-in).
pub const NODE_BUILTINS: &[&str] = &[
    "_http_agent",
    "_http_client",
    "_http_common",
    "_http_incoming",
    "_http_outgoing",
    "_http_server",
    "_stream_duplex",
    "_stream_passthrough",
    "_stream_readable",
    "_stream_transform",
    "_stream_wrap",
    "_stream_writable",
    "_tls_common",
    "_tls_wrap",
    "assert",
    "async_hooks",
    "buffer",
    "child_process",
    "cluster",
    "console",
    "constants",
    "crypto",
    "dgram",
    "diagnostics_channel",
    "dns",
    "domain",
    "events",
    "fs",
    "http",
    "http2",
    "https",
    "inspector",
    "module",
    "net",
    "os",
    "path",
    "perf_hooks",
    "process",
    "punycode",
    "querystring",
    "readline",
    "repl",
    "stream",
    "string_decoder",
    "sys",
    "timers",
    "tls",
    "trace_events",
    "tty",
    "url",
    "util",
    "v8",
    "vm",
    "wasi",
    "worker_threads",
    "zlib",
];

/// The most specifiers a finding names.
const SHOWN: usize = 5;

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
    let mut seen = std::collections::HashSet::new();
    for specifier in Scanner::new(source).specifiers() {
        if !is_self_contained(&specifier) && seen.insert(specifier.clone()) {
            found.push(specifier);
        }
    }
    found
}

/// Walks JavaScript source, skipping what is not code.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
    /// Whether a `/` here starts a regular expression (after an operator,
    /// a punctuator or a keyword) rather than a division.
    regex_allowed: bool,
    /// Whether the last token was a `.` (so `x.require(...)` is a method).
    after_dot: bool,
    /// Open template literals' brace depths (`${` nesting).
    templates: Vec<usize>,
    braces: usize,
}

/// Keywords after which a `/` starts a regular expression.
const REGEX_KEYWORDS: &[&str] = &[
    "return",
    "typeof",
    "instanceof",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
    "yield",
    "await",
];

impl<'a> Scanner<'a> {
    fn new(source: &'a str) -> Scanner<'a> {
        Scanner {
            bytes: source.as_bytes(),
            at: 0,
            regex_allowed: true,
            after_dot: false,
            templates: Vec::new(),
            braces: 0,
        }
    }

    fn peek(&self, offset: usize) -> u8 {
        self.bytes.get(self.at + offset).copied().unwrap_or(0)
    }

    /// Skips a quoted string starting at the quote; returns its contents
    /// when it holds no escape or line break.
    fn string(&mut self) -> Option<String> {
        let quote = self.peek(0);
        let start = self.at + 1;
        self.at += 1;
        let mut plain = true;
        while self.at < self.bytes.len() {
            match self.peek(0) {
                b'\\' => {
                    plain = false;
                    self.at += 2;
                }
                b'\n' => break,
                c if c == quote => {
                    let text = &self.bytes[start..self.at];
                    self.at += 1;
                    return plain.then(|| String::from_utf8_lossy(text).into_owned());
                }
                _ => self.at += 1,
            }
        }
        None
    }

    /// Skips template characters up to the closing backtick or a `${`.
    fn template_chars(&mut self) {
        while self.at < self.bytes.len() {
            match self.peek(0) {
                b'\\' => self.at += 2,
                b'`' => {
                    self.at += 1;
                    self.templates.pop();
                    return;
                }
                b'$' if self.peek(1) == b'{' => {
                    self.at += 2;
                    self.braces += 1;
                    return;
                }
                _ => self.at += 1,
            }
        }
    }

    fn regex(&mut self) {
        self.at += 1;
        let mut class = false;
        while self.at < self.bytes.len() {
            match self.peek(0) {
                b'\\' => self.at += 2,
                b'[' => {
                    class = true;
                    self.at += 1;
                }
                b']' => {
                    class = false;
                    self.at += 1;
                }
                b'/' if !class => {
                    self.at += 1;
                    while self.peek(0).is_ascii_alphabetic() {
                        self.at += 1;
                    }
                    return;
                }
                b'\n' => return,
                _ => self.at += 1,
            }
        }
    }

    fn skip_space(&mut self) {
        loop {
            match self.peek(0) {
                b' ' | b'\t' | b'\n' | b'\r' => self.at += 1,
                b'/' if self.peek(1) == b'*' => self.block_comment(),
                b'/' if self.peek(1) == b'/' => self.line_comment(),
                _ => return,
            }
        }
    }

    fn line_comment(&mut self) {
        while self.at < self.bytes.len() && self.peek(0) != b'\n' {
            self.at += 1;
        }
    }

    fn block_comment(&mut self) {
        self.at += 2;
        while self.at < self.bytes.len() && !(self.peek(0) == b'*' && self.peek(1) == b'/') {
            self.at += 1;
        }
        self.at += 2;
    }

    /// After `require`, `import`, `from`: the literal specifier, if the code
    /// goes on with one (`("x")` for calls, `"x"` for the others).
    fn specifier_after(&mut self, word: &str) -> Option<String> {
        let saved = self.at;
        self.skip_space();
        let call = self.peek(0) == b'(';
        if call {
            self.at += 1;
            self.skip_space();
        }
        let wanted = match word {
            "require" => call,
            "import" => true,
            _ => !call,
        };
        if wanted && matches!(self.peek(0), b'"' | b'\'') {
            let literal = self.string();
            self.skip_space();
            if !call || self.peek(0) == b')' || self.peek(0) == b',' {
                return literal;
            }
            return None;
        }
        self.at = saved;
        None
    }

    /// A word (identifier or keyword); the specifier when it is `require`,
    /// `import` or `from` (not a method) followed by a literal.
    fn word(&mut self) -> Option<String> {
        let bytes = self.bytes;
        let start = self.at;
        while is_word_byte(self.peek(0)) {
            self.at += 1;
        }
        let word = std::str::from_utf8(&bytes[start..self.at]).unwrap_or("");
        let method = self.after_dot;
        self.after_dot = false;
        if !method
            && matches!(word, "require" | "import" | "from")
            && let Some(specifier) = self.specifier_after(word)
        {
            self.regex_allowed = false;
            return Some(specifier);
        }
        self.regex_allowed = REGEX_KEYWORDS.contains(&word);
        None
    }

    fn specifiers(mut self) -> Vec<String> {
        let mut found = Vec::new();
        while self.at < self.bytes.len() {
            let c = self.peek(0);
            match c {
                b'"' | b'\'' => {
                    self.string();
                    self.regex_allowed = false;
                }
                b'`' => {
                    self.at += 1;
                    self.templates.push(self.braces);
                    self.template_chars();
                    self.regex_allowed = false;
                }
                b'/' if self.peek(1) == b'/' => self.line_comment(),
                b'/' if self.peek(1) == b'*' => self.block_comment(),
                b'/' if self.regex_allowed => {
                    self.regex();
                    self.regex_allowed = false;
                }
                b'{' => {
                    self.braces += 1;
                    self.at += 1;
                    self.regex_allowed = true;
                }
                b'}' => {
                    self.braces = self.braces.saturating_sub(1);
                    self.at += 1;
                    if self.templates.last() == Some(&self.braces) {
                        self.template_chars();
                        self.regex_allowed = false;
                    } else {
                        self.regex_allowed = true;
                    }
                }
                c if is_word_byte(c) => {
                    // A word settles `after_dot` itself.
                    found.extend(self.word());
                    continue;
                }
                b' ' | b'\t' | b'\n' | b'\r' => {
                    self.at += 1;
                    continue;
                }
                b')' | b']' => {
                    self.at += 1;
                    self.regex_allowed = false;
                }
                b'.' => {
                    self.at += 1;
                    self.regex_allowed = false;
                    self.after_dot = true;
                    continue;
                }
                _ => {
                    self.at += 1;
                    self.regex_allowed = true;
                }
            }
            self.after_dot = false;
        }
        found
    }
}

/// A byte of an identifier (any non-ASCII byte may be one).
fn is_word_byte(c: u8) -> bool {
    c == b'_' || c == b'$' || c.is_ascii_alphanumeric() || c >= 0x80
}

/// "`zod`, `@modelcontextprotocol/sdk/server/mcp.js` and 3 more".
pub fn describe(imports: &[String]) -> String {
    let mut shown: Vec<String> = imports
        .iter()
        .take(SHOWN)
        .map(|s| format!("`{}`", crate::text::outside::shown(s)))
        .collect();
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
            equal.code = 'require("ajv/dist/runtime/equal").default';
            const generated = `${x} require("in-a-template") ${`nested ${require("in-code")}`}`;
            // require("in-a-comment")
            /* import "in-a-block-comment" */
            const re = /require("in-a-regex")/g, ratio = a / b / require("after-division");
            client.require("a-method");
        "#;
        assert_eq!(
            external_imports(source),
            [
                "@modelcontextprotocol/sdk/server/mcp.js",
                "zod",
                "undici",
                "in-code",
                "after-division"
            ]
        );
        assert_eq!(
            external_imports("import fs from 'node:fs'; require('crypto')"),
            Vec::<String>::new()
        );
    }
}
