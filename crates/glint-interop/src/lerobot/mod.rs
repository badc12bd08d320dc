//! A recorded session as a LeRobot v3.0 dataset (`glint export --format lerobot`), laid out
//! as LeRobot 0.6 writes one, so that `LeRobotDataset(repo_id, root=…)` loads it offline:
//!
//! | file | what |
//! |---|---|
//! | `meta/info.json` | `codebase_version` v3.0, `fps`, the features, the totals and path templates |
//! | `meta/tasks.parquet` | the one task (`--task`, default the session's scene) |
//! | `meta/episodes/chunk-000/file-000.parquet` | per episode its rows, files and statistics |
//! | `meta/stats.json` | every feature's statistics over the dataset |
//! | `data/chunk-CCC/file-FFF.parquet` | one row per frame, one file per episode |
//! | `videos/<key>/chunk-CCC/file-FFF.mp4` | one video per camera stream and episode |
//!
//! The features:
//!
//! - `observation.state` (float32): MuJoCo's `qpos` then `qvel`, named as the session's state
//!   table names them (`qpos/<joint>`, …); `action` (float32): MuJoCo's `ctrl` that the
//!   physics used right after the row's observation (the next tick's; the last row holds its
//!   own), named `ctrl/<actuator>`;
//! - `observation.lidar.<lidar>` (float32, one entry per beam of the pattern, beam index
//!   `bin × channels + channel`): the newest recorded range of every beam at the row's tick,
//!   the lidar file's `range` (`-1` on a miss, and for a beam not yet cast in the episode);
//! - `observation.images.<camera>` (video, H.264) and `observation.images.<camera>_depth`
//!   (LeRobot's depth video: its logarithmic 12-bit quantizer, HEVC lossless; invalid pixels
//!   read back as `depth_min`).
//!
//! A row is a camera frame when cameras were recorded (all at one rate), else a tick; the
//! dataset's `fps` is that rate, which must be a whole number. Row `k`'s `timestamp` is
//! `k / fps`; the dataset's episode `k` is the `k`-th episode exported.

mod stats;
mod tables;
mod video;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use glint_record::{
    CameraSidecar, Dataset, DatasetEpisode, EpisodeRecord, LidarReader, Sidecar, TickValues, camera_depth_dir,
    depth_frame_file, find_ffmpeg, read_camera_sidecar, read_pose_file, read_sidecar, read_tick_table,
};
use serde_json::{Value, json};

use crate::InteropError;
use crate::export::decode_video;
use stats::Stats;
use tables::{EpisodeMeta, VideoSpan};
use video::{DepthQuantizer, VideoKind, VideoWriter};

/// The LeRobot dataset format version written.
pub const LEROBOT_VERSION: &str = "v3.0";
/// Episodes (files) per chunk folder, as LeRobot's `chunks_size`.
const CHUNK_SIZE: u32 = 1000;
/// Frames sampled per episode for an image feature's statistics (LeRobot samples too).
const IMAGE_STAT_FRAMES: usize = 100;

/// What a LeRobot export writes.
#[derive(Clone, Debug, Default)]
pub struct LeRobotOptions {
    /// Only these episodes (all when `None`), in the session's order.
    pub episodes: Option<Vec<u32>>,
    /// The task every frame is labelled with (default: the session's scene name).
    pub task: Option<String>,
}

/// A written LeRobot dataset.
#[derive(Clone, Debug)]
pub struct LeRobotExport {
    /// The dataset's folder.
    pub dir: PathBuf,
    /// Episodes written.
    pub episodes: usize,
    /// Frames (rows) written.
    pub frames: u64,
    /// Frames per second.
    pub fps: u32,
    /// The features' keys, in `info.json`'s order.
    pub features: Vec<String>,
    /// What the dataset leaves out, and why.
    pub warnings: Vec<String>,
}

/// The robot state's columns a dataset takes.
struct StateColumns {
    /// `qpos` and `qvel` columns of the state table, and their names.
    observation: (Vec<usize>, Vec<String>),
    /// `ctrl` columns, and their names.
    action: (Vec<usize>, Vec<String>),
}

