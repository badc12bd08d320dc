//! A lidar binding and its scan configuration: the seed's fields, defaults and ranges, the
//! four scan presets, and [`ScanFields`], the fields by their manifest and sidecar keys.

use glam::DVec3;
use serde::{Deserialize, Serialize};

use crate::{LidarError, LidarWarning, Spelled};
use glint_core::{SpellingError, spelled};

/// Beam layout.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum ScanPattern {
    /// `channels` rows evenly across the vertical FOV, `azimuth_bins` columns over 360°.
    Spinning,
    /// A non-repetitive (Livox-style) pattern: `channels = 1`, `azimuth_bins` points per
    /// cycle, in emission order.
    NonRepetitive(NonRepetitive),
}

/// The generator behind a non-repetitive pattern.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum NonRepetitive {
    /// Livox Mid-360: four beams fired together sweep azimuth at about 160 revolutions per
    /// second while their elevations precess slowly across the FOV.
    Mid360,
    /// Unitree L1: a two-axis rotating mirror, a fast motor sweeping elevation and a slow one
    /// turning azimuth.
    UnitreeL1,
    /// A generic Risley-prism (rosette) unit spun about +Z: the head turns azimuth at
    /// `spin_hz` while two prisms rotating at `prism_hz` deflect elevation; incommensurate
    /// rates never repeat.
    Risley {
        /// Revolutions per second of the head about +Z.
        spin_hz: f64,
        /// Rotation rates of the two prisms (Hz).
        prism_hz: [f64; 2],
    },
}

impl NonRepetitive {
    /// The generic unit's documented defaults.
    pub const RISLEY_DEFAULT: NonRepetitive = NonRepetitive::Risley { spin_hz: 27.0, prism_hz: [97.0, -61.8] };
}

/// A pattern is named by its kind: every Risley unit is `risley`, whatever its rates, and
/// reads back with the documented defaults (the rates are fields of their own).
impl Spelled for ScanPattern {
    const WHAT: &'static str = "scan pattern";
    const NAMES: &'static [(Self, &'static str)] = &[
        (ScanPattern::Spinning, "spinning"),
        (ScanPattern::NonRepetitive(NonRepetitive::Mid360), "livox-mid360"),
        (ScanPattern::NonRepetitive(NonRepetitive::UnitreeL1), "unitree-l1"),
        (ScanPattern::NonRepetitive(NonRepetitive::RISLEY_DEFAULT), "risley"),
    ];

    fn name(self) -> &'static str {
        match self {
            ScanPattern::Spinning => "spinning",
            ScanPattern::NonRepetitive(NonRepetitive::Mid360) => "livox-mid360",
            ScanPattern::NonRepetitive(NonRepetitive::UnitreeL1) => "unitree-l1",
            ScanPattern::NonRepetitive(NonRepetitive::Risley { .. }) => "risley",
        }
    }

    fn index(self) -> usize {
        Self::NAMES.iter().position(|(v, _)| v.name() == self.name()).unwrap_or(usize::MAX)
    }
}

impl ScanPattern {
    /// The seed's integer for the pattern over the wire: 0 spinning uniform, 1 Livox
    /// non-repetitive (every non-repetitive generator).
    pub fn wire_code(self) -> u32 {
        match self {
            ScanPattern::Spinning => 0,
            ScanPattern::NonRepetitive(_) => 1,
        }
    }

    /// The pattern the seed's wire integer `code` names: 0 spinning, 1 non-repetitive, which
    /// keeps `current`'s generator when it is one (else the Livox Mid-360's). The error lists
    /// the valid integers.
    pub fn from_wire_code(code: u32, current: ScanPattern) -> Result<ScanPattern, LidarError> {
        match (code, current) {
            (0, _) => Ok(ScanPattern::Spinning),
            (1, ScanPattern::NonRepetitive(g)) => Ok(ScanPattern::NonRepetitive(g)),
            (1, ScanPattern::Spinning) => Ok(ScanPattern::NonRepetitive(NonRepetitive::Mid360)),
            _ => Err(SpellingError::UnknownIndex {
                what: "scan pattern",
                index: code as i64,
                valid: "0 (spinning uniform), 1 (Livox non-repetitive)".into(),
            }
            .into()),
        }
    }
}

