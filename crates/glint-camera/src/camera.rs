//! Cameras: MuJoCo's camera models (fovy or sensor intrinsics, perspective or orthographic),
//! the render options of MuJoCo Warp's `create_render_context`, and the layout of every
//! camera's pixels in the caller's buffers.

use glam::DVec3;
use glint_core::{NGROUP, Scene};

use crate::{CameraError, DepthSensor};

/// The largest image side the renderer accepts.
pub const MAX_SIDE: usize = 8192;

/// The name of MJCF camera `cam` (which exists): its own, or `camera_<cam>` for an unnamed one.
pub fn camera_name(scene: &Scene, cam: usize) -> String {
    let name = &scene.cam_name[cam];
    if name.is_empty() { format!("camera_{cam}") } else { name.clone() }
}

/// MJCF camera `cam`'s own size in pixels: its `resolution`, or 256 × 256 for MuJoCo's default
/// 1 × 1.
pub fn native_resolution(scene: &Scene, cam: usize) -> (usize, usize) {
    let [w, h] = scene.cam_resolution[cam];
    if w <= 1 && h <= 1 { (256, 256) } else { (w.max(0) as usize, h.max(0) as usize) }
}

/// What to render and how, for one camera (MuJoCo Warp's `create_render_context` options).
#[derive(Clone, Debug, PartialEq)]
pub struct CameraOptions {
    /// The MJCF camera.
    pub camera: usize,
    /// Width and height in pixels; `None`: the camera's MJCF `resolution` (MuJoCo's default
    /// 1 × 1 is replaced by 256 × 256).
    pub resolution: Option<(usize, usize)>,
    /// Render colour.
    pub render_rgb: bool,
    /// Render depth (metres along the optical axis; 0 where nothing is hit).
    pub render_depth: bool,
    /// Render segmentation (geom id, −1 for background).
    pub render_seg: bool,
    /// Apply material textures.
    pub use_textures: bool,
    /// Shadows of lights with `castshadow` (by a ray toward the light).
    pub use_shadows: bool,
    /// Which of MuJoCo's six geom groups are drawn (MuJoCo's default: 0, 1 and 2).
    pub enabled_geom_groups: [bool; NGROUP],
    /// Whether the camera renders at all.
    pub cam_active: bool,
    /// How depth is measured: the clean depth by default, or a depth sensor's model.
    pub depth_sensor: DepthSensor,
    /// A vertical field of view, degrees, replacing the MJCF camera's (and its sensor
    /// intrinsics, and a world's own `cam_fovy`): a depth-sensor preset's. `None`: the
    /// MJCF camera's.
    pub fovy: Option<f64>,
}

impl CameraOptions {
    /// The outputs the MJCF camera's `output` attribute asks for (MuJoCo Warp's rule: `rgb`
    /// colour, `depth` or `distance` depth, `segmentation` segmentation; MuJoCo's default is
    /// `rgb`), MuJoCo's default groups, the camera's own resolution. Fails for a camera that
    /// does not exist.
    pub fn from_mjcf(scene: &Scene, camera: usize) -> Result<CameraOptions, CameraError> {
        let output =
            *scene.cam_output.get(camera).ok_or(CameraError::NoSuchCamera { index: camera, count: scene.ncam() })?;
        Ok(CameraOptions {
            render_rgb: output & 1 != 0,
            render_depth: output & (2 | 4) != 0,
            render_seg: output & 16 != 0,
            ..CameraOptions::new(camera)
        })
    }

    /// Every output on, MuJoCo's default groups, the camera's own resolution.
    pub fn new(camera: usize) -> CameraOptions {
        CameraOptions {
            camera,
            resolution: None,
            render_rgb: true,
            render_depth: true,
            render_seg: true,
            use_textures: true,
            use_shadows: true,
            enabled_geom_groups: [true, true, true, false, false, false],
            cam_active: true,
            depth_sensor: DepthSensor::default(),
            fovy: None,
        }
    }
}

