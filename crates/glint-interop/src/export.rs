//! A recorded session as MCAP files of ROS 2 messages, one per episode
//! (`<out>/episode_NNNNNN.mcap`):
//!
//! | topic | type | what |
//! |---|---|---|
//! | `/tf` | `tf2_msgs/TFMessage` | per lidar tick, `world` → each lidar's frame (its pose table); per camera frame, `world` → `<cam>_optical` |
//! | `/<lidar>/points` | `sensor_msgs/PointCloud2` | one cloud per revolution (or per tick), in the sensor frame of each point's tick, in the layout of the unit's ROS 2 driver ([`PointLayout`]) |
//! | `/<cam>/image/compressed` | `sensor_msgs/CompressedImage` | colour frames (PNG), decoded from the session's video by `ffmpeg` |
//! | `/<cam>/depth/image_raw` | `sensor_msgs/Image` | depth frames, `16UC1` in millimetres (0: nothing hit or invalid); a debug stream goes to `/<cam>/<stream>/image_raw` in its own codes |
//! | `/<cam>/camera_info` | `sensor_msgs/CameraInfo` | the pinhole intrinsics, with each frame |
//!
//! Stamps are simulated time since the episode began. Within a topic messages are in time
//! order; the file's index lets readers play all topics in time order.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use glam::{DQuat, DVec3};
use glint_record::{
    CameraSidecar, CameraStreamInfo, EpisodeRecord, PointFrame, camera_depth_dir, depth_frame_file, find_ffmpeg,
    pose_path, read_camera_sidecar, read_episode_records, read_pose_file, read_sidecar, walk_returns,
};

use crate::InteropError;
use crate::bag::Bag;
use crate::clouds::Clouds;
use crate::layout::PointLayout;
use crate::msgs::{self, MessageType, Transform, nanoseconds};

/// How a lidar's points are split into messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CloudSplit {
    /// One cloud per revolution (or pattern cycle), as the drivers publish them.
    #[default]
    Revolution,
    /// One cloud per lidar tick (the slice of the revolution the tick cast).
    Tick,
}

/// What an MCAP export writes.
#[derive(Clone, Debug, Default)]
pub struct McapOptions {
    /// Every lidar's point layout, or `None` for the layout of its preset's driver.
    pub layout: Option<PointLayout>,
    /// Clouds per revolution or per tick.
    pub split: CloudSplit,
    /// An exported variant folder: points at its measured ranges with their intensity and
    /// calibrated reflectivity, second echoes included.
    pub variant: Option<PathBuf>,
    /// Only these episodes (all when `None`).
    pub episodes: Option<Vec<u32>>,
}

/// One episode's MCAP file.
#[derive(Clone, Debug)]
pub struct McapEpisode {
    /// Episode index.
    pub episode: u32,
    /// The file.
    pub path: PathBuf,
    /// Messages written.
    pub messages: u64,
    /// Point clouds written.
    pub clouds: u64,
    /// Points written.
    pub points: u64,
    /// What could not be written, and why.
    pub warnings: Vec<String>,
}

/// `name` as a ROS name part: `[A-Za-z0-9_]`, not starting with a digit.
pub fn ros_name(name: &str) -> String {
    let s: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if s.starts_with(|c: char| c.is_ascii_digit()) || s.is_empty() { format!("_{s}") } else { s }
}

/// Writes every episode of `session` (or `options.episodes`) as `out/episode_NNNNNN.mcap`;
/// an existing file is never replaced.
pub fn export_mcap(session: &Path, out: &Path, options: &McapOptions) -> Result<Vec<McapEpisode>, InteropError> {
    let records = read_episode_records(session)?;
    if let Some(wanted) = &options.episodes
        && let Some(missing) = wanted.iter().find(|i| !records.iter().any(|r| r.index == **i))
    {
        let listed: Vec<String> = records.iter().map(|r| r.index.to_string()).collect();
        return Err(InteropError::Setting(format!(
            "the session has no episode {missing} (meta/episodes.jsonl lists {})",
            if listed.is_empty() { "none".into() } else { listed.join(", ") }
        )));
    }
    let chosen = records.iter().filter(|r| options.episodes.as_ref().is_none_or(|w| w.contains(&r.index)));
    let mut done = Vec::new();
    for record in chosen {
        let path = out.join(format!("episode_{:06}.mcap", record.index));
        if path.exists() {
            return Err(InteropError::Setting(format!(
                "'{}' already exists: an export never replaces a file (choose another --out, or remove it)",
                path.display()
            )));
        }
        done.push(export_episode(session, record, &path, options)?);
    }
    Ok(done)
}

