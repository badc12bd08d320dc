//! glint-sim: the [`Simulation`], the one object every front end drives (`spec/sim.md`). Built
//! once from a scene manifest or an MJCF string, it owns the MuJoCo model and the batch of
//! worlds, the ray caster, the lidars, the material bake and return model, the controller, the
//! lidar runner and, when armed, a recording; [`Simulation::step`] is the one place where
//! controls, physics steps, the ray caster's refit, the lidar tick and the recording follow
//! each other.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use glint_lidar::{LidarBinding, ScanConfig};
//! use glint_sim::{SimOptions, Simulation, Worlds};
//!
//! let xml = r#"<mujoco><worldbody>
//!     <site name="lidar" pos="0 0 1"/>
//!     <geom type="box" pos="4 0 1" size="0.1 4 2"/>
//!   </worldbody></mujoco>"#;
//! let scan = ScanConfig { channels: 3, azimuth_bins: 360, rotation_hz: 0.0, ..ScanConfig::default() };
//! let binding = LidarBinding { attach_site: Some("lidar".into()), scan, ..LidarBinding::default() };
//! let mut sim = Simulation::from_xml(xml, vec![binding], SimOptions { nworld: 2, ..SimOptions::default() })?;
//! sim.set_lidar_live(true);
//! sim.reset(Worlds::All, None)?;
//! let report = sim.step(None)?; // controls, physics, refit, lidar tick
//! assert_eq!(report.time.len(), 2);
//!
//! let lidar = sim.lidar(0)?;
//! let mut ranges = vec![0.0f32; lidar.beam_count()];
//! assert_eq!(lidar.scan_into(1, &mut ranges, false)?, 1080);
//! // Beam index is bin * channels + channel: channel 1 of bin 0 looks along +X (level, between
//! // the channels at -15 and 15 degrees) at the wall 3.9 m away.
//! assert!((ranges[1] - 3.9).abs() < 1e-4);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod actions;
pub mod bench;
mod camera_set;
mod controller;
mod episodes;
mod error;
mod lidar_set;
mod memory;
mod observation;
mod outputs;
mod randomize;
mod rangefinders;
mod recording;
mod reset;
mod run;
mod sensors;
mod sim;
mod sim_types;
mod state;
mod task;
mod warning;

pub(crate) use sim::{fields, materials};

/// The root `README.md`, compiled so its Rust examples build as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExamples;

pub use actions::check_actions;
pub use camera_set::CameraFrames;
pub use error::{ErrorKind, SimError};
pub use fields::specs::{Bounds, Element, FieldSpec, IdOf, Reader};
pub use fields::{DERIVED_FIELDS, FIELDS, FieldOf, GEOMETRY_FIELDS, LightState, PHYSICS_FIELDS};
pub use glint_camera::{CameraOptions, Frames, Layout, MAX_SIDE as MAX_CAMERA_SIDE, camera_name, native_resolution};
pub use glint_manifest::{Manifest, ObservationComponent, Task};
pub use glint_mujoco::{Rangefinder, lower_thread_priority, settle_malloc};
pub use materials::SavedBake;
pub use observation::ObservationLayout;
pub use outputs::{EpisodeClose, Output, TickFrame};
pub use recording::{RecordedCamera, RecordingOptions, RecordingSummary, SensorTotals};
pub use run::{Quiet, RunObserver, RunOutcome};
pub use sensors::{Demand, Frame, Sensor, SensorContext, SensorKind};
pub use sim::{Lidar, LidarMut, Simulation, VariantPlan};
pub use sim_types::{LidarStats, SimOptions, StepReport, WorldStatus, Worlds};
pub use state::state_names;
pub use task::TaskOutcome;
pub use warning::Warning;
