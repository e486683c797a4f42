//! What a generated local extension copies verbatim from ecp itself, and
//! the crates.io versions it depends on. Tests fail when a copy drifts from
//! ecp's own module or a version from ecp's Cargo.lock.

/// (path in the generated crate, contents), embedded at compile time.
pub const COPIED_SOURCES: &[(&str, &str)] = &[
    ("src/profile/mod.rs", include_str!("../profile/mod.rs")),
    (
        "src/profile/ecmascript.rs",
        include_str!("../profile/ecmascript.rs"),
    ),
    ("src/profile/query.rs", include_str!("../profile/query.rs")),
    (
        "src/profile/render.rs",
        include_str!("../profile/render.rs"),
    ),
    ("src/runtime/mod.rs", include_str!("../runtime/mod.rs")),
    (
        "src/runtime/server.rs",
        include_str!("../runtime/server.rs"),
    ),
    ("src/runtime/tool.rs", include_str!("../runtime/tool.rs")),
    (
        "src/runtime/framing.rs",
        include_str!("../runtime/framing.rs"),
    ),
    ("src/runtime/log.rs", include_str!("../runtime/log.rs")),
    ("src/runtime/proxy.rs", include_str!("../runtime/proxy.rs")),
    (
        "src/runtime/remote/mod.rs",
        include_str!("../runtime/remote/mod.rs"),
    ),
    (
        "src/runtime/remote/auth.rs",
        include_str!("../runtime/remote/auth.rs"),
    ),
    (
        "src/runtime/remote/http.rs",
        include_str!("../runtime/remote/http.rs"),
    ),
    (
        "src/runtime/remote/settings.rs",
        include_str!("../runtime/remote/settings.rs"),
    ),
    // The provider's own file starts as the Generic HTTP Search V1 binding
    // (after a header that says it is theirs to edit).
    ("src/provider.rs", include_str!("../providers/http.rs")),
    (
        "contracts/v1/context_search.input.schema.json",
        include_str!("../../contracts/v1/context_search.input.schema.json"),
    ),
    (
        "contracts/v1/context_search.output.schema.json",
        include_str!("../../contracts/v1/context_search.output.schema.json"),
    ),
    (
        "contracts/v1/test-vectors.json",
        include_str!("../../contracts/v1/test-vectors.json"),
    ),
    (
        "contracts/v1/render-vectors.json",
        include_str!("../../contracts/v1/render-vectors.json"),
    ),
];

/// The crates a generated extension depends on, at the versions ecp builds
/// with (its Cargo.lock).
pub const DEPENDENCY_VERSIONS: &[(&str, &str)] = &[
    ("serde", "1.0.229"),
    ("serde_json", "1.0.154"),
    ("rmcp", "3.11.0"),
    ("tokio", "1.54.1"),
    ("tokio-util", "0.7.20"),
    ("reqwest", "0.13.5"),
    ("rustls", "0.23.46"),
    ("url", "2.5.8"),
    ("hyper", "1.12.0"),
    ("hyper-util", "0.1.21"),
    ("http-body-util", "0.1.5"),
    ("bytes", "1.12.2"),
    ("ring", "0.17.14"),
    ("base64", "0.23.1"),
];
