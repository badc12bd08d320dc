//! Cameras on a user's own model, as `mujoco.Renderer` draws them: `update_scene` takes a
//! data's frames and a camera (an id, a name, `-1` for MuJoCo's default free camera, or an
//! `MjvCamera`), `render` draws colour, depth or segmentation with glint's ray tracer and
//! MuJoCo's classic shading.

use glint_camera::{CameraOptions, Frames, Inputs, Layout, Light, Renderer, SceneFields};
use numpy::ndarray::{Array3, Array4};
use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::OwnScene;
use super::model::{FRAMES, FrameSource, FreeCamera};
use crate::errors::{Class, raise};

/// MuJoCo's object types in a segmentation image (`mjtObj`).
const OBJ_GEOM: i32 = 5;
const OBJ_SKIN: i32 = 11;
const OBJ_FLEX: i32 = 9;

/// What `render` draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Rgb,
    Depth,
    Segmentation,
}

/// A renderer for a user's model (`glint.Renderer` in Python).
#[pyclass(module = "glint._glint")]
pub struct OwnRenderer {
    scene: Py<OwnScene>,
    renderer: Renderer,
    width: usize,
    height: usize,
    mode: Mode,
    /// The scene camera drawn (the free camera is the scene's last).
    camera: usize,
    /// Where the free camera stands, when it is drawn.
    free: FreeCamera,
    /// Which geom groups are drawn (`MjvOption.geomgroup`; MuJoCo's default 0, 1 and 2).
    groups: [bool; 6],
    /// The layout of the camera, mode and groups last drawn.
    layout: Option<(usize, Mode, [bool; 6], Layout)>,
    /// Whether the last update was a batch (its images keep the world axis).
    batched: bool,
}

impl OwnRenderer {
    /// The scene camera and free-camera placement `camera` asks for.
    fn choose(&self, scene: &OwnScene, camera: Option<&Bound<'_, PyAny>>) -> PyResult<(usize, FreeCamera)> {
        let model = &scene.model;
        let (free_id, default) = (model.free_camera_id(), model.free_camera);
        let Some(camera) = camera.filter(|c| !c.is_none()) else { return Ok((free_id, default)) };
        let named = |id: i64| -> PyResult<usize> {
            match id {
                -1 => Ok(free_id),
                id if (0..free_id as i64).contains(&id) => Ok(id as usize),
                _ => Err(raise(
                    Class::SettingError,
                    format!(
                        "camera {id} does not exist: the model has {free_id} cameras (ids 0 to {}), and -1 is the free camera",
                        free_id as i64 - 1
                    ),
                )),
            }
        };
        if let Ok(name) = camera.cast::<PyString>() {
            let name = name.to_str()?;
            let names = &model.scene.cam_name[..free_id];
            let id = names.iter().position(|n| n == name).ok_or_else(|| {
                let near = glint_core::nearest_name(name, names.iter().map(String::as_str))
                    .map(|n| format!(" (did you mean '{n}'?)"))
                    .unwrap_or_default();
                raise(Class::SettingError, format!("the model has no camera '{name}'{near}"))
            })?;
            return Ok((id, default));
        }
        if let Ok(id) = camera.extract::<i64>() {
            return Ok((named(id)?, default));
        }
        // An MjvCamera: free (0) or fixed (2); tracking and user cameras need MuJoCo's
        // visualiser state.
        let kind: i64 = camera.getattr("type").and_then(|t| t.extract()).map_err(|_| {
            raise(Class::SettingError, "camera must be an id, a name, -1 (the free camera) or a mujoco.MjvCamera")
        })?;
        match kind {
            0 => Ok((
                free_id,
                FreeCamera {
                    lookat: glam::DVec3::from_array(camera.getattr("lookat")?.extract()?),
                    distance: camera.getattr("distance")?.extract()?,
                    azimuth: camera.getattr("azimuth")?.extract()?,
                    elevation: camera.getattr("elevation")?.extract()?,
                    fovy: default.fovy,
                },
            )),
            2 => Ok((named(camera.getattr("fixedcamid")?.extract()?)?, default)),
            other => Err(raise(
                Class::SettingError,
                format!(
                    "an MjvCamera of type {other} (tracking or user) is not drawn by glint: pass a free (0) or fixed (2) camera, an id or a name"
                ),
            )),
        }
    }

