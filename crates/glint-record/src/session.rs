//! A recording session on disk: its folder and `meta/` files, and the episodes written into
//! it, one lidar file and one pose table per sensor per episode.

use std::collections::{BTreeMap, HashSet};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use glint_lidar::{LidarBinding, Runner, ScanConfig};
use serde::Serialize;

use crate::RecordError;
use crate::beams::write_beams_beside;
use crate::journal::{GROUPS_SUFFIX, TICKS_SUFFIX};
use crate::lock::SessionLock;
use crate::poses::{PoseWriter, pose_columns};
use crate::sidecar::{FORMAT_VERSION, PoseFile, SensorDescription, SessionMeta, Sidecar};
use crate::tick_tables::{TickTable, TickTableWriter};
use crate::video::{RecordWarning, VideoProxy, VideoSettings, find_ffmpeg, frame_rate};
use crate::writer::{LidarWriter, TickData};

/// What a session records and how the run that fills it is set up (written to
/// `meta/info.json`).
#[derive(Clone, Debug, PartialEq)]
pub struct SessionInfo {
    /// The scene manifest's path.
    pub manifest: PathBuf,
    /// The manifest's text as resolved.
    pub manifest_text: String,
    /// The MJCF scene's path.
    pub scene: PathBuf,
    /// The run's seed.
    pub seed: u64,
    /// Episodes the run means to record.
    pub episodes: u32,
    /// Simulated seconds per episode.
    pub seconds_per_episode: f64,
    /// Worlds simulated side by side.
    pub worlds: usize,
    /// MuJoCo's physics timestep, seconds.
    pub physics_timestep: f64,
    /// Lidar ticks per second.
    pub lidar_runner_hz: f64,
    /// What moves the robot, in words.
    pub controller: String,
    /// MuJoCo's version.
    pub mujoco_version: String,
    /// The recorded sensors in binding order (names filled in, as [`glint_lidar::Lidars::binding`]
    /// returns them). Their scan configuration and secondary capture fix each file's columns.
    pub sensors: Vec<LidarBinding>,
}

/// How an episode ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EpisodeStatus {
    /// It ran its full length.
    Complete,
    /// It was stopped early (Ctrl-C, SIGTERM, SIGQUIT, SIGHUP): what was recorded is readable.
    Interrupted,
    /// MuJoCo found the world unstable (NaN, infinite or huge accelerations) during the
    /// episode and reset its state, so the rows after that moment follow a reset world.
    Unstable,
    /// The run ended without finishing the episode (killed, a full disk) and `glint recover`
    /// salvaged its files up to their last complete row group.
    Recovered,
}

impl EpisodeStatus {
    /// The name written to `episodes.jsonl` and the sidecars.
    pub fn name(self) -> &'static str {
        match self {
            EpisodeStatus::Complete => "complete",
            EpisodeStatus::Interrupted => "interrupted",
            EpisodeStatus::Unstable => "unstable",
            EpisodeStatus::Recovered => "recovered",
        }
    }
}

/// What one sensor's file of a finished episode holds.
#[derive(Clone, Debug, PartialEq)]
pub struct SensorSummary {
    /// Sensor index.
    pub sensor: usize,
    /// The final Parquet file.
    pub path: PathBuf,
    /// Its pose table (`lidar-<Name>-NNN.poses.parquet`).
    pub poses: PathBuf,
    /// Rows (beams cast).
    pub rows: u64,
    /// Rows with a hit.
    pub hits: u64,
    /// File size, bytes.
    pub bytes: u64,
    /// SHA-256 of the file, hex.
    pub sha256: String,
}

/// What a finished episode wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeSummary {
    /// Episode index.
    pub index: u32,
    /// How it ended.
    pub status: EpisodeStatus,
    /// Ticks recorded (the most any lidar or tick table got).
    pub ticks: u64,
    /// One entry per sensor, in sensor order.
    pub sensors: Vec<SensorSummary>,
    /// What went wrong beside the recording as it finished (a video proxy ffmpeg could not
    /// encode).
    pub warnings: Vec<RecordWarning>,
}