impl std::fmt::Display for ScanPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a sensor's own beams pass through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SelfIgnore {
    /// Beams hit everything, including the sensor's housing.
    None,
    /// Beams pass through the attach body but hit the rest of the robot (the default).
    #[default]
    MountBody,
    /// Beams pass through the attach body's whole kinematic tree.
    WholeRobot,
}

spelled!(SelfIgnore, "self-ignore mode", [None => "none", MountBody => "mount-body", WholeRobot => "whole-robot"]);

/// Extra geometry recorded per beam (stored for the recorder).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecondaryCapture {
    /// Nothing extra (the default).
    #[default]
    Off,
    /// The ray straight on past the first hit.
    PassThrough,
    /// The ray folded about the surface normal.
    Reflected,
    /// Both.
    Both,
}

spelled!(SecondaryCapture, "secondary capture mode", [
    Off => "off",
    PassThrough => "pass-through",
    Reflected => "reflected",
    Both => "both",
]);

impl SecondaryCapture {
    /// Whether the straight-on ray past each hit is captured.
    pub fn pass_through(self) -> bool {
        matches!(self, SecondaryCapture::PassThrough | SecondaryCapture::Both)
    }

    /// Whether the folded ray off each hit is captured.
    pub fn reflected(self) -> bool {
        matches!(self, SecondaryCapture::Reflected | SecondaryCapture::Both)
    }
}

/// Where secondary rays are cast (stored for the recorder).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecondaryScope {
    /// Only where the hit material could need it (the default).
    #[default]
    FlaggedMaterials,
    /// At every hit.
    AllSurfaces,
}

spelled!(SecondaryScope, "secondary scope", [FlaggedMaterials => "flagged-materials", AllSurfaces => "all-surfaces"]);

/// The scan configuration of one sensor: the eight fields a preset sets, plus the group mask
/// and self-ignore (what `set_config` replaces in a running simulation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScanConfig {
    /// Beam layout.
    pub pattern: ScanPattern,
    /// Vertical beams (1 to 256); 1 for non-repetitive patterns.
    pub channels: u32,
    /// Azimuth samples per revolution, or points per cycle (1 to 65535).
    pub azimuth_bins: u32,
    /// Revolutions (or pattern cycles) per second (0 to 1000); 0 freezes the pattern.
    pub rotation_hz: f64,
    /// Lowest beam elevation, degrees (-90 to 90).
    pub vfov_min_deg: f64,
    /// Highest beam elevation, degrees (-90 to 90).
    pub vfov_max_deg: f64,
    /// Near cutoff, metres (0 to 10000): closer hits are dropped. Below `max_range`.
    pub min_range: f64,
    /// Far cutoff, metres (0 to 100000): hits at or beyond it are misses. Above `min_range`.
    pub max_range: f64,
    /// MuJoCo geom groups the beams hit (0 to 255; only the low six bits mean anything).
    pub geom_group_mask: u32,
    /// What the sensor's own beams pass through.
    pub self_ignore: SelfIgnore,
}

impl Default for ScanConfig {
    fn default() -> Self {
        ScanConfig {
            pattern: ScanPattern::Spinning,
            channels: 16,
            azimuth_bins: 1800,
            rotation_hz: 10.0,
            vfov_min_deg: -15.0,
            vfov_max_deg: 15.0,
            min_range: 0.5,
            max_range: 100.0,
            geom_group_mask: 255,
            self_ignore: SelfIgnore::MountBody,
        }
    }
}

