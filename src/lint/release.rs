//! `ecp lint dist/`: a release folder, judged as the set of assets a
//! GitHub release would hold (every regular file whose name does not start
//! with a dot), against Qwen's installer ([`crate::release`]) on every
//! platform and architecture, in every order GitHub could list them.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
};

use super::{Finding, LintError, Report, Rule, archive};
use crate::release::{self, Resolution, SUMS, Sums, TARGETS};

/// The most files a release folder may hold (GitHub's limit per release).
pub const MAX_ASSETS: usize = 1000;

/// Does `folder` look like a release folder (no manifest, but archives or
/// sums)? Only read when there is no manifest.
pub fn is_release_folder(folder: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return false;
    };
    entries.flatten().take(MAX_ASSETS + 1).any(|entry| {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        !name.starts_with('.') && (release::is_archive(&name) || name == SUMS)
    })
}

/// What one archive of the folder says about itself.
struct Asset {
    name: String,
    facts: Option<archive::ArchiveFacts>,
}

/// Lints the release folder `folder`; `tag` is the release tag to agree
/// with, when given.
pub fn lint_release_folder(
    folder: &Path,
    tag: Option<&str>,
    report: &mut Report,
) -> Result<(), LintError> {
    let read_error = |source| LintError::Read {
        path: folder.to_owned(),
        source,
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(folder).map_err(read_error)? {
        let entry = entry.map_err(read_error)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let shown = folder.join(&name).display().to_string();
        let kind = entry.file_type().map_err(read_error)?;
        if kind.is_dir() {
            continue;
        }
        if !kind.is_file() {
            report.add(Finding::about(
                Rule::ReleaseAsset,
                &shown,
                format!(
                    "`{name}` is not a regular file; an upload would follow it to whatever it names"
                ),
                "put the file itself in the release folder",
            ));
            continue;
        }
        names.push(name);
        if names.len() > MAX_ASSETS {
            report.add(Finding::about(
                Rule::ReleaseAsset,
                &folder.display().to_string(),
                format!("more than {MAX_ASSETS} files: a GitHub release holds at most {MAX_ASSETS} assets"),
                "keep only the archives and SHA256SUMS in the release folder",
            ));
            return Ok(());
        }
    }
    names.sort();
    let mut assets = Vec::new();
    for name in names.iter().filter(|n| release::is_archive(n)) {
        // One unreadable asset is a finding about it, not the end of the
        // review of the others.
        let facts = match archive::lint_archive(&folder.join(name), report) {
            Ok(facts) => facts,
            Err(LintError::Archive { path, message }) => {
                report.add(Finding::about(
                    Rule::ArchiveMalformed,
                    &path.display().to_string(),
                    format!("not a readable archive: {message}"),
                    "package it again with `ecp package`",
                ));
                None
            }
            Err(other) => {
                report.add(Finding::about(
                    Rule::ReleaseAsset,
                    &folder.join(name).display().to_string(),
                    format!("`{name}` cannot be read: {other}"),
                    "make it a readable regular file of the release folder",
                ));
                None
            }
        };
        assets.push(Asset {
            name: name.clone(),
            facts,
        });
    }
    channel_assets(folder, &names, report);
    let shown = |name: &str| folder.join(name).display().to_string();
    resolution_rules(&names, &assets, &shown, report);
    sums_rules(folder, &names, &assets, &shown, report);
    version_rules(&assets, tag, &shown, report);
    Ok(())
}

/// What the entry point of the asset `name` was built for, when known.
fn binary_of<'a>(assets: &'a [Asset], name: &str) -> Option<&'a release::Binary> {
    assets
        .iter()
        .find(|a| a.name == name)
        .and_then(|a| a.facts.as_ref()?.binary.as_ref())
}

