//! The tool surface a target lists, pinned: what `ecp package` writes
//! into `tools.lock` and `ecp verify --live` holds a running server to.

use super::{
    CheckError, CheckSettings, DEFAULT_MUTATIONS, DEFAULT_SEED, UpstreamSource, open,
    target::Target,
};

/// The endpoint a server is given when only its tools are asked for:
/// loopback port 9 (discard), which nothing answers; `tools/list` never
/// reaches it.
const NOWHERE: &str = "http://127.0.0.1:9/";

impl CheckSettings {
    /// The settings of a run against `target`, with every default.
    pub fn for_target(target: Target) -> CheckSettings {
        CheckSettings {
            target,
            base_url_env: None,
            token_env: None,
            bearer: None,
            config_file: None,
            upstream: UpstreamSource::V1,
            lock: None,
            conformance: None,
            seed: DEFAULT_SEED,
            mutations: DEFAULT_MUTATIONS,
        }
    }
}

/// The tool surface the target lists, pinned ([`crate::surface`]): it is
/// started (or reached) as a check starts it, its endpoint pointed
/// [`NOWHERE`], and asked `tools/list` only; no search runs. `ecp
/// package`'s `tools.lock` and `ecp verify --live`.
pub async fn list_surface(
    settings: &CheckSettings,
) -> Result<crate::surface::ToolsLock, CheckError> {
    let opened = open(settings, NOWHERE, Some("ecp-pin")).await?;
    let listed = opened.session.client.list_all_tools().await;
    opened.session.close().await;
    let tools = listed.map_err(|e| CheckError::Target(format!("tools/list failed: {e}")))?;
    let values: Vec<serde_json::Value> = tools
        .iter()
        .map(|tool| serde_json::to_value(tool).unwrap_or_default())
        .collect();
    crate::surface::ToolsLock::of(&values).map_err(|e| CheckError::Target(e.to_string()))
}
