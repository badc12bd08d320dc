//! The `glint` command-line tool.

mod bench;
mod patterns;

use clap::{Parser, Subcommand};

/// glint: fast, MuJoCo-exact sensor simulation.
#[derive(Parser)]
#[command(name = "glint", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Benchmarks against MuJoCo.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(cmd) => bench::run(cmd),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