/// A camera stream that is a video feature.
struct VideoFeature {
    key: String,
    camera: String,
    kind: VideoKind,
    size: (usize, usize),
    /// Metres per recorded depth code, and the quantizer (depth only).
    depth: Option<(f64, DepthQuantizer)>,
}

/// What every episode of the dataset holds.
struct Layout {
    fps: u32,
    tick_hz: f64,
    state: Option<StateColumns>,
    /// Per lidar: its key, its file name in the session, its beams per cycle.
    lidars: Vec<(String, String, usize)>,
    videos: Vec<VideoFeature>,
}

/// One episode's rows, before they are written.
#[derive(Default)]
struct Rows {
    /// Per row, the recorded time (s since the episode began) of its tick.
    times: Vec<f64>,
    /// `(rows, observation width)` and `(rows, action width)`.
    observation: Vec<f32>,
    action: Vec<f32>,
    /// Per lidar, `(rows, beams)`.
    lidars: Vec<Vec<f32>>,
}

/// Writes the episodes of `source` (a session, or a dataset catalog over shard sessions; or
/// `options.episodes`) as one LeRobot v3.0 dataset in `out`, which must not exist yet (or be
/// empty).
pub fn export_lerobot(source: &Path, out: &Path, options: &LeRobotOptions) -> Result<LeRobotExport, InteropError> {
    if out.read_dir().is_ok_and(|mut d| d.next().is_some()) {
        return Err(InteropError::Setting(format!(
            "'{}' is not empty: an export never replaces files (choose another --out, or remove it)",
            out.display()
        )));
    }
    let dataset = Dataset::open(source)?;
    let meta = dataset.meta();
    let records = chosen_episodes(&dataset, options)?;
    let mut warnings = Vec::new();
    let layout = dataset_layout(&records, meta.lidar_runner_hz, &mut warnings)?;
    let ffmpeg = match layout.videos.is_empty() {
        true => None,
        false => Some(find_ffmpeg().ok_or_else(|| {
            InteropError::Setting(
                "the session's cameras become LeRobot video features, which ffmpeg encodes: install ffmpeg, \
                 or set GLINT_FFMPEG to one"
                    .into(),
            )
        })?),
    };
    let task = options.task.clone().unwrap_or_else(|| scene_name(&meta.scene));
    let features = features_json(&layout);
    let mut episodes = Vec::new();
    let mut first_index = 0u64;
    for (k, DatasetEpisode { session, record }) in records.iter().enumerate() {
        let k = k as u32;
        let cameras = camera_sidecars(session, record)?;
        let rows = episode_rows(session, record, &cameras, &layout)?;
        let n = rows.times.len() as u64;
        let mut episode = EpisodeMeta::new(k, n, first_index, &task);
        tables::write_data(out, &layout, &features, (k, first_index), rows, &mut episode)?;
        for video in &layout.videos {
            let ffmpeg = ffmpeg.as_deref().expect("found above");
            let span = write_video((session, record, &cameras), (out, ffmpeg), video, k, &layout)?;
            episode.videos.push(span);
        }
        first_index += n;
        episodes.push(episode);
    }
    tables::write_meta(out, &episodes, &task)?;
    let info = info_json(&layout, features, episodes.len(), first_index);
    write_json(&out.join("meta").join("info.json"), &info)?;
    write_json(&out.join("meta").join("stats.json"), &tables::dataset_stats(&episodes))?;
    let keys = info["features"].as_object().map(|f| f.keys().cloned().collect()).unwrap_or_default();
    Ok(LeRobotExport {
        dir: out.to_path_buf(),
        episodes: episodes.len(),
        frames: first_index,
        fps: layout.fps,
        features: keys,
        warnings,
    })
}

/// `scene.xml` → `scene`.
fn scene_name(scene: &str) -> String {
    Path::new(scene).file_stem().map_or_else(|| "glint session".into(), |s| s.to_string_lossy().into_owned())
}

