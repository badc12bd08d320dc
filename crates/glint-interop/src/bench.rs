//! `glint bench mcap`: how fast a recorded session becomes MCAP, against the simulated time
//! it holds (the reference: an export at least as fast as the robot lived it can follow a
//! recording while it is made).

use std::path::PathBuf;
use std::time::Instant;

use glint_sim::{Quiet, RecordingOptions, SimOptions, Simulation};
use serde::Serialize;

use crate::InteropError;
use crate::export::{McapOptions, export_mcap};

/// What to measure.
#[derive(Clone, Debug, PartialEq)]
pub struct McapBench {
    /// Scene manifest whose lidars and cameras are recorded.
    pub manifest: PathBuf,
    /// Simulated seconds recorded.
    pub seconds: f64,
    /// Exports timed (the median is reported), after one warm-up export.
    pub repeats: u32,
    /// Where the session and the exports go (removed afterwards).
    pub out: PathBuf,
}

/// What `glint bench mcap` measures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct McapReport {
    /// The manifest.
    pub manifest: String,
    /// Simulated seconds in the session.
    pub seconds: f64,
    /// Messages in the MCAP file.
    pub messages: u64,
    /// Points in its clouds.
    pub points: u64,
    /// Bytes of the MCAP file.
    pub bytes: u64,
    /// Wall time of one export (median), seconds.
    pub export_s: f64,
    /// `seconds / export_s`: how many times faster than real time the export runs.
    pub real_time_factor: f64,
}

/// Records one episode of the manifest, then exports it `repeats + 1` times.
pub fn bench_mcap(args: &McapBench) -> Result<McapReport, InteropError> {
    let options = SimOptions { episode_seconds: Some(args.seconds), ..SimOptions::default() };
    let sim_error = |e: glint_sim::SimError| InteropError::Setting(e.to_string());
    let mut sim = Simulation::from_manifest(&args.manifest, options).map_err(sim_error)?;
    sim.set_lidar_live(true);
    let session =
        sim.arm_recording(&RecordingOptions { out: Some(args.out.join("session")), episodes: 1 }).map_err(sim_error)?;
    sim.run(1, &mut Quiet).map_err(sim_error)?;
    let mut times = Vec::new();
    let mut last = None;
    for run in 0..=args.repeats {
        let out = args.out.join(format!("mcap-{run}"));
        let start = Instant::now();
        let files = export_mcap(&session, &out, &McapOptions::default())?;
        let wall = start.elapsed().as_secs_f64();
        if run > 0 {
            times.push(wall);
        }
        let bytes = files.iter().filter_map(|f| std::fs::metadata(&f.path).ok()).map(|m| m.len()).sum::<u64>();
        last = Some((files, bytes));
        std::fs::remove_dir_all(&out).ok();
    }
    std::fs::remove_dir_all(&args.out).ok();
    let (files, bytes) = last.expect("at least one export ran");
    let export_s = glint_sim::bench::median(&mut times);
    Ok(McapReport {
        manifest: args.manifest.display().to_string(),
        seconds: args.seconds,
        messages: files.iter().map(|f| f.messages).sum(),
        points: files.iter().map(|f| f.points).sum(),
        bytes,
        export_s,
        real_time_factor: args.seconds / export_s,
    })
}

/// What to run for `glint bench live`.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveBench {
    /// Scene manifest.
    pub manifest: PathBuf,
    /// Simulated seconds per run.
    pub seconds: f64,
    /// Runs of each kind (the median is reported), after one warm-up pair.
    pub repeats: u32,
}

/// What `glint bench live` measures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LiveReport {
    /// The manifest.
    pub manifest: String,
    /// Simulated seconds per run.
    pub seconds: f64,
    /// Wall time of the episode loop with the live view on and no client (median), seconds.
    pub live_s: f64,
    /// Wall time without it (median), seconds.
    pub plain_s: f64,
    /// `live_s / plain_s - 1`: what the view adds, as a fraction (target ≤ 0.10).
    pub overhead: f64,
}

/// One episode of the manifest with every lidar firing, with a live view on loopback (no
/// client) or without; its wall time.
fn live_once(args: &LiveBench, live: bool) -> Result<f64, InteropError> {
    let options = SimOptions { episode_seconds: Some(args.seconds), ..SimOptions::default() };
    let mut sim = Simulation::from_manifest(&args.manifest, options)?;
    sim.set_lidar_live(true);
    let view = if live { Some(crate::LiveView::start("127.0.0.1", 0)?) } else { None };
    if let Some(view) = &view {
        let output = view.output(&sim)?;
        sim.add_output(Box::new(output));
    }
    Ok(sim.run(1, &mut Quiet)?.wall_seconds)
}

/// Times the episode loop with and without a live view, alternately, so drift on a shared
/// machine hits both alike.
pub fn bench_live(args: &LiveBench) -> Result<LiveReport, InteropError> {
    live_once(args, false)?;
    live_once(args, true)?;
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for _ in 0..args.repeats {
        off.push(live_once(args, false)?);
        on.push(live_once(args, true)?);
    }
    let (live_s, plain_s) = (glint_sim::bench::median(&mut on), glint_sim::bench::median(&mut off));
    Ok(LiveReport {
        manifest: args.manifest.display().to_string(),
        seconds: args.seconds,
        live_s,
        plain_s,
        overhead: live_s / plain_s - 1.0,
    })
}
