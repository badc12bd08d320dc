//! `glint.Lidar`: one lidar sensor of a simulation, its live scans as `(nworld, beams)` arrays.

use glint_lidar::{ScanConfig, ScanFields, SecondaryCapture, SecondaryScope, Spelled};
use numpy::{PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrays::{out_array, rows};
use crate::convert::{from_json, toml_table};
use crate::errors::{Class, IntoPy, from_sim, raise};
use crate::sim::Simulation;

/// One lidar sensor (`sim.lidars[i]`, binding order).
#[pyclass(module = "glint._glint", name = "SimulationLidar", unsendable)]
pub struct Lidar {
    pub(crate) sim: Py<Simulation>,
    /// Its index (0-based, binding order).
    #[pyo3(get)]
    pub(crate) index: usize,
}

/// A scan of every world: `ranges` always; `secondary`, `intensity` and `reflectivity` when
/// asked (else `None`). Each is `(nworld, beams)` float32, `-1` for no return or not
/// resolvable.
#[pyclass(module = "glint._glint", get_all)]
pub struct Scan {
    /// Metres per beam (the return model's measured range with `material=True`).
    pub ranges: Py<PyArray2<f32>>,
    /// The second echo per beam (all `-1` when `max_returns < 2`).
    pub secondary: Option<Py<PyArray2<f32>>>,
    /// Received intensity per beam.
    pub intensity: Option<Py<PyArray2<f32>>>,
    /// Calibrated reflectivity per beam.
    pub reflectivity: Option<Py<PyArray2<f32>>>,
    /// The geom each beam met (`-1`: none), int32; scans of a `glint.Lidar` on your own model
    /// have it.
    pub geomid: Option<Py<PyArray2<i32>>>,
}

#[pymethods]
impl Lidar {
    /// Its name (the binding's, or its attach target's).
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        let sim = self.sim.bind(py).borrow();
        Ok(sim.sim.lidar(self.index).py()?.binding().name.clone())
    }

    /// Beams per cycle: `channels * azimuth_bins`.
    #[getter]
    fn beam_count(&self, py: Python<'_>) -> PyResult<usize> {
        let sim = self.sim.bind(py).borrow();
        Ok(sim.sim.lidar(self.index).py()?.beam_count())
    }

    /// Every world's live scan. `material` applies the return model (a bake must be loaded),
    /// `secondary` adds the second echo (needs a bake), `intensity` adds intensity and
    /// calibrated reflectivity (`-1` without `material`). `out`, a writeable C-ordered float32
    /// `(nworld, beams)` array (any other is refused), receives the ranges without a copy and
    /// is returned as `Scan.ranges`.
    #[pyo3(signature = (material = false, secondary = false, intensity = false, out = None))]
    fn scan<'py>(
        &self,
        py: Python<'py>,
        material: bool,
        secondary: bool,
        intensity: bool,
        out: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Scan> {
        warn_if_idle(&mut self.sim.bind(py).borrow_mut(), py)?;
        let sim = self.sim.bind(py).borrow();
        let lidar = sim.sim.lidar(self.index).py()?;
        let (nworld, beams) = (sim.sim.nworld(), lidar.beam_count());
        let ranges = out_array(py, out, [nworld, beams])?;
        let make = |asked: bool| asked.then(|| PyArray2::<f32>::zeros(py, [nworld, beams], false));
        let (sec, int, refl) = (make(secondary), make(intensity), make(intensity));
        {
            let mut r = ranges.try_readwrite()?;
            let r = rows(&mut r)?;
            let mut i = int.as_ref().map(|a| a.readwrite());
            let mut f = refl.as_ref().map(|a| a.readwrite());
            for w in 0..nworld {
                let row = w * beams..(w + 1) * beams;
                let int_row = match i.as_mut() {
                    Some(v) => Some(&mut rows(v)?[row.clone()]),
                    None => None,
                };
                let refl_row = match f.as_mut() {
                    Some(v) => Some(&mut rows(v)?[row.clone()]),
                    None => None,
                };
                lidar.scan_channels_into(w, &mut r[row], int_row, refl_row, material).py()?;
            }
            if let Some(sec) = &sec {
                let mut s = sec.readwrite();
                let s = rows(&mut s)?;
                for w in 0..nworld {
                    lidar.scan_secondary_into(w, &mut s[w * beams..(w + 1) * beams]).py()?;
                }
            }
        }
        Ok(Scan {
            ranges: ranges.unbind(),
            secondary: sec.map(Bound::unbind),
            intensity: int.map(Bound::unbind),
            reflectivity: refl.map(Bound::unbind),
            geomid: None,
        })
    }

    /// Azimuth (`atan2(y, x)`) and elevation (`asin(z)`) of every beam of world `world`'s
    /// current cycle, radians, sensor frame: two float32 arrays of `beam_count`.
    #[pyo3(signature = (world = 0))]
    #[allow(clippy::type_complexity)]
    fn beam_angles<'py>(
        &self,
        py: Python<'py>,
        world: usize,
    ) -> PyResult<(Bound<'py, numpy::PyArray1<f32>>, Bound<'py, numpy::PyArray1<f32>>)> {
        let sim = self.sim.bind(py).borrow();
        let lidar = sim.sim.lidar(self.index).py()?;
        let beams = lidar.beam_count();
        let (az, el) =
            (numpy::PyArray1::<f32>::zeros(py, beams, false), numpy::PyArray1::<f32>::zeros(py, beams, false));
        {
            let (mut a, mut e) = (az.readwrite(), el.readwrite());
            let (a, e) = (a.as_slice_mut()?, e.as_slice_mut()?);
            lidar.beam_angles_into(world, a, e).py()?;
        }
        Ok((az, el))
    }

    /// The scan configuration as a dict of the manifest's `[[lidar]]` keys (pattern, channels,
    /// azimuth_bins, vfov, ranges, rotation_hz, geom_group_mask, self_ignore, ...). Assign a
    /// dict to change it: the keys given replace the current values (the seed's
    /// `SetLidarConfig`), checked against the seed's ranges.
    #[getter]
    fn get_config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let sim = self.sim.bind(py).borrow();
        config_dict(py, &sim.sim.lidar(self.index).py()?.config())
    }

    #[setter]
    fn set_config(&self, py: Python<'_>, fields: Bound<'_, PyDict>) -> PyResult<()> {
        let fields = scan_fields(&fields)?;
        let mut sim = self.sim.bind(py).borrow_mut();
        let mut config = sim.sim.lidar(self.index).py()?.config();
        fields.apply(&mut config).map_err(from_sim)?;
        sim.sim.lidar_mut(self.index).py()?.set_config(config).py()?;
        sim.flush_warnings(py)
    }

    /// The secondary geometry its recordings capture, as `(capture, scope)` names.
    #[getter]
    fn secondary_capture(&self, py: Python<'_>) -> PyResult<(String, String)> {
        let sim = self.sim.bind(py).borrow();
        let (capture, scope) = sim.sim.lidar(self.index).py()?.secondary_capture();
        Ok((capture.name().to_string(), scope.name().to_string()))
    }

    /// Chooses the secondary geometry its recordings capture: `capture` "off",
    /// "pass-through", "reflected" or "both"; `scope` "flagged-materials" or "all-surfaces".
    #[pyo3(signature = (capture, scope = "flagged-materials"))]
    fn set_secondary_capture(&self, py: Python<'_>, capture: &str, scope: &str) -> PyResult<()> {
        let capture = SecondaryCapture::from_name(capture).map_err(from_sim)?;
        let scope = SecondaryScope::from_name(scope).map_err(from_sim)?;
        let mut sim = self.sim.bind(py).borrow_mut();
        sim.sim.lidar_mut(self.index).py()?.set_secondary_capture(capture, scope).py()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("<glint.Lidar {} '{}': {} beams>", self.index, self.name(py)?, self.beam_count(py)?))
    }
}

