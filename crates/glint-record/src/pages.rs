//! The open row group of a lidar file, its columns encoded and compressed into memory as the
//! ticks arrive. A tick's rows are copied out of the scan ([`TickSnapshot`]), then each column
//! is computed from them straight into its open page ([`OpenGroup::write`]), in the type it
//! is stored as. A full page is compressed with zstd and goes, behind the header the
//! `parquet` crate's page writer gives it, into the column's chunk; when the group is full
//! its chunks are laid into the file in the schema's order, with footer metadata (sizes,
//! statistics) computed here.
//!
//! Pages are PLAIN: zstd finds the repetition (ticks share a timestamp, bins and channels
//! cycle, few geoms) that a dictionary would, without a hash per value. Writing the pages here
//! rather than through the crate's column writers saves copying every value into the writer,
//! growing its buffers, and a zstd context per page, which together cost as much as zstd.

use std::cell::RefCell;
use std::io::Write;

use bytes::Bytes;
use glam::{DMat3, DVec3};
use glint_lidar::Scan;
use parquet::basic::{Compression, Encoding, Repetition, Type as PhysicalType};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;
use rayon::prelude::*;
use zstd::bulk::Compressor;

use crate::files::zstd_level;

/// The rows one tick adds, copied out of the scan so they can be encoded while the next tick
/// simulates: beams `beams`, cast at `timestamp` by a sensor whose rotation (sensor to world)
/// is `rot`, with each ray's range, geom and world normal in the order of `beams`; `split`
/// turns a beam index into bin and channel.
#[derive(Default)]
pub(crate) struct TickSnapshot {
    timestamp: f64,
    split: u32,
    rot: DMat3,
    beams: Vec<u32>,
    /// The first beam when `beams` count up by one from it (a spinning unit's slice).
    run: Option<usize>,
    /// The beam's own ray, the pass-through ray, the reflected ray (empty when not captured).
    rays: [RayArrays; 3],
}

/// Range, geom and world normal of one ray per beam.
#[derive(Default)]
struct RayArrays {
    range: Vec<f32>,
    geomid: Vec<i32>,
    normal: Vec<[f32; 3]>,
}

impl RayArrays {
    fn copy(&mut self, beams: &[u32], run: Option<usize>, range: &[f32], geomid: &[i32], normal: &[[f32; 3]]) {
        gather(&mut self.range, range, beams, run);
        gather(&mut self.geomid, geomid, beams, run);
        gather(&mut self.normal, normal, beams, run);
    }

    fn clear(&mut self) {
        self.range.clear();
        self.geomid.clear();
        self.normal.clear();
    }
}

/// The first beam when `beams` count up by one from it (a spinning unit's slice), so that
/// they can be copied as one slice.
fn run_start(beams: &[u32]) -> Option<usize> {
    let &first = beams.first()?;
    let last = first.checked_add(u32::try_from(beams.len() - 1).ok()?)?;
    // One pass, without a branch per beam: any beam off the count leaves a bit set.
    let off = beams.iter().zip(first..=last).fold(0u32, |off, (&k, want)| off | (k ^ want));
    (off == 0).then_some(first as usize)
}

/// Fills `out` with `values[k]` for each beam `k`; one copy where the beams are a run from
/// `run`.
fn gather<T: Copy>(out: &mut Vec<T>, values: &[T], beams: &[u32], run: Option<usize>) {
    out.clear();
    match run {
        Some(a) => out.extend_from_slice(&values[a..a + beams.len()]),
        None => out.extend(beams.iter().map(|&k| values[k as usize])),
    }
}

/// The ray a column describes: the beam's own, or one of the captured secondary rays.
#[derive(Clone, Copy, Debug)]
enum Ray {
    Beam,
    PassThrough,
    Reflected,
}

/// What one column holds.
#[derive(Clone, Copy, Debug)]
enum Source {
    Timestamp,
    Bin,
    Channel,
    Hit,
    Range(Ray),
    GeomId(Ray),
    /// One sensor-frame component (0, 1, 2 for x, y, z) of the surface normal.
    Normal(Ray, usize),
}

