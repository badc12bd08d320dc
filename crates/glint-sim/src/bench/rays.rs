//! `glint bench rays`: glint's ray core against MuJoCo's `mj_multiRay` on the same rays.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use glam::DVec3;
use glint_core::{HitsMut, Mesh, RayBatch, RayCaster, RayFilter};
use glint_mujoco::{Model, MujocoRays, WorldBatch};
use serde::Serialize;

use super::{Pattern, default_origin, median_time, pool};
use crate::SimError;

/// What to cast.
#[derive(Clone, Debug, PartialEq)]
pub struct RaysBench {
    /// MJCF scene file.
    pub scene: PathBuf,
    /// Ray layout.
    pub pattern: Pattern,
    /// Sensor origin (default: the site named `lidar`, else 0,0,1).
    pub origin: Option<DVec3>,
    /// Worlds, each casting the whole pattern.
    pub worlds: u32,
    /// Threads of glint's parallel run (default: all cores).
    pub threads: Option<u32>,
    /// Timed runs per measurement (the median is reported).
    pub repeats: u32,
}

/// What `glint bench rays --json` prints.
/// What `glint bench rays` measures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RaysReport {
    /// The scene file.
    pub scene: String,
    /// The ray layout.
    pub pattern: String,
    /// Geoms in the scene.
    pub ngeom: usize,
    /// Mesh triangles in the scene's geoms.
    pub ntriangle: usize,
    /// Worlds, each casting the whole pattern.
    pub worlds: usize,
    /// Threads of the parallel run.
    pub threads: usize,
    /// Where the rays start, world frame (m).
    pub origin: [f64; 3],
    /// Rays cast over all worlds.
    pub rays: usize,
    /// glint on every thread, rays per second.
    pub glint_rays_per_s: f64,
    /// glint on one thread, rays per second.
    pub glint_rays_per_s_1thread: f64,
    /// MuJoCo's `mj_multiRay` (one thread), rays per second.
    pub mujoco_rays_per_s: f64,
    /// glint over MuJoCo, one thread each.
    pub speedup_1thread: f64,
    /// glint on every thread over glint on one.
    pub thread_scaling: f64,
    /// Building every mesh's BVH (done once per model), seconds.
    pub blas_build_s: f64,
    /// Building the top-level BVH of every world, seconds.
    pub bvh_build_s: f64,
    /// Refitting one world's top-level BVH, seconds.
    pub refit_s: f64,
    /// The refit as a share of one world's scan.
    pub refit_fraction_of_scan: f64,
    /// Rays that hit in glint and miss in MuJoCo's `mj_ray`, or the reverse.
    pub hit_mismatch: usize,
    /// Largest distance difference with MuJoCo over rays both hit, metres.
    pub max_abs_diff_m: f64,
    /// Rays where `mj_multiRay` differs from `mj_ray` (its bounding-angle culling) and glint
    /// agrees with `mj_ray`.
    pub multiray_culled: usize,
    /// Rays where glint and `mj_ray` both hit, but not the same geom.
    pub geom_mismatch: usize,
    /// Largest difference of a normal's component from `mj_ray`'s, over rays that hit the same
    /// geom.
    pub max_normal_diff: f64,
    /// Rays that disagree with `mj_ray`, by cause and the geom type hit: "hit or miss",
    /// "another geom at the same distance" (coincident surfaces), "another geom", "distance"
    /// (more than 1e-9, relative, at least 1 m) or "normal" (a component more than 1e-6).
    pub disagreements: BTreeMap<String, usize>,
    /// Rays that hit.
    pub hits: usize,
}

/// Why a ray of glint's disagrees with `mj_ray`'s, each given as (geom, distance, normal);
/// `None` when they agree.
fn disagreement(glint: (i32, f64, DVec3), mujoco: (i32, f64, DVec3)) -> Option<&'static str> {
    let close = (glint.1 - mujoco.1).abs() <= 1e-9 * glint.1.abs().max(1.0);
    if (glint.0 >= 0) != (mujoco.0 >= 0) {
        Some("hit or miss")
    } else if glint.0 < 0 {
        None
    } else if glint.0 != mujoco.0 {
        Some(if close { "another geom at the same distance" } else { "another geom" })
    } else if !close {
        Some("distance")
    } else if (glint.2 - mujoco.2).abs().max_element() > 1e-6 {
        Some("normal")
    } else {
        None
    }
}