/// The seed's rule: lidars tick only while live or recording, so a scan of idle lidars is all
/// `-1`. Says so once per simulation, with the fix, through Python's `warnings`.
fn warn_if_idle(sim: &mut Simulation, py: Python<'_>) -> PyResult<()> {
    if sim.warned_idle_scan || sim.sim.lidar_live() || sim.sim.recording() {
        return Ok(());
    }
    sim.warned_idle_scan = true;
    let category = crate::errors::warning_class(py)?;
    let text = "scan() of lidars that are neither live nor recording: the lidars do not tick, so every range is -1 \
                (the seed's rule); set sim.lidar_live = True before stepping, or arm a recording \
                (sim.record())";
    py.import("warnings")?.getattr("warn")?.call1((text, category, 2))?;
    Ok(())
}

/// A scan configuration as a dict of the manifest's `[[lidar]]` keys (the keys it has).
pub(crate) fn config_dict<'py>(py: Python<'py>, config: &ScanConfig) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_value(ScanFields::of(config)).map_err(|e| raise(Class::LidarError, e.to_string()))?;
    let json = match json {
        serde_json::Value::Object(map) => {
            serde_json::Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).collect())
        }
        other => other,
    };
    from_json(py, &json)
}

/// The `[[lidar]]` keys of `fields`, a dict (`config=`), to apply to a configuration.
pub(crate) fn scan_fields(fields: &Bound<'_, PyDict>) -> PyResult<ScanFields> {
    toml::Value::Table(toml_table(fields, "config")?)
        .try_into()
        .map_err(|e: toml::de::Error| raise(Class::LidarError, format!("config: {e}")))
}