/// A recording session folder, `<output_dir>/session_<YYYYMMDD>_<HHMMSS>/`.
#[derive(Debug)]
pub struct Session {
    dir: PathBuf,
    sensors: Vec<SensorDescription>,
    configs: Vec<LidarBinding>,
    tick_hz: f64,
    /// The realised runner (physics steps per tick) over MuJoCo's timestep.
    runner: (Runner, f64),
    begun: HashSet<u32>,
    /// The video proxies' settings and the `ffmpeg` that encodes them, once asked for.
    video: Option<(VideoSettings, PathBuf)>,
    warnings: Vec<RecordWarning>,
    /// The session held for writing, until this and every episode begun in it are dropped.
    lock: Arc<SessionLock>,
}

/// An episode being recorded: one open lidar file per sensor.
pub struct Episode {
    dir: PathBuf,
    index: u32,
    seed: u64,
    runner: (Runner, f64),
    sensors: Vec<SensorDescription>,
    configs: Vec<LidarBinding>,
    tick_hz: f64,
    writers: Vec<LidarWriter>,
    poses: Vec<PoseWriter>,
    /// Per sensor, its video proxy if it has one; what the frames are drawn with, and how
    /// many ticks apart.
    proxies: Vec<Option<VideoProxy>>,
    video: Option<(VideoSettings, u64)>,
    warnings: Vec<RecordWarning>,
    started: Instant,
    /// Camera streams' files, relative to the session folder, for `episodes.jsonl`.
    camera_files: Vec<String>,
    /// What the episode's world drew from `[randomize]`, by `field/target`.
    randomized: BTreeMap<String, Vec<f64>>,
    /// The variant (per-world assets) the episode's world is on.
    variant: Option<String>,
    /// The session's hold, kept while the episode's files are written.
    lock: Arc<SessionLock>,
    /// The tick tables (rangefinders, robot state), each once the episode has had its values.
    tables: BTreeMap<TickTable, TickTableWriter>,
}

impl std::fmt::Debug for Episode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Episode").field("index", &self.index).field("dir", &self.dir).finish_non_exhaustive()
    }
}

