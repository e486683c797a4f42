//! Real search services nobody here wrote, from the registries, on
//! loopback: the upstreams `tests/it/any_api.rs` maps extensions to.
//!
//! - **Datasette** (PyPI, pinned in `tests/ci-tools.txt`, installed into
//!   `target/ci-tools` by `.ci/run` or on first use): a SQLite database
//!   with an FTS5 index, written by `tests/data/any_api/make_kb.py` from a
//!   corpus; `GET /kb/docs.json?_search=WORDS&_shape=objects&_size=5`
//!   answers `{"rows": [{"id": 1, "title", "body", "url", "updated"}], ...}`
//!   (the integer primary key as a JSON number; the object also echoes the
//!   search words, in `human_description_en`, `query.params.search` and
//!   `next_url`).
//! - **json-server** (npm, pinned here, installed into
//!   `target/npm-cache/json-server@VERSION` by `.ci/run` or on first use,
//!   npm's cache in `target/npm-cache/_npm`): a `db.json` of `{"docs":
//!   corpus}`; `GET /docs?q=WORDS&_limit=5` answers a top-level JSON array
//!   of the rows where some field holds WORDS (case-insensitively, as one
//!   phrase).
//!
//! A [`Service`] is killed when dropped; every wait is bounded and every
//! failure names what is missing.
#![allow(dead_code)] // each test uses a part

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex, mpsc},
    time::{Duration, Instant},
};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The json-server release the tests and `.ci/run` install.
pub const JSON_SERVER_VERSION: &str = "0.17.4";

/// How long a service may take to say where it listens and to answer.
const START_LIMIT: Duration = Duration::from_secs(60);

/// The corpus both services serve: `tests/data/any_api/docs.json`, rows
/// `{id (integer), title, body, url, updated}`.
pub fn corpus() -> PathBuf {
    Path::new(ROOT).join("tests/data/any_api/docs.json")
}

/// A running service on loopback, stopped (killed and reaped) on drop.
pub struct Service {
    /// `http://127.0.0.1:PORT/`: where the service's paths start.
    pub base_url: String,
    pub child: Child,
    what: &'static str,
    output: Arc<Mutex<String>>,
    _dir: tempfile::TempDir,
}

impl Service {
    /// Everything the service wrote to stdout and stderr so far.
    pub fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// `GET path` (relative to the base URL): the status and the body.
    pub fn get(&self, path: &str) -> (u16, String) {
        get(&self.base_url, path).unwrap_or_else(|e| {
            panic!(
                "{}: GET {path}: {e}\n--- its output\n{}",
                self.what,
                self.output()
            )
        })
    }

    /// Stops the service now (the same as dropping it).
    pub fn stop(self) {}
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP/1.0 GET on loopback (no client library needed): the status
/// and the body, or why not.
pub fn get(base_url: &str, path: &str) -> Result<(u16, String), String> {
    let rest = base_url
        .strip_prefix("http://")
        .ok_or("not an http:// URL")?;
    let (authority, base_path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut stream = TcpStream::connect(authority).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    write!(
        stream,
        "GET /{base_path}{path} HTTP/1.0\r\nHost: {authority}\r\nAccept: application/json\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).map_err(|e| e.to_string())?;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").ok_or("no HTTP answer")?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status in {head:?}"))?;
    Ok((status, body.to_owned()))
}

/// Reads `child`'s stdout and stderr into one log, sending each line on.
fn collect_output(child: &mut Child) -> (Arc<Mutex<String>>, mpsc::Receiver<String>) {
    let output = Arc::new(Mutex::new(String::new()));
    let (lines, receiver) = mpsc::channel();
    let streams: [Box<dyn Read + Send>; 2] = [
        Box::new(child.stdout.take().unwrap()),
        Box::new(child.stderr.take().unwrap()),
    ];
    for stream in streams {
        let (output, lines) = (output.clone(), lines.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                output.lock().unwrap().push_str(&format!("{line}\n"));
                let _ = lines.send(line);
            }
        });
    }
    (output, receiver)
}

