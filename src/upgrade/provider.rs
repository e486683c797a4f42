//! The provider file of an extension generated before runtime 0.3.0: a
//! verbatim copy of the Generic HTTP Search V1 binding (550 lines of
//! hardening around a 30-line mapping), with `src/main.rs` and the tests
//! written against it. Since 0.3.0 the runtime owns the hardening
//! (`ecp_runtime::http`) and a generated `src/provider.rs` is the mapping
//! only.
//!
//! An unedited copy is recognised by its SHA-256 among every earlier
//! generation's (the header and binding of each ecp that wrote one); when
//! `src/main.rs` and the tests are unedited too (compared with the
//! templates they were rendered from, the crate's name put back in place
//! of the template variables), all four are replaced by what this ecp
//! generates. Anything edited leaves every file as it is, with a sentence
//! saying what the runtime now offers: the old binding still builds
//! against this runtime.
//!
//! The tests of runtime 0.3.x (`TESTS_0_3`) are replaced by today's each on
//! its own when unedited: they read the contract vectors through paths that
//! runtime 0.4.0 keeps only hidden.

use std::path::Path;

use super::{UpgradeError, read_text};
use crate::scaffold::{self, NewSettings, Template};

/// SHA-256 of what each earlier ecp generated at these paths (templates
/// with `{{ crate_name }}` and `{{ name }}` unrendered; `src/provider.rs`
/// has no variables). From the history of `templates/local` and
/// `crates/ecp-runtime/src/v1/binding.rs` (`src/binding.rs` until 0.6.0), runtime 0.2.0 to 0.2.6.
const EARLIER: &[(&str, &str)] = &[
    (
        "src/provider.rs",
        "329b95b330bd129348de16b42f54982eec56c91594794fcad921ad599fafc878",
    ),
    (
        "src/provider.rs",
        "558aa671a4c89c910a3469932a01e29cdc8d2cd2827df636bffdaf721c72a329",
    ),
    (
        "src/provider.rs",
        "898d23a05c91fda1bed338d538ea14b496128624b5e5ba06f2803ea4f43aaa19",
    ),
    (
        "src/provider.rs",
        "d8e8dc5706b3bab07f7073c48c355faf329da85a41b23daf4a075b971dea374b",
    ),
    (
        "src/main.rs",
        "fb5e6d2bb69dd6999c51fd99e280fc73e896295693aa9e91698c14161c449c8a",
    ),
    (
        "tests/provider.rs",
        "2f42d6547da0dabb5ad9b36ebd7f1aef9505c42fe8b0271b1a0b586d46da2c25",
    ),
    (
        "tests/contract.rs",
        "d94bf76810ab635ed1fd5c13a19fb60a8714be67ea7fbf62dfd773588f24d1f9",
    ),
];

/// SHA-256 of the tests ecp generated with runtime 0.3.x (templates
/// unrendered), which read the contract vectors through paths runtime 0.4.0
/// keeps only hidden. Each is replaced by today's on its own when unedited:
/// neither depends on how `src/provider.rs` maps its API beyond what
/// today's does the same way.
const TESTS_0_3: &[(&str, &str)] = &[
    (
        "tests/contract.rs",
        "f039fc4bcee9855bdc445acf07779c0ef28dcf3a00d91b22ee08d0cf1d6e64ca",
    ),
    (
        "tests/provider.rs",
        "ce67211da2f45689f3f556fbc8f7041ee88b9ac209aa2aea3b6832b2224602c5",
    ),
];

/// The files converted together, the provider's first.
pub(super) const CONVERTED: &[&str] = &[
    "src/provider.rs",
    "src/main.rs",
    "tests/provider.rs",
    "tests/contract.rs",
];

/// What to do about the provider file.
#[derive(Debug, Default)]
pub(super) struct Plan {
    /// Files to write (path, contents), empty when nothing converts.
    pub writes: Vec<(String, Vec<u8>)>,
    /// One sentence for the owner about `src/provider.rs`, when there is
    /// something to say.
    pub note: Option<String>,
    /// One sentence about the tests, when they are replaced on their own.
    pub tests_note: Option<String>,
}

fn sha256(text: &str) -> String {
    crate::digest::sha256(text.as_bytes())
}

/// Whether `text` at `path` is what an earlier ecp generated for the
/// extension `name`.
fn generated_earlier(path: &str, text: &str, name: &str) -> bool {
    generated_by(EARLIER, path, text, name)
}