/// Days since 1970-01-01 to a civil (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The current UTC time as (`YYYYMMDD_HHMMSS`, `YYYY-MM-DDTHH:MM:SSZ`).
pub(crate) fn utc_now() -> (String, String) {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    let (h, mi, se) = (s / 3600, s % 3600 / 60, s % 60);
    (format!("{y:04}{mo:02}{d:02}_{h:02}{mi:02}{se:02}"), format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{se:02}Z"))
}

/// Writes `value` as pretty JSON to `path`.
pub(crate) fn write_json(path: &Path, value: &impl Serialize) -> Result<(), RecordError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| RecordError::Io {
        action: "encode",
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    text.push('\n');
    std::fs::write(path, text).map_err(|e| RecordError::io("write", path, e))
}

/// `data/chunk-NNN/lidar-<Name>-NNN` (no extension) for episode `index`.
pub(crate) fn stem(index: u32, name: &str) -> PathBuf {
    Path::new("data").join(format!("chunk-{:03}", index / 1000)).join(format!("lidar-{name}-{index:03}"))
}

/// The sensor's file name and the episode digits of a lidar file's stem
/// (`lidar-<Name>-NNN`, no extension), the inverse of [`stem`]'s file name.
pub(crate) fn stem_parts(stem: &str) -> Option<(&str, &str)> {
    stem.strip_prefix("lidar-")?.rsplit_once('-')
}

/// The lidar file of episode `index` of the sensor whose files are named `file_name`
/// ([`SensorDescription::file_name`]), relative to the session folder:
/// `data/chunk-NNN/lidar-<Name>-NNN.parquet`.
pub fn lidar_file(index: u32, file_name: &str) -> PathBuf {
    with_suffix(&stem(index, file_name), ".parquet")
}

/// `path` with `suffix` appended to its file name.
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

impl Session {
    /// Creates `<output_dir>/session_<YYYYMMDD>_<HHMMSS>/` (UTC; a folder that exists is never
    /// reused: `_2`, `_3`… are appended), with `data/`, `meta/info.json` (glint's version,
    /// every field of `info`, the resolved manifest text) and an empty `meta/episodes.jsonl`.
    pub fn create(output_dir: &Path, info: &SessionInfo) -> Result<Session, RecordError> {
        if !(info.lidar_runner_hz.is_finite() && info.lidar_runner_hz > 0.0) {
            return Err(RecordError::Setting(format!(
                "lidar_runner_hz is {}, and must be a positive number of ticks per second",
                info.lidar_runner_hz
            )));
        }
        let runner = Runner::exact(info.physics_timestep, info.lidar_runner_hz)
            .map_err(|e| RecordError::Setting(e.to_string()))?;
        let episode_ticks =
            (info.seconds_per_episode > 0.0).then(|| (info.seconds_per_episode * info.lidar_runner_hz).round() as u64);
        let sensors: Vec<SensorDescription> =
            info.sensors.iter().enumerate().map(|(i, b)| SensorDescription::of(i, b)).collect();
        for (i, b) in info.sensors.iter().enumerate() {
            b.scan.validate().map_err(|e| RecordError::Setting(format!("lidar sensor {i}: {e}")))?;
            if let Some(j) = sensors[..i].iter().position(|s| s.file_name == sensors[i].file_name) {
                return Err(RecordError::DuplicateName { first: j, second: i, name: sensors[i].file_name.clone() });
            }
        }
        std::fs::create_dir_all(output_dir).map_err(|e| RecordError::io("create the output folder", output_dir, e))?;
        let (stamp, created_utc) = utc_now();
        let base = format!("session_{stamp}");
        let mut n = 1;
        let dir = loop {
            let name = if n == 1 { base.clone() } else { format!("{base}_{n}") };
            let dir = output_dir.join(name);
            match std::fs::create_dir(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
                Err(e) => return Err(RecordError::io("create the session folder", &dir, e)),
            }
        };
        for sub in ["meta", "data"] {
            let p = dir.join(sub);
            std::fs::create_dir(&p).map_err(|e| RecordError::io("create", &p, e))?;
        }
        // Held before anything else is written: no command salvages a session being recorded.
        let lock = Arc::new(SessionLock::exclusive(&dir, "recording", "record")?);
        let meta = SessionMeta {
            format_version: FORMAT_VERSION,
            glint_version: env!("CARGO_PKG_VERSION").into(),
            created_utc,
            manifest: info.manifest.display().to_string(),
            scene: info.scene.display().to_string(),
            seed: info.seed,
            episodes: info.episodes,
            seconds_per_episode: info.seconds_per_episode,
            worlds: info.worlds,
            physics_timestep: info.physics_timestep,
            lidar_runner_hz: info.lidar_runner_hz,
            tick_steps: Some(runner.steps as u64),
            episode_ticks,
            controller: info.controller.clone(),
            mujoco_version: info.mujoco_version.clone(),
            sensors: sensors.clone(),
            manifest_text: info.manifest_text.clone(),
            debug_streams: Vec::new(),
            bodies: Vec::new(),
            mounts: Vec::new(),
        };
        write_json(&dir.join("meta").join("info.json"), &meta)?;
        let log = dir.join("meta").join("episodes.jsonl");
        std::fs::write(&log, "").map_err(|e| RecordError::io("create", &log, e))?;
        Ok(Session {
            dir,
            sensors,
            configs: info.sensors.clone(),
            tick_hz: info.lidar_runner_hz,
            runner: (runner, info.physics_timestep),
            begun: HashSet::new(),
            video: None,
            warnings: Vec::new(),
            lock,
        })
    }

    /// The session folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Lists in `meta/info.json` the cameras whose depth stream is a debug channel.
    pub fn note_debug_streams(&mut self, streams: Vec<crate::DebugStream>) -> Result<(), RecordError> {
        if streams.is_empty() {
            return Ok(());
        }
        self.amend_meta(|meta| meta.debug_streams = streams)
    }

    /// Records the model's body tree and the sensors fixed in its bodies in `meta/info.json`
    /// (`bodies`, `mounts`), for readers that place the robot state table's body poses in a
    /// tree and hang the sensors from it (`glint export --format mcap`'s `/tf`, `/tf_static`).
    pub fn note_bodies(
        &mut self,
        bodies: Vec<crate::BodyLink>,
        mounts: Vec<crate::SensorMount>,
    ) -> Result<(), RecordError> {
        self.amend_meta(|meta| {
            meta.bodies = bodies;
            meta.mounts = mounts;
        })
    }

    /// Rewrites `meta/info.json` with `change` made.
    fn amend_meta(&self, change: impl FnOnce(&mut SessionMeta)) -> Result<(), RecordError> {
        let path = self.dir.join("meta").join("info.json");
        let text = std::fs::read_to_string(&path).map_err(|e| RecordError::io("read", &path, e))?;
        let mut meta: SessionMeta = serde_json::from_str(&text).map_err(|e| RecordError::Io {
            action: "decode",
            path: path.clone(),
            reason: e.to_string(),
        })?;
        change(&mut meta);
        write_json(&path, &meta)
    }

    /// Writes an H.264 video proxy beside each sensor's files (`lidar-<Name>-NNN.mp4`) in the
    /// episodes begun from now on: for every sensor with `settings.all_sensors`, else for those
    /// whose binding asks for one. Without `ffmpeg` the session records without them and says
    /// so once ([`RecordWarning::NoFfmpeg`], from [`Session::take_warnings`]).
    pub fn record_video(&mut self, settings: VideoSettings) {
        if !self.configs.iter().any(|b| settings.all_sensors || b.video_proxy) {
            return;
        }
        match find_ffmpeg() {
            Some(ffmpeg) => self.video = Some((settings, ffmpeg)),
            None => self.warnings.push(RecordWarning::NoFfmpeg),
        }
    }

    /// What went wrong beside the recording since the last call.
    pub fn take_warnings(&mut self) -> Vec<RecordWarning> {
        std::mem::take(&mut self.warnings)
    }

    /// Opens one file per sensor for episode `index`:
    /// `data/chunk-NNN/lidar-<Name>-NNN.parquet.partial` (chunk = `index / 1000`, NNN at least
    /// three digits) and its pose table `lidar-<Name>-NNN.poses.parquet.partial`, renamed by
    /// [`Episode::finish`]. `seed` is the episode's seed ([`glint_lidar::episode_seed`]: what
    /// keyed its randomness), written to its sidecars and `episodes.jsonl`. An error if the
    /// episode was begun before.
    pub fn begin_episode(&mut self, index: u32, seed: u64) -> Result<Episode, RecordError> {
        let stems: Vec<PathBuf> = self.sensors.iter().map(|s| self.dir.join(stem(index, &s.file_name))).collect();
        for stem in &stems {
            let groups = format!(".parquet.partial{GROUPS_SUFFIX}");
            let ticks = format!(".poses.parquet.partial{TICKS_SUFFIX}");
            for suffix in [".parquet", ".parquet.partial", ".poses.parquet", ".poses.parquet.partial", &groups, &ticks]
            {
                let p = with_suffix(stem, suffix);
                if p.exists() {
                    return Err(RecordError::EpisodeExists { index, path: p });
                }
            }
        }
        for table in TickTable::ALL {
            let path = self.dir.join(table.file(index));
            for p in [with_suffix(&path, ""), with_suffix(&path, ".partial")] {
                if p.exists() {
                    return Err(RecordError::EpisodeExists { index, path: p });
                }
            }
        }
        if self.begun.contains(&index) {
            let path = stems.first().map_or_else(|| self.dir.clone(), |s| with_suffix(s, ".parquet"));
            return Err(RecordError::EpisodeExists { index, path });
        }
        if let Some(chunk) = stems.first().and_then(|s| s.parent()) {
            std::fs::create_dir_all(chunk).map_err(|e| RecordError::io("create", chunk, e))?;
        }
        self.begun.insert(index);
        let mut writers = Vec::with_capacity(stems.len());
        let mut poses = Vec::with_capacity(stems.len());
        for (stem, b) in stems.iter().zip(&self.configs) {
            let partial = with_suffix(stem, ".parquet.partial");
            let path = with_suffix(stem, ".parquet");
            writers.push(LidarWriter::create(partial, path, b.scan, b.secondary_capture, seed)?);
            poses.push(PoseWriter::create(
                with_suffix(stem, ".poses.parquet.partial"),
                with_suffix(stem, ".poses.parquet"),
            )?);
        }
        let mut warnings = Vec::new();
        let (fps, every) = frame_rate(self.tick_hz);
        let proxies = writers
            .iter()
            .zip(&self.configs)
            .map(|(w, b)| {
                let (settings, ffmpeg) = self.video.as_ref()?;
                (settings.all_sensors || b.video_proxy).then_some(())?;
                VideoProxy::start(ffmpeg, &w.path.with_extension("mp4"), fps).map_err(|e| warnings.push(e)).ok()
            })
            .collect();
        Ok(Episode {
            dir: self.dir.clone(),
            index,
            seed,
            runner: self.runner,
            sensors: self.sensors.clone(),
            configs: self.configs.clone(),
            tick_hz: self.tick_hz,
            writers,
            poses,
            proxies,
            video: self.video.as_ref().map(|(settings, _)| (*settings, every)),
            warnings,
            started: Instant::now(),
            camera_files: Vec::new(),
            randomized: BTreeMap::new(),
            variant: None,
            lock: self.lock.clone(),
            tables: BTreeMap::new(),
        })
    }
}

/// One line of `meta/episodes.jsonl`.
#[derive(Serialize)]
pub(crate) struct EpisodeLine<'a> {
    pub(crate) index: u32,
    pub(crate) length_s: f64,
    pub(crate) duration_s: f64,
    pub(crate) ticks: u64,
    pub(crate) status: &'a str,
    /// The episode's seed (for a salvaged episode, as its files' footers recorded it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) seed: Option<u64>,
    pub(crate) files: Vec<String>,
    /// The episode's camera streams (videos, their sidecars, depth folders).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) camera_files: Vec<String>,
    /// What the episode's world drew from `[randomize]`, by `field/target`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) randomized: BTreeMap<String, Vec<f64>>,
    /// The variant (per-world assets) the episode's world was on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) variant: Option<String>,
    /// The episode's MJCF rangefinder table, relative to the session folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rangefinders: Option<String>,
    /// The episode's robot state table, relative to the session folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) state: Option<String>,
}