/// The seed's four scan presets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScanPreset {
    /// `unitree-l1`: Unitree L1 (Go2 stock).
    UnitreeL1,
    /// `livox-mid360`: Livox Mid-360.
    LivoxMid360,
    /// `velodyne-vlp16`: Velodyne VLP-16 (spinning).
    VelodyneVlp16,
    /// `ouster-os1-64`: Ouster OS1-64 (spinning). Its ±22.5° vertical FOV is that of later
    /// hardware revisions (the seed's value).
    OusterOs1_64,
}

spelled!(ScanPreset, "lidar scan preset", [
    UnitreeL1 => "unitree-l1",
    LivoxMid360 => "livox-mid360",
    VelodyneVlp16 => "velodyne-vlp16",
    OusterOs1_64 => "ouster-os1-64",
]);

impl ScanPreset {
    /// Overwrites exactly the eight fields the seed lists (pattern, channels, bins, rate,
    /// both FOV bounds, both range bounds), leaving the group mask and self-ignore alone.
    pub fn apply(self, c: &mut ScanConfig) {
        let (pattern, channels, bins, vfov, range) = match self {
            ScanPreset::UnitreeL1 => {
                (ScanPattern::NonRepetitive(NonRepetitive::UnitreeL1), 1, 2160, (-45.0, 45.0), (0.05, 30.0))
            }
            ScanPreset::LivoxMid360 => {
                (ScanPattern::NonRepetitive(NonRepetitive::Mid360), 1, 20000, (-7.0, 52.0), (0.10, 70.0))
            }
            ScanPreset::VelodyneVlp16 => (ScanPattern::Spinning, 16, 1800, (-15.0, 15.0), (0.50, 100.0)),
            ScanPreset::OusterOs1_64 => (ScanPattern::Spinning, 64, 1024, (-22.5, 22.5), (0.50, 120.0)),
        };
        c.pattern = pattern;
        c.channels = channels;
        c.azimuth_bins = bins;
        c.rotation_hz = 10.0;
        (c.vfov_min_deg, c.vfov_max_deg) = vfov;
        (c.min_range, c.max_range) = range;
    }
}

impl ScanConfig {
    /// A configuration from a preset, other fields at their defaults.
    pub fn from_preset(preset: ScanPreset) -> ScanConfig {
        let mut c = ScanConfig::default();
        preset.apply(&mut c);
        c
    }

    /// Whether a first surface at `range` on geom `geomid` counts as a hit: a geom, inside
    /// `[min_range, max_range)`.
    pub(crate) fn is_hit(&self, range: f64, geomid: i32) -> bool {
        // `&`, not `&&`: no branch to mispredict in the loops that write whole ticks.
        (geomid >= 0) & (self.min_range <= range) & (range < self.max_range)
    }

    /// Number of beams: `channels * azimuth_bins`.
    pub fn beam_count(&self) -> usize {
        self.channels as usize * self.azimuth_bins as usize
    }

    /// The seed's split of beam index `k = bin * channels + channel` into `(bin, channel)`,
    /// for every pattern: a spinning unit's azimuth bin and vertical channel; for a
    /// non-repetitive one, the high and low parts of the emission index (not angles).
    pub fn bin_channel(&self, k: u32) -> (u16, u16) {
        let channels = self.channels.max(1);
        ((k / channels) as u16, (k % channels) as u16)
    }

    /// The beam index `bin * channels + channel` ([`ScanConfig::bin_channel`] undone).
    pub fn beam_index(&self, bin: u16, channel: u16) -> u32 {
        bin as u32 * self.channels.max(1) + channel as u32
    }

    /// The group mask MuJoCo understands (its six groups); the high bits are dropped.
    pub fn effective_group_mask(&self) -> u8 {
        (self.geom_group_mask & 0x3f) as u8
    }

