use std::process::ExitCode;

use clap::Parser;

/// mimalloc instead of glibc's malloc: the commands that hold a whole payload or world of
/// objects allocate and free millions of small strings (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    cvo::cli::run(cvo::cli::Cli::parse())
}
