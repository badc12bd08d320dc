//! The per-world fields' specs: each field's name, what it has a value per, the shape and
//! element type of a value, the values it takes, what reads it and where the model keeps it,
//! in one table ([`FIELDS`]) as MuJoCo Warp's `types.py` declares its batched arrays; and how
//! a field's values are kept, by element type ([`Values`]). `fields.rs` keeps the rows.

use std::ops::Range;

use glam::DVec3;
use glint_core::Scene;
use glint_mujoco::PhysicsFields;

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

/// What one number of a field's value is, and which numbers it takes.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Element {
    /// A real number within its bounds.
    Real(Bounds),
    /// MuJoCo's `cam_fovy`: degrees for a perspective camera (0 to 180, exclusive), a height
    /// in metres above 0 for an orthographic one.
    Fovy,
    /// A direction: every value a vector that is not zero.
    Direction,
    /// The id of another element of the model (MuJoCo's `int`), `-1` for none.
    Id(IdOf),
    /// MuJoCo's `mjtLightType`: 0 spot, 1 directional, 2 point, 3 image.
    LightType,
    /// A flag (MuJoCo's `mjtByte` used as a boolean): 0 or 1.
    Flag,
}

/// The lowest and highest values of a real field (inclusive; infinite for none), and what
/// they are in words.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// The lowest value.
    pub lo: f64,
    /// The highest value.
    pub hi: f64,
    /// The rule in words, for an error ("colours and alpha run from 0 to 1").
    pub(crate) words: &'static str,
}

impl Bounds {
    /// Any finite number.
    const ANY: Bounds = Bounds { lo: f64::NEG_INFINITY, hi: f64::INFINITY, words: "" };

    /// 0 or more.
    const fn at_least_zero(words: &'static str) -> Bounds {
        Bounds { lo: 0.0, hi: f64::INFINITY, words }
    }
}

/// What an id field refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdOf {
    /// A material (`nmat`).
    Material,
    /// A texture (`ntex`).
    Texture,
    /// A mesh or a height field, as the geom's type says.
    MeshOrHfield,
}

/// What reads a field (its world's row of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reader {
    /// The ray core: the shapes every ray meets (the lidar's, the cameras' depth) and their
    /// visibility through alpha; the lidar's material classes follow the same fields.
    Rays,
    /// The cameras' shading: colours, textures, lights and field of view.
    Cameras,
    /// MuJoCo's physics: a world whose values differ steps on its own model copy.
    Physics,
}

/// How a field's values are kept: by element type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Values {
    /// Real numbers (reals, fields of view, directions).
    Real(Vec<f64>),
    /// Whole numbers (ids, light types).
    Int(Vec<i32>),
    /// Flags.
    Flag(Vec<bool>),
}

/// One per-world field: MuJoCo Warp's name, what it has a value per, how many numbers a value
/// has, what each number is, what reads it, and (for a field glint keeps) where the model
/// keeps it.
#[derive(Clone, Copy, Debug)]
pub struct FieldSpec {
    /// MuJoCo Warp's (and MuJoCo's) name, e.g. `geom_rgba`.
    pub name: &'static str,
    /// What it has one value per.
    pub of: FieldOf,
    /// How many numbers a value has: a value is `(width,)`, or a scalar when 1.
    pub width: usize,
    /// What each number is, and which numbers it takes.
    pub element: Element,
    /// What reads it.
    pub readers: &'static [Reader],
    /// The model's own values (one row), for a field glint keeps per world.
    pub(crate) model: Option<fn(&Scene, &PhysicsFields) -> Values>,
}

impl FieldSpec {
    /// Whether `reader` reads it.
    pub const fn read_by(&self, reader: Reader) -> bool {
        let mut i = 0;
        while i < self.readers.len() {
            if self.readers[i] as u8 == reader as u8 {
                return true;
            }
            i += 1;
        }
        false
    }

    /// Whether its numbers are whole (ids, types, flags): a `[randomize]` draw of it is a
    /// choice.
    pub const fn is_whole(&self) -> bool {
        matches!(self.element, Element::Id(_) | Element::LightType | Element::Flag)
    }

    /// Where a normal draw of it is clipped.
    pub(crate) fn clip(&self) -> (f64, f64) {
        match self.element {
            Element::Real(b) => (b.lo, b.hi),
            Element::Fovy => (1e-3, 179.999),
            _ => (f64::NEG_INFINITY, f64::INFINITY),
        }
    }
}

