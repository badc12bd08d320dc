//! Per-world model fields, as MuJoCo Warp batches them: a field holds `rows` rows of one value
//! per geom, material or light, and world `w` reads row `w % rows`. The model's own values
//! are one row. Every reader goes through [`Fields::row`], the one place the rule is
//! written; the renderer reads materials through [`WorldFields`] and lights through
//! [`Simulation::light`].

use std::sync::Arc;

use glam::DVec3;
use glint_camera::WorldFields;
use glint_core::{Poses, Scene, Shapes};
use glint_mujoco::PhysicsFields;

use crate::{SimError, Simulation};

/// What a field has one value per.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldOf {
    /// Per geom (`ngeom`).
    Geom,
    /// Per material (`nmat`).
    Material,
    /// Per light (`nlight`).
    Light,
    /// Per camera (`ncam`).
    Camera,
    /// Per body (`nbody`).
    Body,
    /// Per degree of freedom (`nv`).
    Dof,
}

/// The per-world fields, by MuJoCo Warp's names: what each has a value per, and how many
/// numbers each value takes.
pub const FIELDS: [(&str, FieldOf, usize); 18] = [
    ("geom_rgba", FieldOf::Geom, 4),
    ("geom_matid", FieldOf::Geom, 1),
    ("mat_rgba", FieldOf::Material, 4),
    ("mat_texid", FieldOf::Material, 1),
    ("mat_texrepeat", FieldOf::Material, 2),
    ("light_active", FieldOf::Light, 1),
    ("light_type", FieldOf::Light, 1),
    ("light_castshadow", FieldOf::Light, 1),
    ("light_pos", FieldOf::Light, 3),
    ("light_dir", FieldOf::Light, 3),
    ("light_diffuse", FieldOf::Light, 3),
    ("cam_fovy", FieldOf::Camera, 1),
    ("body_mass", FieldOf::Body, 1),
    ("dof_damping", FieldOf::Dof, 1),
    ("geom_friction", FieldOf::Geom, 3),
    ("geom_size", FieldOf::Geom, 3),
    ("geom_pos", FieldOf::Geom, 3),
    ("geom_dataid", FieldOf::Geom, 1),
];

/// The fields physics reads: a world whose values differ steps on its own model copy.
pub const PHYSICS_FIELDS: [&str; 6] =
    ["body_mass", "dof_damping", "geom_friction", "geom_size", "geom_pos", "geom_dataid"];

/// The fields that decide what rays meet in a world (shapes, and visibility through alpha).
pub const GEOMETRY_FIELDS: [&str; 5] = ["geom_size", "geom_dataid", "geom_rgba", "geom_matid", "mat_rgba"];

/// The fields MuJoCo derives from the others when a model compiles (or `mj_setConst` runs):
/// readable per world, each read from the model the world steps on, never set.
pub const DERIVED_FIELDS: [(&str, FieldOf, usize); 7] = [
    ("geom_aabb", FieldOf::Geom, 6),
    ("geom_rbound", FieldOf::Geom, 1),
    ("body_subtreemass", FieldOf::Body, 1),
    ("body_inertia", FieldOf::Body, 3),
    ("body_invweight0", FieldOf::Body, 2),
    ("body_ipos", FieldOf::Body, 3),
    ("body_iquat", FieldOf::Body, 4),
];

// Positions in FIELDS.
const GEOM_RGBA: usize = 0;
const GEOM_MATID: usize = 1;
const MAT_RGBA: usize = 2;
const MAT_TEXID: usize = 3;
const MAT_TEXREPEAT: usize = 4;
const LIGHT_ACTIVE: usize = 5;
const LIGHT_TYPE: usize = 6;
const LIGHT_CASTSHADOW: usize = 7;
const LIGHT_POS: usize = 8;
const LIGHT_DIR: usize = 9;
const LIGHT_DIFFUSE: usize = 10;
const CAM_FOVY: usize = 11;
const BODY_MASS: usize = 12;
const DOF_DAMPING: usize = 13;
const GEOM_FRICTION: usize = 14;
const GEOM_SIZE: usize = 15;
const GEOM_POS: usize = 16;
const GEOM_DATAID: usize = 17;