    /// Draws the geom groups `geomgroup` flags (`None`: MuJoCo's default).
    fn set_groups(&mut self, geomgroup: Option<Vec<bool>>) -> PyResult<()> {
        self.groups = match geomgroup {
            None => CameraOptions::new(0).enabled_geom_groups,
            Some(g) if g.len() == 6 => std::array::from_fn(|i| g[i]),
            Some(g) => {
                return Err(raise(
                    Class::ShapeError,
                    format!("geomgroup has {} entries: give 6 (one per geom group)", g.len()),
                ));
            }
        };
        Ok(())
    }

    /// Takes `source`'s frames and the camera; places the free camera in every world.
    fn update(&mut self, py: Python<'_>, source: &FrameSource, camera: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let scene = self.scene.clone_ref(py);
        let mut scene = scene.borrow_mut(py);
        let (id, free) = self.choose(&scene, camera.as_ref())?;
        scene.update(source, &[])?;
        let (ncam, free_id) = (scene.model.scene.ncam(), scene.model.free_camera_id());
        let (pos, mat) = free.frame();
        for w in 0..scene.poses.nworld {
            scene.poses.cam_xpos[w * ncam + free_id] = pos;
            scene.poses.cam_xmat[w * ncam + free_id] = mat;
        }
        (self.camera, self.free) = (id, free);
        self.batched = matches!(source, FrameSource::Arrays(_));
        Ok(())
    }

    fn layout(&mut self, scene: &OwnScene) -> PyResult<&Layout> {
        let fresh =
            matches!(&self.layout, Some((c, m, g, _)) if *c == self.camera && *m == self.mode && *g == self.groups);
        if !fresh {
            let options = CameraOptions {
                resolution: Some((self.width, self.height)),
                render_rgb: self.mode == Mode::Rgb,
                render_depth: self.mode == Mode::Depth,
                render_seg: self.mode == Mode::Segmentation,
                fovy: (self.camera == scene.model.free_camera_id()).then_some(self.free.fovy),
                enabled_geom_groups: self.groups,
                ..CameraOptions::new(self.camera)
            };
            let layout =
                Layout::new(&scene.model.scene, &[options]).map_err(|e| raise(Class::SettingError, e.to_string()))?;
            self.layout = Some((self.camera, self.mode, self.groups, layout));
        }
        Ok(&self.layout.as_ref().expect("set above").3)
    }
}

#[pymethods]
impl OwnRenderer {
    /// A renderer of `height` × `width` pixels for `scene`'s model.
    #[new]
    #[pyo3(signature = (scene, height = 240, width = 320))]
    fn new(py: Python<'_>, scene: Py<OwnScene>, height: usize, width: usize) -> PyResult<OwnRenderer> {
        let max = glint_camera::MAX_SIDE;
        if !(1..=max).contains(&width) || !(1..=max).contains(&height) {
            return Err(raise(
                Class::SettingError,
                format!("a {width} × {height} image: give a width and height of 1 to {max} pixels"),
            ));
        }
        let (renderer, camera, free) = {
            let s = scene.borrow(py);
            (Renderer::new(&s.model.textures), s.model.free_camera_id(), s.model.free_camera)
        };
        Ok(OwnRenderer {
            scene,
            renderer,
            width,
            height,
            mode: Mode::Rgb,
            camera,
            free,
            groups: CameraOptions::new(0).enabled_geom_groups,
            layout: None,
            batched: false,
        })
    }

    /// Image width, pixels.
    #[getter]
    fn width(&self) -> usize {
        self.width
    }

    /// Image height, pixels.
    #[getter]
    fn height(&self) -> usize {
        self.height
    }

    /// `render` draws depth (metres along the optical axis) from now on.
    fn enable_depth_rendering(&mut self) {
        self.mode = Mode::Depth;
    }

    /// `render` draws colour again.
    fn disable_depth_rendering(&mut self) {
        if self.mode == Mode::Depth {
            self.mode = Mode::Rgb;
        }
    }

