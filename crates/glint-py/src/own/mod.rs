//! Sensors on a user's own `mujoco` model and data: the scene read once from the model's
//! numpy arrays ([`model`]), the ray caster refitted from the data's frames on each call.
//! `glint.rays` casts as `mj_multiRay`; [`lidar`] scans a lidar on a site or body;
//! [`render`] draws as `mujoco.Renderer` does. The Python package wraps these classes with
//! `mujoco`'s idioms (`glint/own.py`).

pub(crate) mod lidar;
pub(crate) mod model;
pub(crate) mod render;

use glint_core::{Poses, RayBatch, RayCaster, RayFilter};
use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrays::RayQuery;
use crate::errors::{Class, raise};
use model::{FRAMES, Frame, FrameSource, OwnModel, read_poses};

/// A user's model as glint's scene: meshes and height fields with their BVHs, built once;
/// the frames of the last data it was given, and the ray caster refitted to them.
#[pyclass(module = "glint._glint")]
pub struct OwnScene {
    pub(crate) model: OwnModel,
    pub(crate) poses: Poses,
    pub(crate) caster: RayCaster,
    /// Whether the caster's top-level trees were built from real frames (at construction
    /// every frame is at the origin, and a tree built there only refitted would be poor).
    built: bool,
}

impl OwnScene {
    /// Takes the frames of `source` (every frame kind it has; `needed` must be there) and
    /// refits the caster. Returns the number of worlds.
    pub(crate) fn update(&mut self, source: &FrameSource, needed: &[(Frame, &str)]) -> PyResult<usize> {
        let scene = &self.model.scene;
        let before = self.poses.nworld;
        let nworld = read_poses(scene, source, &FRAMES, &mut self.poses, needed)?;
        if nworld != before {
            self.caster = RayCaster::new(scene, &self.poses);
        } else if !self.built {
            self.caster.rebuild(&self.poses);
        } else {
            self.caster.refit(&self.poses);
        }
        self.built = true;
        Ok(nworld)
    }
}

#[pymethods]
impl OwnScene {
    /// Reads `model`, a `mujoco.MjModel` (any version with `mjModel`'s array names).
    #[new]
    fn new(model: Bound<'_, PyAny>) -> PyResult<OwnScene> {
        let model = OwnModel::read(&model)?;
        let poses = Poses::new(&model.scene, 1);
        let caster = RayCaster::new(&model.scene, &poses);
        Ok(OwnScene { model, poses, caster, built: false })
    }

    /// Geoms in the model.
    #[getter]
    fn ngeom(&self) -> usize {
        self.model.scene.ngeom()
    }