    /// Checks every field against the seed's ranges, and that the range of hits,
    /// `[min_range, max_range)`, is not empty. Returns the warnings that do not stop the
    /// configuration (the group mask's high bits).
    pub fn validate(&self) -> Result<Vec<LidarWarning>, LidarError> {
        let check = |field: &'static str, value: f64, lo: f64, hi: f64, range: &'static str| {
            if value.is_finite() && (lo..=hi).contains(&value) {
                Ok(())
            } else {
                Err(LidarError::OutOfRange { field, value, range })
            }
        };
        check("channels", self.channels as f64, 1.0, 256.0, "1 to 256")?;
        check("azimuth_bins", self.azimuth_bins as f64, 1.0, 65535.0, "1 to 65535")?;
        check("rotation_hz", self.rotation_hz, 0.0, 1000.0, "0 to 1000")?;
        check("vfov_min_deg", self.vfov_min_deg, -90.0, 90.0, "-90 to 90")?;
        check("vfov_max_deg", self.vfov_max_deg, -90.0, 90.0, "-90 to 90")?;
        check("min_range", self.min_range, 0.0, 10000.0, "0 to 10000")?;
        check("max_range", self.max_range, 0.0, 100000.0, "0 to 100000")?;
        check("geom_group_mask", self.geom_group_mask as f64, 0.0, 255.0, "0 to 255")?;
        if self.vfov_min_deg > self.vfov_max_deg {
            return Err(LidarError::Conflict(format!(
                "vfov_min_deg ({}) is above vfov_max_deg ({})",
                self.vfov_min_deg, self.vfov_max_deg
            )));
        }
        // A hit counts inside [min_range, max_range): equal bounds would drop every hit.
        if self.min_range >= self.max_range {
            let relation = if self.min_range > self.max_range { "is above" } else { "equals" };
            return Err(LidarError::Conflict(format!(
                "min_range ({}) {relation} max_range ({}): hits count from min_range up to (not \
                 including) max_range, so that range is empty; make min_range smaller than max_range",
                self.min_range, self.max_range
            )));
        }
        if let ScanPattern::NonRepetitive(generator) = self.pattern {
            if self.channels != 1 {
                return Err(LidarError::Conflict(format!(
                    "a non-repetitive pattern has one channel (channels = {}); its points per cycle go in azimuth_bins",
                    self.channels
                )));
            }
            if let NonRepetitive::Risley { spin_hz, prism_hz } = generator {
                check("risley spin_hz", spin_hz, -1000.0, 1000.0, "-1000 to 1000")?;
                for hz in prism_hz {
                    check("risley prism_hz", hz, -10000.0, 10000.0, "-10000 to 10000")?;
                }
            }
        }
        let mut warnings = Vec::new();
        // 255 is the seed's default ("all groups"); other masks with high bits get a word.
        if self.geom_group_mask > 0x3f && self.geom_group_mask != 255 {
            warnings.push(LidarWarning::GroupMaskHighBits {
                mask: self.geom_group_mask,
                used: self.effective_group_mask(),
            });
        }
        Ok(warnings)
    }
}

