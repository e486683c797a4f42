//! nginx from Debian in front of adapter replicas, with a test CA: shared
//! by `tests/it/deploy.rs` and the e2e suite, which run the remote
//! template's generated `deploy/nginx.conf` with only its certificate
//! paths, listen address and replica addresses replaced.
#![allow(dead_code)] // each including crate uses a part

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// Runs `program` in `dir`; panics with what it said unless it succeeds.
pub fn run(program: &str, args: &[&str], dir: &Path) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program} (CI installs it): {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{program} {args:?}:\n{text}");
    text
}

/// A test CA and a server certificate for `host` (and 127.0.0.1) it signed.
pub struct TestCa {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TestCa {
    pub fn new(dir: &Path, host: &str) -> TestCa {
        let at = |name: &str| dir.join(name).to_str().unwrap().to_owned();
        let openssl = |args: &[&str]| run("openssl", args, dir);
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &at("ca.key"),
            "-out",
            &at("ca.pem"),
            "-days",
            "2",
            "-subj",
            "/CN=ecp test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]);
        openssl(&[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &at("server.key"),
            "-out",
            &at("server.csr"),
            "-subj",
            &format!("/CN={host}"),
        ]);
        std::fs::write(
            dir.join("server.ext"),
            format!(
                "subjectAltName=DNS:{host},IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            ),
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            &at("server.csr"),
            "-CA",
            &at("ca.pem"),
            "-CAkey",
            &at("ca.key"),
            "-CAcreateserial",
            "-out",
            &at("server.crt"),
            "-days",
            "2",
            "-extfile",
            &at("server.ext"),
        ]);
        TestCa {
            ca: dir.join("ca.pem"),
            cert: dir.join("server.crt"),
            key: dir.join("server.key"),
        }
    }

    /// The generated nginx.conf with this certificate in place of the
    /// `/etc/nginx/tls/HOST.*` paths it names.
    pub fn use_in(&self, conf: &str, host: &str) -> String {
        let (cert, key) = (
            format!("/etc/nginx/tls/{host}.crt"),
            format!("/etc/nginx/tls/{host}.key"),
        );
        assert!(conf.contains(&cert) && conf.contains(&key), "{conf}");
        conf.replace(&cert, self.cert.to_str().unwrap())
            .replace(&key, self.key.to_str().unwrap())
    }
}

/// `conf` with nginx's scratch folders under `dir`, so that it runs
/// without root (the compiled-in ones are under /var/lib/nginx).
pub fn scratch_paths(conf: &str, dir: &Path) -> String {
    assert!(conf.contains("http {\n"), "{conf}");
    let paths: String = ["client_body", "proxy", "fastcgi", "scgi", "uwsgi"]
        .iter()
        .map(|kind| format!("    {kind}_temp_path {}/nginx-{kind};\n", dir.display()))
        .collect();
    conf.replacen("http {\n", &format!("http {{\n{paths}"), 1)
}

/// nginx in the foreground with `conf`; stopped when dropped.
pub struct Nginx {
    child: Child,
}

impl Drop for Nginx {
    /// SIGTERM (nginx's fast shutdown, which stops its workers too; a
    /// SIGKILL of the master would leave them running), then SIGKILL if it
    /// is still there after 5 s.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Nginx {
    /// The generated nginx.conf, listening on 127.0.0.1:`port` in front of
    /// `replicas` (the three example servers replaced), with `tls`.
    pub fn start(
        generated: &Path,
        dir: &Path,
        port: u16,
        replicas: &[String],
        tls: &TestCa,
    ) -> Nginx {
        let mut conf = std::fs::read_to_string(generated).unwrap();
        conf = tls.use_in(&conf, "localhost");
        assert!(conf.contains("listen 443 ssl;"), "{conf}");
        conf = conf.replace("listen 443 ssl;", &format!("listen 127.0.0.1:{port} ssl;"));
        for (index, replica) in replicas.iter().enumerate() {
            let example = format!("server 10.0.0.{}:8080 ", 11 + index);
            assert!(conf.contains(&example), "{conf}");
            conf = conf.replace(&example, &format!("server {replica} "));
        }
        Nginx::run(&conf, dir, port)
    }

    /// nginx with `conf` (its scratch folders moved under `dir`), once it
    /// listens on 127.0.0.1:`port`.
    pub fn run(conf: &str, dir: &Path, port: u16) -> Nginx {
        let path = dir.join("nginx.conf");
        std::fs::write(&path, scratch_paths(conf, dir)).unwrap();
        let child = Command::new("nginx")
            .arg("-c")
            .arg(&path)
            .arg("-g")
            .arg(format!(
                "daemon off; pid {}/nginx.pid; error_log {}/nginx-error.log warn;",
                dir.display(),
                dir.display()
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("nginx runs (CI installs Debian's nginx-light)");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "nginx did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Nginx { child }
    }
}
