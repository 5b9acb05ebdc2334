//! `cvo completion SHELL` and `cvo man`: shell completion scripts (clap_complete) and man pages
//! (clap_mangen), generated from the same command definitions as `--help`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::{Cli, CliResult};

#[derive(Debug, Args)]
#[command(after_help = "Install for the current user, e.g.:\n  \
    cvo completion bash > ~/.local/share/bash-completion/completions/cvo\n  \
    cvo completion zsh > \"${fpath[1]}/_cvo\"\n  \
    cvo completion fish > ~/.config/fish/completions/cvo.fish\n  \
    cvo completion powershell >> $PROFILE")]
pub struct CompletionArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Args)]
#[command(after_help = "Install for the current user, e.g.:\n  \
    cvo man --to ~/.local/share/man/man1 && man cvo-render")]
pub struct ManArgs {
    /// The directory the pages are written to (created if missing): cvo.1 and one
    /// cvo-COMMAND[-SUBCOMMAND].1 per command.
    #[arg(long, value_name = "DIR")]
    pub to: PathBuf,
}

/// Prints the completion script of `args.shell` on standard output.
pub fn completion(args: CompletionArgs) -> CliResult {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "cvo", &mut script);
    use std::io::Write as _;
    std::io::stdout()
        .write_all(&script)
        .context("cannot write the completion script to standard output")?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the man pages of `cvo` and of every command into `args.to`.
pub fn man(args: ManArgs) -> CliResult {
    std::fs::create_dir_all(&args.to)
        .with_context(|| format!("cannot create {}", args.to.display()))?;
    let mut command = Cli::command();
    command.build();
    let written = write_pages(&command, &args.to)?;
    outln!("wrote {written} man pages into {}", args.to.display());
    Ok(ExitCode::SUCCESS)
}

/// Writes the page of a built `command` (`cvo-payload-push.1`, its synopsis `cvo payload push`)
/// and those of its subcommands; returns how many it wrote. Hidden commands and clap's `help`
/// get none.
fn write_pages(command: &clap::Command, dir: &Path) -> anyhow::Result<usize> {
    let name = command
        .get_display_name()
        .unwrap_or(command.get_name())
        .to_string();
    let mut roff = Vec::new();
    clap_mangen::Man::new(command.clone())
        .render(&mut roff)
        .with_context(|| format!("cannot render the man page of {name}"))?;
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, roff).with_context(|| format!("cannot write {}", path.display()))?;
    let mut written = 1;
    for sub in command.get_subcommands() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        written += write_pages(sub, dir)?;
    }
    Ok(written)
}