/// Casts one sensor's rays with glint and with MuJoCo's `mj_multiRay` in the same process:
/// both rates, their ratio and their agreement.
pub fn rays(args: &RaysBench) -> Result<RaysReport, SimError> {
    let model = Model::from_xml_file(&args.scene)?;
    let scene = model.scene().clone();
    let nworld = args.worlds as usize;
    let mut batch = WorldBatch::new(&model, nworld)?;
    let origin = match args.origin {
        Some(p) => p,
        None => default_origin(&scene, &batch),
    };
    let dirs = args.pattern.cast_order();
    if dirs.is_empty() {
        return Err(SimError::Setting("the pattern has no rays".into()));
    }
    let nray = dirs.len();
    let threads = args.threads.map_or_else(rayon::current_num_threads, |t| t as usize);
    let filter = RayFilter::default();

    // Every timed phase runs in a pool made for it and dropped after it: idle rayon workers
    // spin for a while, and on a small machine a spinning pool would steal the cores the next
    // phase is timing.
    let phase = |n: usize| pool(n);
    let (caster, blas_build_s, bvh_build_s, refit_s) = phase(1)?.install(|| {
        // Bottom level: rebuild every mesh's BVH as model loading does (height fields are small).
        let blas_build_s = median_time(args.repeats, || {
            for m in &scene.mesh {
                std::hint::black_box(Mesh::new(m.name.clone(), m.vert.clone(), m.face.clone(), Vec::new()).ok());
            }
        });
        let mut caster = RayCaster::new(&scene, batch.poses());
        let bvh_build_s = median_time(args.repeats, || caster = RayCaster::new(&scene, batch.poses()));
        let refit_s = median_time(args.repeats.max(50), || caster.refit_world(batch.poses(), 0));
        (caster, blas_build_s, bvh_build_s, refit_s)
    });

    let pnt = [origin];
    let rays = RayBatch { nray, pnt: &pnt, vec: &dirs, bodyexclude: &[-1] };
    let total = nworld * nray;
    let (mut dist, mut geomid, mut normal) = (vec![0.0; total], vec![0i32; total], vec![DVec3::ZERO; total]);
    let mut cast = || {
        let out = HitsMut { dist: &mut dist, geomid: &mut geomid, normal: &mut normal };
        caster.rays_into(&scene, batch.poses(), &rays, &filter, out)
    };
    // Each timed run repeats the scan until it lasts about 20 ms, so waking the workers of a
    // fresh pool is not part of the figure.
    let t_once = {
        let t = Instant::now();
        phase(1)?.install(&mut cast)?;
        t.elapsed().as_secs_f64()
    };
    let reps = ((0.02 / t_once).ceil() as usize).clamp(1, 1000);
    let mut timed = |n: usize| -> Result<f64, SimError> {
        let p = phase(n)?;
        let t = p.install(|| {
            median_time(args.repeats, || {
                for _ in 0..reps {
                    cast().expect("validated above");
                }
            })
        });
        drop(p);
        std::thread::sleep(std::time::Duration::from_millis(20));
        Ok(t / reps as f64)
    };
    let t1 = timed(1)?;
    let tn = timed(threads)?;
    let (dist, geomid, normal) = {
        phase(1)?.install(&mut cast)?;
        (dist, geomid, normal)
    };

    let dirs_arr: Vec<[f64; 3]> = dirs.iter().map(|d| d.to_array()).collect();
    let (mut mdist, mut mgeom, mut mnormal) = (vec![0.0; nray], vec![0i32; nray], vec![[0.0; 3]; nray]);
    let mujoco_all = |batch: &mut WorldBatch, mdist: &mut [f64], mgeom: &mut [i32], mnormal: &mut [[f64; 3]]| {
        for w in 0..nworld {
            batch.mj_multi_ray(w, origin, &dirs_arr, &filter, -1, 1e10, mdist, mgeom, mnormal);
        }
    };
    let tm = median_time(args.repeats, || mujoco_all(&mut batch, &mut mdist, &mut mgeom, &mut mnormal));

    // Agreement: compare with mj_multiRay ray by ray; where they differ, ask mj_ray (the
    // exact reference), since mj_multiRay's bounding-angle culling can drop geoms.
    let (mut hit_mismatch, mut max_abs_diff_m, mut hits, mut multiray_culled) = (0usize, 0.0f64, 0usize, 0usize);
    let (mut geom_mismatch, mut max_normal_diff) = (0usize, 0.0f64);
    let mut disagreements = BTreeMap::new();
    for w in 0..nworld {
        batch.mj_multi_ray(w, origin, &dirs_arr, &filter, -1, 1e10, &mut mdist, &mut mgeom, &mut mnormal);
        for i in 0..nray {
            let k = w * nray + i;
            let glint = (geomid[k], dist[k], normal[k]);
            hits += usize::from(glint.0 >= 0);
            let mut mujoco = (mgeom[i], mdist[i], DVec3::from_array(mnormal[i]));
            if mujoco.0 != glint.0 {
                let exact = batch.mj_ray(w, origin, dirs[i], &filter, -1);
                multiray_culled += usize::from(exact.geomid == glint.0);
                mujoco = (exact.geomid, exact.dist, exact.normal);
            }
            if (glint.0 >= 0) != (mujoco.0 >= 0) {
                hit_mismatch += 1;
            } else if glint.0 >= 0 {
                max_abs_diff_m = max_abs_diff_m.max((glint.1 - mujoco.1).abs());
                if glint.0 == mujoco.0 {
                    max_normal_diff = max_normal_diff.max((glint.2 - mujoco.2).abs().max_element());
                } else {
                    geom_mismatch += 1;
                }
            }
            if let Some(cause) = disagreement(glint, mujoco) {
                let hit = if glint.0 >= 0 { glint.0 } else { mujoco.0 };
                let kind = format!("{:?}", scene.geom_type[hit as usize]).to_lowercase();
                *disagreements.entry(format!("{cause} ({kind})")).or_insert(0) += 1;
            }
        }
    }

    let report = RaysReport {
        scene: args.scene.display().to_string(),
        pattern: args.pattern.to_string(),
        ngeom: scene.ngeom(),
        ntriangle: scene
            .geom_dataid
            .iter()
            .zip(&scene.geom_type)
            .filter(|(_, t)| **t == glint_core::GeomType::Mesh)
            .map(|(&d, _)| scene.mesh[d as usize].nface())
            .sum(),
        worlds: nworld,
        threads,
        origin: origin.to_array(),
        rays: total,
        glint_rays_per_s: total as f64 / tn,
        glint_rays_per_s_1thread: total as f64 / t1,
        mujoco_rays_per_s: total as f64 / tm,
        speedup_1thread: tm / t1,
        thread_scaling: t1 / tn,
        blas_build_s,
        bvh_build_s,
        refit_s,
        refit_fraction_of_scan: refit_s / (t1 / nworld as f64),
        hit_mismatch,
        max_abs_diff_m,
        multiray_culled,
        geom_mismatch,
        max_normal_diff,
        disagreements,
        hits,
    };
    Ok(report)
}
