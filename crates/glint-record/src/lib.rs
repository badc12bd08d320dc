//! glint-record: lidar recordings as Parquet sessions, read back and checked.
//!
//! A [`Session`] is a folder `<output_dir>/session_<YYYYMMDD>_<HHMMSS>/` with
//! `meta/info.json` (the run: manifest, scene, seed, rates, sensors), `meta/episodes.jsonl`
//! (one line per finished episode) and, per episode and sensor,
//! `data/chunk-NNN/lidar-<Name>-NNN.parquet` with a JSON [`Sidecar`] beside it. An
//! [`Episode`] takes each sensor's live [`glint_lidar::Scan`] after every lidar tick
//! ([`TickData`]: the beams the tick cast, in emission order, and the sensor's pose) and
//! writes one row per beam cast: the seed's columns (`timestamp`, `bin`, `channel`, `range`,
//! `geom_id`, `hit`, `normal_x/y/z` in the sensor frame) and, when the binding captures them,
//! the pass-through (`sec_*`) and reflected (`refl_*`) columns; and one row per tick to the
//! file's pose table `lidar-<Name>-NNN.poses.parquet` (the sensor's world origin and
//! orientation, [`read_pose_file`]), so rows can be placed in the world again. Each tick's rows
//! are encoded column by column as a task on the rayon pool while the simulation goes on (a
//! caller on a pool thread encodes in place), zstd-compressed into memory and laid into the
//! file in row groups of [`ROW_GROUP_ROWS`] with statistics on the columns rows are selected
//! by, so memory stays flat however long an episode runs. Files are written as
//! `.parquet.partial` and renamed when the episode finishes; a killed run leaves only
//! `.partial` files, which [`check_session`] reports apart from the finished ones and
//! [`recover_session`] salvages up to their last complete row group (each row group's footer
//! is journalled beside the file as it reaches the disk, each tick's pose logged). Write
//! errors name the file; a full disk is [`RecordError::NoSpace`].
//!
//! [`export_variant`] re-processes a session's clean geometry through the return model under
//! a material bake into a variant folder (measured range, intensity, calibrated reflectivity,
//! second echo per row) with an `augmentation.json` ([`Augmentation`]) tracing it to its
//! source files, the bake and the seed; `glint export` is its command line.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use glam::DMat3;
//! use glint_core::RayCaster;
//! use glint_lidar::{LidarBinding, Lidars, ScanConfig};
//! use glint_mujoco::{Model, WorldBatch};
//! use glint_record::{EpisodeStatus, Session, SessionInfo, TickData, check_session, read_lidar_file};
//!
//! let model = Model::from_xml_str(r#"<mujoco><worldbody>
//!     <site name="lidar" pos="0 0 1"/>
//!     <geom type="box" pos="4 0 1" size="0.1 4 2"/>
//!   </worldbody></mujoco>"#)?;
//! let batch = WorldBatch::new(&model, 1)?;
//! let (scene, poses) = (model.scene(), batch.poses());
//! let scan = ScanConfig { channels: 4, azimuth_bins: 360, ..ScanConfig::default() };
//! let binding = LidarBinding { name: "front".into(), attach_site: Some("lidar".into()), scan, ..LidarBinding::default() };
//! let (mut lidars, _) = Lidars::new(scene, vec![binding.clone()], 1)?;
//! let caster = RayCaster::new(scene, poses);
//!
//! let info = SessionInfo {
//!     manifest: "robot.toml".into(), manifest_text: String::new(), scene: "robot.xml".into(),
//!     seed: 0, episodes: 1, seconds_per_episode: 0.1, worlds: 1, physics_timestep: 0.002,
//!     lidar_runner_hz: 50.0, controller: "zero".into(), mujoco_version: "3.17.0".into(),
//!     sensors: vec![binding],
//! };
//! let out = std::env::temp_dir().join(format!("glint-record-doc-{}", std::process::id()));
//! let mut session = Session::create(&out, &info)?;
//! let mut episode = session.begin_episode(0, 0)?;
//! let mut beams = Vec::new();
//! for tick in 1..=5 {
//!     let t = tick as f64 * 0.02;
//!     lidars.tick(scene, poses, &caster, 0.02, &[t], true)?;
//!     lidars.last_tick_beams(0, 0, &mut beams)?;
//!     let (pos, rot) = lidars.frame(0, 0, poses)?;
//!     let scan = lidars.scan(0, 0)?;
//!     episode.write_tick(0, &TickData { timestamp: t, scan, beams: &beams, sensor_rot: rot, sensor_pos: pos })?;
//! }
//! let summary = episode.finish(EpisodeStatus::Complete, 0.1)?;
//! // A 10 Hz sensor on a 50 Hz runner casts a fifth of its 1440 beams per tick.
//! assert_eq!(summary.sensors[0].rows, 5 * 288);
//! let table = read_lidar_file(&summary.sensors[0].path)?;
//! assert_eq!(table.timestamp[0], 0.02);
//! assert!(check_session(session.dir())?.ok());
//! # std::fs::remove_dir_all(&out)?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod beams;
mod camera;
mod dataset;
mod depth_colour;
mod draw;
mod error;
mod export;
mod files;
mod journal;
mod lock;
mod pages;
mod points;
mod poses;
mod reader;
mod recover;
mod schema;
mod session;
mod sidecar;
mod tick_tables;
mod verify;
mod video;
mod writer;