fn chosen_episodes(dataset: &Dataset, options: &LeRobotOptions) -> Result<Vec<DatasetEpisode>, InteropError> {
    let records = dataset.episodes()?;
    if let Some(wanted) = &options.episodes
        && let Some(missing) = wanted.iter().find(|i| !records.iter().any(|r| r.record.index == **i))
    {
        return Err(InteropError::Setting(format!(
            "'{}' has no finished episode {missing} (meta/episodes.jsonl)",
            dataset.root().display()
        )));
    }
    let chosen: Vec<DatasetEpisode> =
        records.into_iter().filter(|r| options.episodes.as_ref().is_none_or(|w| w.contains(&r.record.index))).collect();
    if chosen.is_empty() {
        return Err(InteropError::Setting(format!(
            "'{}' has no finished episode to export (run `glint recover` on a killed run first)",
            dataset.root().display()
        )));
    }
    Ok(chosen)
}

/// The camera sidecars of an episode (`videos/….json`), by camera name.
fn camera_sidecars(session: &Path, record: &EpisodeRecord) -> Result<Vec<(PathBuf, CameraSidecar)>, InteropError> {
    record
        .camera_files
        .iter()
        .filter(|f| f.starts_with("videos/") && f.ends_with(".json"))
        .map(|f| {
            let path = session.join(f);
            Ok((path.clone(), read_camera_sidecar(&path)?))
        })
        .collect()
}

/// The dataset's features and rate, from its first episode; every other episode must hold
/// the same.
fn dataset_layout(
    records: &[DatasetEpisode],
    tick_hz: f64,
    warnings: &mut Vec<String>,
) -> Result<Layout, InteropError> {
    let DatasetEpisode { session, record: first } = &records[0];
    let state = match &first.state {
        Some(file) => Some(state_columns(&read_tick_table(&session.join(file))?)),
        None => {
            warnings.push(
                "the session has no robot state table (it was recorded before glint recorded one): the dataset has \
                 no observation.state and no action"
                    .into(),
            );
            None
        }
    };
    let mut lidars = Vec::new();
    for f in &first.files {
        let sidecar = read_sidecar(&session.join(f).with_extension("json"))?;
        let beams = sidecar.sensor.scan.beam_count();
        lidars.push((format!("observation.lidar.{}", sidecar.sensor.file_name), sidecar.sensor.file_name, beams));
    }
    let mut videos = Vec::new();
    let mut rates = Vec::new();
    for (_, sidecar) in camera_sidecars(session, first)? {
        let info = &sidecar.info;
        let size = (info.width, info.height);
        rates.push((info.camera.clone(), info.fps));
        if info.rgb {
            let key = format!("observation.images.{}", info.camera);
            videos.push(VideoFeature { key, camera: info.camera.clone(), kind: VideoKind::Colour, size, depth: None });
        }
        match &info.depth_sensor {
            Some(model) if !model.is_depth_map() => warnings.push(format!(
                "camera '{}' recorded the debug stream '{}', not depth: LeRobot's depth feature holds depth maps, so \
                 it is left out",
                info.camera, model.stream
            )),
            _ if info.depth => {
                let depth_max = max_depth(records, &info.camera, info.depth_scale)?.ceil().max(10.0);
                let depth = Some((info.depth_scale, DepthQuantizer::up_to(depth_max)));
                let key = format!("observation.images.{}_depth", info.camera);
                videos.push(VideoFeature { key, camera: info.camera.clone(), kind: VideoKind::Depth, size, depth });
            }
            _ => {}
        }
    }
    let rate = match rates.first() {
        Some((_, fps)) => {
            if let Some((camera, other)) = rates.iter().find(|(_, r)| (r - fps).abs() > 1e-9) {
                return Err(InteropError::Setting(format!(
                    "camera '{camera}' was recorded at {other} Hz and '{}' at {fps} Hz: a LeRobot dataset has one \
                     frame of every camera per row (record the cameras at one rate_hz)",
                    rates[0].0
                )));
            }
            *fps
        }
        None => tick_hz,
    };
    if (rate - rate.round()).abs() > 1e-6 || rate < 1.0 {
        return Err(InteropError::Setting(format!(
            "the rows come at {rate} Hz, and LeRobot's fps is a whole number: record the cameras (rate_hz) or \
             the lidars (lidar_runner_hz) at a whole rate"
        )));
    }
    Ok(Layout { fps: rate.round() as u32, tick_hz, state, lidars, videos })
}

