//! `glint run`: the main job. Runs episodes of a manifest's scene with its controller and
//! records every sensor of every world to a Parquet session (`Simulation::run` does the work;
//! this parses the arguments, draws progress, turns SIGINT, SIGTERM, SIGQUIT and SIGHUP into
//! a stop (see [`crate::signals`]) and prints the summary).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use glint_interop::{CloudSplit, LiveOutput, LiveView};
use glint_sim::{RecordingOptions, RunObserver, RunOutcome, SimOptions, Simulation, StepReport, Warning};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::print_warnings;
use crate::signals::Stop;

/// Arguments of `glint run`.
#[derive(Args)]
pub struct RunArgs {
    /// Scene manifest (TOML): scene, lidars, controller, recorder settings.
    manifest: PathBuf,
    /// Episodes to run (each world of each episode is recorded as its own episode).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    episodes: u32,
    /// Simulated seconds per episode.
    #[arg(long, default_value_t = 10.0, value_parser = positive_seconds)]
    seconds: f64,
    /// Worlds stepped in parallel.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    worlds: u32,
    /// Run seed: each episode's seed derives from it and the episode's index, keying the
    /// return model's noise and the `[reset]` draws (default: the manifest's `[return_model]
    /// seed`).
    #[arg(long, value_parser = crate::parse_seed)]
    seed: Option<u64>,
    /// The index of the first episode (default 0): its seed derives from it and its files are
    /// numbered from it, so a run split into ranges (`--first-episode 0 --episodes 4`,
    /// `--first-episode 4 --episodes 4`, …) records each episode as one run of all would.
    #[arg(long, value_name = "N", default_value_t = 0)]
    first_episode: u32,
    /// Run the episodes as shards on a Ray cluster instead (`local`: a new one on this
    /// machine), through the Python package's `glint.distributed` (docs/distributed.md); needs
    /// --seed and --out.
    #[arg(long, value_name = "ADDRESS", conflicts_with_all = ["live", "mcap", "no_record", "first_episode"])]
    ray: Option<String>,
    /// With --ray, episodes per shard (one Ray task each).
    #[arg(long, value_name = "N", default_value_t = 1, requires = "ray")]
    episodes_per_task: u32,
    /// Output folder for the session (default: the manifest's `[recorder] output_dir`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run everything but write nothing (to measure the recorder's cost).
    #[arg(long, conflicts_with = "mcap")]
    no_record: bool,
    /// Also write each episode as ROS 2 messages in an MCAP file while it runs
    /// (`SESSION/mcap/episode_NNNNNN.mcap`; the topics of `glint export --format mcap`).
    #[arg(long)]
    mcap: bool,
    /// Publish world 0's lidar clouds, frames and camera images over the Foxglove WebSocket
    /// protocol while it runs, on this port of --live-host (0: a free one; the address is
    /// printed), for Foxglove or Lichtblick to show.
    #[arg(long, value_name = "PORT", num_args = 0..=1, default_missing_value = "8765")]
    live: Option<u16>,
    /// The address the live view listens on (loopback unless told otherwise).
    #[arg(long, value_name = "HOST", default_value = "127.0.0.1", requires = "live")]
    live_host: String,
}

fn positive_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!("'{s}' is not a number of seconds in (0, 86400]")),
    }
}

pub fn run(args: RunArgs) -> Result<()> {
    if let Some(address) = &args.ray {
        return run_on_ray(&args, address);
    }
    let options = SimOptions {
        nworld: args.worlds as usize,
        seed: args.seed,
        episode_seconds: Some(args.seconds),
        first_episode: args.first_episode as u64,
        ..SimOptions::default()
    };
    let mut sim = Simulation::from_loaded(crate::manifest_with_lidars(&args.manifest)?, options)?;
    print_warnings(&mut sim);
    // Every tick fires the lidars, recorded or not, so --no-record measures the same work.
    sim.set_lidar_live(true);
    let stop = Stop::install()?;
    if !args.no_record {
        let session = sim.arm_recording(&RecordingOptions { out: args.out.clone(), episodes: args.episodes })?;
        print_warnings(&mut sim);
        if args.mcap {
            let output = LiveOutput::mcap(&session.join("mcap"), &sim, (None, CloudSplit::Revolution))?;
            sim.add_output(Box::new(output));
        }
    }
    // Held to the end of the run: dropping it stops the server.
    let _view = match args.live {
        Some(port) => {
            let view = LiveView::start(&args.live_host, port)?;
            // The address a viewer connects to, on a line of its own (tests wait for it).
            println!("live view: ws://{}:{}", args.live_host, view.port());
            let output = view.output(&sim)?;
            sim.add_output(Box::new(output));
            Some(view)
        }
        None => None,
    };
    let mut progress = Progress::new(args.episodes, sim.episode_ticks().unwrap_or(0), stop.clone());
    let outcome = sim.run(args.episodes, &mut progress)?;
    progress.bars.clear().ok();
    print_warnings(&mut sim);
    print_summary(&sim, &outcome)?;
    // Exit 128 + the signal's number once the files are closed, as a shell reports a process
    // the signal ended.
    stop.exit_if_signalled(|name| {
        if outcome.interrupted {
            format!("interrupted by {name}: the episode in progress was closed and marked interrupted")
        } else {
            format!("{name} arrived as the run ended: every episode was finished")
        }
    });
    Ok(())
}