/// `docs/recording.md`, compiled so its Rust example runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/recording.md")]
pub struct RecordingGuide;

pub use beams::{
    BeamTable, BeamsDone, CycleCounter, beam_path, cycles_recorded, pattern_repeats, read_beam_file, recorded_angles,
};
pub use camera::{
    CameraSidecar, CameraStream, CameraStreamInfo, DEPTH_PNG_SCALE, DebugStream, DepthModelInfo, FramePose,
    camera_depth_dir, camera_file_name, camera_video_file, depth_codes, depth_codes_scaled, depth_frame_file,
    read_camera_sidecar, write_depth_png, write_depth_png_scaled,
};
pub use dataset::{CATALOG_FILE, CatalogMismatch, Dataset, DatasetEpisode};
pub use depth_colour::write_depth_colour_png;
pub use draw::{MaterialRead, Point, range_image_by_png, range_image_png, top_down_png};
pub use error::RecordError;
pub use export::{
    AUGMENTATION_FILE, Augmentation, BakeRecord, ExportSettings, Provenance, VariantFile, VariantTable, export_variant,
    read_augmentation, read_variant_file,
};
pub use files::{OutputFile, Overwrite, check_output, file_sha256, write_rgb_png};
pub use lock::{SessionLock, SessionUser, session_user};
pub use points::{
    BeamRow, PointCloud, PointFormat, PointFrame, RowReturn, beam_vector, cos_incidence, recorded_points, walk_returns,
    write_points,
};
pub use poses::{PoseTable, pose_path, read_pose_file};
pub use reader::{LidarReader, LidarTable, SecondaryColumns, read_lidar_file};
pub use recover::{PartialState, RecoveryReport, Salvage, SalvageOutcome, partial_state, recover_session};
pub use schema::ROW_GROUP_ROWS;
pub use session::{Episode, EpisodeStatus, EpisodeSummary, SensorSummary, Session, SessionInfo, lidar_file};
pub use sidecar::{
    BodyLink, ColumnDescription, PatternDescription, PoseFile, SensorDescription, SensorMount, SessionMeta, Sidecar,
    read_session_meta, read_sidecar, sensor_file_name,
};
pub use tick_tables::{TickTable, TickTableSidecar, TickValues, read_tick_table, read_tick_table_sidecar};
pub use verify::{EpisodeRecord, FileCheck, FileProblem, SessionReport, check_session, read_episode_records};
pub use video::{RecordWarning, VideoSettings, find_ffmpeg};
pub use writer::{MAX_BUFFERED_ROWS, TickData};
