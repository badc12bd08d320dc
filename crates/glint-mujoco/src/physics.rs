//! Per-world physics fields: a world whose `body_mass`, `dof_damping`, `geom_friction`,
//! `geom_size`, `geom_pos` or `geom_dataid` differ from its model's (the model, or the
//! variant it was put on) steps on its own copy of that `mjModel`, made once per distinct set
//! of values and shared by every world that has it, with MuJoCo's dependent constants
//! (`mj_setConst`: subtree masses, inverse weights, ...) recomputed for it.

use std::sync::Arc;

use glam::DVec3;
use glint_core::{GeomType, Scene};
use mujoco_rs::mujoco_c::{mj_forward, mj_setConst};
use mujoco_rs::prelude::{MjData, MjModel};

use crate::{MujocoError, VariantModel, WorldBatch};

/// One world's physics fields: a value per body, per degree of freedom and per geom.
#[derive(Clone, Debug, PartialEq)]
pub struct PhysicsFields {
    /// Mass of each body (`nbody`), kilograms.
    pub body_mass: Vec<f64>,
    /// Linear damping of each degree of freedom (`nv`).
    pub dof_damping: Vec<f64>,
    /// Sliding, torsional and rolling friction of each geom (`ngeom`, 3 each).
    pub geom_friction: Vec<f64>,
    /// Size parameters of each geom (`ngeom`, 3 each), MuJoCo's meaning per type.
    pub geom_size: Vec<f64>,
    /// Position of each geom in its body's frame (`ngeom`, 3 each).
    pub geom_pos: Vec<f64>,
    /// Mesh or height field of each geom (`ngeom`; `-1` for primitives and empty slots).
    pub geom_dataid: Vec<i32>,
}

/// `n` values at `ptr` (MuJoCo's arrays of a live model or data).
fn read<T: Copy>(ptr: *const T, n: usize) -> Vec<T> {
    if n == 0 || ptr.is_null() {
        return Vec::new();
    }
    // SAFETY: callers pass an array MuJoCo allocated with at least `n` values.
    unsafe { std::slice::from_raw_parts(ptr, n) }.to_vec()
}

/// Writes `values` to `ptr` (an array of MuJoCo's with room for them).
fn write<T: Copy>(ptr: *mut T, values: &[T]) {
    if values.is_empty() || ptr.is_null() {
        return;
    }
    // SAFETY: callers pass an array MuJoCo allocated with `values.len()` values, which
    // nothing else reads or writes meanwhile.
    unsafe { std::slice::from_raw_parts_mut(ptr, values.len()) }.copy_from_slice(values);
}

/// The model array `name` of `mj`, flattened, for the arrays a world's fields can be read
/// from: the physics fields and the ones MuJoCo derives when it compiles (`geom_aabb` as
/// centre and half sizes, `geom_rbound`, `body_subtreemass`, `body_inertia`,
/// `body_invweight0`, `body_ipos`, `body_iquat`). `None` for another name.
pub fn model_array(mj: &MjModel, name: &str) -> Option<Vec<f64>> {
    let m = mj.ffi();
    let (ngeom, nbody, nv) = (m.ngeom as usize, m.nbody as usize, m.nv as usize);
    Some(match name {
        "body_mass" => read(m.body_mass, nbody),
        "dof_damping" => read(m.dof_damping, nv),
        "geom_friction" => read(m.geom_friction, 3 * ngeom),
        "geom_size" => read(m.geom_size, 3 * ngeom),
        "geom_pos" => read(m.geom_pos, 3 * ngeom),
        "geom_dataid" => read(m.geom_dataid, ngeom).into_iter().map(f64::from).collect(),
        "geom_aabb" => read(m.geom_aabb, 6 * ngeom),
        "geom_rbound" => read(m.geom_rbound, ngeom),
        "body_subtreemass" => read(m.body_subtreemass, nbody),
        "body_inertia" => read(m.body_inertia, 3 * nbody),
        "body_invweight0" => read(m.body_invweight0, 2 * nbody),
        "body_ipos" => read(m.body_ipos, 3 * nbody),
        "body_iquat" => read(m.body_iquat, 4 * nbody),
        _ => return None,
    })
}

