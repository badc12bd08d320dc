//! Per-world physics fields: a world whose `body_mass`, `dof_damping` or `geom_friction`
//! differ from the model's steps on its own copy of the `mjModel`, made once per distinct set
//! of values and shared by every world that has it, with MuJoCo's dependent constants
//! (`mj_setConst`: subtree masses, inverse weights, ...) recomputed for it.

use std::sync::Arc;

use mujoco_rs::mujoco_c::{mj_forward, mj_setConst};
use mujoco_rs::prelude::{MjData, MjModel};

use crate::{MujocoError, WorldBatch};

/// One world's physics fields: a value per body, per degree of freedom and per geom.
#[derive(Clone, Debug, PartialEq)]
pub struct PhysicsFields {
    /// Mass of each body (`nbody`), kilograms.
    pub body_mass: Vec<f64>,
    /// Linear damping of each degree of freedom (`nv`).
    pub dof_damping: Vec<f64>,
    /// Sliding, torsional and rolling friction of each geom (`ngeom`, 3 each).
    pub geom_friction: Vec<f64>,
}

/// `n` values at `ptr` (MuJoCo's arrays of a live model or data).
fn read(ptr: *const f64, n: usize) -> Vec<f64> {
    if n == 0 || ptr.is_null() {
        return Vec::new();
    }
    // SAFETY: callers pass an array MuJoCo allocated with at least `n` values.
    unsafe { std::slice::from_raw_parts(ptr, n) }.to_vec()
}

/// Writes `values` to `ptr` (an array of MuJoCo's with room for them).
fn write(ptr: *mut f64, values: &[f64]) {
    if values.is_empty() || ptr.is_null() {
        return;
    }
    // SAFETY: callers pass an array MuJoCo allocated with `values.len()` values, which
    // nothing else reads or writes meanwhile.
    unsafe { std::slice::from_raw_parts_mut(ptr, values.len()) }.copy_from_slice(values);
}

impl PhysicsFields {
    /// The values `mj` holds.
    pub fn of(mj: &MjModel) -> PhysicsFields {
        let m = mj.ffi();
        PhysicsFields {
            body_mass: read(m.body_mass, m.nbody as usize),
            dof_damping: read(m.dof_damping, m.nv as usize),
            geom_friction: read(m.geom_friction, 3 * m.ngeom as usize),
        }
    }

    fn same_shape(&self, other: &PhysicsFields) -> bool {
        self.body_mass.len() == other.body_mass.len()
            && self.dof_damping.len() == other.dof_damping.len()
            && self.geom_friction.len() == other.geom_friction.len()
    }
}

/// A model variant and the values it was made with.
pub(crate) struct Variant {
    fields: PhysicsFields,
    mj: Arc<MjModel>,
}

impl WorldBatch {
    /// The physics fields world `w` steps with.
    pub fn physics(&self, w: usize) -> Result<PhysicsFields, MujocoError> {
        self.poses().check_world(w)?;
        Ok(PhysicsFields::of(self.data[w].model()))
    }

    /// How many model copies the worlds step on besides the model itself.
    pub fn model_variants(&self) -> usize {
        self.variants.len()
    }

    /// Makes world `w` step with `fields`: on the model itself when they are its values, else
    /// on the model copy holding them (made now if no world has them yet). The world's state
    /// (time, positions, velocities, activations, controls, warm start) carries over, and its
    /// kinematics are recomputed.
    pub fn set_physics(&mut self, w: usize, fields: &PhysicsFields) -> Result<(), MujocoError> {
        self.poses().check_world(w)?;
        let base = self.model().mj().clone();
        let model_values = PhysicsFields::of(&base);
        if !fields.same_shape(&model_values) {
            return Err(MujocoError::Physics(format!(
                "physics fields need {} body masses, {} dof dampings and {} geom frictions",
                model_values.body_mass.len(),
                model_values.dof_damping.len(),
                model_values.geom_friction.len()
            )));
        }
        let mj = if *fields == model_values {
            base
        } else if let Some(v) = self.variants.iter().find(|v| v.fields == *fields) {
            v.mj.clone()
        } else {
            let mj = Arc::new(variant(&base, fields));
            self.variants.push(Variant { fields: fields.clone(), mj: mj.clone() });
            mj
        };
        if std::ptr::eq(self.data[w].model(), &*mj) {
            return Ok(());
        }
        let mut data = MjData::new(mj);
        copy_state(&self.data[w], &mut data);
        // SAFETY: model and data belong together and are valid; MuJoCo reads the model and
        // writes the data.
        unsafe { mj_forward(data.model().ffi(), data.ffi_mut()) };
        self.data[w] = data;
        self.refresh_world(w);
        Ok(())
    }
}

/// A copy of `base` with `fields`, its dependent constants recomputed.
fn variant(base: &MjModel, fields: &PhysicsFields) -> MjModel {
    let mut mj = base.clone();
    // SAFETY: `mj` is this function's own copy; nothing else refers to it.
    let m = unsafe { mj.ffi_mut() };
    write(m.body_mass, &fields.body_mass);
    write(m.dof_damping, &fields.dof_damping);
    write(m.geom_friction, &fields.geom_friction);
    let model_ptr: *mut mujoco_rs::mujoco_c::mjModel = m;
    let mut scratch = MjData::new(&mj);
    // SAFETY: `scratch` is data made from this model; mj_setConst writes the model's derived
    // constants using the data as workspace, and nothing else uses either meanwhile.
    unsafe { mj_setConst(model_ptr, scratch.ffi_mut()) };
    drop(scratch);
    mj
}

/// Copies the simulation state of `from` into `to` (one model and its copy: same sizes).
fn copy_state(from: &MjData<Arc<MjModel>>, to: &mut MjData<Arc<MjModel>>) {
    let (m, f) = (from.model().ffi(), from.ffi());
    let (nq, nv, na, nu) = (m.nq as usize, m.nv as usize, m.na as usize, m.nu as usize);
    // SAFETY: `to` is data of a copy of `from`'s model, so every array has the same size.
    let t = unsafe { to.ffi_mut() };
    write(t.qpos, &read(f.qpos, nq));
    write(t.qvel, &read(f.qvel, nv));
    write(t.act, &read(f.act, na));
    write(t.ctrl, &read(f.ctrl, nu));
    write(t.qacc_warmstart, &read(f.qacc_warmstart, nv));
    t.time = f.time;
}
