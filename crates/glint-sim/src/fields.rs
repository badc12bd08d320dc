//! Per-world model fields, as MuJoCo Warp batches them: a field holds `rows` rows of one value
//! per geom, material or light, and world `w` reads row `w % rows`. The model's own values
//! are one row. Every field is one [`FieldSpec`] of [`FIELDS`] (`field_specs.rs`). Every reader
//! goes through [`Fields::range`], the one place the `w % rows` rule is written; the renderer
//! reads materials through [`WorldFields`] and lights through [`Simulation::light`].

use std::ops::Range;
use std::sync::Arc;

use glam::DVec3;
use glint_camera::WorldFields;
use glint_core::{Poses, Scene, Shapes};
use glint_mujoco::PhysicsFields;

#[path = "field_specs.rs"]
pub(crate) mod specs;

use specs::{Bounds, Element, FieldSpec, IdOf, Kept, Values, position};
pub use specs::{DERIVED_FIELDS, FIELDS, FieldOf, GEOMETRY_FIELDS, PHYSICS_FIELDS};

use crate::{SimError, Simulation};

/// The position in [`FIELDS`] of the field named, found when the crate builds.
macro_rules! field {
    ($name:literal) => {
        const { position($name) }
    };
}

/// One field's rows: `values` holds `rows × count × width` numbers.
#[derive(Clone, Debug, PartialEq)]
struct Rows {
    rows: usize,
    values: Values,
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
    /// The rows of each field of [`FIELDS`], in its order.
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

impl Fields {
    /// The model's values as the one row of every field.
    pub(crate) fn new(scene: &Scene, physics: &PhysicsFields) -> Fields {
        let rows = FIELDS
            .iter()
            .map(|spec| {
                let model = spec.model.expect("every field of FIELDS is kept");
                Rows { rows: 1, values: model(scene, physics) }
            })
            .collect();
        Fields {
            ngeom: scene.ngeom(),
            nmat: scene.mat_rgba.len(),
            nlight: scene.nlight(),
            ncam: scene.ncam(),
            nbody: physics.body_mass.len(),
            nv: physics.dof_damping.len(),
            ntex: scene.tex_type.len(),
            cam_orthographic: scene.cam_projection.iter().map(|&p| p == 1).collect(),
            rows,
            moved: false,
        }
    }

