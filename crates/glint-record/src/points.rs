//! Point clouds from a recording: each row with a return becomes a point, its direction from
//! the beam table, its range from the lidar file (or an exported variant's measured range),
//! placed in the sensor frame or, through the pose table, in the world. Written as PLY, PCD
//! or KITTI `.bin` (`glint points`).

use std::io::Write;
use std::path::Path;

use glam::{DQuat, DVec3};

use crate::RecordError;
use crate::beams::{CycleCounter, beam_path, read_beam_file};
use crate::export::verify_variant_file;
use crate::export::{VariantReader, VariantTable};
use crate::poses::{pose_path, read_pose_file};
use crate::reader::LidarReader;
use crate::sidecar::Sidecar;
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

/// One row of a lidar file, as [`walk_returns`] hands it over.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BeamRow {
    /// Seconds since the episode start (the tick's).
    pub timestamp: f64,
    /// Revolution (or pattern cycle) of the row, counted from the file's first: the times
    /// the beam index wrapped before it.
    pub revolution: u64,
    /// Beam index `bin * channels + channel`.
    pub beam: u32,
    /// Azimuth bin, or the high part of the emission index.
    pub bin: u16,
    /// Vertical channel, or the low part of the emission index.
    pub channel: u16,
}

/// The unit vector of a beam table's azimuth and elevation (sensor frame): the direction
/// every reader of a recording places its points along.
pub fn beam_vector(azimuth: f32, elevation: f32) -> DVec3 {
    let (az, el) = (azimuth as f64, elevation as f64);
    DVec3::new(el.cos() * az.cos(), el.cos() * az.sin(), el.sin())
}

/// One return of a row: its clean hit, or an exported variant's echo.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowReturn {
    /// Position in the frame asked for, metres.
    pub xyz: DVec3,
    /// Range along the beam, metres (the measured one for a variant).
    pub range: f32,
    /// Intensity of a variant's primary echo (`-1` for a second echo and a clean recording).
    pub intensity: f32,
    /// Calibrated reflectivity of a variant's primary echo (`-1` where there is none).
    pub reflectivity: f32,
    /// Geom hit (`-1` for a second echo).
    pub geom_id: i32,
    /// 0 for the primary echo, 1 for a variant's second echo.
    pub echo: u8,
    /// The point in the world, metres (its `z` is the height the colour-by modes read).
    pub world: DVec3,
    /// The cosine of the angle between the beam and the surface's normal at the hit (1
    /// head-on, 0 grazing; `None` where the recording has no normal: a second echo).
    pub cos_incidence: Option<f32>,
}

impl RowReturn {
    /// The angle between the beam and the surface's normal, degrees (`-1` where unknown).
    pub fn incidence_deg(&self) -> f32 {
        self.cos_incidence.map_or(-1.0, |c| c.clamp(-1.0, 1.0).acos().to_degrees())
    }
}

/// The cosine of the angle between the beam `dir` and the surface normal `normal` (both
/// unit, one frame).
pub fn cos_incidence(dir: DVec3, normal: DVec3) -> f32 {
    -dir.dot(normal) as f32
}

/// The points of the lidar file `lidar` (clean hits), or with `variant` the measured echoes
/// of that variant file of it (primary and second echoes), in `frame`.
/// Every file read is checked against the SHA-256 its sidecar (or the variant's
/// `augmentation.json`) records first: a damaged file is refused, never read as other points.
pub fn recorded_points(lidar: &Path, variant: Option<&Path>, frame: PointFrame) -> Result<PointCloud, RecordError> {
    let mut cloud = PointCloud::default();
    walk_returns(lidar, variant, frame, |row, returns| {
        for r in returns {
            cloud.xyz.push(r.xyz.to_array());
            cloud.timestamp.push(row.timestamp);
            cloud.range.push(r.range);
            cloud.intensity.push(r.intensity);
            cloud.bin.push(row.bin);
            cloud.channel.push(row.channel);
            cloud.geom_id.push(r.geom_id);
            cloud.echo.push(r.echo);
        }
    })?;
    Ok(cloud)
}