/// One field's rows: `values.len() == rows × count × width`.
#[derive(Clone, Debug, PartialEq)]
struct Rows {
    rows: usize,
    values: Vec<f64>,
}

/// Every per-world field.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Fields {
    /// Geoms, materials, lights and textures in the model.
    ngeom: usize,
    nmat: usize,
    nlight: usize,
    ncam: usize,
    nbody: usize,
    nv: usize,
    ntex: usize,
    /// Per camera, whether it is orthographic (its `cam_fovy` is a height in metres).
    cam_orthographic: Vec<bool>,
    rows: Vec<Rows>,
    /// Whether `light_pos` / `light_dir` were set (otherwise MuJoCo's own frames are used,
    /// which follow the lights' tracking modes).
    moved: bool,
}

/// A light of one world, as the renderer sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LightState {
    /// Whether it is on.
    pub active: bool,
    /// MuJoCo's `mjtLightType`: 0 spot, 1 directional, 2 point, 3 image.
    pub light_type: i32,
    /// Whether it casts shadows.
    pub castshadow: bool,
    /// Position in the world frame.
    pub xpos: DVec3,
    /// Unit direction in the world frame.
    pub xdir: DVec3,
    /// Diffuse colour.
    pub diffuse: [f32; 3],
}

fn flag(b: &bool) -> f64 {
    f64::from(u8::from(*b))
}

impl Fields {
    /// The model's values as the one row of every field.
    pub(crate) fn new(scene: &Scene, physics: &PhysicsFields) -> Fields {
        let f32s = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
        let values: [Vec<f64>; 18] = [
            scene.geom_rgba.iter().flat_map(|c| f32s(c)).collect(),
            scene.geom_matid.iter().map(|&m| f64::from(m)).collect(),
            scene.mat_rgba.iter().flat_map(|c| f32s(c)).collect(),
            scene.mat_texid.iter().map(|&t| f64::from(t)).collect(),
            scene.mat_texrepeat.iter().flat_map(|r| f32s(r)).collect(),
            scene.light_active.iter().map(flag).collect(),
            scene.light_type.iter().map(|&t| f64::from(t)).collect(),
            scene.light_castshadow.iter().map(flag).collect(),
            scene.light_pos.iter().flat_map(|p| p.to_array()).collect(),
            scene.light_dir.iter().flat_map(|d| d.to_array()).collect(),
            scene.light_diffuse.iter().flat_map(|d| f32s(d)).collect(),
            scene.cam_fovy.clone(),
            physics.body_mass.clone(),
            physics.dof_damping.clone(),
            physics.geom_friction.clone(),
            physics.geom_size.clone(),
            physics.geom_pos.clone(),
            physics.geom_dataid.iter().map(|&d| f64::from(d)).collect(),
        ];
        Fields {
            ngeom: scene.ngeom(),
            nmat: scene.mat_rgba.len(),
            nlight: scene.nlight(),
            ncam: scene.ncam(),
            nbody: physics.body_mass.len(),
            nv: physics.dof_damping.len(),
            ntex: scene.tex_type.len(),
            cam_orthographic: scene.cam_projection.iter().map(|&p| p == 1).collect(),
            rows: values.into_iter().map(|values| Rows { rows: 1, values }).collect(),
            moved: false,
        }
    }

    /// One world's fields per entry of `worlds` stacked: a field whose worlds all agree keeps
    /// one row, any other gets one row per world.
    pub(crate) fn stack(worlds: &[Fields]) -> Fields {
        let mut out = worlds[0].clone();
        for f in 0..FIELDS.len() {
            if worlds.iter().any(|x| x.rows[f] != out.rows[f]) {
                let values = worlds.iter().flat_map(|x| x.row(f, 0).to_vec()).collect();
                out.rows[f] = Rows { rows: worlds.len(), values };
            }
        }
        out
    }

