//! The administrator files of Qwen's Mem0 provider, as `ecp lint` judges
//! them (`ecp::lint::mem0`) and as `ecp check --config-file` reads and
//! points them at its upstream (`ecp::check::config_file`). Properties,
//! not only "no panic": a file lint recognises is judged with findings
//! that name a rule of its own family or a secret rule; a Qwen
//! InstanceConfig check accepts is pointed at the upstream's origin and
//! keeps every other member as it was.

use std::path::Path;

const UPSTREAM: &str = "http://127.0.0.1:9/base/";

/// One input, as the fuzz target and the seed replay in `cargo test` run it.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(root) = ecp::json::parse(&text)
        && let Some(kind) = ecp::lint::mem0::recognise(&root)
    {
        let mut report = ecp::lint::Report::default();
        ecp::lint::mem0::lint("fuzz.json", &text, &root, kind, &mut report);
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.rule.id().starts_with("mem0-")
                    || f.rule.id().contains("secret")
                    || f.rule.id().contains("credential")
                    || f.rule.id().contains("token")
                    || f.rule.id().contains("key"))
        );
    }
    let var = ecp::check::config_file::QWEN_MEM0_CONFIG_ENV;
    let Ok(config) = ecp::check::config_file::ConfigFile::from_text(
        var,
        Path::new("/etc/qwen/memory.instance.json"),
        &text,
        None,
        None,
    ) else {
        return;
    };
    let original = ecp::json::parse_value(&text).unwrap_or_default();
    let copy = config
        .pointed_copy(UPSTREAM)
        .expect("a loopback URL is a URL");
    assert_eq!(copy["endpoint"]["origin"], "http://127.0.0.1:9");
    assert_eq!(copy["endpoint"]["basePath"], "/base");
    for (key, value) in original.as_object().into_iter().flatten() {
        if key != "endpoint" {
            assert_eq!(&copy[key], value, "{key} changed");
        }
    }
}
