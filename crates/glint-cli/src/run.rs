//! `glint run`: the main job. Runs episodes of a manifest's scene with its controller, ticks
//! the lidars on their runner, and records every sensor of every world to a Parquet session.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use glint_core::RayCaster;
use glint_lidar::Lidars;
use glint_manifest::Manifest;
use glint_mujoco::{Model, WorldBatch};
use glint_record::{EpisodeStatus, Session, SessionInfo, TickData};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::controller::Drive;
use crate::draw::{ColourBy, Ramp};
use crate::video::{self, VideoProxy};

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
    /// Seed recorded with the session (default: the manifest's `[return_model] seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Output folder for the session (default: the manifest's `[recorder] output_dir`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run everything but write nothing (to measure the recorder's cost).
    #[arg(long)]
    no_record: bool,
}

impl RunArgs {
    /// One episode of `seconds` of `manifest`, recorded into `out` unless `no_record`.
    pub fn for_bench(manifest: &std::path::Path, seconds: f64, out: &std::path::Path, no_record: bool) -> RunArgs {
        RunArgs {
            manifest: manifest.to_path_buf(),
            episodes: 1,
            seconds,
            worlds: 1,
            seed: None,
            out: Some(out.to_path_buf()),
            no_record,
        }
    }
}

fn positive_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!("'{s}' is not a number of seconds in (0, 86400]")),
    }
}

/// Set by Ctrl-C or SIGTERM: the run closes the episode in progress and stops.
static STOP: AtomicBool = AtomicBool::new(false);
static HANDLER: std::sync::OnceLock<()> = std::sync::OnceLock::new();

/// Per-sensor totals over the run.
#[derive(Default, Clone)]
struct Totals {
    beams: u64,
    hits: u64,
    rows: u64,
    bytes: u64,
}

pub fn run(args: RunArgs) -> Result<()> {
    let outcome = execute(&args, false)?;
    if outcome.interrupted {
        eprintln!("interrupted: the episode in progress was closed and marked interrupted");
        std::process::exit(130);
    }
    Ok(())
}

/// What a run did.
pub struct Outcome {
    /// Wall time of the episodes, seconds (loading excluded).
    pub wall_s: f64,
    /// Rows written over all sensors.
    pub rows: u64,
    /// Whether Ctrl-C or SIGTERM stopped it.
    pub interrupted: bool,
}