/// Every platform finds an archive, whatever the order; the archive it
/// finds was built for it.
fn resolution_rules(
    names: &[String],
    assets: &[Asset],
    shown: &dyn Fn(&str) -> String,
    report: &mut Report,
) {
    let all: Vec<&str> = names.iter().map(String::as_str).collect();
    // Which targets could install each non-archive, and which clone.
    let mut trapped: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut cloned = Vec::new();
    let mut borrowed: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (platform, arch) in TARGETS {
        let target = format!("{platform} {arch}");
        match release::resolve(&all, platform, arch) {
            Resolution::Clone => cloned.push(target),
            Resolution::Assets(found) => {
                for name in found {
                    if !release::is_archive(name) {
                        trapped.entry(name).or_default().push(target.clone());
                        continue;
                    }
                    let Some(binary) = binary_of(assets, name) else {
                        continue;
                    };
                    let named = release::target_of(name);
                    let emulated =
                        platform == "win32" && arch == "arm64" && binary.runs_on("win32", "x64");
                    if binary.runs_on(platform, arch) || emulated {
                        continue;
                    }
                    // Found by its own exact name: the archive lies about
                    // what it holds (release-architecture, below).
                    if named == Some((platform, arch)) {
                        continue;
                    }
                    borrowed.entry(name).or_default().push(target.clone());
                }
            }
        }
    }
    for (name, targets) in trapped {
        report.add(Finding::about(
            Rule::ReleaseAsset,
            &shown(name),
            format!(
                "`{name}` is not an archive, yet Qwen's installer could pick it on {} (it takes the first asset whose name starts with the platform, in GitHub's order)",
                targets.join(", ")
            ),
            format!(
                "rename it so that it starts with no platform, or leave it out; checksums belong in {SUMS}"
            ),
        ));
    }
    clone_rule(&cloned, shown, report);
    for (name, targets) in borrowed {
        let binary = binary_of(assets, name)
            .map(release::Binary::describe)
            .unwrap_or_default();
        report.add(Finding::about(
            Rule::ReleasePlatformMissing,
            &shown(name),
            format!(
                "{} would install `{name}`, whose entry point is built for {binary}: it does not start there",
                targets.join(", ")
            ),
            "build and package those targets too (`ecp package --binary ... --target TRIPLE` into the same folder)",
        ));
    }
    architecture_rules(assets, shown, report);
}

/// Targets with no matching asset: Qwen's installer clones the repository.
fn clone_rule(cloned: &[String], shown: &dyn Fn(&str) -> String, report: &mut Report) {
    if cloned.is_empty() {
        return;
    }
    let folder = shown("");
    report.add(Finding::about(
            Rule::ReleaseAsset,
            folder.trim_end_matches(std::path::MAIN_SEPARATOR),
            format!(
                "on {} no asset matches, so Qwen's installer would clone the repository instead of installing a release archive",
                cloned.join(", ")
            ),
            "package for that platform (`ecp package --target TRIPLE`); a platform-less extension ships `{platform}.{name}.tar.gz` for linux, darwin and win32, as `ecp package` writes",
        ));
}

/// An archive named for a target holds an entry point built for it.
fn architecture_rules(assets: &[Asset], shown: &dyn Fn(&str) -> String, report: &mut Report) {
    for asset in assets {
        let (Some((platform, arch)), Some(binary)) = (
            release::target_of(&asset.name),
            asset.facts.as_ref().and_then(|f| f.binary.as_ref()),
        ) else {
            continue;
        };
        if !binary.runs_on(platform, arch) {
            report.add(Finding::about(
                Rule::ReleaseArchitecture,
                &shown(&asset.name),
                format!(
                    "`{}` is named for {platform} {arch} but its entry point is built for {}",
                    asset.name,
                    binary.describe()
                ),
                "package the build for that target: `ecp package --binary target/TRIPLE/release/BIN --target TRIPLE`",
            ));
        }
    }
}

/// One `SHA256SUMS`, listing every archive with its digest.
fn sums_rules(
    folder: &Path,
    names: &[String],
    assets: &[Asset],
    shown: &dyn Fn(&str) -> String,
    report: &mut Report,
) {
    let sums_file = shown(SUMS);
    if !names.iter().any(|n| n == SUMS) {
        report.add(Finding::about(
            Rule::ReleaseSums,
            &sums_file,
            format!("the release folder has no {SUMS}"),
            "package with `ecp package`, which writes it, or `sha256sum *.tar.gz *.zip > SHA256SUMS`",
        ));
        return;
    }
    let sums =
        match crate::files::read_text(&folder.join(SUMS), Some(folder), release::MAX_SUMS_BYTES)
            .map_err(|problem| problem.to_string())
            .and_then(|text| Sums::parse(&text).map_err(|error| error.to_string()))
        {
            Ok(sums) => sums,
            Err(problem) => {
                report.add(Finding::about(
                    Rule::ReleaseSums,
                    &sums_file,
                    format!("{SUMS} cannot be read as sha256sum output: {problem}"),
                    "write it again with `ecp package` or `sha256sum`",
                ));
                return;
            }
        };
    for asset in assets {
        if !sums.entries.contains_key(&asset.name) {
            report.add(Finding::about(
                Rule::ReleaseSums,
                &sums_file,
                format!("`{}` is not listed in {SUMS}", asset.name),
                "package every target into this folder with `ecp package`; it merges the sums",
            ));
        }
    }
    for (name, digest) in &sums.entries {
        if !names.contains(name) {
            report.add(Finding::about(
                Rule::ReleaseSums,
                &sums_file,
                format!("{SUMS} lists `{name}`, which is not in the release folder"),
                "package again, or remove the line",
            ));
            continue;
        }
        match crate::digest::sha256_file(&folder.join(name)) {
            Ok(actual) if actual == *digest => {}
            Ok(actual) => report.add(Finding::about(
                Rule::ReleaseSums,
                &shown(name),
                format!("`{name}` has sha256 {actual}, but {SUMS} says {digest}"),
                "the file changed after it was packaged: package again",
            )),
            Err(error) => report.add(Finding::about(
                Rule::ReleaseSums,
                &shown(name),
                format!("`{name}` cannot be read to check its digest: {error}"),
                "make it a readable regular file",
            )),
        }
    }
}