impl Source {
    /// What the schema's column `name` holds (`sec_*` and `refl_*` are the secondary rays'
    /// columns), so the schema alone fixes which columns a file has, and in what order.
    fn of(name: &str) -> Option<Source> {
        let (ray, field) = if let Some(field) = name.strip_prefix("sec_") {
            (Ray::PassThrough, field)
        } else if let Some(field) = name.strip_prefix("refl_") {
            (Ray::Reflected, field)
        } else {
            (Ray::Beam, name)
        };
        Some(match (ray, field) {
            (Ray::Beam, "timestamp") => Source::Timestamp,
            (Ray::Beam, "bin") => Source::Bin,
            (Ray::Beam, "channel") => Source::Channel,
            (Ray::Beam, "hit") => Source::Hit,
            (_, "range") => Source::Range(ray),
            (_, "geom_id") => Source::GeomId(ray),
            (_, "normal_x") => Source::Normal(ray, 0),
            (_, "normal_y") => Source::Normal(ray, 1),
            (_, "normal_z") => Source::Normal(ray, 2),
            _ => return None,
        })
    }
}

impl TickSnapshot {
    /// Copies beams `beams` of `scan` (whose surfaces and captured rays the writer has checked).
    pub(crate) fn take(&mut self, scan: &Scan, beams: &[u32], timestamp: f64, split: u32, rot: DMat3) {
        (self.timestamp, self.split, self.rot) = (timestamp, split, rot);
        self.beams.clear();
        self.beams.extend_from_slice(beams);
        self.run = run_start(beams);
        let [beam, pass, reflected] = &mut self.rays;
        let normal = scan.surfaces.as_ref().map_or(&[][..], |s| &s.normal);
        beam.copy(beams, self.run, &scan.range, &scan.geomid, normal);
        for (arrays, hits) in [(pass, &scan.pass_through), (reflected, &scan.reflected)] {
            match hits {
                Some(h) => arrays.copy(beams, self.run, &h.range, &h.geomid, &h.normal),
                None => arrays.clear(),
            }
        }
    }

    /// Rows in the snapshot.
    pub(crate) fn rows(&self) -> usize {
        self.beams.len()
    }

    fn ray(&self, ray: Ray) -> &RayArrays {
        &self.rays[ray as usize]
    }

    /// Appends a computed INT32 column (`bin`, `channel` or `hit`) to `out`; returns the
    /// hits when it is the `hit` column.
    fn fill_i32(&self, source: Source, out: &mut Vec<i32>) -> u64 {
        let before = out.len();
        match source {
            Source::Bin | Source::Channel => self.fill_bin_or_channel(matches!(source, Source::Bin), out),
            Source::Hit => {
                let beam = self.ray(Ray::Beam);
                out.extend(beam.range.iter().zip(&beam.geomid).map(|(&r, &g)| (r >= 0.0 && g >= 0) as i32));
                return out[before..].iter().map(|&h| h as u64).sum();
            }
            _ => {}
        }
        0
    }

    /// `bin = k / split` or `channel = k % split` for each beam `k`. A run is walked bin by
    /// bin, without a division per row.
    fn fill_bin_or_channel(&self, bin: bool, out: &mut Vec<i32>) {
        let split = self.split;
        let Some(first) = self.run else {
            out.extend(self.beams.iter().map(|&k| if bin { k / split } else { k % split } as i32));
            return;
        };
        let (mut b, mut c, mut left) = (first as u32 / split, first as u32 % split, self.beams.len() as u32);
        while left > 0 {
            let n = (split - c).min(left);
            if bin {
                out.extend(std::iter::repeat_n(b as i32, n as usize));
            } else {
                out.extend((c..c + n).map(|c| c as i32));
            }
            (b, c, left) = (b + 1, 0, left - n);
        }
    }

    /// Appends to `out` a sensor-frame normal component: its dot product with that sensor
    /// axis (in world coordinates), in f64 as the pose is. A zero normal (a miss) stays +0.
    fn fill_normal(&self, ray: Ray, axis: usize, out: &mut Vec<f32>) {
        let axis: DVec3 = self.rot.col(axis);
        let component =
            |n: &[f32; 3]| (axis.x * n[0] as f64 + axis.y * n[1] as f64 + axis.z * n[2] as f64) as f32 + 0.0;
        out.extend(self.ray(ray).normal.iter().map(component));
    }
}

/// The columns of a lidar file that carry min/max statistics: those rows are selected by (a
/// time window, a sector or ring, a distance, a geom), so a reader can skip row groups. The
/// rest are read alongside them, and a min/max of each would cost a pass over every value.
pub const STATISTICS_COLUMNS: [&str; 5] = ["timestamp", "bin", "channel", "range", "geom_id"];

