//! One sensor's lidar file during an episode: rows buffered per row group, encoded by the
//! Parquet writer, hashed as they reach the disk, then renamed and described by a sidecar.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use arrow_array::{Array, ArrayRef, Float32Array, Float64Array, Int32Array, RecordBatch, UInt8Array, UInt16Array};
use arrow_data::ArrayData;
use arrow_schema::{DataType, SchemaRef};
use glam::{DMat3, DVec3};
use glint_lidar::{Scan, ScanConfig, ScanPattern, SecondaryCapture, SecondaryHits};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesBuilder};
use parquet::schema::types::ColumnPath;
use sha2::{Digest, Sha256};

use crate::schema::{EMISSION_SPLIT, ROW_GROUP_ROWS, arrow_schema, captures};
use crate::{RecordError, TickData};

/// A file writer that hashes every byte it passes on, so the file's SHA-256 is known when it
/// closes without reading it back.
pub(crate) struct HashWriter {
    inner: BufWriter<File>,
    hasher: Sha256,
    bytes: u64,
}

impl HashWriter {
    /// Hashes what goes to `file`, through a 1 MiB buffer.
    pub(crate) fn new(file: File) -> HashWriter {
        HashWriter { inner: BufWriter::with_capacity(1 << 20, file), hasher: Sha256::new(), bytes: 0 }
    }

    /// Flushes and syncs the file, and returns the SHA-256 (hex) of everything written.
    pub(crate) fn finish(&mut self, path: &Path) -> Result<String, RecordError> {
        self.inner.flush().map_err(|e| RecordError::io("write", path, e))?;
        self.inner.get_ref().sync_all().map_err(|e| RecordError::io("sync", path, e))?;
        Ok(hex(&std::mem::take(&mut self.hasher).finalize()))
    }
}