impl EpisodeLine<'_> {
    /// Appends the line to the session's `meta/episodes.jsonl` (`dir` is the session folder).
    pub(crate) fn append(&self, dir: &Path) -> Result<(), RecordError> {
        let log = dir.join("meta").join("episodes.jsonl");
        let mut text = serde_json::to_string(self).map_err(|e| RecordError::Io {
            action: "encode",
            path: log.clone(),
            reason: e.to_string(),
        })?;
        text.push('\n');
        let mut file = OpenOptions::new().append(true).open(&log).map_err(|e| RecordError::io("open", &log, e))?;
        file.write_all(text.as_bytes()).map_err(|e| RecordError::io("append to", &log, e))
    }
}

impl Episode {
    /// The episode index.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Appends one row per beam of `tick` to sensor `sensor`'s file, in the order of
    /// `tick.beams`, and one row (time, origin, orientation) to its pose table. The tick is
    /// checked first (beam count, beam indices, the captured secondary arrays, a finite
    /// pose); nothing is written on an error.
    pub fn write_tick(&mut self, sensor: usize, tick: &TickData) -> Result<(), RecordError> {
        let count = self.writers.len();
        let w = self.writers.get_mut(sensor).ok_or(RecordError::NoSuchSensor { index: sensor, count })?;
        if !tick.sensor_pos.is_finite() {
            return Err(RecordError::Tick { sensor, reason: "the sensor position is not finite".into() });
        }
        w.check(sensor, tick)?;
        // The pose goes first: the pose log must hold every tick whose rows may reach a
        // row group that `glint recover` salvages.
        self.poses[sensor].push(tick.timestamp, tick.sensor_pos, tick.sensor_rot)?;
        w.write_checked_tick(tick)?;
        let ticks = w.ticks;
        self.draw_frame(sensor, ticks, tick);
        Ok(())
    }

