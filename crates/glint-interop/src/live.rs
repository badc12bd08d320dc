//! `glint run --mcap`: the MCAP files written while the simulation runs, as an output of the
//! simulation (the output seam): one file per episode, `<dir>/episode_NNNNNN.mcap`, with the
//! topics, layouts and bytes of [`crate::export_mcap`] except the colour frames, which are
//! the renderer's own pixels (an export decodes the session's lossy video). A file is
//! `.partial` until its episode ends; a killed run leaves one that readers read up to its last
//! whole chunk and `glint recover` closes.

use std::path::{Path, PathBuf};

use glam::{DMat3, DQuat, DVec3};
use glint_lidar::{LidarBinding, ScanPattern, angles, beam_direction};
use glint_record::{
    BeamRow, CameraStreamInfo, CycleCounter, RowReturn, beam_vector, depth_codes_scaled, sensor_file_name,
};
use glint_sim::{EpisodeClose, Frame, Output, RecordedCamera, SensorKind, SimError, TickFrame};

use crate::InteropError;
use crate::bag::Bag;
use crate::clouds::Clouds;
use crate::export::{CloudSplit, camera_transform, optical_frame, ros_name, sensor_transform};
use crate::layout::PointLayout;
use crate::msgs::{self, MessageType, nanoseconds};

/// One recorded lidar, as the live output names and lays out its points.
struct LiveLidar {
    frame: String,
    binding: LidarBinding,
    layout: PointLayout,
}

/// One world's episode being written.
struct LiveEpisode {
    bag: Bag,
    clouds: Vec<Clouds>,
    cycles: Vec<CycleCounter>,
}

/// The MCAP files of a run (see the module's docs).
pub struct LiveMcap {
    dir: PathBuf,
    lidars: Vec<LiveLidar>,
    cameras: Vec<RecordedCamera>,
    split: CloudSplit,
    worlds: Vec<Option<LiveEpisode>>,
    next_index: u32,
}

impl LiveMcap {
    /// Files under `dir` for `lidars` and `cameras` (what the simulation's recording records:
    /// `Simulation::recorded_lidars`, `Simulation::recorded_cameras`) over `nworld` worlds;
    /// `layout` overrides every lidar's (default: its preset's driver's).
    pub fn new(
        dir: &Path,
        lidars: &[LidarBinding],
        cameras: Vec<RecordedCamera>,
        nworld: usize,
        (layout, split): (Option<PointLayout>, CloudSplit),
    ) -> LiveMcap {
        let lidars = lidars
            .iter()
            .enumerate()
            .map(|(i, b)| LiveLidar {
                frame: ros_name(&sensor_file_name(&b.name, i)),
                binding: b.clone(),
                layout: layout.unwrap_or_else(|| PointLayout::for_config(&b.scan)),
            })
            .collect();
        LiveMcap {
            dir: dir.to_path_buf(),
            lidars,
            cameras,
            split,
            worlds: (0..nworld).map(|_| None).collect(),
            next_index: 0,
        }
    }

    /// World `world`'s episode, begun if none is open (numbered in the order episodes begin,
    /// as the recording numbers them).
    fn episode(&mut self, world: usize) -> Result<&mut LiveEpisode, SimError> {
        if self.worlds[world].is_none() {
            let path = self.dir.join(format!("episode_{:06}.mcap", self.next_index));
            self.next_index += 1;
            let bag = Bag::create(&path).map_err(sim_error)?;
            let clouds = self
                .lidars
                .iter()
                .map(|l| Clouds::new(l.layout, self.split, &l.frame, l.binding.scan.beam_count()))
                .collect();
            let cycles = self.lidars.iter().map(|_| CycleCounter::new(u64::MAX)).collect();
            self.worlds[world] = Some(LiveEpisode { bag, clouds, cycles });
        }
        Ok(self.worlds[world].as_mut().expect("begun above"))
    }
}

fn sim_error(e: InteropError) -> SimError {
    SimError::Output(e.to_string())
}

impl Output for LiveMcap {
    /// Every lidar frame; a camera's as the recording takes them.
    fn wants(&self, (kind, _): (SensorKind, usize), unit: usize, _world: usize, tick: u64) -> bool {
        match kind {
            SensorKind::Lidar => unit < self.lidars.len(),
            SensorKind::Camera => self.cameras.iter().any(|c| c.slot == unit && c.takes(tick)),
            _ => false,
        }
    }

