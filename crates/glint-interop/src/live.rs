//! The ROS 2 messages of a run, made while the simulation runs, as an output of the
//! simulation (the output seam), with the topics, layouts and bytes of
//! [`crate::export_mcap`] except the colour frames, which are the renderer's own pixels (an
//! export decodes the session's lossy video), and with the robot's body tree on `/tf`, which
//! sessions do not record. They go to a [`Destination`]:
//!
//! - `glint run --mcap`: one MCAP file per episode, `<dir>/episode_NNNNNN.mcap`, `.partial`
//!   until its episode ends; a killed run leaves one that readers read up to its last whole
//!   chunk and `glint recover` closes;
//! - `glint run --live`, `glint serve --live`: world 0's episodes on a live view's channels
//!   ([`crate::LiveView`]); nothing is encoded for a topic nobody watches. A lidar whose layout
//!   is a driver's also has `/<lidar>/points/glint`, its clouds in glint's layout, whose fields
//!   carry the seed's colour-by modes (height, azimuth, sample order, incidence, …).

use std::path::{Path, PathBuf};

use glam::{DMat3, DQuat, DVec3};
use glint_lidar::LidarBinding;
use glint_record::{
    BeamRow, CycleCounter, RowReturn, SensorMount, beam_vector, cos_incidence, pattern_repeats, recorded_angles,
    sensor_file_name,
};
use glint_sim::{EpisodeClose, Frame, Output, RecordedCamera, SensorKind, SimError, Simulation, TickFrame};

use crate::InteropError;
use crate::bag::Bag;
use crate::camera::{CameraTopics, Depth, camera_transform, optical_frame, send_camera_frame};
use crate::clouds::Clouds;
use crate::export::{CloudSplit, ros_name};
use crate::layout::PointLayout;
use crate::mounts::{frame_pose, mount_frame, mount_transform};
use crate::msgs::{self, MessageType, Transform, nanoseconds};

/// One recorded lidar, as the live output names and lays out its points.
struct LiveLidar {
    frame: String,
    binding: LidarBinding,
    layout: PointLayout,
    /// The topic of its clouds in glint's layout beside the driver's, if it has one.
    colour_topic: Option<String>,
    /// The body it is fixed in, when it hangs from it on `/tf_static`.
    mount: Option<SensorMount>,
}

/// Where one episode's messages go.
pub trait MessageSink: Send {
    /// Whether anything reads `topic` (a live view with no client watching it does not).
    fn wants(&self, _topic: &str) -> bool {
        true
    }

    /// Takes one message of type `kind` on `topic`, stamped `time_ns`.
    fn send(&mut self, topic: &str, kind: MessageType, time_ns: u64, data: &[u8]) -> Result<(), InteropError>;

    /// The episode ended.
    fn close(self: Box<Self>) -> Result<(), InteropError> {
        Ok(())
    }

    /// Whether a message sent once stays for readers that come later (an MCAP file's
    /// `/tf_static`); a live view's clients connect at any time, so it is sent again.
    fn latches(&self) -> bool {
        true
    }
}

impl MessageSink for Bag {
    fn send(&mut self, topic: &str, kind: MessageType, time_ns: u64, data: &[u8]) -> Result<(), InteropError> {
        self.write(topic, kind, time_ns, data)
    }

    fn close(self: Box<Self>) -> Result<(), InteropError> {
        self.finish().map(|_| ())
    }
}

/// Where a run's episodes go: a sink per episode, or none for a world it does not take.
pub trait Destination: Send {
    /// The topics the run will send, with their types, before any episode begins.
    fn announce(&mut self, _topics: &[(String, MessageType)]) -> Result<(), InteropError> {
        Ok(())
    }

    /// The sink of world `world`'s episode `index` (numbered as the recording numbers them).
    fn open(&mut self, world: usize, index: u32) -> Result<Option<Box<dyn MessageSink>>, InteropError>;
}

/// One MCAP file per episode in a folder.
struct McapFiles(PathBuf);

