//! A lidar on a site or body of a user's own model: each `scan` casts one whole cycle of its
//! pattern from the frames of the data it is given, through the same sensor code as a
//! simulation's lidars.

use glam::DVec3;
use glint_core::Scene;
use std::path::Path;
use std::sync::Arc;

use glint_lidar::{
    Bake, BakeSettings, LidarBinding, Lidars, MaterialLookup, MaterialTable, ScanConfig, ScanPreset, Spelled,
};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::OwnScene;
use super::model::{Frame, FrameSource};
use crate::convert::toml_table;
use crate::errors::{Class, from_sim, raise};
use crate::lidar::{Scan, config_dict, scan_fields};

/// One lidar on a user's model (`glint.Lidar` in Python).
#[pyclass(module = "glint._glint")]
pub struct OwnLidar {
    scene: Py<OwnScene>,
    lidars: Lidars,
    /// The NIR authoring given (`materials=`): the return model runs when it is set.
    materials: Option<MaterialTable>,
    /// The bake of `materials`, made from the first data scanned.
    bake: Option<Arc<Bake>>,
    /// The noise seed of the return model.
    seed: u64,
}

fn lidar_error(e: glint_lidar::LidarError) -> PyErr {
    from_sim(e)
}

/// The scan configuration: the preset's (or glint's default), then `config`'s keys.
fn scan_config(preset: Option<&str>, config: Option<&Bound<'_, PyDict>>) -> PyResult<ScanConfig> {
    let mut scan = ScanConfig::default();
    if let Some(name) = preset {
        ScanPreset::from_name(name).map_err(|e| lidar_error(e.into()))?.apply(&mut scan);
    }
    if let Some(config) = config {
        scan_fields(config)?.apply(&mut scan).map_err(lidar_error)?;
    }
    Ok(scan)
}

impl OwnLidar {
    /// The frame kind its attach point reads.
    fn attach_frame(&self) -> (Frame, String) {
        let binding = self.lidars.binding(0).expect("one sensor");
        match (&binding.attach_site, &binding.attach_body) {
            (Some(site), _) => (Frame::Site, format!("the lidar is on site '{site}'")),
            (None, Some(body)) => (Frame::Body, format!("the lidar is on body '{body}'")),
            (None, None) => (Frame::Body, "the lidar has no attach point".into()),
        }
    }

    /// Scans every world of the scene's current frames: one whole cycle each; `material`
    /// reports the return model's measurement.
    fn cast(&mut self, py: Python<'_>, scene: &OwnScene, times: &[f64], material: bool) -> PyResult<Scan> {
        let nworld = scene.poses.nworld;
        if material && self.materials.is_none() {
            return Err(raise(
                Class::BakeError,
                "scan(material=True) needs the NIR materials: give glint.Lidar(..., materials={name: {preset: ...}})",
            ));
        }
        if self.lidars.nworld() != nworld {
            self.rebind(&scene.model.scene, nworld)?;
        }
        self.ensure_bake(scene)?;
        let config = self.lidars.config(0).map_err(lidar_error)?;
        // One whole cycle per call: the runner's tick is the cycle's length.
        let dt = if config.rotation_hz > 0.0 { 1.0 / config.rotation_hz } else { 1.0 };
        let (model_scene, poses, caster, lidars) = (&*scene.model.scene, &scene.poses, &scene.caster, &mut self.lidars);
        py.detach(|| lidars.tick(model_scene, poses, caster, dt, times, true)).map_err(lidar_error)?;
        let beams = self.lidars.beam_count(0).map_err(lidar_error)?;
        let mut channels: [Vec<f32>; 4] = std::array::from_fn(|_| Vec::with_capacity(nworld * beams));
        let mut geomid = Vec::with_capacity(nworld * beams);
        for w in 0..nworld {
            let scan = self.lidars.scan(0, w).map_err(lidar_error)?;
            match scan.returns.as_ref().filter(|_| material) {
                Some(r) => {
                    let measured = [&r.range, &r.secondary_range, &r.intensity, &r.reflectivity];
                    for (out, values) in channels.iter_mut().zip(measured) {
                        out.extend_from_slice(values);
                    }
                    geomid.extend_from_slice(&r.geomid);
                }
                None => {
                    channels[0].extend_from_slice(&scan.range);
                    geomid.extend_from_slice(&scan.geomid);
                }
            }
        }
        let grid = |v: Vec<f32>| {
            (v.len() == nworld * beams)
                .then(|| Array2::from_shape_vec((nworld, beams), v).expect("nworld x beams").into_pyarray(py).unbind())
        };
        let [ranges, secondary, intensity, reflectivity] = channels;
        let geomid = Array2::from_shape_vec((nworld, beams), geomid).expect("nworld x beams");
        Ok(Scan {
            ranges: grid(ranges).expect("every beam has a range"),
            secondary: grid(secondary),
            intensity: grid(intensity),
            reflectivity: grid(reflectivity),
            geomid: Some(geomid.into_pyarray(py).unbind()),
        })
    }

