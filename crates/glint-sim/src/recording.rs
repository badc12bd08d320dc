//! An armed recording: a glint-record session, and per world the episode being written.
//! A world's episode begins at its first tick after the recording is armed or the world is
//! reset, and ends at its next reset or when the recording stops, so no episode is empty.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use glam::{DMat3, DVec3};
use glint_lidar::Scan;
use glint_record::{
    CameraStream, CameraStreamInfo, Episode, EpisodeStatus, FramePose, Session, SessionInfo, TickData, VideoSettings,
};

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

/// One sensor's tick as the simulation hands it to the recording.
pub(crate) struct SensorTick<'a> {
    pub(crate) sensor: usize,
    pub(crate) time: f64,
    pub(crate) scan: &'a Scan,
    pub(crate) beams: &'a [u32],
    pub(crate) frame: (DVec3, DMat3),
    /// The seed of the world's episode.
    pub(crate) episode_seed: u64,
}

/// A camera a recording takes frames of.
#[derive(Clone, Debug)]
pub(crate) struct RecordedCamera {
    /// What its streams record.
    pub(crate) info: CameraStreamInfo,
    /// Its position in the cameras' layout.
    pub(crate) slot: usize,
    /// Lidar ticks between frames.
    pub(crate) every: u64,
}

pub(crate) struct Recording {
    session: Session,
    /// Per world, the episode being written, if one has begun.
    episodes: Vec<Option<Episode>>,
    /// Per world, its episode's camera streams (one per recorded camera) once begun.
    streams: Vec<Vec<CameraStream>>,
    cameras: Vec<RecordedCamera>,
    next_index: u32,
    totals: Vec<SensorTotals>,
}

impl Recording {
    /// Creates the session under `out` with video proxies as `video` asks.
    pub(crate) fn create(
        out: &Path,
        info: &SessionInfo,
        (video, cameras): (VideoSettings, Vec<RecordedCamera>),
        warnings: &mut Vec<Warning>,
    ) -> Result<Recording, SimError> {
        let mut session = Session::create(out, info)?;
        session.record_video(video);
        warnings.extend(session.take_warnings().into_iter().map(Warning::Recording));
        Ok(Recording {
            session,
            episodes: (0..info.worlds).map(|_| None).collect(),
            streams: (0..info.worlds).map(|_| Vec::new()).collect(),
            cameras,
            next_index: 0,
            totals: vec![SensorTotals::default(); info.sensors.len()],
        })
    }

    /// The cameras recorded.
    pub(crate) fn cameras(&self) -> &[RecordedCamera] {
        &self.cameras
    }

    /// World `world`'s episode, begun (with its camera streams) if none is open.
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

    /// Writes camera `k`'s frame of world `world` (RGB and depth as its stream records them).
    pub(crate) fn write_camera(
        &mut self,
        (world, k): (usize, usize),
        (rgb, depth): (&[u8], &[f32]),
        pose: (f64, DVec3, DMat3),
        seed: u64,
        warnings: &mut Vec<Warning>,
    ) -> Result<(), SimError> {
        self.episode(world, seed)?;
        let stream = &mut self.streams[world][k];
        let (time, pos, rot) = pose;
        let q = glam::DQuat::from_mat3(&rot);
        let frame = FramePose { frame: 0, time, pos: pos.to_array(), quat: [q.w, q.x, q.y, q.z] };
        stream.write_next(rgb, depth, frame)?;
        warnings.extend(stream.take_warnings().into_iter().map(Warning::Recording));
        Ok(())
    }

    pub(crate) fn dir(&self) -> &Path {
        self.session.dir()
    }

    /// Writes one sensor's tick of world `world`, beginning the world's episode if none is open.
    pub(crate) fn write(
        &mut self,
        world: usize,
        tick: &SensorTick,
        warnings: &mut Vec<Warning>,
    ) -> Result<(), SimError> {
        let episode = self.episode(world, tick.episode_seed)?;
        let (sensor_pos, sensor_rot) = tick.frame;
        let data = TickData { timestamp: tick.time, scan: tick.scan, beams: tick.beams, sensor_rot, sensor_pos };
        episode.write_tick(tick.sensor, &data)?;
        warnings.extend(episode.take_warnings().into_iter().map(Warning::Recording));
        Ok(())
    }

    /// Finishes world `world`'s episode, if one is open, as `status` after `length_s` simulated
    /// seconds.
    pub(crate) fn end_episode(
        &mut self,
        (world, drawn, variant): (usize, &BTreeMap<String, Vec<f64>>, Option<&str>),
        status: EpisodeStatus,
        length_s: f64,
        warnings: &mut Vec<Warning>,
    ) -> Result<(), SimError> {
        let Some(mut episode) = self.episodes[world].take() else { return Ok(()) };
        episode.attach_randomized(drawn);
        episode.attach_variant(variant);
        let dir = self.session.dir().to_path_buf();
        for stream in std::mem::take(&mut self.streams[world]) {
            let (files, stream_warnings) = stream.finish(&dir)?;
            episode.attach_camera_files(&files);
            warnings.extend(stream_warnings.into_iter().map(Warning::Recording));
        }
        let summary = episode.finish(status, length_s)?;
        for (totals, sensor) in self.totals.iter_mut().zip(&summary.sensors) {
            totals.rows += sensor.rows;
            totals.bytes += sensor.bytes;
        }
        warnings.extend(summary.warnings.into_iter().map(Warning::Recording));
        Ok(())
    }

    /// What the recording wrote (every episode finished).
    pub(crate) fn summary(&self) -> RecordingSummary {
        RecordingSummary { dir: self.dir().to_path_buf(), episodes: self.next_index, sensors: self.totals.clone() }
    }
}