    /// One world's fields per entry of `worlds` stacked: a field whose worlds all agree keeps
    /// one row, any other gets one row per world.
    pub(crate) fn stack(worlds: &[Fields]) -> Fields {
        let mut out = worlds[0].clone();
        for f in 0..FIELDS.len() {
            if worlds.iter().any(|x| x.rows[f] != out.rows[f]) {
                let values = out.rows[f].values.concat(worlds.iter().map(|x| x.row(f, 0)));
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

    /// Where field `f`'s row that world `w` reads lies in its values: row `w % rows`
    /// (MuJoCo Warp's rule, written here only).
    #[inline]
    fn range(&self, f: usize, w: usize) -> Range<usize> {
        let len = self.count(FIELDS[f].of) * FIELDS[f].width;
        let start = (w % self.rows[f].rows) * len;
        start..start + len
    }

    /// Field `f`'s row that world `w` reads.
    fn row(&self, f: usize, w: usize) -> Values {
        self.rows[f].values.slice(self.range(f, w))
    }

    /// Field `f`'s row that world `w` reads, as the type it is kept as (its spec's element).
    #[inline]
    fn kept<T: Kept>(&self, f: usize, w: usize) -> &[T] {
        match T::of(&self.rows[f].values) {
            Some(values) => &values[self.range(f, w)],
            None => unreachable!("{} is kept as its element type", FIELDS[f].name),
        }
    }

    /// Real field `f`'s value for item `i` in world `w`.
    #[inline]
    fn value<const N: usize>(&self, f: usize, w: usize, i: usize) -> [f64; N] {
        let row = self.kept::<f64>(f, w);
        std::array::from_fn(|k| row[i * N + k])
    }

    /// Field `name`'s position in [`FIELDS`], or an error naming the nearest field.
    pub(crate) fn index(name: &str) -> Result<usize, SimError> {
        if DERIVED_FIELDS.iter().any(|d| d.name == name) {
            return Err(SimError::Setting(format!(
                "{name} is derived by MuJoCo from the other fields: set body_mass, geom_size or geom_dataid, or give worlds a variant, and glint recomputes it"
            )));
        }
        FIELDS.iter().position(|f| f.name == name).ok_or_else(|| {
            let names: Vec<&str> = FIELDS.iter().chain(&DERIVED_FIELDS).map(|f| f.name).collect();
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
        let FieldSpec { of, width, element, .. } = FIELDS[f];
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
        self.rows[f] = Rows { rows: shape[0], values: Values::from_f64(element, values) };
        self.note_moved(f);
        Ok(())
    }

    /// Sets item `item`'s value of field `f` in world `w` of `nworld` to `value` (which the
    /// field takes), giving the field one row per world first (each world keeping the row it
    /// read).
    pub(crate) fn set_item(&mut self, f: usize, (w, nworld): (usize, usize), item: usize, value: &[f64]) {
        if self.rows[f].rows != nworld {
            let values = self.rows[f].values.concat((0..nworld).map(|v| self.row(f, v)));
            self.rows[f] = Rows { rows: nworld, values };
        }
        let FieldSpec { of, width, .. } = FIELDS[f];
        let at = (w * self.count(of) + item) * width;
        self.rows[f].values.write(at, value);
        self.note_moved(f);
    }

    /// Remembers that a light was moved off MuJoCo's own placement when `f` is `light_pos` or
    /// `light_dir`.
    fn note_moved(&mut self, f: usize) {
        self.moved |= f == field!("light_pos") || f == field!("light_dir");
    }

    /// Field `name`'s values and shape.
    pub(crate) fn get(&self, name: &str) -> Result<(Vec<f64>, Vec<usize>), SimError> {
        let f = Self::index(name)?;
        let FieldSpec { of, width, .. } = FIELDS[f];
        let rows = &self.rows[f];
        let mut shape = vec![rows.rows, self.count(of)];
        if width > 1 {
            shape.push(width);
        }
        Ok((rows.values.to_f64(), shape))
    }

    /// An error unless every value suits field `name` (finiteness is checked before): its
    /// element type's rule, from [`FIELDS`].
    pub(crate) fn check_values(&self, name: &str, values: &[f64]) -> Result<(), SimError> {
        let f = Self::index(name)?;
        let whole_in = |lo: f64, hi: f64| values.iter().copied().find(|&v| !(lo..=hi).contains(&v) || v.fract() != 0.0);
        let problem = match FIELDS[f].element {
            Element::Real(Bounds { lo, hi, words }) => {
                values.iter().find(|v| !(lo..=hi).contains(*v)).map(|v| format!("{name} holds {v}: {words}"))
            }
            Element::Fovy => values.iter().enumerate().find_map(|(k, &f)| {
                let ortho = self.cam_orthographic.get(k % self.ncam.max(1)).copied().unwrap_or(false);
                let ok = f > 0.0 && (ortho || f < 180.0);
                (!ok).then(|| {
                    format!("{name} holds {f}: a perspective camera's fovy runs from 0 to 180 degrees (exclusive), an orthographic one's is a height above 0 metres")
                })
            }),
            Element::Direction => values
                .chunks(3)
                .any(|d| DVec3::from_slice(d).length() < 1e-9)
                .then(|| format!("{name} holds a zero vector: give every light a direction")),
            Element::Id(IdOf::MeshOrHfield) => whole_in(-1.0, f64::from(i32::MAX)).map(|d| {
                format!("{name} holds {d}: use -1 (no shape) or the id of a mesh or height field")
            }),
            Element::Id(of) => {
                let (noun, n) = match of {
                    IdOf::Material => ("material", self.nmat),
                    _ => ("texture", self.ntex),
                };
                whole_in(-1.0, n as f64 - 1.0).map(|m| {
                    format!("{name} holds {m}: use -1 (none) or a {noun} id from 0 to {}", n as i64 - 1)
                })
            }
            Element::LightType => whole_in(0.0, 3.0).map(|t| {
                format!("{name} holds {t}: use MuJoCo's mjtLightType, 0 spot, 1 directional, 2 point or 3 image")
            }),
            Element::Flag => {
                values.iter().find(|&&b| b != 0.0 && b != 1.0).map(|b| format!("{name} holds {b}: use 0 (false) or 1 (true)"))
            }
        };
        problem.map_or(Ok(()), |message| Err(SimError::Setting(message)))
    }

    /// Light `i` of world `w`: the world's row of each field, placed by the world's poses.
    pub(crate) fn light(&self, scene: &Scene, poses: &Poses, w: usize, i: usize) -> LightState {
        let (xpos, xdir) = if self.moved {
            // As MuJoCo places a light of mode "fixed": in its body's frame.
            let b = scene.light_bodyid[i] as usize;
            let (bpos, bmat) = (poses.xpos[w * scene.nbody() + b], poses.xmat[w * scene.nbody() + b]);
            let pos = DVec3::from_array(self.value::<3>(field!("light_pos"), w, i));
            let dir = DVec3::from_array(self.value::<3>(field!("light_dir"), w, i));
            (bpos + bmat * pos, (bmat * dir).normalize())
        } else {
            (poses.light_xpos[w * self.nlight + i], poses.light_xdir[w * self.nlight + i])
        };
        LightState {
            active: self.kept::<bool>(field!("light_active"), w)[i],
            light_type: self.kept::<i32>(field!("light_type"), w)[i],
            castshadow: self.kept::<bool>(field!("light_castshadow"), w)[i],
            xpos,
            xdir,
            diffuse: self.value::<3>(field!("light_diffuse"), w, i).map(|d| d as f32),
        }
    }
}

impl Fields {
    /// World `w`'s physics fields.
    pub(crate) fn physics(&self, w: usize) -> PhysicsFields {
        PhysicsFields {
            body_mass: self.kept::<f64>(field!("body_mass"), w).to_vec(),
            dof_damping: self.kept::<f64>(field!("dof_damping"), w).to_vec(),
            geom_friction: self.kept::<f64>(field!("geom_friction"), w).to_vec(),
            geom_size: self.kept::<f64>(field!("geom_size"), w).to_vec(),
            geom_pos: self.kept::<f64>(field!("geom_pos"), w).to_vec(),
            geom_dataid: self.kept::<i32>(field!("geom_dataid"), w).to_vec(),
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
        let shapes = Shapes {
            geom_type: scene.geom_type.clone(),
            geom_size: self.kept::<f64>(field!("geom_size"), w).chunks_exact(3).map(DVec3::from_slice).collect(),
            geom_dataid: self.kept::<i32>(field!("geom_dataid"), w).to_vec(),
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
        self.value::<4>(field!("geom_rgba"), w, g).map(|v| v as f32)
    }
    fn geom_matid(&self, w: usize, g: usize) -> i32 {
        self.kept::<i32>(field!("geom_matid"), w)[g]
    }
    fn mat_rgba(&self, w: usize, m: usize) -> [f32; 4] {
        self.value::<4>(field!("mat_rgba"), w, m).map(|v| v as f32)
    }
    fn mat_texid(&self, w: usize, m: usize) -> i32 {
        self.kept::<i32>(field!("mat_texid"), w)[m]
    }
    fn mat_texrepeat(&self, w: usize, m: usize) -> [f32; 2] {
        self.value::<2>(field!("mat_texrepeat"), w, m).map(|v| v as f32)
    }
    fn cam_fovy(&self, w: usize, c: usize) -> f64 {
        self.value::<1>(field!("cam_fovy"), w, c)[0]
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
        let Some(&FieldSpec { of, width, .. }) = DERIVED_FIELDS.iter().find(|d| d.name == name) else {
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
