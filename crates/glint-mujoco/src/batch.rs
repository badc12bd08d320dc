//! A batch of `nworld` MuJoCo worlds over one compiled model, stepped in parallel, with
//! per-world poses refreshed into glint's structure-of-arrays [`Poses`].

use std::sync::Arc;

use glam::{DMat3, DVec3};
use glint_core::{Poses, TendonSegment, mat_from_mujoco};
use mujoco_rs::mujoco_c::mjtWarning;
use mujoco_rs::prelude::{MjData, MjModel};
use rayon::prelude::*;

use crate::{Model, MujocoError};

/// `nworld` MuJoCo `MjData` over one model, and their poses.
pub struct WorldBatch {
    model: Model,
    pub(crate) data: Vec<MjData<Arc<MjModel>>>,
    poses: Poses,
    /// Model copies with other physics fields, shared by the worlds that have them.
    pub(crate) variants: Vec<crate::physics::Variant>,
    /// Per world, the model its physics fields are relative to: the model, or a variant.
    pub(crate) bases: Vec<Arc<MjModel>>,
}

impl std::fmt::Debug for WorldBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorldBatch").field("nworld", &self.data.len()).field("model", &self.model).finish()
    }
}

/// One world's share of every pose array.
struct WorldPoses<'a> {
    geom_xpos: &'a mut [DVec3],
    geom_xmat: &'a mut [DMat3],
    xpos: &'a mut [DVec3],
    xmat: &'a mut [DMat3],
    cam_xpos: &'a mut [DVec3],
    cam_xmat: &'a mut [DMat3],
    light_xpos: &'a mut [DVec3],
    light_xdir: &'a mut [DVec3],
    site_xpos: &'a mut [DVec3],
    site_xmat: &'a mut [DMat3],
    tendon_segments: &'a mut Vec<TendonSegment>,
}

/// Splits a `(nworld, n)` array into `nworld` rows (also when `n == 0`).
fn rows<T>(mut v: &mut [T], nworld: usize) -> Vec<&mut [T]> {
    let n = v.len() / nworld;
    let mut out = Vec::with_capacity(nworld);
    for _ in 0..nworld {
        let (row, rest) = v.split_at_mut(n);
        out.push(row);
        v = rest;
    }
    out
}

/// Row `w` of a `(nworld, n)` array.
fn row_of<T>(v: &mut [T], w: usize, nworld: usize) -> &mut [T] {
    let n = v.len() / nworld;
    &mut v[w * n..(w + 1) * n]
}

fn copy_vec3(dst: &mut [DVec3], src: *const f64) {
    if dst.is_empty() {
        return;
    }
    // SAFETY: `src` is an mjData array of `3 * dst.len()` doubles (one row per object).
    let src = unsafe { std::slice::from_raw_parts(src, 3 * dst.len()) };
    for (d, s) in dst.iter_mut().zip(src.chunks_exact(3)) {
        *d = DVec3::new(s[0], s[1], s[2]);
    }
}

fn copy_mat(dst: &mut [DMat3], src: *const f64) {
    if dst.is_empty() {
        return;
    }
    // SAFETY: `src` is an mjData array of `9 * dst.len()` doubles (one row-major 3×3 each).
    let src = unsafe { std::slice::from_raw_parts(src, 9 * dst.len()) };
    for (d, s) in dst.iter_mut().zip(src.chunks_exact(9)) {
        *d = mat_from_mujoco(s);
    }
}

fn refresh(data: &MjData<Arc<MjModel>>, out: &mut WorldPoses) {
    let d = data.ffi();
    copy_vec3(out.geom_xpos, d.geom_xpos);
    copy_mat(out.geom_xmat, d.geom_xmat);
    copy_vec3(out.xpos, d.xpos);
    copy_mat(out.xmat, d.xmat);
    copy_vec3(out.cam_xpos, d.cam_xpos);
    copy_mat(out.cam_xmat, d.cam_xmat);
    copy_vec3(out.light_xpos, d.light_xpos);
    copy_vec3(out.light_xdir, d.light_xdir);
    copy_vec3(out.site_xpos, d.site_xpos);
    copy_mat(out.site_xmat, d.site_xmat);
    crate::tendons::tendon_segments(data.model().ffi(), d, out.tendon_segments);
}