/// How pixels map to rays for one camera.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Projection {
    /// Pinhole: focal lengths and principal point in pixels (rows top to bottom).
    Perspective {
        /// Focal lengths (x, y), pixels.
        f: [f64; 2],
        /// Principal point (x, y), pixels from the top-left corner.
        c: [f64; 2],
    },
    /// Parallel rays across a view `height` metres tall.
    Orthographic {
        /// Height of the view, metres.
        height: f64,
    },
}

/// One camera's model, resolved from the MJCF and the options.
#[derive(Clone, Debug, PartialEq)]
pub struct CameraModel {
    /// The MJCF camera.
    pub camera: usize,
    /// Its name.
    pub name: String,
    /// Width, pixels.
    pub width: usize,
    /// Height, pixels.
    pub height: usize,
    /// Projection.
    pub projection: Projection,
    /// Whether the projection comes from `fovy` (not from sensor intrinsics).
    pub fovy_based: bool,
}

impl CameraModel {
    /// The model of `options.camera` in `scene`, as MuJoCo's `mju_camIntrinsics` defines it.
    pub fn new(scene: &Scene, options: &CameraOptions) -> Result<CameraModel, CameraError> {
        let cam = options.camera;
        if cam >= scene.ncam() {
            return Err(CameraError::NoSuchCamera { index: cam, count: scene.ncam() });
        }
        let name = camera_name(scene, cam);
        let (width, height) = options.resolution.unwrap_or_else(|| native_resolution(scene, cam));
        if !(1..=MAX_SIDE).contains(&width) || !(1..=MAX_SIDE).contains(&height) {
            return Err(CameraError::Resolution { camera: name, width, height, max: MAX_SIDE });
        }
        let bad = |message: String| CameraError::Projection { camera: name.clone(), message };
        let fovy = options.fovy.unwrap_or(scene.cam_fovy[cam]);
        // A field of view given in the options replaces the sensor's intrinsics.
        let [sw, sh] = match options.fovy {
            Some(_) => [0.0, 0.0],
            None => scene.cam_sensorsize[cam].map(f64::from),
        };
        let fovy_based = !(sw > 0.0 && sh > 0.0) || scene.cam_projection[cam] == 1;
        let projection = if scene.cam_projection[cam] == 1 {
            if !(fovy.is_finite() && fovy > 0.0) {
                return Err(bad(format!("an orthographic camera needs fovy (the view's height) above 0, not {fovy}")));
            }
            Projection::Orthographic { height: fovy }
        } else {
            let [fx, fy, px, py] = scene.cam_intrinsic[cam].map(f64::from);
            let (w, h) = (width as f64, height as f64);
            if sw > 0.0 && sh > 0.0 {
                if !(fx > 0.0 && fy > 0.0) {
                    return Err(bad(format!("its focal length ({fx}, {fy}) must be above 0 with a sensor size")));
                }
                Projection::Perspective { f: [fx / sw * w, fy / sh * h], c: [px / sw * w, py / sh * h] }
            } else {
                if !(fovy.is_finite() && fovy > 0.0 && fovy < 180.0) {
                    return Err(bad(format!("fovy {fovy} is out of range; use 0 to 180 degrees")));
                }
                let f = 0.5 / (fovy.to_radians() / 2.0).tan() * h;
                Projection::Perspective { f: [f, f], c: [w / 2.0, h / 2.0] }
            }
        };
        Ok(CameraModel { camera: cam, name, width, height, projection, fovy_based })
    }

    /// The same camera with another `fovy` (a world's own, MuJoCo Warp's batched `cam_fovy`):
    /// it changes fovy-based perspective and orthographic cameras; a camera given by sensor
    /// intrinsics keeps them.
    pub fn with_fovy(&self, fovy: f64) -> CameraModel {
        let projection = match self.projection {
            Projection::Orthographic { .. } => Projection::Orthographic { height: fovy },
            Projection::Perspective { c, .. } if self.fovy_based => {
                let focal = 0.5 / (fovy.to_radians() / 2.0).tan() * self.height as f64;
                Projection::Perspective { f: [focal, focal], c }
            }
            p => p,
        };
        CameraModel { projection, ..self.clone() }
    }

