//! Point layouts of `sensor_msgs/PointCloud2`: the fields of the ROS 2 driver of each real
//! unit glint's presets copy, so that what consumes that driver's clouds (LIO-SAM and
//! FAST-LIO read `ring` and `t`/`time`/`timestamp`) consumes glint's unchanged, and glint's
//! own layout for every other pattern.
//!
//! | layout | driver | bytes | fields (offset) |
//! |---|---|---|---|
//! | `ouster` | `ouster_ros` (ROS 2), `ouster_ros::Point` | 48 | x 0, y 4, z 8 (f32), intensity 16 (f32), t 20 (u32, ns since the message's stamp), reflectivity 24 (u16), ring 26 (u16), ambient 28 (u16), range 32 (u32, mm) |
//! | `velodyne` | `velodyne_pointcloud` (ROS 2), `PointcloudXYZIRT` | 22 | x 0, y 4, z 8, intensity 12 (f32), ring 16 (u16), time 18 (f32, s since the stamp) |
//! | `livox` | `livox_ros_driver2`, `xfer_format` 0 (`LivoxPointXyzrtlt`, packed) | 26 | x 0, y 4, z 8, intensity 12 (f32), tag 16 (u8), line 17 (u8), timestamp 18 (f64, ns of simulated time) |
//! | `glint` | glint's own | 60 | x 0, y 4, z 8, intensity 12, reflectivity 16, range 20 (f32), time 24 (f32, s since the stamp), ring 28 (u16, the channel), bin 30 (u16), geom_id 32 (i32), echo 36 (u8), azimuth 40 (f32, degrees), height 44 (f32, world z), order 48 (u32, emission index in the cycle), incidence 52 (f32, degrees; -1 unknown), nir_reflectivity 56 (f32, the bake's; -1 without one) |
//!
//! glint's layout carries a field for each of the seed's colour-by modes a recording holds
//! (channel as `ring`, range, height, azimuth, sample order as `order`, incidence, intensity,
//! NIR reflectivity, calibrated reflectivity as `reflectivity`), for a viewer to colour by.
//!
//! `ring` is the recording's `channel` (the seed's beam indexing); `line` is which of the
//! Mid-360's four beams fired. A clean recording has no intensity or reflectivity: they are 0
//! there. From an exported variant, `intensity` is the echo's intensity and `reflectivity`
//! its calibrated reflectivity (Ouster's field: `round(100 × S)`, at most 255).

use glint_lidar::{NonRepetitive, ScanConfig, ScanPattern, ScanPreset};
use serde::{Deserialize, Serialize};

use crate::msgs::{Datatype, PointField};

/// A point cloud layout (see the module's docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PointLayout {
    /// `ouster_ros`'s 48-byte point.
    Ouster,
    /// `velodyne_pointcloud`'s 22-byte XYZIRT point.
    Velodyne,
    /// `livox_ros_driver2`'s 26-byte point.
    Livox,
    /// glint's own 60-byte point.
    Glint,
}

/// One point, as a layout encodes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LidarPoint {
    /// Position in the sensor frame of its tick, metres.
    pub xyz: [f32; 3],
    /// Range along the beam, metres.
    pub range: f32,
    /// Intensity (0 where the recording has none).
    pub intensity: f32,
    /// Calibrated reflectivity (0 where the recording has none).
    pub reflectivity: f32,
    /// Vertical channel (or the low part of the emission index).
    pub channel: u16,
    /// Azimuth bin (or the high part of the emission index).
    pub bin: u16,
    /// Beam index `bin * channels + channel`.
    pub beam: u32,
    /// Geom hit.
    pub geom_id: i32,
    /// 0 for the primary echo, 1 for a second echo.
    pub echo: u8,
    /// Seconds since the message's stamp.
    pub offset_s: f64,
    /// Height in the world (world `z`), metres.
    pub height: f32,
    /// Angle between the beam and the surface normal, degrees (`-1`: unknown).
    pub incidence: f32,
    /// The baked NIR reflectivity of the surface hit (`-1`: no bake, or none there).
    pub nir_reflectivity: f32,
    /// Simulated seconds since the episode began.
    pub time_s: f64,
}

