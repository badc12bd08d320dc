//! The beam-direction table beside each lidar file (`lidar-<Name>-NNN.beams.parquet`): for
//! each distinct pattern cycle, every beam index's azimuth and elevation in the sensor frame,
//! so that any Parquet reader can turn the recorded ranges into points without glint.
//!
//! A row of the lidar file belongs to cycle `w % cycles`, where `w` counts the times the beam
//! index `k = bin * channels + channel` failed to increase before that row (a new cycle starts
//! where the index wraps) and `cycles` is the number of cycles in the table (1 for a spinning
//! unit and a frozen pattern, whose directions never change).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::{Float32Type, UInt32Type};
use arrow_array::{ArrayRef, Float32Array, RecordBatch, UInt32Array};
use arrow_schema::{DataType, SchemaRef};
use glint_lidar::{ScanConfig, ScanPattern, angles, beam_direction};
use parquet::arrow::ArrowWriter;

use crate::RecordError;
use crate::files::{HashWriter, zstd_properties};
use crate::reader::{open_table, values};
use crate::schema::ROW_GROUP_ROWS;
use crate::sidecar::{BeamFile, ColumnDescription};

/// The table's columns: (name, type, unit, meaning).
const BEAM_COLUMNS: [(&str, DataType, &str, &str); 4] = [
    ("cycle", DataType::UInt32, "", "Pattern cycle the directions belong to (0 for a pattern that repeats)"),
    (
        "index",
        DataType::UInt32,
        "",
        "Beam index k = bin * channels + channel (the emission index of a non-repetitive pattern)",
    ),
    ("azimuth", DataType::Float32, "rad", "atan2(y, x) of the beam direction in the sensor frame, in [-pi, pi]"),
    ("elevation", DataType::Float32, "rad", "asin(z) of the beam direction in the sensor frame, in [-pi/2, pi/2]"),
];

/// The beam table's file next to lidar file `lidar` (`…/lidar-<Name>-NNN.parquet` →
/// `…/lidar-<Name>-NNN.beams.parquet`).
pub fn beam_path(lidar: &Path) -> PathBuf {
    lidar.with_extension("beams.parquet")
}

/// Which side table (`poses` or `beams`) a file named `name` in a chunk folder is, if it is
/// one rather than a lidar file.
pub(crate) fn side_table(name: &str) -> Option<&'static str> {
    ["poses", "beams"].into_iter().find(|t| name.ends_with(&format!(".{t}.parquet")))
}

/// The beam table's column descriptions, as its sidecar entry lists them.
fn beam_columns() -> Vec<ColumnDescription> {
    crate::schema::describe(&BEAM_COLUMNS)
}

fn beam_schema() -> SchemaRef {
    crate::schema::schema_of(&BEAM_COLUMNS)
}

/// Whether every cycle of `config`'s pattern casts the same directions (a spinning unit, a
/// frozen pattern): its beam table then holds one cycle.
pub fn pattern_repeats(config: &ScanConfig) -> bool {
    matches!(config.pattern, ScanPattern::Spinning) || config.rotation_hz <= 0.0
}

/// Distinct pattern cycles a file of `rows` rows of `config` holds: one for a spinning unit or
/// a frozen pattern, else every cycle its emissions reached.
pub fn cycles_recorded(config: &ScanConfig, rows: u64) -> u64 {
    let units = config.beam_count() as u64;
    if pattern_repeats(config) || units == 0 { 1 } else { rows.div_ceil(units).max(1) }
}

/// Beam `k`'s azimuth and elevation in cycle `cycle` as the beam table stores them (float32):
/// what every reader of a recording places its points along.
pub fn recorded_angles(config: &ScanConfig, cycle: u64, k: usize) -> (f32, f32) {
    let (az, el) = angles(beam_direction(config, cycle, k));
    (az as f32, el as f32)
}

/// What a written beam table is.
#[derive(Clone, Debug, PartialEq)]
pub struct BeamsDone {
    /// Rows (cycles × beams).
    pub rows: u64,
    /// Cycles it holds.
    pub cycles: u64,
    /// SHA-256 of the file, hex.
    pub sha256: String,
}

/// Writes the beam table of `cycles` cycles of `config` to `partial`, syncs it and renames it
/// to `path`.
fn write_beam_table(partial: &Path, path: &Path, config: &ScanConfig, cycles: u64) -> Result<BeamsDone, RecordError> {
    let file = File::create(partial).map_err(|e| RecordError::io("create", partial, e))?;
    let schema = beam_schema();
    let mut writer = ArrowWriter::try_new(HashWriter::new(file), schema.clone(), Some(zstd_properties().build()))
        .map_err(|e| RecordError::parquet(partial, e))?;
    let beams = config.beam_count();
    let mut cols = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let flush = |cols: &mut (Vec<u32>, Vec<u32>, Vec<f32>, Vec<f32>),
                 writer: &mut ArrowWriter<HashWriter>|
     -> Result<(), RecordError> {
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(UInt32Array::from(std::mem::take(&mut cols.0))),
            Arc::new(UInt32Array::from(std::mem::take(&mut cols.1))),
            Arc::new(Float32Array::from(std::mem::take(&mut cols.2))),
            Arc::new(Float32Array::from(std::mem::take(&mut cols.3))),
        ];
        let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| RecordError::parquet(partial, e))?;
        writer.write(&batch).map_err(|e| writer.inner().error(partial, e))
    };
    for cycle in 0..cycles {
        for k in 0..beams {
            let (az, el) = recorded_angles(config, cycle, k);
            cols.0.push(cycle as u32);
            cols.1.push(k as u32);
            cols.2.push(az);
            cols.3.push(el);
        }
        if cols.0.len() >= ROW_GROUP_ROWS {
            flush(&mut cols, &mut writer)?;
        }
    }
    if !cols.0.is_empty() {
        flush(&mut cols, &mut writer)?;
    }
    writer.finish().map_err(|e| writer.inner().error(partial, e))?;
    let sha256 = writer.inner_mut().finish(partial)?;
    std::fs::rename(partial, path).map_err(|e| RecordError::io("rename", partial, e))?;
    Ok(BeamsDone { rows: cycles * beams as u64, cycles, sha256 })
}

