//! glint-manifest: the scene manifest, a TOML file that names the MJCF scene and binds its
//! sensors. Every editor action of the seed is a field here (see `docs/manifest.md`).
//!
//! ```toml
//! scene = "crowded.xml"          # MJCF, relative to this file
//!
//! [[lidar]]
//! name = "roof"
//! attach_site = "lidar"          # wins over attach_body when both are set
//! preset = "ouster-os1-64"       # applied first; the fields below adjust it
//! max_range = 60.0
//! self_ignore = "whole-robot"
//! ```
#![deny(missing_docs)]

use std::path::{Path, PathBuf};

use glam::DVec3;
use glint_core::nearest_name;
use glint_lidar::{
    LidarBinding, LidarError, NonRepetitive, ScanConfig, ScanPattern, ScanPreset, SecondaryCapture, SecondaryScope,
    SelfIgnore,
};
use serde::Deserialize;
use thiserror::Error;

/// Why a manifest was rejected.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// The file cannot be read.
    #[error("cannot read manifest '{path}': {reason}")]
    Read {
        /// The manifest path.
        path: PathBuf,
        /// What the operating system said.
        reason: String,
    },
    /// Not valid TOML, or a value of the wrong type.
    #[error("manifest '{path}' is not valid: {message}")]
    Parse {
        /// The manifest path.
        path: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A key the manifest does not know.
    #[error("manifest '{path}': unknown key `{key}` in {table}{hint}")]
    UnknownKey {
        /// The manifest path.
        path: PathBuf,
        /// Which table, e.g. "[[lidar]] 0".
        table: String,
        /// The key.
        key: String,
        /// "; did you mean `x`?" or the list of valid keys.
        hint: String,
    },
    /// A value the manifest knows the key of but not the value.
    #[error("manifest '{path}': {table} has {key} = \"{value}\"; use one of {valid}")]
    BadValue {
        /// The manifest path.
        path: PathBuf,
        /// Which table.
        table: String,
        /// The key.
        key: &'static str,
        /// The value given.
        value: String,
        /// The valid values.
        valid: &'static str,
    },
    /// A value outside its range.
    #[error("manifest '{path}': {message}")]
    Value {
        /// The manifest path.
        path: PathBuf,
        /// Field, value and range.
        message: String,
    },
    /// A lidar binding failed the seed's ranges.
    #[error("manifest '{path}': [[lidar]] {index}: {source}")]
    Lidar {
        /// The manifest path.
        path: PathBuf,
        /// The binding's index.
        index: usize,
        /// What is wrong with it.
        #[source]
        source: LidarError,
    },
}

const TOP_KEYS: &[&str] = &["scene", "lidar", "recorder"];
const RECORDER_KEYS: &[&str] = &["lidar_runner_hz"];
const LIDAR_KEYS: &[&str] = &[
    "name",
    "attach_body",
    "attach_site",
    "mount_offset",
    "preset",
    "pattern",
    "channels",
    "azimuth_bins",
    "points_per_cycle",
    "rotation_hz",
    "vfov_min_deg",
    "vfov_max_deg",
    "min_range",
    "max_range",
    "geom_group_mask",
    "self_ignore",
    "video_proxy",
    "secondary_capture",
    "secondary_scope",
    "risley_spin_hz",
    "risley_prism_hz",
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    scene: String,
    #[serde(default)]
    lidar: Vec<RawLidar>,
    #[serde(default)]
    recorder: RawRecorder,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRecorder {
    lidar_runner_hz: Option<f64>,
}

/// Recorder settings (the seed's Recorder page). Later issues add the recording itself.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Recorder {
    /// Rate of the lidar runner, ticks per second: each tick groups the physics steps of
    /// `1 / lidar_runner_hz` seconds and advances every lidar by that long. Default 100 (10 ms).
    pub lidar_runner_hz: f64,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder { lidar_runner_hz: 100.0 }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawLidar {
    name: Option<String>,
    attach_body: Option<String>,
    attach_site: Option<String>,
    mount_offset: Option<[f64; 3]>,
    preset: Option<String>,
    pattern: Option<String>,
    channels: Option<i64>,
    azimuth_bins: Option<i64>,
    points_per_cycle: Option<i64>,
    rotation_hz: Option<f64>,
    vfov_min_deg: Option<f64>,
    vfov_max_deg: Option<f64>,
    min_range: Option<f64>,
    max_range: Option<f64>,
    geom_group_mask: Option<i64>,
    self_ignore: Option<String>,
    video_proxy: Option<bool>,
    secondary_capture: Option<String>,
    secondary_scope: Option<String>,
    risley_spin_hz: Option<f64>,
    risley_prism_hz: Option<[f64; 2]>,
}

/// A loaded manifest.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// Where the manifest was read from.
    pub path: PathBuf,
    /// The MJCF scene, resolved against the manifest's folder.
    pub scene: PathBuf,
    /// Lidar bindings in order (sensor indices are positions here), presets applied and
    /// every field validated.
    pub lidar: Vec<LidarBinding>,
    /// Recorder settings.
    pub recorder: Recorder,
}