    pub(crate) fn count(&self, of: FieldOf) -> usize {
        match of {
            FieldOf::Geom => self.ngeom,
            FieldOf::Material => self.nmat,
            FieldOf::Light => self.nlight,
            FieldOf::Camera => self.ncam,
            FieldOf::Body => self.nbody,
            FieldOf::Dof => self.nv,
        }
    }

    /// Field `f`'s row that world `w` reads: row `w % rows` (MuJoCo Warp's rule, written
    /// here only).
    #[inline]
    fn row(&self, f: usize, w: usize) -> &[f64] {
        let (_, of, width) = FIELDS[f];
        let len = self.count(of) * width;
        let rows = &self.rows[f];
        &rows.values[(w % rows.rows) * len..][..len]
    }

    /// Field `f`'s value for item `i` in world `w`.
    #[inline]
    fn value<const N: usize>(&self, f: usize, w: usize, i: usize) -> [f64; N] {
        let row = self.row(f, w);
        std::array::from_fn(|k| row[i * N + k])
    }

    /// Field `name`'s position in [`FIELDS`], or an error naming the nearest field.
    pub(crate) fn index(name: &str) -> Result<usize, SimError> {
        if DERIVED_FIELDS.iter().any(|(n, _, _)| *n == name) {
            return Err(SimError::Setting(format!(
                "{name} is derived by MuJoCo from the other fields: set body_mass, geom_size or geom_dataid, or give worlds a variant, and glint recomputes it"
            )));
        }
        FIELDS.iter().position(|(n, _, _)| *n == name).ok_or_else(|| {
            let names: Vec<&str> = FIELDS.iter().chain(&DERIVED_FIELDS).map(|(n, _, _)| *n).collect();
            let hint = glint_core::nearest_name(name, names.iter().copied()).map_or_else(
                || format!("the per-world fields are {}", names.join(", ")),
                |n| format!("did you mean `{n}`?"),
            );
            SimError::Setting(format!("`{name}` is not a per-world field: {hint}"))
        })
    }

    /// Replaces field `name` with `values` of shape `(rows, count)` for scalar fields or
    /// `(rows, count, width)`, any `rows` of 1 or more.
    pub(crate) fn set(&mut self, name: &str, values: &[f64], shape: &[usize]) -> Result<(), SimError> {
        let f = Self::index(name)?;
        let (_, of, width) = FIELDS[f];
        let count = self.count(of);
        let allowed = if width == 1 {
            format!("(rows, {count}) with rows >= 1")
        } else {
            format!("(rows, {count}, {width}) with rows >= 1")
        };
        let fits = shape.len() == if width == 1 { 2 } else { 3 }
            && shape[0] >= 1
            && shape[1] == count
            && (width == 1 || shape[2] == width)
            && shape.iter().product::<usize>() == values.len();
        if !fits {
            return Err(SimError::Setting(format!(
                "{name} has shape {shape:?} ({} values); it takes {allowed}: world w reads row w % rows",
                values.len()
            )));
        }
        if let Some(bad) = values.iter().find(|v| !v.is_finite()) {
            return Err(SimError::Setting(format!("{name} holds {bad}: every value must be finite")));
        }
        self.check_values(name, values)?;
        self.rows[f] = Rows { rows: shape[0], values: values.to_vec() };
        self.note_moved(f);
        Ok(())
    }

    /// Sets item `item`'s value of field `f` in world `w` of `nworld`, giving the field one row
    /// per world first (each world keeping the row it read).
    pub(crate) fn set_item(&mut self, f: usize, (w, nworld): (usize, usize), item: usize, value: &[f64]) {
        if self.rows[f].rows != nworld {
            let values = (0..nworld).flat_map(|v| self.row(f, v).to_vec()).collect();
            self.rows[f] = Rows { rows: nworld, values };
        }
        let (_, of, width) = FIELDS[f];
        let at = (w * self.count(of) + item) * width;
        self.rows[f].values[at..at + width].copy_from_slice(value);
        self.note_moved(f);
    }

    /// Remembers that a light was moved off MuJoCo's own placement when `f` is `light_pos` or
    /// `light_dir`.
    fn note_moved(&mut self, f: usize) {
        self.moved |= f == LIGHT_POS || f == LIGHT_DIR;
    }

