//! An armed recording: a glint-record session, and per world the episode being written.
//! A world's episode begins at its first tick after the recording is armed or the world is
//! reset, and ends at its next reset or when the recording stops, so no episode is empty.

use std::path::{Path, PathBuf};

use glint_record::{
    CameraStream, CameraStreamInfo, Episode, FramePose, Session, SessionInfo, TickData, TickTable, VideoSettings,
};

use crate::outputs::{EpisodeClose, Output, TickFrame};
use crate::sensors::{Frame, SensorKind};
use crate::{SimError, Warning};

/// What to record and where (the rest comes from the scene: its manifest's `[recorder]`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordingOptions {
    /// Folder the session goes in (default: the manifest's `[recorder] output_dir`).
    pub out: Option<PathBuf>,
    /// Episodes per world the run means to record, for the session's `info.json` (0: as many
    /// as it takes).
    pub episodes: u32,
}

/// What a recording wrote, per sensor, over all its episodes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SensorTotals {
    /// Rows written (one per beam cast).
    pub rows: u64,
    /// Bytes of the finished lidar files.
    pub bytes: u64,
}

/// A finished recording.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordingSummary {
    /// The session folder.
    pub dir: PathBuf,
    /// Episodes written (over all worlds).
    pub episodes: u32,
    /// Per sensor, in binding order.
    pub sensors: Vec<SensorTotals>,
}

/// A camera a recording takes frames of.
#[derive(Clone, Debug)]
pub struct RecordedCamera {
    /// What its streams record.
    pub info: CameraStreamInfo,
    /// Its position in the cameras' layout (a camera frame's `unit`).
    pub slot: usize,
    /// Lidar ticks between frames.
    pub every: u64,
}

impl RecordedCamera {
    /// Whether a recording takes this camera's frame at episode tick `tick` (1: the first):
    /// the first tick, then every `every` ticks.
    pub fn takes(&self, tick: u64) -> bool {
        tick >= 1 && (tick - 1).is_multiple_of(self.every)
    }
}

/// An armed recording: the Parquet session, an [`Output`] of the simulation.
pub(crate) struct Recording {
    session: Session,
    /// Per world, the episode being written, if one has begun.
    episodes: Vec<Option<Episode>>,
    /// Per world, its episode's camera streams (one per recorded camera) once begun.
    streams: Vec<Vec<CameraStream>>,
    cameras: Vec<RecordedCamera>,
    next_index: u32,
    totals: Vec<SensorTotals>,
    warnings: Vec<Warning>,
}

impl Recording {
    /// Creates the session under `out` with video proxies as `video` asks, the model's body
    /// tree and the sensors' mounts noted in its `info.json`, its episodes numbered from
    /// `first_index`.
    pub(crate) fn create(
        out: &Path,
        info: &SessionInfo,
        (video, cameras): (VideoSettings, Vec<RecordedCamera>),
        (bodies, mounts): (Vec<glint_record::BodyLink>, Vec<glint_record::SensorMount>),
        first_index: u32,
    ) -> Result<Recording, SimError> {
        let mut session = Session::create(out, info)?;
        session.note_bodies(bodies, mounts)?;
        let debug_streams = cameras
            .iter()
            .filter_map(|c| c.info.depth_sensor.as_ref().filter(|d| !d.is_depth_map()).map(|d| (c, d)))
            .map(|(c, d)| glint_record::DebugStream { camera: c.info.camera.clone(), channel: d.stream.clone() })
            .collect();
        session.note_debug_streams(debug_streams)?;
        session.record_video(video);
        let warnings = session.take_warnings().into_iter().map(Warning::Recording).collect();
        Ok(Recording {
            session,
            episodes: (0..info.worlds).map(|_| None).collect(),
            streams: (0..info.worlds).map(|_| Vec::new()).collect(),
            cameras,
            next_index: first_index,
            totals: vec![SensorTotals::default(); info.sensors.len()],
            warnings,
        })
    }

    /// The cameras recorded.
    pub(crate) fn cameras(&self) -> &[RecordedCamera] {
        &self.cameras
    }

