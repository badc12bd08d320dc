//! `glint bench returns`: a revolution with the return model against the clean scan of the
//! same revolution.

use std::path::PathBuf;
use std::sync::Arc;

use glint_core::RayCaster;
use glint_lidar::{Bake, Lidars, ReturnParams, ScanConfig, SecondaryCapture};
use glint_mujoco::{Model, WorldBatch};
use serde::Serialize;

use super::{median_time, pool};
use crate::SimError;

/// What to scan.
#[derive(Clone, Debug, PartialEq)]
pub struct ReturnsBench {
    /// Scene manifest: its scene, first lidar (and its secondary capture), materials and
    /// return model.
    pub manifest: PathBuf,
    /// Threads (1 keeps the ratio free of parallel scaling).
    pub threads: u32,
    /// Timed runs per measurement (the median is reported).
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
    /// `material_s / clean_s`.
    pub material_over_clean: f64,
    /// The same material revolution under the physical return model (every term on, or the
    /// manifest's `[return_model.physical]`), seconds.
    pub physical_s: f64,
    /// `physical_s / material_s`: the physical model's cost over the seed's (target ≤ 1.5).
    pub physical_over_seed: f64,
    /// The binding's secondary capture.
    pub capture: String,
    /// Its scope.
    pub scope: String,
    /// A clean revolution with the binding's capture (median), seconds.
    pub clean_captured_s: f64,
    /// A material revolution with the binding's capture (median), seconds.
    pub material_captured_s: f64,
    /// `material_captured_s / clean_captured_s`.
    pub material_over_clean_captured: f64,
    /// Beams with a clean hit.
    pub clean_hits: usize,
    /// Beams with a primary echo.
    pub material_echoes: usize,
    /// Beams with a second echo.
    pub secondary_echoes: usize,
}

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
    // One timed revolution with the capture and the material source given.
    let physics = manifest.physical_model.unwrap_or_default();
    let mut time = |capture: SecondaryCapture, materials: bool, physical: bool| -> Result<f64, SimError> {
        lidars.set_secondary_capture(0, capture, scope)?;
        lidars.set_physical_model(physical.then_some(physics))?;
        lidars.set_materials(materials.then(|| bake.clone() as Arc<dyn glint_lidar::MaterialLookup>));
        Ok(pool.install(|| {
            median_time(args.repeats, || {
                lidars.tick(&scene, batch.poses(), &caster, 0.01, &[0.0], true).expect("validated at binding");
            })
        }))
    };
    let clean_s = time(SecondaryCapture::Off, false, false)?;
    let material_s = time(SecondaryCapture::Off, true, false)?;
    let physical_s = time(SecondaryCapture::Off, true, true)?;
    let clean_captured_s = time(capture, false, false)?;
    let material_captured_s = time(capture, true, false)?;
    let (clean, r) = (lidars.scan(0, 0)?, lidars.returns(0, 0)?);
    let report = ReturnsReport {
        manifest: args.manifest.display().to_string(),
        beams: r.range.len(),
        threads: args.threads,
        clean_s,
        material_s,
        material_over_clean: material_s / clean_s,
        physical_s,
        physical_over_seed: physical_s / material_s,
        capture: format!("{capture:?}"),
        scope: format!("{scope:?}"),
        clean_captured_s,
        material_captured_s,
        material_over_clean_captured: material_captured_s / clean_captured_s,
        clean_hits: clean.hits(),
        material_echoes: r.range.iter().filter(|&&x| x >= 0.0).count(),
        secondary_echoes: r.secondary_range.iter().filter(|&&x| x >= 0.0).count(),
    };
    Ok(report)
}
