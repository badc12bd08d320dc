//! `glint.Simulation`: one scene over a batch of worlds, with its lidars, as numpy arrays.

use std::path::PathBuf;

use glint_camera::{DebugChannel, SensorModel};
use glint_core::{RayBatch, RayFilter};
use glint_lidar::{BakeRequest, BakeStatus, ReturnParams, ReturnPreset, Spelled};
use glint_record::EpisodeStatus;
use glint_sim::{RecordingOptions, SimOptions, WorldStatus, Worlds};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::arrays::{RayQuery, checked_out, float64_input, out_array, rows};
use crate::convert::{Seed, from_serde, params_dict, params_from, toml_table};
use crate::errors::{Class, IntoPy, from_sim, raise};
use crate::lidar::Lidar;

/// One MuJoCo scene simulated over `nworld` worlds side by side, with every lidar on it.
///
/// Build it with `Simulation.from_manifest(path)` or `Simulation.from_xml(xml, lidars=[...])`;
/// `step()` advances every world by one lidar tick (controls, physics, ray caster refit,
/// lidar scans, recording), releasing the GIL while it runs.
// Unsendable: the simulation holds an armed recording's writers, which are not Sync; one
// Python thread drives it (the GIL is still released while it steps).
#[pyclass(module = "glint._glint", unsendable)]
pub struct Simulation {
    pub(crate) sim: glint_sim::Simulation,
    /// Whether `scan()` has already warned that the lidars were neither live nor recording.
    pub(crate) warned_idle_scan: bool,
}

/// What a call to `Simulation.step` did, per world.
#[pyclass(module = "glint._glint", get_all)]
pub struct StepReport {
    /// Simulated seconds since each world's episode began, shape `(nworld,)`.
    pub time: Py<PyArray1<f64>>,
    /// Each world's episode status: "ok", "unstable" or "ended".
    pub status: Vec<String>,
    /// Gymnasium's `terminated` for each world: it reached the task's goal during the steps,
    /// or MuJoCo found it unstable.
    pub terminated: Py<PyArray1<bool>>,
    /// Gymnasium's `truncated` for each world: its episode has run its length (status
    /// "ended").
    pub truncated: Py<PyArray1<bool>>,
    /// The manifest's `[task]` reward of each world, summed over the steps taken, shape
    /// `(nworld,)` (zeros without a task).
    pub reward: Py<PyArray1<f64>>,
    /// Whether each world reached the task's goal during the steps.
    pub reached: Py<PyArray1<bool>>,
    /// Whether each world's task body touched another body during the steps.
    pub collided: Py<PyArray1<bool>>,
    /// Each world's task body's distance to its goal after the steps, metres (NaN without a
    /// task).
    pub distance: Py<PyArray1<f64>>,
    /// Whether the manifest has a `[task]` (`distance` is NaN without one).
    pub has_task: bool,
    /// The worlds whose episode ended during the steps (terminated or truncated), in order.
    pub ended: Vec<usize>,
    /// The worlds `step(reset=...)` started new episodes in after the steps.
    pub restarted: Vec<usize>,
}

impl StepReport {
    /// The report of `reports`, the steps one call took, with the worlds in `restarted` read
    /// as new episodes.
    fn new(py: Python<'_>, reports: &[glint_sim::StepReport], restarted: Vec<usize>) -> StepReport {
        let last = reports.last().expect("n >= 1 steps");
        let nworld = last.status.len();
        let mut reward = vec![0.0; nworld];
        let (mut reached, mut collided) = (vec![false; nworld], vec![false; nworld]);
        for r in reports {
            for (w, t) in r.task.iter().enumerate() {
                reward[w] += t.reward;
                reached[w] |= t.reached;
                collided[w] |= t.collided;
            }
        }
        let mut distance: Vec<f64> =
            if last.task.is_empty() { vec![f64::NAN; nworld] } else { last.task.iter().map(|t| t.distance).collect() };
        let mut status = last.status.clone();
        let mut time = last.time.clone();
        for &w in &restarted {
            (reward[w], reached[w], collided[w], distance[w]) = (0.0, false, false, 0.0);
            (status[w], time[w]) = (WorldStatus::Ok, 0.0);
        }
        let (terminated, truncated): (Vec<bool>, Vec<bool>) =
            (0..nworld).map(|w| status[w].terminated_truncated(reached[w])).unzip();
        StepReport {
            time: time.into_pyarray(py).unbind(),
            status: status.iter().map(|s| status_name(*s).to_string()).collect(),
            ended: (0..nworld).filter(|&w| terminated[w] || truncated[w]).collect(),
            terminated: terminated.into_pyarray(py).unbind(),
            truncated: truncated.into_pyarray(py).unbind(),
            reward: reward.into_pyarray(py).unbind(),
            reached: reached.into_pyarray(py).unbind(),
            collided: collided.into_pyarray(py).unbind(),
            distance: distance.into_pyarray(py).unbind(),
            has_task: !last.task.is_empty(),
            restarted,
        }
    }
}