    /// Field `name`'s values and shape.
    pub(crate) fn get(&self, name: &str) -> Result<(Vec<f64>, Vec<usize>), SimError> {
        let f = Self::index(name)?;
        let (_, of, width) = FIELDS[f];
        let rows = &self.rows[f];
        let mut shape = vec![rows.rows, self.count(of)];
        if width > 1 {
            shape.push(width);
        }
        Ok((rows.values.clone(), shape))
    }

    /// An error unless every value suits field `name` (finiteness is checked before).
    pub(crate) fn check_values(&self, name: &str, values: &[f64]) -> Result<(), SimError> {
        let whole_in = |lo: f64, hi: f64| values.iter().copied().find(|&v| !(lo..=hi).contains(&v) || v.fract() != 0.0);
        let problem = match name {
            "light_type" => whole_in(0.0, 3.0).map(|t| {
                format!("light_type holds {t}: use MuJoCo's mjtLightType, 0 spot, 1 directional, 2 point or 3 image")
            }),
            "light_active" | "light_castshadow" => values
                .iter()
                .find(|&&b| b != 0.0 && b != 1.0)
                .map(|b| format!("{name} holds {b}: use 0 (false) or 1 (true)")),
            "light_dir" => values
                .chunks(3)
                .any(|d| DVec3::from_slice(d).length() < 1e-9)
                .then(|| "light_dir holds a zero vector: give every light a direction".to_string()),
            "geom_matid" => whole_in(-1.0, self.nmat as f64 - 1.0).map(|m| {
                format!("geom_matid holds {m}: use -1 (none) or a material id from 0 to {}", self.nmat as i64 - 1)
            }),
            "mat_texid" => whole_in(-1.0, self.ntex as f64 - 1.0).map(|t| {
                format!("mat_texid holds {t}: use -1 (none) or a texture id from 0 to {}", self.ntex as i64 - 1)
            }),
            "cam_fovy" => values.iter().enumerate().find_map(|(k, &f)| {
                let ortho = self.cam_orthographic.get(k % self.ncam.max(1)).copied().unwrap_or(false);
                let ok = f > 0.0 && (ortho || f < 180.0);
                (!ok).then(|| {
                    format!("cam_fovy holds {f}: a perspective camera's fovy runs from 0 to 180 degrees (exclusive), an orthographic one's is a height above 0 metres")
                })
            }),
            "geom_dataid" => whole_in(-1.0, f64::from(i32::MAX)).map(|d| {
                format!("geom_dataid holds {d}: use -1 (no shape) or the id of a mesh or height field")
            }),
            "body_mass" | "dof_damping" | "geom_friction" | "geom_size" => values
                .iter()
                .find(|v| **v < 0.0)
                .map(|v| format!("{name} holds {v}: masses, dampings, frictions and sizes are 0 or more")),
            "geom_rgba" | "mat_rgba" => values
                .iter()
                .find(|v| !(0.0..=1.0).contains(*v))
                .map(|v| format!("{name} holds {v}: colours and alpha run from 0 to 1")),
            _ => None,
        };
        problem.map_or(Ok(()), |message| Err(SimError::Setting(message)))
    }

    /// Light `i` of world `w`: the world's row of each field, placed by the world's poses.
    pub(crate) fn light(&self, scene: &Scene, poses: &Poses, w: usize, i: usize) -> LightState {
        let [active] = self.value::<1>(LIGHT_ACTIVE, w, i);
        let [light_type] = self.value::<1>(LIGHT_TYPE, w, i);
        let [castshadow] = self.value::<1>(LIGHT_CASTSHADOW, w, i);
        let (xpos, xdir) = if self.moved {
            // As MuJoCo places a light of mode "fixed": in its body's frame.
            let b = scene.light_bodyid[i] as usize;
            let (bpos, bmat) = (poses.xpos[w * scene.nbody() + b], poses.xmat[w * scene.nbody() + b]);
            let pos = DVec3::from_array(self.value::<3>(LIGHT_POS, w, i));
            let dir = DVec3::from_array(self.value::<3>(LIGHT_DIR, w, i));
            (bpos + bmat * pos, (bmat * dir).normalize())
        } else {
            (poses.light_xpos[w * self.nlight + i], poses.light_xdir[w * self.nlight + i])
        };
        let diffuse = self.value::<3>(LIGHT_DIFFUSE, w, i).map(|d| d as f32);
        LightState {
            active: active != 0.0,
            light_type: light_type as i32,
            castshadow: castshadow != 0.0,
            xpos,
            xdir,
            diffuse,
        }
    }
}

