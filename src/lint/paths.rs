//! Paths the manifest names, resolved as Qwen resolves them and held inside
//! the extension folder.
//!
//! Qwen fills its own variables in every manifest string
//! ([`crate::qwen::vars`]): `${extensionPath}` and `${CLAUDE_PLUGIN_ROOT}`
//! are the extension folder, `${/}` and `${pathSeparator}` the separator;
//! it reads `contextFileName` relative to the extension. What the process
//! then opens is the normalized path: a `..`
//! that climbs out of the folder leaves the reviewed release, whatever the
//! text looked like. These functions decide on the text alone, without
//! touching the disk, so that a manifest, a folder and an archive are judged
//! alike.

use std::fmt;

use crate::qwen::vars::{Environment, Filler, Places};

/// The variable Qwen replaces with the install folder.
pub const EXTENSION_PATH: &str = "${extensionPath}";

/// Why a path is not inside the extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outside {
    /// It does not start at `${extensionPath}` (absolute, or relative to
    /// wherever Qwen was started).
    NotUnderExtension,
    /// A `..` climbs above the extension folder.
    Climbs,
    /// A `$VAR` or `~` is filled in at run time, so the text does not say
    /// where it points.
    Variable,
}

impl fmt::Display for Outside {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outside::NotUnderExtension => "is not under ${extensionPath}",
            Outside::Climbs => "climbs out of the extension folder with `..`",
            Outside::Variable => {
                "holds a variable that is only filled in at run time, so it may point anywhere"
            }
        })
    }
}

/// `text` after Qwen's own variables: the extension folder kept as
/// `${extensionPath}` (whichever name the manifest used), the separator
/// `/`, the workspace and the environment's variables left as written.
fn filled(text: &str) -> String {
    Filler {
        places: Some(Places {
            extension: EXTENSION_PATH,
            workspace: None,
            separator: "/",
        }),
        environment: Environment::Kept,
    }
    .fill(text)
}

/// Whether `text` starts at the extension folder once Qwen's own variables
/// are filled (`${extensionPath}` or `${CLAUDE_PLUGIN_ROOT}`).
pub fn starts_at_extension(text: &str) -> bool {
    filled(text).starts_with(EXTENSION_PATH)
}

/// Replaces the path separators Qwen knows with `/`.
fn separators(text: &str) -> String {
    filled(text).replace('\\', "/")
}

/// Normalizes `relative` (already without `${extensionPath}`): drops `.` and
/// empty parts, resolves `..`. `Err` when it climbs out or holds a variable.
pub fn normalize(relative: &str) -> Result<String, Outside> {
    let relative = separators(relative);
    if relative.contains('$') || relative.starts_with('~') {
        return Err(Outside::Variable);
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(Outside::Climbs);
                }
            }
            part => parts.push(part),
        }
    }
    Ok(parts.join("/"))
}

/// A `command`, `args` or `cwd` value: must start with `${extensionPath}`;
/// returns the normalized path relative to the extension ("" for the folder
/// itself).
pub fn inside_extension(text: &str) -> Result<String, Outside> {
    let text = filled(text);
    let Some(rest) = text.strip_prefix(EXTENSION_PATH) else {
        return Err(if text.contains('$') {
            Outside::Variable
        } else {
            Outside::NotUnderExtension
        });
    };
    let rest = separators(rest);
    // `${extensionPath}foo` is a sibling folder (`/x/ext` + `foo`), not a
    // file inside it.
    if !(rest.is_empty() || rest.starts_with('/')) {
        return Err(Outside::NotUnderExtension);
    }
    normalize(&rest)
}

/// A `contextFileName`: relative to the extension folder (a leading
/// `${extensionPath}` is accepted too).
pub fn context_file(text: &str) -> Result<String, Outside> {
    let text = filled(text);
    if text.starts_with(EXTENSION_PATH) {
        return inside_extension(&text);
    }
    let separated = separators(&text);
    let bytes = separated.as_bytes();
    if separated.starts_with('/') || (bytes.len() >= 2 && bytes[1] == b':') {
        return Err(Outside::NotUnderExtension);
    }
    normalize(&separated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_qwen_then_holds_the_folder() {
        let ok = |text: &str| inside_extension(text).unwrap();
        assert_eq!(ok("${extensionPath}${/}dist${/}main"), "dist/main");
        assert_eq!(ok("${extensionPath}/./dist//main.js"), "dist/main.js");
        assert_eq!(
            ok("${extensionPath}${/}a${/}..${/}dist${/}main"),
            "dist/main"
        );
        assert_eq!(ok("${extensionPath}"), "");
        // `${CLAUDE_PLUGIN_ROOT}` is the same folder to Qwen.
        assert_eq!(
            ok("${CLAUDE_PLUGIN_ROOT}${pathSeparator}dist/main"),
            "dist/main"
        );
        assert!(starts_at_extension("${CLAUDE_PLUGIN_ROOT}/dist/main"));
        assert_eq!(
            inside_extension("${CLAUDE_PLUGIN_ROOT}${/}..${/}x"),
            Err(Outside::Climbs)
        );
        assert_eq!(
            context_file("${CLAUDE_PLUGIN_ROOT}/QWEN.md").unwrap(),
            "QWEN.md"
        );
        // `${workspacePath}` is the workspace, somewhere else.
        assert_eq!(
            inside_extension("${workspacePath}/x"),
            Err(Outside::Variable)
        );
        assert_eq!(
            inside_extension("${extensionPath}${/}..${/}..${/}..${/}bin${/}sh"),
            Err(Outside::Climbs)
        );
        assert_eq!(
            inside_extension("${extensionPath}${/}dist${/}..${/}..${/}x"),
            Err(Outside::Climbs)
        );
        assert_eq!(
            inside_extension("${extensionPath}\\..\\x"),
            Err(Outside::Climbs)
        );
        assert_eq!(
            inside_extension("${extensionPath}${/}$HOME${/}x"),
            Err(Outside::Variable)
        );
        assert_eq!(
            inside_extension("/usr/bin/node"),
            Err(Outside::NotUnderExtension)
        );
        assert_eq!(inside_extension("$HOME/x"), Err(Outside::Variable));
        assert_eq!(
            inside_extension("${extensionPath}-evil/main"),
            Err(Outside::NotUnderExtension)
        );
        assert_eq!(context_file("QWEN.md").unwrap(), "QWEN.md");
        assert_eq!(context_file("docs/../QWEN.md").unwrap(), "QWEN.md");
        assert_eq!(context_file("../secrets.md"), Err(Outside::Climbs));
        assert_eq!(context_file("/etc/passwd"), Err(Outside::NotUnderExtension));
        assert_eq!(context_file("C:\\x"), Err(Outside::NotUnderExtension));
    }
}