/// The scan configuration's fields by the keys the manifest's `[[lidar]]` tables and the
/// recorder's sidecars use, each one optional: a sidecar holds them all, a manifest table
/// the ones it changes. Read one with serde, then [`ScanFields::apply`] it; integers are read
/// wide so that a bad value is reported with its range.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanFields {
    /// `spinning`, `livox-mid360`, `unitree-l1` or `risley`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pattern: Option<String>,
    /// Risley head rate (Hz), for the `risley` pattern.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    risley_spin_hz: Option<f64>,
    /// Risley prism rates (Hz), for the `risley` pattern.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "two_rates")]
    risley_prism_hz: Option<[f64; 2]>,
    /// Vertical beams (1 for non-repetitive patterns).
    #[serde(skip_serializing_if = "Option::is_none")]
    channels: Option<i64>,
    /// Azimuth bins per revolution, or points per cycle.
    #[serde(skip_serializing_if = "Option::is_none")]
    azimuth_bins: Option<i64>,
    /// The seed's Points / cycle: sets one channel and `azimuth_bins` (never written back).
    #[serde(default, skip_serializing)]
    points_per_cycle: Option<i64>,
    /// Revolutions (or cycles) per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    rotation_hz: Option<f64>,
    /// Lowest beam elevation, degrees.
    #[serde(skip_serializing_if = "Option::is_none")]
    vfov_min_deg: Option<f64>,
    /// Highest beam elevation, degrees.
    #[serde(skip_serializing_if = "Option::is_none")]
    vfov_max_deg: Option<f64>,
    /// Near cutoff, metres.
    #[serde(skip_serializing_if = "Option::is_none")]
    min_range: Option<f64>,
    /// Far cutoff, metres.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_range: Option<f64>,
    /// MuJoCo geom groups the beams hit.
    #[serde(skip_serializing_if = "Option::is_none")]
    geom_group_mask: Option<i64>,
    /// `none`, `mount-body` or `whole-robot`.
    #[serde(skip_serializing_if = "Option::is_none")]
    self_ignore: Option<String>,
}

/// Exactly two rates: serde's `[f64; 2]` reads the first two of a longer TOML array and drops
/// the rest without a word.
fn two_rates<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<[f64; 2]>, D::Error> {
    let rates = Vec::<f64>::deserialize(d)?;
    let count = rates.len();
    let two: [f64; 2] = rates
        .try_into()
        .map_err(|_| serde::de::Error::invalid_length(count, &"an array of exactly 2 rates, [hz, hz]"))?;
    Ok(Some(two))
}

impl ScanFields {
    /// Every key, in order: the struct's own field names, as serde reads them.
    pub fn keys() -> &'static [&'static str] {
        glint_core::struct_fields::<ScanFields>()
    }

    /// The keys a whole configuration may lack: the Risley rates (other patterns have none)
    /// and points per cycle (written as `azimuth_bins`).
    const OPTIONAL: [&'static str; 3] = ["risley_spin_hz", "risley_prism_hz", "points_per_cycle"];

    /// Every field of `c`.
    pub fn of(c: &ScanConfig) -> ScanFields {
        let (risley_spin_hz, risley_prism_hz) = match c.pattern {
            ScanPattern::NonRepetitive(NonRepetitive::Risley { spin_hz, prism_hz }) => (Some(spin_hz), Some(prism_hz)),
            _ => (None, None),
        };
        ScanFields {
            pattern: Some(c.pattern.name().into()),
            risley_spin_hz,
            risley_prism_hz,
            channels: Some(c.channels.into()),
            azimuth_bins: Some(c.azimuth_bins.into()),
            points_per_cycle: None,
            rotation_hz: Some(c.rotation_hz),
            vfov_min_deg: Some(c.vfov_min_deg),
            vfov_max_deg: Some(c.vfov_max_deg),
            min_range: Some(c.min_range),
            max_range: Some(c.max_range),
            geom_group_mask: Some(c.geom_group_mask.into()),
            self_ignore: Some(c.self_ignore.name().into()),
        }
    }

    /// Writes the fields given into `c`, as the seed's editor does: the pattern (a Risley
    /// pattern's rates after it), then the numbers; points per cycle set one channel. Errors
    /// name the field; `c` is not validated as a whole (call [`ScanConfig::validate`]).
    pub fn apply(&self, c: &mut ScanConfig) -> Result<(), LidarError> {
        if let Some(p) = &self.pattern {
            c.pattern = ScanPattern::from_name(p).map_err(|e| LidarError::from(e).for_key("pattern"))?;
        }
        if self.risley_spin_hz.is_some() || self.risley_prism_hz.is_some() {
            let ScanPattern::NonRepetitive(NonRepetitive::Risley { spin_hz, prism_hz }) = c.pattern else {
                return Err(LidarError::Conflict(
                    "risley_spin_hz and risley_prism_hz need pattern = \"risley\"".into(),
                ));
            };
            c.pattern = ScanPattern::NonRepetitive(NonRepetitive::Risley {
                spin_hz: self.risley_spin_hz.unwrap_or(spin_hz),
                prism_hz: self.risley_prism_hz.unwrap_or(prism_hz),
            });
        }
        let whole = |field: &'static str, v: i64, range: &'static str| {
            u32::try_from(v).map_err(|_| LidarError::OutOfRange { field, value: v as f64, range })
        };
        if let Some(v) = self.channels {
            c.channels = whole("channels", v, "1 to 256")?;
        }
        if let Some(v) = self.azimuth_bins {
            c.azimuth_bins = whole("azimuth_bins", v, "1 to 65535")?;
        }
        if let Some(v) = self.points_per_cycle {
            c.azimuth_bins = whole("points_per_cycle", v, "1 to 65535")?;
            c.channels = 1;
        }
        if let Some(v) = self.geom_group_mask {
            c.geom_group_mask = whole("geom_group_mask", v, "0 to 255")?;
        }
        for (value, slot) in [
            (self.rotation_hz, &mut c.rotation_hz),
            (self.vfov_min_deg, &mut c.vfov_min_deg),
            (self.vfov_max_deg, &mut c.vfov_max_deg),
            (self.min_range, &mut c.min_range),
            (self.max_range, &mut c.max_range),
        ] {
            if let Some(v) = value {
                *slot = v;
            }
        }
        if let Some(s) = &self.self_ignore {
            c.self_ignore = SelfIgnore::from_name(s).map_err(|e| LidarError::from(e).for_key("self_ignore"))?;
        }
        Ok(())
    }

    /// The first key a whole configuration has that these fields lack: of the keys, those
    /// not written (serde skips a field that is `None`) and not optional.
    fn missing(&self) -> Option<&'static str> {
        let written = serde_json::to_value(self).ok()?;
        let written = written.as_object()?;
        Self::keys().iter().copied().find(|key| !written.contains_key(*key) && !Self::OPTIONAL.contains(key))
    }
}

