//! One sensor's lidar file during an episode: rows buffered per row group in Parquet's own
//! column types, encoded on a thread of their own through the `parquet` crate's column
//! writers, hashed as they reach the disk, then renamed and described by a sidecar.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use arrow_schema::Schema;
use glam::{DMat3, DVec3};
use glint_lidar::{Scan, ScanConfig, ScanPattern, SecondaryCapture, SecondaryHits};
use parquet::arrow::{ArrowSchemaConverter, add_encoded_arrow_schema_to_metadata};
use parquet::basic::{Compression, ZstdLevel};
use parquet::data_type::{DataType, DoubleType, FloatType, Int32Type};
use parquet::errors::ParquetError;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesBuilder};
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
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
struct SecondaryBuffer {
    range: Vec<f32>,
    geom_id: Vec<i32>,
    normal: [Vec<f32>; 3],
}

impl SecondaryBuffer {
    /// Appends beams `beams` of `hits`, column by column.
    fn extend(&mut self, hits: &SecondaryHits, beams: &[u32], rot: &DMat3) {
        gather(&mut self.range, &hits.range, beams);
        gather(&mut self.geom_id, &hits.geomid, beams);
        extend_normals(&mut self.normal, &hits.normal, beams, rot);
    }

    fn clear(&mut self) {
        self.range.clear();
        self.geom_id.clear();
        self.normal.iter_mut().for_each(Vec::clear);
    }

    fn write(&self, group: &mut RowGroup<'_>) -> parquet::errors::Result<()> {
        write_column::<FloatType>(group, &self.range)?;
        write_column::<Int32Type>(group, &self.geom_id)?;
        self.normal.iter().try_for_each(|c| write_column::<FloatType>(group, c))
    }
}

/// The rows of one row group, column by column, in the types Parquet stores them as (`bin`,
/// `channel` and `hit` are INT32 with an unsigned logical type), so the encoder writes each
/// column straight from its vector.
struct Buffer {
    timestamp: Vec<f64>,
    bin: Vec<i32>,
    channel: Vec<i32>,
    range: Vec<f32>,
    geom_id: Vec<i32>,
    hit: Vec<i32>,
    normal: [Vec<f32>; 3],
    pass: Option<SecondaryBuffer>,
    reflected: Option<SecondaryBuffer>,
}

impl Buffer {
    /// An empty row group with room for [`ROW_GROUP_ROWS`] rows, so filling it never
    /// reallocates.
    fn new(capture: SecondaryCapture) -> Buffer {
        let (pass, reflected) = captures(capture);
        fn room<T>() -> Vec<T> {
            Vec::with_capacity(ROW_GROUP_ROWS)
        }
        let secondary = || SecondaryBuffer { range: room(), geom_id: room(), normal: [room(), room(), room()] };
        Buffer {
            timestamp: room(),
            bin: room(),
            channel: room(),
            range: room(),
            geom_id: room(),
            hit: room(),
            normal: [room(), room(), room()],
            pass: pass.then(secondary),
            reflected: reflected.then(secondary),
        }
    }

    fn rows(&self) -> usize {
        self.range.len()
    }

    /// Empties every column, keeping its memory for the next row group.
    fn clear(&mut self) {
        self.timestamp.clear();
        self.bin.clear();
        self.channel.clear();
        self.range.clear();
        self.geom_id.clear();
        self.hit.clear();
        self.normal.iter_mut().for_each(Vec::clear);
        self.pass.iter_mut().chain(self.reflected.iter_mut()).for_each(SecondaryBuffer::clear);
    }

