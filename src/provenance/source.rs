//! What a provenance statement says about where a build came from and what
//! built it: the git source, the toolchain, the builder, the epoch. Every
//! fact is read from a tool's output or the environment; none is guessed,
//! and a fact that cannot be read is left out rather than made up.

use std::path::Path;
use std::process::{Command, Stdio};

/// The source the extension folder was packaged from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// `git+https://host/owner/repo`, without credentials; `None` when the
    /// checkout has no remote that names a host.
    pub uri: Option<String>,
    /// The full commit id of `HEAD`.
    pub commit: String,
    /// The extension folder relative to the repository root (`.` at the root).
    pub path: String,
    /// Whether the extension folder had changes not in the commit
    /// (the output folder aside).
    pub dirty: bool,
}

/// What built the entry point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Toolchain {
    /// `rustc -vV`, as `release`, `commit-hash`, `host`, `LLVM version`.
    Rust {
        release: String,
        commit: String,
        host: String,
        llvm: String,
    },
    /// `node --version` and `npm --version`.
    Node { node: String, npm: String },
    /// A prebuilt executable given with `--binary`: only its digest is known.
    Prebuilt { sha256: String },
    /// A manifest-only extension: nothing was built.
    None,
}

/// Who ran the build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Builder {
    pub id: String,
    /// The run, when the environment names one (GitHub Actions).
    pub invocation: Option<String>,
}

/// How long one git command in a received folder may take: a hostile
/// configuration can point git at a FIFO (`include.path`).
const GIT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// `git -C folder ARGS` with the configuration that would run code from the
/// folder turned off: `core.fsmonitor` (a command `git status` runs),
/// `core.hooksPath`, and every filter driver the configuration names (its
/// `clean` runs on `git status` for a racily clean file), read first with
/// `git config`, which runs nothing. The folder is someone else's: `ecp
/// package` of a received folder must not run its `.git/config`.
fn git(folder: &Path, args: &[&str]) -> Option<String> {
    let mut command = Command::new("git");
    command.arg("-C").arg(folder).args(SAFE_CONFIG);
    if args.first() != Some(&"config") {
        let drivers = git(
            folder,
            &["config", "--name-only", "--get-regexp", r"^filter\."],
        )
        .unwrap_or_default();
        let mut names: Vec<&str> = drivers
            .lines()
            .filter_map(|key| key.strip_prefix("filter.")?.rsplit_once('.'))
            .map(|(name, _)| name)
            .collect();
        names.sort_unstable();
        names.dedup();
        // A driver that `-c` cannot name (an `=` in its name, too many)
        // cannot be turned off: then git does not run here.
        if names.len() > 64 || names.iter().any(|n| n.contains('=')) {
            return None;
        }
        for name in names {
            for part in ["clean", "smudge", "process"] {
                command.arg("-c").arg(format!("filter.{name}.{part}="));
            }
        }
    }
    command.args(args);
    let output = run_bounded(command, GIT_TIMEOUT)?;
    output.status.success().then(|| {
        String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_owned()
    })
}

/// Settings given to every git command in a received folder.
const SAFE_CONFIG: &[&str] = &[
    "--no-optional-locks",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.untrackedCache=false",
];

/// Runs `command` (stdin closed, stderr dropped) and kills it when it
/// outlives `timeout`.
fn run_bounded(mut command: Command, timeout: std::time::Duration) -> Option<std::process::Output> {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let pid = child.id();
    let (done, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    match wait.recv_timeout(timeout) {
        Ok(output) => output.ok(),
        Err(_) => {
            #[cfg(unix)]
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            #[cfg(not(unix))]
            let _ = pid;
            None
        }
    }
}

/// The git source of `folder`, when it is inside a work tree with a
/// commit. `out_dir` (what `ecp package` writes) does not count as a change.
pub fn source(folder: &Path, out_dir: &Path) -> Option<Source> {
    let root = git(folder, &["rev-parse", "--show-toplevel"])?;
    let commit = git(folder, &["rev-parse", "--verify", "HEAD^{commit}"])?;
    let root = Path::new(&root).canonicalize().ok()?;
    let here = folder.canonicalize().ok()?;
    let path = here.strip_prefix(&root).ok()?;
    let path = if path.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        path.to_string_lossy().replace('\\', "/")
    };
    let mut status = vec![
        "status".to_owned(),
        "--porcelain=v1".to_owned(),
        "--untracked-files=normal".to_owned(),
        "--".to_owned(),
        ".".to_owned(),
    ];
    if let Ok(out) = out_dir.canonicalize()
        && let Ok(inside) = out.strip_prefix(&here)
        && !inside.as_os_str().is_empty()
    {
        status.push(format!(
            ":(exclude){}",
            inside.to_string_lossy().replace('\\', "/")
        ));
    }
    let status: Vec<&str> = status.iter().map(String::as_str).collect();
    // A status that cannot be read is not proof of a clean tree.
    let dirty = git(folder, &status).is_none_or(|text| !text.is_empty());
    Some(Source {
        uri: repository_uri(folder),
        commit,
        path,
        dirty,
    })
}

