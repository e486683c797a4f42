//! The fuzz targets on stable, in every `cargo test`: each target's seed
//! corpus (`fuzz/seeds/TARGET/`, grown by earlier fuzzing runs, crashes
//! found kept as seeds) replayed through the same function libFuzzer calls
//! (`fuzz/harness/`), then mutants of those seeds made by a seeded
//! generator: the same mutants every run (seeded by the target's name), so
//! a failure reproduces; `ECP_FUZZ_SEED=N` tries another 2000.
//! Coverage-guided fuzzing (`cargo xtask fuzz`, nightly) runs in the
//! weekly CI job; this replay keeps what it found from coming back.

use std::{
    panic::{AssertUnwindSafe, catch_unwind},
    path::{Path, PathBuf},
};

#[path = "../../fuzz/harness/mod.rs"]
mod harness;

/// Mutants a target gets per run, on top of its seeds.
const MUTANTS: usize = 2000;
/// Failures reported per target before its replay stops.
const FAILURES_SHOWN: usize = 5;
/// The longest mutant (libFuzzer's `-max_len` in `cargo xtask fuzz`).
const MAX_LEN: usize = 262_144;

fn seeds(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect()
}

/// xorshift64*: the same mutants for the same seed, on every machine.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Bytes a mutation likes to insert: the ones parsers turn on.
const INTERESTING: &[u8] = b"\0\n\r\"\\{}[]:,<>/%\x7f\xff\xc0\xed\xa0\x80";

/// One to four of libFuzzer's simpler mutations of `input`, some of them
/// splicing in a second seed.
fn mutate(input: &[u8], other: &[u8], random: &mut Random) -> Vec<u8> {
    let mut bytes = input.to_vec();
    for _ in 0..=random.below(4) {
        let at = random.below(bytes.len() + 1);
        match random.below(7) {
            0 if !bytes.is_empty() => {
                let at = at.min(bytes.len() - 1);
                bytes[at] ^= 1 << random.below(8);
            }
            1 => {
                let byte = INTERESTING[random.below(INTERESTING.len())];
                bytes.insert(at, byte);
            }
            2 => {
                let end = (at + random.below(16)).min(bytes.len());
                bytes.drain(at..end);
            }
            3 => {
                let end = (at + random.below(64)).min(bytes.len());
                let copy = bytes[at..end].to_vec();
                let to = random.below(bytes.len() + 1);
                bytes.splice(to..to, copy);
            }
            4 => {
                let from = random.below(other.len() + 1);
                let end = (from + random.below(256)).min(other.len());
                bytes.splice(at..at, other[from..end].iter().copied());
            }
            5 => bytes.truncate(at),
            _ if !bytes.is_empty() => {
                let at = at.min(bytes.len() - 1);
                bytes[at] = random.next() as u8;
            }
            _ => bytes.push(random.next() as u8),
        }
    }
    bytes.truncate(MAX_LEN);
    bytes
}

/// Runs `input`; a panic is reported with where the input came from and a
/// copy of it in `target/fuzz-replay/`, which `cargo xtask fuzz` takes as a
/// seed folder too.
fn replay(target: &str, run: harness::Body, origin: &str, input: &[u8]) -> Option<String> {
    if catch_unwind(AssertUnwindSafe(|| run(input))).is_ok() {
        return None;
    }
    let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/fuzz-replay")
        .join(target);
    std::fs::create_dir_all(&folder).unwrap();
    let copy = folder.join(ecp::digest::sha256(input));
    std::fs::write(&copy, input).unwrap();
    Some(format!(
        "{target}: {origin} panicked (input kept in {})",
        copy.display()
    ))
}

fn replay_target(target: &str, run: harness::Body) -> Vec<String> {
    let seeds = seeds(target);
    assert!(!seeds.is_empty(), "{target} has no seeds");
    let mut failures = Vec::new();
    for (path, bytes) in &seeds {
        failures.extend(replay(target, run, &path.display().to_string(), bytes));
    }
    // A broken target breaks most inputs: a few say enough.
    if failures.len() >= FAILURES_SHOWN {
        return failures;
    }
    // FNV-1a of the name, so that no two targets share a stream.
    let named = target
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
    let extra: u64 = std::env::var("ECP_FUZZ_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or(0);
    let mut random = Random((named ^ extra.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1);
    for mutant in 0..MUTANTS {
        let (path, seed) = &seeds[random.below(seeds.len())];
        let (_, other) = &seeds[random.below(seeds.len())];
        let input = mutate(seed, other, &mut random);
        let origin = format!("mutant {mutant} of {}", path.display());
        failures.extend(replay(target, run, &origin, &input));
        if failures.len() >= FAILURES_SHOWN {
            break;
        }
    }
    failures
}

#[test]
fn every_fuzz_target_keeps_its_seeds_and_their_mutants() {
    // The fuzz crate's target list and the harness list are one list.
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/Cargo.toml"))
            .unwrap();
    let declared = manifest.matches("[[bin]]").count();
    assert_eq!(
        declared,
        harness::TARGETS.len(),
        "fuzz/Cargo.toml's targets"
    );
    let xtask =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("xtask/src/main.rs"))
            .unwrap();
    let mut failures = Vec::new();
    for (target, run) in harness::TARGETS {
        assert!(
            xtask.contains(&format!("\"{target}\",")),
            "{target} is not in xtask's FUZZ_TARGETS"
        );
        assert!(
            manifest.contains(&format!("path = \"fuzz_targets/{target}.rs\"")),
            "{target} is not a target in fuzz/Cargo.toml"
        );
        failures.extend(replay_target(target, run));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_panicking_input_is_reported_with_its_origin_and_kept() {
    fn fragile(data: &[u8]) {
        assert!(!data.starts_with(b"boom"), "fragile");
    }
    assert_eq!(replay("self-test", fragile, "fine", b"fine"), None);
    let failure = replay("self-test", fragile, "the seed", b"boom!").unwrap();
    assert!(
        failure.contains("self-test: the seed panicked"),
        "{failure}"
    );
    let kept = failure
        .rsplit("kept in ")
        .next()
        .unwrap()
        .trim_end_matches(')');
    assert_eq!(std::fs::read(kept).unwrap(), b"boom!");
}

#[test]
fn mutants_differ_from_their_seed_and_stay_bounded() {
    let mut random = Random(7);
    let seed = b"{\"query\":\"kubernetes\"}".as_slice();
    let mutants: Vec<Vec<u8>> = (0..200)
        .map(|_| mutate(seed, b"other seed", &mut random))
        .collect();
    let changed = mutants.iter().filter(|m| m.as_slice() != seed).count();
    assert!(changed > 180, "{changed} of 200 changed");
    let distinct: std::collections::BTreeSet<_> = mutants.iter().collect();
    assert!(distinct.len() > 150, "{} distinct", distinct.len());
    let huge = vec![b'a'; MAX_LEN + 10];
    assert!(mutate(&huge, &huge, &mut random).len() <= MAX_LEN);
}
