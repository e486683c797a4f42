//! Release provenance, proven against what nobody here wrote: keys made by
//! `openssl` and `ssh-keygen`, envelopes and statements checked by
//! securesystemslib and in-toto-attestation (PyPI, `tests/python/
//! verify_provenance.py`), archives and binaries rebuilt from two folders
//! with no path of the build machine in them; and `ecp verify` accepting a good release and
//! refusing each kind of tampering with its own message.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use serde_json::{Value, json};

use crate::cli::{ecp, ecp_new, ecp_shipped_profile, package_into, prebuilt};

const ARCHIVE: &str = "linux.x64.acme-context.tar.gz";

fn run(program: &str, args: &[&str], dir: &Path) -> Output {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?}:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn git(dir: &Path, args: &[&str]) {
    let mut all = vec![
        "-c",
        "user.name=ecp test",
        "-c",
        "user.email=test@ecp.invalid",
        "-c",
        "commit.gpgsign=false",
    ];
    all.extend_from_slice(args);
    run("git", &all, dir);
}

/// `ecp new` in `parent/acme-context`, with its lockfile, committed.
fn committed_extension(parent: &Path) -> PathBuf {
    let dir = parent.join("acme-context");
    let output = ecp_new(&dir, &[]);
    assert!(output.status.success(), "{output:?}");
    run(env!("CARGO"), &["generate-lockfile", "--offline"], &dir);
    git(&dir, &["init", "--quiet"]);
    git(&dir, &["add", "--all"]);
    git(&dir, &["commit", "--quiet", "-m", "acme-context"]);
    dir
}

/// `ecp package DIR --binary BINARY --out-dir OUT EXTRA...`: a stand-in
/// build, for the tests that are about signatures and tampering rather
/// than compilers.
fn package_prebuilt(dir: &Path, binary: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["--binary", binary.to_str().unwrap()];
    args.extend_from_slice(extra);
    package_into(dir, out, &args)
}

/// A key pair made by a real tool: (private key file, public key file).
struct KeyPair {
    label: &'static str,
    private: PathBuf,
    public: PathBuf,
}

fn key_pairs(dir: &Path) -> Vec<KeyPair> {
    let at = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let openssl = |args: &[&str]| run("openssl", args, dir);
    openssl(&[
        "genpkey",
        "-algorithm",
        "ed25519",
        "-out",
        &at("ed25519.pem"),
    ]);
    openssl(&[
        "pkey",
        "-in",
        &at("ed25519.pem"),
        "-pubout",
        "-out",
        &at("ed25519.pub.pem"),
    ]);
    openssl(&[
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-out",
        &at("p256.pem"),
    ]);
    openssl(&[
        "pkey",
        "-in",
        &at("p256.pem"),
        "-pubout",
        "-out",
        &at("p256.pub.pem"),
    ]);
    openssl(&[
        "ecparam",
        "-name",
        "prime256v1",
        "-genkey",
        "-noout",
        "-out",
        &at("sec1.pem"),
    ]);
    openssl(&[
        "ec",
        "-in",
        &at("sec1.pem"),
        "-pubout",
        "-out",
        &at("sec1.pub.pem"),
    ]);
    let ssh = |kind: &[&str], file: &str| {
        let mut args = vec!["-q", "-N", "", "-C", "release@acme", "-f"];
        args.push(file);
        args.extend_from_slice(kind);
        run("ssh-keygen", &args, dir);
    };
    ssh(&["-t", "ed25519"], &at("ssh-ed25519"));
    ssh(&["-t", "ecdsa", "-b", "256"], &at("ssh-ecdsa"));
    [
        ("openssl ed25519 (PKCS#8)", "ed25519.pem", "ed25519.pub.pem"),
        ("openssl P-256 (PKCS#8)", "p256.pem", "p256.pub.pem"),
        ("openssl P-256 (SEC1)", "sec1.pem", "sec1.pub.pem"),
        ("ssh-keygen ed25519", "ssh-ed25519", "ssh-ed25519.pub"),
        ("ssh-keygen ecdsa 256", "ssh-ecdsa", "ssh-ecdsa.pub"),
    ]
    .into_iter()
    .map(|(label, private, public)| KeyPair {
        label,
        private: dir.join(private),
        public: dir.join(public),
    })
    .collect()
}

