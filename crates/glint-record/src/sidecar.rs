//! What a session writes beside its data: the JSON sidecar of each lidar file, and the
//! session's `meta/info.json`. Both are plain serde structures; the scan configuration and
//! enum values are written as glint-lidar spells them (the manifest's keys and names), so a
//! sidecar's `sensor` reads like the `[[lidar]]` table behind it.

use std::path::Path;

use glint_lidar::{LidarBinding, ScanConfig, ScanPattern, SecondaryCapture, SecondaryScope};
use serde::{Deserialize, Serialize};

use crate::RecordError;
use crate::schema::{ROW_GROUP_ROWS, columns, type_name};

/// Version of the session layout, the lidar schema and the sidecar. Readers refuse newer
/// files. Version 2 added the per-tick pose table beside each lidar file (the sidecar's
/// `poses`); version 1 sessions read as before, without poses.
pub const FORMAT_VERSION: u32 = 2;

/// The JSON sidecar beside each lidar Parquet file (same stem, `.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sidecar {
    /// Version of the session layout, the lidar schema and the sidecar (2; readers refuse newer).
    pub format_version: u32,
    /// glint's version (`CARGO_PKG_VERSION`) that wrote the file.
    pub glint_version: String,
    /// The Parquet file's name (in the same folder).
    pub file: String,
    /// Episode index.
    pub episode: u32,
    /// How the episode ended: `complete`, `interrupted`, `unstable` or `recovered` ([`crate::EpisodeStatus`]).
    pub status: String,
    /// The sensor and its configuration.
    pub sensor: SensorDescription,
    /// Beams per pattern cycle: `channels * azimuth_bins`.
    pub beam_count: u64,
    /// What `bin` and `channel` mean for this pattern.
    pub pattern: PatternDescription,
    /// Every column of the file, in order.
    pub columns: Vec<ColumnDescription>,
    /// Lidar ticks per second (the recorder's `lidar_runner_hz`).
    pub tick_hz: f64,
    /// The rate the sensor really scanned at, when its `rotation_hz` is above `tick_hz`: a
    /// sensor scans at most one revolution per tick (absent otherwise: it scanned at its
    /// `rotation_hz`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective_rotation_hz: Option<f64>,
    /// Rows in the file (one per beam cast).
    pub rows: u64,
    /// The largest row group of the file, rows.
    pub row_group_rows: u64,
    /// SHA-256 of the Parquet file, lower-case hex.
    pub sha256: String,
    /// The per-tick pose table beside the file (absent in sessions of format version 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poses: Option<PoseFile>,
    /// The beam-direction table beside the file (absent in sessions before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beams: Option<BeamFile>,
    /// The episode's seed ([`glint_lidar::episode_seed`] of the run seed and the episode):
    /// it keyed the return model's randomness and the scene's `[reset]` randomization, and
    /// export reuses it (absent in sessions before per-episode seeds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episode_seed: Option<u64>,
    /// MuJoCo's physics timestep, seconds: a tick is `tick_steps` of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physics_timestep: Option<f64>,
    /// Physics steps per lidar tick (the realised runner: `tick_hz = 1 / (tick_steps *
    /// physics_timestep)` exactly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_steps: Option<u64>,
}

/// The beam-direction table of a lidar file, as its sidecar lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BeamFile {
    /// The table's file name (in the same folder): `lidar-<Name>-NNN.beams.parquet`.
    pub file: String,
    /// Distinct pattern cycles it holds: a row of the lidar file belongs to cycle
    /// `wraps % cycles`, where `wraps` counts the rows before it whose beam index was not
    /// below the next one's (see `docs/recording.md`).
    pub cycles: u64,
    /// Rows: `cycles * beam_count`.
    pub rows: u64,
    /// SHA-256 of the table, lower-case hex.
    pub sha256: String,
    /// Its columns, in order.
    pub columns: Vec<ColumnDescription>,
}