    /// World `w`'s episode, begun (with its camera streams) if none is open.
    fn episode(&mut self, world: usize, seed: u64) -> Result<&mut Episode, SimError> {
        if self.episodes[world].is_none() {
            let index = self.next_index;
            let episode = self.session.begin_episode(index, seed)?;
            self.next_index += 1;
            let dir = self.session.dir().to_path_buf();
            self.streams[world] = self
                .cameras
                .iter()
                .map(|c| CameraStream::begin(&dir, index, c.info.clone()))
                .collect::<Result<_, _>>()?;
            self.episodes[world] = Some(episode);
        }
        Ok(self.episodes[world].as_mut().expect("begun above"))
    }

    /// The recorded camera of layout slot `slot`, if it is recorded.
    fn camera_of_slot(&self, slot: usize) -> Option<usize> {
        self.cameras.iter().position(|c| c.slot == slot)
    }

    pub(crate) fn dir(&self) -> &Path {
        self.session.dir()
    }

    /// What the recording wrote (every episode finished).
    pub(crate) fn summary(&self) -> RecordingSummary {
        RecordingSummary { dir: self.dir().to_path_buf(), episodes: self.next_index, sensors: self.totals.clone() }
    }
}

impl Output for Recording {
    /// Every lidar's, the MJCF rangefinders' and the robot state's frames; a recorded
    /// camera's on its episode's first tick and then every `every` ticks. Sensors added from
    /// Python are not part of a session.
    fn wants(&self, (kind, _): (SensorKind, usize), unit: usize, _world: usize, tick: u64) -> bool {
        match kind {
            SensorKind::Lidar | SensorKind::Rangefinder | SensorKind::State => true,
            SensorKind::Camera => self.camera_of_slot(unit).is_some_and(|k| self.cameras[k].takes(tick)),
            _ => false,
        }
    }

    /// A session records each beam's normal.
    fn reads_surfaces(&self) -> bool {
        true
    }

    fn write(&mut self, f: &TickFrame) -> Result<(), SimError> {
        let (world, seed) = (f.world, f.episode.1);
        match f.frame {
            Frame::Lidar { scan, beams, pose: (sensor_pos, sensor_rot) } => {
                let episode = self.episode(world, seed)?;
                let data = TickData { timestamp: f.time, scan, beams, sensor_rot, sensor_pos };
                episode.write_tick(f.unit, &data)?;
                let warnings = episode.take_warnings();
                self.warnings.extend(warnings.into_iter().map(Warning::Recording));
            }
            Frame::Rangefinders { values, names } => {
                self.episode(world, seed)?.write_tick_values(TickTable::Rangefinders, f.time, names, values)?;
            }
            Frame::State { values, names, .. } => {
                self.episode(world, seed)?.write_tick_values(TickTable::State, f.time, names, values)?;
            }
            Frame::Camera { rgb, depth, pose: (pos, rot), .. } => {
                let Some(k) = self.camera_of_slot(f.unit) else { return Ok(()) };
                self.episode(world, seed)?;
                let stream = &mut self.streams[world][k];
                let q = glam::DQuat::from_mat3(&rot);
                let frame = FramePose { frame: 0, time: f.time, pos: pos.to_array(), quat: [q.w, q.x, q.y, q.z] };
                stream.write_next(rgb, depth, frame)?;
                self.warnings.extend(stream.take_warnings().into_iter().map(Warning::Recording));
            }
            _ => {}
        }
        Ok(())
    }

    /// Finishes the world's episode, if one is open.
    fn end_episode(&mut self, end: &EpisodeClose) -> Result<(), SimError> {
        let Some(mut episode) = self.episodes[end.world].take() else { return Ok(()) };
        episode.attach_randomized(end.drawn);
        episode.attach_variant(end.variant);
        let dir = self.session.dir().to_path_buf();
        for stream in std::mem::take(&mut self.streams[end.world]) {
            let (files, stream_warnings) = stream.finish(&dir)?;
            episode.attach_camera_files(&files);
            self.warnings.extend(stream_warnings.into_iter().map(Warning::Recording));
        }
        let summary = episode.finish(end.status, end.length_s)?;
        for (totals, sensor) in self.totals.iter_mut().zip(&summary.sensors) {
            totals.rows += sensor.rows;
            totals.bytes += sensor.bytes;
        }
        self.warnings.extend(summary.warnings.into_iter().map(Warning::Recording));
        Ok(())
    }

    fn take_warnings(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.warnings)
    }
}