/// "; did you mean `x`?" for the nearest valid key, or the whole list when none is close.
fn hint(key: &str, valid: &[&str]) -> String {
    match nearest_name(key, valid.iter().copied()) {
        Some(v) => format!("; did you mean `{v}`?"),
        None => format!("; valid keys are {}", valid.join(", ")),
    }
}

impl Manifest {
    /// Reads and checks a manifest file.
    pub fn load(path: impl AsRef<Path>) -> Result<Manifest, ManifestError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ManifestError::Read { path: path.to_path_buf(), reason: e.to_string() })?;
        Manifest::parse(&text, path)
    }

    /// Checks manifest text as if read from `path` (relative paths resolve against its folder).
    pub fn parse(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
        let parse_err = |message: String| ManifestError::Parse { path: path.to_path_buf(), message };
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| parse_err(e.to_string()))?;
        check_keys(&table, path)?;
        let raw: RawManifest = toml::from_str(text).map_err(|e: toml::de::Error| parse_err(e.to_string()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let lidar =
            raw.lidar.iter().enumerate().map(|(index, l)| l.binding(path, index)).collect::<Result<Vec<_>, _>>()?;
        let mut recorder = Recorder::default();
        if let Some(hz) = raw.recorder.lidar_runner_hz {
            if !(hz.is_finite() && hz > 0.0 && hz <= 10_000.0) {
                return Err(ManifestError::Value {
                    path: path.to_path_buf(),
                    message: format!(
                        "[recorder] lidar_runner_hz is {hz}, outside its range (0, 10000] ticks per second"
                    ),
                });
            }
            recorder.lidar_runner_hz = hz;
        }
        Ok(Manifest { path: path.to_path_buf(), scene: dir.join(&raw.scene), lidar, recorder })
    }
}

fn check_keys(table: &toml::Table, path: &Path) -> Result<(), ManifestError> {
    let unknown = |table: String, key: &str, valid: &[&str]| ManifestError::UnknownKey {
        path: path.to_path_buf(),
        table,
        key: key.into(),
        hint: hint(key, valid),
    };
    for key in table.keys() {
        if !TOP_KEYS.contains(&key.as_str()) {
            return Err(unknown("the top level".into(), key, TOP_KEYS));
        }
    }
    if let Some(toml::Value::Table(t)) = table.get("recorder")
        && let Some(key) = t.keys().find(|k| !RECORDER_KEYS.contains(&k.as_str()))
    {
        return Err(unknown("[recorder]".into(), key, RECORDER_KEYS));
    }
    if let Some(toml::Value::Array(items)) = table.get("lidar") {
        for (i, item) in items.iter().enumerate() {
            if let toml::Value::Table(t) = item
                && let Some(key) = t.keys().find(|k| !LIDAR_KEYS.contains(&k.as_str()))
            {
                return Err(unknown(format!("[[lidar]] {i}"), key, LIDAR_KEYS));
            }
        }
    }
    Ok(())
}