/// The pose table of a lidar file, as its sidecar lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PoseFile {
    /// The pose table's file name (in the same folder): `lidar-<Name>-NNN.poses.parquet`.
    pub file: String,
    /// Rows: one per lidar tick of the episode, empty ticks included.
    pub rows: u64,
    /// SHA-256 of the pose table, lower-case hex.
    pub sha256: String,
    /// Its columns, in order.
    pub columns: Vec<ColumnDescription>,
}

/// One recorded sensor: its binding, with the manifest's names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SensorDescription {
    /// 0-based index in binding order.
    pub index: usize,
    /// The binding's output name.
    pub name: String,
    /// The `<Name>` of its files (`lidar-<Name>-NNN.parquet`): the name sanitised to
    /// `[A-Za-z0-9_-]`, or `lidar<index>` when empty.
    pub file_name: String,
    /// Site the sensor is attached to (wins over the body).
    pub attach_site: Option<String>,
    /// Body the sensor is attached to (used when no site is given).
    pub attach_body: Option<String>,
    /// Offset from the attach point, metres, attach frame.
    pub mount_offset: [f64; 3],
    /// Every field of the scan configuration, by the manifest's keys; validated on reading.
    pub scan: ScanConfig,
    /// Secondary geometry recorded: `off`, `pass-through`, `reflected` or `both`.
    pub secondary_capture: SecondaryCapture,
    /// Where secondary rays are cast: `flagged-materials` or `all-surfaces`.
    pub secondary_scope: SecondaryScope,
    /// Whether a video proxy was asked for.
    pub video_proxy: bool,
    /// Whether the beams met the scene's skins and flexes (geom ids `ngeom + skin`); written
    /// only when they did.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub see_skins: bool,
}

/// How to read `bin` and `channel`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PatternDescription {
    /// `spinning` or `non-repetitive`.
    pub kind: String,
    /// Non-repetitive patterns: the split of the emission index, the config's `channels`
    /// (`e = bin * emission_split + channel`, the seed's `index = bin * channels + channel`);
    /// absent for spinning ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emission_split: Option<u32>,
    /// How a row's beam is identified.
    pub beam_index: String,
    /// What `bin` holds.
    pub bin: String,
    /// What `channel` holds.
    pub channel: String,
}

/// One column of a lidar file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColumnDescription {
    /// Column name.
    pub name: String,
    /// Type: `float64`, `float32`, `uint16`, `uint8` or `int32`.
    #[serde(rename = "type")]
    pub data_type: String,
    /// Unit (`m`, `s`), or empty.
    pub unit: String,
    /// What it holds.
    pub meaning: String,
}

/// The session's `meta/info.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    /// Version of the session layout, the lidar schema and the sidecar (2; readers refuse newer).
    pub format_version: u32,
    /// glint's version that wrote the session.
    pub glint_version: String,
    /// When the session was created, UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub created_utc: String,
    /// The scene manifest's path.
    pub manifest: String,
    /// The MJCF scene's path.
    pub scene: String,
    /// The run's seed.
    pub seed: u64,
    /// Episodes asked for.
    pub episodes: u32,
    /// Simulated seconds per episode asked for.
    pub seconds_per_episode: f64,
    /// Worlds simulated side by side.
    pub worlds: usize,
    /// MuJoCo's physics timestep, seconds.
    pub physics_timestep: f64,
    /// Lidar ticks per second.
    pub lidar_runner_hz: f64,
    /// Physics steps per lidar tick: the realised runner, exactly `1 / (lidar_runner_hz *
    /// physics_timestep)` (absent in older sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_steps: Option<u64>,
    /// Lidar ticks per episode: `seconds_per_episode * lidar_runner_hz`, a whole number
    /// (absent in older sessions and when episodes have no set length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episode_ticks: Option<u64>,
    /// What moved the robot.
    pub controller: String,
    /// MuJoCo's version.
    pub mujoco_version: String,
    /// Every recorded sensor, in binding order.
    pub sensors: Vec<SensorDescription>,
    /// The manifest as resolved (its full text).
    pub manifest_text: String,
    /// The cameras whose depth stream is a debug channel, not a depth map (absent: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub debug_streams: Vec<crate::DebugStream>,
    /// The model's body tree in body order (the world first), named as the robot state
    /// table's `body/<name>/…` columns name them (absent in older sessions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bodies: Vec<BodyLink>,
    /// The sensors fixed in a body's frame, and which (absent in older sessions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<SensorMount>,
}

