//! The `glint` command-line tool: each command parses its arguments, drives a
//! `glint_sim::Simulation` (or reads a recording through `glint_record`) and prints.
#![forbid(unsafe_code)]

// Every module prints through `output`, which never panics on a closed pipe or a full disk
// (see output.rs); these shadow the standard macros for the whole crate.
macro_rules! println {
    () => { $crate::output::say(format_args!("")) };
    ($($arg:tt)*) => { $crate::output::say(format_args!($($arg)*)) };
}
macro_rules! eprintln {
    ($($arg:tt)*) => { $crate::output::warn(format_args!($($arg)*)) };
}

mod bake;
mod bench;
mod classic;
mod export;
mod lights;
mod output;
mod points;
mod recover;
mod render;
mod render_bench;
mod replay;
mod run;
mod scan;
mod serve;
mod signals;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

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
    /// Salvages the episodes a run did not finish (killed, a full disk): each `.partial`
    /// lidar file up to its last complete row group, with its pose table and sidecar, logged
    /// as `recovered`; says per file what was salvaged and what was lost.
    Recover(recover::RecoverArgs),
    /// Re-processes a recorded session's clean geometry through the return model under a
    /// material bake into a variant folder (range, intensity, calibrated reflectivity, second
    /// echo) with an augmentation.json that traces it to its sources.
    Export(export::ExportArgs),
    /// Writes the point cloud of one sensor's episode of a recording, or of an exported
    /// variant (measured ranges, second echoes), as PLY, PCD or KITTI `.bin`, in the world or
    /// the sensor frame.
    Points(points::PointsArgs),
    /// Serves a manifest's scene over gRPC as LuckyEngine's API (hazel.rpc): LidarService's
    /// 14 calls and the agent step loop, for the `luckyrobots` client and any other (see
    /// docs/grpc.md).
    Serve(serve::ServeArgs),
    /// Light rigs in UsdLux terms: `translate` a rig into MJCF `<light>` elements for a scene,
    /// or `report` the seed's exposure measurement rendered by MuJoCo's classic renderer
    /// (see docs/lights.md).
    #[command(subcommand)]
    Lights(lights::LightsCommand),
    /// Renders one frame of a manifest's `[[camera]]` bindings (or every camera of an MJCF
    /// scene) in one world: RGB PNG, depth as 16-bit millimetre PNG and float32 `.npy`,
    /// segmentation as a colour PNG and int32 `.npy` (see docs/cameras.md).
    Render(render::RenderArgs),
}

fn main() {
    glint_sim::settle_malloc();
    let mut matches = negative_numbers(Cli::command()).get_matches();
    let cli = Cli::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| e.exit());
    if cli.command.reports_only() {
        output::reports_only();
    }
    let result = match cli.command {
        Command::Bake(args) => bake::run(args),
        Command::Bench(cmd) => bench::run(cmd),
        Command::Scan(args) => scan::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Run(args) => run::run(args),
        Command::Recover(args) => recover::run(args),
        Command::Export(args) => export::run(args),
        Command::Points(args) => points::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Lights(cmd) => lights::run(cmd),
        Command::Render(args) => render::run(args),
    };
    output::report_lost_output();
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

impl Command {
    /// Whether the command only reports (a closed standard output ends it quietly) rather
    /// than produces data (which it finishes whoever reads its report).
    fn reports_only(&self) -> bool {
        match self {
            Command::Replay(args) => !args.draws(),
            Command::Bench(_) => true,
            Command::Lights(lights::LightsCommand::Translate(_)) => true,
            Command::Points(args) => args.to_stdout(),
            Command::Bake(args) => args.status_only(),
            _ => false,
        }
    }
}

/// `cmd` with every argument that takes a value, in every command, accepting a value with a
/// leading minus that reads as a number (`--seconds -1`), so the argument's own range message
/// answers instead of clap's advice to write `-- -1`.
fn negative_numbers(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| if a.get_action().takes_values() { a.allow_negative_numbers(true) } else { a })
        .mut_subcommands(negative_numbers)
}

/// A seed argument: a whole number from 0 to 2^64 - 1.
fn parse_seed(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| format!("'{s}' is not a seed: give a whole number from 0 to {}", u64::MAX))
}

/// How a command's `--force` treats an output file that exists.
fn overwrite(force: bool) -> glint_record::Overwrite {
    if force { glint_record::Overwrite::Replace } else { glint_record::Overwrite::Refuse }
}

/// Prints what the simulation had to warn about since the last call, one line each.
fn print_warnings(sim: &mut glint_sim::Simulation) {
    for w in sim.take_warnings() {
        eprintln!("warning: {w}");
    }
}

/// The manifest at `path`, which must bind a lidar.
fn manifest_with_lidars(path: &std::path::Path) -> anyhow::Result<glint_sim::Manifest> {
    let manifest = glint_sim::Manifest::load(path)?;
    if manifest.lidar.is_empty() {
        anyhow::bail!("manifest '{}' binds no lidar: add a [[lidar]] table (see docs/manifest.md)", path.display());
    }
    Ok(manifest)
}