/// A field glint keeps per world: `name`, `of`, `width`, `element`, read by `readers`, the
/// model's own values from `model`.
const fn kept(
    (name, of, width): (&'static str, FieldOf, usize),
    element: Element,
    readers: &'static [Reader],
    model: fn(&Scene, &PhysicsFields) -> Values,
) -> FieldSpec {
    FieldSpec { name, of, width, element, readers, model: Some(model) }
}

/// A field MuJoCo derives from the others (real numbers, read from the model a world steps on).
const fn derived(name: &'static str, of: FieldOf, width: usize) -> FieldSpec {
    FieldSpec { name, of, width, element: Element::Real(Bounds::ANY), readers: &[Reader::Physics], model: None }
}

use Element::{Direction, Flag, Fovy, Id, LightType, Real};
use FieldOf::{Body, Camera, Dof, Geom, Light, Material};
use Reader::{Cameras, Physics, Rays};

fn f32s<const N: usize>(v: &[[f32; N]]) -> Values {
    Values::Real(v.iter().flatten().map(|&x| f64::from(x)).collect())
}

fn vec3s(v: &[DVec3]) -> Values {
    Values::Real(v.iter().flat_map(|d| d.to_array()).collect())
}

/// Every per-world field glint keeps: settable ([`crate::Simulation::set_field`]), drawn by
/// `[randomize]`, and read by its readers from its world's row.
pub const FIELDS: [FieldSpec; 18] = [
    kept(
        ("geom_rgba", Geom, 4),
        Real(Bounds { lo: 0.0, hi: 1.0, words: "colours and alpha run from 0 to 1" }),
        &[Cameras, Rays],
        |s, _| f32s(&s.geom_rgba),
    ),
    kept(("geom_matid", Geom, 1), Id(IdOf::Material), &[Cameras, Rays], |s, _| Values::Int(s.geom_matid.clone())),
    kept(
        ("mat_rgba", Material, 4),
        Real(Bounds { lo: 0.0, hi: 1.0, words: "colours and alpha run from 0 to 1" }),
        &[Cameras, Rays],
        |s, _| f32s(&s.mat_rgba),
    ),
    kept(("mat_texid", Material, 1), Id(IdOf::Texture), &[Cameras], |s, _| Values::Int(s.mat_texid.clone())),
    kept(("mat_texrepeat", Material, 2), Real(Bounds::ANY), &[Cameras], |s, _| f32s(&s.mat_texrepeat)),
    kept(("light_active", Light, 1), Flag, &[Cameras], |s, _| Values::Flag(s.light_active.clone())),
    kept(("light_type", Light, 1), LightType, &[Cameras], |s, _| Values::Int(s.light_type.clone())),
    kept(("light_castshadow", Light, 1), Flag, &[Cameras], |s, _| Values::Flag(s.light_castshadow.clone())),
    kept(("light_pos", Light, 3), Real(Bounds::ANY), &[Cameras], |s, _| vec3s(&s.light_pos)),
    kept(("light_dir", Light, 3), Direction, &[Cameras], |s, _| vec3s(&s.light_dir)),
    kept(
        ("light_diffuse", Light, 3),
        Real(Bounds::at_least_zero("a light's diffuse colour is 0 or more")),
        &[Cameras],
        |s, _| f32s(&s.light_diffuse),
    ),
    kept(("cam_fovy", Camera, 1), Fovy, &[Cameras], |s, _| Values::Real(s.cam_fovy.clone())),
    kept(("body_mass", Body, 1), Real(Bounds::at_least_zero("a mass is 0 or more")), &[Physics], |_, p| {
        Values::Real(p.body_mass.clone())
    }),
    kept(("dof_damping", Dof, 1), Real(Bounds::at_least_zero("a damping is 0 or more")), &[Physics], |_, p| {
        Values::Real(p.dof_damping.clone())
    }),
    kept(("geom_friction", Geom, 3), Real(Bounds::at_least_zero("frictions are 0 or more")), &[Physics], |_, p| {
        Values::Real(p.geom_friction.clone())
    }),
    kept(("geom_size", Geom, 3), Real(Bounds::at_least_zero("sizes are 0 or more")), &[Rays, Physics], |_, p| {
        Values::Real(p.geom_size.clone())
    }),
    kept(("geom_pos", Geom, 3), Real(Bounds::ANY), &[Physics], |_, p| Values::Real(p.geom_pos.clone())),
    kept(("geom_dataid", Geom, 1), Id(IdOf::MeshOrHfield), &[Rays, Physics], |_, p| Values::Int(p.geom_dataid.clone())),
];

/// The fields MuJoCo derives from the others when a model compiles (or `mj_setConst` runs):
/// readable per world, each read from the model the world steps on, never set.
pub const DERIVED_FIELDS: [FieldSpec; 7] = [
    derived("geom_aabb", Geom, 6),
    derived("geom_rbound", Geom, 1),
    derived("body_subtreemass", Body, 1),
    derived("body_inertia", Body, 3),
    derived("body_invweight0", Body, 2),
    derived("body_ipos", Body, 3),
    derived("body_iquat", Body, 4),
];

/// The names of the fields of [`FIELDS`] `reader` reads; `N` is how many there are.
const fn names_read_by<const N: usize>(reader: Reader) -> [&'static str; N] {
    let mut names = [""; N];
    let (mut i, mut n) = (0, 0);
    while i < FIELDS.len() {
        if FIELDS[i].read_by(reader) {
            names[n] = FIELDS[i].name;
            n += 1;
        }
        i += 1;
    }
    assert!(n == N, "N is not the number of fields the reader reads");
    names
}

/// How many fields of [`FIELDS`] `reader` reads.
const fn count_read_by(reader: Reader) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < FIELDS.len() {
        if FIELDS[i].read_by(reader) {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The fields physics reads (those of [`FIELDS`] read by [`Reader::Physics`]): a world whose
/// values differ steps on its own model copy.
pub const PHYSICS_FIELDS: [&str; count_read_by(Physics)] = names_read_by(Physics);

/// The fields that decide what rays meet in a world (those of [`FIELDS`] read by
/// [`Reader::Rays`]: shapes, and visibility through alpha).
pub const GEOMETRY_FIELDS: [&str; count_read_by(Rays)] = names_read_by(Rays);

/// The position of field `name` in [`FIELDS`]; a name it lacks fails the build.
pub(crate) const fn position(name: &str) -> usize {
    let mut i = 0;
    while i < FIELDS.len() {
        if eq(FIELDS[i].name.as_bytes(), name.as_bytes()) {
            return i;
        }
        i += 1;
    }
    panic!("not a field of FIELDS")
}

const fn eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl Values {
    /// The values at `at`, as a new set of values of the same type.
    pub(crate) fn slice(&self, at: Range<usize>) -> Values {
        match self {
            Values::Real(v) => Values::Real(v[at].to_vec()),
            Values::Int(v) => Values::Int(v[at].to_vec()),
            Values::Flag(v) => Values::Flag(v[at].to_vec()),
        }
    }

    /// `parts` one after the other (all of `self`'s type).
    pub(crate) fn concat(&self, parts: impl Iterator<Item = Values>) -> Values {
        let mut out = self.slice(0..0);
        for part in parts {
            match (&mut out, part) {
                (Values::Real(a), Values::Real(b)) => a.extend(b),
                (Values::Int(a), Values::Int(b)) => a.extend(b),
                (Values::Flag(a), Values::Flag(b)) => a.extend(b),
                _ => unreachable!("a field's rows all have its element type"),
            }
        }
        out
    }

    /// `element`'s values from `numbers`, which it takes (checked before).
    pub(crate) fn from_f64(element: Element, numbers: &[f64]) -> Values {
        match element {
            Element::Id(_) | Element::LightType => Values::Int(numbers.iter().map(|&x| x as i32).collect()),
            Element::Flag => Values::Flag(numbers.iter().map(|&x| x != 0.0).collect()),
            Element::Real(_) | Element::Fovy | Element::Direction => Values::Real(numbers.to_vec()),
        }
    }

    /// Every value as a real number (flags as 0 and 1).
    pub(crate) fn to_f64(&self) -> Vec<f64> {
        match self {
            Values::Real(v) => v.clone(),
            Values::Int(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Values::Flag(v) => v.iter().map(|&b| f64::from(u8::from(b))).collect(),
        }
    }

    /// Writes `numbers` (which the field takes) from position `at` on.
    pub(crate) fn write(&mut self, at: usize, numbers: &[f64]) {
        let at = at..at + numbers.len();
        match self {
            Values::Real(v) => v[at].copy_from_slice(numbers),
            Values::Int(v) => v[at].iter_mut().zip(numbers).for_each(|(x, &n)| *x = n as i32),
            Values::Flag(v) => v[at].iter_mut().zip(numbers).for_each(|(x, &n)| *x = n != 0.0),
        }
    }
}

/// An element type a field's values are kept as: real numbers, whole numbers or flags.
pub(crate) trait Kept: Sized {
    /// `values` as this type, when they are kept as it.
    fn of(values: &Values) -> Option<&[Self]>;
}

impl Kept for f64 {
    fn of(values: &Values) -> Option<&[f64]> {
        if let Values::Real(v) = values { Some(v) } else { None }
    }
}

impl Kept for i32 {
    fn of(values: &Values) -> Option<&[i32]> {
        if let Values::Int(v) = values { Some(v) } else { None }
    }
}

impl Kept for bool {
    fn of(values: &Values) -> Option<&[bool]> {
        if let Values::Flag(v) = values { Some(v) } else { None }
    }
}
