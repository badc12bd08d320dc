//! A user's own `mujoco.MjModel` as glint's scene: its arrays read once, by `mjModel`'s
//! names ([`glint_core::MODEL_ARRAYS`]), through numpy (so any `mujoco` 3.x or 4.x works, and
//! anything else with those names and shapes); its data's frames read on each call.

use std::borrow::Cow;
use std::sync::Arc;

use glam::{DMat3, DVec3, Vec3};
use glint_camera::Headlight;
use glint_core::{
    ArraySource, ArraySpec, CoreError, Element, ModelArrays, ModelCounts, Poses, Scene, Texture, Visual,
    mat_from_mujoco, textures_from_arrays,
};
use numpy::{PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::arrays::{float64_input, tuple};
use crate::errors::{Class, raise};

/// Adds MuJoCo's free camera as the scene's last camera (its frame is set on each render).
fn append_free_camera(scene: &mut Scene, fovy: f64) {
    scene.cam_bodyid.push(0);
    scene.cam_fovy.push(fovy);
    scene.cam_resolution.push([1, 1]);
    scene.cam_projection.push(0);
    scene.cam_output.push(1);
    scene.cam_sensorsize.push([0.0; 2]);
    scene.cam_intrinsic.push([0.0; 4]);
    scene.cam_name.push("free camera".into());
}

/// What glint keeps of a user's model: the scene (meshes and height fields with their BVHs),
/// the textures, the headlight and MuJoCo's default free camera.
pub(crate) struct OwnModel {
    pub(crate) scene: Arc<Scene>,
    pub(crate) textures: Vec<Texture>,
    pub(crate) headlight: Headlight,
    pub(crate) free_camera: FreeCamera,
}

/// MuJoCo's default free camera (`mjv_defaultFreeCamera`): looking at the model's centre
/// from 1.5 extents away, at the model's `visual/global` azimuth, elevation and field of view.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FreeCamera {
    pub(crate) lookat: DVec3,
    pub(crate) distance: f64,
    pub(crate) azimuth: f64,
    pub(crate) elevation: f64,
    pub(crate) fovy: f64,
}

impl FreeCamera {
    /// Its position and orientation (columns: right, up, backward), as `mjv_updateCamera`
    /// places a free camera.
    pub(crate) fn frame(&self) -> (DVec3, DMat3) {
        let (az, el) = (self.azimuth.to_radians(), self.elevation.to_radians());
        let forward = DVec3::new(el.cos() * az.cos(), el.cos() * az.sin(), el.sin());
        let up = DVec3::new(-el.sin() * az.cos(), -el.sin() * az.sin(), el.cos());
        let pos = self.lookat - self.distance * forward;
        (pos, DMat3::from_cols(forward.cross(up), up, -forward))
    }
}

/// An error reading the model, as Python sees it.
fn scene_error(message: impl Into<String>) -> PyErr {
    raise(Class::SceneError, message)
}

/// `obj.a.b.c`.
fn attr_path<'py>(obj: &Bound<'py, PyAny>, path: &str) -> PyResult<Bound<'py, PyAny>> {
    path.split('.').try_fold(obj.clone(), |o, name| o.getattr(name))
}

/// Reads the model's arrays by name through numpy.
struct NumpySource<'py> {
    model: Bound<'py, PyAny>,
    numpy: Bound<'py, PyModule>,
}

impl NumpySource<'_> {
    /// The bytes of `spec`'s array as `dtype`, C-ordered; `None` when the model has no such
    /// attribute.
    fn bytes(&self, spec: &ArraySpec) -> PyResult<Option<Vec<u8>>> {
        let Ok(value) = self.model.getattr(spec.name) else { return Ok(None) };
        let kwargs = PyDict::new(self.model.py());
        kwargs.set_item("dtype", spec.dtype)?;
        let array = self.numpy.call_method("ascontiguousarray", (value,), Some(&kwargs))?;
        let bytes = array.call_method0("tobytes")?;
        Ok(Some(bytes.cast::<PyBytes>()?.as_bytes().to_vec()))
    }
}

