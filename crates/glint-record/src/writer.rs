//! One sensor's lidar file during an episode: rows buffered per row group, encoded by the
//! Parquet writer, hashed as they reach the disk, then renamed and described by a sidecar.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Float32Array, Float64Array, Int32Array, RecordBatch, UInt8Array, UInt16Array};
use arrow_schema::SchemaRef;
use glam::{DMat3, DVec3};
use glint_lidar::{Scan, ScanConfig, ScanPattern, SecondaryCapture, SecondaryHits};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
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

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 (hex) of the file at `path`, read in blocks.
pub(crate) fn sha256_file(path: &Path) -> Result<String, RecordError> {
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
    #[inline]
    fn push(&mut self, hits: &SecondaryHits, k: usize, rt: &DMat3) {
        self.range.push(hits.range[k]);
        self.geom_id.push(hits.geomid[k]);
        let n = sensor_normal(rt, hits.normal[k]);
        for (col, v) in self.normal.iter_mut().zip(n) {
            col.push(v);
        }
    }

    fn take(&mut self, out: &mut Vec<ArrayRef>) {
        out.push(Arc::new(Float32Array::from(std::mem::take(&mut self.range))));
        out.push(Arc::new(Int32Array::from(std::mem::take(&mut self.geom_id))));
        for col in &mut self.normal {
            out.push(Arc::new(Float32Array::from(std::mem::take(col))));
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

/// A world-frame normal in the sensor frame (`rt` is the sensor rotation transposed).
#[inline]
fn sensor_normal(rt: &DMat3, n: [f32; 3]) -> [f32; 3] {
    if n == [0.0; 3] {
        return n;
    }
    let v = *rt * DVec3::new(n[0] as f64, n[1] as f64, n[2] as f64);
    [v.x as f32, v.y as f32, v.z as f32]
}

/// One sensor's file of one episode.
pub(crate) struct LidarWriter {
    /// `…parquet.partial` while writing.
    pub partial: PathBuf,
    /// `…parquet` once finished.
    pub path: PathBuf,
    writer: ArrowWriter<HashWriter>,
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
        let sink = HashWriter { inner: BufWriter::with_capacity(1 << 20, file), hasher: Sha256::new(), bytes: 0 };
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .build();
        let schema = arrow_schema(capture);
        let writer =
            ArrowWriter::try_new(sink, schema.clone(), Some(props)).map_err(|e| RecordError::parquet(&partial, e))?;
        let (pass, reflected) = captures(capture);
        let buf = Buffer {
            pass: pass.then(SecondaryBuffer::default),
            reflected: reflected.then(SecondaryBuffer::default),
            ..Buffer::default()
        };
        Ok(LidarWriter { partial, path, writer, schema, buf, config, capture, rows: 0, hits: 0, ticks: 0 })
    }

    /// Rows held in memory and not yet written to the file as a row group.
    pub(crate) fn buffered_rows(&self) -> usize {
        self.buf.range.len() + self.writer.in_progress_rows()
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

    fn push(&mut self, scan: &Scan, beams: &[u32], timestamp: f64, rt: &DMat3) {
        let b = &mut self.buf;
        let spinning = matches!(self.config.pattern, ScanPattern::Spinning);
        let split = if spinning { self.config.channels } else { EMISSION_SPLIT };
        b.timestamp.extend(std::iter::repeat_n(timestamp, beams.len()));
        for &k in beams {
            let i = k as usize;
            b.bin.push((k / split) as u16);
            b.channel.push((k % split) as u16);
            let (range, geom) = (scan.range[i], scan.geomid[i]);
            let hit = range >= 0.0 && geom >= 0;
            b.range.push(range);
            b.geom_id.push(geom);
            b.hit.push(hit as u8);
            self.hits += hit as u64;
            let n = sensor_normal(rt, scan.normal[i]);
            for (col, v) in b.normal.iter_mut().zip(n) {
                col.push(v);
            }
            if let (Some(buf), Some(hits)) = (b.pass.as_mut(), scan.pass_through.as_ref()) {
                buf.push(hits, i, rt);
            }
            if let (Some(buf), Some(hits)) = (b.reflected.as_mut(), scan.reflected.as_ref()) {
                buf.push(hits, i, rt);
            }
        }
        self.rows += beams.len() as u64;
    }

    /// Encodes the buffered rows as one row group and writes it to the file.
    fn write_group(&mut self) -> Result<(), RecordError> {
        if self.buf.range.is_empty() {
            return Ok(());
        }
        let b = &mut self.buf;
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(Float64Array::from(std::mem::take(&mut b.timestamp))),
            Arc::new(UInt16Array::from(std::mem::take(&mut b.bin))),
            Arc::new(UInt16Array::from(std::mem::take(&mut b.channel))),
            Arc::new(Float32Array::from(std::mem::take(&mut b.range))),
            Arc::new(Int32Array::from(std::mem::take(&mut b.geom_id))),
            Arc::new(UInt8Array::from(std::mem::take(&mut b.hit))),
        ];
        for col in &mut b.normal {
            cols.push(Arc::new(Float32Array::from(std::mem::take(col))));
        }
        for sec in [b.pass.as_mut(), b.reflected.as_mut()].into_iter().flatten() {
            sec.take(&mut cols);
        }
        let batch =
            RecordBatch::try_new(self.schema.clone(), cols).map_err(|e| RecordError::parquet(&self.partial, e))?;
        self.writer.write(&batch).map_err(|e| RecordError::parquet(&self.partial, e))?;
        self.writer.flush().map_err(|e| RecordError::parquet(&self.partial, e))
    }

    /// Writes the last row group and the footer, and syncs the file (still `.partial`).
    pub(crate) fn close(mut self) -> Result<Finished, RecordError> {
        self.write_group()?;
        let meta = self.writer.finish().map_err(|e| RecordError::parquet(&self.partial, e))?;
        let rows = meta.file_metadata().num_rows() as u64;
        let sink = self.writer.inner_mut();
        sink.flush().map_err(|e| RecordError::io("write", &self.partial, e))?;
        sink.inner.get_ref().sync_all().map_err(|e| RecordError::io("sync", &self.partial, e))?;
        let sha256 = hex(&std::mem::take(&mut sink.hasher).finalize());
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