#[pymethods]
impl StepReport {
    /// The info dict `glint.gym.VectorEnv.step` returns, in Gymnasium's vector layout: the
    /// step information of every world (see `StepReport::info_items`; `task_reward` a copy of
    /// `reward`, the others this report's arrays), each with its `_key` mask: a new array, true
    /// but for the `restarted` worlds, which have no step information but their time. Built
    /// here in one call: the same dict built in Python was most of the environment's own time
    /// per step.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let info = PyDict::new(py);
        let nworld = self.time.bind(py).len();
        let reward = self.reward.bind(py).to_owned_array().into_pyarray(py).into_any();
        let items = self.info_items(py, reward);
        for (key, value) in &items {
            info.set_item(*key, value)?;
        }
        let mut stepped = vec![true; nworld];
        for &w in &self.restarted {
            stepped[w] = false;
        }
        for (key, _) in &items {
            let mask = if *key == "time" { vec![true; nworld] } else { stepped.clone() };
            info.set_item(format!("_{key}"), PyArray1::from_vec(py, mask))?;
        }
        Ok(info)
    }

    /// World `world`'s step information as `glint.gym.Env.step` returns it: the keys of
    /// `info()`, each a Python float or bool.
    fn world_info<'py>(&self, py: Python<'py>, world: usize) -> PyResult<Bound<'py, PyDict>> {
        let info = PyDict::new(py);
        for (key, value) in self.info_items(py, self.reward.bind(py).clone().into_any()) {
            info.set_item(key, value.call_method1("item", (world,))?)?;
        }
        Ok(info)
    }
}

impl StepReport {
    /// The step information a Gymnasium info carries, by key, in order: `distance` (with a
    /// task; without one it is NaN, which no two infos would agree on), `collided`, `reached`,
    /// `time` and `task_reward` (`reward`, given). Both environments' infos are built from it.
    fn info_items<'py>(&self, py: Python<'py>, reward: Bound<'py, PyAny>) -> Vec<(&'static str, Bound<'py, PyAny>)> {
        let mut items = Vec::with_capacity(5);
        if self.has_task {
            items.push(("distance", self.distance.bind(py).clone().into_any()));
        }
        items.extend([
            ("collided", self.collided.bind(py).clone().into_any()),
            ("reached", self.reached.bind(py).clone().into_any()),
            ("time", self.time.bind(py).clone().into_any()),
            ("task_reward", reward),
        ]);
        items
    }
}

/// An armed recording; use it as a context manager (`with sim.record("out") as rec:`), or
/// call `stop()`.
#[pyclass(module = "glint._glint", unsendable)]
pub struct Recording {
    sim: Py<Simulation>,
    /// The session folder.
    #[pyo3(get)]
    path: String,
    stopped: bool,
}

/// Every world's actions from `actions`, `(nworld, nu)` or `(nu,)` for every world.
fn world_actions(actions: &PyReadonlyArrayDyn<'_, f64>, nworld: usize, nu: usize) -> PyResult<Vec<f64>> {
    let shape = actions.shape();
    let values = actions.as_array();
    if shape == [nu] {
        Ok((0..nworld).flat_map(|_| values.iter().copied()).collect())
    } else if shape == [nworld, nu] {
        Ok(values.iter().copied().collect())
    } else {
        Err(raise(
            Class::ShapeError,
            format!("actions have shape {shape:?}: give ({nworld}, {nu}) (nworld, nu), or ({nu},) for every world"),
        ))
    }
}

fn status_name(s: WorldStatus) -> &'static str {
    match s {
        WorldStatus::Ok => "ok",
        WorldStatus::Unstable => "unstable",
        _ => "ended",
    }
}

/// A bake status as Python sees it: its serde form, as `glint bake --status` and
/// `augmentation.json` write it.
fn bake_dict<'py>(py: Python<'py>, s: &BakeStatus) -> PyResult<Bound<'py, PyAny>> {
    from_serde(py, s)
}

impl Simulation {
    /// Passes the simulation's warnings to Python's `warnings` (category `glint.GlintWarning`).
    pub(crate) fn flush_warnings(&mut self, py: Python<'_>) -> PyResult<()> {
        let warnings = self.sim.take_warnings();
        if warnings.is_empty() {
            return Ok(());
        }
        let category = crate::errors::warning_class(py)?;
        let warn = py.import("warnings")?.getattr("warn")?;
        for w in warnings {
            warn.call1((w.to_string(), &category, 2))?;
        }
        Ok(())
    }

    fn wrap(py: Python<'_>, mut sim: glint_sim::Simulation) -> PyResult<Py<Simulation>> {
        // Python reads ranges and the return model's channels, never hit points or normals:
        // the scans keep those only while recording (a tick writes less).
        sim.set_keep_surfaces(false);
        let mut sim = Simulation { sim, warned_idle_scan: false };
        sim.flush_warnings(py)?;
        Py::new(py, sim)
    }

