//! The `fwfix` binary: everything happens in [`fwfix::cli::main`].

fn main() -> std::process::ExitCode {
    fwfix::cli::main()
}
