use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    cvo::cli::run(cvo::cli::Cli::parse())
}