/// `qpos` and `qvel` for the observation, `ctrl` for the action.
fn state_columns(table: &TickValues) -> StateColumns {
    let pick = |groups: &[&str]| -> (Vec<usize>, Vec<String>) {
        table
            .names
            .iter()
            .enumerate()
            .filter(|(_, n)| groups.iter().any(|g| n.starts_with(&format!("{g}/"))))
            .map(|(i, n)| (i, n.clone()))
            .unzip()
    };
    StateColumns { observation: pick(&["qpos", "qvel"]), action: pick(&["ctrl"]) }
}

/// The largest depth recorded by `camera` in `records`, metres.
fn max_depth(records: &[DatasetEpisode], camera: &str, scale: f64) -> Result<f64, InteropError> {
    let mut most = 0u16;
    for DatasetEpisode { session, record } in records {
        let dir = session.join(camera_depth_dir(record.index, camera));
        for (_, sidecar) in camera_sidecars(session, record)?.iter().filter(|(_, s)| s.info.camera == camera) {
            for f in &sidecar.frames {
                most = most.max(read_depth_codes(&depth_frame_file(&dir, f.frame))?.into_iter().max().unwrap_or(0));
            }
        }
    }
    Ok(most as f64 * scale)
}

fn read_depth_codes(file: &Path) -> Result<Vec<u16>, InteropError> {
    let img = image::open(file)
        .map_err(|e| InteropError::Setting(format!("cannot read the depth frame '{}': {e}", file.display())))?;
    Ok(img.into_luma16().into_raw())
}

/// The recorded times of an episode's rows: its cameras' frames, or else its ticks.
fn row_times(
    session: &Path,
    record: &EpisodeRecord,
    cameras: &[(PathBuf, CameraSidecar)],
    layout: &Layout,
) -> Result<Vec<f64>, InteropError> {
    if let Some((_, first)) = cameras.first() {
        let times: Vec<f64> = first.frames.iter().map(|f| f.time).collect();
        for (path, other) in &cameras[1..] {
            let theirs: Vec<f64> = other.frames.iter().map(|f| f.time).collect();
            if theirs.len() != times.len() || theirs.iter().zip(&times).any(|(a, b)| (a - b).abs() > 1e-9) {
                return Err(InteropError::Setting(format!(
                    "'{}' lists other frame times than camera '{}' in episode {}: a LeRobot row has one frame of \
                     every camera",
                    path.display(),
                    first.info.camera,
                    record.index
                )));
            }
        }
        return Ok(times);
    }
    if let Some(state) = &record.state {
        return Ok(read_tick_table(&session.join(state))?.timestamp);
    }
    match record.files.first() {
        Some(f) => Ok(read_pose_file(&glint_record::pose_path(&session.join(f)))?.timestamp),
        None if layout.lidars.is_empty() => Err(InteropError::Setting(format!(
            "episode {} recorded no camera, no lidar and no robot state: there is nothing to export",
            record.index
        ))),
        None => Err(InteropError::Setting(format!("episode {} has no lidar file", record.index))),
    }
}

/// The tick number of a recorded time.
fn tick_of(time: f64, tick_hz: f64) -> i64 {
    (time * tick_hz).round() as i64
}

/// An episode's rows: times, state and action, lidar vectors.
fn episode_rows(
    session: &Path,
    record: &EpisodeRecord,
    cameras: &[(PathBuf, CameraSidecar)],
    layout: &Layout,
) -> Result<Rows, InteropError> {
    let mut rows = Rows { times: row_times(session, record, cameras, layout)?, ..Rows::default() };
    if let Some(columns) = &layout.state {
        let file = record.state.as_ref().ok_or_else(|| {
            InteropError::Setting(format!("episode {} has no robot state table, and the first has one", record.index))
        })?;
        let table = read_tick_table(&session.join(file))?;
        let by_tick: HashMap<i64, usize> =
            table.timestamp.iter().enumerate().map(|(i, &t)| (tick_of(t, layout.tick_hz), i)).collect();
        for &t in &rows.times {
            let tick = tick_of(t, layout.tick_hz);
            let at = *by_tick.get(&tick).ok_or_else(|| {
                InteropError::Setting(format!(
                    "episode {}'s robot state table has no row at {t} s, where the dataset has a frame",
                    record.index
                ))
            })?;
            let next = by_tick.get(&(tick + 1)).copied().unwrap_or(at);
            rows.observation.extend(columns.observation.0.iter().map(|&c| table.row(at)[c] as f32));
            rows.action.extend(columns.action.0.iter().map(|&c| table.row(next)[c] as f32));
        }
    }
    let files = record
        .files
        .iter()
        .map(|f| {
            let path = session.join(f);
            Ok((read_sidecar(&path.with_extension("json"))?, path))
        })
        .collect::<Result<Vec<(Sidecar, PathBuf)>, InteropError>>()?;
    for (_, file_name, beams) in &layout.lidars {
        let (sidecar, path) = files.iter().find(|(s, _)| s.sensor.file_name == *file_name).ok_or_else(|| {
            InteropError::Setting(format!("episode {} has no file of lidar '{file_name}'", record.index))
        })?;
        rows.lidars.push(lidar_vectors((path, &sidecar.sensor.scan), *beams, &rows.times, layout.tick_hz)?);
    }
    Ok(rows)
}