/// Walks every row of the lidar file `lidar` in order, handing `visit` the row and its
/// returns (none, one clean hit, or with `variant` the variant's primary and second echoes) in
/// `frame`; returns the file's sidecar. The files are checked as [`recorded_points`] says.
pub fn walk_returns(
    lidar: &Path,
    variant: Option<&Path>,
    frame: PointFrame,
    mut visit: impl FnMut(&BeamRow, &[RowReturn]),
) -> Result<Sidecar, RecordError> {
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
    let poses = read_pose_file(&pose_path(lidar))?;
    // Both files are streamed a batch at a time: memory stays flat for long episodes.
    let mut rows = LidarReader::open(lidar)?;
    let mut echoes = variant.map(VariantReader::open).transpose()?;
    if let Some(v) = &echoes
        && v.rows() != rows.rows()
    {
        return Err(RecordError::Setting(format!(
            "the variant file has {} rows and its source '{}' {}: they are not the same recording",
            v.rows(),
            lidar.display(),
            rows.rows()
        )));
    }
    let per_cycle = config.beam_count();
    let mut cycles = CycleCounter::new(entry.cycles);
    // A table of one cycle (a spinning unit) gives each beam one direction: computed once.
    let fixed: Vec<Option<DVec3>> = if entry.cycles == 1 {
        (0..per_cycle as u32).map(|k| beams.angles(0, k, per_cycle).map(|(az, el)| beam_vector(az, el))).collect()
    } else {
        Vec::new()
    };
    let mut tick = 0;
    let mut returns = Vec::with_capacity(2);
    let mut echo_part = VariantTable::default();
    let mut echo_at = 0;
    let mut first_row = 0;
    for part in rows.by_ref() {
        let part = part?;
        for i in 0..part.len() {
            let r = first_row + i;
            let k = config.beam_index(part.bin[i], part.channel[i]);
            let cycle = cycles.next(k);
            let t = part.timestamp[i];
            while tick + 1 < poses.len() && poses.timestamp[tick] < t {
                tick += 1;
            }
            let dir = match fixed.get(k as usize) {
                Some(&known) => known,
                None => beams.angles(cycle, k, per_cycle).map(|(az, el)| beam_vector(az, el)),
            }
            .ok_or_else(|| {
                RecordError::Setting(format!(
                    "row {r} of '{}' is beam {k} of cycle {cycle}, which its beam table does not list",
                    lidar.display()
                ))
            })?;
            let (origin, rotation) = match frame {
                PointFrame::World => (poses.position[tick], poses.rotation[tick]),
                PointFrame::Sensor => (DVec3::ZERO, DQuat::IDENTITY),
            };
            // (range, intensity, reflectivity, geom, echo) of the row's returns: its clean hit,
            // or the variant's primary and second echoes.
            let candidates = match &mut echoes {
                None => [(part.hit[i] == 1).then_some((part.range[i], -1.0, -1.0, part.geom_id[i], 0)), None],
                Some(reader) => {
                    if echo_at == echo_part.len() {
                        echo_part = reader.next().unwrap_or_else(|| {
                            Err(RecordError::Setting(format!("the variant file of '{}' ends early", lidar.display())))
                        })?;
                        echo_at = 0;
                    }
                    let (v, j) = (&echo_part, echo_at);
                    echo_at += 1;
                    [
                        (v.range[j], v.intensity[j], v.reflectivity_calibrated[j], v.geom_id[j], 0),
                        (v.secondary_range[j], -1.0, -1.0, -1, 1),
                    ]
                    .map(|e| (e.0 >= 0.0).then_some(e))
                }
            };
            returns.clear();
            let normal = DVec3::from_array(part.normal[i].map(f64::from));
            let (world_origin, world_rotation) = (poses.position[tick], poses.rotation[tick]);
            for (range, intensity, reflectivity, geom_id, echo) in candidates.into_iter().flatten() {
                let along = dir * range as f64;
                let xyz = origin + rotation * along;
                let world = world_origin + world_rotation * along;
                let known = echo == 0 && part.hit[i] == 1 && normal != DVec3::ZERO;
                let cos_incidence = known.then(|| cos_incidence(dir, normal));
                returns.push(RowReturn { xyz, range, intensity, reflectivity, geom_id, echo, world, cos_incidence });
            }
            let row = BeamRow {
                timestamp: t,
                revolution: cycles.revolution(),
                beam: k,
                bin: part.bin[i],
                channel: part.channel[i],
            };
            visit(&row, &returns);
        }
        first_row += part.len();
    }
    Ok(sidecar)
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