impl RawLidar {
    fn binding(&self, path: &Path, index: usize) -> Result<LidarBinding, ManifestError> {
        let lidar_err = |source: LidarError| ManifestError::Lidar { path: path.to_path_buf(), index, source };
        let bad = |key: &'static str, value: &str, valid: &'static str| ManifestError::BadValue {
            path: path.to_path_buf(),
            table: format!("[[lidar]] {index}"),
            key,
            value: value.into(),
            valid,
        };
        let mut scan = ScanConfig::default();
        if let Some(p) = &self.preset {
            ScanPreset::from_name(p).map_err(lidar_err)?.apply(&mut scan);
        }
        if let Some(p) = &self.pattern {
            scan.pattern = match p.as_str() {
                "spinning" => ScanPattern::Spinning,
                "livox-mid360" => ScanPattern::NonRepetitive(NonRepetitive::Mid360),
                "unitree-l1" => ScanPattern::NonRepetitive(NonRepetitive::UnitreeL1),
                "risley" => ScanPattern::NonRepetitive(NonRepetitive::RISLEY_DEFAULT),
                _ => return Err(bad("pattern", p, "spinning, livox-mid360, unitree-l1, risley")),
            };
        }
        if self.risley_spin_hz.is_some() || self.risley_prism_hz.is_some() {
            let ScanPattern::NonRepetitive(NonRepetitive::Risley { spin_hz, prism_hz }) = scan.pattern else {
                return Err(lidar_err(LidarError::Conflict(
                    "risley_spin_hz and risley_prism_hz need pattern = \"risley\"".into(),
                )));
            };
            scan.pattern = ScanPattern::NonRepetitive(NonRepetitive::Risley {
                spin_hz: self.risley_spin_hz.unwrap_or(spin_hz),
                prism_hz: self.risley_prism_hz.unwrap_or(prism_hz),
            });
        }
        let int = |field: &'static str, v: i64, range: &'static str| {
            u32::try_from(v).map_err(|_| lidar_err(LidarError::OutOfRange { field, value: v as f64, range }))
        };
        if let Some(v) = self.channels {
            scan.channels = int("channels", v, "1 to 256")?;
        }
        if let Some(v) = self.azimuth_bins {
            scan.azimuth_bins = int("azimuth_bins", v, "1 to 65535")?;
        }
        if let Some(v) = self.points_per_cycle {
            // As the seed's editor: points per cycle set one channel and go in azimuth_bins.
            scan.azimuth_bins = int("points_per_cycle", v, "1 to 65535")?;
            scan.channels = 1;
        }
        if let Some(v) = self.geom_group_mask {
            scan.geom_group_mask = int("geom_group_mask", v, "0 to 255")?;
        }
        for (value, slot) in [
            (self.rotation_hz, &mut scan.rotation_hz),
            (self.vfov_min_deg, &mut scan.vfov_min_deg),
            (self.vfov_max_deg, &mut scan.vfov_max_deg),
            (self.min_range, &mut scan.min_range),
            (self.max_range, &mut scan.max_range),
        ] {
            if let Some(v) = value {
                *slot = v;
            }
        }
        if let Some(s) = &self.self_ignore {
            scan.self_ignore = match s.as_str() {
                "none" => SelfIgnore::None,
                "mount-body" => SelfIgnore::MountBody,
                "whole-robot" => SelfIgnore::WholeRobot,
                _ => return Err(bad("self_ignore", s, "none, mount-body, whole-robot")),
            };
        }
        let secondary_capture = match self.secondary_capture.as_deref() {
            None | Some("off") => SecondaryCapture::Off,
            Some("pass-through") => SecondaryCapture::PassThrough,
            Some("reflected") => SecondaryCapture::Reflected,
            Some("both") => SecondaryCapture::Both,
            Some(s) => return Err(bad("secondary_capture", s, "off, pass-through, reflected, both")),
        };
        let secondary_scope = match self.secondary_scope.as_deref() {
            None | Some("flagged-materials") => SecondaryScope::FlaggedMaterials,
            Some("all-surfaces") => SecondaryScope::AllSurfaces,
            Some(s) => return Err(bad("secondary_scope", s, "flagged-materials, all-surfaces")),
        };
        scan.validate().map_err(lidar_err)?;
        if self.attach_body.is_none() && self.attach_site.is_none() {
            return Err(lidar_err(LidarError::NoAttachTarget { name: self.name.clone().unwrap_or_default() }));
        }
        let mount_offset = DVec3::from(self.mount_offset.unwrap_or([0.0; 3]));
        if !mount_offset.is_finite() {
            return Err(lidar_err(LidarError::OutOfRange {
                field: "mount_offset",
                value: mount_offset.max_element(),
                range: "finite metres",
            }));
        }
        Ok(LidarBinding {
            name: self.name.clone().unwrap_or_default(),
            attach_body: self.attach_body.clone(),
            attach_site: self.attach_site.clone(),
            mount_offset,
            scan,
            video_proxy: self.video_proxy.unwrap_or(false),
            secondary_capture,
            secondary_scope,
        })
    }
}
