//! Point clouds from a recording: each row with a return becomes a point, its direction from
//! the beam table, its range from the lidar file (or an exported variant's measured range),
//! placed in the sensor frame or, through the pose table, in the world. Written as PLY, PCD
//! or KITTI `.bin` (`glint points`).

use std::io::Write;
use std::path::Path;

use glam::{DQuat, DVec3};

use crate::RecordError;
use crate::beams::{CycleCounter, beam_path, read_beam_file};
use crate::export::read_variant_file;
use crate::export::verify_variant_file;
use crate::poses::{pose_path, read_pose_file};
use crate::reader::read_lidar_file;
use crate::verify::verified_sidecar;

/// Which frame points are given in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointFrame {
    /// The world frame (through the pose table).
    World,
    /// The sensor frame of each point's tick (+X forward, +Z up).
    Sensor,
}

/// A point cloud, one entry per point in every column.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PointCloud {
    /// Position, metres.
    pub xyz: Vec<[f64; 3]>,
    /// Seconds since the episode start (the tick's).
    pub timestamp: Vec<f64>,
    /// Range along the beam, metres (the measured one for a variant).
    pub range: Vec<f32>,
    /// Intensity of a variant's echo (`-1` where there is none, and for a clean recording).
    pub intensity: Vec<f32>,
    /// Azimuth bin, or the high part of the emission index.
    pub bin: Vec<u16>,
    /// Vertical channel, or the low part of the emission index.
    pub channel: Vec<u16>,
    /// Geom hit.
    pub geom_id: Vec<i32>,
    /// 0 for the primary echo, 1 for a variant's second echo.
    pub echo: Vec<u8>,
}

impl PointCloud {
    /// Number of points.
    pub fn len(&self) -> usize {
        self.xyz.len()
    }

    /// Whether it has no points.
    pub fn is_empty(&self) -> bool {
        self.xyz.is_empty()
    }
}

/// The points of the lidar file `lidar` (clean hits), or with `variant` the measured echoes
/// of that variant file of it (primary and second echoes), in `frame`.
/// Every file read is checked against the SHA-256 its sidecar (or the variant's
/// `augmentation.json`) records first: a damaged file is refused, never read as other points.
pub fn recorded_points(lidar: &Path, variant: Option<&Path>, frame: PointFrame) -> Result<PointCloud, RecordError> {
    let sidecar = verified_sidecar(lidar)?;
    if let Some(v) = variant {
        verify_variant_file(v)?;
    }
    let config = sidecar.sensor.scan;
    let Some(entry) = &sidecar.beams else {
        return Err(RecordError::Setting(format!(
            "'{}' has no beam table (recorded before glint wrote them): re-record the session",
            lidar.display()
        )));
    };
    let beams = read_beam_file(&beam_path(lidar))?;
    let rows = read_lidar_file(lidar)?;
    let poses = read_pose_file(&pose_path(lidar))?;
    let echoes = variant.map(read_variant_file).transpose()?;
    if let Some(v) = &echoes
        && v.len() != rows.len()
    {
        return Err(RecordError::Setting(format!(
            "the variant file has {} rows and its source '{}' {}: they are not the same recording",
            v.len(),
            lidar.display(),
            rows.len()
        )));
    }
    let per_cycle = config.beam_count();
    let mut cycles = CycleCounter::new(entry.cycles);
    let mut cloud = PointCloud::default();
    let mut tick = 0;
    for r in 0..rows.len() {
        let k = config.beam_index(rows.bin[r], rows.channel[r]);
        let cycle = cycles.next(k);
        let t = rows.timestamp[r];
        while tick + 1 < poses.len() && poses.timestamp[tick] < t {
            tick += 1;
        }
        let (az, el) = beams.angles(cycle, k, per_cycle).ok_or_else(|| {
            RecordError::Setting(format!(
                "row {r} of '{}' is beam {k} of cycle {cycle}, which its beam table does not list",
                lidar.display()
            ))
        })?;
        let (az, el) = (az as f64, el as f64);
        let dir = DVec3::new(el.cos() * az.cos(), el.cos() * az.sin(), el.sin());
        let (origin, rotation) = match frame {
            PointFrame::World => (poses.position[tick], poses.rotation[tick]),
            PointFrame::Sensor => (DVec3::ZERO, DQuat::IDENTITY),
        };
        // (range, intensity, geom, echo) of the row's returns: its clean hit, or the variant's
        // primary and second echoes.
        let returns = match &echoes {
            None => [(rows.hit[r] == 1).then_some((rows.range[r], -1.0, rows.geom_id[r], 0)), None],
            Some(v) => [(v.range[r], v.intensity[r], v.geom_id[r], 0), (v.secondary_range[r], -1.0, -1, 1)]
                .map(|e| (e.0 >= 0.0).then_some(e)),
        };
        for (range, intensity, geom, echo) in returns.into_iter().flatten() {
            let p = origin + rotation * (dir * range as f64);
            cloud.xyz.push(p.to_array());
            cloud.timestamp.push(t);
            cloud.range.push(range);
            cloud.intensity.push(intensity);
            cloud.bin.push(rows.bin[r]);
            cloud.channel.push(rows.channel[r]);
            cloud.geom_id.push(geom);
            cloud.echo.push(echo);
        }
    }
    Ok(cloud)
}