impl ArraySource<'static> for NumpySource<'_> {
    fn array<T: Element>(&mut self, spec: &ArraySpec, len: usize) -> Result<Cow<'static, [T]>, CoreError> {
        let missing = |reason: String| CoreError::MissingArray { field: spec.name, reason };
        let bytes = match self.bytes(spec) {
            Ok(Some(bytes)) => bytes,
            // A model without any element of the kind needs no array for it.
            Ok(None) if len == 0 => return Ok(Cow::Owned(Vec::new())),
            Ok(None) => return Err(missing("this MjModel has no such attribute".into())),
            Err(e) => return Err(missing(format!("numpy cannot read it as {} ({e})", spec.dtype))),
        };
        let values = T::from_ne_bytes(&bytes);
        if values.len() != len {
            return Err(CoreError::Shape {
                field: spec.name,
                len: values.len(),
                expected: format!("{} × {} = {len} were expected (is it from the same model?)", spec.count, spec.width),
            });
        }
        Ok(Cow::Owned(values))
    }
}

/// `model.names` (or `paths`) as bytes: a `bytes` object, or anything numpy reads as bytes.
fn byte_buffer(model: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<u8>> {
    let Ok(value) = model.getattr(name) else { return Ok(Vec::new()) };
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return Ok(bytes.as_bytes().to_vec());
    }
    let numpy = model.py().import("numpy")?;
    let kwargs = PyDict::new(model.py());
    kwargs.set_item("dtype", "uint8")?;
    let array = numpy.call_method("ascontiguousarray", (value,), Some(&kwargs))?;
    Ok(array.call_method0("tobytes")?.cast::<PyBytes>()?.as_bytes().to_vec())
}

fn counts_of(model: &Bound<'_, PyAny>) -> PyResult<ModelCounts> {
    let mut counts = ModelCounts::default();
    for &name in ModelCounts::NAMES {
        let value: i64 = model
            .getattr(name)
            .and_then(|v| v.extract())
            .map_err(|e| scene_error(format!("the model has no count `{name}` ({e}): pass a mujoco.MjModel")))?;
        counts.set(name, value.max(0) as usize);
    }
    Ok(counts)
}

fn number<'py, T: for<'a> FromPyObject<'a, 'py>>(model: &Bound<'py, PyAny>, path: &str, default: T) -> T {
    attr_path(model, path).ok().and_then(|v| v.extract().ok()).unwrap_or(default)
}

fn rgb(model: &Bound<'_, PyAny>, path: &str, default: [f32; 3]) -> Vec3 {
    Vec3::from_array(number(model, path, default))
}

impl OwnModel {
    /// The free camera's index in the scene: its last camera.
    pub(crate) fn free_camera_id(&self) -> usize {
        self.scene.ncam() - 1
    }

    /// Reads `model` (a `mujoco.MjModel`, any version with `mjModel`'s names).
    pub(crate) fn read(model: &Bound<'_, PyAny>) -> PyResult<OwnModel> {
        let counts = counts_of(model)?;
        let visual = Visual {
            offsamples: number(model, "vis.quality.offsamples", 4),
            zfar: number(model, "vis.map.zfar", 50.0),
            extent: number(model, "stat.extent", 1.0),
            haze: number(model, "vis.map.haze", 0.3),
            haze_rgba: number(model, "vis.rgba.haze", [1.0, 1.0, 1.0, 1.0]),
        };
        let (names, paths) = (byte_buffer(model, "names")?, byte_buffer(model, "paths")?);
        let mut source = NumpySource { model: model.clone(), numpy: model.py().import("numpy")? };
        let arrays = ModelArrays::from_source(counts, visual, names.into(), paths.into(), &mut source)
            .map_err(|e| scene_error(e.to_string()))?;
        let mut scene = Scene::from_arrays(&arrays, true).map_err(|e| scene_error(e.to_string()))?;
        let fovy = number(model, "vis.global_.fovy", 45.0);
        append_free_camera(&mut scene, fovy);
        scene.validate().map_err(|e| scene_error(e.to_string()))?;
        let textures = textures_from_arrays(&arrays).map_err(|e| scene_error(e.to_string()))?;
        let headlight = Headlight {
            active: number::<i64>(model, "vis.headlight.active", 1) != 0,
            ambient: rgb(model, "vis.headlight.ambient", [0.1; 3]),
            diffuse: rgb(model, "vis.headlight.diffuse", [0.4; 3]),
            specular: rgb(model, "vis.headlight.specular", [0.5; 3]),
        };
        let free_camera = FreeCamera {
            lookat: DVec3::from_array(number(model, "stat.center", [0.0; 3])),
            distance: 1.5 * visual.extent,
            azimuth: number(model, "vis.global_.azimuth", 90.0),
            elevation: number(model, "vis.global_.elevation", -45.0),
            fovy,
        };
        Ok(OwnModel { scene: Arc::new(scene), textures, headlight, free_camera })
    }
}

