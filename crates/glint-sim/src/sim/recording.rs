//! Arming and stopping the Parquet recording, the simulation's first output.

use std::path::PathBuf;

use glint_camera::Projection;
use glint_lidar::LidarBinding;
use glint_mujoco::Model;
use glint_record::{CameraStreamInfo, EpisodeStatus, SessionInfo, VideoSettings};

use super::Simulation;
use crate::outputs::Output;
use crate::recording::{RecordedCamera, Recording, RecordingOptions, RecordingSummary};
use crate::{SimError, Warning};

impl Simulation {
    /// Whether a recording is armed.
    pub fn recording(&self) -> bool {
        self.outputs.recording.is_some()
    }

    /// Arms a recording: a new session folder under `options.out` (default: the manifest's
    /// `[recorder] output_dir`) with video proxies as the recorder asks. Each world's episode
    /// is recorded from its next step until its next reset, its length, or
    /// [`Simulation::stop_recording`]. As the seed's recorder does when it arms, every lidar's
    /// scan configuration goes back to the scene's (changes made with `set_config` are undone)
    /// while secondary-capture choices are kept. Returns the session folder.
    pub fn arm_recording(&mut self, options: &RecordingOptions) -> Result<PathBuf, SimError> {
        if self.recording() {
            return Err(SimError::NotRecording("a recording is already armed: stop it before arming another"));
        }
        self.sensors.lidars.restore_scene_bindings()?;
        let out = options.out.clone().unwrap_or_else(|| self.setup.recorder.output_dir.clone());
        let info = self.session_info(options.episodes);
        let r = &self.setup.recorder;
        let video = VideoSettings { all_sensors: r.record_video_proxy, colour_by: r.video_colour_by };
        let cameras = self.recorded_cameras();
        crate::memory::check_recording(self.nworld(), &self.rows_per_episode())?;
        let tree = (crate::state::body_tree(&self.scene), self.sensor_mounts());
        let first = u32::try_from(self.episodes.first()).map_err(|_| {
            SimError::Output(format!(
                "episode {} cannot be numbered in a recording (at most 2^32 - 1)",
                self.episodes.first()
            ))
        })?;
        let recording = Recording::create(&out, &info, (video, cameras), tree, first)?;
        for sensor in &self.sensors.added {
            self.warnings.push(Warning::NotRecorded { sensor: sensor.name().to_string() });
        }
        let dir = recording.dir().to_path_buf();
        self.outputs.recording = Some(recording);
        self.apply_surfaces();
        Ok(dir)
    }

    /// Stops the recording: every world's open episode is finished as `status` (interrupted,
    /// when a run was stopped early; `unstable` for a world MuJoCo found unstable), and the
    /// secondary-capture choices made while recording take effect. Returns what the recording
    /// wrote.
    pub fn stop_recording(&mut self, status: EpisodeStatus) -> Result<RecordingSummary, SimError> {
        let mut recording = self.outputs.recording.take().ok_or(SimError::NotRecording("no recording is armed"))?;
        // The recording's episodes end here; the worlds' episodes go on.
        for w in 0..self.nworld() {
            if let Some(end) = super::closing(&self.episodes, &self.worlds, &self.world, w, status) {
                recording.end_episode(&end)?;
                self.warnings.extend(recording.take_warnings());
            }
        }
        let summary = recording.summary();
        self.apply_surfaces();
        self.sensors.lidars.apply_scene_capture()?;
        Ok(summary)
    }

    /// Ends every world's open episode as `status` (or `unstable`), telling every output; the
    /// next step of each world begins its next episode.
    pub fn end_episodes(&mut self, status: EpisodeStatus) -> Result<(), SimError> {
        (0..self.nworld()).try_for_each(|w| self.end_episode(w, status, false))
    }

    /// Per lidar, the rows a recorded episode gets (`None` without a set episode length):
    /// the beams it casts a tick, at most a revolution's, over the episode's ticks.
    fn rows_per_episode(&self) -> Vec<Option<u64>> {
        let hz = self.runner_hz();
        let per_tick = |b: &LidarBinding| {
            let beams = b.scan.beam_count() as f64;
            let share = if b.scan.rotation_hz > 0.0 { (b.scan.rotation_hz / hz).min(1.0) } else { 1.0 };
            (beams * share).ceil() as u64
        };
        let length = self.episodes.length();
        self.sensors.lidars.scene_bindings().iter().map(|b| length.map(|ticks| per_tick(b) * ticks)).collect()
    }

