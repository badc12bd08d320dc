//! A lidar binding and its scan configuration: the seed's fields, defaults and ranges, and
//! the four scan presets.

use glam::DVec3;

use crate::LidarError;

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
    /// Near cutoff, metres (0 to 10000): closer hits are dropped.
    pub min_range: f64,
    /// Far cutoff, metres (0 to 100000): farther hits are misses.
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

impl ScanPreset {
    /// Every preset, in the seed's order.
    pub const ALL: [ScanPreset; 4] =
        [ScanPreset::UnitreeL1, ScanPreset::LivoxMid360, ScanPreset::VelodyneVlp16, ScanPreset::OusterOs1_64];

    /// The manifest name.
    pub fn name(self) -> &'static str {
        match self {
            ScanPreset::UnitreeL1 => "unitree-l1",
            ScanPreset::LivoxMid360 => "livox-mid360",
            ScanPreset::VelodyneVlp16 => "velodyne-vlp16",
            ScanPreset::OusterOs1_64 => "ouster-os1-64",
        }
    }

    /// The preset called `name`.
    pub fn from_name(name: &str) -> Result<ScanPreset, LidarError> {
        ScanPreset::ALL.into_iter().find(|p| p.name() == name).ok_or_else(|| LidarError::UnknownPreset(name.into()))
    }

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
    pub fn is_hit(&self, range: f64, geomid: i32) -> bool {
        geomid >= 0 && self.min_range <= range && range < self.max_range
    }

    /// Number of beams: `channels * azimuth_bins`.
    pub fn beam_count(&self) -> usize {
        self.channels as usize * self.azimuth_bins as usize
    }

    /// The group mask MuJoCo understands (its six groups); the high bits are dropped.
    pub fn effective_group_mask(&self) -> u8 {
        (self.geom_group_mask & 0x3f) as u8
    }

    /// Checks every field against the seed's ranges. Returns the warnings that do not stop
    /// the configuration (the group mask's high bits).
    pub fn validate(&self) -> Result<Vec<String>, LidarError> {
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
        if self.min_range > self.max_range {
            return Err(LidarError::Conflict(format!(
                "min_range ({}) is above max_range ({})",
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
            warnings.push(format!(
                "geom_group_mask {} sets bits above the six MuJoCo geom groups; only {} (the low six bits) is used",
                self.geom_group_mask,
                self.effective_group_mask()
            ));
        }
        Ok(warnings)
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
        }
    }
}