/// The frames a call reads from a data (or from the batched arrays standing for it): MuJoCo's
/// `mjData` names, each `(n, 3)` or `(n, 9)` per world.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    Geom,
    Body,
    Site,
    Camera,
    Light,
}

impl Frame {
    /// The position and orientation arrays' names.
    pub(crate) fn names(self) -> (&'static str, &'static str) {
        match self {
            Frame::Geom => ("geom_xpos", "geom_xmat"),
            Frame::Body => ("xpos", "xmat"),
            Frame::Site => ("site_xpos", "site_xmat"),
            Frame::Camera => ("cam_xpos", "cam_xmat"),
            Frame::Light => ("light_xpos", "light_xdir"),
        }
    }

    /// How many the user's model has, and how many the scene has (the scene's cameras end
    /// with the free camera, [`OwnModel::FREE_CAMERA`]).
    fn counts(self, scene: &Scene) -> (usize, usize) {
        match self {
            Frame::Geom => (scene.ngeom(), scene.ngeom()),
            Frame::Body => (scene.nbody(), scene.nbody()),
            Frame::Site => (scene.nsite(), scene.nsite()),
            Frame::Camera => (scene.ncam() - 1, scene.ncam()),
            Frame::Light => (scene.nlight(), scene.nlight()),
        }
    }
}

/// Every frame kind.
pub(crate) const FRAMES: [Frame; 5] = [Frame::Geom, Frame::Body, Frame::Site, Frame::Camera, Frame::Light];

/// `value`, named `name`, as `nworld × n` rows of `width` float64: `(n, width)` for one world
/// (`nworld` None: any), or `(nworld, n, width)`. Returns the rows and the number of worlds.
pub(crate) fn rows_of<'py>(
    value: &Bound<'py, PyAny>,
    name: &str,
    n: usize,
    width: usize,
    nworld: Option<usize>,
) -> PyResult<(PyReadonlyArrayDyn<'py, f64>, usize)> {
    let array = float64_input(value, name)?;
    let shape = array.shape().to_vec();
    // mujoco keeps `xmat`-like arrays as (n, 9); a batch may flatten them to (nworld, n * width).
    let worlds = match shape.as_slice() {
        [rows, w] if *rows == n && *w == width && nworld.is_none_or(|k| k == 1) => Some(1),
        [k, rows, w] if *rows == n && *w == width && nworld.is_none_or(|m| m == *k) => Some(*k),
        [k, flat] if *flat == n * width && nworld.is_some_and(|m| m == *k) => Some(*k),
        _ => None,
    };
    match worlds {
        Some(k) if k > 0 => Ok((array, k)),
        _ => {
            let batch = nworld.map_or("nworld".to_string(), |k| k.to_string());
            let hint =
                if shape.len() >= 2 && shape[shape.len() - 2] != n { " (is it from another model?)" } else { "" };
            Err(raise(
                Class::ShapeError,
                format!(
                    "{name} has shape {}, but the model has {n} of them: give ({n}, {width}) or ({batch}, {n}, {width}){hint}",
                    tuple(&shape)
                ),
            ))
        }
    }
}

/// An error naming the first entry of `rows` (`n` rows of `width` per world) that is not a
/// finite number: a frame there would place its object nowhere, and it would vanish.
fn check_finite(rows: &PyReadonlyArrayDyn<'_, f64>, name: &str, n: usize, width: usize) -> PyResult<()> {
    let Some((k, v)) = rows.as_array().iter().copied().enumerate().find(|(_, v)| !v.is_finite()) else {
        return Ok(());
    };
    let (world, row) = (k / (n * width).max(1), k % (n * width).max(1) / width);
    Err(raise(
        Class::ShapeError,
        format!(
            "{name}[{row}] of world {world} holds {v}, not a finite number: did the simulation diverge (mj_step warns of it)?"
        ),
    ))
}