/// A sensor fixed in a body's frame, as `meta/info.json` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SensorMount {
    /// `lidar` or `camera`.
    pub kind: String,
    /// The lidar's file name (`lidar-<Name>-NNN`'s `<Name>`) or the camera's name.
    pub sensor: String,
    /// The body, an index into `bodies`.
    pub body: usize,
}

/// One body of the model's tree, as `meta/info.json` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BodyLink {
    /// The body's name (`body<id>` for an unnamed one).
    pub name: String,
    /// Its parent's index in the list (the world is its own parent, 0).
    pub parent: usize,
}

/// `name` sanitised for a file name (`[A-Za-z0-9_-]`, others become `_`), or `lidar<index>`
/// when empty.
pub fn sensor_file_name(name: &str, index: usize) -> String {
    if name.is_empty() {
        return format!("lidar{index}");
    }
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

impl SensorDescription {
    /// Describes binding `index`.
    pub(crate) fn of(index: usize, b: &LidarBinding) -> SensorDescription {
        SensorDescription {
            index,
            name: b.name.clone(),
            file_name: sensor_file_name(&b.name, index),
            attach_site: b.attach_site.clone(),
            attach_body: b.attach_body.clone(),
            mount_offset: b.mount_offset.to_array(),
            scan: b.scan,
            secondary_capture: b.secondary_capture,
            secondary_scope: b.secondary_scope,
            video_proxy: b.video_proxy,
            see_skins: b.see_skins,
        }
    }
}

impl PatternDescription {
    /// Describes the pattern of `c`.
    pub(crate) fn of(c: &ScanConfig) -> PatternDescription {
        match c.pattern {
            ScanPattern::Spinning => PatternDescription {
                kind: "spinning".into(),
                emission_split: None,
                beam_index: "k = bin * channels + channel; rows of one tick are in emission order: bin by bin, channels upward".into(),
                bin: "azimuth bin: azimuth = 360° * bin / azimuth_bins, from +X counter-clockwise about +Z (sensor frame)".into(),
                channel: "vertical channel: elevation = vfov_min_deg + (vfov_max_deg - vfov_min_deg) * channel / (channels - 1)".into(),
            },
            _ => PatternDescription {
                kind: "non-repetitive".into(),
                emission_split: Some(c.channels),
                beam_index: format!(
                    "e = bin * {n} + channel (the seed's index = bin * channels + channel, channels = {n}): the beam's emission index within the pattern cycle (0 to {last}), in firing order; a new cycle starts where e wraps to 0. bin and channel are the high and low parts of e, not angles; each beam's direction is in the .beams.parquet table beside this file",
                    n = c.channels,
                    last = c.beam_count().saturating_sub(1)
                ),
                bin: format!("high part of the emission index: e / {} (not an angle)", c.channels),
                channel: format!("low part of the emission index: e % {} (not a laser channel)", c.channels),
            },
        }
    }
}

impl Sidecar {
    /// The sidecar of a finished file.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        file: String,
        episode: u32,
        status: &str,
        sensor: SensorDescription,
        config: &ScanConfig,
        capture: SecondaryCapture,
        tick_hz: f64,
        rows: u64,
        sha256: String,
    ) -> Sidecar {
        let non_repetitive = !matches!(config.pattern, ScanPattern::Spinning);
        Sidecar {
            format_version: FORMAT_VERSION,
            glint_version: env!("CARGO_PKG_VERSION").into(),
            file,
            episode,
            status: status.into(),
            sensor,
            beam_count: config.beam_count() as u64,
            pattern: PatternDescription::of(config),
            columns: columns(capture, non_repetitive)
                .into_iter()
                .map(|c| ColumnDescription {
                    name: c.name.into(),
                    data_type: type_name(&c.data_type),
                    unit: c.unit.into(),
                    meaning: c.meaning.into(),
                })
                .collect(),
            tick_hz,
            effective_rotation_hz: (config.rotation_hz > tick_hz)
                .then(|| glint_lidar::effective_rotation_hz(config.rotation_hz, tick_hz)),
            rows,
            row_group_rows: ROW_GROUP_ROWS as u64,
            sha256,
            poses: None,
            beams: None,
            episode_seed: None,
            physics_timestep: None,
            tick_steps: None,
        }
    }
}

