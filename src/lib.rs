//! ecp: build, lint, package, serve and check External Context Provider
//! extensions for Qwen Code.
//!
//! - [`profile`], [`runtime`]: the `ecp-runtime` crate (`crates/ecp-runtime`),
//!   which generated extensions depend on: the v1 contract, the MCP server
//!   around a [`runtime::Provider`], the remote adapter, the entry point.
//! - [`providers`]: the Generic HTTP Search V1 binding (the runtime's) and
//!   the fixture corpus behind `ecp serve --fixture`.
//! - [`contracts`]: the canonical `contracts/v1` and Qwen's published files.
//! - [`extension`]: an extension folder as the commands read it (the
//!   manifest's text and the project beside it, through [`files`]).
//! - [`lint`]: the pre-publish checks of manifests, folders and archives.
//! - [`channels`]: every channel's and client's manifest, derived from
//!   `qwen-extension.json`, and their rules.
//! - [`scaffold`]: `ecp new`, the templates and the verbatim copies.
//! - [`upgrade`]: `ecp upgrade`, an extension's runtime brought to ecp's.
//! - [`package`]: `ecp package`, reproducible release archives.
//! - [`provenance`]: in-toto/SLSA statements and DSSE signatures.
//! - [`verify`]: `ecp verify`, what a reviewer can prove about a release
//!   (its sums, statement, signature, lint, and a rebuild).
//! - [`check`]: `ecp check` and `ecp call`: the conformance runner, for an
//!   MCP server and (`--hook`) for Qwen's Auto Recall hook.
//! - [`doctor`]: `ecp doctor`, what Qwen Code will really run here, Auto
//!   Recall hooks included.
//! - [`managed`]: `ecp managed`, what an administrator deploys (the MCP
//!   server, or with `--auto-recall` the hook).
//! - [`qwen`]: Qwen Code on this machine, as `ecp try` installs into it.
//! - [`release`]: release assets as Qwen's installer picks them, `SHA256SUMS`.
//! - [`input`]: one wording for a missing path or manifest, in every command.
//! - [`name`]: the extension name rules shared by `ecp new` and `ecp lint`.
//! - [`json`]: the one JSON reader, as `JSON.parse` reads (spans kept).
//! - [`atomic`]: files written whole or not at all.
//! - [`files`]: opening what ecp reads, as an attacker may have arranged
//!   it: regular files only, capped before reading.
//! - [`digest`]: SHA-256 in lower-case hex, ecp's one spelling of a digest.
//! - [`writes`]: the one rule of where ecp writes (never through a link or
//!   into a special file, inside the folder the user named).
//! - [`children`]: the processes ecp starts, and how Ctrl-C ends them.
//! - [`surface`]: the tool surface a model reads, in canonical form
//!   (RFC 8785), and `tools.lock`, which pins it.
//! - [`text`]: text from outside (stderr, manifest and statement values)
//!   as a terminal or a report may show it, and what in it is a secret.
//! - [`cli`]: the command line, a thin shell over the library.

#![warn(clippy::too_many_lines)]

pub mod atomic;
pub mod channels;
pub mod check;
pub mod children;
pub mod cli;
pub mod contracts;
pub mod digest;
pub mod doctor;
pub mod extension;
pub mod files;
pub mod input;
pub mod json;
pub mod lint;
pub mod managed;
pub mod name;
pub mod package;
pub mod provenance;
pub mod qwen;
pub use runtime::profile;
pub mod providers;
pub mod release;
/// The runtime crate as ecp uses it: its API and, beside it, its
/// [`internal`](ecp_runtime::internal) module (ecp is the one user that may
/// reach in there; extensions use the API only).
pub mod runtime {
    pub use ecp_runtime::internal::*;
    pub use ecp_runtime::internal::{
        binding, contracts, http, install_tls_provider, profile, proxy, search_response,
    };
    pub use ecp_runtime::*;
}
pub mod scaffold;
pub mod surface;
pub mod text;
pub mod upgrade;
pub mod verify;
pub mod writes;

#[cfg(test)]
mod tests {
    /// The floors of `ARCHITECTURE.md`: each folder's code (comments
    /// aside) names no module of a floor above it.
    #[test]
    fn every_folder_imports_only_from_the_floors_below() {
        const COMMANDS: &[&str] = &[
            "cli", "verify", "check", "package", "doctor", "upgrade", "managed",
        ];
        let above = |floor: &str| -> Vec<&str> {
            let mut names = COMMANDS.to_vec();
            match floor {
                "extension" | "text" => names.extend([
                    "lint",
                    "channels",
                    "qwen",
                    "scaffold",
                    "provenance",
                    "providers",
                ]),
                "channels" | "qwen" | "scaffold" | "provenance" => names.push("lint"),
                _ => {}
            }
            if floor == "text" {
                names.push("extension");
            }
            names
        };
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for floor in [
            "extension",
            "text",
            "channels",
            "qwen",
            "scaffold",
            "provenance",
            "lint",
        ] {
            let mut stack = vec![root.join(floor)];
            while let Some(path) = stack.pop() {
                if path.is_dir() {
                    stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let code: String = text
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("//"))
                    .collect::<Vec<_>>()
                    .join("\n");
                for name in crate_modules_named(&code) {
                    assert!(
                        !above(floor).contains(&name.as_str()),
                        "{}: {floor}/ names crate::{name}, a floor above it",
                        path.display()
                    );
                }
            }
        }
    }

    /// The top-level modules `code` names through `crate::`: `crate::a::`
    /// and each first name of a `crate::{a::.., b, ..}` group.
    fn crate_modules_named(code: &str) -> Vec<String> {
        let ident = |s: &str| -> String {
            s.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        };
        let mut names = Vec::new();
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let (mut depth, mut start) = (0usize, 0usize);
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            names.push(ident(group[start..i].trim()));
                            break;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            names.push(ident(group[start..i].trim()));
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
            } else {
                names.push(ident(rest));
            }
        }
        names.retain(|n| !n.is_empty());
        names
    }

    /// Every module of the crate is named in the list above, so the list
    /// stays the map of the house.
    #[test]
    fn the_crate_doc_names_every_module() {
        let source = include_str!("lib.rs");
        let (docs, code) = source.split_once("#![").unwrap();
        for line in code.lines() {
            if let Some(name) = line
                .strip_prefix("pub mod ")
                .map(|n| n.trim_end_matches([';', ' ', '{']))
            {
                assert!(
                    docs.contains(&format!("[`{name}`]")),
                    "src/lib.rs does not say what `{name}` is"
                );
            }
        }
    }
}