    /// The shape of every world's observation: `(nworld, size)`.
    fn observation_shape(&self) -> [usize; 2] {
        [self.sim.nworld(), self.sim.observation().size()]
    }

    fn worlds_of(&self, worlds: Option<Vec<usize>>) -> Vec<usize> {
        worlds.unwrap_or_else(|| (0..self.sim.nworld()).collect())
    }
}

#[pymethods]
impl Simulation {
    /// The scene of the manifest at `path` (its MJCF, lidars, materials, bake settings, return
    /// model, controller, `[[observation]]` and `[task]`) over `nworld` worlds; `seed` is the
    /// run seed (default: the manifest's).
    #[staticmethod]
    #[pyo3(signature = (path, nworld = 1, seed = None))]
    fn from_manifest(py: Python<'_>, path: PathBuf, nworld: usize, seed: Option<Seed>) -> PyResult<Py<Simulation>> {
        let options = SimOptions { nworld, seed: seed.map(|Seed(s)| s), ..SimOptions::default() };
        let sim = py.detach(|| glint_sim::Simulation::from_manifest(&path, options)).py()?;
        Simulation::wrap(py, sim)
    }

    /// The MJCF file at `path` (holding every asset) over `nworld` worlds on per-world
    /// assets: `variants` is a list of `{"name": ..., "edits": [...]}` with the edits of a
    /// manifest's `[[variants.variant]]` (`{"geom": "obj", "mesh": "mesh_b"}`, `{"body":
    /// ..., "material": ...}`, `{"material": ..., "texture": ...}`, `{"geom": ...,
    /// "enabled": False}`), and world `w` takes the variant `assign[w % len(assign)]` (names
    /// or indices). Each variant is compiled once through MuJoCo's model editing.
    #[staticmethod]
    #[pyo3(signature = (path, variants, assign, nworld = 1, lidars = None, seed = None))]
    fn from_variants(
        py: Python<'_>,
        path: PathBuf,
        variants: Bound<'_, PyList>,
        assign: Bound<'_, PyList>,
        nworld: usize,
        lidars: Option<Vec<Bound<'_, PyDict>>>,
        seed: Option<Seed>,
    ) -> PyResult<Py<Simulation>> {
        let table = PyDict::new(py);
        table.set_item("variant", variants)?;
        table.set_item("assign", assign)?;
        let (variants, assign) =
            glint_manifest::variant_plan(toml_table(&table, "variants")?, &path).map_err(from_sim)?;
        let bindings = lidar_bindings(lidars, &path)?;
        let options = SimOptions { nworld, seed: seed.map(|Seed(s)| s), ..SimOptions::default() };
        let plan = glint_sim::VariantPlan { variants, assign };
        let sim = py.detach(|| glint_sim::Simulation::from_variants(&path, &plan, bindings, options)).py()?;
        Simulation::wrap(py, sim)
    }

    /// An MJCF scene (the XML text, or the path of an `.xml` file) over `nworld` worlds, with
    /// `lidars`: one dict per sensor with the keys of a manifest's `[[lidar]]` table, e.g.
    /// `{"attach_site": "lidar", "preset": "velodyne-vlp16"}`.
    ///
    /// `runner_hz` is the lidar runner's rate, ticks per second, kept exactly or refused (a
    /// whole number of physics steps per tick); by default 100 where the timestep realises it,
    /// else the nearest rate it realises (with a `GlintWarning` when there are lidars).
    #[staticmethod]
    #[pyo3(signature = (xml, nworld = 1, lidars = None, seed = None, runner_hz = None))]
    fn from_xml(
        py: Python<'_>,
        xml: &str,
        nworld: usize,
        lidars: Option<Vec<Bound<'_, PyDict>>>,
        seed: Option<Seed>,
        runner_hz: Option<f64>,
    ) -> PyResult<Py<Simulation>> {
        let is_path = !xml.trim_start().starts_with('<');
        let source = if is_path { PathBuf::from(xml) } else { PathBuf::from("<xml>") };
        let bindings = lidar_bindings(lidars, &source)?;
        let options = SimOptions { nworld, seed: seed.map(|Seed(s)| s), runner_hz, ..SimOptions::default() };
        let sim = py
            .detach(|| {
                if is_path {
                    glint_sim::Simulation::from_xml_file(&source, bindings, options)
                } else {
                    glint_sim::Simulation::from_xml(xml, bindings, options)
                }
            })
            .py()?;
        Simulation::wrap(py, sim)
    }

    /// Number of worlds.
    #[getter]
    fn nworld(&self) -> usize {
        self.sim.nworld()
    }

    /// Number of actuators (MuJoCo's `nu`): the length of one world's action vector.
    #[getter]
    fn nu(&self) -> usize {
        self.sim.model().nu()
    }

    /// Actuator names, in action-vector order.
    #[getter]
    fn actuator_names(&self) -> Vec<String> {
        self.sim.actuators().into_iter().map(|(n, _)| n).collect()
    }