/// Writes the beam table of the lidar file `lidar` (`rows` rows of `config`) beside it, and
/// returns its sidecar entry.
pub(crate) fn write_beams_beside(lidar: &Path, config: &ScanConfig, rows: u64) -> Result<BeamFile, RecordError> {
    let path = beam_path(lidar);
    let partial = PathBuf::from(format!("{}.partial", path.display()));
    let done = write_beam_table(&partial, &path, config, cycles_recorded(config, rows))?;
    Ok(BeamFile {
        file: path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        cycles: done.cycles,
        rows: done.rows,
        sha256: done.sha256,
        columns: beam_columns(),
    })
}

/// A beam table read back: per row, cycle, index and angles.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BeamTable {
    /// Pattern cycle.
    pub cycle: Vec<u32>,
    /// Beam index `bin * channels + channel`.
    pub index: Vec<u32>,
    /// Azimuth, radians.
    pub azimuth: Vec<f32>,
    /// Elevation, radians.
    pub elevation: Vec<f32>,
}

impl BeamTable {
    /// Cycles in the table.
    pub fn cycles(&self) -> u64 {
        self.cycle.iter().max().map_or(0, |&c| c as u64 + 1)
    }

    /// The angles of beam `index` of cycle `cycle`, if the table has them (rows are cycle by
    /// cycle, index by index, `beams` per cycle).
    pub fn angles(&self, cycle: u64, index: u32, beams: usize) -> Option<(f32, f32)> {
        let row = cycle as usize * beams + index as usize;
        let listed = (index as usize) < beams
            && self.index.get(row) == Some(&index)
            && self.cycle.get(row) == Some(&(cycle as u32));
        listed.then(|| (self.azimuth[row], self.elevation[row]))
    }
}

/// Reads a whole beam table.
pub fn read_beam_file(path: &Path) -> Result<BeamTable, RecordError> {
    let mut t = BeamTable::default();
    for batch in open_table(path, &BEAM_COLUMNS, "beam table")?.0 {
        let b = batch.map_err(|e| RecordError::parquet(path, e))?;
        t.cycle.extend(values::<UInt32Type>(path, b.column(0).as_ref())?);
        t.index.extend(values::<UInt32Type>(path, b.column(1).as_ref())?);
        t.azimuth.extend(values::<Float32Type>(path, b.column(2).as_ref())?);
        t.elevation.extend(values::<Float32Type>(path, b.column(3).as_ref())?);
    }
    Ok(t)
}

/// Assigns each row of a lidar file its pattern cycle in a table of `cycles` cycles, row by
/// row: the rule in this module's documentation.
#[derive(Clone, Copy, Debug)]
pub struct CycleCounter {
    cycles: u64,
    wraps: u64,
    last: Option<u32>,
}

impl CycleCounter {
    /// A counter for a table of `cycles` cycles, before the first row.
    pub fn new(cycles: u64) -> CycleCounter {
        CycleCounter { cycles: cycles.max(1), wraps: 0, last: None }
    }

    /// The cycle of the next row, whose beam index is `k`.
    pub fn next(&mut self, k: u32) -> u64 {
        if self.last.is_some_and(|last| k <= last) {
            self.wraps += 1;
        }
        self.last = Some(k);
        self.wraps % self.cycles
    }

    /// How many times the beam index wrapped before the last row: its revolution (or
    /// pattern cycle) counted from the file's first, not folded into the table.
    pub fn revolution(&self) -> u64 {
        self.wraps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// A beam table written onto a full disk: the error names the file and the full disk
    /// (with what to do), not a Parquet error. Needs a tmpfs (root); skipped where none mounts.
    #[test]
    fn a_full_disk_while_writing_a_beam_table_says_so() {
        let dir = std::env::temp_dir().join(format!("glint-beams-full-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8192", "tmpfs", dir.to_str().unwrap()])
            .output()
            .is_ok_and(|o| o.status.success());
        if !mounted {
            eprintln!("skipped: cannot mount a tmpfs here");
            return;
        }
        let config = ScanConfig { channels: 64, azimuth_bins: 2048, ..ScanConfig::default() };
        let lidar = dir.join("lidar-x-000.parquet");
        let err = write_beams_beside(&lidar, &config, 1).unwrap_err().to_string();
        let _ = Command::new("umount").arg(&dir).status();
        std::fs::remove_dir_all(&dir).ok();
        assert!(err.contains("lidar-x-000.beams.parquet.partial") && err.contains("no space left on device"), "{err}");
        assert!(!err.contains("not a readable Parquet file") && !err.contains("External"), "{err}");
    }
}
