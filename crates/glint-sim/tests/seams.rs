//! The two seams, used from outside the crate as a user would: a toy sensor (a downward
//! rangefinder on a site) and a toy output (frames and episode ends kept in memory), added
//! through the public API alone and run through `Simulation::step`, episode ends, resets and
//! a Parquet recording armed beside them; and the cameras rendering only what an output takes.

use std::sync::{Arc, Mutex};

use glam::DVec3;
use glint_core::RayFilter;
use glint_lidar::{LidarBinding, ScanConfig};
use glint_record::read_lidar_file;
use glint_sim::{
    CameraOptions, Demand, EpisodeClose, Frame, Output, RecordingOptions, Sensor, SensorContext, SensorKind, SimError,
    SimOptions, Simulation, TickFrame, Warning, Worlds,
};

/// A robot fixed 1 m above a floor, with a site for the rangefinder and one for a lidar, and a
/// camera looking down.
const SCENE: &str = r#"<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <camera name="top" pos="0 0 6" xyaxes="1 0 0 0 1 0" resolution="16 12"/>
    <body name="robot" pos="0 0 1">
      <geom type="box" size="0.1 0.1 0.05" pos="0 0 0.3"/>
      <site name="eye" pos="0 0 0"/>
      <site name="lidar" pos="0 0 0.5"/>
    </body>
  </worldbody>
</mujoco>"#;

/// One ray straight down from a site per world: the distance to what it hits, `-1` for none.
struct Rangefinder {
    site: usize,
    /// Per world, the last range cast.
    range: Vec<f32>,
    restarts: Arc<Mutex<Vec<(usize, u64)>>>,
}

impl Sensor for Rangefinder {
    fn name(&self) -> &str {
        "rangefinder"
    }

    fn fires(&self, _unit: usize) -> bool {
        true
    }

    fn tick(&mut self, ctx: &SensorContext, demand: &Demand) -> Result<(), SimError> {
        let nsite = ctx.scene.nsite();
        for w in (0..demand.nworld()).filter(|&w| demand.wants(0, w)) {
            let origin = ctx.poses.site_xpos[w * nsite + self.site];
            let hit = ctx.caster.ray(ctx.scene, ctx.poses, w, origin, DVec3::NEG_Z, &RayFilter::default(), -1)?;
            self.range[w] = if hit.geomid >= 0 { hit.dist as f32 } else { -1.0 };
        }
        Ok(())
    }

    fn emit(
        &mut self,
        _ctx: &SensorContext,
        world: usize,
        _demand: &Demand,
        out: &mut dyn FnMut(usize, Frame<'_>) -> Result<(), SimError>,
    ) -> Result<(), SimError> {
        out(0, Frame::Values(&self.range[world..world + 1]))
    }

    fn restart(&mut self, world: usize, episode_seed: u64) -> Result<(), SimError> {
        self.restarts.lock().unwrap().push((world, episode_seed));
        Ok(())
    }
}

/// What the toy output heard.
#[derive(Default)]
struct Heard {
    /// (world, tick, sensor kind, unit, value or camera pixel count).
    frames: Vec<(usize, u64, SensorKind, usize, f32)>,
    /// (world, ticks, length).
    ends: Vec<(usize, u64, f64)>,
}

/// Keeps the rangefinder's frames of every world and the camera's of world 1 at tick 2.
struct Collector(Arc<Mutex<Heard>>);

impl Output for Collector {
    fn wants(&self, (kind, _): (SensorKind, usize), _unit: usize, world: usize, tick: u64) -> bool {
        match kind {
            SensorKind::Values => true,
            SensorKind::Camera => world == 1 && tick == 2,
            _ => false,
        }
    }

    fn write(&mut self, f: &TickFrame) -> Result<(), SimError> {
        let value = match f.frame {
            Frame::Values(v) => v[0],
            Frame::Camera { depth, .. } => depth.iter().filter(|&&d| d > 0.0).count() as f32,
            _ => f32::NAN,
        };
        self.0.lock().unwrap().frames.push((f.world, f.tick, f.sensor.0, f.unit, value));
        Ok(())
    }

