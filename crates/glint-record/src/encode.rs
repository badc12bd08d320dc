//! The open row group of a lidar file: one Parquet column writer per column, each encoding
//! and compressing its values into memory as the ticks arrive. A tick's rows are copied out
//! of the scan ([`TickSnapshot`]), then every column is computed from them and encoded, side
//! by side on the rayon pool ([`OpenGroup::write`]); when the group is full its column chunks
//! are laid into the file in the schema's order.

use std::io::Write;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use glam::{DMat3, DVec3};
use glint_lidar::Scan;
use parquet::basic::Type as PhysicalType;
use parquet::column::page::{CompressedPage, PageWriteSpec, PageWriter};
use parquet::column::writer::{ColumnCloseResult, ColumnWriterImpl};
use parquet::data_type::{DoubleType, FloatType, Int32Type};
use parquet::errors::{ParquetError, Result};
use parquet::file::properties::WriterPropertiesPtr;
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;
use rayon::prelude::*;

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
    fn copy(&mut self, beams: &[u32], range: &[f32], geomid: &[i32], normal: &[[f32; 3]]) {
        gather(&mut self.range, range, beams);
        gather(&mut self.geomid, geomid, beams);
        gather(&mut self.normal, normal, beams);
    }

    fn clear(&mut self) {
        self.range.clear();
        self.geomid.clear();
        self.normal.clear();
    }
}

/// The first beam when `beams` are a contiguous run (a spinning unit's slice).
fn run_start(beams: &[u32]) -> Option<usize> {
    match (beams.first(), beams.last()) {
        (Some(&a), Some(&b)) if (b - a) as usize + 1 == beams.len() => Some(a as usize),
        _ => None,
    }
}

