//! The camera calls of a simulation: which MJCF cameras render and how, their recording
//! rates, and rendering every camera of every world on demand. On a step the cameras are a
//! sensor like the others ([`crate::camera_set::CameraSet`]): they render only the frames an
//! output takes.

use glint_camera::{CameraOptions, Frames, Layout, Renderer};
use glint_manifest::{CameraBinding, DEFAULT_RATE_HZ};

use super::Simulation;
use crate::SimError;
use crate::camera_set::{CameraFrames, CameraSet, RenderWorld, headlight};

impl Simulation {
    /// Sets which MJCF cameras render and how (exactly those given, in that order). Loads the
    /// model's textures the first time; a texture that cannot be decoded is an error naming
    /// it. Refused while a recording that takes camera frames is armed.
    pub fn set_cameras(&mut self, options: Vec<CameraOptions>) -> Result<(), SimError> {
        if self.cameras_locked() {
            return Err(SimError::Recording { what: "changing the cameras" });
        }
        let layout = Layout::new(&self.scene, &options)?;
        let mut renderer = match self.sensors.cameras.take() {
            Some(c) => c.into_renderer(),
            None => {
                let renderer = Renderer::new(&self.model.textures()?);
                // Said once per scene: the first time it gets cameras.
                if !self.scene.undrawn.is_empty() {
                    self.warnings.push(crate::Warning::Undrawn { what: self.scene.undrawn.clone() });
                }
                renderer
            }
        };
        renderer.set_materials(&self.scene, &self.setup.table);
        let every = self.default_camera_every();
        self.sensors.cameras = Some(CameraSet::new(layout, renderer, headlight(&self.model), self.nworld(), every));
        Ok(())
    }

    /// Whether the cameras cannot change now: a recording that takes their frames is armed.
    pub fn cameras_locked(&self) -> bool {
        self.outputs.recording.as_ref().is_some_and(|r| !r.cameras().is_empty())
    }

    /// Records MJCF camera `camera`'s frames at `rate_hz` frames per second of simulated time
    /// (a whole fraction of the runner's ticks per second; default 10).
    pub fn set_camera_rate(&mut self, camera: usize, rate_hz: f64) -> Result<(), SimError> {
        let every = self.camera_every(rate_hz)?;
        let cameras = self.sensors.cameras.as_mut().ok_or_else(|| SimError::Setting("no cameras are set".into()))?;
        let slot = cameras.layout().slot(&self.scene, camera)?;
        cameras.set_every(slot, every);
        Ok(())
    }

    /// Lidar ticks between frames at the default rate (10 per second) or, where the runner's
    /// ticks cannot keep it exactly, at the nearest rate they can, with a warning: a default,
    /// unlike a rate asked for, is not a reason to refuse a scene.
    fn default_camera_every(&mut self) -> u64 {
        if let Ok(every) = self.camera_every(DEFAULT_RATE_HZ) {
            return every;
        }
        let tick_hz = 1.0 / self.runner_dt();
        let every = (tick_hz / DEFAULT_RATE_HZ).round().max(1.0);
        let warning = crate::Warning::CameraRate { default_hz: DEFAULT_RATE_HZ, hz: tick_hz / every, tick_hz };
        self.warnings.push(warning);
        every as u64
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
        self.sensors.cameras.as_ref().map(CameraSet::layout)
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
            depth_sensor: binding.depth_sensor,
            fovy: binding.fovy,
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
        let cameras = self.sensors.cameras.as_ref().ok_or_else(no_cameras)?;
        let nworld = self.nworld();
        let seeds: Vec<u64> = (0..nworld).map(|w| self.episodes.seed(w)).collect();
        let ticks: Vec<u64> = (0..nworld).map(|w| self.episodes.ticks(w)).collect();
        let keys = crate::camera_set::depth_noise_keys(&seeds, &ticks);
        let world = RenderWorld {
            scene: &self.scene,
            poses: self.worlds.poses(),
            caster: &self.rays,
            fields: &self.world.fields,
            depth_noise: &keys,
        };
        cameras.render(&world, frames, &|_, _| true)
    }

    /// Renders every camera set in every world into new buffers.
    pub fn render(&mut self) -> Result<CameraFrames, SimError> {
        let layout = self.camera_layout().cloned().ok_or_else(no_cameras)?;
        let mut frames = CameraFrames::blank(layout, self.nworld());
        let buffers = Frames { rgb: Some(&mut frames.rgb), depth: Some(&mut frames.depth), seg: Some(&mut frames.seg) };
        self.render_into(buffers)?;
        Ok(frames)
    }
}

/// The error of a render with no cameras set.
fn no_cameras() -> SimError {
    SimError::Setting("no cameras are set: bind them with [[camera]] in the manifest or Simulation::set_cameras".into())
}
