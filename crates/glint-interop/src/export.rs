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

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use glam::{DQuat, DVec3};
use glint_lidar::Bake;
use glint_record::{
    BodyLink, CameraSidecar, Dataset, DatasetEpisode, PointFrame, PoseTable, SensorMount, Sidecar, camera_depth_dir,
    depth_frame_file, find_ffmpeg, pose_path, read_camera_sidecar, read_pose_file, read_session_meta, read_sidecar,
    read_tick_table, walk_returns,
};

use crate::InteropError;
use crate::bag::Bag;
use crate::camera::{Depth, camera_transform, send_camera_frame};
use crate::clouds::Clouds;
use crate::layout::PointLayout;
use crate::live::{body_frames, body_transforms};
use crate::msgs::{self, MessageType, Transform};

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
    /// A material bake (`.lvxb`) whose NIR reflectivity glint's layout's `nir_reflectivity`
    /// carries (default: a variant's own bake, when it can be read).
    pub bake: Option<PathBuf>,
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

/// Writes every episode of `source` (a session, or a dataset catalog over shard sessions;
/// or `options.episodes`) as `out/episode_NNNNNN.mcap`; an existing file is never replaced.
pub fn export_mcap(source: &Path, out: &Path, options: &McapOptions) -> Result<Vec<McapEpisode>, InteropError> {
    let dataset = Dataset::open(source)?;
    let episodes = dataset.episodes()?;
    if let Some(wanted) = &options.episodes
        && let Some(missing) = wanted.iter().find(|i| !episodes.iter().any(|e| e.record.index == **i))
    {
        let listed: Vec<String> = episodes.iter().map(|e| e.record.index.to_string()).collect();
        return Err(InteropError::Setting(format!(
            "the {} has no episode {missing} (its finished episodes: {})",
            if dataset.is_catalog() { "dataset" } else { "session" },
            if listed.is_empty() { "none".into() } else { listed.join(", ") }
        )));
    }
    let chosen: Vec<&DatasetEpisode> =
        episodes.iter().filter(|e| options.episodes.as_ref().is_none_or(|w| w.contains(&e.record.index))).collect();
    // A dataset's variant holds one variant per shard.
    let variant_of = |session: &Path| options.variant.as_ref().map(|v| dataset.part_of(v, session));
    let bake = match chosen.first() {
        Some(first) => nir_bake(options.bake.as_deref(), variant_of(&first.session).as_deref())?,
        None => None,
    };
    let mut done = Vec::new();
    for e in chosen {
        let path = out.join(format!("episode_{:06}.mcap", e.record.index));
        if path.exists() {
            return Err(InteropError::Setting(format!(
                "'{}' already exists: an export never replaces a file (choose another --out, or remove it)",
                path.display()
            )));
        }
        let variant = variant_of(&e.session);
        done.push(export_episode(e, &path, (options, variant.as_deref(), bake.as_ref()))?);
    }
    Ok(done)
}

/// The bake `nir_reflectivity` reads: `bake`, else the variant's own (when its file is still
/// there); `None` without one.
fn nir_bake(bake: Option<&Path>, variant: Option<&Path>) -> Result<Option<Arc<Bake>>, InteropError> {
    let path = match (bake, variant) {
        (Some(path), _) => path.to_path_buf(),
        (None, Some(variant)) => {
            let recorded = PathBuf::from(glint_record::read_augmentation(variant)?.bake.path);
            if !recorded.is_file() {
                return Ok(None);
            }
            recorded
        }
        (None, None) => return Ok(None),
    };
    let bake = Bake::load(&path)
        .map_err(|e| InteropError::Setting(format!("cannot read the material bake '{}': {e}", path.display())))?;
    Ok(Some(Arc::new(bake)))
}