/// Waits (bounded) until `GET probe` answers 200.
fn wait_until_answering(service: &mut Service, probe: &str) {
    let deadline = Instant::now() + START_LIMIT;
    loop {
        if let Ok((200, _)) = get(&service.base_url, probe) {
            return;
        }
        if let Ok(Some(status)) = service.child.try_wait() {
            panic!(
                "{} exited ({status}) before answering GET {probe}:\n{}",
                service.what,
                service.output()
            );
        }
        assert!(
            Instant::now() < deadline,
            "{} did not answer GET {probe} within {START_LIMIT:?}:\n{}",
            service.what,
            service.output()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Datasette serving `corpus` (a JSON array of `{id, title, body, url,
/// updated}` rows) as the table `docs` of the database `kb`, with FTS5.
pub fn start_datasette(corpus: &Path) -> Service {
    let datasette = crate::ci_tools::tool("datasette");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kb.db");
    let made = Command::new("python3")
        .arg(Path::new(ROOT).join("tests/data/any_api/make_kb.py"))
        .arg(corpus)
        .arg(&db)
        .stdin(Stdio::null())
        .output()
        .expect("python3 runs (the test suite needs it)");
    assert!(
        made.status.success(),
        "make_kb.py could not write the database (SQLite with FTS5 in python3's sqlite3):\n{}",
        String::from_utf8_lossy(&made.stderr)
    );
    // Port 0: uvicorn binds a free port and says which.
    let mut child = Command::new(&datasette)
        .arg("serve")
        .arg(&db)
        .args(["--host", "127.0.0.1", "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{} (tests/ci-tools.txt): {e}", datasette.display()));
    let (output, lines) = collect_output(&mut child);
    let deadline = Instant::now() + START_LIMIT;
    let port = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => {
                if let Some(at) = line.find("Uvicorn running on http://127.0.0.1:") {
                    let rest = &line[at + "Uvicorn running on http://127.0.0.1:".len()..];
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    break digits;
                }
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "datasette did not say where it listens within {START_LIMIT:?}:\n{}",
                    output.lock().unwrap()
                );
            }
        }
    };
    let mut service = Service {
        base_url: format!("http://127.0.0.1:{port}/"),
        child,
        what: "datasette",
        output,
        _dir: dir,
    };
    wait_until_answering(&mut service, "kb/docs.json?_size=1");
    service
}

static NPM_INSTALL: Mutex<()> = Mutex::new(());

/// json-server's command-line entry point, installed first when needed
/// (as `.ci/run` installs it: a half-finished install is never reused).
pub fn json_server_bin() -> PathBuf {
    let _guard = NPM_INSTALL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let cache = Path::new(ROOT).join("target/npm-cache");
    let root = cache.join(format!("json-server@{JSON_SERVER_VERSION}"));
    let package = root.join("node_modules/json-server");
    let bin = package.join("lib/cli/bin.js");
    if package.join("package.json").is_file() && bin.is_file() {
        return bin;
    }
    let staging = cache.join(format!("json-server@{JSON_SERVER_VERSION}.partial"));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).unwrap();
    let status = Command::new("npm")
        .args([
            "install",
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefer-offline",
            "--cache",
        ])
        .arg(cache.join("_npm"))
        .arg("--prefix")
        .arg(&staging)
        .arg(format!("json-server@{JSON_SERVER_VERSION}"))
        .stdin(Stdio::null())
        .status()
        .expect("npm runs (Node.js 20 with npm is required by the test suite)");
    assert!(
        status.success(),
        "npm install json-server@{JSON_SERVER_VERSION} failed (it needs the npm registry, or `.ci/run` run once before)"
    );
    let _ = std::fs::remove_dir_all(&root);
    std::fs::rename(&staging, &root).unwrap();
    assert!(
        bin.is_file(),
        "{} after installing json-server",
        bin.display()
    );
    bin
}

/// json-server serving `corpus` (a JSON array of rows) as `/docs`,
/// read-only.
pub fn start_json_server(corpus: &Path) -> Service {
    let bin = json_server_bin();
    let rows: serde_json::Value = serde_json::from_slice(
        &std::fs::read(corpus).unwrap_or_else(|e| panic!("{}: {e}", corpus.display())),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.json");
    std::fs::write(&db, serde_json::json!({ "docs": rows }).to_string()).unwrap();
    // json-server prints the port it was given, not the one bound (`--port
    // 0` shows 0): take a free port, and another if it was taken meanwhile.
    let mut last = String::new();
    for _ in 0..3 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new("node")
            .arg(&bin)
            .arg(&db)
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--ro"])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node runs (Node.js 20 is required by the test suite)");
        let (output, _lines) = collect_output(&mut child);
        let base_url = format!("http://127.0.0.1:{port}/");
        let deadline = Instant::now() + START_LIMIT;
        loop {
            if let Ok((200, _)) = get(&base_url, "docs?_limit=1") {
                return Service {
                    base_url,
                    child,
                    what: "json-server",
                    output,
                    _dir: dir,
                };
            }
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "json-server did not answer on 127.0.0.1:{port} within {START_LIMIT:?}:\n{}",
                    output.lock().unwrap()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(50));
        last = output.lock().unwrap().clone();
    }
    panic!("json-server exited three times before answering:\n{last}");
}