/// Written as [`ScanFields`]: every field by its key, enums by name.
impl Serialize for ScanConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ScanFields::of(self).serialize(s)
    }
}

/// Read from [`ScanFields`] holding every field, and validated.
impl<'de> Deserialize<'de> for ScanConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let fields = ScanFields::deserialize(d)?;
        if let Some(key) = fields.missing() {
            return Err(D::Error::missing_field(key));
        }
        let mut c = ScanConfig::default();
        fields.apply(&mut c).map_err(D::Error::custom)?;
        c.validate().map_err(D::Error::custom)?;
        Ok(c)
    }
}

/// A lidar binding: where the sensor sits and how it scans.
#[derive(Clone, Debug, PartialEq)]
pub struct LidarBinding {
    /// Output name (file-name suffix for recordings); filled from the attach target if empty.
    pub name: String,
    /// Body the sensor is attached to (used when no site is given).
    pub attach_body: Option<String>,
    /// Site the sensor is attached to (wins over the body).
    pub attach_site: Option<String>,
    /// Offset from the attach point, metres, in the attach frame.
    pub mount_offset: DVec3,
    /// Scan configuration.
    pub scan: ScanConfig,
    /// Whether to also write an H.264 video proxy (stored for the recorder).
    pub video_proxy: bool,
    /// Secondary geometry to record (stored for the recorder).
    pub secondary_capture: SecondaryCapture,
    /// Where secondary rays are cast (stored for the recorder).
    pub secondary_scope: SecondaryScope,
    /// Whether the beams meet the scene's skins and drawn flexes, as a real lidar meets a
    /// dog's skin or a cloth: reported as geom `ngeom + skin`. Off by default, so that the
    /// beams equal `mj_ray`, which sees neither. A skin bound to a body the sensor ignores
    /// (its self-ignore mode) is ignored with it; its group must be in the group mask.
    pub see_skins: bool,
}