impl Destination for McapFiles {
    fn open(&mut self, _world: usize, index: u32) -> Result<Option<Box<dyn MessageSink>>, InteropError> {
        let bag = Bag::create(&self.0.join(format!("episode_{index:06}.mcap")))?;
        Ok(Some(Box::new(bag)))
    }
}

/// One world's episode being written.
struct LiveEpisode {
    sink: Box<dyn MessageSink>,
    /// Per lidar, its clouds, and those in glint's layout when it has that topic too.
    clouds: Vec<(Clouds, Option<Clouds>)>,
    cycles: Vec<CycleCounter>,
    /// The mounted sensors' first poses, until the first body poses place them.
    unplaced: Vec<(SensorMount, (DVec3, DQuat))>,
    /// Their `/tf_static` transforms, once placed.
    statics: Option<Vec<Transform>>,
}

/// A run's ROS 2 messages (see the module's docs).
pub struct LiveOutput {
    destination: Box<dyn Destination>,
    lidars: Vec<LiveLidar>,
    cameras: Vec<RecordedCamera>,
    split: CloudSplit,
    /// Per body: its frame's name and its parent's index (body 0, the world, first).
    bodies: Vec<(String, usize)>,
    /// Per recorded camera, the body it is fixed in, when it hangs from it on `/tf_static`.
    camera_mounts: Vec<Option<SensorMount>>,
    /// The simulation's material bake, for glint's layout's `nir_reflectivity`.
    bake: Option<std::sync::Arc<glint_lidar::Bake>>,
    /// Per world: its episode's sink once begun (`None` inside for a world the destination
    /// does not take).
    worlds: Vec<Option<Option<LiveEpisode>>>,
    next_index: u32,
}

impl LiveOutput {
    /// MCAP files under `dir`: see [`LiveOutput::new`].
    pub fn mcap(
        dir: &Path,
        sim: &Simulation,
        options: (Option<PointLayout>, CloudSplit),
    ) -> Result<LiveOutput, InteropError> {
        LiveOutput::new(Box::new(McapFiles(dir.to_path_buf())), sim, options)
    }

    /// Messages to `destination` of what `sim` records (its lidars and cameras:
    /// `Simulation::recorded_lidars`, `Simulation::recorded_cameras`) and of its bodies' frames,
    /// over its worlds; `layout` overrides every lidar's (default: its preset's driver's).
    pub fn new(
        destination: Box<dyn Destination>,
        sim: &Simulation,
        options: (Option<PointLayout>, CloudSplit),
    ) -> Result<LiveOutput, InteropError> {
        LiveOutput::build(destination, sim, options, false)
    }