    /// The lidars a recording records, as the scene binds them (name, attachment, scan).
    pub fn recorded_lidars(&self) -> &[LidarBinding] {
        self.sensors.lidars.scene_bindings()
    }

    /// The recorded sensors fixed in a body's frame: every lidar (on its site's body), and
    /// each recorded camera MuJoCo keeps fixed in its body (`cam_mode` fixed).
    pub fn sensor_mounts(&self) -> Vec<glint_record::SensorMount> {
        let lidars = self.recorded_lidars().iter().enumerate().filter_map(|(i, b)| {
            let body = self.sensors.lidars.lidars().mount_body(i).ok()?;
            let sensor = glint_record::sensor_file_name(&b.name, i);
            Some(glint_record::SensorMount { kind: "lidar".into(), sensor, body })
        });
        let fixed = self.model.camera_fixed();
        let cameras = self.recorded_cameras().into_iter().filter_map(|c| {
            let id = self.scene.cam_name.iter().position(|n| *n == c.info.camera)?;
            fixed[id].then(|| glint_record::SensorMount {
                kind: "camera".into(),
                sensor: c.info.camera.clone(),
                body: self.scene.cam_bodyid[id].max(0) as usize,
            })
        });
        lidars.chain(cameras).collect()
    }

    fn session_info(&self, episodes: u32) -> SessionInfo {
        let manifest = self.setup.manifest.clone().unwrap_or_default();
        SessionInfo {
            manifest_text: std::fs::read_to_string(&manifest).unwrap_or_default(),
            manifest,
            scene: self.setup.scene.clone().unwrap_or_default(),
            seed: self.seed(),
            episodes: episodes * self.nworld() as u32,
            seconds_per_episode: self.episodes.length().map_or(0.0, |n| self.episodes.seconds(n)),
            worlds: self.nworld(),
            physics_timestep: self.model.timestep(),
            lidar_runner_hz: self.runner_hz(),
            controller: format!("{:?}", self.setup.controller),
            mujoco_version: Model::mujoco_version(),
            sensors: self.sensors.lidars.scene_bindings().to_vec(),
        }
    }

    /// The cameras a new recording takes frames of: every camera set, with its rate.
    pub fn recorded_cameras(&self) -> Vec<RecordedCamera> {
        let Some(cameras) = &self.sensors.cameras else { return Vec::new() };
        let tick_hz = 1.0 / self.runner_dt();
        let layout = cameras.layout();
        layout
            .cameras
            .iter()
            .enumerate()
            .map(|(slot, (model, options))| RecordedCamera {
                info: CameraStreamInfo {
                    camera: model.name.clone(),
                    width: model.width,
                    height: model.height,
                    fps: tick_hz / cameras.every(slot) as f64,
                    intrinsics: match model.projection {
                        Projection::Perspective { f, c } => Some([f[0], f[1], c[0], c[1]]),
                        Projection::Orthographic { .. } => None,
                    },
                    rgb: options.render_rgb,
                    depth: options.render_depth,
                    depth_scale: options.depth_sensor.depth_scale,
                    depth_sensor: options.depth_sensor.is_active().then(|| depth_model_info(&options.depth_sensor)),
                },
                slot,
                every: cameras.every(slot),
            })
            .collect()
    }
}

/// How a recording's sidecar describes camera depth measured by `sensor`.
fn depth_model_info(sensor: &glint_camera::DepthSensor) -> glint_record::DepthModelInfo {
    use glint_core::Spelled;
    glint_record::DepthModelInfo {
        sensor_model: sensor.model.name().into(),
        stream: sensor.debug_channel.name().into(),
        target_order: sensor.target_order.name().into(),
        fields: sensor.fields().into_iter().map(|(name, value)| (name.to_string(), value)).collect(),
    }
}