/// Progress bars on a terminal (hidden otherwise), and the stop flag.
struct Progress {
    bars: MultiProgress,
    episodes: ProgressBar,
    ticks: ProgressBar,
    stop: Stop,
}

impl Progress {
    fn new(episodes: u32, ticks: u64, stop: Stop) -> Progress {
        let bars = MultiProgress::new();
        let style = ProgressStyle::with_template("{prefix:>9} [{bar:30}] {pos}/{len} {msg}")
            .expect("a valid template")
            .progress_chars("=> ");
        let episodes = bars.add(ProgressBar::new(episodes as u64).with_style(style.clone()).with_prefix("episodes"));
        let ticks = bars.add(ProgressBar::new(ticks).with_style(style).with_prefix("ticks"));
        Progress { bars, episodes, ticks, stop }
    }
}

impl RunObserver for Progress {
    fn episode_started(&mut self, _episode: u32, _ticks: u64) {
        self.ticks.reset();
    }

    fn stepped(&mut self, _report: &StepReport) {
        self.ticks.inc(1);
    }

    fn episode_ended(&mut self, episode: u32, sim: &Simulation) {
        if let Some((body, [x, y])) = sim.steered_body(0) {
            self.episodes.suspend(|| println!("episode {episode}: '{body}' ended at ({x:.2}, {y:.2}) in world 0"));
        }
        self.episodes.inc(1);
    }

    fn stop(&self) -> bool {
        self.stop.requested()
    }

    fn warning(&mut self, warning: Warning) {
        self.episodes.suspend(|| eprintln!("warning: {warning}"));
    }
}

fn print_summary(sim: &Simulation, outcome: &RunOutcome) -> Result<()> {
    for s in 0..sim.lidar_count() {
        let name = &sim.lidar(s)?.binding().name;
        let stats = sim.lidar_stats(s)?;
        let written = outcome.recording.as_ref().map(|r| r.sensors[s].clone()).unwrap_or_default();
        let rate = if stats.beams > 0 { 100.0 * stats.hits as f64 / stats.beams as f64 } else { 0.0 };
        println!(
            "sensor {s} ('{name}'): {} beams, {} hits ({rate:.1}% hit rate), {} rows, {:.1} MB written",
            stats.beams,
            stats.hits,
            written.rows,
            written.bytes as f64 / 1e6
        );
    }
    let wall = outcome.wall_seconds;
    println!(
        "simulated {:.2} s in {wall:.2} s of wall time ({:.2}x real time){}",
        outcome.sim_seconds,
        outcome.sim_seconds / wall.max(1e-9),
        if outcome.interrupted { ", interrupted" } else { "" }
    );
    if let Some(mb) = peak_memory_mb() {
        println!("peak memory {mb:.0} MB");
    }
    match &outcome.recording {
        Some(r) => {
            println!("session: {}", r.dir.display());
            let me = std::env::args().next().unwrap_or_else(|| "glint".into());
            println!("replay it with: {me} replay {}", r.dir.display());
        }
        None => println!("nothing recorded (--no-record)"),
    }
    Ok(())
}

/// The process's peak resident memory in MB (Linux's `VmHWM`), where the system reports it.
fn peak_memory_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// `glint run --ray ADDRESS`: the episodes as shards on a Ray cluster, by `python -m
/// glint.distributed` (the interpreter `$GLINT_PYTHON`, else `python3`, with glint's Python
/// package), which runs this very tool in each task.
fn run_on_ray(args: &RunArgs, address: &str) -> Result<()> {
    let (Some(seed), Some(out)) = (args.seed, &args.out) else {
        bail!(
            "--ray needs --seed N (every shard derives its episodes' seeds from it) and --out DIR (where the shards go)"
        );
    };
    let python = std::env::var_os("GLINT_PYTHON").unwrap_or_else(|| "python3".into());
    let total = args.episodes as u64 * args.worlds as u64;
    let mut cmd = std::process::Command::new(&python);
    cmd.args(["-m", "glint.distributed"])
        .arg(&args.manifest)
        .args(["--episodes", &total.to_string(), "--seed", &seed.to_string()])
        .arg("--out")
        .arg(out)
        .args(["--worlds", &args.worlds.to_string(), "--seconds", &args.seconds.to_string()])
        .args(["--episodes-per-task", &(args.episodes_per_task as u64 * args.worlds as u64).to_string()]);
    if address != "local" {
        cmd.args(["--address", address]);
    }
    if let Ok(me) = std::env::current_exe() {
        cmd.env("GLINT_BIN", me);
    }
    let status = cmd.status().with_context(|| {
        format!(
            "cannot start {} for --ray (set GLINT_PYTHON to a Python with glint's package)",
            python.to_string_lossy()
        )
    })?;
    if !status.success() {
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}