    /// Bakes the NIR materials from the scene as it stands at the first scan (as a
    /// simulation bakes world 0), and hands the bake to the sensor.
    fn ensure_bake(&mut self, scene: &OwnScene) -> PyResult<()> {
        let Some(table) = &self.materials else { return Ok(()) };
        if self.bake.is_none() {
            let bake = Bake::build(&scene.model.scene, &scene.poses, table, BakeSettings::default())
                .map_err(|e| raise(Class::BakeError, e.to_string()))?;
            self.bake = Some(Arc::new(bake));
            self.lidars.set_materials(self.bake.clone().map(|b| b as Arc<dyn MaterialLookup>));
        }
        Ok(())
    }

    /// The same sensor bound for `nworld` worlds.
    fn rebind(&mut self, scene: &Scene, nworld: usize) -> PyResult<()> {
        let binding = self.lidars.binding(0).map_err(lidar_error)?.clone();
        let (mut lidars, _) = Lidars::new(scene, vec![binding], nworld).map_err(lidar_error)?;
        lidars.set_keep_surfaces(self.materials.is_some());
        lidars.set_materials(self.bake.clone().map(|b| b as Arc<dyn MaterialLookup>));
        lidars.set_seed(self.seed);
        self.lidars = lidars;
        Ok(())
    }
}