/// The repository as a statement names it: GitHub Actions' own repository
/// when running there, else the `origin` remote, credentials removed.
fn repository_uri(folder: &Path) -> Option<String> {
    if std::env::var("GITHUB_ACTIONS").as_deref() == Ok("true")
        && let (Ok(server), Ok(repository)) = (
            std::env::var("GITHUB_SERVER_URL"),
            std::env::var("GITHUB_REPOSITORY"),
        )
    {
        return Some(format!(
            "git+{}/{}",
            server.trim_end_matches('/'),
            repository
        ));
    }
    normalize_remote(&git(folder, &["remote", "get-url", "origin"])?)
}

/// `https://user:token@host/o/r.git` -> `git+https://host/o/r`;
/// `git@host:o/r.git` -> `git+https://host/o/r`; a local path -> `None`
/// (it names nothing a reviewer can fetch, and leaks a home folder).
pub fn normalize_remote(remote: &str) -> Option<String> {
    let remote = remote.trim();
    if remote.chars().any(char::is_control) || remote.is_empty() {
        return None;
    }
    let strip = |path: &str| {
        path.trim_end_matches('/')
            .trim_end_matches(".git")
            .to_owned()
    };
    if let Ok(mut url) = url::Url::parse(remote) {
        if !matches!(url.scheme(), "https" | "http" | "ssh" | "git") || url.host_str().is_none() {
            return None;
        }
        let _ = url.set_username("");
        let _ = url.set_password(None);
        url.set_query(None);
        url.set_fragment(None);
        let text = strip(url.as_str());
        return Some(format!("git+{text}"));
    }
    // scp-like `user@host:path`.
    let (authority, path) = remote.split_once(':')?;
    let host = authority.rsplit('@').next()?;
    if host.is_empty() || host.contains('/') || path.starts_with('/') || path.is_empty() {
        return None;
    }
    Some(format!("git+https://{host}/{}", strip(path)))
}

/// The commit time of `HEAD`, the default `SOURCE_DATE_EPOCH`.
pub fn commit_time(folder: &Path) -> Option<u64> {
    git(folder, &["log", "-1", "--format=%ct", "HEAD"])?
        .trim()
        .parse()
        .ok()
}

/// `rustc -vV` as cargo would run it in `folder` (rustup's overrides apply).
pub fn rust_toolchain(folder: &Path) -> Option<Toolchain> {
    let output = Command::new(crate::extension::build::rustc())
        .arg("-vV")
        .current_dir(folder)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(": "))
            .map(|value| value.trim().to_owned())
            .unwrap_or_default()
    };
    Some(Toolchain::Rust {
        release: field("release"),
        commit: field("commit-hash"),
        host: field("host"),
        llvm: field("LLVM version"),
    })
}

/// `node --version` and `npm --version`.
pub fn node_toolchain(folder: &Path) -> Option<Toolchain> {
    let version = |program: &str| {
        let output = Command::new(program)
            .arg("--version")
            .current_dir(folder)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    Some(Toolchain::Node {
        node: version("node")?,
        npm: version(if cfg!(windows) { "npm.cmd" } else { "npm" })?,
    })
}

/// GitHub Actions' runner and run when the build runs there; else a local
/// build by `ecp package`.
pub fn builder() -> Builder {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if var("GITHUB_ACTIONS").as_deref() == Some("true") {
        let hosted = var("RUNNER_ENVIRONMENT").as_deref() != Some("self-hosted");
        let invocation = match (
            var("GITHUB_SERVER_URL"),
            var("GITHUB_REPOSITORY"),
            var("GITHUB_RUN_ID"),
        ) {
            (Some(server), Some(repository), Some(run)) => Some(format!(
                "{}/{repository}/actions/runs/{run}/attempts/{}",
                server.trim_end_matches('/'),
                var("GITHUB_RUN_ATTEMPT").unwrap_or_else(|| "1".into())
            )),
            _ => None,
        };
        return Builder {
            id: format!(
                "https://github.com/actions/runner/{}",
                if hosted {
                    "github-hosted"
                } else {
                    "self-hosted"
                }
            ),
            invocation,
        };
    }
    Builder {
        id: format!(
            "{}/builders/local",
            env!("CARGO_PKG_REPOSITORY").trim_end_matches('/')
        ),
        invocation: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_lose_credentials_and_local_paths() {
        for (remote, want) in [
            (
                "https://x-access-token:ghs_secret@github.com/acme/ctx.git",
                Some("git+https://github.com/acme/ctx"),
            ),
            (
                "git@github.com:acme/ctx.git",
                Some("git+https://github.com/acme/ctx"),
            ),
            (
                "ssh://git@gitlab.example/acme/ctx",
                Some("git+ssh://gitlab.example/acme/ctx"),
            ),
            (
                "https://github.com/acme/ctx/",
                Some("git+https://github.com/acme/ctx"),
            ),
            ("/home/me/src/ctx", None),
            ("file:///home/me/src/ctx", None),
            ("../ctx", None),
            ("C:\\src\\ctx", None),
            (
                "https://github.com/acme/ctx\n",
                Some("git+https://github.com/acme/ctx"),
            ),
            ("https://github.com/a\u{7}b", None),
        ] {
            assert_eq!(normalize_remote(remote).as_deref(), want, "{remote:?}");
        }
    }
}
