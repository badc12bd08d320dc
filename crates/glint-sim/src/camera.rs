//! The simulation's cameras: which MJCF cameras render and how ([`CameraOptions`], from the
//! manifest's `[[camera]]` or set by the caller), the renderer with the model's textures, and
//! each world's lights from its light fields.

use glam::Vec3;
use glint_camera::{CameraOptions, Frames, Headlight, Inputs, Layout, Light, Projection, Renderer};
use glint_lidar::Continuation;
use glint_manifest::{CameraBinding, DEFAULT_RATE_HZ};
use glint_record::CameraStreamInfo;

use crate::sim::RecordedCamera;
use crate::{SimError, Simulation};

/// The cameras a simulation renders, and the renderer with the model's textures.
pub(crate) struct Cameras {
    pub(crate) layout: Layout,
    renderer: Renderer,
    /// Per camera of the layout, how many lidar ticks apart a recording takes its frames.
    pub(crate) record_every: Vec<u64>,
}

/// Every active camera's images of every world, as [`Layout`] stacks them.
#[derive(Clone, Debug)]
pub struct CameraFrames {
    /// Where each camera's pixels are.
    pub layout: Layout,
    /// Worlds.
    pub nworld: usize,
    /// 8-bit RGB, `nworld × pixels_per_world × 3`.
    pub rgb: Vec<u8>,
    /// Depth along the optical axis (metres; 0: nothing hit), `nworld × pixels_per_world`.
    pub depth: Vec<f32>,
    /// Geom id (−1: background), `nworld × pixels_per_world`.
    pub seg: Vec<i32>,
}

impl CameraFrames {
    /// Camera `slot`'s (position in the layout) image in world `world`: RGB, depth and
    /// segmentation slices with its width and height.
    pub fn image(&self, world: usize, slot: usize) -> (&[u8], &[f32], &[i32], usize, usize) {
        let (model, _) = &self.layout.cameras[slot];
        let (w, h) = (model.width, model.height);
        let start = world * self.layout.pixels_per_world + self.layout.offsets[slot];
        (
            &self.rgb[start * 3..(start + w * h) * 3],
            &self.depth[start..start + w * h],
            &self.seg[start..start + w * h],
            w,
            h,
        )
    }
}

impl Simulation {
    /// Sets which MJCF cameras render and how (exactly those given, in that order). Loads the
    /// model's textures the first time; a texture that cannot be decoded is an error naming
    /// it. Refused while a recording that takes camera frames is armed.
    pub fn set_cameras(&mut self, options: Vec<CameraOptions>) -> Result<(), SimError> {
        if self.cameras_locked() {
            return Err(SimError::Recording { what: "changing the cameras" });
        }
        let layout = Layout::new(&self.scene, &options)?;
        let mut renderer = match self.cameras.take() {
            Some(c) => c.renderer,
            None => Renderer::new(&self.model.textures()?),
        };
        renderer.set_see_through(self.depth_see_through());
        let every = self.camera_every(DEFAULT_RATE_HZ)?;
        let record_every = vec![every; layout.cameras.len()];
        self.cameras = Some(Cameras { layout, renderer, record_every });
        Ok(())
    }

    /// Whether the cameras cannot change now: a recording that takes their frames is armed.
    pub fn cameras_locked(&self) -> bool {
        self.recording.as_ref().is_some_and(|r| !r.cameras().is_empty())
    }

    /// Records MJCF camera `camera`'s frames at `rate_hz` frames per second of simulated time
    /// (a whole fraction of the runner's ticks per second; default 10).
    pub fn set_camera_rate(&mut self, camera: usize, rate_hz: f64) -> Result<(), SimError> {
        let every = self.camera_every(rate_hz)?;
        let cameras = self.cameras.as_mut().ok_or_else(|| SimError::Setting("no cameras are set".into()))?;
        let slot = cameras.layout.slot(&self.scene, camera)?;
        cameras.record_every[slot] = every;
        Ok(())
    }