    /// [`LiveOutput::new`], with `/<lidar>/points/glint` for each lidar of a driver's layout
    /// when `colour_topics`.
    pub(crate) fn build(
        mut destination: Box<dyn Destination>,
        sim: &Simulation,
        (layout, split): (Option<PointLayout>, CloudSplit),
        colour_topics: bool,
    ) -> Result<LiveOutput, InteropError> {
        let (lidars, cameras, nworld) = (sim.recorded_lidars(), sim.recorded_cameras(), sim.nworld());
        // Sensors hang from their bodies when there is a robot to hang them from.
        let mounts = if sim.scene().nbody() > 1 { sim.sensor_mounts() } else { Vec::new() };
        let mount_of = |kind: &str, sensor: &str| mounts.iter().find(|m| m.kind == kind && m.sensor == sensor).cloned();
        let lidars: Vec<LiveLidar> = lidars
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let file_name = sensor_file_name(&b.name, i);
                let frame = ros_name(&file_name);
                let layout = layout.unwrap_or_else(|| PointLayout::for_config(&b.scan));
                let colour_topic =
                    (colour_topics && layout != PointLayout::Glint).then(|| format!("/{frame}/points/glint"));
                LiveLidar { frame, binding: b.clone(), layout, colour_topic, mount: mount_of("lidar", &file_name) }
            })
            .collect();
        let camera_mounts = cameras.iter().map(|c| mount_of("camera", &c.info.camera)).collect();
        let sensor_frames: Vec<String> = lidars
            .iter()
            .map(|l| l.frame.clone())
            .chain(cameras.iter().map(|c| optical_frame(&c.info.camera)))
            .collect();
        let scene = sim.scene();
        let parents: Vec<usize> = scene.body_parentid.iter().map(|&p| p.max(0) as usize).collect();
        let bodies = body_frames(&scene.body_name, &parents, &sensor_frames);
        let mut topics = vec![("/tf".to_string(), MessageType::TfMessage)];
        if !mounts.is_empty() {
            topics.push(("/tf_static".to_string(), MessageType::TfMessage));
        }
        for l in &lidars {
            topics.push((format!("/{}/points", l.frame), MessageType::PointCloud2));
            topics.extend(l.colour_topic.iter().map(|t| (t.clone(), MessageType::PointCloud2)));
        }
        for c in &cameras {
            topics.extend(CameraTopics::announced(&c.info));
        }
        destination.announce(&topics)?;
        Ok(LiveOutput {
            destination,
            lidars,
            cameras,
            split,
            bodies,
            camera_mounts,
            bake: sim.loaded_bake_data(),
            worlds: (0..nworld).map(|_| None).collect(),
            next_index: 0,
        })
    }

    /// World `world`'s episode, begun if none is open (numbered in the order episodes begin,
    /// as the recording numbers them); `None` for a world the destination does not take.
    fn episode(&mut self, world: usize) -> Result<Option<&mut LiveEpisode>, SimError> {
        if self.worlds[world].is_none() {
            let index = self.next_index;
            self.next_index += 1;
            let episode = self.destination.open(world, index).map_err(sim_error)?.map(|sink| LiveEpisode {
                sink,
                clouds: self
                    .lidars
                    .iter()
                    .map(|l| {
                        let beams = l.binding.scan.beam_count();
                        let colour = l.colour_topic.as_ref().map(|topic| {
                            Clouds::on_topic(PointLayout::Glint, self.split, &l.frame, beams, topic.clone())
                                .with_bake(self.bake.clone())
                        });
                        (Clouds::new(l.layout, self.split, &l.frame, beams).with_bake(self.bake.clone()), colour)
                    })
                    .collect(),
                cycles: self.lidars.iter().map(|_| CycleCounter::new(u64::MAX)).collect(),
                unplaced: Vec::new(),
                statics: None,
            });
            self.worlds[world] = Some(episode);
        }
        Ok(self.worlds[world].as_mut().and_then(Option::as_mut))
    }
}

impl LiveEpisode {
    /// Keeps a mounted sensor's pose until the tick's body poses place it.
    fn note_unplaced(&mut self, mount: SensorMount, pose: (DVec3, DQuat)) {
        if self.statics.is_none() && !self.unplaced.iter().any(|(m, _)| *m == mount) {
            self.unplaced.push((mount, pose));
        }
    }

    /// A tick's body poses: the mounted sensors placed in their bodies on `/tf_static` (once
    /// for a file, again on every tick for a live view's later clients), then the tree on
    /// `/tf`.
    fn send_frames(
        &mut self,
        bodies: &[(String, usize)],
        ns: u64,
        xpos: &[DVec3],
        xmat: &[DMat3],
    ) -> Result<(), SimError> {
        let first = self.statics.is_none();
        if first {
            let placed = self.unplaced.drain(..).map(|(m, pose)| {
                let parent = (bodies[m.body].0.as_str(), (xpos[m.body], xmat[m.body]));
                mount_transform(ns, parent, (&mount_frame(&m), frame_pose(&m, pose)))
            });
            self.statics = Some(placed.collect());
        }
        let statics = self.statics.as_deref().unwrap_or_default();
        if !statics.is_empty() && (first || !self.sink.latches()) && self.sink.wants("/tf_static") {
            let stamp = statics[0].stamp_ns;
            self.sink
                .send("/tf_static", MessageType::TfMessage, stamp, &msgs::tf_message(statics))
                .map_err(sim_error)?;
        }
        if self.sink.wants("/tf") {
            let msg = msgs::tf_message(&body_transforms(bodies, ns, xpos, xmat));
            self.sink.send("/tf", MessageType::TfMessage, ns, &msg).map_err(sim_error)?;
        }
        Ok(())
    }
}

