//! The benchmarks of `glint bench`: glint measured against its reference in one process, as
//! ratios (MuJoCo's `mj_multiRay`, the bare ray core, the clean scan, a run without the
//! recorder). Each returns a report; the command line prints it.

mod lidar;
mod patterns;
mod rangefinder;
mod rays;
mod record;
mod returns;
mod variants;

use std::time::Instant;

pub use lidar::{LidarBench, LidarReport, lidar};
pub use patterns::Pattern;
pub use rangefinder::{RangefinderBench, RangefinderReport, rangefinder};
pub use rays::{RaysBench, RaysReport, rays};
pub use record::{RecordBench, RecordReport, record};
pub use returns::{BENCH_FOOTPRINT_RAYS, ReturnsBench, ReturnsReport, returns};
pub use variants::{VariantsBench, VariantsReport, variants};

use crate::SimError;

/// Where a bench's rays start by default: the scene's site named `lidar` in world 0 as the
/// batch stands, else 1 m above the origin.
fn default_origin(scene: &glint_core::Scene, batch: &glint_mujoco::WorldBatch) -> glam::DVec3 {
    scene.site_id("lidar").map_or(glam::DVec3::new(0.0, 0.0, 1.0), |s| batch.poses().site(0, s).0)
}

/// Median wall time of `repeats` runs of `f` after one warm-up run.
fn median_time(repeats: u32, mut f: impl FnMut()) -> f64 {
    f();
    let mut times: Vec<f64> = (0..repeats)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    median(&mut times)
}

/// The median of `v` (sorted in place; the upper one of an even count).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A thread pool of `threads` workers for one timed phase.
fn pool(threads: usize) -> Result<rayon::ThreadPool, SimError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| SimError::Setting(format!("cannot start a pool of {threads} threads: {e}")))
}