    /// `render` draws segmentation (object id and type per pixel) from now on.
    fn enable_segmentation_rendering(&mut self) {
        self.mode = Mode::Segmentation;
    }

    /// `render` draws colour again.
    fn disable_segmentation_rendering(&mut self) {
        if self.mode == Mode::Segmentation {
            self.mode = Mode::Rgb;
        }
    }

    /// Takes the frames of `data` (a `mujoco.MjData` after `mj_forward` or `mj_step`) and the
    /// camera to draw from: an id, a name, `-1` or `None` for MuJoCo's default free camera,
    /// or a `mujoco.MjvCamera` (free or fixed). `geomgroup`: six flags, the geom groups drawn
    /// (`MjvOption.geomgroup`; `None`: MuJoCo's default, groups 0 to 2).
    #[pyo3(signature = (data, camera = None, geomgroup = None))]
    fn update_scene(
        &mut self,
        py: Python<'_>,
        data: Bound<'_, PyAny>,
        camera: Option<Bound<'_, PyAny>>,
        geomgroup: Option<Vec<bool>>,
    ) -> PyResult<()> {
        self.set_groups(geomgroup)?;
        self.update(py, &FrameSource::Data(&data), camera)
    }

    /// [`OwnRenderer::update_scene`] for a batch of worlds: `mjData`'s frame arrays by name,
    /// each `(nworld, n, 3)` or `(nworld, n, 9)` (`geom_xpos` and `geom_xmat` at least; add
    /// `cam_xpos`/`cam_xmat` for a model camera, `light_xpos`/`light_xdir` for moving lights,
    /// `xpos`/`xmat` for skins, `site_xpos`/`site_xmat` for sites).
    /// `geomgroup` as in `update_scene`.
    #[pyo3(signature = (camera = None, geomgroup = None, **frames))]
    fn update_scene_batch(
        &mut self,
        py: Python<'_>,
        camera: Option<Bound<'_, PyAny>>,
        geomgroup: Option<Vec<bool>>,
        frames: Option<Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        self.set_groups(geomgroup)?;
        let frames = frames.unwrap_or_else(|| PyDict::new(py));
        let known: Vec<&str> = FRAMES.iter().flat_map(|f| [f.names().0, f.names().1]).collect();
        for key in frames.keys() {
            let key: String = key.extract()?;
            if !known.contains(&key.as_str()) {
                return Err(raise(
                    Class::ShapeError,
                    format!("update_scene_batch has no frame array '{key}': give {}", known.join(", ")),
                ));
            }
        }
        self.update(py, &FrameSource::Arrays(&frames), camera)
    }

