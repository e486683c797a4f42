//! An npm package's `package.json`, as Qwen Code installs the package:
//! scoped, nothing to install or run, the manifest's version.

use serde_json::Value;

use super::{Finding, Report, Rule};

/// The npm rules over a package's `package.json` (shown as `label`):
/// scoped, no dependencies Qwen would not install, no install scripts, the
/// manifest's version.
pub fn npm_package(label: &str, text: &str, manifest_version: Option<&str>, report: &mut Report) {
    let mut refuse = |message: String, help: &str| {
        report.add(Finding::about(Rule::NpmPackage, label, message, help));
    };
    let Ok(package) = serde_json::from_str::<Value>(text) else {
        return refuse(
            "package.json is not JSON: npm and Qwen Code refuse the package".into(),
            "`ecp package --npm` writes it",
        );
    };
    match package.get("name").and_then(Value::as_str) {
        Some(name) if crate::channels::npm::is_scoped(name) => {}
        found => refuse(
            format!(
                "Qwen Code installs only scoped packages (@scope/name); this one is named {}",
                found
                    .map(|n| format!("{:?}", crate::text::outside::shown(n)))
                    .unwrap_or_else(|| "nothing".into())
            ),
            "publish it as @scope/name (`ecp package --npm --npm-name @scope/name`)",
        ),
    }
    for key in [
        "dependencies",
        "optionalDependencies",
        "peerDependencies",
        "bundleDependencies",
        "bundledDependencies",
    ] {
        if package
            .get(key)
            .is_some_and(|d| d.as_object().is_none_or(|o| !o.is_empty()) && !d.is_null())
        {
            refuse(
                format!(
                    "package.json lists {key}: Qwen Code installs none of them, so the extension must not need them"
                ),
                "bundle every dependency into dist/main.js and drop the list (`ecp package --npm` does)",
            );
        }
    }
    let scripts = package.get("scripts").and_then(Value::as_object);
    for script in crate::channels::npm::INSTALL_SCRIPTS {
        if scripts.is_some_and(|s| s.contains_key(*script)) {
            refuse(
                format!(
                    "package.json has a `{script}` script: npm runs it on the machine of whoever installs the package"
                ),
                "remove it; the package is the built extension and needs no install step",
            );
        }
    }
    let version = package.get("version").and_then(Value::as_str);
    if let (Some(manifest), Some(version)) = (manifest_version, version)
        && manifest != version
    {
        refuse(
            format!(
                "package.json says version {version} but qwen-extension.json says {manifest}: Qwen records the npm version and compares the manifest's"
            ),
            "package it again with `ecp package --npm`",
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{channels::npm::package_json, extension::Project};

    /// The `package.json` ecp writes passes the npm rules; one that lists
    /// dependencies, an install script, another version and no scope
    /// breaks one rule each.
    #[test]
    fn the_package_json_ecp_writes_passes_the_npm_rules() {
        let project = Project {
            package_json: Some(json!({"name": "x", "type": "module", "license": "MIT",
                "dependencies": {"a": "1"}, "scripts": {"postinstall": "x"}})),
            ..Project::default()
        };
        let manifest = json!({"version": "1.2.3", "description": "d"});
        let package = package_json("@acme/x", &manifest, &project, Some("io.github.acme/x"));
        let mut report = Report::default();
        npm_package("p", &package.to_string(), Some("1.2.3"), &mut report);
        assert!(report.findings.is_empty(), "{:?}", report.findings);
        let bad = json!({"name": "x", "version": "1.0.0", "dependencies": {"a": "1"}, "scripts": {"postinstall": "curl"}});
        npm_package("p", &bad.to_string(), Some("1.2.3"), &mut report);
        assert_eq!(report.findings.len(), 4, "{:?}", report.findings);
    }
}
