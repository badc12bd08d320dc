//! Reading lidar files back: the whole file as columns, or row group by row group so memory
//! stays flat on long episodes.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::types::{Float32Type, Float64Type, Int32Type, UInt8Type, UInt16Type};
use arrow_array::{Array, ArrowPrimitiveType, PrimitiveArray, RecordBatch};
use arrow_schema::SchemaRef;
use glint_lidar::SecondaryCapture;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};

use crate::RecordError;
use crate::schema::{READ_BATCH_ROWS, captures, mismatch};

/// The five columns of one secondary ray (`sec_*` or `refl_*`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SecondaryColumns {
    /// `sec_range` / `refl_range`, metres; `-1` = none.
    pub range: Vec<f32>,
    /// `sec_geom_id` / `refl_geom_id`; `-1` = none.
    pub geom_id: Vec<i32>,
    /// `*_normal_x/y/z`, sensor frame.
    pub normal: Vec<[f32; 3]>,
}

/// Rows of a lidar file, column by column (one entry per row).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LidarTable {
    /// Seconds since the episode start.
    pub timestamp: Vec<f64>,
    /// Azimuth bin, or the high part of the emission index.
    pub bin: Vec<u16>,
    /// Vertical channel, or the low part of the emission index.
    pub channel: Vec<u16>,
    /// Metres along the beam; `-1` on a miss.
    pub range: Vec<f32>,
    /// Geom hit; `-1` on a miss.
    pub geom_id: Vec<i32>,
    /// 1 for a hit.
    pub hit: Vec<u8>,
    /// Surface normal, sensor frame (`normal_x/y/z`).
    pub normal: Vec<[f32; 3]>,
    /// The pass-through columns, when the file has them.
    pub pass_through: Option<SecondaryColumns>,
    /// The reflected columns, when the file has them.
    pub reflected: Option<SecondaryColumns>,
}

impl LidarTable {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    fn append(&mut self, mut other: LidarTable) {
        self.timestamp.append(&mut other.timestamp);
        self.bin.append(&mut other.bin);
        self.channel.append(&mut other.channel);
        self.range.append(&mut other.range);
        self.geom_id.append(&mut other.geom_id);
        self.hit.append(&mut other.hit);
        self.normal.append(&mut other.normal);
        for (mine, theirs) in [(&mut self.pass_through, other.pass_through), (&mut self.reflected, other.reflected)] {
            if let (Some(m), Some(mut t)) = (mine.as_mut(), theirs) {
                m.range.append(&mut t.range);
                m.geom_id.append(&mut t.geom_id);
                m.normal.append(&mut t.normal);
            }
        }
    }
}

/// Opens `path` as Parquet and returns its builder.
fn builder(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>, RecordError> {
    let file = File::open(path).map_err(|e| RecordError::io("open", path, e))?;
    ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| RecordError::parquet(path, e))
}

/// The capture mode a schema's columns say the file was recorded with.
fn capture_of(schema: &SchemaRef) -> SecondaryCapture {
    let has = |name: &str| schema.fields().iter().any(|f| f.name() == name);
    match (has("sec_range"), has("refl_range")) {
        (true, true) => SecondaryCapture::Both,
        (true, false) => SecondaryCapture::PassThrough,
        (false, true) => SecondaryCapture::Reflected,
        (false, false) => SecondaryCapture::Off,
    }
}

/// A file's Arrow schema and row count, from its footer alone (no data is read).
pub(crate) fn footer(path: &Path) -> Result<(SchemaRef, u64), RecordError> {
    let b = builder(path)?;
    Ok((b.schema().clone(), b.metadata().file_metadata().num_rows().max(0) as u64))
}

/// Reads a lidar file in batches of at most 262 144 rows.
pub struct LidarReader {
    path: PathBuf,
    reader: ParquetRecordBatchReader,
    rows: u64,
    capture: SecondaryCapture,
}

impl std::fmt::Debug for LidarReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LidarReader").field("path", &self.path).field("rows", &self.rows).finish_non_exhaustive()
    }
}

impl LidarReader {
    /// Opens `path` and checks that it holds glint's lidar columns (the secondary ones it
    /// has decide the capture mode).
    pub fn open(path: &Path) -> Result<LidarReader, RecordError> {
        let b = builder(path)?.with_batch_size(READ_BATCH_ROWS);
        let schema = b.schema().clone();
        let capture = capture_of(&schema);
        if let Some(reason) = mismatch(&schema, capture) {
            return Err(RecordError::schema(path, reason));
        }
        let rows = b.metadata().file_metadata().num_rows().max(0) as u64;
        let reader = b.build().map_err(|e| RecordError::parquet(path, e))?;
        Ok(LidarReader { path: path.to_path_buf(), reader, rows, capture })
    }