    /// Each actuator's control range, shape `(nu, 2)`; `-inf, inf` where it is not limited.
    #[getter]
    fn ctrlrange<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        let rows: Vec<[f64; 2]> =
            self.sim.actuators().into_iter().map(|(_, r)| r.unwrap_or([f64::NEG_INFINITY, f64::INFINITY])).collect();
        let flat: Vec<f64> = rows.iter().flatten().copied().collect();
        Array2::from_shape_vec((rows.len(), 2), flat).expect("two columns").into_pyarray(py)
    }

    /// The lidars, in binding order.
    #[getter]
    fn lidars(slf: &Bound<'_, Self>) -> PyResult<Vec<Lidar>> {
        let count = slf.borrow().sim.lidar_count();
        Ok((0..count).map(|index| Lidar { sim: slf.clone().unbind(), index }).collect())
    }

    /// Each world's simulated seconds since its episode began, shape `(nworld,)`: MuJoCo's
    /// clock, as `StepReport.time` and the recordings' timestamps read it.
    #[getter]
    fn time<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.sim.time().into_pyarray(py)
    }

    /// Simulated seconds one `step()` advances (one lidar tick).
    #[getter]
    fn dt(&self) -> f64 {
        self.sim.runner().dt
    }

    /// Whether the lidars fire on every step (`True`), or only while recording or when the
    /// observation reads them (`False`, the default).
    #[getter]
    fn get_lidar_live(&self) -> bool {
        self.sim.lidar_live()
    }

    #[setter]
    fn set_lidar_live(&mut self, live: bool) {
        self.sim.set_lidar_live(live);
    }

    /// Advances every world by `n` agent steps. `actions` is `(nworld, nu)` (or `(nu,)` for
    /// every world), float64, clamped by MuJoCo to each actuator's `ctrlrange`; `None` lets
    /// the manifest's controller drive. With `out`, every world's observation after the
    /// steps is written into it as `observe(out=out)` writes it, in the same call. The worlds
    /// in `reset` start new episodes after the steps, in the same call (Gymnasium's
    /// next-step autoreset): their observation is their new episode's first and their report
    /// entries read as a new episode's (time 0, reward 0, neither terminated nor truncated).
    /// The GIL is released while the worlds step.
    #[pyo3(signature = (actions = None, n = 1, out = None, reset = None))]
    fn step(
        &mut self,
        py: Python<'_>,
        actions: Option<Bound<'_, PyAny>>,
        n: usize,
        out: Option<Bound<'_, PyAny>>,
        reset: Option<Vec<usize>>,
    ) -> PyResult<StepReport> {
        let (nworld, nu) = (self.sim.nworld(), self.sim.model().nu());
        let out = out.map(|o| checked_out(o, self.observation_shape())).transpose()?;
        let restarted = reset.unwrap_or_default();
        if let Some(&w) = restarted.iter().find(|&&w| w >= nworld) {
            return Err(PyValueError::new_err(format!(
                "reset = [.., {w}, ..]: the simulation has worlds 0 to {}",
                nworld - 1
            )));
        }
        let mut view = out.as_ref().map(|o| o.try_readwrite()).transpose()?;
        let observation = match view.as_mut() {
            Some(v) => Some(rows(v)?),
            None => None,
        };
        let actions = actions.map(|a| world_actions(&float64_input(&a, "actions")?, nworld, nu)).transpose()?;
        if n == 0 {
            return Err(PyValueError::new_err("n = 0: give the number of steps to take, 1 or more"));
        }
        let sim = &mut self.sim;
        let reports = py
            .detach(|| {
                // Stepped, reset and observed in one hand-over to the thread pool.
                sim.in_pool(|sim| {
                    let reports = (0..n).map(|_| sim.step(actions.as_deref())).collect::<Result<Vec<_>, _>>()?;
                    if !restarted.is_empty() {
                        sim.reset(Worlds::These(&restarted), None)?;
                    }
                    if let Some(values) = observation {
                        sim.observe_all(values)?;
                    }
                    Ok::<_, glint_sim::SimError>(reports)
                })
            })
            .py()?;
        drop(view);
        self.flush_warnings(py)?;
        Ok(StepReport::new(py, &reports, restarted))
    }

    /// Starts new episodes in `worlds` (default: all): MuJoCo's reset, the manifest's `[reset]`
    /// draws, controllers and lidar patterns restarted. With `seed`, the run seed becomes
    /// `seed` and the episodes are numbered from 0 again: the same seed gives the same
    /// episodes.
    #[pyo3(signature = (seed = None, worlds = None))]
    fn reset(&mut self, py: Python<'_>, seed: Option<Seed>, worlds: Option<Vec<usize>>) -> PyResult<()> {
        let list = self.worlds_of(worlds);
        let sim = &mut self.sim;
        let seed = seed.map(|Seed(s)| s);
        py.detach(|| sim.reset(Worlds::These(&list), seed)).py()?;
        self.flush_warnings(py)
    }

    /// Names of the observation vector's values (the manifest's `[[observation]]`).
    #[getter]
    fn observation_names(&self) -> Vec<String> {
        self.sim.observation().names().to_vec()
    }

    /// The observation's components in order: `(name, offset, length, material)`, `material`
    /// telling whether a lidar component reads the return model's ranges.
    #[getter]
    fn observation_components(&self) -> Vec<(String, usize, usize, bool)> {
        self.sim.observation().parts()
    }

    /// Every world's observation, shape `(nworld, size)` float32, written into `out` when
    /// given (zero copy; a writeable C-ordered float32 array of that shape, any other refused)
    /// and returned.
    #[pyo3(signature = (out = None))]
    fn observe<'py>(&self, py: Python<'py>, out: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let out = out_array(py, out, self.observation_shape())?;
        {
            let mut view = out.try_readwrite()?;
            self.sim.observe_all(rows(&mut view)?).py()?;
        }
        Ok(out)
    }

    /// One name per rangefinder value, in the columns' order of
    /// [`rangefinders`](Self::rangefinders): a site-attached MJCF `<rangefinder>`'s name for
    /// its distance, `<name>/<field>[_<x|y|z>]` for the other fields of its `data` attribute.
    #[getter]
    fn rangefinder_names(&self) -> Vec<String> {
        self.sim.rangefinder_names().to_vec()
    }

    /// Every site-attached MJCF `<rangefinder>`'s values in every world as the worlds stand
    /// now, shape `(nworld, len(rangefinder_names))` float64, cast through glint's BVH: what
    /// MuJoCo's `sensordata` holds for them (`-1` for a distance that hits nothing).
    fn rangefinders<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let shape = (self.sim.nworld(), self.sim.rangefinder_names().len());
        let values = self.sim.rangefinders().py()?;
        Ok(Array2::from_shape_vec(shape, values).expect("nworld x values").into_pyarray(py))
    }

    /// World `world`'s MuJoCo `sensordata` (every sensor of the model) as its last step or
    /// reset left it, float64.
    fn sensordata<'py>(&self, py: Python<'py>, world: usize) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(self.sim.sensordata(world).py()?.to_vec().into_pyarray(py))
    }

    /// The manifest's `[task]` as a dict (its serde form), or `None`.
    #[getter]
    fn task<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.sim.task().map(|t| from_serde(py, t)).transpose()
    }

    /// Casts rays through every world with MuJoCo's `mj_multiRay` semantics: `pnt` is one
    /// origin `(3,)`, one per ray `(nray, 3)`, or one per world and ray `(nworld, nray, 3)`;
    /// `vec` is `(nray, 3)` or `(nworld, nray, 3)`. Returns `(dist, geomid, normal)` shaped
    /// `(nworld, nray)`, `(nworld, nray)` and `(nworld, nray, 3)`; `-1` on a miss.
    #[pyo3(
        signature = (pnt, vec, geomgroup = None, flg_static = true, bodyexclude = -1),
        text_signature = "(self, /, pnt, vec, geomgroup=None, flg_static=True, bodyexclude=-1)"
    )]
    #[allow(clippy::type_complexity)]
    fn rays<'py>(
        &mut self,
        py: Python<'py>,
        pnt: Bound<'py, PyAny>,
        vec: Bound<'py, PyAny>,
        geomgroup: Option<Vec<u8>>,
        flg_static: bool,
        bodyexclude: i32,
    ) -> PyResult<(Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<i32>>, Bound<'py, PyArray3<f64>>)> {
        let nworld = self.sim.nworld();
        let RayQuery { nray, pnt, vec, geomgroup } = RayQuery::read(&pnt, &vec, geomgroup, nworld)?;
        let filter = RayFilter { geomgroup, flg_static, exclude_tree: -1 };
        let exclude = [bodyexclude];
        let batch = RayBatch { nray, pnt: &pnt, vec: &vec, bodyexclude: &exclude };
        // A unique borrow crosses into the released-GIL closure: the simulation is Send, not Sync.
        let (sim, batch, filter) = (&mut self.sim, &batch, &filter);
        let hits = py.detach(move || sim.rays(batch, filter)).py()?;
        let dist = Array2::from_shape_vec((nworld, nray), hits.dist).expect("nworld x nray").into_pyarray(py);
        let geomid = Array2::from_shape_vec((nworld, nray), hits.geomid).expect("nworld x nray").into_pyarray(py);
        let normal: Vec<f64> = hits.normal.iter().flat_map(|n| n.to_array()).collect();
        let normal = numpy::ndarray::Array3::from_shape_vec((nworld, nray, 3), normal)
            .expect("nworld x nray x 3")
            .into_pyarray(py);
        Ok((dist, geomid, normal))
    }

    /// Sets the cameras that render: each a camera name, or a dict with the keys of a
    /// manifest's `[[camera]]` table (`camera`, `width`, `height`, `outputs`, `use_textures`,
    /// `use_shadows`, `geom_groups`). Replaces the manifest's bindings.
    fn set_cameras(&mut self, py: Python<'_>, cameras: Vec<Bound<'_, PyAny>>) -> PyResult<()> {
        let mut tables = Vec::with_capacity(cameras.len());
        for (i, c) in cameras.iter().enumerate() {
            let table = match c.cast::<PyDict>() {
                Ok(d) => toml_table(d, &format!("cameras[{i}]"))?,
                Err(_) => {
                    let name: String = c.extract().map_err(|_| {
                        raise(
                            Class::SettingError,
                            format!("cameras[{i}] is neither a camera name nor a dict of [[camera]] keys"),
                        )
                    })?;
                    toml::Table::from_iter([("camera".to_string(), toml::Value::String(name))])
                }
            };
            tables.push(table);
        }
        let bindings =
            glint_manifest::camera_bindings(&tables, std::path::Path::new("set_cameras")).map_err(from_sim)?;
        let options = bindings.iter().map(|b| self.sim.camera_options(b)).collect::<Result<Vec<_>, _>>().py()?;
        py.detach(|| self.sim.set_cameras(options)).py()
    }

    /// Renders every camera set (by the manifest's `[[camera]]` or `set_cameras`) in every
    /// world. Returns a dict from camera name to a dict of its outputs: `rgb` `(nworld, H, W,
    /// 3)` uint8, `depth` `(nworld, H, W)` float32 metres along the optical axis (0: nothing
    /// hit), `seg` `(nworld, H, W)` int32 geom ids (−1: background; `ngeom + k`: skin `k`).
    /// A camera with a depth-sensor model adds `valid` `(nworld, H, W)` bool: where the
    /// device reports depth (its holes are 0 in `depth`). With a `debug_channel`, `depth`
    /// holds the channel's values instead (no `valid`).
    fn render<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let frames = py.detach(|| self.sim.render()).py()?;
        let out = PyDict::new(py);
        let nworld = frames.nworld;
        for (slot, (model, options)) in frames.layout.cameras.iter().enumerate() {
            let (w, h) = (model.width, model.height);
            let mut rgb = Vec::with_capacity(nworld * w * h * 3);
            let mut depth = Vec::with_capacity(nworld * w * h);
            let mut seg = Vec::with_capacity(nworld * w * h);
            for world in 0..nworld {
                let (c, d, g, _, _) = frames.image(world, slot);
                rgb.extend_from_slice(c);
                depth.extend_from_slice(d);
                seg.extend_from_slice(g);
            }
            let camera = PyDict::new(py);
            if options.render_rgb {
                let a = numpy::ndarray::Array4::from_shape_vec((nworld, h, w, 3), rgb).expect("nworld x h x w x 3");
                camera.set_item("rgb", a.into_pyarray(py))?;
            }
            if options.render_depth {
                let sensor = options.depth_sensor;
                if sensor.model != SensorModel::None && sensor.debug_channel == DebugChannel::Depth {
                    let valid: Vec<bool> = depth.iter().map(|&m| m > 0.0).collect();
                    let a = numpy::ndarray::Array3::from_shape_vec((nworld, h, w), valid).expect("nworld x h x w");
                    camera.set_item("valid", a.into_pyarray(py))?;
                }
                let a = numpy::ndarray::Array3::from_shape_vec((nworld, h, w), depth).expect("nworld x h x w");
                camera.set_item("depth", a.into_pyarray(py))?;
            }
            if options.render_seg {
                let a = numpy::ndarray::Array3::from_shape_vec((nworld, h, w), seg).expect("nworld x h x w");
                camera.set_item("seg", a.into_pyarray(py))?;
            }
            out.set_item(&model.name, camera)?;
        }
        Ok(out)
    }

    /// The names of the fields MuJoCo derives from the others (`geom_aabb`, `body_inertia`,
    /// ...): readable per world through `field` or `fields`, never set.
    #[staticmethod]
    fn derived_field_names() -> Vec<&'static str> {
        glint_sim::DERIVED_FIELDS.iter().map(|f| f.name).collect()
    }

    /// Every per-world field as a mapping: `sim.fields["geom_rgba"]` reads the batched array
    /// (`(rows, count)` or `(rows, count, width)`; world `w` reads row `w % rows`) and
    /// `sim.fields["geom_rgba"] = array` sets it, as `field` and `set_field` do. The derived
    /// fields read one row per world and cannot be set.
    #[getter]
    fn fields(slf: &Bound<'_, Self>) -> Fields {
        Fields { sim: slf.clone().unbind() }
    }

    /// The variant each world is on (`None`: the base model), for a simulation built by
    /// `from_variants` or a manifest with `[variants]`.
    fn world_variant(&self, world: usize) -> PyResult<Option<String>> {
        Ok(self.sim.world_variant(world).py()?.map(str::to_string))
    }

    /// The names of the model fields that can differ per world (MuJoCo Warp's names).
    #[staticmethod]
    fn field_names() -> Vec<&'static str> {
        glint_sim::FIELDS.iter().map(|f| f.name).collect()
    }

    /// The per-world field `name` as a float64 array of shape `(rows, count)` or
    /// `(rows, count, width)` (count: the model's geoms, materials or lights): world `w`
    /// reads row `w % rows`.
    fn field<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let (values, shape) = self.sim.field(name).py()?;
        let array = numpy::ndarray::ArrayD::from_shape_vec(shape, values).expect("shape matches the values");
        Ok(array.into_pyarray(py).into_any())
    }

    /// Sets the per-world field `name` (see `field_names()`: geom and material colours,
    /// materials, textures, texture repeats, and the light fields) from `values` shaped
    /// `(rows, count)` or `(rows, count, width)`, any `rows` of 1 or more: world `w` reads row
    /// `w % rows`. `light_pos` and `light_dir` are in the light's body frame, as in MJCF. The
    /// cameras read every field.
    fn set_field(&mut self, name: &str, values: Bound<'_, PyAny>) -> PyResult<()> {
        let values = float64_input(&values, "values")?;
        let shape = values.shape().to_vec();
        let flat: Vec<f64> = values.as_array().iter().copied().collect();
        self.sim.set_field(name, &flat, &shape).py()
    }

    /// What world `world`'s episode drew from the manifest's `[randomize]`, by
    /// `"field/target"` (empty without a `[randomize]` table).
    fn drawn_fields(&self, world: usize) -> PyResult<std::collections::BTreeMap<String, Vec<f64>>> {
        self.sim.drawn_fields(world).cloned().py()
    }

    /// The return model's seventeen parameters, by key (one set for the scene).
    #[getter]
    fn return_params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        params_dict(py, &self.sim.return_params())
    }

    /// Writes the nine base return parameters (all nine required; the seed's
    /// `SetLidarReturnParams`), keeping the optics parameters.
    fn set_return_params(&mut self, params: Bound<'_, PyDict>) -> PyResult<()> {
        let values = params_from(&params, self.sim.return_params(), true)?;
        let base: [f64; 9] = std::array::from_fn(|i| values[i]);
        self.sim.set_return_params(base).py()
    }

    /// Writes any of the seventeen return parameters, keeping the others (`SetLidarReturnParamsEx`).
    fn set_return_params_ex(&mut self, params: Bound<'_, PyDict>) -> PyResult<()> {
        let values = params_from(&params, self.sim.return_params(), false)?;
        let params = ReturnParams::from_array(values).map_err(from_sim)?;
        self.sim.set_return_params_ex(params).py()
    }

    /// The return model that runs: `{"model": "seed"}`, or `{"model": "physical",
    /// "physical": {term: value, ...}}` (a glint extension; docs/manifest.md).
    #[getter]
    fn return_model<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        match self.sim.physical_model() {
            None => dict.set_item("model", "seed")?,
            Some(physics) => {
                dict.set_item("model", "physical")?;
                dict.set_item("physical", from_serde(py, &physics)?)?;
            }
        }
        Ok(dict)
    }

    /// Chooses the return model: "seed" (the default) or "physical", with any of the physical
    /// model's terms and parameters in `physical` (the others keep their defaults). Nothing
    /// changes on an error.
    #[pyo3(signature = (model, physical=None))]
    fn set_return_model(&mut self, model: &str, physical: Option<Bound<'_, PyDict>>) -> PyResult<()> {
        let kind = glint_lidar::ReturnModelKind::from_name(model).map_err(from_sim)?;
        let physics = match (kind, physical) {
            (glint_lidar::ReturnModelKind::Physical, terms) => Some(match terms {
                None => glint_lidar::PhysicalModel::default(),
                Some(terms) => {
                    let json: String = terms.py().import("json")?.call_method1("dumps", (terms,))?.extract()?;
                    serde_json::from_str(&json).map_err(|e| raise(Class::SettingError, format!("physical: {e}")))?
                }
            }),
            (_, Some(_)) => {
                return Err(raise(Class::SettingError, "physical terms belong to model=\"physical\""));
            }
            _ => None,
        };
        self.sim.set_physical_model(physics).py()
    }

    /// Applies a return-model preset by name ("generic", "unitree-l1", "livox-mid360",
    /// "ouster-os1") or by the seed's index (0 to 3).
    fn set_return_preset(&mut self, preset: Bound<'_, PyAny>) -> PyResult<()> {
        let preset = match preset.extract::<i64>() {
            Ok(i) => ReturnPreset::from_index(i),
            Err(_) => ReturnPreset::from_name(&preset.extract::<String>()?),
        }
        .map_err(from_sim)?;
        self.sim.set_return_preset(preset);
        Ok(())
    }

    /// Bakes the scene's NIR materials and loads the bake; each argument at 0 falls back to
    /// the manifest's `[bake]` setting (`splat_radius=-1` asks for an explicit 0;
    /// `include_hidden` 1 includes, 2 excludes hidden geoms). Returns the bake's status.
    #[pyo3(signature = (cell_size = 0.0, max_dim = 0, splat_radius = 0, include_hidden = 0))]
    fn bake<'py>(
        &mut self,
        py: Python<'py>,
        cell_size: f64,
        max_dim: i32,
        splat_radius: i32,
        include_hidden: i32,
    ) -> PyResult<Bound<'py, PyAny>> {
        let request = BakeRequest { cell_size, max_dim, splat_radius, include_hidden };
        let sim = &mut self.sim;
        let status = py.detach(|| sim.bake_request(request)).map_err(crate::errors::to_py)?;
        bake_dict(py, &status)
    }

    /// Saves the loaded bake as `MaterialBakes/<name>.lvxb` in the project folder (default:
    /// the manifest's bake name); returns the file's path.
    #[pyo3(signature = (name = None))]
    fn save_bake(&self, name: Option<&str>) -> PyResult<String> {
        Ok(self.sim.save_bake(name).py()?.display().to_string())
    }

    /// Loads a saved bake (default: the manifest's bake name), stale or not (a stale one
    /// warns); returns its status.
    #[pyo3(signature = (name = None))]
    fn load_bake<'py>(&mut self, py: Python<'py>, name: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let status = self.sim.load_bake(name).py()?;
        self.flush_warnings(py)?;
        bake_dict(py, &status)
    }

    /// The loaded bake's status (`valid` is False when none is loaded).
    fn bake_status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        bake_dict(py, &self.sim.bake_status())
    }

    /// Arms a recording of every lidar of every world into a new session under `out` (default:
    /// the manifest's `[recorder] output_dir`): each world's episode from its next step to its
    /// next reset. Use the result as a context manager, or call its `stop()`.
    #[pyo3(signature = (out = None))]
    fn record(slf: &Bound<'_, Self>, out: Option<PathBuf>) -> PyResult<Recording> {
        let path = {
            let mut this = slf.borrow_mut();
            let path = this.sim.arm_recording(&RecordingOptions { out, episodes: 0 }).py()?;
            this.flush_warnings(slf.py())?;
            path
        };
        Ok(Recording { sim: slf.clone().unbind(), path: path.display().to_string(), stopped: false })
    }

    /// Whether a recording is armed.
    #[getter]
    fn recording(&self) -> bool {
        self.sim.recording()
    }

    fn __repr__(&self) -> String {
        format!("<glint.Simulation: {} worlds, {} lidars>", self.sim.nworld(), self.sim.lidar_count())
    }
}