impl PhysicsFields {
    /// The values `mj` holds.
    pub fn of(mj: &MjModel) -> PhysicsFields {
        let m = mj.ffi();
        let ngeom = m.ngeom as usize;
        PhysicsFields {
            body_mass: read(m.body_mass, m.nbody as usize),
            dof_damping: read(m.dof_damping, m.nv as usize),
            geom_friction: read(m.geom_friction, 3 * ngeom),
            geom_size: read(m.geom_size, 3 * ngeom),
            geom_pos: read(m.geom_pos, 3 * ngeom),
            geom_dataid: read(m.geom_dataid, ngeom),
        }
    }

    fn same_shape(&self, other: &PhysicsFields) -> bool {
        self.body_mass.len() == other.body_mass.len()
            && self.dof_damping.len() == other.dof_damping.len()
            && self.geom_friction.len() == other.geom_friction.len()
            && self.geom_size.len() == other.geom_size.len()
            && self.geom_pos.len() == other.geom_pos.len()
            && self.geom_dataid.len() == other.geom_dataid.len()
    }
}

/// A model copy with other physics fields than its base (the model or a variant), and the
/// values it was made with.
pub(crate) struct Variant {
    base: Arc<MjModel>,
    fields: PhysicsFields,
    mj: Arc<MjModel>,
}

impl WorldBatch {
    /// The physics fields world `w` steps with.
    pub fn physics(&self, w: usize) -> Result<PhysicsFields, MujocoError> {
        self.poses().check_world(w)?;
        Ok(PhysicsFields::of(self.data[w].model()))
    }

    /// The model array `name` world `w` steps with (see [`model_array`]), or `None` for a
    /// name that is not one.
    pub fn model_array(&self, w: usize, name: &str) -> Result<Option<Vec<f64>>, MujocoError> {
        self.poses().check_world(w)?;
        Ok(model_array(self.data[w].model(), name))
    }

    /// How many model copies the worlds step on besides the model and its variants.
    pub fn model_variants(&self) -> usize {
        self.variants.len()
    }

    /// Puts world `w` on the compiled variant `variant` (its physics fields become the
    /// variant's; the world's state carries over and its kinematics are recomputed).
    pub fn set_variant(&mut self, w: usize, variant: &VariantModel) -> Result<(), MujocoError> {
        self.poses().check_world(w)?;
        self.bases[w] = variant.mj.clone();
        self.move_world(w, variant.mj.clone());
        Ok(())
    }

    /// Makes world `w` step with `fields`: on its base (the model, or the variant it was put
    /// on) when they are its values, else on the copy of that base holding them (made now if
    /// no world has them yet). The world's state (time, positions, velocities, activations,
    /// controls, warm start) carries over, and its kinematics are recomputed.
    pub fn set_physics(&mut self, w: usize, fields: &PhysicsFields) -> Result<(), MujocoError> {
        self.poses().check_world(w)?;
        let base = self.bases[w].clone();
        let base_values = PhysicsFields::of(&base);
        if !fields.same_shape(&base_values) {
            return Err(MujocoError::Physics(format!(
                "physics fields need {} body masses, {} dof dampings, and {} geom frictions, sizes, positions and data ids",
                base_values.body_mass.len(),
                base_values.dof_damping.len(),
                base_values.geom_dataid.len()
            )));
        }
        let mj = if *fields == base_values {
            base
        } else if let Some(v) = self.variants.iter().find(|v| Arc::ptr_eq(&v.base, &base) && v.fields == *fields) {
            v.mj.clone()
        } else {
            let mj = Arc::new(variant(&base, &base_values, fields, self.model().scene()));
            self.variants.push(Variant { base, fields: fields.clone(), mj: mj.clone() });
            mj
        };
        self.move_world(w, mj);
        Ok(())
    }

    /// Moves world `w` onto model `mj` (a copy of the model's structure), keeping its state.
    fn move_world(&mut self, w: usize, mj: Arc<MjModel>) {
        if std::ptr::eq(self.data[w].model(), &*mj) {
            return;
        }
        let mut data = MjData::new(mj);
        copy_state(&self.data[w], &mut data);
        // SAFETY: model and data belong together and are valid; MuJoCo reads the model and
        // writes the data.
        unsafe { mj_forward(data.model().ffi(), data.ffi_mut()) };
        self.data[w] = data;
        self.refresh_world(w);
    }
}