/// Checks a value read from a session's JSON: `Err` with what is wrong with it, naming the key.
fn need(ok: bool, problem: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(problem()) }
}

/// A `format_version` this glint reads: 1 to [`FORMAT_VERSION`].
fn check_format_version(v: u32) -> Result<(), String> {
    need(v <= FORMAT_VERSION, || {
        format!("it has format version {v}, newer than this glint reads ({FORMAT_VERSION}); update glint")
    })?;
    need(v >= 1, || format!("format_version is {v}, and session formats run from 1 to {FORMAT_VERSION}"))
}

/// A positive, finite rate or period named `key`.
fn check_positive(key: &str, v: f64) -> Result<(), String> {
    need(v.is_finite() && v > 0.0, || format!("{key} is {v}, and must be a positive number"))
}

impl SessionMeta {
    /// Whether the session's description can be what a run wrote: a format this glint reads,
    /// at least one world and one sensor, positive rates, a runner that realises them, sensors
    /// numbered in order with distinct file names and valid scan configurations. `Err` names
    /// the first key that cannot be (an edited or damaged `info.json`).
    pub fn check(&self) -> Result<(), String> {
        check_format_version(self.format_version)?;
        need(self.worlds >= 1, || format!("worlds is {}, and a session records at least one world", self.worlds))?;
        check_positive("physics_timestep", self.physics_timestep)?;
        check_positive("lidar_runner_hz", self.lidar_runner_hz)?;
        need(self.seconds_per_episode.is_finite() && self.seconds_per_episode >= 0.0, || {
            format!("seconds_per_episode is {}, and must be a number >= 0", self.seconds_per_episode)
        })?;
        if let Some(steps) = self.tick_steps {
            let hz = 1.0 / (steps as f64 * self.physics_timestep);
            need(steps >= 1 && (hz - self.lidar_runner_hz).abs() <= 1e-6 * self.lidar_runner_hz, || {
                format!(
                    "tick_steps is {steps}, and {steps} steps of physics_timestep {} s are not lidar_runner_hz {} Hz",
                    self.physics_timestep, self.lidar_runner_hz
                )
            })?;
        }
        for (i, s) in self.sensors.iter().enumerate() {
            s.check(i).map_err(|e| format!("sensors[{i}]: {e}"))?;
            if let Some(j) = self.sensors[..i].iter().position(|o| o.file_name == s.file_name) {
                return Err(format!("sensors[{j}] and sensors[{i}] share the file name '{}'", s.file_name));
            }
        }
        Ok(())
    }
}

impl SensorDescription {
    /// Whether the description can be sensor `index`'s: its index, a file name as glint makes
    /// them, a finite mount offset and a valid scan configuration.
    fn check(&self, index: usize) -> Result<(), String> {
        need(self.index == index, || format!("index is {}, and it is sensor {index}", self.index))?;
        need(self.file_name == sensor_file_name(&self.name, index), || {
            format!(
                "file_name is '{}', and glint names its files '{}'",
                self.file_name,
                sensor_file_name(&self.name, index)
            )
        })?;
        need(self.mount_offset.iter().all(|v| v.is_finite()), || {
            format!("mount_offset is {:?}, which is not finite", self.mount_offset)
        })?;
        self.scan.validate().map(drop).map_err(|e| format!("scan: {e}"))
    }
}