fn export_episode(
    session: &Path,
    record: &EpisodeRecord,
    path: &Path,
    options: &McapOptions,
) -> Result<McapEpisode, InteropError> {
    let mut bag = Bag::create(path)?;
    let mut episode = McapEpisode {
        episode: record.index,
        path: path.to_path_buf(),
        messages: 0,
        clouds: 0,
        points: 0,
        warnings: Vec::new(),
    };
    let lidars: Vec<PathBuf> = record.files.iter().map(|f| session.join(f)).collect();
    let cameras: Vec<PathBuf> = record
        .camera_files
        .iter()
        .filter(|f| f.starts_with("videos/") && f.ends_with(".json"))
        .map(|f| session.join(f))
        .collect();
    write_transforms(&mut bag, &lidars, &cameras)?;
    for lidar in &lidars {
        let variant = options.variant.as_ref().map(|v| v.join(lidar.strip_prefix(session).unwrap_or(lidar)));
        if let Some(v) = &variant
            && !v.exists()
        {
            return Err(InteropError::Setting(format!(
                "the variant has no file '{}': export the variant of the whole session first",
                v.display()
            )));
        }
        let (clouds, points) = write_clouds(&mut bag, lidar, variant.as_deref(), options)?;
        episode.clouds += clouds;
        episode.points += points;
    }
    for camera in &cameras {
        write_camera(&mut bag, session, record.index, camera, &mut episode.warnings)?;
    }
    episode.messages = bag.messages();
    bag.finish()?;
    Ok(episode)
}

/// The optical frame of camera `name` (+Z forward, +Y down, as ROS's images are).
pub(crate) fn optical_frame(name: &str) -> String {
    format!("{}_optical", ros_name(name))
}

/// `/tf`: each lidar tick's sensor pose (one message per lidar and tick, in sensor order),
/// and each camera frame's optical pose, in time order.
fn write_transforms(bag: &mut Bag, lidars: &[PathBuf], cameras: &[PathBuf]) -> Result<(), InteropError> {
    let mut stamped: Vec<Transform> = Vec::new();
    for lidar in lidars {
        let frame = ros_name(&read_sidecar(&lidar.with_extension("json"))?.sensor.file_name);
        let poses = read_pose_file(&pose_path(lidar))?;
        for i in 0..poses.len() {
            stamped.push(sensor_transform(&frame, poses.timestamp[i], poses.position[i], poses.rotation[i]));
        }
    }
    for camera in cameras {
        let sidecar = read_camera_sidecar(camera)?;
        for f in &sidecar.frames {
            let rotation = DQuat::from_xyzw(f.quat[1], f.quat[2], f.quat[3], f.quat[0]);
            stamped.push(camera_transform(&sidecar.info.camera, f.time, DVec3::from_array(f.pos), rotation));
        }
    }
    // Stable: a tick's lidars stay in sensor order.
    stamped.sort_by_key(|t| t.stamp_ns);
    for t in stamped {
        bag.write("/tf", MessageType::TfMessage, t.stamp_ns, &msgs::tf_message(std::slice::from_ref(&t)))?;
    }
    Ok(())
}

/// `world` → a lidar's frame at `time`.
pub(crate) fn sensor_transform(frame: &str, time: f64, origin: DVec3, rotation: DQuat) -> Transform {
    Transform {
        stamp_ns: nanoseconds(time),
        parent: "world".into(),
        child: frame.to_string(),
        translation: origin.to_array(),
        rotation: wxyz(rotation),
    }
}