fn export_episode(
    DatasetEpisode { session, record }: &DatasetEpisode,
    path: &Path,
    (options, variant, bake): (&McapOptions, Option<&Path>, Option<&Arc<Bake>>),
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
    // Each sidecar and pose table read once, for every use below.
    let lidars = record
        .files
        .iter()
        .map(|f| {
            let lidar = session.join(f);
            let sidecar = read_sidecar(&lidar.with_extension("json"))?;
            let poses = read_pose_file(&pose_path(&lidar))?;
            Ok(EpisodeLidar { path: lidar, sidecar, poses })
        })
        .collect::<Result<Vec<EpisodeLidar>, InteropError>>()?;
    let cameras = record
        .camera_files
        .iter()
        .filter(|f| f.starts_with("videos/") && f.ends_with(".json"))
        .map(|f| {
            let path = session.join(f);
            let sidecar = read_camera_sidecar(&path)?;
            Ok((path, sidecar))
        })
        .collect::<Result<Vec<(PathBuf, CameraSidecar)>, InteropError>>()?;
    let meta = read_session_meta(session)?;
    let (tree, mounted) = match &record.state {
        Some(state) if meta.bodies.len() > 1 => {
            let robot = RobotFrames::read(&session.join(state), &meta.bodies, &lidars, &cameras)?;
            let mounts = robot.mounts(&meta.mounts, &lidars, &cameras);
            if let Some(first) = mounts.first() {
                bag.write("/tf_static", MessageType::TfMessage, first.stamp_ns, &msgs::tf_message(&mounts))?;
            }
            (robot.tree_messages(), mounts.into_iter().map(|t| t.child).collect())
        }
        _ => {
            episode.warnings.push(
                "the session has no robot state table or body tree (it was recorded before glint wrote them): /tf \
                 has the sensors' frames only, from world"
                    .into(),
            );
            (Vec::new(), HashSet::new())
        }
    };
    write_transforms(&mut bag, (&lidars, &cameras), &mounted, tree)?;
    for EpisodeLidar { path: lidar, sidecar, .. } in &lidars {
        let variant = variant.map(|v| v.join(lidar.strip_prefix(session).unwrap_or(lidar)));
        if let Some(v) = &variant
            && !v.exists()
        {
            return Err(InteropError::Setting(format!(
                "the variant has no file '{}': export the variant of the whole session first",
                v.display()
            )));
        }
        let (clouds, points) = write_clouds(&mut bag, (lidar, sidecar), variant.as_deref(), (options, bake))?;
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

/// `/tf`: each lidar tick's sensor pose (one message per lidar and tick, in sensor order) and
/// each camera frame's optical pose, both in `world`, for the sensors not in `mounted` (those
/// hang from their bodies on `/tf_static`), and the body tree's messages `tree`, in time
/// order (in a tick: the lidars, the cameras, the tree, as a run sends them).
fn write_transforms(
    bag: &mut Bag,
    (lidars, cameras): (&[EpisodeLidar], &[(PathBuf, CameraSidecar)]),
    mounted: &HashSet<String>,
    tree: Vec<(u64, Vec<u8>)>,
) -> Result<(), InteropError> {
    let mut stamped: Vec<Transform> = Vec::new();
    for EpisodeLidar { sidecar, poses, .. } in lidars {
        let frame = ros_name(&sidecar.sensor.file_name);
        for i in 0..poses.len() {
            stamped.push(Transform::in_world(&frame, poses.timestamp[i], poses.position[i], poses.rotation[i]));
        }
    }
    for (_, sidecar) in cameras {
        for f in &sidecar.frames {
            stamped.push(camera_transform(&sidecar.info.camera, f.time, DVec3::from_array(f.pos), frame_quat(f)));
        }
    }
    let mut messages: Vec<(u64, Vec<u8>)> = stamped
        .iter()
        .filter(|t| !mounted.contains(&t.child))
        .map(|t| (t.stamp_ns, msgs::tf_message(std::slice::from_ref(t))))
        .collect();
    messages.extend(tree);
    // Stable: a tick's lidars stay in sensor order, before its cameras and its tree.
    messages.sort_by_key(|(ns, _)| *ns);
    for (ns, msg) in messages {
        bag.write("/tf", MessageType::TfMessage, ns, &msg)?;
    }
    Ok(())
}

/// A lidar of the episode: its file, sidecar and pose table.
struct EpisodeLidar {
    path: PathBuf,
    sidecar: Sidecar,
    poses: PoseTable,
}

/// A camera frame's recorded orientation (`quat` is w, x, y, z).
fn frame_quat(f: &glint_record::FramePose) -> DQuat {
    DQuat::from_xyzw(f.quat[1], f.quat[2], f.quat[3], f.quat[0])
}

/// The robot's frames over an episode, from its state table: each body's ROS frame and
/// parent, and every tick's body poses.
struct RobotFrames {
    /// Each body's frame name and parent (body 0 is `world`).
    frames: Vec<(String, usize)>,
    /// The ticks' times, seconds.
    times: Vec<f64>,
    /// Per tick, every body's position and orientation in the world.
    poses: Vec<(Vec<DVec3>, Vec<glam::DMat3>)>,
}

impl RobotFrames {
    fn read(
        table: &Path,
        bodies: &[BodyLink],
        lidars: &[EpisodeLidar],
        cameras: &[(PathBuf, CameraSidecar)],
    ) -> Result<RobotFrames, InteropError> {
        let state = read_tick_table(table)?;
        let sensor_frames: Vec<String> = lidars
            .iter()
            .map(|l| ros_name(&l.sidecar.sensor.file_name))
            .chain(cameras.iter().map(|(_, c)| crate::camera::optical_frame(&c.info.camera)))
            .collect();
        let names: Vec<String> = bodies.iter().map(|b| b.name.clone()).collect();
        let parents: Vec<usize> = bodies.iter().map(|b| b.parent).collect();
        // Each body's first column (`body/<name>/x`; its y, z, qw, qx, qy, qz follow).
        let columns: Vec<usize> = bodies[1..]
            .iter()
            .map(|b| {
                state.column(&format!("body/{}/x", b.name)).ok_or_else(|| {
                    InteropError::Setting(format!(
                        "'{}' has no column body/{}/x, and meta/info.json lists that body",
                        table.display(),
                        b.name
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        let poses = (0..state.timestamp.len())
            .map(|tick| {
                let row = state.row(tick);
                let (mut xpos, mut xmat) = (vec![DVec3::ZERO; bodies.len()], vec![glam::DMat3::IDENTITY; bodies.len()]);
                for (b, &c) in columns.iter().enumerate() {
                    let v = &row[c..c + 7];
                    xpos[b + 1] = DVec3::new(v[0], v[1], v[2]);
                    xmat[b + 1] = glam::DMat3::from_quat(DQuat::from_xyzw(v[4], v[5], v[6], v[3]));
                }
                (xpos, xmat)
            })
            .collect();
        Ok(RobotFrames { frames: body_frames(&names, &parents, &sensor_frames), times: state.timestamp, poses })
    }

    /// Per tick, every body's frame in its parent's (one `/tf` message, as `glint run --mcap`
    /// writes it): (stamp, message).
    fn tree_messages(&self) -> Vec<(u64, Vec<u8>)> {
        self.times
            .iter()
            .zip(&self.poses)
            .map(|(&time, (xpos, xmat))| {
                let ns = crate::msgs::nanoseconds(time);
                (ns, msgs::tf_message(&body_transforms(&self.frames, ns, xpos, xmat)))
            })
            .collect()
    }

    /// The tick at `time`, if the table has it.
    fn tick_at(&self, time: f64) -> Option<usize> {
        self.times.iter().position(|&t| (t - time).abs() < 1e-9)
    }

    /// The `/tf_static` transforms of the episode's sensors in `mounts`: each in its body's
    /// frame, from its first recorded pose and its body's at that tick.
    fn mounts(
        &self,
        mounts: &[SensorMount],
        lidars: &[EpisodeLidar],
        cameras: &[(PathBuf, CameraSidecar)],
    ) -> Vec<Transform> {
        let mut out = Vec::new();
        for mount in mounts.iter().filter(|m| m.body < self.frames.len()) {
            let first = match mount.kind.as_str() {
                "camera" => cameras
                    .iter()
                    .find(|(_, c)| c.info.camera == mount.sensor)
                    .and_then(|(_, c)| c.frames.first())
                    .map(|f| (f.time, (DVec3::from_array(f.pos), frame_quat(f)))),
                _ => lidars
                    .iter()
                    .find(|l| l.sidecar.sensor.file_name == mount.sensor)
                    .filter(|l| !l.poses.is_empty())
                    .map(|l| (l.poses.timestamp[0], (l.poses.position[0], l.poses.rotation[0]))),
            };
            let Some((time, pose)) = first else { continue };
            let Some(tick) = self.tick_at(time) else { continue };
            let (xpos, xmat) = &self.poses[tick];
            let parent = (self.frames[mount.body].0.as_str(), (xpos[mount.body], xmat[mount.body]));
            let child = crate::mounts::mount_frame(mount);
            let ns = crate::msgs::nanoseconds(self.times[0]);
            out.push(crate::mounts::mount_transform(ns, parent, (&child, crate::mounts::frame_pose(mount, pose))));
        }
        out
    }
}

/// `/<lidar>/points`; returns the clouds and points written.
fn write_clouds(
    bag: &mut Bag,
    (lidar, sidecar): (&Path, &Sidecar),
    variant: Option<&Path>,
    (options, bake): (&McapOptions, Option<&Arc<Bake>>),
) -> Result<(u64, u64), InteropError> {
    let frame = ros_name(&sidecar.sensor.file_name);
    let layout = options.layout.unwrap_or_else(|| PointLayout::for_config(&sidecar.sensor.scan));
    let mut clouds = Clouds::new(layout, options.split, &frame, sidecar.beam_count as usize).with_bake(bake.cloned());
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
    (sidecar_path, CameraSidecar { info, frames }): &(PathBuf, CameraSidecar),
    warnings: &mut Vec<String>,
) -> Result<(), InteropError> {
    if info.intrinsics.is_none() {
        warnings.push(format!(
            "camera '{}' is orthographic: sensor_msgs/CameraInfo describes pinhole cameras only, so none is written",
            info.camera
        ));
    }
    let colour = if info.rgb {
        let video = sidecar_path.with_extension("mp4");
        match decode_video(&video, (info.width as u32, info.height as u32)) {
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
                rgb_frames
            }
            Err(why) => {
                warnings.push(format!("colour of camera '{}' not written: {why}", info.camera));
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    let depth_dir = session.join(camera_depth_dir(episode, &info.camera));
    for (i, f) in frames.iter().enumerate() {
        let codes = if info.depth {
            let file = depth_frame_file(&depth_dir, f.frame);
            let img = image::open(&file)
                .map_err(|e| InteropError::Setting(format!("cannot read the depth frame '{}': {e}", file.display())))?;
            Some(img.into_luma16().into_raw())
        } else {
            None
        };
        let rgb = colour.get(i).map(Vec::as_slice);
        send_camera_frame(&mut *bag, info, f.time, rgb, codes.as_deref().map(Depth::Codes))?;
    }
    Ok(())
}

/// The frames of a session video (H.264, padded to even sides), cropped back to `size`, as
/// RGB bytes, decoded by `ffmpeg`.
pub(crate) fn decode_video(video: &Path, (width, height): (u32, u32)) -> Result<Vec<Vec<u8>>, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ros_names_are_valid() {
        assert_eq!(ros_name("front-lidar"), "front_lidar");
        assert_eq!(ros_name("3d"), "_3d");
        assert_eq!(ros_name("lidar0"), "lidar0");
    }
}
