//! Warnings: what a front end should pass on to its user without stopping, as values each one
//! prints its own way (the CLI to standard error, the server in its replies, Python through
//! `warnings`).

use std::path::PathBuf;

use glint_lidar::LidarWarning;
use glint_lights::LightWarning;
use glint_record::RecordWarning;

/// Something the user should know that did not stop the simulation.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Warning {
    /// A lidar sensor's configuration carries something to know, such as a group mask with
    /// bits above MuJoCo's six geom groups ([`LidarWarning::GroupMaskHighBits`]).
    Lidar {
        /// The sensor.
        sensor: usize,
        /// What about it.
        warning: LidarWarning,
    },
    /// A loaded bake no longer matches the scene's materials (or was written by an older
    /// glint): material scans use it anyway.
    BakeStale {
        /// The bake's name.
        name: String,
        /// Its file.
        path: PathBuf,
    },
    /// A loaded bake was made from another scene (or before the scene's geoms changed): its
    /// per-geom table and grid describe other geometry, and material scans use it anyway.
    BakeMismatch {
        /// The bake's name.
        name: String,
        /// Its file.
        path: PathBuf,
    },
    /// MuJoCo found a world unstable during its episode and reset its state.
    WorldUnstable {
        /// The world.
        world: usize,
        /// The world's episode (counted from 0 since the simulation was built).
        episode: u64,
    },
    /// A lidar turns faster than one revolution per tick of the runner: it scans one
    /// revolution per tick, at the runner's rate (the seed's API accepts the setting; a
    /// manifest refuses it).
    RotationCapped {
        /// The sensor.
        sensor: usize,
        /// Its `rotation_hz`.
        rotation_hz: f64,
        /// The rate it scans at: the runner's ticks per second.
        effective_hz: f64,
    },
    /// The scene's physics timestep cannot realise the lidar runner's default rate (a whole
    /// number of steps per tick), and nobody asked for a rate: the runner ticks at the nearest
    /// rate the timestep realises.
    RunnerRate {
        /// The default rate, ticks per second.
        default_hz: f64,
        /// The rate the runner ticks at.
        hz: f64,
        /// Physics steps per tick.
        steps: usize,
        /// The physics timestep, seconds.
        timestep: f64,
    },
    /// The cameras' default recording rate is not a whole fraction of the runner's ticks: they
    /// record at the nearest rate that is.
    CameraRate {
        /// The default rate, frames per second.
        default_hz: f64,
        /// The rate the cameras record at.
        hz: f64,
        /// The runner's ticks per second.
        tick_hz: f64,
    },
    /// A sensor added with `Simulation::add_sensor` is not part of the recording armed (a
    /// session records the lidars and the cameras): an output of its own takes its frames.
    NotRecorded {
        /// The sensor's name.
        sensor: String,
    },
    /// Something beside a recording failed (a video proxy); the recording goes on.
    Recording(RecordWarning),
    /// The light rig asks for something MuJoCo cannot show as written (a diffuse that clips,
    /// more lights than the classic renderer draws, a dome texture, a cylinder's shape).
    Light(LightWarning),
    /// The manifest has a light rig but not `use_scenario_lights = true`: the scene keeps its
    /// own lights.
    RigIgnored {
        /// The rig's light count.
        lights: usize,
    },
    /// A `lidar_ranges` observation component has no positive `beams`: as the seed says, it
    /// emits nothing.
    ObservationBeams {
        /// The component's position in `[[observation]]`.
        index: usize,
        /// The sensor it reads.
        sensor: usize,
        /// The sensor's beam count.
        actual: usize,
    },
    /// A `lidar_ranges` observation component's `beams` is not its sensor's beam count: beams
    /// past the scan read `-1`, and beams past `beams` are left out.
    ObservationBeamsDiffer {
        /// The component's position in `[[observation]]`.
        index: usize,
        /// The sensor it reads.
        sensor: usize,
        /// The width asked for.
        beams: usize,
        /// The sensor's beam count.
        actual: usize,
    },
    /// The scene has things MuJoCo's renderer draws with its default options that glint's
    /// cameras do not (1-D and interpolated flexes, rangefinder rays): said
    /// once per scene, when its cameras are first set.
    Undrawn {
        /// One entry per kind, with a count and the first names.
        what: Vec<String>,
    },
    /// The scene has skins or drawn flexes and lidars that do not opt in to see them
    /// (`see_skins`): those see the geoms beneath, as `mj_ray` does. Said once, when the
    /// simulation is built.
    LidarBlindToSkins {
        /// The lidars that do not see them, by name.
        lidars: Vec<String>,
        /// One entry per kind, with a count and the first names.
        what: Vec<String>,
    },
    /// An MJCF `<rangefinder>` glint does not compute (attached to a camera, delayed, sampled
    /// at an interval): it is left out of the simulation's rangefinders.
    RangefinderSkipped {
        /// The sensor's name.
        sensor: String,
        /// Why, and the fix.
        reason: String,
    },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::Lidar { sensor, warning } => write!(f, "lidar sensor {sensor}: {warning}"),
            Warning::Undrawn { what } => write!(
                f,
                "the cameras do not draw {} of this scene, which MuJoCo's renderer draws: RGB, depth and \
                 segmentation show the scene without them (hide them in MuJoCo too, e.g. with geom groups 3-5, \
                 to compare like with like)",
                what.join(", ")
            ),
            Warning::LidarBlindToSkins { lidars, what } => write!(
                f,
                "lidar {} does not see {} of this scene: as MuJoCo's mj_ray, it sees the geoms beneath them \
                 (a skinned body's collision shapes, nothing for a cloth), while the cameras draw them; set \
                 see_skins = true in its [[lidar]] table (or dict) for it to see them",
                lidars.join(", "),
                what.join(", ")
            ),
            Warning::Light(warning) => write!(f, "light rig: {warning}"),
            Warning::RigIgnored { lights } => write!(
                f,
                "the manifest's light rig ({lights} lights) is ignored: the scene keeps its headlight and its own \
                 lights; set use_scenario_lights = true to light it with the rig"
            ),
            Warning::BakeStale { name, path } => write!(
                f,
                "the bake '{name}' ('{}') is stale: the scene's materials (or its geoms, or the bake format) changed \
                 since it was made; bake again (`glint bake`) before trusting material scans",
                path.display()
            ),
            Warning::BakeMismatch { name, path } => write!(
                f,
                "the bake '{name}' ('{}') does not match the scene: it was made from another scene, or before the \
                 scene's geoms changed; bake again (`glint bake`) before trusting material scans",
                path.display()
            ),
            Warning::WorldUnstable { world, episode } => {
                write!(f, "MuJoCo found world {world} unstable during episode {episode} and reset it")
            }
            Warning::Recording(w) => w.fmt(f),
            Warning::RotationCapped { sensor, rotation_hz, effective_hz } => write!(
                f,
                "lidar sensor {sensor}: rotation_hz = {rotation_hz} is above the runner's {effective_hz} ticks per \
                 second, and a sensor scans at most one revolution per tick: it scans at an effective \
                 {effective_hz} Hz (raise [recorder] lidar_runner_hz to scan faster)"
            ),
            Warning::RunnerRate { default_hz, hz, steps, timestep } => write!(
                f,
                "the lidar runner's default {default_hz} ticks per second is not a whole number of the scene's \
                 {timestep} s physics steps: it ticks at {} per second ({steps} step{} a tick) instead; set a rate of \
                 whole steps to choose another ([recorder] lidar_runner_hz, or runner_hz)",
                readable_hz(*hz),
                if *steps == 1 { "" } else { "s" }
            ),
            Warning::CameraRate { default_hz, hz, tick_hz } => write!(
                f,
                "the cameras' default {default_hz} frames per second is not a whole fraction of the runner's {} ticks \
                 per second: they record at {} per second instead; set a camera rate to choose another",
                readable_hz(*tick_hz),
                readable_hz(*hz)
            ),
            Warning::NotRecorded { sensor } => write!(
                f,
                "sensor '{sensor}' is not recorded: a session records the lidars and the cameras; add an output (Simulation::add_output) to write its frames"
            ),
            Warning::ObservationBeams { index, sensor, actual } => write!(
                f,
                "[[observation]] {index} (lidar_ranges) has no positive `beams`, so it emits nothing (the seed's rule): \
                 set beams = {actual}, lidar sensor {sensor}'s channels * azimuth_bins"
            ),
            Warning::ObservationBeamsDiffer { index, sensor, beams, actual } => write!(
                f,
                "[[observation]] {index} (lidar_ranges) has beams = {beams}, and lidar sensor {sensor} has {actual} beams: \
                 {}; set beams = {actual}",
                if beams > actual { "the beams past the scan read -1" } else { "the beams past `beams` are left out" }
            ),
            Warning::RangefinderSkipped { sensor, reason } => {
                write!(f, "rangefinder '{sensor}' is left out of the simulation's rangefinders: {reason}")
            }
        }
    }
}

/// A rate for people: at most four decimals, trailing zeros dropped.
fn readable_hz(hz: f64) -> String {
    let text = format!("{hz:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}