/// Every beam's newest range at each of `times` (`(times.len(), beams)`), from the lidar file
/// at `path`, recorded with `config`.
fn lidar_vectors(
    (path, config): (&Path, &glint_lidar::ScanConfig),
    beams: usize,
    times: &[f64],
    tick_hz: f64,
) -> Result<Vec<f32>, InteropError> {
    let mut newest = vec![-1.0f32; beams];
    let mut out = Vec::with_capacity(times.len() * beams);
    let mut next = 0;
    for part in LidarReader::open(path)? {
        let part = part?;
        for i in 0..part.range.len() {
            let tick = tick_of(part.timestamp[i], tick_hz);
            while next < times.len() && tick_of(times[next], tick_hz) < tick {
                out.extend_from_slice(&newest);
                next += 1;
            }
            if let Some(slot) = newest.get_mut(config.beam_index(part.bin[i], part.channel[i]) as usize) {
                *slot = part.range[i];
            }
        }
    }
    while next < times.len() {
        out.extend_from_slice(&newest);
        next += 1;
    }
    Ok(out)
}

/// Writes one video feature of one episode; returns where it lies and its statistics.
fn write_video(
    (session, record, cameras): (&Path, &EpisodeRecord, &[(PathBuf, CameraSidecar)]),
    (out, ffmpeg): (&Path, &Path),
    video: &VideoFeature,
    episode: u32,
    layout: &Layout,
) -> Result<VideoSpan, InteropError> {
    let (sidecar_path, sidecar) = cameras.iter().find(|(_, s)| s.info.camera == video.camera).ok_or_else(|| {
        InteropError::Setting(format!("episode {} did not record camera '{}'", record.index, video.camera))
    })?;
    let path = out.join(video_file(&video.key, episode));
    let mut writer = VideoWriter::start(ffmpeg, &path, video.kind, video.size, layout.fps)?;
    let n = sidecar.frames.len();
    let sampled: Vec<usize> = (0..IMAGE_STAT_FRAMES.min(n)).map(|i| i * n / IMAGE_STAT_FRAMES.min(n)).collect();
    let channels = if video.kind == VideoKind::Colour { 3 } else { 1 };
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); channels];
    match (video.kind, &video.depth) {
        (VideoKind::Colour, _) => {
            let frames = decode_video(&sidecar_path.with_extension("mp4"), (video.size.0 as u32, video.size.1 as u32))
                .map_err(|why| InteropError::Setting(format!("camera '{}': {why}", video.camera)))?;
            if frames.len() < n {
                return Err(InteropError::Setting(format!(
                    "'{}' holds {} frames and its sidecar lists {n}",
                    sidecar_path.with_extension("mp4").display(),
                    frames.len()
                )));
            }
            for (i, frame) in frames.iter().take(n).enumerate() {
                writer.frame(frame)?;
                if sampled.binary_search(&i).is_ok() {
                    sample_pixels(frame.iter().map(|&b| b as f64 / 255.0), video.size, channels, &mut samples);
                }
            }
        }
        (VideoKind::Depth, Some((scale, quantizer))) => {
            let dir = session.join(camera_depth_dir(record.index, &video.camera));
            for (i, f) in sidecar.frames.iter().enumerate() {
                let metres: Vec<f32> = read_depth_codes(&depth_frame_file(&dir, f.frame))?
                    .iter()
                    .map(|&c| (c as f64 * scale) as f32)
                    .collect();
                let codes: Vec<u8> = metres.iter().flat_map(|&m| quantizer.code(m).to_le_bytes()).collect();
                writer.frame(&codes)?;
                if sampled.binary_search(&i).is_ok() {
                    sample_pixels(metres.iter().map(|&m| m as f64), video.size, 1, &mut samples);
                }
            }
        }
        (VideoKind::Depth, None) => unreachable!("a depth feature has its quantizer"),
    }
    writer.finish()?;
    let stats = Stats::of_columns(samples.into_iter(), sampled.len(), true);
    Ok(VideoSpan { key: video.key.clone(), frames: n, fps: layout.fps, stats })
}

