//! The `glint` command-line tool.

mod bake;
mod bench;
mod controller;
mod draw;
mod export;
mod patterns;
mod replay;
mod run;
mod scan;
mod video;

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
    /// Builds the material bake of a manifest's scene and saves it to
    /// `MaterialBakes/<name>.lvxb` beside the manifest; `--status` reports the saved one.
    Bake(bake::BakeArgs),
    /// Benchmarks against MuJoCo.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Steps a manifest's scene, scans with one lidar, and writes a PLY point cloud, a range
    /// image (spinning units) and a top-down view of the returns.
    Scan(scan::ScanArgs),
    /// The main job: runs episodes of a manifest's scene with its controller and records every
    /// lidar of every world to a Parquet session (see docs/recording.md).
    Run(run::RunArgs),
    /// Lists a recorded session's episodes and sensors with per-beam metrics, checks every
    /// file against its sidecar (exit status 1 if any check fails), and with `--png` draws the
    /// returns of a tick range in the sensor frame.
    Replay(replay::ReplayArgs),
    /// Re-processes a recorded session's clean geometry through the return model under a
    /// material bake into a variant folder (range, intensity, calibrated reflectivity, second
    /// echo) with an augmentation.json that traces it to its sources.
    Export(export::ExportArgs),
}

fn main() {
    settle_malloc();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bake(args) => bake::run(args),
        Command::Bench(cmd) => bench::run(cmd),
        Command::Scan(args) => scan::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Run(args) => run::run(args),
        Command::Export(args) => export::run(args),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

/// The recorder allocates and frees many blocks of a few hundred KiB (column pages, compressor
/// contexts) on every worker thread. glibc raises its mmap threshold to the size of each large
/// block freed, after which such blocks come from per-thread arenas and fragment them, and the
/// arena a block lands in depends on which worker ran: a long recording's resident memory
/// crept up, and varied by a tenth from run to run. A fixed threshold (which turns the raising
/// off) and one arena keep it flat; blocks over 4 MiB are still mapped on their own. Neither
/// costs measurable time here.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn settle_malloc() {
    // SAFETY: mallopt only sets malloc tuning parameters, and main calls this first, before
    // any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn settle_malloc() {}