    /// Casts rays from the frames of `data` (a `mujoco.MjData`) as `mj_multiRay` does:
    /// `pnt` one origin `(3,)` or one per ray `(nray, 3)`, `vec` `(nray, 3)` or flat; distances
    /// in units of each `vec`'s length, `-1` (and geom `-1`) on a miss or past `cutoff`.
    /// Returns `(dist, geomid)`, each `(nray,)`.
    #[pyo3(
        signature = (data, pnt, vec, geomgroup = None, flg_static = true, bodyexclude = -1, cutoff = None),
        text_signature = "(self, /, data, pnt, vec, geomgroup=None, flg_static=True, bodyexclude=-1, cutoff=None)"
    )]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn rays<'py>(
        &mut self,
        py: Python<'py>,
        data: Bound<'py, PyAny>,
        pnt: Bound<'py, PyAny>,
        vec: Bound<'py, PyAny>,
        geomgroup: Option<Vec<u8>>,
        flg_static: bool,
        bodyexclude: i32,
        cutoff: Option<f64>,
    ) -> PyResult<(Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<i32>>)> {
        self.update(&FrameSource::Data(&data), &[])?;
        let query = RayQuery::read(&pnt, &vec, geomgroup, 1)?;
        let (dist, geomid) = self.cast(py, &query, flg_static, bodyexclude, cutoff)?;
        Ok((dist.into_pyarray(py), geomid.into_pyarray(py)))
    }

    /// [`OwnScene::rays`] over a batch of worlds given as arrays: `geom_xpos` `(nworld,
    /// ngeom, 3)`, `geom_xmat` `(nworld, ngeom, 9)`; `pnt` `(3,)`, `(nray, 3)` or `(nworld,
    /// nray, 3)`, `vec` `(nray, 3)` or `(nworld, nray, 3)`. Returns `(dist, geomid)`, each
    /// `(nworld, nray)`.
    #[pyo3(
        signature = (geom_xpos, geom_xmat, pnt, vec, geomgroup = None, flg_static = true, bodyexclude = -1, cutoff = None),
        text_signature = "(self, /, geom_xpos, geom_xmat, pnt, vec, geomgroup=None, flg_static=True, bodyexclude=-1, cutoff=None)"
    )]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn rays_batch<'py>(
        &mut self,
        py: Python<'py>,
        geom_xpos: Bound<'py, PyAny>,
        geom_xmat: Bound<'py, PyAny>,
        pnt: Bound<'py, PyAny>,
        vec: Bound<'py, PyAny>,
        geomgroup: Option<Vec<u8>>,
        flg_static: bool,
        bodyexclude: i32,
        cutoff: Option<f64>,
    ) -> PyResult<(Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<i32>>)> {
        let arrays = PyDict::new(py);
        arrays.set_item("geom_xpos", geom_xpos)?;
        arrays.set_item("geom_xmat", geom_xmat)?;
        let nworld = self.update(&FrameSource::Arrays(&arrays), &[])?;
        let query = RayQuery::read(&pnt, &vec, geomgroup, nworld)?;
        let nray = query.nray;
        let (dist, geomid) = self.cast(py, &query, flg_static, bodyexclude, cutoff)?;
        let shape = |v| numpy::ndarray::Array2::from_shape_vec((nworld, nray), v).expect("nworld x nray");
        Ok((
            shape(dist).into_pyarray(py),
            numpy::ndarray::Array2::from_shape_vec((nworld, nray), geomid).expect("nworld x nray").into_pyarray(py),
        ))
    }

    fn __repr__(&self) -> String {
        let s = &self.model.scene;
        format!("<glint.OwnScene: {} geoms, {} meshes, {} height fields>", s.ngeom(), s.mesh.len(), s.hfield.len())
    }
}

impl OwnScene {
    /// Casts `query` through every world of the current frames; hits past `cutoff` are misses.
    fn cast(
        &self,
        py: Python<'_>,
        query: &RayQuery,
        flg_static: bool,
        bodyexclude: i32,
        cutoff: Option<f64>,
    ) -> PyResult<(Vec<f64>, Vec<i32>)> {
        if let Some(c) = cutoff
            && (c.is_nan() || c < 0.0)
        {
            return Err(raise(Class::ShapeError, format!("cutoff = {c}: give a distance of 0 or more (or None)")));
        }
        let filter = RayFilter { geomgroup: query.geomgroup, flg_static, exclude_tree: -1 };
        let exclude = [bodyexclude];
        let batch = RayBatch { nray: query.nray, pnt: &query.pnt, vec: &query.vec, bodyexclude: &exclude };
        let (scene, poses, caster) = (&*self.model.scene, &self.poses, &self.caster);
        let mut hits = py
            .detach(|| caster.rays(scene, poses, &batch, &filter))
            .map_err(|e| raise(Class::ShapeError, e.to_string()))?;
        if let Some(cutoff) = cutoff {
            for (d, g) in hits.dist.iter_mut().zip(hits.geomid.iter_mut()) {
                if *d > cutoff {
                    (*d, *g) = (-1.0, -1);
                }
            }
        }
        Ok((hits.dist, hits.geomid))
    }
}

/// Every `mjModel` array glint reads of a model: `(name, dtype, count, width)` tuples.
#[pyfunction]
pub(crate) fn model_arrays() -> Vec<(&'static str, &'static str, &'static str, usize)> {
    glint_core::MODEL_ARRAYS.iter().map(|a| (a.name, a.dtype, a.count, a.width)).collect()
}
