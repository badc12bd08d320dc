//! Per-world light fields, as MuJoCo Warp batches model fields: a field holds `rows` rows of
//! one value per light, and world `w` reads row `w % rows`. The model's own values are one
//! row. The renderer reads every light through [`Simulation::light`].

use glam::DVec3;
use glint_core::{Poses, Scene};

use crate::{SimError, Simulation};

/// The per-world light fields, by MuJoCo Warp's names, and how many numbers each light takes.
pub const LIGHT_FIELDS: [(&str, usize); 6] = [
    ("light_active", 1),
    ("light_type", 1),
    ("light_castshadow", 1),
    ("light_pos", 3),
    ("light_dir", 3),
    ("light_diffuse", 3),
];

/// One field's rows: `values.len() == rows * nlight * width`.
#[derive(Clone, Debug, PartialEq)]
struct Rows {
    rows: usize,
    values: Vec<f64>,
}

impl Rows {
    fn get<const N: usize>(&self, w: usize, light: usize, nlight: usize) -> [f64; N] {
        let at = ((w % self.rows) * nlight + light) * N;
        std::array::from_fn(|k| self.values[at + k])
    }
}

/// The six light fields of every world.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LightFields {
    nlight: usize,
    fields: [Rows; 6],
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

impl LightFields {
    /// The model's values as the one row of every field.
    pub(crate) fn new(scene: &Scene) -> LightFields {
        let flag = |b: &bool| f64::from(u8::from(*b));
        let one = |values: Vec<f64>| Rows { rows: 1, values };
        LightFields {
            nlight: scene.nlight(),
            fields: [
                one(scene.light_active.iter().map(flag).collect()),
                one(scene.light_type.iter().map(|&t| t as f64).collect()),
                one(scene.light_castshadow.iter().map(flag).collect()),
                one(scene.light_pos.iter().flat_map(|p| p.to_array()).collect()),
                one(scene.light_dir.iter().flat_map(|d| d.to_array()).collect()),
                one(scene.light_diffuse.iter().flat_map(|d| d.map(f64::from)).collect()),
            ],
            moved: false,
        }
    }

    fn index(name: &str) -> Result<usize, SimError> {
        LIGHT_FIELDS.iter().position(|(n, _)| *n == name).ok_or_else(|| {
            let names: Vec<&str> = LIGHT_FIELDS.iter().map(|(n, _)| *n).collect();
            let hint = glint_core::nearest_name(name, names.iter().copied()).map_or_else(
                || format!("the light fields are {}", names.join(", ")),
                |n| format!("did you mean `{n}`?"),
            );
            SimError::Setting(format!("`{name}` is not a per-world light field: {hint}"))
        })
    }

    /// Replaces field `name` with `values` of shape `shape`: `(rows, nlight)` for the scalar
    /// fields, `(rows, nlight, 3)` for the vectors, any `rows` of 1 or more.
    pub(crate) fn set(&mut self, name: &str, values: &[f64], shape: &[usize]) -> Result<(), SimError> {
        let f = Self::index(name)?;
        let width = LIGHT_FIELDS[f].1;
        let allowed = if width == 1 {
            format!("(rows, {}) with rows >= 1", self.nlight)
        } else {
            format!("(rows, {}, {width}) with rows >= 1", self.nlight)
        };
        let fits = shape.len() == if width == 1 { 2 } else { 3 }
            && shape[0] >= 1
            && shape[1] == self.nlight
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
        check_values(name, values)?;
        self.moved |= matches!(name, "light_pos" | "light_dir");
        self.fields[f] = Rows { rows: shape[0], values: values.to_vec() };
        Ok(())
    }

    /// Field `name`'s values and shape.
    pub(crate) fn get(&self, name: &str) -> Result<(Vec<f64>, Vec<usize>), SimError> {
        let f = Self::index(name)?;
        let (rows, width) = (&self.fields[f], LIGHT_FIELDS[f].1);
        let mut shape = vec![rows.rows, self.nlight];
        if width > 1 {
            shape.push(width);
        }
        Ok((rows.values.clone(), shape))
    }

    /// Light `i` of world `w`: the world's row of each field, placed by the world's poses.
    pub(crate) fn light(&self, scene: &Scene, poses: &Poses, w: usize, i: usize) -> LightState {
        let n = self.nlight;
        let [active] = self.fields[0].get::<1>(w, i, n);
        let [light_type] = self.fields[1].get::<1>(w, i, n);
        let [castshadow] = self.fields[2].get::<1>(w, i, n);
        let (xpos, xdir) = if self.moved {
            // As MuJoCo places a light of mode "fixed": in its body's frame.
            let b = scene.light_bodyid[i] as usize;
            let (bpos, bmat) = (poses.xpos[w * scene.nbody() + b], poses.xmat[w * scene.nbody() + b]);
            let pos = DVec3::from_array(self.fields[3].get::<3>(w, i, n));
            let dir = DVec3::from_array(self.fields[4].get::<3>(w, i, n));
            (bpos + bmat * pos, (bmat * dir).normalize())
        } else {
            (poses.light_xpos[w * n + i], poses.light_xdir[w * n + i])
        };
        let diffuse = self.fields[5].get::<3>(w, i, n).map(|d| d as f32);
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

/// An error unless every value suits field `name` (finiteness is checked before).
fn check_values(name: &str, values: &[f64]) -> Result<(), SimError> {
    let problem = match name {
        "light_type" => values.iter().find(|&&t| !(0.0..=3.0).contains(&t) || t.fract() != 0.0).map(|t| {
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
        _ => None,
    };
    problem.map_or(Ok(()), |message| Err(SimError::Setting(message)))
}

impl Simulation {
    /// Sets the per-world light field `name` (one of [`LIGHT_FIELDS`]) from `values` of shape
    /// `shape`, row-major: `(rows, nlight)` or `(rows, nlight, 3)`; world `w` reads row
    /// `w % rows` (MuJoCo Warp's rule). `light_pos` and `light_dir` are in the light's body
    /// frame, as in MJCF.
    pub fn set_light_field(&mut self, name: &str, values: &[f64], shape: &[usize]) -> Result<(), SimError> {
        self.light_fields.set(name, values, shape)
    }

    /// The per-world light field `name`'s values (row-major) and shape.
    pub fn light_field(&self, name: &str) -> Result<(Vec<f64>, Vec<usize>), SimError> {
        self.light_fields.get(name)
    }

    /// Light `light` of world `world`, with that world's light fields, in the world frame.
    pub fn light(&self, world: usize, light: usize) -> Result<LightState, SimError> {
        self.world_ok(world)?;
        let nlight = self.scene.nlight();
        if light >= nlight {
            return Err(SimError::Setting(format!("light {light} does not exist (the model has {nlight} lights)")));
        }
        Ok(self.light_fields.light(&self.scene, self.worlds.poses(), world, light))
    }
}