/// A page is compressed once the ticks added to it hold this many bytes of plain values (so
/// a page holds up to one tick more): few enough that they are still in cache when zstd
/// reads them.
const PAGE_BYTES: usize = 128 << 10;

thread_local! {
    /// Each pool thread's zstd context, reused for every page it compresses.
    static ZSTD: RefCell<Option<Compressor<'static>>> = const { RefCell::new(None) };
}

/// `plain` compressed as one zstd frame.
fn compress(plain: &[u8]) -> Result<Vec<u8>> {
    ZSTD.with_borrow_mut(|context| {
        let zstd = match context {
            Some(zstd) => zstd,
            None => context.insert(Compressor::new(zstd_level().compression_level())?),
        };
        zstd.compress(plain)
    })
    .map_err(|e| ParquetError::External(Box::new(e)))
}

/// A column's values, in the type the column is stored as.
enum Values {
    F64(Vec<f64>),
    F32(Vec<f32>),
    I32(Vec<i32>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::F64(v) => v.len(),
            Values::F32(v) => v.len(),
            Values::I32(v) => v.len(),
        }
    }

    /// The values as Parquet's PLAIN encoding lays them out: little-endian, back to back.
    fn plain(&self) -> &[u8] {
        match self {
            Values::F64(v) => bytemuck::cast_slice(v),
            Values::F32(v) => bytemuck::cast_slice(v),
            Values::I32(v) => bytemuck::cast_slice(v),
        }
    }

    fn clear(&mut self) {
        match self {
            Values::F64(v) => v.clear(),
            Values::F32(v) => v.clear(),
            Values::I32(v) => v.clear(),
        }
    }

    /// The smallest and largest value, NaNs left out as Parquet's ordering requires.
    fn bounds(&self) -> Option<Bounds> {
        match self {
            Values::F64(v) => {
                let (lo, hi) = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
                (lo <= hi).then_some(Bounds::F64(lo, hi))
            }
            Values::F32(v) => {
                let (lo, hi) = v.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
                (lo <= hi).then_some(Bounds::F32(lo, hi))
            }
            Values::I32(v) => {
                let (lo, hi) = v.iter().fold((i32::MAX, i32::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
                (!v.is_empty()).then_some(Bounds::I32(lo, hi))
            }
        }
    }
}

#[cfg(target_endian = "big")]
compile_error!("glint-record lays values out as Parquet's little-endian PLAIN encoding straight from memory");

/// The min and max statistics of a column chunk.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Bounds {
    F64(f64, f64),
    F32(f32, f32),
    /// Signed order: the unsigned INT32 columns (`bin`, `channel`) hold values below 2^16,
    /// which the two orders sort alike.
    I32(i32, i32),
}

impl Bounds {
    fn merge(self, other: Bounds) -> Bounds {
        match (self, other) {
            (Bounds::F64(a, b), Bounds::F64(c, d)) => Bounds::F64(a.min(c), b.max(d)),
            (Bounds::F32(a, b), Bounds::F32(c, d)) => Bounds::F32(a.min(c), b.max(d)),
            (Bounds::I32(a, b), Bounds::I32(c, d)) => Bounds::I32(a.min(c), b.max(d)),
            (a, b) => {
                debug_assert!(false, "bounds of two types in one column: {a:?} and {b:?}");
                a
            }
        }
    }
}

/// The footer's statistics of a chunk of `values`' type whose values lie within `bounds`
/// (`None` when every value is NaN), as the crate's own column writer puts them: a zero
/// minimum is −0 and a zero maximum +0, as the Parquet format asks of floats, and the legacy
/// min/max fields are filled for signed orders.
fn statistics(bounds: Option<Bounds>, values: &Values, signed: bool) -> Statistics {
    fn typed<T>(bounds: Option<(T, T)>, signed: bool) -> Statistics
    where
        Statistics: From<ValueStatistics<T>>,
    {
        let (min, max) = bounds.unzip();
        ValueStatistics::new(min, max, None, Some(0), false).with_backwards_compatible_min_max(signed).into()
    }
    let signed_zeros = |lo: f64, hi: f64| (if lo == 0.0 { -0.0 } else { lo }, if hi == 0.0 { 0.0 } else { hi });
    match (bounds, values) {
        (Some(Bounds::F64(lo, hi)), _) => typed(Some(signed_zeros(lo, hi)), signed),
        (Some(Bounds::F32(lo, hi)), _) => {
            let (lo, hi) = signed_zeros(lo as f64, hi as f64);
            typed(Some((lo as f32, hi as f32)), signed)
        }
        (Some(Bounds::I32(lo, hi)), _) => typed(Some((lo, hi)), signed),
        (None, Values::F64(_)) => typed::<f64>(None, signed),
        (None, Values::F32(_)) => typed::<f32>(None, signed),
        (None, Values::I32(_)) => typed::<i32>(None, signed),
    }
}