#[pymethods]
impl OwnLidar {
    /// A lidar on `site` (or `body`) of `scene`'s model, configured by `preset` (a scan preset
    /// name) and then `config` (a dict of `[[lidar]]` keys), `mount_offset` metres from the
    /// attach point in its frame. `materials` (a manifest's `[materials]` as a dict: MJCF
    /// material name to NIR keys) turns on the return model, its noise keyed by `seed`.
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(
        signature = (scene, site = None, body = None, preset = None, config = None, mount_offset = (0.0, 0.0, 0.0), name = None, materials = None, seed = 0),
        text_signature = "(scene, site=None, body=None, preset=None, config=None, mount_offset=(0.0, 0.0, 0.0), name=None, materials=None, seed=0)"
    )]
    fn new(
        py: Python<'_>,
        scene: Py<OwnScene>,
        site: Option<String>,
        body: Option<String>,
        preset: Option<String>,
        config: Option<Bound<'_, PyDict>>,
        mount_offset: (f64, f64, f64),
        name: Option<String>,
        materials: Option<Bound<'_, PyDict>>,
        seed: u64,
    ) -> PyResult<OwnLidar> {
        if site.is_none() && body.is_none() {
            return Err(raise(Class::LidarError, "give the lidar a site= or a body= of the model to sit on"));
        }
        let binding = LidarBinding {
            name: name.or_else(|| site.clone()).or_else(|| body.clone()).unwrap_or_default(),
            attach_site: site,
            attach_body: body,
            mount_offset: DVec3::from(mount_offset),
            scan: scan_config(preset.as_deref(), config.as_ref())?,
            ..LidarBinding::default()
        };
        let (lidars, materials) = {
            let s = scene.borrow(py);
            let materials = match &materials {
                Some(dict) => Some(
                    glint_manifest::material_table(
                        &toml_table(dict, "materials")?,
                        &s.model.scene,
                        Path::new("glint.Lidar(materials=...)"),
                        Path::new("the model"),
                    )
                    .map_err(from_sim)?,
                ),
                None => None,
            };
            let (mut lidars, warnings) = Lidars::new(&s.model.scene, vec![binding], 1).map_err(lidar_error)?;
            // Without the return model a scan reports ranges and geoms: no hit points or
            // normals to keep.
            lidars.set_keep_surfaces(materials.is_some());
            lidars.set_seed(seed);
            let category = crate::errors::warning_class(py)?;
            for (_, w) in warnings {
                py.import("warnings")?.getattr("warn")?.call1((w.to_string(), &category, 2))?;
            }
            (lidars, materials)
        };
        Ok(OwnLidar { scene, lidars, materials, bake: None, seed })
    }

    /// Scans from the frames of `data` (a `mujoco.MjData` after `mj_forward` or `mj_step`):
    /// one whole cycle of the pattern. `Scan.ranges` and `Scan.geomid` are `(1, beam_count)`;
    /// with `material` (and `materials=` given) the return model's ranges, second echoes,
    /// intensity and calibrated reflectivity.
    #[pyo3(signature = (data, material = false))]
    fn scan(&mut self, py: Python<'_>, data: Bound<'_, PyAny>, material: bool) -> PyResult<Scan> {
        let scene = self.scene.clone_ref(py);
        let mut scene = scene.borrow_mut(py);
        scene.update(&FrameSource::Data(&data), &[])?;
        let time: f64 = data.getattr("time").and_then(|t| t.extract()).unwrap_or(0.0);
        self.cast(py, &scene, &[time], material)
    }

    /// Scans every world of a batched simulator: `geom_xpos` `(nworld, ngeom, 3)` and
    /// `geom_xmat` `(nworld, ngeom, 9)`, and the attach point's frames (`site_xpos` and
    /// `site_xmat` for a lidar on a site, `xpos` and `xmat` for one on a body). `Scan.ranges`
    /// is `(nworld, beam_count)`.
    #[pyo3(signature = (geom_xpos, geom_xmat, site_xpos = None, site_xmat = None, xpos = None, xmat = None, material = false))]
    #[allow(clippy::too_many_arguments)]
    fn scan_batch(
        &mut self,
        py: Python<'_>,
        geom_xpos: Bound<'_, PyAny>,
        geom_xmat: Bound<'_, PyAny>,
        site_xpos: Option<Bound<'_, PyAny>>,
        site_xmat: Option<Bound<'_, PyAny>>,
        xpos: Option<Bound<'_, PyAny>>,
        xmat: Option<Bound<'_, PyAny>>,
        material: bool,
    ) -> PyResult<Scan> {
        let arrays = PyDict::new(py);
        for (name, value) in [("geom_xpos", Some(geom_xpos)), ("geom_xmat", Some(geom_xmat))].into_iter().chain([
            ("site_xpos", site_xpos),
            ("site_xmat", site_xmat),
            ("xpos", xpos),
            ("xmat", xmat),
        ]) {
            arrays.set_item(name, value)?;
        }
        let (frame, why) = self.attach_frame();
        let scene = self.scene.clone_ref(py);
        let mut scene = scene.borrow_mut(py);
        let nworld = scene.update(&FrameSource::Arrays(&arrays), &[(Frame::Geom, "every scan"), (frame, &why)])?;
        self.cast(py, &scene, &vec![0.0; nworld], material)
    }

    /// Beams per cycle.
    #[getter]
    fn beam_count(&self) -> PyResult<usize> {
        self.lidars.beam_count(0).map_err(lidar_error)
    }

    /// The scan configuration as a dict of `[[lidar]]` keys.
    #[getter]
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        config_dict(py, &self.lidars.config(0).map_err(lidar_error)?)
    }

    /// The rays the last scan cast in world `world`: origin `(3,)` and unit directions
    /// `(beam_count, 3)`, world frame, in beam order; with `bodyexclude` (the body the beams
    /// pass through, `-1`: none) and `geomgroup` (six flags) they are `mj_multiRay`'s
    /// arguments for the same scan.
    #[pyo3(signature = (world = 0))]
    #[allow(clippy::type_complexity)]
    fn rays<'py>(
        &self,
        py: Python<'py>,
        world: usize,
    ) -> PyResult<(Vec<f64>, Bound<'py, PyArray2<f64>>, i32, Vec<i32>)> {
        let scene = self.scene.borrow(py);
        let (origin, rot) = self.lidars.frame(0, world, &scene.poses).map_err(lidar_error)?;
        let beams = self.lidars.beam_count(0).map_err(lidar_error)?;
        let dirs: Vec<f64> = self
            .lidars
            .beam_directions(0, world)
            .map_err(lidar_error)?
            .iter()
            .flat_map(|d| (rot * *d).to_array())
            .collect();
        let (filter, exclude) = self.lidars.ray_filter(0, &scene.model.scene).map_err(lidar_error)?;
        let groups = filter.geomgroup.map_or(vec![1; 6], |g| g.iter().map(|&b| i32::from(b)).collect());
        let dirs = Array2::from_shape_vec((beams, 3), dirs).expect("beams x 3").into_pyarray(py);
        Ok((origin.to_array().to_vec(), dirs, exclude, groups))
    }

    fn __repr__(&self) -> PyResult<String> {
        let b = self.lidars.binding(0).map_err(lidar_error)?;
        Ok(format!("<glint.Lidar '{}': {} beams>", b.name, self.beam_count()?))
    }
}