/// A copy of `base` (whose values are `base_values`) with `fields`, its dependent
/// constants recomputed: MuJoCo's (`mj_setConst`: subtree masses, inverse weights, ...) and
/// the bounds of each geom whose size or mesh changed (`geom_aabb`, `geom_rbound`), from
/// `scene`'s meshes and height fields.
fn variant(base: &MjModel, base_values: &PhysicsFields, fields: &PhysicsFields, scene: &Scene) -> MjModel {
    let mut mj = base.clone();
    // SAFETY: `mj` is this function's own copy; nothing else refers to it.
    let m = unsafe { mj.ffi_mut() };
    write(m.body_mass, &fields.body_mass);
    write(m.dof_damping, &fields.dof_damping);
    write(m.geom_friction, &fields.geom_friction);
    write(m.geom_size, &fields.geom_size);
    write(m.geom_pos, &fields.geom_pos);
    write(m.geom_dataid, &fields.geom_dataid);
    let ngeom = fields.geom_dataid.len();
    let (mut aabb, mut rbound) = (read(m.geom_aabb, 6 * ngeom), read(m.geom_rbound, ngeom));
    let kinds = read(m.geom_type, ngeom);
    for g in 0..ngeom {
        let size = &fields.geom_size[3 * g..3 * g + 3];
        let unchanged =
            size == &base_values.geom_size[3 * g..3 * g + 3] && fields.geom_dataid[g] == base_values.geom_dataid[g];
        let Some(kind) = GeomType::from_mujoco(kinds[g]).filter(|_| !unchanged) else { continue };
        let (dataid, size) = (fields.geom_dataid[g], DVec3::from_slice(size));
        if let Some((center, half, radius)) = geom_bounds(scene, kind, size, dataid) {
            aabb[6 * g..6 * g + 6].copy_from_slice(&[center.x, center.y, center.z, half.x, half.y, half.z]);
            rbound[g] = radius;
        }
    }
    write(m.geom_aabb, &aabb);
    write(m.geom_rbound, &rbound);
    let model_ptr: *mut mujoco_rs::mujoco_c::mjModel = m;
    let mut scratch = MjData::new(&mj);
    // SAFETY: `scratch` is data made from this model; mj_setConst writes the model's derived
    // constants using the data as workspace, and nothing else uses either meanwhile.
    unsafe { mj_setConst(model_ptr, scratch.ffi_mut()) };
    drop(scratch);
    mj
}

/// A geom's bounding box (centre, half sizes) in its frame and bounding radius, as MuJoCo's
/// compiler sets them (`None` for a plane, and for an empty mesh or height-field slot).
fn geom_bounds(scene: &Scene, kind: GeomType, s: DVec3, dataid: i32) -> Option<(DVec3, DVec3, f64)> {
    let primitive = |half: DVec3, radius: f64| Some((DVec3::ZERO, half, radius));
    let of_box = |b: glint_core::Aabb| {
        let (center, half) = (b.center(), 0.5 * (b.max - b.min));
        Some((center, half, b.min.abs().max(b.max.abs()).length()))
    };
    match kind {
        GeomType::Sphere => primitive(DVec3::splat(s.x), s.x),
        GeomType::Capsule => primitive(DVec3::new(s.x, s.x, s.x + s.y), s.x + s.y),
        GeomType::Cylinder => primitive(DVec3::new(s.x, s.x, s.y), s.x.hypot(s.y)),
        GeomType::Ellipsoid => primitive(s, s.max_element()),
        GeomType::Box => primitive(s, s.length()),
        GeomType::Mesh => scene.mesh.get(usize::try_from(dataid).ok()?).and_then(|m| of_box(m.bounds())),
        GeomType::Hfield => scene.hfield.get(usize::try_from(dataid).ok()?).and_then(|h| of_box(h.bounds())),
        _ => None,
    }
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