/// Runs the job; `quiet` hides the progress bars and the summary (for `glint bench record`).
pub fn execute(args: &RunArgs, quiet: bool) -> Result<Outcome> {
    let manifest = Manifest::load(&args.manifest)?;
    if manifest.lidar.is_empty() {
        bail!("manifest '{}' binds no lidar: add a [[lidar]] table (see docs/manifest.md)", args.manifest.display());
    }
    let model = Model::from_xml_file(&manifest.scene)?;
    let scene = model.scene().clone();
    let nworld = args.worlds as usize;
    let mut batch = WorldBatch::new(&model, nworld)?;
    let mut caster = RayCaster::new(&scene, batch.poses());
    let (mut lidars, warnings) = Lidars::new(&scene, manifest.lidar.clone(), nworld)?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    // The flagged capture scope reads the manifest's NIR classes (a hedge's gaps, a window).
    lidars.set_capture_materials(&scene, &manifest.material_table(&scene)?);
    let mut drive = Drive::new(&manifest.controller, &model, nworld)?;
    let hz = manifest.recorder.lidar_runner_hz;
    let steps = ((1.0 / (hz * model.timestep())).round() as usize).max(1);
    let dt = steps as f64 * model.timestep();
    let ticks = (args.seconds / dt).round().max(1.0) as u64;
    let seed = args.seed.unwrap_or(manifest.seed);

    // A second run in the same process (glint bench record) keeps the first handler.
    if HANDLER.set(()).is_ok() {
        ctrlc::set_handler(move || STOP.store(true, Ordering::SeqCst)).context("cannot install the Ctrl-C handler")?;
    }

    let mut session = if args.no_record {
        None
    } else {
        let out = args.out.clone().unwrap_or_else(|| manifest.recorder.output_dir.clone());
        let info = SessionInfo {
            manifest: manifest.path.clone(),
            manifest_text: std::fs::read_to_string(&manifest.path).unwrap_or_default(),
            scene: manifest.scene.clone(),
            seed,
            episodes: args.episodes * args.worlds,
            seconds_per_episode: ticks as f64 * dt,
            worlds: nworld,
            physics_timestep: model.timestep(),
            lidar_runner_hz: hz,
            controller: format!("{:?}", manifest.controller),
            mujoco_version: Model::mujoco_version(),
            sensors: (0..lidars.len()).map(|s| lidars.binding(s).cloned()).collect::<Result<_, _>>()?,
        };
        Some(Session::create(&out, &info)?)
    };

    let videos = Videos::new(&manifest, &lidars, session.is_some(), hz)?;

    let bars = if quiet { MultiProgress::with_draw_target(ProgressDrawTarget::hidden()) } else { MultiProgress::new() };
    let style = ProgressStyle::with_template("{prefix:>9} [{bar:30}] {pos}/{len} {msg}")
        .expect("a valid template")
        .progress_chars("=> ");
    let episode_bar =
        bars.add(ProgressBar::new(args.episodes as u64).with_style(style.clone()).with_prefix("episodes"));
    let tick_bar = bars.add(ProgressBar::new(ticks).with_style(style).with_prefix("ticks"));

    let mut totals = vec![Totals::default(); lidars.len()];
    let mut beams = Vec::new();
    let started = Instant::now();
    let mut sim_seconds = 0.0;
    let mut interrupted = false;
    for episode in 0..args.episodes {
        batch.reset();
        caster.rebuild(batch.poses());
        drive.reset();
        for w in 0..nworld {
            lidars.reset_world(w)?;
        }
        let mut writers = match &mut session {
            Some(s) => {
                (0..nworld).map(|w| s.begin_episode(episode * args.worlds + w as u32)).collect::<Result<Vec<_>, _>>()?
            }
            None => Vec::new(),
        };
        let mut proxies: Vec<Vec<Option<VideoProxy>>> = writers.iter().map(|e| videos.start(e)).collect();
        tick_bar.reset();
        let mut done = 0;
        for tick in 0..ticks {
            if STOP.load(Ordering::SeqCst) {
                interrupted = true;
                break;
            }
            let t = tick as f64 * dt;
            for w in 0..nworld {
                drive.apply(&mut batch, w, t)?;
            }
            batch.step(steps);
            caster.refit(batch.poses());
            let times: Vec<f64> = (0..nworld).map(|w| batch.time(w)).collect();
            lidars.tick(&scene, batch.poses(), &caster, dt, &times, true)?;
            for (s, total) in totals.iter_mut().enumerate() {
                for (w, &time) in times.iter().enumerate() {
                    lidars.last_tick_beams(s, w, &mut beams)?;
                    let scan = lidars.scan(s, w)?;
                    total.beams += beams.len() as u64;
                    total.hits += beams.iter().filter(|&&k| scan.range[k as usize] >= 0.0).count() as u64;
                    if let Some(writer) = writers.get_mut(w) {
                        let (pos, rot) = lidars.frame(s, w, batch.poses())?;
                        let tick = TickData { timestamp: time, scan, beams: &beams, sensor_rot: rot, sensor_pos: pos };
                        writer.write_tick(s, &tick)?;
                    }
                }
            }
            if videos.due(tick) {
                for (w, row) in proxies.iter_mut().enumerate() {
                    videos.frames(&lidars, &batch, w, row);
                }
            }
            done = tick + 1;
            tick_bar.inc(1);
        }
        for proxy in proxies.into_iter().flatten().flatten() {
            if let Err(e) = proxy.finish() {
                eprintln!("warning: {e:#}; the recording itself is complete");
            }
        }
        let length = done as f64 * dt;
        sim_seconds += length * nworld as f64;
        for (w, writer) in writers.into_iter().enumerate() {
            let status = if interrupted { EpisodeStatus::Interrupted } else { EpisodeStatus::Complete };
            let summary = writer.finish(status, length)?;
            for (s, sensor) in summary.sensors.iter().enumerate() {
                totals[s].rows += sensor.rows;
                totals[s].bytes += sensor.bytes;
            }
            if batch.unstable(w) {
                eprintln!("warning: MuJoCo found world {w} unstable during episode {episode} and reset it");
            }
        }
        if let (false, Some((body, [x, y]))) = (quiet, drive.position(&batch, 0)) {
            episode_bar.suspend(|| println!("episode {episode}: '{body}' ended at ({x:.2}, {y:.2}) in world 0"));
        }
        episode_bar.inc(1);
        if interrupted {
            break;
        }
    }
    episode_bar.finish_and_clear();
    tick_bar.finish_and_clear();
    let wall = started.elapsed().as_secs_f64();
    if !quiet {
        print_summary(&lidars, &totals, sim_seconds, wall, session.as_ref(), interrupted)?;
    }
    Ok(Outcome { wall_s: wall, rows: totals.iter().map(|t| t.rows).sum(), interrupted })
}

