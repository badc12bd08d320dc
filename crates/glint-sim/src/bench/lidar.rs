//! `glint bench lidar`: a revolution through the lidar API against the same rays through the
//! bare ray core.

use std::path::PathBuf;

use glam::DVec3;
use glint_core::{HitsMut, RayBatch, RayCaster};
use glint_lidar::{LidarBinding, Lidars, ScanConfig, ScanPreset, Spelled, beam_direction};
use glint_mujoco::{Model, WorldBatch};
use serde::Serialize;

use super::{Pattern, median_time, pool};
use crate::SimError;

/// What to scan.
#[derive(Clone, Debug, PartialEq)]
pub struct LidarBench {
    /// MJCF scene file with a site named `lidar`.
    pub scene: PathBuf,
    /// Scan preset.
    pub preset: ScanPreset,
    /// Worlds.
    pub worlds: u32,
    /// Timed runs per measurement (the median is reported).
    pub repeats: u32,
}

/// What `glint bench lidar --json` prints.
/// What `glint bench lidar` measures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LidarReport {
    /// The scene file.
    pub scene: String,
    /// The scan preset.
    pub preset: String,
    /// Worlds.
    pub worlds: usize,
    /// Beams per revolution.
    pub beams: usize,
    /// One revolution through the sensor API (median), seconds.
    pub sensor_s: f64,
    /// The same rays through the bare ray core (median), seconds.
    pub core_s: f64,
    /// `sensor_s / core_s`.
    pub sensor_over_core: f64,
    /// Beams of world 0 that hit.
    pub hits: usize,
}

/// Times a full revolution of a lidar preset through the sensor API (slicing, frames, range
/// cuts, the live scan) against the same rays through the bare ray core.
pub fn lidar(args: &LidarBench) -> Result<LidarReport, SimError> {
    let model = Model::from_xml_file(&args.scene)?;
    let scene = model.scene().clone();
    let nworld = args.worlds as usize;
    let batch = WorldBatch::new(&model, nworld)?;
    let preset = args.preset;
    // A frozen pattern casts the whole revolution in one tick.
    let config = ScanConfig { rotation_hz: 0.0, ..ScanConfig::from_preset(preset) };
    let site = scene
        .site_id("lidar")
        .ok_or_else(|| SimError::Setting("the scene has no site named 'lidar' to attach the sensor to".into()))?;
    let binding =
        LidarBinding { attach_site: Some(scene.site_name[site].clone()), scan: config, ..LidarBinding::default() };
    let (mut lidars, _) = Lidars::new(&scene, vec![binding], nworld)?;
    let caster = RayCaster::new(&scene, batch.poses());
    let times = vec![0.0; nworld];
    let one = pool(1)?;
    let sensor_s = one.install(|| {
        median_time(args.repeats, || {
            lidars.tick(&scene, batch.poses(), &caster, 0.01, &times, true).expect("validated at binding");
        })
    });
    // The same rays, in the same (tiled) order, through the bare core.
    let beams = config.beam_count();
    let (origin, rot) = batch.poses().site(0, site);
    let dirs: Vec<DVec3> = (0..beams).map(|k| rot * beam_direction(&config, 0, k)).collect();
    let order = Pattern::Os1_64.cast_order_of(&dirs, config.channels as usize);
    // The same filter and self-ignore exclusion as the sensor's beams.
    let (filter, exclude) = lidars.ray_filter(0, &scene)?;
    let pnt = [origin];
    let rays = RayBatch { nray: beams, pnt: &pnt, vec: &order, bodyexclude: &[exclude] };
    let n = nworld * beams;
    let (mut dist, mut geomid, mut normal) = (vec![0.0; n], vec![0i32; n], vec![DVec3::ZERO; n]);
    let core_s = one.install(|| {
        median_time(args.repeats, || {
            let out = HitsMut { dist: &mut dist, geomid: &mut geomid, normal: &mut normal };
            caster.rays_into(&scene, batch.poses(), &rays, &filter, out).expect("valid");
        })
    });
    let report = LidarReport {
        scene: args.scene.display().to_string(),
        preset: preset.name().into(),
        worlds: nworld,
        beams,
        sensor_s,
        core_s,
        sensor_over_core: sensor_s / core_s,
        hits: lidars.scan(0, 0)?.hits(),
    };
    Ok(report)
}
