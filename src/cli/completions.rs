//! `fwfix completions SHELL` and `fwfix man`: a shell completion script and the man page, both
//! generated from the clap definitions so they never drift from the commands.

use super::{print_out, Cli, Exit};
use clap::CommandFactory;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Install, e.g.: fwfix completions bash > ~/.local/share/bash-completion/completions/fwfix; \
fwfix completions zsh > ~/.zfunc/_fwfix; \
fwfix completions fish > ~/.config/fish/completions/fwfix.fish.")]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

pub fn run(args: Args) -> Exit {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "fwfix", &mut out);
    print_out(&String::from_utf8_lossy(&out));
    Exit::Success
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Read it with: fwfix man > fwfix.1 && man ./fwfix.1")]
pub struct ManArgs {}

/// The man page, in roff.
pub fn man_page() -> std::io::Result<String> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

pub fn man(_args: ManArgs, global: &super::GlobalArgs) -> Exit {
    match man_page() {
        Ok(page) => {
            print_out(&page);
            Exit::Success
        }
        Err(e) => super::fail_early(global, Exit::Infrastructure, &e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_man_page_and_completions_name_every_command() {
        let page = man_page().unwrap();
        assert!(page.starts_with(".ie"), "{}", &page[..80]);
        for command in ["test", "run", "bisect", "mcp", "triage", "completions"] {
            assert!(
                page.contains(command),
                "{command} missing from the man page"
            );
        }
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
            clap_complete::Shell::PowerShell,
        ] {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "fwfix", &mut out);
            let script = String::from_utf8(out).unwrap();
            assert!(script.contains("mcp"), "{shell:?}");
            assert!(script.contains("profile"), "{shell:?}");
        }
    }
}