/// The independent verifier: exit status and what it printed.
fn reference_verifier(envelope: &Path, public: &Path, archives: &[PathBuf]) -> (bool, String) {
    let python = crate::ci_tools::tool("python");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/verify_provenance.py");
    let output = Command::new(python)
        .arg(script)
        .arg(envelope)
        .arg(public)
        .args(archives)
        .output()
        .unwrap();
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

/// `ecp verify ARGS --format json`: exit code and the report.
fn verify(args: &[&str]) -> (Option<i32>, Value) {
    verify_by(ecp, args)
}

/// [`verify`] run by `ecp` (one of the helpers of `crate::cli`).
fn verify_by(ecp: fn(&[&str]) -> Output, args: &[&str]) -> (Option<i32>, Value) {
    let mut all = vec!["verify"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let output = ecp(&all);
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "ecp verify {args:?} printed no report:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code(), report)
}

fn step<'a>(report: &'a Value, id: &str) -> (&'a str, &'a str) {
    let step = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no step {id} in {report:#}"));
    (
        step["status"].as_str().unwrap(),
        step["detail"].as_str().unwrap(),
    )
}

fn copy_folder(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn every_key_form_signs_what_the_reference_verifier_accepts() {
    let temp = tempfile::tempdir().unwrap();
    let dir = committed_extension(temp.path());
    let binary = prebuilt(temp.path());
    let keys = temp.path().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    for (index, pair) in key_pairs(&keys).iter().enumerate() {
        let out = temp.path().join(format!("out{index}"));
        package_prebuilt(
            &dir,
            &binary,
            &out,
            &["--sign-key", pair.private.to_str().unwrap()],
        );
        let envelope = out.join("provenance.linux.x64.intoto.jsonl");
        let archives = [out.join(ARCHIVE), out.join("linux.x64.acme-context.zip")];
        let (ok, said) = reference_verifier(&envelope, &pair.public, &archives);
        assert!(
            ok,
            "{}: the reference verifier refused:\n{said}",
            pair.label
        );

        // ecp verify agrees, with the public key or the private key file.
        for key in [&pair.public, &pair.private] {
            let archive = out.join(ARCHIVE);
            let (code, report) =
                verify(&[archive.to_str().unwrap(), "--key", key.to_str().unwrap()]);
            assert_eq!(code, Some(0), "{}: {report:#}", pair.label);
            assert_eq!(step(&report, "signature").0, "proven", "{}", pair.label);
        }

        // Text before a PEM block (openssl's "Bag Attributes") is not the key.
        if pair.public.extension().is_some_and(|e| e == "pem") {
            let prefixed = keys.join(format!("prefixed{index}.pem"));
            let pem = std::fs::read_to_string(&pair.public).unwrap();
            std::fs::write(
                &prefixed,
                format!("Bag Attributes\n    localKeyID: 01\n{pem}"),
            )
            .unwrap();
            let archive = out.join(ARCHIVE);
            let (code, report) = verify(&[
                archive.to_str().unwrap(),
                "--key",
                prefixed.to_str().unwrap(),
            ]);
            assert_eq!(code, Some(0), "{}: {report:#}", pair.label);
        }

        // The same inputs give the same bytes, signature included (RFC 6979
        // for ECDSA).
        let again = temp.path().join(format!("again{index}"));
        package_prebuilt(
            &dir,
            &binary,
            &again,
            &["--sign-key", pair.private.to_str().unwrap()],
        );
        for name in [
            "provenance.linux.x64.intoto.json",
            "provenance.linux.x64.intoto.jsonl",
        ] {
            assert_eq!(
                std::fs::read(out.join(name)).unwrap(),
                std::fs::read(again.join(name)).unwrap(),
                "{}: {name} differs between two runs",
                pair.label
            );
        }

        // A negative control: the reference verifier refuses a statement
        // changed inside a signed envelope.
        let mut changed: Value =
            serde_json::from_str(&std::fs::read_to_string(&envelope).unwrap()).unwrap();
        let payload = changed["payload"].as_str().unwrap().replace('A', "B");
        changed["payload"] = payload.into();
        let forged = temp.path().join(format!("forged{index}.jsonl"));
        std::fs::write(&forged, changed.to_string()).unwrap();
        let (ok, said) = reference_verifier(&forged, &pair.public, &archives);
        assert!(!ok, "{}: a changed payload verified:\n{said}", pair.label);
    }

    // Keys ecp cannot sign with are refused before anything is built.
    let encrypted = keys.join("encrypted");
    run(
        "ssh-keygen",
        &[
            "-q",
            "-t",
            "ed25519",
            "-N",
            "a passphrase",
            "-f",
            encrypted.to_str().unwrap(),
        ],
        &keys,
    );
    let rsa = keys.join("rsa.pem");
    run(
        "openssl",
        &[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            rsa.to_str().unwrap(),
        ],
        &keys,
    );
    let public = keys.join("ed25519.pub.pem");
    for (key, says) in [
        (&encrypted, "is encrypted"),
        (&rsa, "ecp signs with Ed25519 or ECDSA P-256 keys"),
        (&public, "is a public key; signing needs the private key"),
        (&keys.join("missing.pem"), "cannot read the key"),
    ] {
        let out = temp.path().join("refused");
        let output = ecp(&[
            "package",
            dir.to_str().unwrap(),
            "--binary",
            binary.to_str().unwrap(),
            "--out-dir",
            out.to_str().unwrap(),
            "--sign-key",
            key.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{key:?}: {stderr}");
        assert!(stderr.contains("= help: "), "{stderr}");
        assert!(!out.exists(), "a refused key left {out:?}");
    }
}

/// A committed extension packaged (with a stand-in build) and signed with
/// the first of [`key_pairs`], in `parent`.
struct SignedRelease {
    dir: PathBuf,
    binary: PathBuf,
    pairs: Vec<KeyPair>,
    release: PathBuf,
}

fn signed_release(parent: &Path) -> SignedRelease {
    let dir = committed_extension(parent);
    let binary = prebuilt(parent);
    let keys = parent.join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let pairs = key_pairs(&keys);
    let release = parent.join("release");
    package_prebuilt(
        &dir,
        &binary,
        &release,
        &["--sign-key", pairs[0].private.to_str().unwrap()],
    );
    SignedRelease {
        dir,
        binary,
        pairs,
        release,
    }
}

#[test]
fn verify_accepts_a_good_release_and_names_each_kind_of_tampering() {
    let temp = tempfile::tempdir().unwrap();
    let SignedRelease {
        dir,
        binary,
        pairs,
        release,
    } = signed_release(temp.path());
    let (signer, stranger) = (&pairs[0], &pairs[3]);
    let key = signer.public.to_str().unwrap();

    let good = release.join(ARCHIVE);
    let (code, report) = verify(&[good.to_str().unwrap(), "--key", key]);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["verified"], true);
    for id in ["sums", "provenance", "signature", "lint"] {
        assert_eq!(step(&report, id).0, "proven", "{id}: {report:#}");
    }
    assert_eq!(step(&report, "rebuild").0, "not-checked");
    let (_, detail) = step(&report, "provenance");
    let head = String::from_utf8(run("git", &["rev-parse", "HEAD"], &dir).stdout).unwrap();
    assert!(
        detail.contains(&format!(
            "built from commit {}, version 0.1.0 (clean)",
            head.trim()
        )),
        "{detail}"
    );
    // Without --key the signature is named but not claimed.
    let (code, report) = verify(&[good.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{report:#}");
    let (status, detail) = step(&report, "signature");
    assert_eq!(status, "not-checked");
    assert!(detail.contains("pass --key"), "{detail}");
    // The human form says what was proven and what was not.
    let human = ecp(&["verify", good.to_str().unwrap(), "--key", key]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("proven       signature"), "{text}");
    assert!(text.contains("not checked  rebuild"), "{text}");
    assert!(
        text.contains("verified: every step asked for is proven"),
        "{text}"
    );

    // Each tampering, on a copy of the release: the step that fails and
    // what it says; the steps it does not touch still hold.
    type Tamper = fn(&Path);
    /// The steps that must fail, each with what it says.
    type Failing = &'static [(&'static str, &'static str)];
    let cases: [(&str, Tamper, Failing); 6] = [
        (
            "one byte of the archive",
            |at| {
                let path = at.join(ARCHIVE);
                let mut bytes = std::fs::read(&path).unwrap();
                let middle = bytes.len() / 2;
                bytes[middle] ^= 1;
                std::fs::write(&path, bytes).unwrap();
            },
            &[
                ("sums", "but SHA256SUMS says"),
                ("provenance", "the archive was changed"),
            ],
        ),
        (
            "a wrong sum",
            |at| {
                let path = at.join("SHA256SUMS");
                let text = std::fs::read_to_string(&path).unwrap();
                let lines: String = text
                    .lines()
                    .map(|l| {
                        if l.ends_with(ARCHIVE) {
                            format!("{}  {ARCHIVE}\n", "0".repeat(64))
                        } else {
                            format!("{l}\n")
                        }
                    })
                    .collect();
                std::fs::write(&path, lines).unwrap();
            },
            &[("sums", "but SHA256SUMS says 0000")],
        ),
        (
            "a missing sum",
            |at| {
                let path = at.join("SHA256SUMS");
                let text = std::fs::read_to_string(&path).unwrap();
                let kept: String = text
                    .lines()
                    .filter(|l| !l.ends_with(ARCHIVE))
                    .map(|l| format!("{l}\n"))
                    .collect();
                std::fs::write(&path, kept).unwrap();
            },
            &[("sums", "does not list")],
        ),
        (
            "a bad signature",
            |at| {
                let path = at.join("provenance.linux.x64.intoto.jsonl");
                let mut envelope: Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
                let sig = envelope["signatures"][0]["sig"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                let flipped = if sig.starts_with('A') { "B" } else { "A" };
                envelope["signatures"][0]["sig"] = format!("{flipped}{}", &sig[1..]).into();
                std::fs::write(&path, envelope.to_string()).unwrap();
            },
            &[("signature", "does not verify")],
        ),
        (
            "a statement changed under its signature",
            |at| {
                let path = at.join("provenance.linux.x64.intoto.jsonl");
                let mut envelope: Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
                use base64::Engine as _;
                let engine = base64::engine::general_purpose::STANDARD;
                let payload = engine
                    .decode(envelope["payload"].as_str().unwrap())
                    .unwrap();
                let forged = String::from_utf8(payload)
                    .unwrap()
                    .replace("\"dirty\": false", "\"dirty\": true");
                envelope["payload"] = engine.encode(forged).into();
                std::fs::write(&path, envelope.to_string()).unwrap();
            },
            &[("signature", "does not verify")],
        ),
        (
            "no provenance",
            |at| {
                std::fs::remove_file(at.join("provenance.linux.x64.intoto.jsonl")).unwrap();
                std::fs::remove_file(at.join("provenance.linux.x64.intoto.json")).unwrap();
            },
            &[
                ("provenance", "no provenance statement"),
                ("signature", "no statement, so no signature"),
            ],
        ),
    ];
    for (index, (what, tamper, failing)) in cases.into_iter().enumerate() {
        let copy = temp.path().join(format!("tampered{index}"));
        copy_folder(&release, &copy);
        tamper(&copy);
        let archive = copy.join(ARCHIVE);
        let (code, report) = verify(&[archive.to_str().unwrap(), "--key", key]);
        assert_eq!(code, Some(1), "{what}: {report:#}");
        assert_eq!(report["verified"], false, "{what}");
        for id in ["sums", "provenance", "signature", "lint"] {
            let (status, detail) = step(&report, id);
            match failing.iter().find(|(failing_id, _)| *failing_id == id) {
                Some((_, says)) => {
                    assert_eq!(status, "failed", "{what}: {id} {detail}");
                    assert!(detail.contains(says), "{what}: {id} says {detail:?}");
                }
                None if what == "one byte of the archive" && id == "lint" => {}
                None => assert_eq!(status, "proven", "{what}: {id} {detail}"),
            }
        }
    }

    // An unknown key.
    let (code, report) = verify(&[
        good.to_str().unwrap(),
        "--key",
        stranger.public.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{report:#}");
    let (status, detail) = step(&report, "signature");
    assert_eq!(status, "failed");
    assert!(detail.contains("not signed by the given key"), "{detail}");

    // A statement for another archive: another extension's release.
    let other = temp.path().join("other");
    let output = ecp(&[
        "new",
        "other-context",
        "--yes",
        "--dir",
        other.to_str().unwrap(),
    ]);
    assert!(output.status.success());
    let other_release = temp.path().join("other-release");
    package_prebuilt(
        &other,
        &binary,
        &other_release,
        &["--sign-key", signer.private.to_str().unwrap()],
    );
    let swapped = temp.path().join("swapped");
    copy_folder(&release, &swapped);
    for name in [
        "provenance.linux.x64.intoto.json",
        "provenance.linux.x64.intoto.jsonl",
    ] {
        std::fs::copy(other_release.join(name), swapped.join(name)).unwrap();
    }
    let archive = swapped.join(ARCHIVE);
    let (code, report) = verify(&[archive.to_str().unwrap(), "--key", key]);
    assert_eq!(code, Some(1), "{report:#}");
    let (status, detail) = step(&report, "provenance");
    assert_eq!(status, "failed");
    assert!(
        detail.contains("no statement lists `linux.x64.acme-context.tar.gz`")
            && detail.contains("linux.x64.other-context.tar.gz"),
        "{detail}"
    );
    let given = other_release.join("provenance.linux.x64.intoto.jsonl");
    let (code, report) = verify(&[
        good.to_str().unwrap(),
        "--key",
        key,
        "--provenance",
        given.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{report:#}");
    let (status, detail) = step(&report, "provenance");
    assert_eq!(status, "failed");
    assert!(
        detail.contains("is the statement of other archives"),
        "{detail}"
    );

    // An unsigned release with --key.
    // (Packaged signed first: packaging again unsigned removes the
    // envelope, which would no longer be true.)
    let unsigned = temp.path().join("unsigned");
    package_prebuilt(
        &dir,
        &binary,
        &unsigned,
        &["--sign-key", signer.private.to_str().unwrap()],
    );
    assert!(unsigned.join("provenance.linux.x64.intoto.jsonl").exists());
    package_prebuilt(&dir, &binary, &unsigned, &[]);
    let archive = unsigned.join(ARCHIVE);
    let (code, report) = verify(&[archive.to_str().unwrap(), "--key", key]);
    assert_eq!(code, Some(1), "{report:#}");
    let (status, detail) = step(&report, "signature");
    assert_eq!(status, "failed");
    assert!(detail.contains("is not signed"), "{detail}");
    // Packaging again unsigned removed the envelope an earlier signed run left.
    assert!(!unsigned.join("provenance.linux.x64.intoto.jsonl").exists());

    // The key id is a hint: another spelling of it does not stop a
    // signature that verifies.
    let renamed = temp.path().join("renamed");
    copy_folder(&release, &renamed);
    let path = renamed.join("provenance.linux.x64.intoto.jsonl");
    let mut envelope: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    envelope["signatures"][0]["keyid"] = "SHA256:another-format".into();
    std::fs::write(&path, envelope.to_string()).unwrap();
    let archive = renamed.join(ARCHIVE);
    let (code, report) = verify(&[archive.to_str().unwrap(), "--key", key]);
    assert_eq!(code, Some(0), "{report:#}");

    // What a rebuild refuses, before it clones anything: a short commit id
    // (a branch of that name would do), a folder outside the checkout, a
    // target that names a file.
    let statement_text =
        std::fs::read_to_string(release.join("provenance.linux.x64.intoto.json")).unwrap();
    let parameters = "/predicate/buildDefinition/externalParameters";
    for (field, value, says) in [
        (
            "/source/digest/gitCommit",
            json!("deadbee"),
            "is not a full git commit id",
        ),
        (
            "/source/path",
            json!("../elsewhere"),
            "is not a folder inside the repository",
        ),
        (
            "/target",
            json!("x86_64-../../tmp/x-linux.json"),
            "is not a target triple",
        ),
    ] {
        let mut statement: Value = serde_json::from_str(&statement_text).unwrap();
        *statement
            .pointer_mut(&format!("{parameters}{field}"))
            .unwrap() = value;
        let forged = temp.path().join("forged.intoto.json");
        std::fs::write(&forged, statement.to_string()).unwrap();
        let (code, report) = verify(&[
            good.to_str().unwrap(),
            "--provenance",
            forged.to_str().unwrap(),
            "--rebuild",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(1), "{field}: {report:#}");
        let (status, detail) = step(&report, "rebuild");
        assert_eq!(status, "failed", "{field}: {detail}");
        assert!(detail.contains(says), "{field}: {detail}");
    }

    // Could not run: no archive.
    let output = ecp(&["verify", temp.path().join("nope.tar.gz").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("does not exist"));
}

/// `CARGO_HOME` as cargo finds it.
fn cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"))
}

/// Whether `needle` occurs in `haystack`.
fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

/// The generated crate, packaged from two folders (at other depths, with
/// other file times) gives the same archives, statement included, and its
/// binary holds no absolute path of the machine that built it (not the
/// folder, not `CARGO_HOME`, where the dependencies' sources are, not the
/// target folder), so another checkout, home or target folder cannot
/// change its bytes either (a build with a second `CARGO_HOME` and target
/// folder, which proved the same by building every dependency again, cost
/// four minutes of the suite); a changed source byte changes the archive;
/// and `ecp verify --rebuild` proves the first and names where the second
/// differs from its commit.
///
/// The two folders' builds and the first one's rebuild use the generated
/// crate's release profile as it ships (fat LTO, one codegen unit); the
/// changed byte's build and rebuild, like the other tests, a lighter one
/// (`crate::cli::LIGHT_RELEASE`).
#[test]
fn builds_are_reproducible_and_a_rebuild_proves_it() {
    let temp = tempfile::tempdir().unwrap();
    let first = committed_extension(&temp.path().join("first"));
    let second = temp.path().join("elsewhere/deeper/acme-context");
    std::fs::create_dir_all(second.parent().unwrap()).unwrap();
    run(
        "git",
        &[
            "clone",
            "--quiet",
            first.to_str().unwrap(),
            second.to_str().unwrap(),
        ],
        temp.path(),
    );
    // Other file times in the second folder (its files, not git's: git
    // writes its objects read-only; the owner may set times without
    // opening a file for writing).
    for file in crate::cli::files_under(&second) {
        if file.strip_prefix(&second).unwrap().starts_with(".git") {
            continue;
        }
        std::fs::File::open(&file)
            .unwrap()
            .set_modified(
                std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000),
            )
            .unwrap();
    }
    let package_second = |ecp: fn(&[&str]) -> Output| {
        let output = ecp(&["package", second.to_str().unwrap()]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };

    let output = ecp_shipped_profile(&["package", first.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    package_second(ecp_shipped_profile);
    for name in [
        ARCHIVE,
        "linux.x64.acme-context.zip",
        "SHA256SUMS",
        "provenance.linux.x64.intoto.json",
    ] {
        assert!(
            std::fs::read(first.join("dist").join(name)).unwrap()
                == std::fs::read(second.join("dist").join(name)).unwrap(),
            "{name} differs between the two folders"
        );
    }
    let unpacked = temp.path().join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    run(
        "tar",
        &[
            "xzf",
            first.join("dist").join(ARCHIVE).to_str().unwrap(),
            "-C",
            unpacked.to_str().unwrap(),
        ],
        temp.path(),
    );
    let binary = std::fs::read(unpacked.join("dist/main")).unwrap();
    assert!(binary.len() > 1_000_000, "{} bytes", binary.len());
    for (what, path) in [
        ("the folder", first.clone()),
        ("the second folder", second.clone()),
        ("CARGO_HOME", cargo_home()),
        ("the target folder", crate::cli::generated_target()),
    ] {
        // As given and as resolved (a linked home or temp folder).
        let resolved = path.canonicalize().unwrap_or_else(|_| path.clone());
        for path in [path, resolved] {
            let path = path.to_str().unwrap().to_owned();
            assert!(!holds(&binary, &path), "dist/main holds {what}, {path}");
        }
    }
    // The check can see a path: the registry's name is in the binary
    // under the remapped home.
    assert!(holds(&binary, "/cargo/registry/src/"));
    let statement: Value = serde_json::from_str(
        &std::fs::read_to_string(first.join("dist/provenance.linux.x64.intoto.json")).unwrap(),
    )
    .unwrap();
    let internal = &statement["predicate"]["buildDefinition"]["internalParameters"];
    assert_eq!(internal["dirty"], false, "{statement:#}");
    assert!(internal["toolchain"]["rustc"].is_string(), "{statement:#}");
    // The archive times are the commit's.
    let commit_time =
        String::from_utf8(run("git", &["log", "-1", "--format=%ct"], &first).stdout).unwrap();
    assert_eq!(
        internal["sourceDateEpoch"].to_string(),
        commit_time.trim(),
        "{statement:#}"
    );

    // The first release, rebuilt from its repository: byte-identical.
    let archive = first.join("dist").join(ARCHIVE);
    let (code, report) = verify_by(
        ecp_shipped_profile,
        &[
            archive.to_str().unwrap(),
            "--rebuild",
            first.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{report:#}");
    let (status, detail) = step(&report, "rebuild");
    assert_eq!(status, "proven", "{detail}");
    assert!(detail.contains("byte-identical"), "{detail}");

    // One source byte changed, not committed: another archive, a statement
    // that says so, and a rebuild from the commit that names the difference.
    // Both builds in the tests' light profile: the difference is the
    // source's, whatever the profile, and a release build of an edited
    // crate takes 40 s with fat LTO against 11 s without
    // (`crate::cli::LIGHT_RELEASE`, measured 2026-12-07).
    let provider = second.join("src/provider.rs");
    let source = std::fs::read_to_string(&provider).unwrap();
    assert!(source.contains(".post(\"v1/context/search\")"));
    std::fs::write(
        &provider,
        source.replacen(
            ".post(\"v1/context/search\")",
            ".post(\"v1/context/searcH\")",
            1,
        ),
    )
    .unwrap();
    package_second(ecp);
    assert!(
        std::fs::read(first.join("dist").join(ARCHIVE)).unwrap()
            != std::fs::read(second.join("dist").join(ARCHIVE)).unwrap(),
        "a changed source byte left the archive as it was"
    );
    let archive = second.join("dist").join(ARCHIVE);
    let (code, report) = verify_by(
        ecp,
        &[
            archive.to_str().unwrap(),
            "--rebuild",
            second.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(1), "{report:#}");
    let (_, detail) = step(&report, "provenance");
    assert!(detail.contains("with uncommitted changes"), "{detail}");
    let (status, detail) = step(&report, "rebuild");
    assert_eq!(status, "failed", "{detail}");
    assert!(
        detail.contains("`dist/main` differs from its byte")
            && detail.contains("uncommitted changes"),
        "{detail}"
    );
}

/// The lower-case hex SHA-256 of a file.
fn sha256_hex(path: &Path) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(std::fs::read(path).unwrap());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn verify_judges_every_statement_beside_the_archive_and_never_claims_an_unchecked_signature() {
    let temp = tempfile::tempdir().unwrap();
    let SignedRelease { pairs, release, .. } = signed_release(temp.path());
    let signer = &pairs[0];
    let good = release.join(ARCHIVE);

    // A signed release checked without its key: consistent, never
    // "verified", and the key id that would prove it is named.
    let (code, report) = verify(&[good.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["verified"], true);
    assert_eq!(report["origin_proven"], false);
    let (status, detail) = step(&report, "signature");
    assert_eq!(status, "not-checked");
    assert!(
        detail.contains(".intoto.jsonl is signed by key") && detail.contains("not checked"),
        "{detail}"
    );
    let human = ecp(&["verify", good.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&human.stdout);
    assert!(said.contains("consistent, origin NOT proven"), "{said}");
    assert!(!said.contains("verified:"), "{said}");
    let (_, report) = verify(&[
        good.to_str().unwrap(),
        "--key",
        signer.public.to_str().unwrap(),
    ]);
    assert_eq!(report["origin_proven"], true, "{report:#}");

    // The attack: the archive re-packed (one header byte: still a valid
    // gzip that lint passes), SHA256SUMS and the unsigned statement
    // rewritten to match; the signed envelope beside them still names the
    // original. Without --key this was "proven".
    let forged = temp.path().join("forged");
    copy_folder(&release, &forged);
    let archive = forged.join(ARCHIVE);
    let (old, new) = {
        let old = sha256_hex(&archive);
        let mut bytes = std::fs::read(&archive).unwrap();
        bytes[9] ^= 1; // the gzip header's OS byte
        std::fs::write(&archive, bytes).unwrap();
        (old, sha256_hex(&archive))
    };
    for name in ["SHA256SUMS", "provenance.linux.x64.intoto.json"] {
        let path = forged.join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(&old), "{name}");
        std::fs::write(&path, text.replace(&old, &new)).unwrap();
    }
    let (code, report) = verify(&[archive.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["verified"], false);
    assert_eq!(step(&report, "sums").0, "proven");
    let (status, detail) = step(&report, "provenance");
    assert_eq!(status, "failed", "{detail}");
    assert!(
        detail.contains(&format!(
            "provenance.linux.x64.intoto.jsonl records sha256 {old} for `{ARCHIVE}`, but the archive's is {new}"
        )),
        "{detail}"
    );
    assert!(detail.contains("record different digests"), "{detail}");
    let (status, detail) = step(&report, "signature");
    assert_eq!(status, "not-checked");
    assert!(detail.contains("signed by key"), "{detail}");

    // A statement's strings are shown escaped and bounded: a 15 MiB
    // builder id with a right-to-left override.
    let long = temp.path().join("long");
    copy_folder(&release, &long);
    std::fs::remove_file(long.join("provenance.linux.x64.intoto.jsonl")).unwrap();
    let path = long.join("provenance.linux.x64.intoto.json");
    let mut statement: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let builder = format!("\u{202e}evil{}", "A".repeat(15 * 1024 * 1024));
    statement["predicate"]["runDetails"]["builder"]["id"] = builder.into();
    std::fs::write(&path, statement.to_string()).unwrap();
    let output = ecp(&[
        "verify",
        long.join(ARCHIVE).to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(
        output.stdout.len() < 64 * 1024,
        "{} bytes",
        output.stdout.len()
    );
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(!said.contains('\u{202e}'), "a raw U+202E");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let (status, detail) = step(&report, "provenance");
    assert_eq!(status, "proven");
    assert!(detail.contains("\\u{202e}evil"), "{detail}");
    assert!(detail.contains("more characters)"), "{}", &detail[..200]);
    let human = ecp(&["verify", long.join(ARCHIVE).to_str().unwrap()]);
    assert!(
        human.stdout.len() < 64 * 1024,
        "{} bytes",
        human.stdout.len()
    );
}