/// Fills `out` with `values[k]` for each beam `k`: one copy where the beams are a run.
fn gather<T: Copy>(out: &mut Vec<T>, values: &[T], beams: &[u32]) {
    out.clear();
    match run_start(beams) {
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
    /// Copies beams `beams` of `scan` (whose captured rays the writer has checked).
    pub(crate) fn take(&mut self, scan: &Scan, beams: &[u32], timestamp: f64, split: u32, rot: DMat3) {
        (self.timestamp, self.split, self.rot) = (timestamp, split, rot);
        self.beams.clear();
        self.beams.extend_from_slice(beams);
        let [beam, pass, reflected] = &mut self.rays;
        beam.copy(beams, &scan.range, &scan.geomid, &scan.normal);
        for (arrays, hits) in [(pass, &scan.pass_through), (reflected, &scan.reflected)] {
            match hits {
                Some(h) => arrays.copy(beams, &h.range, &h.geomid, &h.normal),
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

    /// Fills `out` with a computed INT32 column (`bin`, `channel` or `hit`); returns the
    /// hits when it is the `hit` column.
    fn fill_i32(&self, source: Source, out: &mut Vec<i32>) -> u64 {
        out.clear();
        match source {
            Source::Bin | Source::Channel => self.fill_bin_or_channel(matches!(source, Source::Bin), out),
            Source::Hit => {
                let beam = self.ray(Ray::Beam);
                out.extend(beam.range.iter().zip(&beam.geomid).map(|(&r, &g)| (r >= 0.0 && g >= 0) as i32));
                return out.iter().map(|&h| h as u64).sum();
            }
            _ => {}
        }
        0
    }

    /// `bin = k / split` or `channel = k % split` for each beam `k`. A run is walked bin by
    /// bin, without a division per row.
    fn fill_bin_or_channel(&self, bin: bool, out: &mut Vec<i32>) {
        let split = self.split;
        let Some(first) = run_start(&self.beams) else {
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

    /// Fills `out` with a sensor-frame normal component: its dot product with that sensor
    /// axis (in world coordinates), in f64 as the pose is. A zero normal (a miss) stays +0.
    fn fill_normal(&self, ray: Ray, axis: usize, out: &mut Vec<f32>) {
        let axis: DVec3 = self.rot.col(axis);
        let component =
            |n: &[f32; 3]| (axis.x * n[0] as f64 + axis.y * n[1] as f64 + axis.z * n[2] as f64) as f32 + 0.0;
        out.clear();
        out.extend(self.ray(ray).normal.iter().map(component));
    }
}

/// The pages of one column chunk, kept in memory until the row group is laid into the file.
/// Each page goes through the crate's own page writer (which writes its header), appended to
/// the chunk's bytes, its offset counted from the chunk's start.
struct MemoryPages(Arc<Mutex<Vec<u8>>>);

impl PageWriter for MemoryPages {
    fn write_page(&mut self, page: CompressedPage) -> Result<PageWriteSpec> {
        let mut chunk =
            self.0.lock().map_err(|_| ParquetError::General("a column chunk buffer was poisoned".into()))?;
        let start = chunk.len() as u64;
        let mut sink = TrackedWrite::new(std::mem::take(&mut *chunk));
        let written = SerializedPageWriter::new(&mut sink).write_page(page);
        sink.flush()?;
        *chunk = sink.into_inner()?;
        let mut spec = written?;
        spec.offset += start;
        Ok(spec)
    }

    fn close(&mut self) -> Result<()> {
        Ok(())
    }
}

/// A column writer of the physical type its column is stored as.
enum Typed {
    Double(ColumnWriterImpl<'static, DoubleType>),
    Float(ColumnWriterImpl<'static, FloatType>),
    Int32(ColumnWriterImpl<'static, Int32Type>),
}

impl Typed {
    /// A writer for `source`, stored as `descr` says, whose pages go to `pages`.
    fn new(
        source: Source,
        descr: &ColumnDescPtr,
        props: &WriterPropertiesPtr,
        pages: &Arc<Mutex<Vec<u8>>>,
    ) -> Result<Typed> {
        let sink = || Box::new(MemoryPages(pages.clone()));
        let (d, p) = (descr.clone(), props.clone());
        Ok(match (source.values(), descr.physical_type()) {
            (Values::F64(_), PhysicalType::DOUBLE) => Typed::Double(ColumnWriterImpl::new(d, p, sink())),
            (Values::F32(_), PhysicalType::FLOAT) => Typed::Float(ColumnWriterImpl::new(d, p, sink())),
            (Values::I32(_), PhysicalType::INT32) => Typed::Int32(ColumnWriterImpl::new(d, p, sink())),
            (_, stored) => {
                return Err(ParquetError::General(format!(
                    "column {} is stored as {stored}, which does not fit {source:?} (a bug in glint)",
                    descr.name()
                )));
            }
        })
    }

    fn close(self) -> Result<ColumnCloseResult> {
        match self {
            Typed::Double(w) => w.close(),
            Typed::Float(w) => w.close(),
            Typed::Int32(w) => w.close(),
        }
    }
}

/// Scratch values of one column, in the type the column is stored as.
enum Values {
    F64(Vec<f64>),
    F32(Vec<f32>),
    I32(Vec<i32>),
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
}

/// One column of the open row group.
struct OpenColumn {
    source: Source,
    descr: ColumnDescPtr,
    pages: Arc<Mutex<Vec<u8>>>,
    writer: Typed,
    /// The column's values of a tick, where they are computed rather than copied.
    scratch: Values,
}

impl OpenColumn {
    fn new(source: Source, descr: ColumnDescPtr, props: &WriterPropertiesPtr) -> Result<OpenColumn> {
        let pages = Arc::new(Mutex::new(Vec::new()));
        let writer = Typed::new(source, &descr, props, &pages)?;
        Ok(OpenColumn { source, descr, pages, writer, scratch: source.values() })
    }

    /// Encodes this column's values of `tick`; returns the hits when it is the `hit` column.
    fn write(&mut self, tick: &TickSnapshot) -> Result<u64> {
        let hits = match (&mut self.writer, self.source, &mut self.scratch) {
            (Typed::Double(w), Source::Timestamp, Values::F64(v)) => {
                v.clear();
                v.resize(tick.rows(), tick.timestamp);
                w.write_batch(v, None, None)?;
                0
            }
            (Typed::Float(w), Source::Range(ray), _) => {
                w.write_batch(&tick.ray(ray).range, None, None)?;
                0
            }
            (Typed::Float(w), Source::Normal(ray, axis), Values::F32(v)) => {
                tick.fill_normal(ray, axis, v);
                w.write_batch(v, None, None)?;
                0
            }
            (Typed::Int32(w), Source::GeomId(ray), _) => {
                w.write_batch(&tick.ray(ray).geomid, None, None)?;
                0
            }
            (Typed::Int32(w), source, Values::I32(v)) => {
                let hits = tick.fill_i32(source, v);
                w.write_batch(v, None, None)?;
                hits
            }
            (_, source, _) => {
                return Err(ParquetError::General(format!(
                    "{source:?} is paired with another column's type (a bug in glint)"
                )));
            }
        };
        Ok(hits)
    }

    /// Closes the chunk, leaving a fresh writer for the next row group; returns its bytes and
    /// what the file's footer records of it.
    fn finish(&mut self, props: &WriterPropertiesPtr) -> Result<(Bytes, ColumnCloseResult)> {
        let next = Typed::new(self.source, &self.descr, props, &self.pages)?;
        let close = std::mem::replace(&mut self.writer, next).close()?;
        Ok((Bytes::from(std::mem::take(&mut *self.chunk()?)), close))
    }

    /// The chunk's bytes so far.
    fn chunk(&self) -> Result<std::sync::MutexGuard<'_, Vec<u8>>> {
        self.pages.lock().map_err(|_| ParquetError::General("a column chunk buffer was poisoned".into()))
    }

    /// Takes back the memory of a chunk laid into the file, for the next chunk to fill.
    fn reuse(&mut self, laid: Bytes) -> Result<()> {
        let mut memory = Vec::from(laid);
        memory.clear();
        let mut chunk = self.chunk()?;
        if chunk.is_empty() {
            *chunk = memory;
        }
        Ok(())
    }
}

/// The row group being filled, encoded column by column as the ticks arrive.
pub(crate) struct OpenGroup {
    columns: Vec<OpenColumn>,
    props: WriterPropertiesPtr,
    /// Rows written into the group so far.
    pub rows: usize,
}

impl OpenGroup {
    /// The first row group of `file` (whose schema is one of [`crate::schema::arrow_schema`]).
    pub(crate) fn new<W: Write + Send>(file: &SerializedFileWriter<W>) -> Result<OpenGroup> {
        let props = file.properties().clone();
        let columns = file
            .schema_descr()
            .columns()
            .iter()
            .map(|descr| {
                let source = Source::of(descr.name()).ok_or_else(|| {
                    ParquetError::General(format!("glint does not record a column {} (a bug)", descr.name()))
                })?;
                OpenColumn::new(source, descr.clone(), &props)
            })
            .collect::<Result<_>>()?;
        Ok(OpenGroup { columns, props, rows: 0 })
    }

    /// Encodes the rows of one tick, every column side by side; returns how many hit.
    pub(crate) fn write(&mut self, tick: &TickSnapshot) -> Result<u64> {
        let hits = self.columns.par_iter_mut().map(|c| c.write(tick)).try_reduce(|| 0, |a, b| Ok(a + b))?;
        self.rows += tick.rows();
        Ok(hits)
    }

    /// Lays the group into `file` as one row group, and starts an empty one.
    pub(crate) fn flush_into<W: Write + Send>(&mut self, file: &mut SerializedFileWriter<W>) -> Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let props = &self.props;
        let chunks: Vec<_> = self.columns.par_iter_mut().map(|c| c.finish(props)).collect();
        let mut group = file.next_row_group()?;
        for (column, chunk) in self.columns.iter_mut().zip(chunks) {
            let (bytes, close) = chunk?;
            group.append_column(&bytes, close)?;
            column.reuse(bytes)?;
        }
        group.close()?;
        self.rows = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(scan: &Scan, beams: &[u32], split: u32, rot: DMat3) -> TickSnapshot {
        let mut tick = TickSnapshot::default();
        tick.take(scan, beams, 0.0, split, rot);
        tick
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
    fn bins_and_channels_of_a_run_match_the_division() {
        let scan =
            Scan { range: vec![0.0; 1000], geomid: vec![0; 1000], normal: vec![[0.0; 3]; 1000], ..Scan::default() };
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
        let scan = Scan { range: vec![1.0; 4], geomid: vec![0; 4], normal: normals.clone(), ..Scan::default() };
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