fn print_summary(
    lidars: &Lidars,
    totals: &[Totals],
    sim_seconds: f64,
    wall: f64,
    session: Option<&Session>,
    interrupted: bool,
) -> Result<()> {
    for (s, t) in totals.iter().enumerate() {
        let name = &lidars.binding(s)?.name;
        let rate = if t.beams > 0 { 100.0 * t.hits as f64 / t.beams as f64 } else { 0.0 };
        println!(
            "sensor {s} ('{name}'): {} beams, {} hits ({rate:.1}% hit rate), {} rows, {:.1} MB written",
            t.beams,
            t.hits,
            t.rows,
            t.bytes as f64 / 1e6
        );
    }
    println!(
        "simulated {sim_seconds:.2} s in {wall:.2} s of wall time ({:.2}x real time){}",
        sim_seconds / wall.max(1e-9),
        if interrupted { ", interrupted" } else { "" }
    );
    if let Some(mb) = peak_memory_mb() {
        println!("peak memory {mb:.0} MB");
    }
    match session {
        Some(s) => {
            println!("session: {}", s.dir().display());
            let me = std::env::args().next().unwrap_or_else(|| "glint".into());
            println!("replay it with: {me} replay {}", s.dir().display());
        }
        None => println!("nothing recorded (--no-record)"),
    }
    Ok(())
}

/// The video proxies a run writes: which sensors, with what, how often.
struct Videos {
    ffmpeg: Option<PathBuf>,
    /// Per sensor: whether it gets a proxy.
    wanted: Vec<bool>,
    by: ColourBy,
    /// A frame every `every` ticks (about ten frames per second).
    every: u64,
    fps: f64,
}

impl Videos {
    fn new(manifest: &Manifest, lidars: &Lidars, recording: bool, hz: f64) -> Result<Videos> {
        let by: ColourBy = manifest
            .recorder
            .video_colour_by
            .parse()
            .map_err(|e: String| anyhow::anyhow!("[recorder] video_colour_by: {e}"))?;
        let wanted: Vec<bool> = (0..lidars.len())
            .map(|s| Ok(recording && (manifest.recorder.record_video_proxy || lidars.binding(s)?.video_proxy)))
            .collect::<Result<_>>()?;
        let ffmpeg = if wanted.iter().any(|&w| w) {
            let found = video::find_ffmpeg();
            if found.is_none() {
                eprintln!(
                    "warning: video proxies are on, but ffmpeg was not found (install it, or set GLINT_FFMPEG to \
                     its path); recording without them"
                );
            }
            found
        } else {
            None
        };
        let every = (hz / 10.0).round().max(1.0) as u64;
        Ok(Videos { ffmpeg, wanted, by, every, fps: hz / every as f64 })
    }

    /// Starts the proxies of one world's episode (`None` where a sensor has none).
    fn start(&self, episode: &glint_record::Episode) -> Vec<Option<VideoProxy>> {
        (0..self.wanted.len())
            .map(|s| {
                let (ffmpeg, path) = (self.ffmpeg.as_ref()?, episode.path(s)?);
                self.wanted[s].then_some(())?;
                VideoProxy::start(ffmpeg, &path.with_extension("mp4"), self.fps)
                    .map_err(|e| eprintln!("warning: {e:#}; recording without this video proxy"))
                    .ok()
            })
            .collect()
    }

    fn due(&self, tick: u64) -> bool {
        self.ffmpeg.is_some() && tick % self.every == self.every - 1
    }

    /// Draws one frame per sensor of world `w`; a proxy that fails is dropped with a warning.
    fn frames(&self, lidars: &Lidars, batch: &WorldBatch, w: usize, row: &mut [Option<VideoProxy>]) {
        for (s, slot) in row.iter_mut().enumerate() {
            let Some(proxy) = slot else { continue };
            let drawn = (|| -> Result<()> {
                let scan = lidars.scan(s, w)?;
                let config = lidars.config(s)?;
                let (origin, _) = lidars.frame(s, w, batch.poses())?;
                let side = (2.0 * config.max_range as f32).min(30.0);
                let img = video::frame(scan, origin.as_vec3(), config.channels, self.by, Ramp::default(), side);
                proxy.frame(&img)
            })();
            if let Err(e) = drawn {
                eprintln!("warning: {e:#}; recording without this video proxy");
                *slot = None;
            }
        }
    }
}

/// The process's peak resident memory in MB (Linux's `VmHWM`), where the system reports it.
fn peak_memory_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