    /// Appends beams `beams` of `scan`. The primary columns, the primary normals and each
    /// secondary ray fill on the rayon pool side by side: the simulation waits for this.
    /// Returns how many of the beams hit.
    fn extend(&mut self, scan: &Scan, beams: &[u32], timestamp: f64, split: u32, rot: &DMat3) -> u64 {
        let Buffer { timestamp: times, bin, channel, range, geom_id, hit, normal, pass, reflected } = self;
        let primary = || {
            times.extend(std::iter::repeat_n(timestamp, beams.len()));
            extend_bin_channel(bin, channel, beams, split);
            gather(range, &scan.range, beams);
            gather(geom_id, &scan.geomid, beams);
            let first = hit.len();
            let ranges = &range[range.len() - beams.len()..];
            let geoms = &geom_id[geom_id.len() - beams.len()..];
            hit.extend(ranges.iter().zip(geoms).map(|(&r, &g)| (r >= 0.0 && g >= 0) as i32));
            hit[first..].iter().map(|&h| h as u64).sum::<u64>()
        };
        let secondary = |buf: &mut Option<SecondaryBuffer>, hits: &Option<SecondaryHits>| {
            if let (Some(buf), Some(hits)) = (buf.as_mut(), hits.as_ref()) {
                buf.extend(hits, beams, rot);
            }
        };
        let ((hits, ()), ((), ())) = rayon::join(
            || rayon::join(primary, || extend_normals(normal, &scan.normal, beams, rot)),
            || rayon::join(|| secondary(pass, &scan.pass_through), || secondary(reflected, &scan.reflected)),
        );
        hits
    }

    /// Writes the rows as one row group, in the schema's column order.
    fn write(&self, group: &mut RowGroup<'_>) -> parquet::errors::Result<()> {
        write_column::<DoubleType>(group, &self.timestamp)?;
        write_column::<Int32Type>(group, &self.bin)?;
        write_column::<Int32Type>(group, &self.channel)?;
        write_column::<FloatType>(group, &self.range)?;
        write_column::<Int32Type>(group, &self.geom_id)?;
        write_column::<Int32Type>(group, &self.hit)?;
        self.normal.iter().try_for_each(|c| write_column::<FloatType>(group, c))?;
        self.pass.iter().chain(&self.reflected).try_for_each(|sec| sec.write(group))
    }
}

type RowGroup<'a> = SerializedRowGroupWriter<'a, HashWriter>;

/// Writes the next column of `group`: no nulls, no repetition, so no levels.
fn write_column<T: DataType>(group: &mut RowGroup<'_>, values: &[T::T]) -> parquet::errors::Result<()> {
    let mut column =
        group.next_column()?.ok_or_else(|| ParquetError::General("more columns than the schema has".into()))?;
    column.typed::<T>().write_batch(values, None, None)?;
    column.close()
}

/// The first beam of `beams` when they are a contiguous run (a spinning unit's slice).
fn contiguous(beams: &[u32]) -> Option<u32> {
    match (beams.first(), beams.last()) {
        (Some(&a), Some(&b)) if (b - a) as usize + 1 == beams.len() => Some(a),
        _ => None,
    }
}

/// Appends `values[k]` for each beam `k`: one copy when the beams are a contiguous run, else
/// one by one.
fn gather<T: Copy>(column: &mut Vec<T>, values: &[T], beams: &[u32]) {
    match contiguous(beams) {
        Some(a) => column.extend_from_slice(&values[a as usize..a as usize + beams.len()]),
        None => column.extend(beams.iter().map(|&k| values[k as usize])),
    }
}

/// Appends `bin = k / split` and `channel = k % split` for each beam `k`. A contiguous run
/// is walked bin by bin, without a division per row.
fn extend_bin_channel(bin: &mut Vec<i32>, channel: &mut Vec<i32>, beams: &[u32], split: u32) {
    let Some(first) = contiguous(beams) else {
        bin.extend(beams.iter().map(|&k| (k / split) as i32));
        channel.extend(beams.iter().map(|&k| (k % split) as i32));
        return;
    };
    let (mut b, mut c, mut left) = (first / split, first % split, beams.len() as u32);
    while left > 0 {
        let n = (split - c).min(left);
        bin.extend(std::iter::repeat_n(b as i32, n as usize));
        channel.extend((c..c + n).map(|c| c as i32));
        (b, c, left) = (b + 1, 0, left - n);
    }
}

/// Appends the sensor-frame normals of `beams` to the three normal columns, one column at a
/// time (each a dot product with one sensor axis, which the compiler vectorizes).
fn extend_normals(columns: &mut [Vec<f32>; 3], normals: &[[f32; 3]], beams: &[u32], rot: &DMat3) {
    let axes = [rot.x_axis, rot.y_axis, rot.z_axis];
    for (column, axis) in columns.iter_mut().zip(axes) {
        match contiguous(beams) {
            Some(a) => {
                let run = &normals[a as usize..a as usize + beams.len()];
                column.extend(run.iter().map(|n| sensor_component(axis, n)));
            }
            None => column.extend(beams.iter().map(|&k| sensor_component(axis, &normals[k as usize]))),
        }
    }
}