    /// Lidar ticks between frames at `rate_hz`, or why that rate cannot be kept exactly.
    fn camera_every(&self, rate_hz: f64) -> Result<u64, SimError> {
        let tick_hz = 1.0 / self.runner_dt();
        let every = (tick_hz / rate_hz).round().max(1.0);
        if !(rate_hz.is_finite() && rate_hz > 0.0) || ((tick_hz / every) - rate_hz).abs() > 1e-6 * rate_hz {
            let near =
                [every - 1.0, every, every + 1.0].into_iter().filter(|&e| e >= 1.0).map(|e| format!("{}", tick_hz / e));
            return Err(SimError::Rate(format!(
                "a camera rate of {rate_hz} frames per second is not a whole fraction of the runner's {tick_hz} ticks \
                 per second; use one of {} (or change [recorder] lidar_runner_hz)",
                near.collect::<Vec<_>>().join(", ")
            )));
        }
        Ok(every as u64)
    }

    /// The layout of the cameras set, if any.
    pub fn camera_layout(&self) -> Option<&Layout> {
        self.cameras.as_ref().map(|c| &c.layout)
    }

    /// Per geom, whether depth sees through it: the geoms whose material the manifest
    /// authors as glass (`continuation = "slab"`) or water (`"medium"`), which pass the depth
    /// camera's near-infrared light as they pass the lidar's (straight on, unrefracted).
    fn depth_see_through(&self) -> Vec<bool> {
        let classes = self.setup.table.geom_classes(&self.scene.mat_name, &self.scene.geom_matid);
        classes.into_iter().map(|c| matches!(c, Some(Continuation::Slab | Continuation::Medium))).collect()
    }

    /// The render options of a manifest's `[[camera]]` binding.
    /// (Outputs the binding does not list are those the MJCF camera's `output` names.)
    pub fn camera_options(&self, binding: &CameraBinding) -> Result<CameraOptions, SimError> {
        let mjcf = CameraOptions::from_mjcf(&self.scene, self.camera_index(&binding.camera)?)?;
        let [rgb, depth, seg] = binding.outputs.unwrap_or([mjcf.render_rgb, mjcf.render_depth, mjcf.render_seg]);
        Ok(CameraOptions {
            resolution: binding.resolution,
            render_rgb: rgb,
            render_depth: depth,
            render_seg: seg,
            use_textures: binding.use_textures,
            use_shadows: binding.use_shadows,
            enabled_geom_groups: binding.geom_groups,
            ..mjcf
        })
    }

    /// MJCF camera `name`'s index, or an error naming the cameras there are.
    pub fn camera_index(&self, name: &str) -> Result<usize, SimError> {
        let names = &self.scene.cam_name;
        names.iter().position(|n| n == name).ok_or_else(|| {
            let hint = match glint_core::nearest_name(name, names.iter().map(String::as_str)) {
                Some(n) => format!("did you mean `{n}`?"),
                None if names.is_empty() => "the scene has no cameras".into(),
                None => format!("its cameras are {}", names.join(", ")),
            };
            SimError::Setting(format!("the scene has no camera named `{name}`: {hint}"))
        })
    }

    /// Renders every camera set by [`Simulation::set_cameras`] in every world into the
    /// caller's buffers (laid out as [`Simulation::camera_layout`] says).
    pub fn render_into(&mut self, frames: Frames) -> Result<(), SimError> {
        let Some(cameras) = &self.cameras else {
            return Err(SimError::Setting(
                "no cameras are set: bind them with [[camera]] in the manifest or Simulation::set_cameras".into(),
            ));
        };
        let lights: Vec<Vec<Light>> = (0..self.nworld()).map(|w| self.world_lights(w)).collect();
        let h = self.model.headlight();
        let headlight = Headlight {
            active: h.active,
            ambient: Vec3::from_array(h.ambient),
            diffuse: Vec3::from_array(h.diffuse),
            specular: Vec3::from_array(h.specular),
        };
        let poses = self.worlds.poses();
        let input =
            Inputs { scene: &self.scene, poses, caster: &self.rays, lights: &lights, headlight, fields: &self.fields };
        cameras.renderer.render(input, &cameras.layout, frames)?;
        Ok(())
    }

