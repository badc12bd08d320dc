//! MuJoCo's own ray casting (`mj_ray`, `mj_multiRay`), the reference glint is tested and
//! benchmarked against. Each world casts on the model it steps on (the model, a variant or a
//! copy with its own fields).

use glam::DVec3;
use glint_core::{RayFilter, RayHit};
use mujoco_rs::mujoco_c::{mj_multiRay, mj_ray};

use crate::WorldBatch;

/// MuJoCo's `mjMINVAL`: shorter directions make `mj_ray` stop the process, so they are
/// answered as misses before reaching it.
const MINVAL: f64 = 1e-15;

fn group_bytes(filter: &RayFilter) -> Option<[u8; 6]> {
    filter.geomgroup.map(|g| g.map(u8::from))
}

/// MuJoCo's ray queries on the worlds of a [`WorldBatch`].
pub trait MujocoRays {
    /// `mj_ray` in world `w`.
    fn mj_ray(&self, w: usize, pnt: DVec3, vec: DVec3, filter: &RayFilter, bodyexclude: i32) -> RayHit;

    /// `mj_multiRay` in world `w`: rays from one origin, written into caller-owned buffers
    /// of length `vec.len()`. Geoms farther than `cutoff` are skipped, as in MuJoCo.
    #[allow(clippy::too_many_arguments)]
    fn mj_multi_ray(
        &mut self,
        w: usize,
        pnt: DVec3,
        vec: &[[f64; 3]],
        filter: &RayFilter,
        bodyexclude: i32,
        cutoff: f64,
        dist: &mut [f64],
        geomid: &mut [i32],
        normal: &mut [[f64; 3]],
    );
}

impl MujocoRays for WorldBatch {
    fn mj_ray(&self, w: usize, pnt: DVec3, vec: DVec3, filter: &RayFilter, bodyexclude: i32) -> RayHit {
        if !vec.is_finite() || vec.length() < MINVAL {
            return RayHit::MISS;
        }
        let groups = group_bytes(filter);
        let (mut geomid, mut normal) = (-1i32, [0.0f64; 3]);
        let d = &self.data[w];
        // SAFETY: model and data are valid and belong together; every pointer refers to a
        // live local of the documented size; geomgroup is null or 6 bytes.
        let dist = unsafe {
            mj_ray(
                d.model().ffi(),
                d.ffi(),
                &pnt.to_array(),
                &vec.to_array(),
                groups.as_ref().map_or(std::ptr::null(), |g| g.as_ptr()),
                filter.flg_static,
                bodyexclude,
                &mut geomid,
                &mut normal,
            )
        };
        if geomid < 0 { RayHit::MISS } else { RayHit { dist, geomid, normal: DVec3::from(normal) } }
    }

    fn mj_multi_ray(
        &mut self,
        w: usize,
        pnt: DVec3,
        vec: &[[f64; 3]],
        filter: &RayFilter,
        bodyexclude: i32,
        cutoff: f64,
        dist: &mut [f64],
        geomid: &mut [i32],
        normal: &mut [[f64; 3]],
    ) {
        let n = vec.len();
        assert!(
            dist.len() == n && geomid.len() == n && normal.len() == n,
            "mj_multi_ray buffers must match the ray count"
        );
        let groups = group_bytes(filter);
        let d = &mut self.data[w];
        let m = d.model().clone();
        geomid.fill(-1);
        // SAFETY: model and data belong together; `vec`, `dist`, `geomid` and `normal` hold
        // `n` rays each (checked above); geomgroup is null or 6 bytes.
        unsafe {
            mj_multiRay(
                m.ffi(),
                d.ffi_mut(),
                &pnt.to_array(),
                vec.as_ptr() as *const f64,
                groups.as_ref().map_or(std::ptr::null(), |g| g.as_ptr()),
                filter.flg_static,
                bodyexclude,
                geomid.as_mut_ptr(),
                dist.as_mut_ptr(),
                normal.as_mut_ptr() as *mut f64,
                n as i32,
                cutoff,
            )
        };
    }
}
