//! `glint bench record`: the episode loop of a manifest with the recorder on and off,
//! alternately in one process: the cost of recording, as a ratio.

use std::path::PathBuf;

use serde::Serialize;

use super::median;
use crate::{Quiet, RecordingOptions, SimError, SimOptions, Simulation};

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordBench {
    /// Scene manifest.
    pub manifest: PathBuf,
    /// Simulated seconds per run.
    pub seconds: f64,
    /// Runs of each kind (the median is reported), after one warm-up pair.
    pub repeats: u32,
    /// Where the recorded sessions go (removed afterwards).
    pub out: PathBuf,
}

/// What `glint bench record` measures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecordReport {
    /// The manifest.
    pub manifest: String,
    /// Simulated seconds per run.
    pub seconds: f64,
    /// Rows a recorded run writes.
    pub rows: u64,
    /// Wall time of a run with the recorder on (median), seconds.
    pub recording_s: f64,
    /// Wall time of a run with the recorder off (median), seconds.
    pub not_recording_s: f64,
    /// `recording_s / not_recording_s`.
    pub on_over_off: f64,
}

/// One episode of the manifest's scene, recorded into `out` or not; its wall time and rows.
fn run_once(args: &RecordBench, record: bool) -> Result<(f64, u64), SimError> {
    let options = SimOptions { episode_seconds: Some(args.seconds), ..SimOptions::default() };
    let mut sim = Simulation::from_manifest(&args.manifest, options)?;
    sim.set_lidar_live(true);
    if record {
        sim.arm_recording(&RecordingOptions { out: Some(args.out.clone()), episodes: 1 })?;
    }
    let outcome = sim.run(1, &mut Quiet)?;
    let rows = outcome.recording.map_or(0, |r| r.sensors.iter().map(|s| s.rows).sum());
    Ok((outcome.wall_seconds, rows))
}

/// Times the episode loop with the recorder on and off, alternately, so drift on a shared
/// machine hits both alike; removes the sessions it wrote.
pub fn record(args: &RecordBench) -> Result<RecordReport, SimError> {
    run_once(args, false)?;
    run_once(args, true)?;
    let (mut on, mut off, mut rows) = (Vec::new(), Vec::new(), 0);
    for _ in 0..args.repeats {
        off.push(run_once(args, false)?.0);
        let (wall, recorded) = run_once(args, true)?;
        on.push(wall);
        rows = recorded;
    }
    std::fs::remove_dir_all(&args.out).ok();
    let (recording_s, not_recording_s) = (median(&mut on), median(&mut off));
    Ok(RecordReport {
        manifest: args.manifest.display().to_string(),
        seconds: args.seconds,
        rows,
        recording_s,
        not_recording_s,
        on_over_off: recording_s / not_recording_s,
    })
}