/// Copies `rows` (`n_in` per world, `width` numbers each) into `out` (`n_out` per world) as
/// `convert` makes them.
fn fill<T>(
    rows: &PyReadonlyArrayDyn<'_, f64>,
    width: usize,
    (n_in, n_out): (usize, usize),
    out: &mut [T],
    convert: impl Fn(&[f64]) -> T,
) {
    let flat: Cow<[f64]> = match rows.as_slice() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(rows.as_array().iter().copied().collect()),
    };
    if n_in == 0 {
        return;
    }
    for (world_in, world_out) in flat.chunks_exact(n_in * width).zip(out.chunks_exact_mut(n_out)) {
        for (o, v) in world_out.iter_mut().zip(world_in.chunks_exact(width)) {
            *o = convert(v);
        }
    }
}

/// Where a call's frames come from: a data's attributes, or keyword arrays.
pub(crate) enum FrameSource<'a, 'py> {
    /// A `mujoco.MjData` (or anything with its attribute names), one world.
    Data(&'a Bound<'py, PyAny>),
    /// `(nworld, n, 3)` / `(nworld, n, 9)` arrays by `mjData`'s names; frames not given stay
    /// as they were.
    Arrays(&'a Bound<'py, PyDict>),
}

impl<'py> FrameSource<'_, 'py> {
    fn get(&self, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self {
            FrameSource::Data(data) => data.getattr(name).map(Some).map_err(|_| {
                raise(
                    Class::ShapeError,
                    format!("data has no `{name}`: pass the mujoco.MjData of this model (after mj_forward or mj_step)"),
                )
            }),
            FrameSource::Arrays(dict) => Ok(dict.get_item(name)?.filter(|v| !v.is_none())),
        }
    }
}

/// Fills `poses` (resized to the batch's worlds) with `frames` from `source`. Returns the
/// number of worlds. `needed` frames must be present (a data has them all).
pub(crate) fn read_poses(
    scene: &Scene,
    source: &FrameSource,
    frames: &[Frame],
    poses: &mut Poses,
    needed: &[(Frame, &str)],
) -> PyResult<usize> {
    let mut nworld: Option<usize> = None;
    for &(frame, why) in needed {
        let (pos, _) = frame.names();
        if source.get(pos)?.is_none() {
            let (pos, mat) = frame.names();
            return Err(raise(Class::ShapeError, format!("{why}: pass {pos} and {mat}")));
        }
    }
    for &frame in frames {
        let (n, n_scene) = frame.counts(scene);
        let (pos_name, mat_name) = frame.names();
        let (Some(pos), Some(mat)) = (source.get(pos_name)?, source.get(mat_name)?) else { continue };
        let mat_width = if frame == Frame::Light { 3 } else { 9 };
        let (pos, k) = rows_of(&pos, pos_name, n, 3, nworld)?;
        let (mat, _) = rows_of(&mat, mat_name, n, mat_width, Some(k))?;
        check_finite(&pos, pos_name, n, 3)?;
        check_finite(&mat, mat_name, n, mat_width)?;
        if nworld.is_none() {
            nworld = Some(k);
            if poses.nworld != k {
                *poses = Poses::new(scene, k);
            }
        }
        let counts = (n, n_scene);
        let (xpos, xmat): (&mut [DVec3], &mut [DMat3]) = match frame {
            Frame::Geom => (&mut poses.geom_xpos, &mut poses.geom_xmat),
            Frame::Body => (&mut poses.xpos, &mut poses.xmat),
            Frame::Site => (&mut poses.site_xpos, &mut poses.site_xmat),
            Frame::Camera => (&mut poses.cam_xpos, &mut poses.cam_xmat),
            Frame::Light => {
                fill(&pos, 3, counts, &mut poses.light_xpos, DVec3::from_slice);
                fill(&mat, 3, counts, &mut poses.light_xdir, DVec3::from_slice);
                continue;
            }
        };
        fill(&pos, 3, counts, xpos, DVec3::from_slice);
        fill(&mat, 9, counts, xmat, mat_from_mujoco);
    }
    nworld.ok_or_else(|| raise(Class::ShapeError, "no frames were given: pass at least geom_xpos and geom_xmat"))
}