    /// Draws the scene as the last `update_scene` left it: `(height, width, 3)` uint8 colour,
    /// `(height, width)` float32 depth (the far plane where nothing is hit, as MuJoCo), or
    /// `(height, width, 2)` int32 segmentation (object id and `mjtObj` type; `-1` for the
    /// background). After `update_scene_batch` each gains a leading world axis.
    fn render<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let scene = self.scene.clone_ref(py);
        let scene = scene.borrow(py);
        let (w, h, mode) = (self.width, self.height, self.mode);
        self.layout(&scene)?;
        let layout = &self.layout.as_ref().expect("made above").3;
        let nworld = scene.poses.nworld;
        let pixels = nworld * w * h;
        let (mut rgb, mut depth, mut seg) = (Vec::new(), Vec::new(), Vec::new());
        match mode {
            Mode::Rgb => rgb = vec![0u8; pixels * 3],
            Mode::Depth => depth = vec![0f32; pixels],
            Mode::Segmentation => seg = vec![-1i32; pixels],
        }
        let model_scene = &*scene.model.scene;
        let lights: Vec<Vec<Light>> = (0..nworld).map(|k| Light::scene_lights(model_scene, &scene.poses, k)).collect();
        let fields = SceneFields(model_scene);
        let input = Inputs {
            scene: model_scene,
            poses: &scene.poses,
            caster: &scene.caster,
            lights: &lights,
            headlight: scene.model.headlight,
            fields: &fields,
            depth_noise: &[],
        };
        let frames = Frames {
            rgb: (mode == Mode::Rgb).then_some(&mut rgb[..]),
            depth: (mode == Mode::Depth).then_some(&mut depth[..]),
            seg: (mode == Mode::Segmentation).then_some(&mut seg[..]),
        };
        let renderer = &self.renderer;
        py.detach(|| renderer.render(input, layout, frames)).map_err(|e| raise(Class::SettingError, e.to_string()))?;
        let image = match mode {
            Mode::Rgb => Array4::from_shape_vec((nworld, h, w, 3), rgb).expect("pixels").into_pyarray(py).into_any(),
            Mode::Depth => {
                let far = model_scene.zfar as f32;
                depth.iter_mut().filter(|d| **d == 0.0).for_each(|d| *d = far);
                Array3::from_shape_vec((nworld, h, w), depth).expect("pixels").into_pyarray(py).into_any()
            }
            Mode::Segmentation => {
                let typed: Vec<i32> = seg.iter().flat_map(|&g| object_of(model_scene, g)).collect();
                Array4::from_shape_vec((nworld, h, w, 2), typed).expect("pixels").into_pyarray(py).into_any()
            }
        };
        // One world (update_scene): the image alone, as mujoco.Renderer returns it.
        if !self.batched {
            return image.get_item(0);
        }
        Ok(image)
    }

    /// The ray of every pixel's centre in world `world`: origins and directions
    /// `(height, width, 3)` (world frame), and the optical axis `(3,)`: a hit `t` along a
    /// direction is at depth `t × (direction · axis)`.
    #[pyo3(signature = (world = 0))]
    #[allow(clippy::type_complexity)]
    fn pixel_rays<'py>(
        &mut self,
        py: Python<'py>,
        world: usize,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyArray1<f64>>)> {
        let scene = self.scene.clone_ref(py);
        let scene = scene.borrow(py);
        let layout = self.layout(&scene)?;
        let model = &layout.cameras[0].0;
        let ncam = scene.model.scene.ncam();
        if world >= scene.poses.nworld {
            return Err(raise(
                Class::IndexOutOfRangeError,
                format!("world {world} does not exist (there are {})", scene.poses.nworld),
            ));
        }
        let (pos, rot) =
            (scene.poses.cam_xpos[world * ncam + model.camera], scene.poses.cam_xmat[world * ncam + model.camera]);
        let (mut origins, mut dirs) =
            (Vec::with_capacity(model.width * model.height * 3), Vec::with_capacity(model.width * model.height * 3));
        for row in 0..model.height {
            for col in 0..model.width {
                let (o, d) = model.pixel_ray(col, row);
                origins.extend((pos + rot * o).to_array());
                dirs.extend((rot * d).to_array());
            }
        }
        let shape = (model.height, model.width, 3);
        let axis = (-rot.z_axis).to_array().to_vec();
        Ok((
            Array3::from_shape_vec(shape, origins).expect("pixels").into_pyarray(py).into_any(),
            Array3::from_shape_vec(shape, dirs).expect("pixels").into_pyarray(py).into_any(),
            axis.into_pyarray(py),
        ))
    }

    /// Does nothing (`mujoco.Renderer.close`): glint holds no GL context.
    fn close(&self) {}

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(&self, _a: Bound<'_, PyAny>, _b: Bound<'_, PyAny>, _c: Bound<'_, PyAny>) {}
}

/// A segmentation pixel as MuJoCo writes it: (id, `mjtObj`), (−1, −1) for the background.
fn object_of(scene: &glint_core::Scene, g: i32) -> [i32; 2] {
    let ngeom = scene.ngeom() as i32;
    if g < 0 {
        return [-1, -1];
    }
    if g < ngeom {
        return [g, OBJ_GEOM];
    }
    let k = (g - ngeom) as usize;
    match scene.skin.get(k).map(|s| s.flex) {
        Some(Some(flex)) => [flex as i32, OBJ_FLEX],
        Some(None) => [k as i32, OBJ_SKIN],
        None => [-1, -1],
    }
}