/// One name and one version across the archives, equal to the tag.
fn version_rules(
    assets: &[Asset],
    tag: Option<&str>,
    shown: &dyn Fn(&str) -> String,
    report: &mut Report,
) {
    let mut seen: BTreeMap<(String, String), Vec<&str>> = BTreeMap::new();
    for asset in assets {
        if let Some(facts) = &asset.facts {
            let manifest = &facts.manifest;
            seen.entry((
                manifest.name.clone().unwrap_or_default(),
                manifest.version.clone().unwrap_or_default(),
            ))
            .or_default()
            .push(&asset.name);
        }
    }
    if seen.len() > 1 {
        let described: Vec<String> = seen
            .iter()
            .map(|((name, version), files)| format!("{name} {version} ({})", files.join(", ")))
            .collect();
        report.add(Finding::about(
            Rule::ReleaseVersion,
            shown("").trim_end_matches(std::path::MAIN_SEPARATOR),
            format!("the archives are not one release: {}", described.join("; ")),
            "package every target from the same commit into an empty folder",
        ));
    }
    if let Some(tag) = tag {
        let versions: BTreeSet<&str> = seen.keys().map(|(_, version)| version.as_str()).collect();
        for version in versions {
            if let Some(problem) = tag_disagrees(tag, Some(version)) {
                report.add(Finding::about(
                    Rule::ReleaseVersion,
                    shown("").trim_end_matches(std::path::MAIN_SEPARATOR),
                    problem,
                    "tag the commit whose manifest and Cargo.toml carry the version (`git tag vX.Y.Z`), or bump them",
                ));
            }
        }
    }
}

/// Why `tag` does not name `version` (`v1.2.0` and `1.2.0` name `1.2.0`).
pub fn tag_disagrees(tag: &str, version: Option<&str>) -> Option<String> {
    let named = tag.strip_prefix('v').unwrap_or(tag);
    match version {
        Some(version) if version == named => None,
        Some(version) => Some(format!(
            "the release tag `{tag}` names version {named}, but the manifest says {version}"
        )),
        None => Some(format!(
            "the release tag `{tag}` names version {named}, but the manifest has no version"
        )),
    }
}

/// The other channels' assets of a release folder: MCP Bundles, npm
/// package tarballs and the registry's `server.json`, each by its own
/// rules (`crate::channels`).
fn channel_assets(folder: &Path, names: &[String], report: &mut Report) {
    for name in names {
        let path = folder.join(name);
        let outcome = if name.ends_with(".mcpb") {
            crate::lint::archive::bundle(&path, report)
        } else if name.ends_with(".tgz") {
            archive::lint_archive(&path, report).map(|_| ())
        } else if name == crate::channels::registry::FILE {
            crate::files::read_text(&path, Some(folder), crate::files::MAX_TEXT_BYTES)
                .map(|text| {
                    let bundles = super::bundles_beside(folder);
                    crate::lint::registry::lint(
                        &path.display().to_string(),
                        &text,
                        &bundles,
                        report,
                    )
                })
                .map_err(LintError::File)
        } else {
            Ok(())
        };
        if let Err(error) = outcome {
            report.add(Finding::about(
                Rule::ReleaseAsset,
                &path.display().to_string(),
                format!("`{name}` cannot be read: {error}"),
                "package it again with `ecp package`",
            ));
        }
    }
}