    /// Rows in the file (from its footer).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The secondary capture mode the file's columns show.
    pub fn capture(&self) -> SecondaryCapture {
        self.capture
    }

    fn table(&self, batch: &RecordBatch) -> Result<LidarTable, RecordError> {
        let col = |i: usize| batch.column(i).as_ref();
        let normal = |i: usize| -> Result<Vec<[f32; 3]>, RecordError> {
            let (x, y, z) = (
                values::<Float32Type>(&self.path, col(i))?,
                values::<Float32Type>(&self.path, col(i + 1))?,
                values::<Float32Type>(&self.path, col(i + 2))?,
            );
            Ok(x.into_iter().zip(y).zip(z).map(|((x, y), z)| [x, y, z]).collect())
        };
        let secondary = |i: usize| -> Result<SecondaryColumns, RecordError> {
            Ok(SecondaryColumns {
                range: values::<Float32Type>(&self.path, col(i))?,
                geom_id: values::<Int32Type>(&self.path, col(i + 1))?,
                normal: normal(i + 2)?,
            })
        };
        let (pass, reflected) = captures(self.capture);
        Ok(LidarTable {
            timestamp: values::<Float64Type>(&self.path, col(0))?,
            bin: values::<UInt16Type>(&self.path, col(1))?,
            channel: values::<UInt16Type>(&self.path, col(2))?,
            range: values::<Float32Type>(&self.path, col(3))?,
            geom_id: values::<Int32Type>(&self.path, col(4))?,
            hit: values::<UInt8Type>(&self.path, col(5))?,
            normal: normal(6)?,
            pass_through: if pass { Some(secondary(9)?) } else { None },
            reflected: if reflected { Some(secondary(if pass { 14 } else { 9 })?) } else { None },
        })
    }
}

/// The values of a primitive column with no missing entries.
pub(crate) fn values<T: ArrowPrimitiveType>(path: &Path, a: &dyn Array) -> Result<Vec<T::Native>, RecordError> {
    let p = a
        .as_any()
        .downcast_ref::<PrimitiveArray<T>>()
        .ok_or_else(|| RecordError::schema(path, format!("a column is {}, not {}", a.data_type(), T::DATA_TYPE)))?;
    if p.null_count() > 0 {
        return Err(RecordError::schema(path, format!("a column has {} missing values", p.null_count())));
    }
    Ok(p.values().to_vec())
}

impl Iterator for LidarReader {
    type Item = Result<LidarTable, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        let batch = self.reader.next()?;
        Some(batch.map_err(|e| RecordError::parquet(&self.path, e)).and_then(|b| self.table(&b)))
    }
}

/// Reads the whole lidar file at `path` into memory (fine for tests and moderate files; use
/// [`LidarReader`] to stream a long episode).
pub fn read_lidar_file(path: &Path) -> Result<LidarTable, RecordError> {
    let mut reader = LidarReader::open(path)?;
    let (pass, reflected) = captures(reader.capture);
    let mut table = LidarTable {
        pass_through: pass.then(SecondaryColumns::default),
        reflected: reflected.then(SecondaryColumns::default),
        ..LidarTable::default()
    };
    for part in reader.by_ref() {
        table.append(part?);
    }
    Ok(table)
}

/// The episode seed a lidar file's footer records, if it records one (files from before
/// per-episode seeds do not).
pub(crate) fn recorded_episode_seed(path: &Path) -> Option<u64> {
    let file = File::open(path).ok()?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).ok()?;
    let kv = builder.metadata().file_metadata().key_value_metadata()?;
    let entry = kv.iter().find(|e| e.key == crate::writer::EPISODE_SEED_KEY)?;
    entry.value.as_deref()?.parse().ok()
}

/// Opens the Parquet file at `path`, which must hold exactly the columns of `table` (a
/// [`crate::schema::ColumnTable`], named `what` in the error), for reading batch by batch;
/// with its row count.
pub(crate) fn open_table(
    path: &Path,
    table: &crate::schema::ColumnTable,
    what: &str,
) -> Result<(ParquetRecordBatchReader, u64), RecordError> {
    let file = File::open(path).map_err(|e| RecordError::io("open", path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| RecordError::parquet(path, e))?;
    let same = builder
        .schema()
        .fields()
        .iter()
        .map(|f| (f.name().as_str(), f.data_type()))
        .eq(table.iter().map(|(name, t, _, _)| (*name, t)));
    if !same {
        let names: Vec<String> =
            table.iter().map(|(name, t, _, _)| format!("{name} ({})", crate::schema::type_name(t))).collect();
        return Err(RecordError::schema(path, format!("a {what} has the columns {}", names.join(", "))));
    }
    let rows = builder.metadata().file_metadata().num_rows().max(0) as u64;
    let reader = builder.with_batch_size(READ_BATCH_ROWS).build().map_err(|e| RecordError::parquet(path, e))?;
    Ok((reader, rows))
}