impl Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The properties every Parquet file of a session shares: zstd, chunk statistics, bounded row
/// groups. Nothing in them depends on when or where a file is written.
pub(crate) fn zstd_properties() -> WriterPropertiesBuilder {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 (lower-case hex) of the file at `path`, read in blocks.
pub fn file_sha256(path: &Path) -> Result<String, RecordError> {
    let mut file = File::open(path).map_err(|e| RecordError::io("open", path, e))?;
    let mut hasher = Sha256::new();
    let mut block = vec![0u8; 1 << 16];
    loop {
        let n = std::io::Read::read(&mut file, &mut block).map_err(|e| RecordError::io("read", path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&block[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// The five columns of one secondary ray, buffered.
#[derive(Default)]
struct SecondaryBuffer {
    range: Vec<f32>,
    geom_id: Vec<i32>,
    normal: [Vec<f32>; 3],
}

impl SecondaryBuffer {
    /// Appends beams `beams` of `hits`, column by column.
    fn extend(&mut self, hits: &SecondaryHits, beams: &[u32], rt: &DMat3) {
        gather(&mut self.range, &hits.range, beams);
        gather(&mut self.geom_id, &hits.geomid, beams);
        extend_normals(&mut self.normal, &hits.normal, beams, rt);
    }

    fn take(&mut self, out: &mut Vec<ArrayRef>, spare: &mut Spare) {
        out.push(Arc::new(Float32Array::from(group(&mut self.range, &mut spare.f32s))));
        out.push(Arc::new(Int32Array::from(group(&mut self.geom_id, &mut spare.i32s))));
        for col in &mut self.normal {
            out.push(Arc::new(Float32Array::from(group(col, &mut spare.f32s))));
        }
    }
}

/// The rows of the row group being filled, column by column.
#[derive(Default)]
struct Buffer {
    timestamp: Vec<f64>,
    bin: Vec<u16>,
    channel: Vec<u16>,
    range: Vec<f32>,
    geom_id: Vec<i32>,
    hit: Vec<u8>,
    normal: [Vec<f32>; 3],
    pass: Option<SecondaryBuffer>,
    reflected: Option<SecondaryBuffer>,
}

/// Appends `values[k]` for each beam `k`: one copy when the beams are a contiguous run (a
/// spinning unit's slice), else one by one.
fn gather<T: Copy>(column: &mut Vec<T>, values: &[T], beams: &[u32]) {
    match (beams.first(), beams.last()) {
        (Some(&a), Some(&b)) if (b - a) as usize + 1 == beams.len() => {
            column.extend_from_slice(&values[a as usize..=b as usize]);
        }
        _ => column.extend(beams.iter().map(|&k| values[k as usize])),
    }
}

/// Column vectors of written row groups, emptied, by element type.
#[derive(Default)]
struct Spare {
    f64s: Vec<Vec<f64>>,
    f32s: Vec<Vec<f32>>,
    i32s: Vec<Vec<i32>>,
    u16s: Vec<Vec<u16>>,
    u8s: Vec<Vec<u8>>,
}

/// The vector behind a written column, when nothing else holds it.
fn vec_of<A, T>(column: ArrayRef) -> Option<Vec<T>>
where
    A: Array + Clone + 'static + Into<ArrayData>,
    T: arrow_buffer::ArrowNativeType,
{
    let array = column.as_any().downcast_ref::<A>()?.clone();
    drop(column);
    let data: ArrayData = array.into();
    let buffer = data.buffers().first()?.clone();
    drop(data);
    buffer.into_vec::<T>().ok()
}

impl Spare {
    /// Keeps the columns of a written row group for the next ones.
    fn reclaim(&mut self, batch: RecordBatch) {
        let columns = batch.columns().to_vec();
        // The batch's own references go first, or no column is ours alone.
        drop(batch);
        // One group's worth of each type is enough: the next group takes exactly that.
        let wanted = |t: &DataType| columns.iter().filter(|c| c.data_type() == t).count();
        let room = [
            wanted(&DataType::Float64).saturating_sub(self.f64s.len()),
            wanted(&DataType::Float32).saturating_sub(self.f32s.len()),
            wanted(&DataType::Int32).saturating_sub(self.i32s.len()),
            wanted(&DataType::UInt16).saturating_sub(self.u16s.len()),
            wanted(&DataType::UInt8).saturating_sub(self.u8s.len()),
        ];
        let mut room = room;
        for column in columns {
            let slot = match column.data_type() {
                DataType::Float64 => 0,
                DataType::Float32 => 1,
                DataType::Int32 => 2,
                DataType::UInt16 => 3,
                DataType::UInt8 => 4,
                _ => continue,
            };
            if room[slot] == 0 {
                continue;
            }
            room[slot] -= 1;
            match slot {
                0 => self.f64s.extend(vec_of::<Float64Array, f64>(column)),
                1 => self.f32s.extend(vec_of::<Float32Array, f32>(column)),
                2 => self.i32s.extend(vec_of::<Int32Array, i32>(column)),
                3 => self.u16s.extend(vec_of::<UInt16Array, u16>(column)),
                _ => self.u8s.extend(vec_of::<UInt8Array, u8>(column)),
            }
        }
    }
}

/// Takes a filled column, leaving an empty one with room for a whole row group (a spare one
/// when there is): the next group fills it without growing or faulting in fresh pages.
fn group<T>(column: &mut Vec<T>, spare: &mut Vec<Vec<T>>) -> Vec<T> {
    let mut next = spare.pop().unwrap_or_else(|| Vec::with_capacity(ROW_GROUP_ROWS));
    next.clear();
    std::mem::replace(column, next)
}

/// Appends the sensor-frame normals of `beams` to the three normal columns.
fn extend_normals(columns: &mut [Vec<f32>; 3], normals: &[[f32; 3]], beams: &[u32], rt: &DMat3) {
    let first = columns[0].len();
    for c in columns.iter_mut() {
        c.resize(first + beams.len(), 0.0);
    }
    let [x, y, z] = columns;
    for (i, &k) in beams.iter().enumerate() {
        let n = sensor_normal(rt, normals[k as usize]);
        (x[first + i], y[first + i], z[first + i]) = (n[0], n[1], n[2]);
    }
}

/// A world-frame normal in the sensor frame (`rt` is the sensor rotation transposed).
#[inline]
fn sensor_normal(rt: &DMat3, n: [f32; 3]) -> [f32; 3] {
    if n == [0.0; 3] {
        return n;
    }
    let v = *rt * DVec3::new(n[0] as f64, n[1] as f64, n[2] as f64);
    [v.x as f32, v.y as f32, v.z as f32]
}

/// Row groups queued for the encoder thread beyond the one it is encoding: none, so the
/// writer holds at most the group being filled and the one being encoded (and spare vectors
/// for one more), and its peak memory is reached in the first seconds of any episode.
const QUEUED_GROUPS: usize = 0;

/// The most rows a writer holds in memory, not counting spare vectors: see
/// [`QUEUED_GROUPS`].
pub const MAX_BUFFERED_ROWS: usize = (QUEUED_GROUPS + 2) * ROW_GROUP_ROWS;

/// Encodes and compresses row groups on a thread of its own, so a recording's Parquet work
/// overlaps the simulation instead of stalling it. The queue is bounded: memory stays flat.
struct Encoder {
    tx: Option<SyncSender<RecordBatch>>,
    /// Written row groups coming back, so their column memory is filled again rather than
    /// freed and allocated anew (which let a long episode's peak memory creep up).
    spent: Receiver<RecordBatch>,
    handle: Option<JoinHandle<Result<ArrowWriter<HashWriter>, RecordError>>>,
    /// Rows sent and not yet written.
    queued: Arc<AtomicUsize>,
    partial: PathBuf,
}

impl Encoder {
    fn start(mut writer: ArrowWriter<HashWriter>, partial: PathBuf) -> Result<Encoder, RecordError> {
        let (tx, rx) = sync_channel::<RecordBatch>(QUEUED_GROUPS);
        let (back, spent) = channel::<RecordBatch>();
        let queued = Arc::new(AtomicUsize::new(0));
        let (count, path) = (queued.clone(), partial.clone());
        let handle = std::thread::Builder::new()
            .name("glint-parquet".into())
            .spawn(move || {
                for batch in rx {
                    writer.write(&batch).map_err(|e| RecordError::parquet(&path, e))?;
                    writer.flush().map_err(|e| RecordError::parquet(&path, e))?;
                    count.fetch_sub(batch.num_rows(), Ordering::Relaxed);
                    // The writer may be gone first; then the columns are simply freed.
                    let _ = back.send(batch);
                }
                Ok(writer)
            })
            .map_err(|e| RecordError::io("start the encoder for", &partial, e))?;
        Ok(Encoder { tx: Some(tx), spent, handle: Some(handle), queued, partial })
    }

    /// Queues a row group (waiting while the queue is full).
    fn send(&mut self, batch: RecordBatch) -> Result<(), RecordError> {
        self.queued.fetch_add(batch.num_rows(), Ordering::Relaxed);
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(batch).is_ok());
        if sent {
            return Ok(());
        }
        // The thread stopped: it failed, and joining gives its error.
        match self.join() {
            Err(e) => Err(e),
            Ok(_) => Err(RecordError::parquet(&self.partial, "the encoder stopped early (a bug in glint)")),
        }
    }

    /// Waits for every queued group to be written and returns the writer.
    fn join(&mut self) -> Result<ArrowWriter<HashWriter>, RecordError> {
        drop(self.tx.take());
        let handle = self.handle.take().ok_or_else(|| RecordError::parquet(&self.partial, "the encoder is gone"))?;
        handle
            .join()
            .map_err(|_| RecordError::parquet(&self.partial, "the encoder thread panicked (a bug in glint)"))?
    }
}

/// One sensor's file of one episode.
pub(crate) struct LidarWriter {
    /// `…parquet.partial` while writing.
    pub partial: PathBuf,
    /// `…parquet` once finished.
    pub path: PathBuf,
    encoder: Encoder,
    spare: Spare,
    schema: SchemaRef,
    buf: Buffer,
    config: ScanConfig,
    capture: SecondaryCapture,
    pub rows: u64,
    pub hits: u64,
    pub ticks: u64,
}

/// What a finished file is.
pub(crate) struct Finished {
    pub rows: u64,
    pub bytes: u64,
    pub sha256: String,
}

impl LidarWriter {
    /// Creates `partial` (which must not exist) and opens a Parquet writer on it.
    pub(crate) fn create(
        partial: PathBuf,
        path: PathBuf,
        config: ScanConfig,
        capture: SecondaryCapture,
    ) -> Result<LidarWriter, RecordError> {
        let file = File::create_new(&partial).map_err(|e| RecordError::io("create", &partial, e))?;
        let sink = HashWriter::new(file);
        let schema = arrow_schema(capture);
        // Dictionaries cost a hash per value; zstd finds the same repetition (ticks share a
        // timestamp, bins and channels cycle, few geoms) without one, so every column is
        // stored plain and compressed, in large pages written in large batches.
        let props = zstd_properties()
            .set_dictionary_enabled(false)
            .set_write_batch_size(65_536)
            .set_data_page_size_limit(8 << 20)
            .set_offset_index_disabled(true);
        // Min/max of a normal component says nothing useful and costs a pass over every
        // value; ranges, geoms, bins, channels and timestamps keep their statistics.
        let props = schema.fields().iter().filter(|f| f.name().contains("normal_")).fold(props, |p, f| {
            p.set_column_statistics_enabled(ColumnPath::from(f.name().as_str()), EnabledStatistics::None)
        });
        let props = props.build();
        let writer =
            ArrowWriter::try_new(sink, schema.clone(), Some(props)).map_err(|e| RecordError::parquet(&partial, e))?;
        let encoder = Encoder::start(writer, partial.clone())?;
        let (pass, reflected) = captures(capture);
        let buf = Buffer {
            pass: pass.then(SecondaryBuffer::default),
            reflected: reflected.then(SecondaryBuffer::default),
            ..Buffer::default()
        };
        Ok(LidarWriter {
            partial,
            path,
            encoder,
            spare: Spare::default(),
            schema,
            buf,
            config,
            capture,
            rows: 0,
            hits: 0,
            ticks: 0,
        })
    }

    /// Rows held in memory and not yet written to the file as a row group.
    pub(crate) fn buffered_rows(&self) -> usize {
        self.buf.range.len() + self.encoder.queued.load(Ordering::Relaxed)
    }

    /// Checks that `tick` fits this sensor, before any of it is written.
    fn check(&self, sensor: usize, tick: &TickData) -> Result<(), RecordError> {
        let bad = |reason: String| RecordError::Tick { sensor, reason };
        let beams = self.config.beam_count();
        let scan = tick.scan;
        if !tick.timestamp.is_finite() {
            return Err(bad(format!("its timestamp is {}, not a finite number of seconds", tick.timestamp)));
        }
        if !tick.sensor_rot.is_finite() {
            return Err(bad("the sensor rotation is not finite".into()));
        }
        let lengths = [scan.range.len(), scan.geomid.len(), scan.normal.len()];
        if lengths.iter().any(|&n| n != beams) {
            return Err(bad(format!(
                "the scan has {} beams, and the recorded binding has {beams} (was the configuration changed during the recording?)",
                scan.range.len()
            )));
        }
        if let Some(&k) = tick.beams.iter().find(|&&k| k as usize >= beams) {
            return Err(bad(format!("beam {k} does not exist (the sensor has {beams} beams)")));
        }
        let (pass, reflected) = captures(self.capture);
        for (wanted, hits, what) in
            [(pass, &scan.pass_through, "pass-through"), (reflected, &scan.reflected, "reflected")]
        {
            if !wanted {
                continue;
            }
            match hits {
                None => {
                    return Err(bad(format!(
                        "the session records {what} geometry, and the scan has none (set the binding's secondary_capture before binding the sensors)"
                    )));
                }
                Some(h) if h.range.len() != beams || h.geomid.len() != beams || h.normal.len() != beams => {
                    return Err(bad(format!("the scan's {what} arrays do not hold {beams} beams")));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Appends one row per beam of `tick`, writing a row group each time one fills.
    pub(crate) fn write_tick(&mut self, sensor: usize, tick: &TickData) -> Result<(), RecordError> {
        self.check(sensor, tick)?;
        let rt = tick.sensor_rot.transpose();
        let mut rest = tick.beams;
        while !rest.is_empty() {
            let room = ROW_GROUP_ROWS - self.buf.range.len();
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.push(tick.scan, now, tick.timestamp, &rt);
            if self.buf.range.len() >= ROW_GROUP_ROWS {
                self.write_group()?;
            }
            rest = later;
        }
        self.ticks += 1;
        Ok(())
    }

    /// Appends beams `beams` of `scan`, column by column (tight loops the compiler
    /// vectorizes, rather than one row at a time across nineteen vectors).
    fn push(&mut self, scan: &Scan, beams: &[u32], timestamp: f64, rt: &DMat3) {
        let b = &mut self.buf;
        let spinning = matches!(self.config.pattern, ScanPattern::Spinning);
        let split = if spinning { self.config.channels } else { EMISSION_SPLIT };
        b.timestamp.extend(std::iter::repeat_n(timestamp, beams.len()));
        b.bin.extend(beams.iter().map(|&k| (k / split) as u16));
        b.channel.extend(beams.iter().map(|&k| (k % split) as u16));
        gather(&mut b.range, &scan.range, beams);
        gather(&mut b.geom_id, &scan.geomid, beams);
        let first = b.hit.len();
        b.hit.extend(beams.iter().map(|&k| (scan.range[k as usize] >= 0.0 && scan.geomid[k as usize] >= 0) as u8));
        self.hits += b.hit[first..].iter().map(|&h| h as u64).sum::<u64>();
        extend_normals(&mut b.normal, &scan.normal, beams, rt);
        if let (Some(buf), Some(hits)) = (b.pass.as_mut(), scan.pass_through.as_ref()) {
            buf.extend(hits, beams, rt);
        }
        if let (Some(buf), Some(hits)) = (b.reflected.as_mut(), scan.reflected.as_ref()) {
            buf.extend(hits, beams, rt);
        }
        self.rows += beams.len() as u64;
    }

    /// Encodes the buffered rows as one row group and writes it to the file.
    fn write_group(&mut self) -> Result<(), RecordError> {
        if self.buf.range.is_empty() {
            return Ok(());
        }
        while let Ok(batch) = self.encoder.spent.try_recv() {
            self.spare.reclaim(batch);
        }
        let (b, spare) = (&mut self.buf, &mut self.spare);
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(Float64Array::from(group(&mut b.timestamp, &mut spare.f64s))),
            Arc::new(UInt16Array::from(group(&mut b.bin, &mut spare.u16s))),
            Arc::new(UInt16Array::from(group(&mut b.channel, &mut spare.u16s))),
            Arc::new(Float32Array::from(group(&mut b.range, &mut spare.f32s))),
            Arc::new(Int32Array::from(group(&mut b.geom_id, &mut spare.i32s))),
            Arc::new(UInt8Array::from(group(&mut b.hit, &mut spare.u8s))),
        ];
        for col in &mut b.normal {
            cols.push(Arc::new(Float32Array::from(group(col, &mut spare.f32s))));
        }
        for sec in [b.pass.as_mut(), b.reflected.as_mut()].into_iter().flatten() {
            sec.take(&mut cols, spare);
        }
        let batch =
            RecordBatch::try_new(self.schema.clone(), cols).map_err(|e| RecordError::parquet(&self.partial, e))?;
        self.encoder.send(batch)
    }

    /// Writes the last row group and the footer, and syncs the file (still `.partial`).
    pub(crate) fn close(mut self) -> Result<Finished, RecordError> {
        self.write_group()?;
        let mut writer = self.encoder.join()?;
        let meta = writer.finish().map_err(|e| RecordError::parquet(&self.partial, e))?;
        let rows = meta.file_metadata().num_rows() as u64;
        let sink = writer.inner_mut();
        let sha256 = sink.finish(&self.partial)?;
        let bytes = sink.bytes;
        if rows != self.rows {
            return Err(RecordError::parquet(
                &self.partial,
                format!("the writer recorded {rows} rows where {} were written (a bug in glint)", self.rows),
            ));
        }
        Ok(Finished { rows, bytes, sha256 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_columns_come_back_as_spare_vectors() {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Float64Array::from(vec![1.0f64; 10])),
            Arc::new(Float32Array::from(vec![1.0f32; 10])),
            Arc::new(Int32Array::from(vec![1i32; 10])),
            Arc::new(UInt16Array::from(vec![1u16; 10])),
            Arc::new(UInt8Array::from(vec![1u8; 10])),
        ];
        let batch = RecordBatch::try_from_iter(["a", "b", "c", "d", "e"].into_iter().zip(cols)).unwrap();
        let mut spare = Spare::default();
        spare.reclaim(batch);
        let counts = (spare.f64s.len(), spare.f32s.len(), spare.i32s.len(), spare.u16s.len(), spare.u8s.len());
        assert_eq!(counts, (1, 1, 1, 1, 1));
        let mut column = vec![2.0f32; 3];
        let full = group(&mut column, &mut spare.f32s);
        assert_eq!(full, [2.0; 3]);
        assert!(column.is_empty() && column.capacity() >= 10 && spare.f32s.is_empty());
    }
}
