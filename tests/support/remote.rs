//! The remote adapter as a child process (`ecp serve --listen 127.0.0.1:0`,
//! or a built `dist/main`) with its JSON stderr collected, shared by the
//! integration and e2e suites; each declares `jwt` (tests/support/jwt.rs)
//! beside it.
#![allow(dead_code)] // each including crate uses a part

use std::{
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::jwt::ISSUER;

/// A running `ecp serve --listen`; killed when dropped.
pub struct RemoteServer {
    child: tokio::process::Child,
    /// The MCP endpoint (the resource URL), `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    lines: Arc<Mutex<Vec<String>>>,
}

impl RemoteServer {
    /// Starts `ecp serve ARGS --listen 127.0.0.1:0` and waits until it
    /// says where it listens.
    pub async fn start(args: &[&str], env: &[(&str, &str)]) -> RemoteServer {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_ecp"));
        command
            .arg("serve")
            .env_remove("PROVIDER_CONTEXT_BASE_URL")
            .env_remove("PROVIDER_CONTEXT_TOKEN")
            .envs(env.iter().copied());
        RemoteServer::launch(command, args).await
    }

    /// Starts another adapter binary (a built `dist/main`) the same way.
    pub async fn start_program(
        program: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> RemoteServer {
        let mut command = tokio::process::Command::new(program);
        command.envs(env.iter().copied());
        RemoteServer::launch(command, args).await
    }

    /// `ecp serve ARGS --listen ADDRESS` (a fixed address, as a restarted
    /// replica takes its predecessor's).
    pub async fn start_on(args: &[&str], env: &[(&str, &str)], address: &str) -> RemoteServer {
        RemoteServer::try_start_on(args, env, address)
            .await
            .unwrap_or_else(|| panic!("ecp serve did not listen on {address}"))
    }

    /// [`RemoteServer::start_on`], or `None` when the server ends without
    /// listening (the address is still taken).
    pub async fn try_start_on(
        args: &[&str],
        env: &[(&str, &str)],
        address: &str,
    ) -> Option<RemoteServer> {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_ecp"));
        command
            .arg("serve")
            .env_remove("PROVIDER_CONTEXT_BASE_URL")
            .env_remove("PROVIDER_CONTEXT_TOKEN")
            .envs(env.iter().copied());
        RemoteServer::try_launch(command, args, address).await
    }

    async fn launch(command: tokio::process::Command, args: &[&str]) -> RemoteServer {
        let lines = Arc::new(Mutex::new(Vec::new()));
        match RemoteServer::try_launch_logging(command, args, "127.0.0.1:0", lines.clone()).await {
            Some(server) => server,
            None => panic!("no listening line:\n{}", lines.lock().unwrap().join("\n")),
        }
    }

    async fn try_launch(
        command: tokio::process::Command,
        args: &[&str],
        address: &str,
    ) -> Option<RemoteServer> {
        RemoteServer::try_launch_logging(command, args, address, Arc::default()).await
    }

    async fn try_launch_logging(
        mut command: tokio::process::Command,
        args: &[&str],
        address: &str,
        lines: Arc<Mutex<Vec<String>>>,
    ) -> Option<RemoteServer> {
        command
            .args(args)
            .args(["--listen", address])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn ecp serve --listen");
        let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
        let listening = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = stderr.next_line().await {
                lines.lock().unwrap().push(line.clone());
                if let Ok(event) = serde_json::from_str::<Value>(&line)
                    && event["event"] == "listening"
                {
                    return Some(event);
                }
            }
            None
        })
        .await
        .ok()
        .flatten()?;
        {
            let lines = lines.clone();
            tokio::spawn(async move {
                while let Ok(Some(line)) = stderr.next_line().await {
                    lines.lock().unwrap().push(line);
                }
            });
        }
        Some(RemoteServer {
            child,
            url: listening["resource"].as_str().unwrap().to_owned(),
            origin: format!("http://{}", listening["address"].as_str().unwrap()),
            lines,
        })
    }

    /// Everything written to stderr so far.
    pub fn stderr(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// Waits until nothing new has reached stderr for 300 ms (at most
    /// 10 s): the adapter logs a request after its answer is on the wire,
    /// so a test that reads the log right after a call may miss the end.
    pub async fn settle(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let mut seen = self.lines.lock().unwrap().len();
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let now = self.lines.lock().unwrap().len();
            if now == seen {
                return;
            }
            seen = now;
        }
    }

    /// The JSON log events named `event`.
    pub fn events(&self, event: &str) -> Vec<Value> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|line| line["event"] == event)
            .collect()
    }

    /// The names of the process's threads (`/proc/PID/task/*/comm`; a
    /// tokio worker is `tokio-rt-worker`).
    pub fn thread_names(&self) -> Vec<String> {
        let pid = self.child.id().expect("still running");
        // A thread may end between the listing and the read: skipped.
        let mut names: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap()
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
            .map(|comm| comm.trim_end().to_owned())
            .collect();
        names.sort();
        names
    }

    pub fn terminate(&self) {
        let pid = self.child.id().expect("still running").to_string();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(status.success());
    }

    pub async fn wait(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        tokio::time::timeout(limit, self.child.wait())
            .await
            .ok()
            .map(Result::unwrap)
    }
}

/// Server arguments accepting tokens from [`ISSUER`] signed by keys in the
/// JWKS file at `jwks`.
pub fn auth_args(jwks: &std::path::Path) -> Vec<String> {
    vec![
        "--authorization-server".into(),
        ISSUER.into(),
        "--jwks".into(),
        jwks.display().to_string(),
    ]
}