impl WorldBatch {
    /// `nworld` worlds at the model's initial state, with kinematics computed.
    pub fn new(model: &Model, nworld: usize) -> Result<WorldBatch, MujocoError> {
        if nworld == 0 {
            return Err(MujocoError::NoWorlds);
        }
        let data = (0..nworld).map(|_| MjData::new(model.mj().clone())).collect();
        let poses = Poses::new(model.scene(), nworld);
        let bases = vec![model.mj().clone(); nworld];
        let mut batch = WorldBatch { model: model.clone(), data, poses, variants: Vec::new(), bases };
        batch.forward();
        Ok(batch)
    }

    /// Number of worlds.
    pub fn nworld(&self) -> usize {
        self.data.len()
    }

    /// Bytes of world 0's `mjData` that are in use: its buffer, and the most of its arena
    /// (contacts, constraints, scratch) it has used so far (MuJoCo's `maxuse_arena`); the rest
    /// of the arena is reserved but never touched, so it costs no memory.
    pub fn bytes_in_use(&self) -> u64 {
        let d = self.data[0].ffi();
        (d.nbuffer.max(0) as u64) + d.maxuse_arena as u64
    }

    /// Bytes world 0's `mjData` reserves: its buffer and its whole arena (an upper bound of
    /// [`WorldBatch::bytes_in_use`]).
    pub fn bytes_reserved(&self) -> u64 {
        let d = self.data[0].ffi();
        (d.nbuffer.max(0) + d.narena.max(0)) as u64
    }

    /// The model every world simulates.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The poses of every world after the last step, forward or reset.
    pub fn poses(&self) -> &Poses {
        &self.poses
    }

    /// Simulation time of world `w` in seconds.
    pub fn time(&self, w: usize) -> f64 {
        self.data[w].ffi().time
    }

    /// Runs `f` on every world in parallel (each world on one thread), then refreshes poses.
    fn each_world(&mut self, f: impl Fn(&mut MjData<Arc<MjModel>>) + Sync) {
        self.each_world_then(f, Vec::<()>::new(), |_, _, _| {});
    }

    /// [`WorldBatch::each_world`], then `after(item, geom_xpos, geom_xmat)` with world `w`'s
    /// item of `per_world` and its fresh geom poses, on the same thread (worlds past the
    /// items get none).
    fn each_world_then<T: Send>(
        &mut self,
        f: impl Fn(&mut MjData<Arc<MjModel>>) + Sync,
        per_world: Vec<T>,
        after: impl Fn(T, &[DVec3], &[DMat3]) + Sync,
    ) {
        let nworld = self.data.len();
        let p = &mut self.poses;
        let parts = rows(&mut p.geom_xpos, nworld)
            .into_iter()
            .zip(rows(&mut p.geom_xmat, nworld))
            .zip(rows(&mut p.xpos, nworld))
            .zip(rows(&mut p.xmat, nworld))
            .zip(rows(&mut p.cam_xpos, nworld))
            .zip(rows(&mut p.cam_xmat, nworld))
            .zip(rows(&mut p.light_xpos, nworld))
            .zip(rows(&mut p.light_xdir, nworld))
            .zip(rows(&mut p.site_xpos, nworld))
            .zip(rows(&mut p.site_xmat, nworld))
            .zip(p.tendon_segments.iter_mut())
            .map(|((((((((((gp, gm), bp), bm), cp), cm), lp), ld), sp), sm), ts)| WorldPoses {
                geom_xpos: gp,
                geom_xmat: gm,
                xpos: bp,
                xmat: bm,
                cam_xpos: cp,
                cam_xmat: cm,
                light_xpos: lp,
                light_xdir: ld,
                site_xpos: sp,
                site_xmat: sm,
                tendon_segments: ts,
            })
            .collect::<Vec<_>>();
        let mut items: Vec<Option<T>> = per_world.into_iter().map(Some).collect();
        items.resize_with(nworld, || None);
        self.data.par_iter_mut().zip(parts).zip(items).for_each(|((d, mut out), item)| {
            f(d);
            refresh(d, &mut out);
            if let Some(item) = item {
                after(item, out.geom_xpos, out.geom_xmat);
            }
        });
    }

