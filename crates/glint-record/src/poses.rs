//! The per-tick pose table beside each lidar file (`lidar-<Name>-NNN.poses.parquet`): where
//! the sensor was in the world at every tick, so rows recorded in the sensor frame can be
//! placed in the world again (a material bake's grid is in world coordinates).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::Float64Type;
use arrow_array::{Array, PrimitiveArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use glam::{DMat3, DQuat, DVec3};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};

use crate::RecordError;
use crate::files::Float64Table;
use crate::journal::TickLog;
use crate::schema::READ_BATCH_ROWS;
use crate::sidecar::ColumnDescription;

/// The pose table's columns: (name, unit, meaning), every one float64.
const POSE_COLUMNS: [(&str, &str, &str); 8] = [
    ("timestamp", "s", "Seconds since the start of the episode: the tick's, equal to its lidar rows' timestamp"),
    ("x", "m", "Sensor origin in the world frame, x"),
    ("y", "m", "Sensor origin in the world frame, y"),
    ("z", "m", "Sensor origin in the world frame, z"),
    ("qw", "", "Sensor orientation (sensor frame to world frame), unit quaternion, w"),
    ("qx", "", "Sensor orientation, unit quaternion, x"),
    ("qy", "", "Sensor orientation, unit quaternion, y"),
    ("qz", "", "Sensor orientation, unit quaternion, z"),
];

/// The pose table's file next to lidar file `lidar` (`…/lidar-<Name>-NNN.parquet` →
/// `…/lidar-<Name>-NNN.poses.parquet`).
pub fn pose_path(lidar: &Path) -> PathBuf {
    lidar.with_extension("poses.parquet")
}

/// The pose table's column descriptions, as its sidecar entry lists them.
pub(crate) fn pose_columns() -> Vec<ColumnDescription> {
    POSE_COLUMNS
        .iter()
        .map(|&(name, unit, meaning)| ColumnDescription {
            name: name.into(),
            data_type: "float64".into(),
            unit: unit.into(),
            meaning: meaning.into(),
        })
        .collect()
}

fn pose_schema() -> SchemaRef {
    Arc::new(Schema::new(
        POSE_COLUMNS.iter().map(|&(name, _, _)| Field::new(name, DataType::Float64, false)).collect::<Vec<_>>(),
    ))
}

/// Compares a file's columns with the pose table's; `None` when they match.
pub(crate) fn pose_mismatch(schema: &Schema) -> Option<String> {
    let got: Vec<(String, DataType)> =
        schema.fields().iter().map(|f| (f.name().clone(), f.data_type().clone())).collect();
    let want: Vec<(String, DataType)> =
        POSE_COLUMNS.iter().map(|&(name, _, _)| (name.to_string(), DataType::Float64)).collect();
    if got == want {
        return None;
    }
    let names: Vec<String> = got.iter().map(|(n, t)| format!("{n} ({})", crate::schema::type_name(t))).collect();
    Some(format!(
        "its columns are [{}], and a pose table has timestamp, x, y, z, qw, qx, qy, qz, all float64",
        names.join(", ")
    ))
}

/// One sensor's pose table of one episode, being written.
pub(crate) struct PoseWriter {
    /// `…poses.parquet` once finished.
    pub path: PathBuf,
    /// The table, `…poses.parquet.partial` while writing.
    table: Float64Table,
    /// The pose log (see [`crate::journal`]) that keeps the rows salvageable until the table
    /// is finished; none for a table rebuilt by `glint recover`.
    log: Option<TickLog>,
}

/// What a finished pose table is.
pub(crate) struct PosesDone {
    pub rows: u64,
    pub sha256: String,
    /// The pose log, to remove once the table has its final name.
    pub log: Option<PathBuf>,
}

impl PoseWriter {
    /// Creates `partial` (which must not exist) and its pose log, and opens a Parquet writer
    /// on it.
    pub(crate) fn create(partial: PathBuf, path: PathBuf) -> Result<PoseWriter, RecordError> {
        let mut writer = PoseWriter::without_log(partial, path)?;
        writer.log = Some(TickLog::create(writer.partial())?);
        Ok(writer)
    }

    /// Creates `partial` (which must not exist) and opens a Parquet writer on it, with no
    /// pose log.
    pub(crate) fn without_log(partial: PathBuf, path: PathBuf) -> Result<PoseWriter, RecordError> {
        Ok(PoseWriter { path, table: Float64Table::create(partial, pose_schema())?, log: None })
    }

    /// The table's name while it is written.
    pub(crate) fn partial(&self) -> &Path {
        &self.table.partial
    }

    /// Appends the pose of one tick.
    pub(crate) fn push(&mut self, timestamp: f64, pos: DVec3, rot: DMat3) -> Result<(), RecordError> {
        let q = quaternion(rot);
        let row = [timestamp, pos.x, pos.y, pos.z, q.w, q.x, q.y, q.z];
        if let Some(log) = &mut self.log {
            log.push(&row)?;
        }
        self.push_row(row)
    }

    /// Appends one row as the pose table holds it (time, position, quaternion w x y z).
    pub(crate) fn push_row(&mut self, row: [f64; 8]) -> Result<(), RecordError> {
        self.table.push(row)
    }

    /// Writes the last rows and the footer, syncs the file (still `.partial`) and hashes it.
    pub(crate) fn close(self) -> Result<PosesDone, RecordError> {
        let rows = self.table.rows();
        let sha256 = self.table.finish()?;
        Ok(PosesDone { rows, sha256, log: self.log.map(|l| l.path) })
    }
}