#[pymethods]
impl Recording {
    /// Stops the recording: open episodes are finished (as interrupted when `interrupted`).
    /// Returns the number of episodes written. A second call does nothing and returns 0.
    #[pyo3(signature = (interrupted = false))]
    fn stop(&mut self, py: Python<'_>, interrupted: bool) -> PyResult<u32> {
        if self.stopped {
            return Ok(0);
        }
        self.stopped = true;
        let mut sim = self.sim.bind(py).borrow_mut();
        let status = if interrupted { EpisodeStatus::Interrupted } else { EpisodeStatus::Complete };
        let summary = sim.sim.stop_recording(status).py()?;
        sim.flush_warnings(py)?;
        Ok(summary.episodes)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<Bound<'_, PyAny>>,
        _exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.stop(py, exc_type.is_some_and(|t| !t.is_none()))?;
        Ok(false)
    }
}

/// The lidar bindings of Python dicts with a `[[lidar]]` table's keys (errors name `source`).
fn lidar_bindings(
    lidars: Option<Vec<Bound<'_, PyDict>>>,
    source: &std::path::Path,
) -> PyResult<Vec<glint_lidar::LidarBinding>> {
    let tables = lidars
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, d)| toml_table(d, &format!("lidars[{i}]")))
        .collect::<PyResult<Vec<_>>>()?;
    glint_manifest::lidar_bindings(&tables, source).map_err(from_sim)
}