    fn end_episode(&mut self, end: &EpisodeClose) -> Result<(), SimError> {
        self.0.lock().unwrap().ends.push((end.world, end.ticks, end.length_s));
        Ok(())
    }
}

fn simulation(seconds: f64) -> Simulation {
    let scan = ScanConfig { channels: 2, azimuth_bins: 8, rotation_hz: 0.0, ..ScanConfig::default() };
    let lidar =
        LidarBinding { name: "roof".into(), attach_site: Some("lidar".into()), scan, ..LidarBinding::default() };
    let options = SimOptions { nworld: 2, episode_seconds: Some(seconds), ..SimOptions::default() };
    Simulation::from_xml(SCENE, vec![lidar], options).unwrap()
}

#[test]
fn a_sensor_and_an_output_added_from_outside_tick_write_and_end_with_the_episodes() {
    let mut sim = simulation(0.03); // three ticks of 10 ms (the default runner's 100 Hz)
    let site = sim.scene().site_name.iter().position(|n| n == "eye").unwrap();
    let restarts = Arc::new(Mutex::new(Vec::new()));
    let sensor = Rangefinder { site, range: vec![-1.0; 2], restarts: restarts.clone() };
    let k = sim.add_sensor(Box::new(sensor));
    let heard = Arc::new(Mutex::new(Heard::default()));
    sim.add_output(Box::new(Collector(heard.clone())));
    let depth = CameraOptions { render_depth: true, ..CameraOptions::from_mjcf(sim.scene(), 0).unwrap() };
    sim.set_cameras(vec![depth]).unwrap();
    let out = std::env::temp_dir().join(format!("glint-seams-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let session = sim.arm_recording(&RecordingOptions { out: Some(out.clone()), episodes: 1 }).unwrap();
    assert!(
        sim.take_warnings().iter().any(|w| matches!(w, Warning::NotRecorded { sensor } if sensor == "rangefinder")),
        "the session says it does not record the added sensor"
    );

    // Four steps: the episodes end after three, and the fourth belongs to no episode.
    for _ in 0..4 {
        sim.step(None).unwrap();
    }
    {
        let heard = heard.lock().unwrap();
        let ranges: Vec<_> = heard.frames.iter().filter(|f| f.2 == SensorKind::Values).collect();
        assert_eq!(ranges.len(), 6, "three ticks of two worlds: {ranges:?}");
        assert!(ranges.iter().all(|f| f.3 == 0 && (f.4 - 1.0).abs() < 1e-6), "the floor is 1 m below: {ranges:?}");
        assert!(ranges.iter().all(|f| f.1 <= 3), "nothing after the episode's length");
        let cameras: Vec<_> = heard.frames.iter().filter(|f| f.2 == SensorKind::Camera).collect();
        assert_eq!(cameras.len(), 1, "one camera frame was asked for: {cameras:?}");
        assert_eq!((cameras[0].0, cameras[0].1), (1, 2));
        assert_eq!(cameras[0].4, 16.0 * 12.0, "every pixel sees the floor");
        assert_eq!(heard.ends.len(), 2, "each world's episode ended at its length: {:?}", heard.ends);
        assert!(heard.ends.iter().all(|&(_, ticks, length)| ticks == 3 && (length - 0.03).abs() < 1e-12));
    }
    assert!(sim.episode_tick(0).unwrap() == 4, "the world stepped on");

    // A reset starts new episodes: the sensor restarts with each world's new seed.
    sim.reset(Worlds::All, None).unwrap();
    let seeds: Vec<u64> = (0..2).map(|w| sim.episode_seed(w).unwrap()).collect();
    assert_eq!(*restarts.lock().unwrap(), vec![(0, seeds[0]), (1, seeds[1])]);
    sim.step(None).unwrap();
    let summary = sim.stop_recording(glint_record::EpisodeStatus::Interrupted).unwrap();
    assert_eq!(summary.episodes, 4, "two worlds, two episodes each");
    assert_eq!(k, 4, "the lidars, the cameras, the MJCF rangefinders and the bodies come first");

    // The recording has exactly three ticks of the lidar in each finished episode.
    let beams = 2 * 8;
    for e in 0..2 {
        let file = session.join(format!("data/chunk-000/lidar-roof-{e:03}.parquet"));
        assert_eq!(read_lidar_file(&file).unwrap().len(), 3 * beams, "episode {e}");
    }
    let heard = heard.lock().unwrap();
    assert_eq!(heard.ends.len(), 2, "stopping a recording ends no episode of the simulation");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn cameras_render_only_the_frames_an_output_takes() {
    let mut sim = simulation(1.0);
    sim.set_cameras(vec![CameraOptions::from_mjcf(sim.scene(), 0).unwrap()]).unwrap();
    let heard = Arc::new(Mutex::new(Heard::default()));
    sim.add_output(Box::new(Collector(heard.clone())));
    for _ in 0..3 {
        sim.step(None).unwrap();
    }
    let heard = heard.lock().unwrap();
    let cameras: Vec<_> = heard.frames.iter().filter(|f| f.2 == SensorKind::Camera).map(|f| (f.0, f.1)).collect();
    assert_eq!(cameras, [(1, 2)], "world 1 at tick 2 only");
    assert!(heard.frames.iter().all(|f| f.2 != SensorKind::Lidar), "nobody asked for lidar frames");
}