impl LidarBinding {
    /// The largest mount offset component, metres: a sensor is mounted on its robot, and a
    /// pose 10 km out already loses millimetres in the `f32` geometry the rays meet.
    pub const MAX_MOUNT_OFFSET_M: f64 = 1.0e4;

    /// Checks what [`ScanConfig::validate`] does not cover: every component of the mount
    /// offset is a finite number of metres within ±[`LidarBinding::MAX_MOUNT_OFFSET_M`] (the
    /// error names the first that is not).
    pub fn check_mount_offset(&self) -> Result<(), LidarError> {
        let bad = |v: &f64| !(v.is_finite() && v.abs() <= Self::MAX_MOUNT_OFFSET_M);
        match self.mount_offset.to_array().iter().position(bad) {
            Some(component) => Err(LidarError::ComponentOutOfRange {
                field: "mount_offset",
                component,
                value: self.mount_offset[component],
                range: "finite metres from -10000 to 10000",
            }),
            None => Ok(()),
        }
    }
}

impl Default for LidarBinding {
    fn default() -> Self {
        LidarBinding {
            name: String::new(),
            attach_body: None,
            attach_site: None,
            mount_offset: DVec3::ZERO,
            scan: ScanConfig::default(),
            video_proxy: false,
            secondary_capture: SecondaryCapture::Off,
            secondary_scope: SecondaryScope::FlaggedMaterials,
            see_skins: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_fields_name_every_key_and_read_back_whole_configurations() {
        let risley = ScanPattern::NonRepetitive(NonRepetitive::Risley { spin_hz: 20.0, prism_hz: [90.0, -50.0] });
        let c = ScanConfig { pattern: risley, channels: 1, azimuth_bins: 5000, ..ScanConfig::default() };
        let json = serde_json::to_value(c).unwrap();
        let written: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
        let mut keys: Vec<&str> = ScanFields::keys().iter().copied().filter(|k| *k != "points_per_cycle").collect();
        keys.sort();
        let mut sorted = written.clone();
        sorted.sort();
        assert_eq!(sorted, keys, "KEYS lists every field a configuration is written with");
        assert_eq!(serde_json::from_value::<ScanConfig>(json.clone()).unwrap(), c);
        // A whole configuration is needed; a bad one is refused with its field.
        let mut partial = json.clone();
        partial.as_object_mut().unwrap().remove("max_range");
        assert!(serde_json::from_value::<ScanConfig>(partial).unwrap_err().to_string().contains("max_range"));
        let mut bad = json;
        bad["self_ignore"] = "all".into();
        let err = serde_json::from_value::<ScanConfig>(bad).unwrap_err().to_string();
        assert!(err.contains("self_ignore = \"all\"") && err.contains("mount-body"), "{err}");
    }

    #[test]
    fn scan_fields_change_only_what_they_hold() {
        let fields: ScanFields = serde_json::from_str(r#"{"points_per_cycle": 300, "max_range": 12.5}"#).unwrap();
        let mut c = ScanConfig::from_preset(ScanPreset::LivoxMid360);
        fields.apply(&mut c).unwrap();
        assert_eq!((c.channels, c.azimuth_bins, c.max_range, c.vfov_max_deg), (1, 300, 12.5, 52.0));
        let negative: ScanFields = serde_json::from_str(r#"{"channels": -3}"#).unwrap();
        assert!(negative.apply(&mut c).unwrap_err().to_string().contains("`channels` is -3"));
        let rates: ScanFields = serde_json::from_str(r#"{"risley_spin_hz": 3.0}"#).unwrap();
        assert!(rates.apply(&mut c).unwrap_err().to_string().contains("need pattern = \"risley\""));
        assert!(serde_json::from_str::<ScanFields>(r#"{"chanels": 3}"#).is_err(), "unknown keys are refused");
    }
}