    /// Renders every camera set in every world into new buffers.
    pub fn render(&mut self) -> Result<CameraFrames, SimError> {
        let layout = self.camera_layout().cloned().ok_or_else(|| {
            SimError::Setting(
                "no cameras are set: bind them with [[camera]] in the manifest or Simulation::set_cameras".into(),
            )
        })?;
        let n = self.nworld() * layout.pixels_per_world;
        let (mut rgb, mut depth, mut seg) = (vec![0u8; n * 3], vec![0f32; n], vec![-1i32; n]);
        self.render_into(Frames { rgb: Some(&mut rgb), depth: Some(&mut depth), seg: Some(&mut seg) })?;
        Ok(CameraFrames { layout, nworld: self.nworld(), rgb, depth, seg })
    }

    /// The cameras a new recording takes frames of: every camera set, with its rate.
    pub(crate) fn recorded_cameras(&self) -> Vec<RecordedCamera> {
        let Some(cameras) = &self.cameras else { return Vec::new() };
        let tick_hz = 1.0 / self.runner_dt();
        cameras
            .layout
            .cameras
            .iter()
            .enumerate()
            .map(|(slot, (model, options))| RecordedCamera {
                info: CameraStreamInfo {
                    camera: model.name.clone(),
                    width: model.width,
                    height: model.height,
                    fps: tick_hz / cameras.record_every[slot] as f64,
                    intrinsics: match model.projection {
                        Projection::Perspective { f, c } => Some([f[0], f[1], c[0], c[1]]),
                        Projection::Orthographic { .. } => None,
                    },
                    rgb: options.render_rgb,
                    depth: options.render_depth,
                },
                slot,
                every: cameras.record_every[slot],
            })
            .collect()
    }

    /// Renders and records the cameras whose frame is due after this tick (each world's
    /// first tick of an episode, then every `every` ticks).
    pub(crate) fn record_cameras(&mut self, times: &[f64]) -> Result<(), SimError> {
        let Some(recording) = &self.recording else { return Ok(()) };
        let due: Vec<(usize, usize)> = (0..self.nworld())
            .flat_map(|w| {
                let ticks = self.clocks_ticks(w);
                recording
                    .cameras()
                    .iter()
                    .enumerate()
                    .filter(move |(_, c)| ticks >= 1 && (ticks - 1).is_multiple_of(c.every))
                    .map(move |(k, _)| (w, k))
            })
            .collect();
        if due.is_empty() {
            return Ok(());
        }
        let frames = self.render()?;
        let ncam = self.scene.ncam();
        for (w, k) in due {
            let seed = self.world_episode_seed(w);
            let Some(recording) = &mut self.recording else { break };
            let slot = recording.cameras()[k].slot;
            let camera = frames.layout.cameras[slot].0.camera;
            let (rgb, depth, _, _, _) = frames.image(w, slot);
            let poses = self.worlds.poses();
            let pose = (times[w], poses.cam_xpos[w * ncam + camera], poses.cam_xmat[w * ncam + camera]);
            recording.write_camera((w, k), (rgb, depth), pose, seed, &mut self.warnings)?;
        }
        Ok(())
    }

    /// World `w`'s active lights, with its light fields, as the renderer takes them.
    fn world_lights(&self, w: usize) -> Vec<Light> {
        let scene = &self.scene;
        (0..scene.nlight())
            .map(|i| (i, self.fields.light(scene, self.worlds.poses(), w, i)))
            .filter(|(_, state)| state.active)
            .map(|(i, state)| Light {
                light_type: state.light_type,
                pos: state.xpos,
                dir: state.xdir,
                ambient: Vec3::from_array(scene.light_ambient[i]),
                diffuse: Vec3::from_array(state.diffuse),
                specular: Vec3::from_array(scene.light_specular[i]),
                attenuation: scene.light_attenuation[i],
                cutoff: scene.light_spot[i][0],
                exponent: scene.light_spot[i][1],
                castshadow: state.castshadow,
            })
            .collect()
    }
}