/// `world` → camera `name`'s optical frame at `time`, from the MuJoCo camera's pose.
pub(crate) fn camera_transform(name: &str, time: f64, origin: DVec3, rotation: DQuat) -> Transform {
    Transform {
        stamp_ns: nanoseconds(time),
        parent: "world".into(),
        child: optical_frame(name),
        translation: origin.to_array(),
        rotation: wxyz(rotation * OPTICAL_FROM_MUJOCO),
    }
}

/// A MuJoCo camera's frame (−Z forward, +Y up) turned into ROS's optical frame (+Z forward,
/// +Y down): half a turn about X.
const OPTICAL_FROM_MUJOCO: DQuat = DQuat::from_xyzw(1.0, 0.0, 0.0, 0.0);

fn wxyz(q: DQuat) -> [f64; 4] {
    [q.w, q.x, q.y, q.z]
}

/// `/<lidar>/points`; returns the clouds and points written.
fn write_clouds(
    bag: &mut Bag,
    lidar: &Path,
    variant: Option<&Path>,
    options: &McapOptions,
) -> Result<(u64, u64), InteropError> {
    let sidecar = read_sidecar(&lidar.with_extension("json"))?;
    let frame = ros_name(&sidecar.sensor.file_name);
    let layout = options.layout.unwrap_or_else(|| PointLayout::for_config(&sidecar.sensor.scan));
    let mut clouds = Clouds::new(layout, options.split, &frame, sidecar.beam_count as usize);
    let mut failed = None;
    walk_returns(lidar, variant, PointFrame::Sensor, |row, returns| {
        if failed.is_none()
            && let Some((ns, msg)) = clouds.push(row, returns)
        {
            failed = bag.write(clouds.topic(), MessageType::PointCloud2, ns, &msg).err();
            clouds.recycle(msg);
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    if let Some((ns, msg)) = clouds.finish() {
        bag.write(clouds.topic(), MessageType::PointCloud2, ns, &msg)?;
    }
    Ok((clouds.clouds(), clouds.points()))
}

/// A camera's frames: colour, depth (or its debug stream) and the intrinsics.
fn write_camera(
    bag: &mut Bag,
    session: &Path,
    episode: u32,
    sidecar_path: &Path,
    warnings: &mut Vec<String>,
) -> Result<(), InteropError> {
    let CameraSidecar { info, frames } = read_camera_sidecar(sidecar_path)?;
    let name = ros_name(&info.camera);
    let frame_id = optical_frame(&info.camera);
    let size = (info.width as u32, info.height as u32);
    match info.intrinsics {
        Some(k) => {
            for f in &frames {
                let ns = nanoseconds(f.time);
                bag.write(
                    &format!("/{name}/camera_info"),
                    MessageType::CameraInfo,
                    ns,
                    &msgs::camera_info(ns, &frame_id, size, k),
                )?;
            }
        }
        None => warnings.push(format!(
            "camera '{}' is orthographic: sensor_msgs/CameraInfo describes pinhole cameras only, so none is written",
            info.camera
        )),
    }
    if info.depth {
        let dir = session.join(camera_depth_dir(episode, &info.camera));
        for f in &frames {
            let file = depth_frame_file(&dir, f.frame);
            let img = image::open(&file)
                .map_err(|e| InteropError::Setting(format!("cannot read the depth frame '{}': {e}", file.display())))?
                .into_luma16();
            let (topic, data) = (depth_topic(&info, &name), depth_message_data(&info, img.as_raw()));
            let ns = nanoseconds(f.time);
            bag.write(&topic, MessageType::Image, ns, &msgs::image(ns, &frame_id, size, "16UC1", size.0 * 2, &data))?;
        }
    }
    if info.rgb {
        let video = sidecar_path.with_extension("mp4");
        match decode_video(&video, size) {
            Ok(rgb_frames) => {
                if rgb_frames.len() != frames.len() {
                    warnings.push(format!(
                        "'{}' holds {} frames and its sidecar lists {}: only the first {} are written",
                        video.display(),
                        rgb_frames.len(),
                        frames.len(),
                        rgb_frames.len().min(frames.len())
                    ));
                }
                for (f, rgb) in frames.iter().zip(rgb_frames) {
                    let png = encode_png(&rgb, size).map_err(|e| {
                        InteropError::Setting(format!("cannot encode frame {} of '{}': {e}", f.frame, video.display()))
                    })?;
                    let ns = nanoseconds(f.time);
                    bag.write(
                        &format!("/{name}/image/compressed"),
                        MessageType::CompressedImage,
                        ns,
                        &msgs::compressed_image(ns, &frame_id, "png", &png),
                    )?;
                }
            }
            Err(why) => warnings.push(format!("colour of camera '{}' not written: {why}", info.camera)),
        }
    }
    Ok(())
}

/// The topic of a camera's depth stream: `/<cam>/depth/image_raw`, or a debug stream's
/// `/<cam>/<stream>/image_raw`.
pub(crate) fn depth_topic(info: &CameraStreamInfo, name: &str) -> String {
    match &info.depth_sensor {
        Some(model) if !model.is_depth_map() => format!("/{name}/{}/image_raw", ros_name(&model.stream)),
        _ => format!("/{name}/depth/image_raw"),
    }
}

/// The `16UC1` bytes of a depth frame recorded as `codes` of the camera's `depth_scale`:
/// millimetres for a depth map (ROS's depth convention), a debug stream's own codes.
pub(crate) fn depth_message_data(info: &CameraStreamInfo, codes: &[u16]) -> Vec<u8> {
    let to_mm = match &info.depth_sensor {
        Some(model) if !model.is_depth_map() => None,
        _ => Some(info.depth_scale / 0.001),
    };
    let mut data = Vec::with_capacity(codes.len() * 2);
    for &code in codes {
        let code = match to_mm {
            Some(scale) if scale != 1.0 => (code as f64 * scale).round().clamp(0.0, u16::MAX as f64) as u16,
            _ => code,
        };
        data.extend_from_slice(&code.to_le_bytes());
    }
    data
}

/// The frames of a session video (H.264, padded to even sides), cropped back to `size`, as
/// RGB bytes, decoded by `ffmpeg`.
fn decode_video(video: &Path, (width, height): (u32, u32)) -> Result<Vec<Vec<u8>>, String> {
    if !video.exists() {
        return Err(format!("'{}' does not exist (the session was recorded without ffmpeg)", video.display()));
    }
    let ffmpeg = find_ffmpeg().ok_or("no ffmpeg runs here (install it, or set GLINT_FFMPEG)")?;
    let mut child = Command::new(&ffmpeg)
        .args(["-loglevel", "error", "-i"])
        .arg(video)
        .args(["-vf", &format!("crop={width}:{height}:0:0"), "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start '{}': {e}", ffmpeg.display()))?;
    let mut raw = Vec::new();
    child.stdout.take().ok_or("ffmpeg has no standard output")?.read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "ffmpeg cannot decode '{}': {}",
            video.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let frame = (width * height * 3) as usize;
    Ok(raw.chunks_exact(frame.max(1)).map(<[u8]>::to_vec).collect())
}

pub(crate) fn encode_png(rgb: &[u8], (width, height): (u32, u32)) -> Result<Vec<u8>, image::ImageError> {
    use image::ImageEncoder;
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new_with_quality(
        &mut png,
        image::codecs::png::CompressionType::Fast,
        image::codecs::png::FilterType::Adaptive,
    )
    .write_image(rgb, width, height, image::ExtendedColorType::Rgb8)?;
    Ok(png)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ros_names_are_valid() {
        assert_eq!(ros_name("front-lidar"), "front_lidar");
        assert_eq!(ros_name("3d"), "_3d");
        assert_eq!(ros_name("lidar0"), "lidar0");
    }

    #[test]
    fn the_optical_frame_looks_along_the_mujoco_camera() {
        // A MuJoCo camera looks along its −Z; the optical frame along its +Z.
        let forward = OPTICAL_FROM_MUJOCO * DVec3::Z;
        assert!((forward - DVec3::NEG_Z).length() < 1e-12);
        let down = OPTICAL_FROM_MUJOCO * DVec3::Y;
        assert!((down - DVec3::NEG_Y).length() < 1e-12);
    }
}