impl PointLayout {
    /// Every layout.
    pub const ALL: [PointLayout; 4] =
        [PointLayout::Ouster, PointLayout::Velodyne, PointLayout::Livox, PointLayout::Glint];

    /// The name `--layout` and the docs use.
    pub fn name(self) -> &'static str {
        match self {
            PointLayout::Ouster => "ouster",
            PointLayout::Velodyne => "velodyne",
            PointLayout::Livox => "livox",
            PointLayout::Glint => "glint",
        }
    }

    /// The layout of the driver of the preset `config` is (pattern, channels and azimuth
    /// bins of `ouster-os1-64`, `velodyne-vlp16` or `livox-mid360`); glint's own otherwise.
    pub fn for_config(config: &ScanConfig) -> PointLayout {
        if matches!(config.pattern, ScanPattern::NonRepetitive(NonRepetitive::Mid360)) {
            return PointLayout::Livox;
        }
        let is = |preset| {
            let p = ScanConfig::from_preset(preset);
            p.pattern == config.pattern && p.channels == config.channels && p.azimuth_bins == config.azimuth_bins
        };
        if is(ScanPreset::OusterOs1_64) {
            PointLayout::Ouster
        } else if is(ScanPreset::VelodyneVlp16) {
            PointLayout::Velodyne
        } else {
            PointLayout::Glint
        }
    }

    /// Bytes per point.
    pub fn point_step(self) -> u32 {
        match self {
            PointLayout::Ouster => 48,
            PointLayout::Velodyne => 22,
            PointLayout::Livox => 26,
            PointLayout::Glint => 60,
        }
    }

    /// The fields, in offset order.
    pub fn fields(self) -> &'static [PointField] {
        use Datatype::*;
        const fn f(name: &'static str, offset: u32, datatype: Datatype) -> PointField {
            PointField { name, offset, datatype }
        }
        const XYZ: [PointField; 3] = [f("x", 0, F32), f("y", 4, F32), f("z", 8, F32)];
        const OUSTER: [PointField; 9] = [
            XYZ[0],
            XYZ[1],
            XYZ[2],
            f("intensity", 16, F32),
            f("t", 20, U32),
            f("reflectivity", 24, U16),
            f("ring", 26, U16),
            f("ambient", 28, U16),
            f("range", 32, U32),
        ];
        const VELODYNE: [PointField; 6] =
            [XYZ[0], XYZ[1], XYZ[2], f("intensity", 12, F32), f("ring", 16, U16), f("time", 18, F32)];
        const LIVOX: [PointField; 7] = [
            XYZ[0],
            XYZ[1],
            XYZ[2],
            f("intensity", 12, F32),
            f("tag", 16, U8),
            f("line", 17, U8),
            f("timestamp", 18, F64),
        ];
        const GLINT: [PointField; 16] = [
            XYZ[0],
            XYZ[1],
            XYZ[2],
            f("intensity", 12, F32),
            f("reflectivity", 16, F32),
            f("range", 20, F32),
            f("time", 24, F32),
            f("ring", 28, U16),
            f("bin", 30, U16),
            f("geom_id", 32, I32),
            f("echo", 36, U8),
            f("azimuth", 40, F32),
            f("height", 44, F32),
            f("order", 48, U32),
            f("incidence", 52, F32),
            f("nir_reflectivity", 56, F32),
        ];
        match self {
            PointLayout::Ouster => &OUSTER,
            PointLayout::Velodyne => &VELODYNE,
            PointLayout::Livox => &LIVOX,
            PointLayout::Glint => &GLINT,
        }
    }

    /// Appends `p` in this layout to `out`.
    pub fn encode(self, p: &LidarPoint, out: &mut Vec<u8>) {
        let mut b = [0u8; 60];
        let mut put = |offset: usize, bytes: &[u8]| b[offset..offset + bytes.len()].copy_from_slice(bytes);
        for (i, v) in p.xyz.iter().enumerate() {
            put(4 * i, &v.to_le_bytes());
        }
        match self {
            PointLayout::Ouster => {
                put(16, &p.intensity.to_le_bytes());
                put(20, &((p.offset_s * 1e9).round().clamp(0.0, u32::MAX as f64) as u32).to_le_bytes());
                put(24, &((p.reflectivity as f64 * 100.0).round().clamp(0.0, 255.0) as u16).to_le_bytes());
                put(26, &p.channel.to_le_bytes());
                put(32, &((p.range as f64 * 1000.0).round().clamp(0.0, u32::MAX as f64) as u32).to_le_bytes());
            }
            PointLayout::Velodyne => {
                put(12, &p.intensity.to_le_bytes());
                put(16, &p.channel.to_le_bytes());
                put(18, &(p.offset_s as f32).to_le_bytes());
            }
            PointLayout::Livox => {
                put(12, &p.intensity.to_le_bytes());
                put(17, &[(p.beam % 4) as u8]);
                put(18, &(p.time_s * 1e9).round().to_le_bytes());
            }
            PointLayout::Glint => {
                put(12, &p.intensity.to_le_bytes());
                put(16, &p.reflectivity.to_le_bytes());
                put(20, &p.range.to_le_bytes());
                put(24, &(p.offset_s as f32).to_le_bytes());
                put(28, &p.channel.to_le_bytes());
                put(30, &p.bin.to_le_bytes());
                put(32, &p.geom_id.to_le_bytes());
                put(36, &[p.echo]);
                let azimuth = (p.xyz[1] as f64).atan2(p.xyz[0] as f64).to_degrees().rem_euclid(360.0);
                put(40, &(azimuth as f32).to_le_bytes());
                put(44, &p.height.to_le_bytes());
                put(48, &p.beam.to_le_bytes());
                put(52, &p.incidence.to_le_bytes());
                put(56, &p.nir_reflectivity.to_le_bytes());
            }
        }
        out.extend_from_slice(&b[..self.point_step() as usize]);
    }
}