    fn write(&mut self, f: &TickFrame) -> Result<(), SimError> {
        match f.frame {
            Frame::Lidar { scan, beams, pose: (origin, rotation) } => {
                let Some(lidar) = self.lidars.get(f.unit) else { return Ok(()) };
                let (frame, config) = (lidar.frame.clone(), lidar.binding.scan);
                let episode = self.episode(f.world)?;
                let tf = sensor_transform(&frame, f.time, origin, DQuat::from_mat3(&rotation));
                let msg = msgs::tf_message(std::slice::from_ref(&tf));
                episode.bag.write("/tf", MessageType::TfMessage, tf.stamp_ns, &msg).map_err(sim_error)?;
                let repeats = matches!(config.pattern, ScanPattern::Spinning) || config.rotation_hz <= 0.0;
                let mut returns = Vec::with_capacity(1);
                for &k in beams {
                    let counter = &mut episode.cycles[f.unit];
                    counter.next(k);
                    let revolution = counter.revolution();
                    let (bin, channel) = config.bin_channel(k);
                    let (range, geom) = (scan.range[k as usize], scan.geomid[k as usize]);
                    returns.clear();
                    if range >= 0.0 && geom >= 0 {
                        let cycle = if repeats { 0 } else { revolution };
                        let (az, el) = angles(beam_direction(&config, cycle, k as usize));
                        let xyz = beam_vector(az as f32, el as f32) * range as f64;
                        returns.push(RowReturn {
                            xyz,
                            range,
                            intensity: -1.0,
                            reflectivity: -1.0,
                            geom_id: geom,
                            echo: 0,
                        });
                    }
                    let row = BeamRow { timestamp: f.time, revolution, beam: k, bin, channel };
                    let clouds = &mut episode.clouds[f.unit];
                    if let Some((ns, msg)) = clouds.push(&row, &returns) {
                        episode.bag.write(clouds.topic(), MessageType::PointCloud2, ns, &msg).map_err(sim_error)?;
                        clouds.recycle(msg);
                    }
                }
            }
            Frame::Camera { rgb, depth, size: (width, height), pose: (origin, rotation), .. } => {
                let Some(camera) = self.cameras.iter().find(|c| c.slot == f.unit) else { return Ok(()) };
                let info = camera.info.clone();
                let episode = self.episode(f.world)?;
                write_camera_frame(&mut episode.bag, &info, f.time, (rgb, depth), (width, height), (origin, rotation))
                    .map_err(sim_error)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn end_episode(&mut self, end: &EpisodeClose) -> Result<(), SimError> {
        let Some(mut episode) = self.worlds[end.world].take() else { return Ok(()) };
        for clouds in &mut episode.clouds {
            if let Some((ns, msg)) = clouds.finish() {
                episode.bag.write(clouds.topic(), MessageType::PointCloud2, ns, &msg).map_err(sim_error)?;
            }
        }
        episode.bag.finish().map_err(sim_error)?;
        Ok(())
    }
}

/// One camera frame: its optical pose on `/tf`, its intrinsics, its depth and colour.
fn write_camera_frame(
    bag: &mut Bag,
    info: &CameraStreamInfo,
    time: f64,
    (rgb, depth): (&[u8], &[f32]),
    size: (usize, usize),
    (origin, rotation): (DVec3, DMat3),
) -> Result<(), InteropError> {
    let ns = nanoseconds(time);
    let name = ros_name(&info.camera);
    let frame_id = optical_frame(&info.camera);
    let tf = camera_transform(&info.camera, time, origin, DQuat::from_mat3(&rotation));
    bag.write("/tf", MessageType::TfMessage, ns, &msgs::tf_message(std::slice::from_ref(&tf)))?;
    let size = (size.0 as u32, size.1 as u32);
    if let Some(k) = info.intrinsics {
        bag.write(
            &format!("/{name}/camera_info"),
            MessageType::CameraInfo,
            ns,
            &msgs::camera_info(ns, &frame_id, size, k),
        )?;
    }
    if info.depth && !depth.is_empty() {
        let codes = depth_codes_scaled(depth, info.depth_scale);
        let (topic, data) = crate::export::depth_message_data(info, &name, &codes);
        bag.write(&topic, MessageType::Image, ns, &msgs::image(ns, &frame_id, size, "16UC1", size.0 * 2, &data))?;
    }
    if info.rgb && !rgb.is_empty() {
        let png = crate::export::encode_png(rgb, size)
            .map_err(|e| InteropError::Setting(format!("cannot encode a frame of camera '{}': {e}", info.camera)))?;
        bag.write(
            &format!("/{name}/image/compressed"),
            MessageType::CompressedImage,
            ns,
            &msgs::compressed_image(ns, &frame_id, "png", &png),
        )?;
    }
    Ok(())
}
