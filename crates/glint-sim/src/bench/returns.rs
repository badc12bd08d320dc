//! `glint bench returns`: a revolution with the return model against the clean scan of the
//! same revolution.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use glint_core::RayCaster;
use glint_lidar::{Bake, Lidars, ReturnParams, ScanConfig, SecondaryCapture};
use glint_mujoco::{Model, WorldBatch};
use serde::Serialize;

use super::{median, pool};
use crate::SimError;

/// What to scan.
#[derive(Clone, Debug, PartialEq)]
pub struct ReturnsBench {
    /// Scene manifest: its scene, first lidar (and its secondary capture), materials and
    /// return model.
    pub manifest: PathBuf,
    /// Threads (1 keeps the ratio free of parallel scaling).
    pub threads: u32,
    /// Rounds, each timing every measurement once (medians over rounds are reported).
    pub repeats: u32,
}

/// What `glint bench returns --json` prints.
/// What `glint bench returns` measures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReturnsReport {
    /// The manifest.
    pub manifest: String,
    /// Beams per revolution.
    pub beams: usize,
    /// Threads.
    pub threads: u32,
    /// A clean revolution without secondary capture (median), seconds.
    pub clean_s: f64,
    /// A material revolution (two echoes) without secondary capture (median), seconds.
    pub material_s: f64,
    /// `material_s / clean_s`, the median of each round's ratio.
    pub material_over_clean: f64,
    /// The same material revolution under the physical return model (every term on, or the
    /// manifest's `[return_model.physical]`), seconds.
    pub physical_s: f64,
    /// `physical_s / material_s` (the median of each round's): the physical model's cost
    /// over the seed's (target ≤ 1.5).
    pub physical_over_seed: f64,
    /// The physical revolution with beam-divergence footprints of
    /// [`BENCH_FOOTPRINT_RAYS`] sub-rays per beam, seconds.
    pub footprints_s: f64,
    /// `footprints_s / material_s`, the median of each round's (target ≤ 4).
    pub footprints_over_seed: f64,
    /// The binding's secondary capture.
    pub capture: String,
    /// Its scope.
    pub scope: String,
    /// A clean revolution with the binding's capture (median), seconds.
    pub clean_captured_s: f64,
    /// A material revolution with the binding's capture (median), seconds.
    pub material_captured_s: f64,
    /// `material_captured_s / clean_captured_s`, the median of each round's.
    pub material_over_clean_captured: f64,
    /// Beams with a clean hit.
    pub clean_hits: usize,
    /// Beams with a primary echo.
    pub material_echoes: usize,
    /// Beams with a second echo.
    pub secondary_echoes: usize,
}

/// Sub-rays per beam of the footprint measurement.
pub const BENCH_FOOTPRINT_RAYS: u32 = 7;

/// Times a revolution of a manifest's first lidar with the return model (material scan, two
/// echoes, the bake built in memory) against the clean scan of the same revolution, without
/// secondary capture and with the binding's own capture in both; and the material scan under
/// the physical model against the seed's.
pub fn returns(args: &ReturnsBench) -> Result<ReturnsReport, SimError> {
    let manifest = glint_manifest::Manifest::load(&args.manifest)?;
    let binding =
        manifest.lidar.first().cloned().ok_or_else(|| SimError::Setting("the manifest binds no lidar".into()))?;
    let model = Model::from_xml_file(&manifest.scene)?;
    let scene = model.scene().clone();
    let batch = WorldBatch::new(&model, 1)?;
    let caster = RayCaster::new(&scene, batch.poses());
    let table = manifest.material_table(&scene)?;
    let bake = Arc::new(Bake::build(&scene, batch.poses(), &table, manifest.bake.settings)?);
    let frozen = ScanConfig { rotation_hz: 0.0, ..binding.scan };
    let (capture, scope) = (binding.secondary_capture, binding.secondary_scope);
    let binding = glint_lidar::LidarBinding { scan: frozen, ..binding };
    let (mut lidars, _) = Lidars::new(&scene, vec![binding], 1)?;
    lidars.set_return_params(ReturnParams { max_returns: 2, ..manifest.return_params })?;
    lidars.set_seed(manifest.seed);
    let pool = pool(args.threads as usize)?;
    let physics = manifest.physical_model.unwrap_or_default();
    let footprints = glint_lidar::PhysicalModel { footprint_rays: BENCH_FOOTPRINT_RAYS, ..physics };
    // Each measurement: the capture, whether the material source is given, the physical model.
    let runs = [
        (SecondaryCapture::Off, false, None),
        (SecondaryCapture::Off, true, None),
        (SecondaryCapture::Off, true, Some(physics)),
        (SecondaryCapture::Off, true, Some(footprints)),
        (capture, false, None),
        (capture, true, None),
    ];
    // In rounds, each measurement once per round (after a warm-up revolution): a machine whose
    // speed drifts slows every measurement of a round alike, so each ratio is taken within a
    // round, and the medians over rounds are reported.
    let mut times = vec![Vec::new(); runs.len()];
    for _ in 0..args.repeats {
        for (i, &(capture, materials, physical)) in runs.iter().enumerate() {
            lidars.set_secondary_capture(0, capture, scope)?;
            lidars.set_physical_model(physical)?;
            lidars.set_materials(materials.then(|| bake.clone() as Arc<dyn glint_lidar::MaterialLookup>));
            let mut tick = || lidars.tick(&scene, batch.poses(), &caster, 0.01, &[0.0], true);
            pool.install(|| -> Result<(), SimError> {
                tick()?;
                let start = Instant::now();
                tick()?;
                times[i].push(start.elapsed().as_secs_f64());
                Ok(())
            })?;
        }
    }
    let median_of = |i: usize| median(&mut times[i].clone());
    let ratio = |a: usize, b: usize| {
        let mut per_round: Vec<f64> = times[a].iter().zip(&times[b]).map(|(x, y)| x / y).collect();
        median(&mut per_round)
    };
    let (clean_s, material_s, physical_s, footprints_s) = (median_of(0), median_of(1), median_of(2), median_of(3));
    let (clean_captured_s, material_captured_s) = (median_of(4), median_of(5));
    let (material_over_clean, physical_over_seed, footprints_over_seed) = (ratio(1, 0), ratio(2, 1), ratio(3, 1));
    let material_over_clean_captured = ratio(5, 4);
    let (clean, r) = (lidars.scan(0, 0)?, lidars.returns(0, 0)?);
    let report = ReturnsReport {
        manifest: args.manifest.display().to_string(),
        beams: r.range.len(),
        threads: args.threads,
        clean_s,
        material_s,
        material_over_clean,
        physical_s,
        physical_over_seed,
        footprints_s,
        footprints_over_seed,
        capture: format!("{capture:?}"),
        scope: format!("{scope:?}"),
        clean_captured_s,
        material_captured_s,
        material_over_clean_captured,
        clean_hits: clean.hits(),
        material_echoes: r.range.iter().filter(|&&x| x >= 0.0).count(),
        secondary_echoes: r.secondary_range.iter().filter(|&&x| x >= 0.0).count(),
    };
    Ok(report)
}