impl Source {
    /// An empty vector of this column's stored type.
    fn values(self) -> Values {
        match self {
            Source::Timestamp => Values::F64(Vec::new()),
            Source::Range(_) | Source::Normal(..) => Values::F32(Vec::new()),
            Source::Bin | Source::Channel | Source::Hit | Source::GeomId(_) => Values::I32(Vec::new()),
        }
    }

    /// The physical type a column of this source must be stored as.
    fn stored_as(self) -> PhysicalType {
        match self.values() {
            Values::F64(_) => PhysicalType::DOUBLE,
            Values::F32(_) => PhysicalType::FLOAT,
            Values::I32(_) => PhysicalType::INT32,
        }
    }
}

/// One column chunk of the open row group: the values of its open page, and its finished
/// pages (header and compressed values) in memory until the group is laid into the file.
/// Pages are PLAIN, version 1, of a required column (no levels), compressed with zstd.
struct OpenColumn {
    source: Source,
    descr: ColumnDescPtr,
    page: Values,
    chunk: Vec<u8>,
    /// Values in the chunk's finished pages.
    values: u64,
    /// The finished pages' size before compression, headers included.
    uncompressed: u64,
    /// Min and max of the chunk's values, for the columns that carry statistics.
    bounds: Option<Bounds>,
    with_statistics: bool,
    /// The size of the chunk's first page: the columns' first pages differ in size, so that
    /// they do not all fill, and wait to be compressed, in the same tick.
    first_page_bytes: usize,
}

impl OpenColumn {
    /// Column `index` of `count`, holding `source`, stored as `descr` says.
    fn new(source: Source, descr: ColumnDescPtr, (index, count): (usize, usize)) -> Result<OpenColumn> {
        let stored = descr.physical_type();
        if stored != source.stored_as() || descr.self_type().get_basic_info().repetition() != Repetition::REQUIRED {
            return Err(ParquetError::General(format!(
                "column {} is stored as {stored}, which does not fit {source:?} (a bug in glint)",
                descr.name()
            )));
        }
        let with_statistics = STATISTICS_COLUMNS.contains(&descr.name());
        Ok(OpenColumn {
            source,
            descr,
            page: source.values(),
            chunk: Vec::new(),
            values: 0,
            uncompressed: 0,
            bounds: None,
            with_statistics,
            first_page_bytes: PAGE_BYTES * (index + 1) / count,
        })
    }

    /// Adds this column's values of `tick` to the open page, and compresses the page once it
    /// is full; returns the hits when it is the `hit` column.
    fn write(&mut self, tick: &TickSnapshot) -> Result<u64> {
        let hits = match (self.source, &mut self.page) {
            (Source::Timestamp, Values::F64(v)) => {
                v.resize(v.len() + tick.rows(), tick.timestamp);
                0
            }
            (Source::Range(ray), Values::F32(v)) => {
                v.extend_from_slice(&tick.ray(ray).range);
                0
            }
            (Source::Normal(ray, axis), Values::F32(v)) => {
                tick.fill_normal(ray, axis, v);
                0
            }
            (Source::GeomId(ray), Values::I32(v)) => {
                v.extend_from_slice(&tick.ray(ray).geomid);
                0
            }
            (source, Values::I32(v)) => tick.fill_i32(source, v),
            (source, _) => {
                return Err(ParquetError::General(format!(
                    "{source:?} is paired with another column's type (a bug in glint)"
                )));
            }
        };
        let limit = if self.values == 0 { self.first_page_bytes } else { PAGE_BYTES };
        if self.page.plain().len() >= limit {
            self.finish_page()?;
        }
        Ok(hits)
    }