impl Sidecar {
    /// Whether the sidecar can be what the recorder wrote: a format this glint reads, a
    /// positive tick rate, a valid sensor, the beam count of its configuration, and a
    /// realised runner where it records one. `Err` names the first key that cannot be.
    pub fn check(&self) -> Result<(), String> {
        check_format_version(self.format_version)?;
        check_positive("tick_hz", self.tick_hz)?;
        self.sensor.check(self.sensor.index).map_err(|e| format!("sensor: {e}"))?;
        let beams = self.sensor.scan.beam_count() as u64;
        need(self.beam_count == beams, || {
            format!("beam_count is {}, and its sensor's scan configuration has {beams} beams", self.beam_count)
        })?;
        if let Some(dt) = self.physics_timestep {
            check_positive("physics_timestep", dt)?;
        }
        need(self.tick_steps != Some(0), || "tick_steps is 0, and a tick is at least one physics step".into())
    }
}

/// Reads a session's `meta/info.json` (`dir` is the session folder); an error naming the file
/// when it is missing or malformed, or [`RecordError::NotASession`] when `dir` has neither it
/// nor `data/`.
pub fn read_session_meta(dir: &Path) -> Result<SessionMeta, RecordError> {
    let path = dir.join("meta").join("info.json");
    if !path.exists() && !dir.join("data").is_dir() {
        return Err(RecordError::NotASession {
            path: dir.to_path_buf(),
            reason: "it has neither meta/info.json nor data/".into(),
        });
    }
    let bad = |reason: String| RecordError::Json { path: path.clone(), what: "session info", reason };
    let text = std::fs::read_to_string(&path).map_err(|e| RecordError::io("read", &path, e))?;
    let meta: SessionMeta = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    meta.check().map_err(bad)?;
    check_lidar_files_are_listed(dir, &meta).map_err(bad)?;
    Ok(meta)
}

/// Every lidar file in `data/chunk-*/` (`lidar-<file_name>-<episode>.*`) belongs to a sensor
/// `meta` lists: an edited `sensors` would otherwise hide recorded data from every reader.
fn check_lidar_files_are_listed(dir: &Path, meta: &SessionMeta) -> Result<(), String> {
    let Ok(chunks) = std::fs::read_dir(dir.join("data")) else { return Ok(()) };
    for chunk in chunks.flatten() {
        let Ok(files) = std::fs::read_dir(chunk.path()) else { continue };
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            // File names have no dots (`file_name`): the stem ends at the first.
            let stem = name.split('.').next().unwrap_or(&name);
            let Some((sensor, _episode)) = crate::session::stem_parts(stem) else { continue };
            if !meta.sensors.iter().any(|s| s.file_name == sensor) {
                let listed: Vec<&str> = meta.sensors.iter().map(|s| s.file_name.as_str()).collect();
                return Err(format!(
                    "sensors is {listed:?}, and data/{}/{name} is a file of lidar '{sensor}' it does not list",
                    chunk.file_name().to_string_lossy()
                ));
            }
        }
    }
    Ok(())
}

/// Reads and checks the sidecar at `path`: JSON of the right shape, a format this glint
/// reads, names it knows and a valid scan configuration.
pub fn read_sidecar(path: &Path) -> Result<Sidecar, RecordError> {
    let bad = |reason: String| RecordError::Json { path: path.to_path_buf(), what: "sidecar", reason };
    let text = std::fs::read_to_string(path).map_err(|e| RecordError::io("read", path, e))?;
    let sidecar: Sidecar = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    sidecar.check().map_err(bad)?;
    Ok(sidecar)
}