/// One sensor-frame component of a world-frame normal: its dot product with that sensor axis
/// (in world coordinates), in f64 as the pose is. A zero normal (a miss) stays +0.
#[inline]
fn sensor_component(axis: DVec3, n: &[f32; 3]) -> f32 {
    (axis.x * n[0] as f64 + axis.y * n[1] as f64 + axis.z * n[2] as f64) as f32 + 0.0
}

/// Row groups queued for the encoder thread beyond the one it is encoding: none, so the
/// writer holds at most the group being filled and the one being encoded (and a spare one),
/// and its peak memory is reached in the first seconds of any episode.
const QUEUED_GROUPS: usize = 0;

/// The most rows a writer holds in memory, not counting the spare group: see
/// [`QUEUED_GROUPS`].
pub const MAX_BUFFERED_ROWS: usize = (QUEUED_GROUPS + 2) * ROW_GROUP_ROWS;

/// Encodes and compresses row groups on a thread of its own, so a recording's Parquet work
/// overlaps the simulation instead of stalling it. The queue is bounded: memory stays flat.
struct Encoder {
    tx: Option<SyncSender<Buffer>>,
    /// Written row groups coming back emptied, so their column memory is filled again rather
    /// than freed and allocated anew (which let a long episode's peak memory creep up).
    spent: Receiver<Buffer>,
    handle: Option<JoinHandle<Result<SerializedFileWriter<HashWriter>, RecordError>>>,
    /// Rows sent and not yet written.
    queued: Arc<AtomicUsize>,
    partial: PathBuf,
}

impl Encoder {
    fn start(mut writer: SerializedFileWriter<HashWriter>, partial: PathBuf) -> Result<Encoder, RecordError> {
        let (tx, rx) = sync_channel::<Buffer>(QUEUED_GROUPS);
        let (back, spent) = channel::<Buffer>();
        let queued = Arc::new(AtomicUsize::new(0));
        let (count, path) = (queued.clone(), partial.clone());
        let handle = std::thread::Builder::new()
            .name("glint-parquet".into())
            .spawn(move || {
                for mut rows in rx {
                    let mut group = writer.next_row_group().map_err(|e| RecordError::parquet(&path, e))?;
                    rows.write(&mut group).map_err(|e| RecordError::parquet(&path, e))?;
                    group.close().map_err(|e| RecordError::parquet(&path, e))?;
                    count.fetch_sub(rows.rows(), Ordering::Relaxed);
                    rows.clear();
                    // The writer may be gone first; then the columns are simply freed.
                    let _ = back.send(rows);
                }
                Ok(writer)
            })
            .map_err(|e| RecordError::io("start the encoder for", &partial, e))?;
        Ok(Encoder { tx: Some(tx), spent, handle: Some(handle), queued, partial })
    }