/// Adds a frame's pixels (interleaved channels) to each channel's samples, every pixel of a
/// grid at most 150 wide (as LeRobot downsamples for its statistics).
fn sample_pixels(
    values: impl Iterator<Item = f64>,
    (width, _): (usize, usize),
    channels: usize,
    samples: &mut [Vec<f64>],
) {
    let step = width.div_ceil(150).max(1);
    for (i, v) in values.enumerate() {
        let pixel = i / channels;
        if (pixel % width).is_multiple_of(step) && (pixel / width).is_multiple_of(step) {
            samples[i % channels].push(v);
        }
    }
}

/// `videos/<key>/chunk-CCC/file-FFF.mp4` of episode `episode`.
fn video_file(key: &str, episode: u32) -> PathBuf {
    Path::new("videos").join(key).join(chunk_file(episode, "mp4"))
}

/// `chunk-CCC/file-FFF.<ext>`: one file per episode, a thousand per chunk.
fn chunk_file(episode: u32, ext: &str) -> PathBuf {
    Path::new(&format!("chunk-{:03}", episode / CHUNK_SIZE)).join(format!("file-{:03}.{ext}", episode % CHUNK_SIZE))
}

/// The `features` of `info.json`, in LeRobot's order: the recorded ones, then its own five.
fn features_json(layout: &Layout) -> serde_json::Map<String, Value> {
    let mut f = serde_json::Map::new();
    if let Some(state) = &layout.state {
        let vector = |names: &Vec<String>| json!({"dtype": "float32", "shape": [names.len()], "names": names});
        f.insert("observation.state".into(), vector(&state.observation.1));
        f.insert("action".into(), vector(&state.action.1));
    }
    for (key, _, beams) in &layout.lidars {
        f.insert(key.clone(), json!({"dtype": "float32", "shape": [beams], "names": Value::Null}));
    }
    for v in &layout.videos {
        let channels = if v.kind == VideoKind::Colour { 3 } else { 1 };
        let info = v.kind.info(v.size, layout.fps, v.depth.as_ref().map(|(_, q)| q));
        f.insert(
            v.key.clone(),
            json!({"dtype": "video", "shape": [v.size.1, v.size.0, channels],
                   "names": ["height", "width", "channels"], "info": info}),
        );
    }
    for (name, dtype) in tables::INDEX_FEATURES {
        f.insert(name.into(), json!({"dtype": dtype, "shape": [1], "names": Value::Null}));
    }
    f
}

fn info_json(layout: &Layout, features: serde_json::Map<String, Value>, episodes: usize, frames: u64) -> Value {
    json!({
        "codebase_version": LEROBOT_VERSION,
        "fps": layout.fps,
        "features": features,
        "total_episodes": episodes,
        "total_frames": frames,
        "total_tasks": 1,
        "chunks_size": CHUNK_SIZE,
        "data_files_size_in_mb": 100,
        "video_files_size_in_mb": 200,
        "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
        "robot_type": Value::Null,
        "splits": {"train": format!("0:{episodes}")},
    })
}

fn write_json(path: &Path, value: &Value) -> Result<(), InteropError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| InteropError::io("create", dir, e))?;
    }
    let text = serde_json::to_string_pretty(value).expect("JSON values encode");
    std::fs::write(path, text + "\n").map_err(|e| InteropError::io("write", path, e))
}
