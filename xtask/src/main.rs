//! Repository automation: `cargo xtask <task>`.

fn main() {
    eprintln!("usage: cargo xtask <task>");
    std::process::exit(2);
}