/// `Simulation.fields`: the per-world fields as a mapping of numpy arrays.
#[pyclass(module = "glint._glint", unsendable, mapping)]
pub struct Fields {
    sim: Py<Simulation>,
}

#[pymethods]
impl Fields {
    fn __getitem__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        if !Fields::names().contains(&name) {
            return Err(pyo3::exceptions::PyKeyError::new_err(format!(
                "`{name}` is not a per-world field; the fields are {}",
                Fields::names().join(", ")
            )));
        }
        self.sim.borrow(py).field(py, name)
    }

    fn __setitem__(&self, py: Python<'_>, name: &str, values: Bound<'_, PyAny>) -> PyResult<()> {
        self.sim.borrow_mut(py).set_field(name, values)
    }

    fn __len__(&self) -> usize {
        Fields::names().len()
    }

    fn __contains__(&self, name: &str) -> bool {
        Fields::names().contains(&name)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        slf.keys().into_pyobject(slf.py())?.try_iter().map(Bound::into_any)
    }

    /// Every field name: the settable ones, then the derived ones.
    fn keys(&self) -> Vec<&'static str> {
        Fields::names()
    }
}

impl Fields {
    fn names() -> Vec<&'static str> {
        glint_sim::FIELDS.iter().chain(&glint_sim::DERIVED_FIELDS).map(|f| f.name).collect()
    }
}