    /// Advances every world by `nstep` physics steps, in parallel.
    pub fn step(&mut self, nstep: usize) {
        self.step_then(nstep, Vec::<()>::new(), |_, _, _| {});
    }

    /// [`WorldBatch::step`], then `after(item, geom_xpos, geom_xmat)` on the same thread with
    /// world `w`'s item of `per_world` and its new geom poses: per-world work that follows
    /// the physics (refitting the world's ray-casting tree) in the same parallel pass.
    pub fn step_then<T: Send>(
        &mut self,
        nstep: usize,
        per_world: Vec<T>,
        after: impl Fn(T, &[DVec3], &[DMat3]) + Sync,
    ) {
        self.each_world_then(
            |d| {
                for _ in 0..nstep {
                    d.step();
                }
            },
            per_world,
            after,
        );
    }

    /// Recomputes kinematics (and everything `mj_forward` computes) without advancing time.
    pub fn forward(&mut self) {
        self.each_world(|d| d.forward());
    }

    /// Resets every world to the model's initial state.
    pub fn reset(&mut self) {
        self.each_world(|d| {
            d.reset();
            d.forward();
        });
    }

    /// Resets world `w` alone to the model's initial state; the other worlds are untouched.
    pub fn reset_world(&mut self, w: usize) -> Result<(), MujocoError> {
        self.poses.check_world(w)?;
        let d = &mut self.data[w];
        d.reset();
        d.forward();
        self.refresh_world(w);
        Ok(())
    }

    /// Copies world `w`'s frames into its rows of the poses; the others keep theirs (and their
    /// refitted BVHs).
    pub(crate) fn refresh_world(&mut self, w: usize) {
        let nworld = self.data.len();
        let p = &mut self.poses;
        let mut out = WorldPoses {
            geom_xpos: row_of(&mut p.geom_xpos, w, nworld),
            geom_xmat: row_of(&mut p.geom_xmat, w, nworld),
            xpos: row_of(&mut p.xpos, w, nworld),
            xmat: row_of(&mut p.xmat, w, nworld),
            cam_xpos: row_of(&mut p.cam_xpos, w, nworld),
            cam_xmat: row_of(&mut p.cam_xmat, w, nworld),
            light_xpos: row_of(&mut p.light_xpos, w, nworld),
            light_xdir: row_of(&mut p.light_xdir, w, nworld),
            site_xpos: row_of(&mut p.site_xpos, w, nworld),
            site_xmat: row_of(&mut p.site_xmat, w, nworld),
            tendon_segments: &mut p.tendon_segments[w],
        };
        refresh(&self.data[w], &mut out);
    }

    /// Sets the generalized position of world `w` (length `nq`) and recomputes its poses; the
    /// other worlds are untouched.
    pub fn set_qpos(&mut self, w: usize, qpos: &[f64]) -> Result<(), MujocoError> {
        let nq = self.model.mj().ffi().nq as usize;
        if qpos.len() != nq {
            return Err(glint_core::CoreError::Shape {
                field: "qpos",
                len: qpos.len(),
                expected: format!("the model has nq = {nq}"),
            }
            .into());
        }
        self.poses.check_world(w)?;
        if let Some(i) = qpos.iter().position(|q| !q.is_finite()) {
            return Err(glint_core::CoreError::Shape {
                field: "qpos",
                len: qpos.len(),
                expected: format!("every value must be finite, and qpos[{i}] is {}", qpos[i]),
            }
            .into());
        }
        let d = &mut self.data[w];
        // SAFETY: qpos is an mjData array of nq doubles.
        unsafe { std::slice::from_raw_parts_mut(d.ffi_mut().qpos, nq) }.copy_from_slice(qpos);
        d.forward();
        self.refresh_world(w);
        Ok(())
    }