    /// Queues a row group (waiting while the queue is full).
    fn send(&mut self, rows: Buffer) -> Result<(), RecordError> {
        self.queued.fetch_add(rows.rows(), Ordering::Relaxed);
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(rows).is_ok());
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
    fn join(&mut self) -> Result<SerializedFileWriter<HashWriter>, RecordError> {
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

/// The writer properties of a lidar file with `schema`.
fn lidar_properties(schema: &Schema) -> WriterProperties {
    // Dictionaries cost a hash per value; zstd finds the same repetition (ticks share a
    // timestamp, bins and channels cycle, few geoms) without one, so every column is stored
    // plain and compressed, in large pages.
    let props = zstd_properties()
        .set_dictionary_enabled(false)
        .set_write_batch_size(65_536)
        .set_data_page_size_limit(8 << 20)
        .set_offset_index_disabled(true);
    // Min/max of a normal component says nothing useful and costs a pass over every value;
    // ranges, geoms, bins, channels and timestamps keep their statistics.
    let props = schema.fields().iter().filter(|f| f.name().contains("normal_")).fold(props, |p, f| {
        p.set_column_statistics_enabled(ColumnPath::from(f.name().as_str()), EnabledStatistics::None)
    });
    let mut props = props.build();
    // The Arrow schema travels in the footer, as Arrow's own writer puts it, so Arrow readers
    // get exactly the seed's types back.
    add_encoded_arrow_schema_to_metadata(schema, &mut props);
    props
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
        let schema = arrow_schema(capture);
        let parquet_schema =
            ArrowSchemaConverter::new().convert(&schema).map_err(|e| RecordError::parquet(&partial, e))?;
        let writer = SerializedFileWriter::new(
            HashWriter::new(file),
            parquet_schema.root_schema_ptr(),
            Arc::new(lidar_properties(&schema)),
        )
        .map_err(|e| RecordError::parquet(&partial, e))?;
        let encoder = Encoder::start(writer, partial.clone())?;
        Ok(LidarWriter {
            partial,
            path,
            encoder,
            buf: Buffer::new(capture),
            config,
            capture,
            rows: 0,
            hits: 0,
            ticks: 0,
        })
    }

    /// Rows held in memory and not yet written to the file as a row group.
    pub(crate) fn buffered_rows(&self) -> usize {
        self.buf.rows() + self.encoder.queued.load(Ordering::Relaxed)
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
        let spinning = matches!(self.config.pattern, ScanPattern::Spinning);
        let split = if spinning { self.config.channels } else { EMISSION_SPLIT };
        let mut rest = tick.beams;
        while !rest.is_empty() {
            let room = ROW_GROUP_ROWS - self.buf.rows();
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.hits += self.buf.extend(tick.scan, now, tick.timestamp, split, &tick.sensor_rot);
            self.rows += now.len() as u64;
            if self.buf.rows() >= ROW_GROUP_ROWS {
                self.write_group()?;
            }
            rest = later;
        }
        self.ticks += 1;
        Ok(())
    }

    /// Hands the buffered rows to the encoder as one row group, and goes on in an emptied
    /// group that came back from it (or a new one).
    fn write_group(&mut self) -> Result<(), RecordError> {
        if self.buf.rows() == 0 {
            return Ok(());
        }
        let next = self.encoder.spent.try_recv().unwrap_or_else(|_| Buffer::new(self.capture));
        let full = std::mem::replace(&mut self.buf, next);
        self.encoder.send(full)
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
    fn bins_and_channels_of_a_run_match_the_division() {
        for (first, len, split) in [(0u32, 200usize, 64u32), (61, 7, 64), (130, 1, 64), (5, 600, 1), (255, 300, 256)] {
            let beams: Vec<u32> = (first..first + len as u32).collect();
            let (mut bin, mut channel) = (Vec::new(), Vec::new());
            extend_bin_channel(&mut bin, &mut channel, &beams, split);
            let want_bin: Vec<i32> = beams.iter().map(|&k| (k / split) as i32).collect();
            let want_channel: Vec<i32> = beams.iter().map(|&k| (k % split) as i32).collect();
            assert_eq!((bin, channel), (want_bin, want_channel), "run of {len} from {first}, split {split}");
        }
    }

    #[test]
    fn sensor_normals_are_the_rotated_world_normals() {
        let rot = DMat3::from_euler(glam::EulerRot::ZYX, 0.7, -0.2, 0.1);
        let normals = [[0.0f32, 0.0, 1.0], [0.6, -0.8, 0.0], [0.0; 3], [-0.36, 0.48, 0.8]];
        let mut columns: [Vec<f32>; 3] = Default::default();
        extend_normals(&mut columns, &normals, &[0, 1, 2, 3], &rot);
        for (i, n) in normals.iter().enumerate() {
            let want = rot.transpose() * DVec3::new(n[0] as f64, n[1] as f64, n[2] as f64);
            let got = [columns[0][i], columns[1][i], columns[2][i]];
            assert_eq!(got, [want.x as f32, want.y as f32, want.z as f32], "normal {i}");
        }
        assert!(columns.iter().all(|c| c[2].to_bits() == 0), "a miss's normal is +0");
    }
}