fn sim_error(e: InteropError) -> SimError {
    SimError::Output(e.to_string())
}

impl Output for LiveOutput {
    /// Every lidar frame; a camera's as the recording takes them.
    fn wants(&self, (kind, _): (SensorKind, usize), unit: usize, _world: usize, tick: u64) -> bool {
        match kind {
            SensorKind::Lidar => unit < self.lidars.len(),
            SensorKind::State => self.bodies.len() > 1,
            SensorKind::Camera => self.cameras.iter().any(|c| c.slot == unit && c.takes(tick)),
            _ => false,
        }
    }

    /// The colour topics' `incidence` needs the beams' normals.
    fn reads_surfaces(&self) -> bool {
        self.lidars.iter().any(|l| l.colour_topic.is_some() || l.layout == PointLayout::Glint)
    }

    fn write(&mut self, f: &TickFrame) -> Result<(), SimError> {
        match f.frame {
            Frame::Lidar { scan, beams, pose: (origin, rotation) } => {
                let Some(lidar) = self.lidars.get(f.unit) else { return Ok(()) };
                let (frame, config, mount) = (lidar.frame.clone(), lidar.binding.scan, lidar.mount.clone());
                let Some(episode) = self.episode(f.world)? else { return Ok(()) };
                match mount {
                    Some(m) => episode.note_unplaced(m, (origin, DQuat::from_mat3(&rotation))),
                    None if episode.sink.wants("/tf") => {
                        let tf = Transform::in_world(&frame, f.time, origin, DQuat::from_mat3(&rotation));
                        let msg = msgs::tf_message(std::slice::from_ref(&tf));
                        episode.sink.send("/tf", MessageType::TfMessage, tf.stamp_ns, &msg).map_err(sim_error)?;
                    }
                    None => {}
                }
                let repeats = pattern_repeats(&config);
                let (driver, colour) = &mut episode.clouds[f.unit];
                let watched = [
                    episode.sink.wants(driver.topic()),
                    colour.as_ref().is_some_and(|c| episode.sink.wants(c.topic())),
                ];
                let mut returns = Vec::with_capacity(1);
                for &k in beams {
                    let counter = &mut episode.cycles[f.unit];
                    counter.next(k);
                    if watched == [false, false] {
                        continue;
                    }
                    let revolution = counter.revolution();
                    let (bin, channel) = config.bin_channel(k);
                    returns.clear();
                    let cycle = if repeats { 0 } else { revolution };
                    returns.extend(live_return(
                        scan,
                        k as usize,
                        recorded_angles(&config, cycle, k as usize),
                        (origin, rotation),
                    ));
                    let row = BeamRow { timestamp: f.time, revolution, beam: k, bin, channel };
                    for (clouds, on) in [(Some(&mut *driver), watched[0]), (colour.as_mut(), watched[1])] {
                        let Some(clouds) = clouds.filter(|_| on) else { continue };
                        if let Some((ns, msg)) = clouds.push(&row, &returns) {
                            episode.sink.send(clouds.topic(), MessageType::PointCloud2, ns, &msg).map_err(sim_error)?;
                            clouds.recycle(msg);
                        }
                    }
                }
                // A viewer that subscribes later gets the rest of that revolution, then whole ones.
                for (clouds, on) in [(Some(driver), watched[0]), (colour.as_mut(), watched[1])] {
                    if let Some(clouds) = clouds.filter(|_| !on) {
                        clouds.discard();
                    }
                }
            }
            Frame::State { xpos, xmat, .. } => {
                let ns = nanoseconds(f.time);
                let bodies = std::mem::take(&mut self.bodies);
                let sent = match self.episode(f.world) {
                    Ok(Some(episode)) => episode.send_frames(&bodies, ns, xpos, xmat),
                    Ok(None) => Ok(()),
                    Err(e) => Err(e),
                };
                self.bodies = bodies;
                sent?;
            }
            Frame::Camera { rgb, depth, pose: (origin, rotation), .. } => {
                let Some(k) = self.cameras.iter().position(|c| c.slot == f.unit) else { return Ok(()) };
                let (info, mount) = (self.cameras[k].info.clone(), self.camera_mounts[k].clone());
                let Some(episode) = self.episode(f.world)? else { return Ok(()) };
                match mount {
                    Some(m) => episode.note_unplaced(m, (origin, DQuat::from_mat3(&rotation))),
                    None if episode.sink.wants("/tf") => {
                        let tf = camera_transform(&info.camera, f.time, origin, DQuat::from_mat3(&rotation));
                        let msg = msgs::tf_message(std::slice::from_ref(&tf));
                        episode.sink.send("/tf", MessageType::TfMessage, tf.stamp_ns, &msg).map_err(sim_error)?;
                    }
                    None => {}
                }
                let sink = &mut *episode.sink;
                let rgb = (info.rgb && !rgb.is_empty()).then_some(rgb);
                let depth = (info.depth && !depth.is_empty()).then_some(Depth::Metres(depth));
                send_camera_frame(sink, &info, f.time, rgb, depth).map_err(sim_error)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn end_episode(&mut self, end: &EpisodeClose) -> Result<(), SimError> {
        let Some(Some(mut episode)) = self.worlds[end.world].take() else { return Ok(()) };
        for clouds in episode.clouds.iter_mut().flat_map(|(driver, colour)| std::iter::once(driver).chain(colour)) {
            if let Some((ns, msg)) = clouds.finish() {
                episode.sink.send(clouds.topic(), MessageType::PointCloud2, ns, &msg).map_err(sim_error)?;
            }
        }
        episode.sink.close().map_err(sim_error)
    }
}

/// Beam `k`'s return in `scan`, if it hit: in the sensor frame, with its height in the world
/// (the sensor at `pose`) and its incidence from the scan's surface normal where kept.
fn live_return(scan: &glint_lidar::Scan, k: usize, (az, el): (f32, f32), pose: (DVec3, DMat3)) -> Option<RowReturn> {
    let (range, geom) = (scan.range[k], scan.geomid[k]);
    if range < 0.0 || geom < 0 {
        return None;
    }
    let (origin, rotation) = pose;
    let dir = beam_vector(az, el);
    let xyz = dir * range as f64;
    let cos_incidence = match &scan.surfaces {
        Some(s) if s.known(k) => Some(cos_incidence(rotation * dir, DVec3::from_array(s.normal[k].map(f64::from)))),
        _ => None,
    };
    let world = origin + rotation * xyz;
    Some(RowReturn { xyz, range, intensity: -1.0, reflectivity: -1.0, geom_id: geom, echo: 0, world, cos_incidence })
}

/// Each body's frame name and parent (body 0, the world, is `world`): the MJCF name as a ROS
/// name (`body<id>` for an unnamed body), with `_body` added where a sensor's frame has it.
pub(crate) fn body_frames(names: &[String], parents: &[usize], sensor_frames: &[String]) -> Vec<(String, usize)> {
    names
        .iter()
        .zip(parents)
        .enumerate()
        .map(|(b, (name, &parent))| {
            let name = match (b, name.as_str()) {
                (0, _) => "world".to_string(),
                (_, "") => format!("body{b}"),
                (_, n) => ros_name(n),
            };
            let name = if b > 0 && sensor_frames.contains(&name) { format!("{name}_body") } else { name };
            (name, parent)
        })
        .collect()
}

/// Every body's frame in its parent's at `ns`: the robot's tree on `/tf`.
pub(crate) fn body_transforms(bodies: &[(String, usize)], ns: u64, xpos: &[DVec3], xmat: &[DMat3]) -> Vec<Transform> {
    (1..bodies.len().min(xpos.len()))
        .map(|b| {
            let p = bodies[b].1;
            let parent_inv = xmat[p].transpose();
            let rotation = DQuat::from_mat3(&(parent_inv * xmat[b])).normalize();
            Transform::at(ns, &bodies[p].0, &bodies[b].0, parent_inv * (xpos[b] - xpos[p]), rotation)
        })
        .collect()
}
