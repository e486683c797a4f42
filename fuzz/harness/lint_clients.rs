//! The other clients' files as `ecp lint` reads them: the input's first
//! byte picks the file (Gemini's, Claude's plugin or `.mcp.json`, a bundle
//! manifest, `server.json`, an npm `package.json`), the rest is its text;
//! the Qwen manifest beside it is a fixed valid one, so that the drift
//! rules run too. Then the three report formats.

use ecp::{
    channels,
    lint::{Report, clients, registry, report},
};

const QWEN: &str = r#"{"name":"acme-context","version":"0.1.0","description":"d","mcpServers":{"acme-context":{"command":"node","args":["${extensionPath}${/}dist${/}main.js"],"env":{"ACME_TOKEN":"${ACME_TOKEN}"},"includeTools":["context_search"]}}}"#;

/// One input, as the fuzz target and the seed replay in `cargo test` run it.
pub fn run(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let mut report = Report::default();
    match (pick & 0x7f) % 6 {
        4 => registry::lint(
            "server.json",
            text,
            &[("a.mcpb".into(), "0".repeat(64))],
            &mut report,
        ),
        5 => clients::npm_package("package.json", text, Some("0.1.0"), &mut report),
        n => {
            let file = channels::CLIENT_FILES[n as usize];
            let label = |relative: &str| relative.to_owned();
            let read = |relative: &str| {
                (relative == file || (n == 2 && relative == channels::CLAUDE))
                    .then(|| text.to_owned())
            };
            let exists = |relative: &str| {
                relative == file
                    || relative == "dist/main.js"
                    || (n == 2 && relative == channels::CLAUDE)
            };
            let holds =
                |relative: &str| exists(relative) || (pick & 0x40 != 0 && relative == "hooks");
            let place = clients::Place {
                label: &label,
                read: &read,
                exists: &exists,
                holds: &holds,
                shipped: pick & 0x80 != 0,
            };
            clients::lint(
                &place,
                Some(QWEN),
                &ecp::extension::Project::default(),
                &mut report,
            );
        }
    }
    let _ = report::human(&report, false);
    let _ = report::json(&report);
    let _ = report::sarif(&report);
}