impl std::str::FromStr for PointLayout {
    type Err = String;

    fn from_str(s: &str) -> Result<PointLayout, String> {
        PointLayout::ALL.into_iter().find(|l| l.name() == s).ok_or_else(|| {
            let names: Vec<&str> = PointLayout::ALL.iter().map(|l| l.name()).collect();
            format!("unknown point layout '{s}': use one of {}", names.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_fit_inside_the_point_and_do_not_overlap() {
        for layout in PointLayout::ALL {
            let mut end = 0;
            for f in layout.fields() {
                assert!(f.offset >= end, "{layout:?} {}", f.name);
                let size = match f.datatype {
                    Datatype::U8 => 1,
                    Datatype::U16 => 2,
                    Datatype::I32 | Datatype::U32 | Datatype::F32 => 4,
                    Datatype::F64 => 8,
                };
                end = f.offset + size;
            }
            assert!(end <= layout.point_step(), "{layout:?}");
        }
    }

    #[test]
    fn presets_choose_their_drivers() {
        let of = |p| PointLayout::for_config(&ScanConfig::from_preset(p));
        assert_eq!(of(ScanPreset::OusterOs1_64), PointLayout::Ouster);
        assert_eq!(of(ScanPreset::VelodyneVlp16), PointLayout::Velodyne);
        assert_eq!(of(ScanPreset::LivoxMid360), PointLayout::Livox);
        assert_eq!(of(ScanPreset::UnitreeL1), PointLayout::Glint);
        assert_eq!(PointLayout::for_config(&ScanConfig { channels: 7, ..ScanConfig::default() }), PointLayout::Glint);
    }
}