/// Whether `text` at `path` is one of `table`'s for the extension `name`.
fn generated_by(table: &[(&str, &str)], path: &str, text: &str, name: &str) -> bool {
    let unrendered = text
        .replace(&name.replace('-', "_"), "{{ crate_name }}")
        .replace(name, "{{ name }}");
    let digests = [sha256(text), sha256(&unrendered)];
    table
        .iter()
        .any(|(p, digest)| *p == path && digests.iter().any(|d| d == digest))
}

/// What a fresh `ecp new` of the extension `name` writes at `paths`.
fn todays(name: &str, paths: &[&str]) -> Result<Vec<(String, Vec<u8>)>, UpgradeError> {
    let settings = NewSettings::with_defaults(name, Template::Local);
    let files = scaffold::plan(&settings).map_err(|e| UpgradeError::Render(e.to_string()))?;
    Ok(files
        .into_iter()
        .filter(|f| paths.contains(&f.path.as_str()))
        .map(|f| (f.path, f.contents))
        .collect())
}

/// Today's version of each of the tests that runtime 0.3.x's ecp wrote and
/// nobody edited since.
fn tests_of_0_3(
    name: &str,
    read: impl Fn(&str) -> Result<Option<String>, UpgradeError>,
) -> Result<Plan, UpgradeError> {
    let mut unedited = Vec::new();
    for (path, _) in TESTS_0_3 {
        if read(path)?.is_some_and(|text| generated_by(TESTS_0_3, path, &text, name)) {
            unedited.push(*path);
        }
    }
    if unedited.is_empty() {
        return Ok(Plan::default());
    }
    let writes = todays(name, &unedited)?;
    Ok(Plan {
        writes,
        note: None,
        tests_note: Some(format!(
            "{} as runtime 0.3's ecp wrote {}: now today's, reading the contract vectors through the runtime's API (contracts::render_vectors, ProviderItem::from_json)",
            unedited.join(" and "),
            if unedited.len() == 1 { "it" } else { "them" }
        )),
    })
}

/// Looks at `src/provider.rs` and the files written with it.
pub(super) fn plan(folder: &Path, name: &str) -> Result<Plan, UpgradeError> {
    let read = |path: &str| -> Result<Option<String>, UpgradeError> {
        let full = folder.join(path);
        if std::fs::symlink_metadata(&full).is_err() {
            return Ok(None);
        }
        read_text(folder, &full).map(Some)
    };
    let Some(provider) = read("src/provider.rs")? else {
        return Ok(Plan::default());
    };
    let old_binding = provider.contains("pub struct HttpSearchProvider");
    if !old_binding {
        return tests_of_0_3(name, read);
    }
    if !generated_earlier("src/provider.rs", &provider, name) {
        return Ok(Plan {
            writes: Vec::new(),
            note: Some(
                "an edited copy of the old V1 binding, left as it is (it still builds). The runtime now keeps the base URL, credential, redirect, retry, proxy, 1 MiB, UTF-8 and JSON rules itself (ecp_runtime::http::Upstream): your file can shrink to the request and the mapping, as a fresh `ecp new` writes it".to_owned(),
            ),
            tests_note: None,
        });
    }
    let mut edited = Vec::new();
    let mut present = vec!["src/provider.rs"];
    for path in &CONVERTED[1..] {
        if let Some(text) = read(path)? {
            present.push(path);
            if !generated_earlier(path, &text, name) {
                edited.push(*path);
            }
        }
    }
    if !edited.is_empty() {
        return Ok(Plan {
            writes: Vec::new(),
            note: Some(format!(
                "an unedited copy of the old V1 binding, left as it is because {} {} edited (it still builds). To move to the 80-line mapping on ecp_runtime::http, take src/provider.rs, src/main.rs and tests/ from a fresh `ecp new` and carry your edits over",
                edited.join(", "),
                if edited.len() == 1 { "was" } else { "were" }
            )),
            tests_note: None,
        });
    }
    let writes = todays(name, &present)?;
    Ok(Plan {
        writes,
        note: Some(
            "was an unedited copy of the old V1 binding: now the 80-line mapping on the runtime's client (ecp_runtime::http), with src/main.rs and the tests written for it".into(),
        ),
        tests_note: None,
    })
}