/// Point-cloud file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointFormat {
    /// Binary little-endian PLY with every per-point field.
    Ply,
    /// Binary PCD (v0.7) with every per-point field.
    Pcd,
    /// KITTI velodyne `.bin`: N × 4 float32 (x, y, z, intensity; intensity 0 where there is
    /// none).
    Kitti,
}

/// Writes `cloud` as `format` to `out`; `comment` goes into the header where the format has
/// one.
pub fn write_points(
    cloud: &PointCloud,
    format: PointFormat,
    comment: &str,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let n = cloud.len();
    match format {
        PointFormat::Ply => write!(
            out,
            "ply\nformat binary_little_endian 1.0\ncomment {comment}\nelement vertex {n}\n\
             property float x\nproperty float y\nproperty float z\nproperty double timestamp\n\
             property float range\nproperty float intensity\nproperty ushort bin\nproperty ushort channel\n\
             property int geom_id\nproperty uchar echo\nend_header\n"
        )?,
        PointFormat::Pcd => write!(
            out,
            "# .PCD v0.7 - {comment}\nVERSION 0.7\nFIELDS x y z timestamp range intensity bin channel geom_id echo\n\
             SIZE 4 4 4 8 4 4 2 2 4 1\nTYPE F F F F F F U U I U\nCOUNT 1 1 1 1 1 1 1 1 1 1\n\
             WIDTH {n}\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS {n}\nDATA binary\n"
        )?,
        PointFormat::Kitti => {}
    }
    let mut buf = Vec::with_capacity(64 * 1024);
    for i in 0..n {
        for v in cloud.xyz[i] {
            buf.extend_from_slice(&(v as f32).to_le_bytes());
        }
        if format == PointFormat::Kitti {
            buf.extend_from_slice(&cloud.intensity[i].max(0.0).to_le_bytes());
        } else {
            buf.extend_from_slice(&cloud.timestamp[i].to_le_bytes());
            buf.extend_from_slice(&cloud.range[i].to_le_bytes());
            buf.extend_from_slice(&cloud.intensity[i].to_le_bytes());
            buf.extend_from_slice(&cloud.bin[i].to_le_bytes());
            buf.extend_from_slice(&cloud.channel[i].to_le_bytes());
            buf.extend_from_slice(&cloud.geom_id[i].to_le_bytes());
            buf.push(cloud.echo[i]);
        }
        if buf.len() >= 60 * 1024 {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    out.flush()
}