    /// Compresses the open page and appends it to the chunk.
    fn finish_page(&mut self) -> Result<()> {
        let rows = self.page.len();
        if rows == 0 {
            return Ok(());
        }
        if self.with_statistics
            && let Some(page) = self.page.bounds()
        {
            self.bounds = Some(self.bounds.map_or(page, |chunk| chunk.merge(page)));
        }
        let plain = self.page.plain();
        let page = Page::DataPage {
            buf: Bytes::from(compress(plain)?),
            num_values: u32::try_from(rows)
                .map_err(|_| ParquetError::General(format!("a page of {rows} rows is too large for Parquet")))?,
            encoding: Encoding::PLAIN,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        let mut sink = TrackedWrite::new(&mut self.chunk);
        let spec = SerializedPageWriter::new(&mut sink).write_page(CompressedPage::new(page, plain.len()))?;
        sink.flush()?;
        self.values += rows as u64;
        self.uncompressed += spec.uncompressed_size as u64;
        self.page.clear();
        Ok(())
    }

    /// Closes the chunk; returns its bytes and what the file's footer records of it, and
    /// leaves the column empty for the next row group.
    fn finish(&mut self) -> Result<(Bytes, ColumnCloseResult)> {
        self.finish_page()?;
        let chunk = Bytes::from(std::mem::take(&mut self.chunk));
        let mut metadata = ColumnChunkMetaData::builder(self.descr.clone())
            .set_compression(Compression::ZSTD(zstd_level()))
            .set_encodings(vec![Encoding::PLAIN, Encoding::RLE])
            .set_num_values(self.values as i64)
            .set_total_compressed_size(chunk.len() as i64)
            .set_total_uncompressed_size(self.uncompressed as i64)
            .set_data_page_offset(0);
        if let Some(statistics) = self.statistics() {
            metadata = metadata.set_statistics(statistics);
        }
        self.bounds = None;
        let close = ColumnCloseResult {
            bytes_written: chunk.len() as u64,
            rows_written: self.values,
            metadata: metadata.build()?,
            bloom_filter: None,
            column_index: None,
            offset_index: None,
        };
        (self.values, self.uncompressed) = (0, 0);
        Ok((chunk, close))
    }

    /// The chunk's statistics, when the column carries them.
    fn statistics(&self) -> Option<Statistics> {
        let signed = self.descr.sort_order().is_signed();
        self.with_statistics.then(|| statistics(self.bounds, &self.page, signed))
    }

    /// Takes back the memory of a chunk laid into the file, for the next chunk to fill.
    fn reuse(&mut self, laid: Bytes) {
        let mut memory = Vec::from(laid);
        memory.clear();
        if self.chunk.is_empty() {
            self.chunk = memory;
        }
    }
}

/// The row group being filled, encoded column by column as the ticks arrive.
pub(crate) struct OpenGroup {
    columns: Vec<OpenColumn>,
    /// Rows written into the group so far.
    pub rows: usize,
}

impl OpenGroup {
    /// The first row group of `file` (whose schema is one of [`crate::schema::arrow_schema`]).
    pub(crate) fn new<W: Write + Send>(file: &SerializedFileWriter<W>) -> Result<OpenGroup> {
        let columns = file.schema_descr().columns();
        let count = columns.len();
        let columns = columns
            .iter()
            .enumerate()
            .map(|(index, descr)| {
                let source = Source::of(descr.name()).ok_or_else(|| {
                    ParquetError::General(format!("glint does not record a column {} (a bug)", descr.name()))
                })?;
                OpenColumn::new(source, descr.clone(), (index, count))
            })
            .collect::<Result<_>>()?;
        Ok(OpenGroup { columns, rows: 0 })
    }

    /// Encodes the rows of one tick, column by column (the tick is one task among the next
    /// tick's simulation tasks, which keep the other threads busy); returns how many hit.
    pub(crate) fn write(&mut self, tick: &TickSnapshot) -> Result<u64> {
        let hits = self.columns.iter_mut().map(|c| c.write(tick)).sum::<Result<u64>>()?;
        self.rows += tick.rows();
        Ok(hits)
    }

