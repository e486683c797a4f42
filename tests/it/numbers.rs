//! `format_number` against the real ECMAScript engine: Node.js formats the
//! same doubles with `String(x)` and every result must match.

use std::{
    io::Write,
    process::{Command, Stdio},
};

use ecp::profile::ecmascript::format_number;

/// SplitMix64: a fixed sequence, so a failure reproduces.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

const NODE_FORMATTER: &str = r#"
const lines = require("fs").readFileSync(0, "utf8").trim().split("\n");
const view = new DataView(new ArrayBuffer(8));
const out = lines.map((hex) => {
  view.setBigUint64(0, BigInt("0x" + hex));
  return String(view.getFloat64(0));
});
process.stdout.write(out.join("\n") + "\n");
"#;

// Literals with more digits than a double holds are part of the test.
#[allow(clippy::excessive_precision)]
fn doubles() -> Vec<f64> {
    let mut values = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.91,
        0.1,
        0.2,
        0.3,
        1e21,
        1e-7,
        1.5e-7,
        1e-6,
        123e-20,
        1e20,
        9007199254740991.0,
        9007199254740993.0,
        5e-324,
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::EPSILON,
        0.000001234,
        123456789.123456789,
        4.35,
        1.005,
    ];
    // Powers of ten and their neighbours around every layout switch.
    for exponent in -30..=30 {
        let x = 10f64.powi(exponent);
        values.extend([
            x,
            -x,
            f64::from_bits(x.to_bits() + 1),
            f64::from_bits(x.to_bits() - 1),
        ]);
    }
    let mut rng = SplitMix(0xEC9);
    while values.len() < 60_000 {
        let bits = rng.next();
        let x = f64::from_bits(bits);
        if x.is_finite() {
            values.push(x);
        }
        // Scores in practice: short decimals in [0, 1] and small integers.
        values.push((rng.next() % 100_000) as f64 / 100_000.0);
        values.push((rng.next() % 1000) as f64);
    }
    values
}

#[test]
fn format_number_matches_node_for_60000_doubles() {
    let values = doubles();
    let input: String = values
        .iter()
        .map(|x| format!("{:016x}\n", x.to_bits()))
        .collect();
    let mut node = Command::new("node")
        .args(["-e", NODE_FORMATTER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs (Node.js 20 is required by the test suite)");
    node.stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = node.wait_with_output().unwrap();
    assert!(output.status.success());
    let expected = String::from_utf8(output.stdout).unwrap();
    let expected: Vec<&str> = expected.lines().collect();
    assert_eq!(expected.len(), values.len());
    let mismatches: Vec<String> = values
        .iter()
        .zip(&expected)
        .filter(|(x, want)| format_number(**x) != **want)
        .take(10)
        .map(|(x, want)| {
            format!(
                "{:016x}: ours {} node {want}",
                x.to_bits(),
                format_number(*x)
            )
        })
        .collect();
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}