    /// Whether MuJoCo found world `w` unstable (NaN, infinite or huge accelerations, positions
    /// or velocities) since its last reset; MuJoCo resets such a world's state when it happens.
    pub fn unstable(&self, w: usize) -> bool {
        let warnings = &self.data[w].ffi().warning;
        [mjtWarning::mjWARN_BADQPOS, mjtWarning::mjWARN_BADQVEL, mjtWarning::mjWARN_BADQACC]
            .iter()
            .any(|&k| warnings[k as usize].number > 0)
    }

    /// Sets the controls of world `w` (length `nu`, MuJoCo's `ctrl`), used by the next steps.
    /// MuJoCo clamps limited controls to their range.
    pub fn set_ctrl(&mut self, w: usize, ctrl: &[f64]) -> Result<(), MujocoError> {
        let nu = self.model.nu();
        if ctrl.len() != nu {
            return Err(glint_core::CoreError::Shape {
                field: "ctrl",
                len: ctrl.len(),
                expected: format!("the model has nu = {nu} actuators"),
            }
            .into());
        }
        self.poses.check_world(w)?;
        if let Some(i) = ctrl.iter().position(|c| !c.is_finite()) {
            return Err(glint_core::CoreError::Shape {
                field: "ctrl",
                len: ctrl.len(),
                expected: format!("every value must be finite, and ctrl[{i}] is {}", ctrl[i]),
            }
            .into());
        }
        if nu > 0 {
            // SAFETY: ctrl is an mjData array of nu doubles.
            unsafe { std::slice::from_raw_parts_mut(self.data[w].ffi_mut().ctrl, nu) }.copy_from_slice(ctrl);
        }
        Ok(())
    }

    /// Number of generalized coordinates.
    pub fn nq(&self) -> usize {
        self.model.mj().ffi().nq as usize
    }

    /// Generalized positions of world `w`.
    pub fn qpos(&self, w: usize) -> &[f64] {
        let d = self.data[w].ffi();
        // SAFETY: qpos is an mjData array of nq doubles, alive as long as `self`.
        unsafe { std::slice::from_raw_parts(d.qpos, self.nq()) }
    }

    /// Number of degrees of freedom (MuJoCo's `nv`).
    pub fn nv(&self) -> usize {
        self.model.mj().ffi().nv as usize
    }

    /// Generalized velocities of world `w` (MuJoCo's `qvel`, length `nv`).
    pub fn qvel(&self, w: usize) -> &[f64] {
        let (d, nv) = (self.data[w].ffi(), self.nv());
        if nv == 0 {
            return &[];
        }
        // SAFETY: qvel is an mjData array of nv doubles, alive as long as `self`.
        unsafe { std::slice::from_raw_parts(d.qvel, nv) }
    }

    /// The geom pairs in contact in world `w` after the last step (MuJoCo's `contact[i].geom`,
    /// contacts excluded by the solver left out), into `out`.
    pub fn contacts_into(&self, w: usize, out: &mut Vec<[i32; 2]>) {
        out.clear();
        let d = self.data[w].ffi();
        let ncon = d.ncon.max(0) as usize;
        if ncon == 0 || d.contact.is_null() {
            return;
        }
        // SAFETY: contact is an mjData array of at least ncon contacts, alive as long as `self`.
        let contacts = unsafe { std::slice::from_raw_parts(d.contact, ncon) };
        out.extend(contacts.iter().filter(|c| c.exclude == 0).map(|c| c.geom));
    }

    /// The controls of world `w` as last set (MuJoCo's `ctrl`, length `nu`).
    pub fn ctrl(&self, w: usize) -> &[f64] {
        let (d, nu) = (self.data[w].ffi(), self.model.nu());
        if nu == 0 {
            return &[];
        }
        // SAFETY: ctrl is an mjData array of nu doubles, alive as long as `self`.
        unsafe { std::slice::from_raw_parts(d.ctrl, nu) }
    }
}
