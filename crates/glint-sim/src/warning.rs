//! Warnings: what a front end should pass on to its user without stopping, as values each one
//! prints its own way (the CLI to standard error, the server in its replies, Python through
//! `warnings`).

use std::path::PathBuf;

use glint_lidar::LidarWarning;
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
    /// Something beside a recording failed (a video proxy); the recording goes on.
    Recording(RecordWarning),
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::Lidar { sensor, warning } => write!(f, "lidar sensor {sensor}: {warning}"),
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
        }
    }
}