/// The unit quaternion of a rotation matrix (orthonormalised first, so a matrix with rounding
/// in it still gives a unit quaternion).
fn quaternion(rot: DMat3) -> DQuat {
    let x = rot.x_axis.normalize();
    let y = (rot.y_axis - x * x.dot(rot.y_axis)).normalize();
    let z = x.cross(y);
    let q = DQuat::from_mat3(&DMat3::from_cols(x, y, z)).normalize();
    // One sign for the same rotation, so equal poses give equal rows.
    if q.w < 0.0 { -q } else { q }
}

/// Rows of a pose table: one per lidar tick, in tick order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PoseTable {
    /// Seconds since the episode start (the tick's lidar rows share it).
    pub timestamp: Vec<f64>,
    /// Sensor origin, world frame (m).
    pub position: Vec<DVec3>,
    /// Sensor orientation: sensor frame to world frame.
    pub rotation: Vec<DQuat>,
}

impl PoseTable {
    /// Number of ticks.
    pub fn len(&self) -> usize {
        self.timestamp.len()
    }

    /// Whether there are no ticks.
    pub fn is_empty(&self) -> bool {
        self.timestamp.is_empty()
    }
}

/// Reads a pose table row group by row group.
pub(crate) struct PoseReader {
    path: PathBuf,
    reader: ParquetRecordBatchReader,
}

impl PoseReader {
    /// Opens `path` and checks that it holds the pose table's columns.
    pub fn open(path: &Path) -> Result<PoseReader, RecordError> {
        let file = File::open(path).map_err(|e| RecordError::io("open", path, e))?;
        let b = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| RecordError::parquet(path, e))?
            .with_batch_size(READ_BATCH_ROWS);
        if let Some(why) = pose_mismatch(b.schema()) {
            return Err(RecordError::Schema { path: path.to_path_buf(), reason: format!("not a pose table: {why}") });
        }
        let reader = b.build().map_err(|e| RecordError::parquet(path, e))?;
        Ok(PoseReader { path: path.to_path_buf(), reader })
    }

    fn table(&self, batch: &RecordBatch) -> Result<PoseTable, RecordError> {
        let mut cols: Vec<&[f64]> = Vec::with_capacity(8);
        for i in 0..8 {
            let a = batch.column(i);
            let p = a.as_any().downcast_ref::<PrimitiveArray<Float64Type>>().ok_or_else(|| {
                RecordError::schema(&self.path, format!("column {} is {}, not float64", i, a.data_type()))
            })?;
            if p.null_count() > 0 {
                return Err(RecordError::schema(&self.path, format!("a column has {} missing values", p.null_count())));
            }
            cols.push(p.values());
        }
        let n = batch.num_rows();
        let mut t =
            PoseTable { timestamp: cols[0].to_vec(), position: Vec::with_capacity(n), rotation: Vec::with_capacity(n) };
        for (r, &time) in cols[0].iter().enumerate() {
            let pos = DVec3::new(cols[1][r], cols[2][r], cols[3][r]);
            let q = DQuat::from_xyzw(cols[5][r], cols[6][r], cols[7][r], cols[4][r]);
            let norm = q.length();
            if !(pos.is_finite() && time.is_finite() && norm.is_finite() && (norm - 1.0).abs() < 1e-3) {
                return Err(RecordError::Parquet {
                    path: self.path.clone(),
                    reason: format!(
                        "pose row {r} of a row group is not a pose (t {time}, position {pos}, quaternion of length {norm})"
                    ),
                });
            }
            t.position.push(pos);
            t.rotation.push(q.normalize());
        }
        Ok(t)
    }
}

impl Iterator for PoseReader {
    type Item = Result<PoseTable, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        let batch = self.reader.next()?;
        Some(batch.map_err(|e| RecordError::parquet(&self.path, e)).and_then(|b| self.table(&b)))
    }
}

/// Reads a whole pose table (one row per tick; a long episode's is still small: 64 bytes a
/// tick before compression).
pub fn read_pose_file(path: &Path) -> Result<PoseTable, RecordError> {
    let mut out = PoseTable::default();
    for part in PoseReader::open(path)? {
        let mut part = part?;
        out.timestamp.append(&mut part.timestamp);
        out.position.append(&mut part.position);
        out.rotation.append(&mut part.rotation);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quaternions_round_trip_rotations() {
        let rot = DMat3::from_euler(glam::EulerRot::ZYX, 2.9, -0.4, 0.25);
        let q = quaternion(rot);
        assert!(q.w >= 0.0 && (q.length() - 1.0).abs() < 1e-12);
        let back = DMat3::from_quat(q);
        for (a, b) in back.to_cols_array().iter().zip(rot.to_cols_array()) {
            assert!((a - b).abs() < 1e-12, "{back} vs {rot}");
        }
        // A slightly non-orthonormal matrix (as MuJoCo's xmat may be) still gives a unit one.
        let skewed = DMat3::from_cols(rot.x_axis * 1.000001, rot.y_axis, rot.z_axis);
        assert!((quaternion(skewed).length() - 1.0).abs() < 1e-12);
        assert_eq!(pose_path(Path::new("d/lidar-a-000.parquet")), Path::new("d/lidar-a-000.poses.parquet"));
    }
}
