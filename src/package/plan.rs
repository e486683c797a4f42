//! What a run of `ecp package` will do, known before it writes anything:
//! the plan read from the manifest, the outputs it would replace (each
//! checked by the write rule), and what the client manifests it writes
//! replace in the extension folder; and how a failed run undoes its
//! writes (the folder put back, stale outputs removed).

use std::path::PathBuf;

use super::{Format, PackageError, PackageSettings, host_triple, platform_of, read_sums};
use crate::{lint, provenance, release, release::SUMS, writes::Place};

/// What the manifest says the run builds: the extension's name, the
/// target triple, and the entry point's kind.
pub(super) struct Plan {
    pub(super) name: String,
    pub(super) triple: String,
    /// A JavaScript bundle (`node dist/main.js`).
    pub(super) script: bool,
    /// A native `dist/main`.
    pub(super) native: bool,
}

impl Plan {
    /// The plan of the folder's manifest, read before anything is written
    /// (a manifest that cannot be read gives an empty name: lint says why).
    pub(super) fn read(settings: &PackageSettings) -> Plan {
        let facts = crate::extension::Extension::read(&settings.folder)
            .ok()
            .and_then(|extension| extension.manifest_text)
            .and_then(|text| lint::manifest::check(lint::MANIFEST, &text).ok())
            .map(|checked| checked.facts)
            .unwrap_or_default();
        Plan::of(settings, &facts)
    }

    pub(super) fn of(
        settings: &PackageSettings,
        facts: &crate::extension::manifest::ManifestFacts,
    ) -> Plan {
        let kind = |wanted| facts.entry_point.as_ref().is_some_and(|e| e.kind == wanted);
        Plan {
            name: facts.name.clone().unwrap_or_default(),
            triple: settings.target.clone().unwrap_or_else(host_triple),
            script: kind(crate::extension::manifest::EntryKind::Script),
            native: kind(crate::extension::manifest::EntryKind::Native),
        }
    }

    /// The files this run would write, so that a failure from here on
    /// removes what an earlier run left under the same names.
    pub(super) fn outputs(&self) -> Vec<String> {
        if self.name.is_empty() {
            return Vec::new();
        }
        let platform = match platform_of(&self.triple) {
            Ok((os, arch)) if self.native => Some(format!("{os}.{arch}")),
            _ => None,
        };
        let mut outputs = Vec::new();
        for stem in release::stems(&self.name, platform.as_deref()) {
            outputs.extend(
                [Format::TarGz, Format::Zip]
                    .iter()
                    .map(|f| format!("{stem}.{}", f.extension())),
            );
        }
        outputs.push(super::pin::LOCK_NAME.to_owned());
        outputs.push(provenance::statement_name(platform.as_deref()));
        outputs.push(provenance::envelope_name(platform.as_deref()));
        outputs
    }
}

/// What the extension folder held where a run writes client manifests
/// (`--clients`), read before the first write, so that a run that fails
/// leaves the folder as it was: each file's bytes (`None` where there was
/// none), and the folders the writes made.
#[derive(Default)]
pub(super) struct Before {
    files: Vec<(Place, Option<Vec<u8>>)>,
    folders: Vec<PathBuf>,
}

impl Before {
    /// The most of an existing client manifest kept to put back (a client
    /// file is well under a kilobyte; a larger one is refused).
    const MAX_KEPT: u64 = 1024 * 1024;

    /// Reads what the client manifests of `settings` would replace.
    pub(super) fn read(settings: &PackageSettings) -> Result<Before, PackageError> {
        let mut before = Before::default();
        for client in &settings.channels.clients {
            if *client == crate::channels::Client::Qwen {
                continue;
            }
            let place = crate::channels::client_place(&settings.folder, *client);
            let bytes = if place.check_file()? {
                let path = place.path();
                // Whole or refused: a file cut short would be put back cut.
                let bytes = crate::files::read_bytes(&path, Some(&settings.folder), Self::MAX_KEPT)
                    .map_err(|problem| PackageError::Refused {
                        path: path.display().to_string(),
                        reason: problem.to_string(),
                    })?;
                Some(bytes)
            } else {
                None
            };
            let mut folder = place.path();
            while folder.pop() && folder != settings.folder && !folder.exists() {
                before.folders.push(folder.clone());
            }
            before.files.push((place, bytes));
        }
        Ok(before)
    }

    /// Puts every file back as it was, and removes the folders the run
    /// made when they are empty again.
    pub(super) fn restore(&self, log: &mut dyn FnMut(&str)) {
        let mut put_back = Vec::new();
        for (place, bytes) in &self.files {
            let done = match bytes {
                Some(bytes) => place.write(bytes).map(|_| true),
                None => place.remove_file(),
            };
            match done {
                Ok(true) => put_back.push(place.path().display().to_string()),
                Ok(false) => {}
                Err(problem) => log(&format!("could not put back {problem}")),
            }
        }
        for folder in &self.folders {
            let _ = std::fs::remove_dir(folder);
        }
        if !put_back.is_empty() {
            log(&format!(
                "put back {} as it was before this run, which failed",
                put_back.join(", ")
            ));
        }
    }
}

/// Removes `names` from `out` and their lines from `SHA256SUMS` (regular
/// files only, by the write rule).
pub(super) fn remove_stale(out: &Place, names: &[String], log: &mut dyn FnMut(&str)) {
    let mut removed = Vec::new();
    for name in names {
        if out.join(name).remove_file().unwrap_or(false) {
            removed.push(name.as_str());
        }
    }
    if removed.is_empty() {
        return;
    }
    let sums_place = out.join(SUMS);
    if let Ok(mut sums) = read_sums(&sums_place) {
        sums.entries
            .retain(|file, _| !removed.contains(&file.as_str()));
        let _ = if sums.entries.is_empty() {
            sums_place.remove_file().map(|_| ())
        } else {
            sums_place.write(sums.render().as_bytes())
        };
    }
    log(&format!(
        "removed the previous {} from {}: this run failed, and it would have replaced them",
        removed.join(", "),
        out.path().display()
    ));
}

/// `names` in the output folder, each one the write rule lets this run
/// replace or remove.
pub(super) fn check_outputs(
    settings: &PackageSettings,
    names: Vec<String>,
) -> Result<Vec<String>, PackageError> {
    let out = settings.out();
    for name in &names {
        out.join(name).check_file()?;
    }
    Ok(names)
}