impl Fields {
    /// World `w`'s physics fields.
    pub(crate) fn physics(&self, w: usize) -> PhysicsFields {
        PhysicsFields {
            body_mass: self.row(BODY_MASS, w).to_vec(),
            dof_damping: self.row(DOF_DAMPING, w).to_vec(),
            geom_friction: self.row(GEOM_FRICTION, w).to_vec(),
            geom_size: self.row(GEOM_SIZE, w).to_vec(),
            geom_pos: self.row(GEOM_POS, w).to_vec(),
            geom_dataid: self.row(GEOM_DATAID, w).iter().map(|&d| d as i32).collect(),
        }
    }

    /// Geom `g`'s alpha in world `w` as `mj_ray` reads it: its material's, or its own.
    pub(crate) fn geom_alpha(&self, w: usize, g: usize) -> f32 {
        match usize::try_from(self.geom_matid(w, g)) {
            Ok(m) if m < self.nmat => self.mat_rgba(w, m)[3],
            _ => self.geom_rgba(w, g)[3],
        }
    }

    /// What rays meet in world `w`: the geom types of `scene` (the world's model or variant),
    /// with the world's sizes and mesh ids, each geom visible unless its alpha in `alpha`
    /// ([`Fields::geom_alpha`] of every geom) is 0. Fails when a mesh or height-field geom's
    /// size is set apart from its data.
    pub(crate) fn shapes(&self, scene: &Scene, w: usize, alpha: &[f32]) -> Result<Shapes, SimError> {
        let size = self.row(GEOM_SIZE, w);
        let dataid = self.row(GEOM_DATAID, w);
        let shapes = Shapes {
            geom_type: scene.geom_type.clone(),
            geom_size: size.chunks_exact(3).map(DVec3::from_slice).collect(),
            geom_dataid: dataid.iter().map(|&d| d as i32).collect(),
            geom_visible: alpha.iter().map(|&a| a != 0.0).collect(),
        };
        for g in 0..self.ngeom {
            if shapes.geom_type[g].has_data() && shapes.geom_size[g] != scene.geom_size[g] {
                return Err(SimError::Setting(format!(
                    "geom_size of {} geom `{}` comes from its {}: swap the {} through a variant, or set geom_dataid",
                    shapes.geom_type[g].name(),
                    scene.geom_name[g],
                    shapes.geom_type[g].name(),
                    shapes.geom_type[g].name()
                )));
            }
        }
        Ok(shapes)
    }
}

impl WorldFields for Fields {
    fn geom_rgba(&self, w: usize, g: usize) -> [f32; 4] {
        self.value::<4>(GEOM_RGBA, w, g).map(|v| v as f32)
    }
    fn geom_matid(&self, w: usize, g: usize) -> i32 {
        self.value::<1>(GEOM_MATID, w, g)[0] as i32
    }
    fn mat_rgba(&self, w: usize, m: usize) -> [f32; 4] {
        self.value::<4>(MAT_RGBA, w, m).map(|v| v as f32)
    }
    fn mat_texid(&self, w: usize, m: usize) -> i32 {
        self.value::<1>(MAT_TEXID, w, m)[0] as i32
    }
    fn mat_texrepeat(&self, w: usize, m: usize) -> [f32; 2] {
        self.value::<2>(MAT_TEXREPEAT, w, m).map(|v| v as f32)
    }
    fn cam_fovy(&self, w: usize, c: usize) -> f64 {
        self.value::<1>(CAM_FOVY, w, c)[0]
    }
}