    /// The ray of pixel (`col`, `row`)'s centre in the camera frame (MuJoCo's: looking along
    /// −Z, +Y up): an origin offset (zero for perspective) and a direction whose −Z component
    /// is 1, so that a hit's distance in its units is the depth along the optical axis.
    #[inline]
    pub fn pixel_ray(&self, col: usize, row: usize) -> (DVec3, DVec3) {
        self.ray_at(col as f64 + 0.5, row as f64 + 0.5)
    }

    /// [`CameraModel::pixel_ray`] through image point `(u, v)`, in pixels from the image's
    /// top left corner (a pixel's centre is at `col + 0.5, row + 0.5`).
    #[inline]
    pub fn ray_at(&self, u: f64, v: f64) -> (DVec3, DVec3) {
        match self.projection {
            Projection::Perspective { f, c } => (DVec3::ZERO, DVec3::new((u - c[0]) / f[0], (c[1] - v) / f[1], -1.0)),
            Projection::Orthographic { height } => {
                let scale = height / self.height as f64;
                let x = (u - self.width as f64 / 2.0) * scale;
                let y = (self.height as f64 / 2.0 - v) * scale;
                (DVec3::new(x, y, 0.0), DVec3::NEG_Z)
            }
        }
    }

    /// The angle one pixel subtends at the image centre (radians), or for orthographic
    /// cameras its size in metres: how far apart neighbouring rays land, for texture filtering.
    pub fn pixel_footprint(&self) -> (f64, bool) {
        match self.projection {
            Projection::Perspective { f, .. } => (1.0 / f[0].min(f[1]), false),
            Projection::Orthographic { height } => (height / self.height as f64, true),
        }
    }
}

/// Where each camera's pixels sit in the caller's buffers: per world, the cameras' images one
/// after another (MuJoCo Warp's stacked layout with per-camera offsets).
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// The active cameras, in the order they are stacked.
    pub cameras: Vec<(CameraModel, CameraOptions)>,
    /// Per camera, the index of its first pixel within a world's block.
    pub offsets: Vec<usize>,
    /// Pixels per world (all cameras).
    pub pixels_per_world: usize,
}

/// A depth-sensor model needs a valid setting, the depth output and a pinhole camera.
fn check_depth_sensor(model: &CameraModel, o: &CameraOptions) -> Result<(), CameraError> {
    if !o.depth_sensor.is_active() {
        return Ok(());
    }
    let refuse = |message: &str| Err(CameraError::Projection { camera: model.name.clone(), message: message.into() });
    o.depth_sensor
        .validate()
        .map_err(|e| CameraError::Projection { camera: model.name.clone(), message: e.to_string() })?;
    if !o.render_depth {
        return refuse("has a depth sensor model but no depth output; add \"depth\" to its outputs");
    }
    if !matches!(model.projection, Projection::Perspective { .. }) {
        return refuse("is orthographic, and a depth sensor triangulates through a pinhole; use a perspective camera");
    }
    Ok(())
}

impl Layout {
    /// The layout of every active camera of `options`.
    pub fn new(scene: &Scene, options: &[CameraOptions]) -> Result<Layout, CameraError> {
        let mut cameras = Vec::new();
        let mut offsets = Vec::new();
        let mut pixels = 0;
        for o in options.iter().filter(|o| o.cam_active) {
            let model = CameraModel::new(scene, o)?;
            check_depth_sensor(&model, o)?;
            if cameras.iter().any(|(m, _): &(CameraModel, CameraOptions)| m.camera == o.camera) {
                return Err(CameraError::Projection {
                    camera: model.name,
                    message: "is bound twice; bind each camera once".into(),
                });
            }
            offsets.push(pixels);
            pixels += model.width * model.height;
            cameras.push((model, o.clone()));
        }
        Ok(Layout { cameras, offsets, pixels_per_world: pixels })
    }

    /// The position of MJCF camera `camera` in the layout, or why it has none.
    pub fn slot(&self, scene: &Scene, camera: usize) -> Result<usize, CameraError> {
        if camera >= scene.ncam() {
            return Err(CameraError::NoSuchCamera { index: camera, count: scene.ncam() });
        }
        self.cameras
            .iter()
            .position(|(m, _)| m.camera == camera)
            .ok_or_else(|| CameraError::Inactive { camera: camera_name(scene, camera) })
    }
}