    /// Lays the group into `file` as one row group, and starts an empty one.
    pub(crate) fn flush_into<W: Write + Send>(&mut self, file: &mut SerializedFileWriter<W>) -> Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let chunks: Vec<_> = self.columns.par_iter_mut().map(OpenColumn::finish).collect();
        let mut group = file.next_row_group()?;
        for (column, chunk) in self.columns.iter_mut().zip(chunks) {
            let (bytes, close) = chunk?;
            group.append_column(&bytes, close)?;
            column.reuse(bytes);
        }
        group.close()?;
        self.rows = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use parquet::arrow::ArrowSchemaConverter;
    use parquet::column::writer::ColumnWriterImpl;
    use parquet::data_type::{DataType, DoubleType, FloatType, Int32Type};
    use parquet::file::properties::{EnabledStatistics, WriterProperties};

    use super::*;

    /// Surfaces with `normal` and zero points.
    fn surfaces(normal: Vec<[f32; 3]>) -> glint_lidar::Surfaces {
        glint_lidar::Surfaces { point: vec![[0.0; 3]; normal.len()], normal }
    }

    fn snapshot(scan: &Scan, beams: &[u32], split: u32, rot: DMat3) -> TickSnapshot {
        let mut tick = TickSnapshot::default();
        tick.take(scan, beams, 0.0, split, rot);
        tick
    }

    /// The statistics of `values` written as one chunk by the `parquet` crate's own column
    /// writer, the reference for ours.
    fn reference_statistics<T: DataType>(descr: &ColumnDescPtr, values: &[T::T]) -> Option<Statistics> {
        let props = WriterProperties::builder().set_statistics_enabled(EnabledStatistics::Chunk).build();
        let mut sink = TrackedWrite::new(Vec::new());
        let pages = Box::new(SerializedPageWriter::new(&mut sink));
        let mut writer = ColumnWriterImpl::<T>::new(descr.clone(), Arc::new(props), pages);
        writer.write_batch(values, None, None).unwrap();
        writer.close().unwrap().metadata.statistics().cloned()
    }

    /// The statistics of `pages` written as one chunk by [`OpenColumn`], for column `name`.
    fn our_statistics(name: &str, pages: Vec<Values>) -> Option<Statistics> {
        let mut column = OpenColumn::new(Source::of(name).unwrap(), descr(name), (0, 1)).unwrap();
        for page in pages {
            column.page = page;
            column.finish_page().unwrap();
        }
        let (_, close) = column.finish().unwrap();
        close.metadata.statistics().cloned()
    }

    /// Column `name` of a file without secondary columns.
    fn descr(name: &str) -> ColumnDescPtr {
        let schema = ArrowSchemaConverter::new().convert(&crate::schema::arrow_schema(Default::default())).unwrap();
        schema.columns().iter().find(|c| c.name() == name).unwrap().clone()
    }

    #[test]
    fn statistics_match_the_crates_own_column_writer() {
        let ranges: [&[f32]; 5] =
            [&[3.5, -1.0, 12.25], &[0.0, 2.0], &[-0.0, 5.0, f32::NAN], &[f32::NAN], &[-2.0, -0.0, 0.0, -1.0]];
        for pages in [&ranges[..2], &ranges[1..3], &ranges[3..4], &ranges[4..], &ranges[2..4]] {
            let all: Vec<f32> = pages.concat();
            let ours = our_statistics("range", pages.iter().map(|p| Values::F32(p.to_vec())).collect());
            let reference = reference_statistics::<FloatType>(&descr("range"), &all);
            // Debug tells −0 from +0, which `==` does not.
            assert_eq!(format!("{ours:?}"), format!("{reference:?}"), "ranges {pages:?}");
        }
        let times: [&[f64]; 2] = [&[0.25, 0.25, 0.5], &[0.0, 0.75]];
        let ours = our_statistics("timestamp", times.iter().map(|p| Values::F64(p.to_vec())).collect());
        assert_eq!(ours, reference_statistics::<DoubleType>(&descr("timestamp"), &times.concat()));
        for name in ["geom_id", "bin"] {
            let ids: [&[i32]; 2] = [&[7, 3, 40_000], &[-1, 12]];
            let ids: Vec<&[i32]> = if name == "bin" { vec![&[7, 3, 1023], &[0, 12]] } else { ids.to_vec() };
            let ours = our_statistics(name, ids.iter().map(|p| Values::I32(p.to_vec())).collect());
            assert_eq!(ours, reference_statistics::<Int32Type>(&descr(name), &ids.concat()), "{name}");
        }
        assert_eq!(our_statistics("hit", vec![Values::I32(vec![0, 1])]), None, "hit carries no statistics");
    }

