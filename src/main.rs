//! The `ecp` command.

fn main() -> std::process::ExitCode {
    ecp::cli::main()
}
