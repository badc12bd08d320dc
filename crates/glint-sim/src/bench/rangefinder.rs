//! `glint bench rangefinder`: an array of MJCF `<rangefinder>` sensors added to a scene,
//! computed by glint's BVH caster and by MuJoCo's own `mj_sensorPos` in the same process, and
//! compared value by value on every step of a run.

use std::path::PathBuf;

use glam::DVec3;
use glint_core::RayCaster;
use glint_mujoco::{SceneSpec, WorldBatch};
use serde::Serialize;

use super::{Pattern, default_origin, median_time, pool};
use crate::SimError;
use crate::rangefinders::RangefinderSet;

/// The largest difference from MuJoCo counted as agreement: rounding, not a different hit.
const AGREE: f64 = 1e-12;

/// The prefix of the rangefinders (and `…site<i>` of their sites) the bench adds.
const PREFIX: &str = "glint_bench_rangefinder";

/// What to measure.
#[derive(Clone, Debug, PartialEq)]
pub struct RangefinderBench {
    /// MJCF scene file.
    pub scene: PathBuf,
    /// Rangefinders added, on a Fibonacci sphere of directions.
    pub count: usize,
    /// Where they sit (default: the site named `lidar`, else 0,0,1).
    pub origin: Option<DVec3>,
    /// Physics steps over which glint's values are compared with MuJoCo's.
    pub steps: u32,
    /// Timed runs per measurement (the median is reported), after one warm-up run.
    pub repeats: u32,
}

/// What `glint bench rangefinder` measures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RangefinderReport {
    /// The scene file.
    pub scene: String,
    /// Rangefinders glint computes: those added and the scene's own site-attached ones.
    pub rangefinders: usize,
    /// Where the added ones sit, world frame (m).
    pub origin: [f64; 3],
    /// glint: every rangefinder cast as one batch through the BVH, one thread, seconds.
    pub glint_s: f64,
    /// MuJoCo's `mj_sensorPos` (every position-stage sensor of the model, the rangefinders
    /// among them), one thread, seconds.
    pub mujoco_s: f64,
    /// MuJoCo's time over glint's.
    pub speedup: f64,
    /// Steps compared (the state after each, the initial one included).
    pub steps_compared: u32,
    /// Values compared over those steps.
    pub values_compared: usize,
    /// Values where glint differs from MuJoCo's `sensordata` by more than 1e-12 (a miss
    /// against a hit differs by more than a metre).
    pub mismatches: usize,
    /// The largest difference from MuJoCo's `sensordata` (the last bits of a distance that
    /// glint's core and `mj_ray` compute in another order).
    pub max_abs_diff: f64,
    /// Distances that hit something, over those steps.
    pub hits: usize,
}

/// Adds `count` rangefinders to the scene and measures glint against MuJoCo on them.
pub fn rangefinder(args: &RangefinderBench) -> Result<RangefinderReport, SimError> {
    if args.count == 0 {
        return Err(SimError::Setting("--count 0: give at least one rangefinder".into()));
    }
    let origin = match args.origin {
        Some(p) => p,
        None => {
            let model = glint_mujoco::Model::from_xml_file(&args.scene)?;
            default_origin(model.scene(), &WorldBatch::new(&model, 1)?)
        }
    };
    let mut spec = SceneSpec::from_xml_file(&args.scene)?;
    spec.add_rangefinders(PREFIX, origin, &Pattern::Sphere(args.count).cast_order());
    let model = spec.compile()?;
    let scene = model.scene().clone();
    let mut batch = WorldBatch::new(&model, 1)?;
    let (set, _skipped) = RangefinderSet::from_model(&model, 1);
    let set = set.ok_or_else(|| SimError::Setting("the scene with the added array has no rangefinder".into()))?;
    let width = set.width();
    let mut values = vec![0.0; width];
    let mut caster = RayCaster::new(&scene, batch.poses());

    let (mut values_compared, mut mismatches, mut hits, mut max_abs_diff) = (0, 0, 0, 0.0f64);
    for step in 0..=args.steps {
        if step > 0 {
            batch.step(1);
            caster.refit(batch.poses());
        }
        set.cast_into(&scene, batch.poses(), &caster, 0..1, &mut values)?;
        let mujoco = batch.sensordata(0);
        let reference = set.finders().iter().flat_map(|f| mujoco[f.adr..f.adr + f.dim].iter().copied());
        for (g, m) in values.iter().zip(reference) {
            let diff = (g - m).abs();
            max_abs_diff = max_abs_diff.max(diff);
            mismatches += usize::from(diff > AGREE);
            values_compared += 1;
        }
        hits += set.finders().iter().filter(|f| mujoco[f.adr] >= 0.0).count();
    }

    let (glint_s, mujoco_s) = pool(1)?.install(|| {
        let glint_s = median_time(args.repeats, || {
            set.cast_into(&scene, batch.poses(), &caster, 0..1, &mut values).expect("sized for one world");
        });
        let mujoco_s = median_time(args.repeats, || batch.mj_sensor_pos(0));
        (glint_s, mujoco_s)
    });
    Ok(RangefinderReport {
        scene: args.scene.display().to_string(),
        rangefinders: set.finders().len(),
        origin: origin.to_array(),
        glint_s,
        mujoco_s,
        speedup: mujoco_s / glint_s,
        steps_compared: args.steps + 1,
        values_compared,
        mismatches,
        max_abs_diff,
        hits,
    })
}