    /// Appends a frame to sensor `sensor`'s video proxy when one is due after its `ticks`-th
    /// tick; a proxy that fails is dropped with a warning.
    fn draw_frame(&mut self, sensor: usize, ticks: u64, tick: &TickData) {
        let (Some((settings, every)), Some(slot)) = (self.video, self.proxies.get_mut(sensor)) else { return };
        let Some(proxy) = slot else { return };
        if !ticks.is_multiple_of(every) {
            return;
        }
        let c = &self.configs[sensor].scan;
        let side = (2.0 * c.max_range as f32).min(30.0);
        if let Err(w) = proxy.frame(tick.scan, tick.sensor_pos, c.channels, settings.colour_by, side) {
            self.warnings.push(w);
            *slot = None;
        }
    }

    /// Appends one tick's values (one per name in `names`, as the simulation names them) to
    /// the episode's `kind` table, created at the first call
    /// (`data/chunk-NNN/<kind>-NNN.parquet`). The names must stay the same all episode.
    pub fn write_tick_values(
        &mut self,
        kind: TickTable,
        timestamp: f64,
        names: &[String],
        values: &[f64],
    ) -> Result<(), RecordError> {
        let table = match self.tables.entry(kind) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(TickTableWriter::create(kind, &self.dir, self.index, names)?)
            }
        };
        if table.names() != names {
            return Err(RecordError::Setting(format!(
                "the {} columns changed within episode {}: {:?} became {:?}",
                kind.what(),
                self.index,
                table.names(),
                names
            )));
        }
        table.push(timestamp, values)
    }

    /// Records in `episodes.jsonl` what the episode's world drew from `[randomize]`.
    pub fn attach_randomized(&mut self, drawn: &BTreeMap<String, Vec<f64>>) {
        self.randomized = drawn.clone();
    }

    /// Records in `episodes.jsonl` the variant (per-world assets) the episode's world is on.
    pub fn attach_variant(&mut self, variant: Option<&str>) {
        self.variant = variant.map(str::to_string);
    }

    /// Lists camera stream files (relative to the session folder) under the episode's
    /// `camera_files` in `episodes.jsonl`.
    pub fn attach_camera_files(&mut self, files: &[PathBuf]) {
        self.camera_files.extend(files.iter().map(|f| f.to_string_lossy().replace('\\', "/")));
    }

    /// What went wrong beside the recording (video proxies) since the last call.
    pub fn take_warnings(&mut self) -> Vec<RecordWarning> {
        std::mem::take(&mut self.warnings)
    }

    /// Where sensor `sensor`'s Parquet file will be once the episode finishes (files beside
    /// it, such as a video proxy, share its stem).
    pub fn path(&self, sensor: usize) -> Option<&Path> {
        self.writers.get(sensor).map(|w| w.path.as_path())
    }

    /// The most rows any sensor holds in memory, not yet in its file (those of the row group
    /// being filled, encoded and compressed): never more than
    /// [`crate::MAX_BUFFERED_ROWS`], however long the episode.
    pub fn buffered_rows(&self) -> usize {
        self.writers.iter().map(LidarWriter::buffered_rows).max().unwrap_or(0)
    }

    /// Finishes the episode: writes each file's and pose table's last row group and footer,
    /// writes the file's sidecar (with the SHA-256 and row count of both), renames the pose
    /// table and then the file from `.partial` (so a finished lidar file always has its pose
    /// table), and appends one line to `meta/episodes.jsonl` (`index`, `length_s`,
    /// `duration_s` (wall clock), `ticks`, `status`, `files`: the lidar files). `length_s` is
    /// the simulated time recorded.
    pub fn finish(self, status: EpisodeStatus, length_s: f64) -> Result<EpisodeSummary, RecordError> {
        let Episode {
            dir,
            index,
            seed,
            runner,
            sensors,
            configs,
            tick_hz,
            writers,
            poses,
            proxies,
            mut warnings,
            started,
            camera_files,
            randomized,
            variant,
            lock,
            tables,
            ..
        } = self;
        warnings.extend(proxies.into_iter().flatten().filter_map(|proxy| proxy.finish().err()));
        let mut summaries = Vec::with_capacity(writers.len());
        let mut ticks = 0;
        for (i, (w, p)) in writers.into_iter().zip(poses).enumerate() {
            ticks = ticks.max(w.ticks);
            let (partial, path) = (w.partial.clone(), w.path.clone());
            let done = w.close()?;
            let (pose_partial, pose_final) = (p.partial().to_path_buf(), p.path.clone());
            let pose_done = p.close()?;
            let config: &ScanConfig = &configs[i].scan;
            let beams = write_beams_beside(&path, config, done.rows)?;
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let sidecar = Sidecar::new(
                name,
                index,
                status.name(),
                sensors[i].clone(),
                config,
                configs[i].secondary_capture,
                tick_hz,
                done.rows,
                done.sha256.clone(),
            );
            let sidecar = Sidecar {
                poses: Some(PoseFile {
                    file: pose_final.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                    rows: pose_done.rows,
                    sha256: pose_done.sha256,
                    columns: pose_columns(),
                }),
                beams: Some(beams),
                episode_seed: Some(seed),
                physics_timestep: Some(runner.1),
                tick_steps: Some(runner.0.steps as u64),
                ..sidecar
            };
            write_json(&path.with_extension("json"), &sidecar)?;
            std::fs::rename(&pose_partial, &pose_final).map_err(|e| RecordError::io("rename", &pose_partial, e))?;
            std::fs::rename(&partial, &path).map_err(|e| RecordError::io("rename", &partial, e))?;
            // The files are whole under their final names: their salvage logs go.
            for side in std::iter::once(&done.journal).chain(&pose_done.log) {
                std::fs::remove_file(side).map_err(|e| RecordError::io("remove", side, e))?;
            }
            summaries.push(SensorSummary {
                sensor: i,
                poses: pose_final,
                path,
                rows: done.rows,
                hits: done.hits,
                bytes: done.bytes,
                sha256: done.sha256,
            });
        }
        let files = summaries
            .iter()
            .map(|s| s.path.strip_prefix(&dir).unwrap_or(&s.path).to_string_lossy().replace('\\', "/"))
            .collect();
        let mut written = BTreeMap::new();
        for (kind, table) in tables {
            ticks = ticks.max(table.finish(index, status.name())?.rows);
            written.insert(kind, kind.file(index).to_string_lossy().replace('\\', "/"));
        }
        let line = EpisodeLine {
            index,
            length_s,
            duration_s: started.elapsed().as_secs_f64(),
            ticks,
            status: status.name(),
            seed: Some(seed),
            files,
            camera_files,
            randomized,
            variant,
            rangefinders: written.remove(&TickTable::Rangefinders),
            state: written.remove(&TickTable::State),
        };
        line.append(&dir)?;
        drop(lock);
        Ok(EpisodeSummary { index, status, ticks, sensors: summaries, warnings })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sidecar::sensor_file_name as file_name;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(20_453), (2025, 12, 31));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn names_are_sanitised() {
        assert_eq!(file_name("front lidar/1", 0), "front_lidar_1");
        assert_eq!(file_name("", 3), "lidar3");
        assert_eq!(file_name("Mid-360_a", 0), "Mid-360_a");
        assert_eq!(stem(1234, "x"), Path::new("data/chunk-001/lidar-x-1234"));
        assert_eq!(stem(7, "x"), Path::new("data/chunk-000/lidar-x-007"));
    }
}