    #[test]
    fn every_recorded_column_has_a_source() {
        use glint_lidar::SecondaryCapture;
        for capture in [SecondaryCapture::Off, SecondaryCapture::Both] {
            for field in crate::schema::arrow_schema(capture).fields() {
                assert!(Source::of(field.name()).is_some(), "{}", field.name());
            }
        }
        assert!(matches!(Source::of("refl_normal_y"), Some(Source::Normal(Ray::Reflected, 1))));
        assert!(matches!(Source::of("sec_geom_id"), Some(Source::GeomId(Ray::PassThrough))));
        assert!(Source::of("sec_hit").is_none() && Source::of("intensity").is_none());
    }

    #[test]
    fn only_beams_counting_up_by_one_are_a_run() {
        assert_eq!(run_start(&[5, 6, 7]), Some(5));
        assert_eq!(run_start(&[9]), Some(9));
        for not_a_run in [&[0u32, 2, 1, 3][..], &[3, 2, 1, 0], &[1023, 0, 1], &[4, 4, 4], &[], &[u32::MAX, 0]] {
            assert_eq!(run_start(not_a_run), None, "{not_a_run:?}");
        }
        // Beams out of order whose first and last span as many beams are copied one by one.
        let scan = Scan {
            range: vec![10.0, 11.0, 12.0, 13.0],
            geomid: vec![0; 4],
            surfaces: Some(surfaces(vec![[0.0; 3]; 4])),
            ..Scan::default()
        };
        let tick = snapshot(&scan, &[0, 2, 1, 3], 1, DMat3::IDENTITY);
        assert_eq!(tick.ray(Ray::Beam).range, [10.0, 12.0, 11.0, 13.0]);
    }

    #[test]
    fn bins_and_channels_of_a_run_match_the_division() {
        let scan = Scan {
            range: vec![0.0; 1000],
            geomid: vec![0; 1000],
            surfaces: Some(surfaces(vec![[0.0; 3]; 1000])),
            ..Scan::default()
        };
        for (first, len, split) in [(0u32, 200usize, 64u32), (61, 7, 64), (130, 1, 64), (5, 600, 1), (255, 300, 256)] {
            let beams: Vec<u32> = (first..first + len as u32).collect();
            let tick = snapshot(&scan, &beams, split, DMat3::IDENTITY);
            let (mut bin, mut channel) = (Vec::new(), Vec::new());
            tick.fill_i32(Source::Bin, &mut bin);
            tick.fill_i32(Source::Channel, &mut channel);
            let want_bin: Vec<i32> = beams.iter().map(|&k| (k / split) as i32).collect();
            let want_channel: Vec<i32> = beams.iter().map(|&k| (k % split) as i32).collect();
            assert_eq!((bin, channel), (want_bin, want_channel), "run of {len} from {first}, split {split}");
        }
    }

    #[test]
    fn sensor_normals_are_the_rotated_world_normals() {
        let rot = DMat3::from_euler(glam::EulerRot::ZYX, 0.7, -0.2, 0.1);
        let normals = vec![[0.0f32, 0.0, 1.0], [0.6, -0.8, 0.0], [0.0; 3], [-0.36, 0.48, 0.8]];
        let scan = Scan {
            range: vec![1.0; 4],
            geomid: vec![0; 4],
            surfaces: Some(surfaces(normals.clone())),
            ..Scan::default()
        };
        // A run and the same beams out of order take the two paths.
        for beams in [vec![0u32, 1, 2, 3], vec![3, 2, 1, 0]] {
            let tick = snapshot(&scan, &beams, 1, rot);
            let columns: Vec<Vec<f32>> = (0..3)
                .map(|axis| {
                    let mut out = Vec::new();
                    tick.fill_normal(Ray::Beam, axis, &mut out);
                    out
                })
                .collect();
            for (i, &k) in beams.iter().enumerate() {
                let n = normals[k as usize];
                let want = rot.transpose() * DVec3::new(n[0] as f64, n[1] as f64, n[2] as f64);
                let got = [columns[0][i], columns[1][i], columns[2][i]];
                assert_eq!(got, [want.x as f32, want.y as f32, want.z as f32], "normal {k}");
                if k == 2 {
                    assert!(got.iter().all(|c| c.to_bits() == 0), "a miss's normal is +0");
                }
            }
        }
    }
}