impl Simulation {
    /// Sets the per-world field `name` (one of [`FIELDS`]) from `values` of shape `shape`,
    /// row-major: `(rows, count)` or `(rows, count, width)` where `count` is the model's
    /// geoms, materials, lights, cameras, bodies or degrees of freedom; world `w` reads row
    /// `w % rows` (MuJoCo Warp's rule). `light_pos` and `light_dir` are in the light's body
    /// frame, as in MJCF. Every sensor sees its world's values: the lidar and the cameras
    /// meet each world's `geom_size` and `geom_dataid` (and skip geoms whose alpha is 0);
    /// the cameras draw the render and light fields; physics reads `body_mass`,
    /// `dof_damping`, `geom_friction`, `geom_size`, `geom_pos` and `geom_dataid` (a world
    /// whose values differ steps on its own model copy, with MuJoCo's dependent constants
    /// and each changed geom's bounds recomputed). On an error nothing changes.
    pub fn set_field(&mut self, name: &str, values: &[f64], shape: &[usize]) -> Result<(), SimError> {
        let before = self.world.fields.clone();
        self.world.fields.set(name, values, shape)?;
        let synced = (0..self.nworld()).try_for_each(|w| self.sync_world_fields(w, &[name]));
        if let Err(e) = synced {
            self.world.fields = before;
            for w in 0..self.nworld() {
                self.sync_world_fields(w, &[name])?;
            }
            return Err(e);
        }
        Ok(())
    }

    /// Brings world `w`'s geometry and physics up to its fields after `changed` changed.
    pub(crate) fn sync_world_fields(&mut self, w: usize, changed: &[&str]) -> Result<(), SimError> {
        if changed.iter().any(|n| GEOMETRY_FIELDS.contains(n)) {
            let alpha: Vec<f32> = (0..self.world.fields.ngeom).map(|g| self.world.fields.geom_alpha(w, g)).collect();
            let shapes = self.world.fields.shapes(self.world_scene(w), w, &alpha)?;
            // The secondary capture's NIR classes and flags follow the world's materials.
            let matid: Vec<i32> = (0..self.world.fields.ngeom).map(|g| self.world.fields.geom_matid(w, g)).collect();
            self.sensors.lidars.lidars_mut().set_world_materials(
                w,
                (&self.scene, &self.setup.table),
                &matid,
                &alpha,
            )?;
            self.rays.set_world_shapes(&self.scene, self.worlds.poses(), w, Arc::new(shapes))?;
        }
        if changed.iter().any(|n| PHYSICS_FIELDS.contains(n)) {
            let fields = self.world.fields.physics(w);
            self.worlds.set_physics(w, &fields)?;
            // Its kinematics were recomputed: geoms may have moved (geom_pos).
            self.rays.refit_world(self.worlds.poses(), w);
        }
        Ok(())
    }

    /// The per-world field `name`'s values (row-major) and shape: one of [`FIELDS`] as set,
    /// or one of [`DERIVED_FIELDS`] with one row per world, read from the model each world
    /// steps on.
    pub fn field(&self, name: &str) -> Result<(Vec<f64>, Vec<usize>), SimError> {
        let Some(&(_, of, width)) = DERIVED_FIELDS.iter().find(|(n, _, _)| *n == name) else {
            return self.world.fields.get(name);
        };
        let mut values = Vec::new();
        for w in 0..self.nworld() {
            values.extend(self.worlds.model_array(w, name)?.unwrap_or_default());
        }
        let mut shape = vec![self.nworld(), self.world.fields.count(of)];
        if width > 1 {
            shape.push(width);
        }
        Ok((values, shape))
    }

    /// Light `light` of world `world`, with that world's fields, in the world frame.
    pub fn light(&self, world: usize, light: usize) -> Result<LightState, SimError> {
        self.world_ok(world)?;
        let nlight = self.scene.nlight();
        if light >= nlight {
            return Err(SimError::Setting(format!("light {light} does not exist (the model has {nlight} lights)")));
        }
        Ok(self.world.fields.light(&self.scene, self.worlds.poses(), world, light))
    }
}
