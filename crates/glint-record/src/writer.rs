//! One sensor's lidar file during an episode: each tick's rows encoded into the open row
//! group (see [`crate::pages`]), row groups hashed as they reach the disk and recorded in the
//! file's row-group journal (see [`crate::journal`]) so a killed run's file can be salvaged,
//! then the file renamed and described by a sidecar.

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, sync_channel};

use arrow_schema::Schema;
use glam::{DMat3, DVec3};
use glint_lidar::{Scan, ScanConfig, SecondaryCapture};
use parquet::arrow::{ArrowSchemaConverter, add_encoded_arrow_schema_to_metadata};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;

use crate::RecordError;
use crate::files::{HashWriter, zstd_properties};
use crate::journal::GroupJournal;
use crate::pages::{OpenGroup, TickSnapshot};
use crate::schema::{ROW_GROUP_ROWS, arrow_schema, captures};

/// The lidar file's footer key holding the episode's seed (decimal).
pub(crate) const EPISODE_SEED_KEY: &str = "glint.episode_seed";

/// One sensor's tick, as the recorder takes it.
#[derive(Clone, Copy, Debug)]
pub struct TickData<'a> {
    /// Seconds since the episode started; every row of the tick gets it.
    pub timestamp: f64,
    /// The sensor's live scan after the tick.
    pub scan: &'a Scan,
    /// The beams the tick cast, in emission order ([`glint_lidar::Lidars::last_tick_beams`]).
    pub beams: &'a [u32],
    /// The sensor's world rotation at the tick (columns: the sensor's axes, as
    /// [`glint_lidar::Lidars::frame`] gives it); normals are written in the sensor frame.
    pub sensor_rot: DMat3,
    /// The sensor's origin in the world at the tick ([`glint_lidar::Lidars::frame`]'s first
    /// part); with `sensor_rot` it goes to the episode's pose table.
    pub sensor_pos: DVec3,
}

/// The most rows a writer holds in memory: those of the row group being filled, already
/// encoded and compressed column by column.
pub const MAX_BUFFERED_ROWS: usize = ROW_GROUP_ROWS;

/// One sensor's file of one episode.
pub(crate) struct LidarWriter {
    /// `…parquet.partial` while writing.
    pub partial: PathBuf,
    /// `…parquet` once finished.
    pub path: PathBuf,
    /// The file and its open row group, here or being encoded on the rayon pool.
    encoder: Stage,
    /// The next tick's rows, copied while the previous tick is encoded.
    filling: TickSnapshot,
    /// Rows in the open row group, those being encoded included.
    group_rows: usize,
    config: ScanConfig,
    capture: SecondaryCapture,
    pub rows: u64,
    pub ticks: u64,
}

/// The file being written and its open row group, with the tick being encoded into it.
struct Encoding {
    /// The file's path (`…parquet.partial`), for errors.
    partial: Arc<PathBuf>,
    file: SerializedFileWriter<HashWriter>,
    journal: GroupJournal,
    group: OpenGroup,
    tick: TickSnapshot,
    /// Rows encoded that hit.
    hits: u64,
}

impl Encoding {
    /// Encodes the tick into the group; once the group is full, lays it into the file, hands
    /// the file's bytes to the operating system and records the group in the journal, so the
    /// file is salvageable up to it from then on.
    fn run(&mut self) -> Result<(), RecordError> {
        let fail = |file: &SerializedFileWriter<HashWriter>, e: ParquetError| file.inner().error(&self.partial, e);
        self.hits += self.group.write(&self.tick).map_err(|e| fail(&self.file, e))?;
        if self.group.rows >= ROW_GROUP_ROWS {
            self.group.flush_into(&mut self.file).map_err(|e| fail(&self.file, e))?;
            self.file.flush().map_err(|e| RecordError::io("write", self.partial.as_path(), e))?;
            self.journal.append(&self.file)?;
        }
        Ok(())
    }
}

/// Where the encoding is: idle, or running as a task on the rayon pool alongside the next
/// tick's simulation (it hands itself back when done).
enum Stage {
    Idle(Box<Encoding>),
    Running(Receiver<(Box<Encoding>, Result<(), RecordError>)>),
    Failed,
}

/// What a finished file is.
pub(crate) struct Finished {
    pub rows: u64,
    /// Rows that hit.
    pub hits: u64,
    pub bytes: u64,
    pub sha256: String,
    /// The row-group journal, to remove once the file has its final name.
    pub journal: PathBuf,
}

/// The writer properties of a lidar file with `schema`. They fix its footer; its pages are
/// laid out by [`crate::pages`].
fn lidar_properties(schema: &Schema, episode_seed: u64) -> WriterProperties {
    // The episode's seed travels in the footer too, so a salvaged file still knows it.
    let seed = KeyValue::new(EPISODE_SEED_KEY.to_string(), episode_seed.to_string());
    let mut props = zstd_properties().set_key_value_metadata(Some(vec![seed])).build();
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
        episode_seed: u64,
    ) -> Result<LidarWriter, RecordError> {
        let file = File::create_new(&partial).map_err(|e| RecordError::io("create", &partial, e))?;
        let schema = arrow_schema(capture);
        let parquet_schema =
            ArrowSchemaConverter::new().convert(&schema).map_err(|e| RecordError::write(&partial, e))?;
        let file = SerializedFileWriter::new(
            HashWriter::new(file),
            parquet_schema.root_schema_ptr(),
            Arc::new(lidar_properties(&schema, episode_seed)),
        )
        .map_err(|e| RecordError::write(&partial, e))?;
        let group = OpenGroup::new(&file).map_err(|e| RecordError::write(&partial, e))?;
        let journal = GroupJournal::create(&partial, &file)?;
        let partial_arc = Arc::new(partial.clone());
        let encoding = Encoding { partial: partial_arc, file, journal, group, tick: TickSnapshot::default(), hits: 0 };
        Ok(LidarWriter {
            partial,
            path,
            encoder: Stage::Idle(Box::new(encoding)),
            filling: TickSnapshot::default(),
            group_rows: 0,
            config,
            capture,
            rows: 0,
            ticks: 0,
        })
    }

    /// Rows held in memory and not yet written to the file as a row group.
    pub(crate) fn buffered_rows(&self) -> usize {
        self.group_rows
    }

    /// Checks that `tick` fits this sensor, before any of it is written.
    pub(crate) fn check(&self, sensor: usize, tick: &TickData) -> Result<(), RecordError> {
        let bad = |reason: String| RecordError::Tick { sensor, reason };
        let beams = self.config.beam_count();
        let scan = tick.scan;
        if !tick.timestamp.is_finite() {
            return Err(bad(format!("its timestamp is {}, not a finite number of seconds", tick.timestamp)));
        }
        if !tick.sensor_rot.is_finite() {
            return Err(bad("the sensor rotation is not finite".into()));
        }
        let Some(surfaces) = &scan.surfaces else {
            return Err(bad(
                "the scan keeps no hit normals: keep the lidars' surfaces while recording (Lidars::set_keep_surfaces)"
                    .into(),
            ));
        };
        let lengths = [scan.range.len(), scan.geomid.len(), surfaces.normal.len()];
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

    /// Appends one row per beam of `tick` (which [`LidarWriter::check`] passed), writing a
    /// row group each time one fills.
    pub(crate) fn write_checked_tick(&mut self, tick: &TickData) -> Result<(), RecordError> {
        // The seed's `index = bin * channels + channel`, for every pattern.
        let split = self.config.channels.max(1);
        let mut rest = tick.beams;
        while !rest.is_empty() {
            let room = ROW_GROUP_ROWS - self.group_rows;
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.filling.take(tick.scan, now, tick.timestamp, split, tick.sensor_rot);
            let mut encoding = self.settle()?;
            std::mem::swap(&mut encoding.tick, &mut self.filling);
            self.launch(encoding)?;
            self.rows += now.len() as u64;
            self.group_rows = (self.group_rows + now.len()) % ROW_GROUP_ROWS;
            rest = later;
        }
        self.ticks += 1;
        Ok(())
    }

    /// Waits for the tick being encoded, and takes the encoding back.
    fn settle(&mut self) -> Result<Box<Encoding>, RecordError> {
        match std::mem::replace(&mut self.encoder, Stage::Failed) {
            Stage::Idle(encoding) => Ok(encoding),
            Stage::Running(done) => match done.recv() {
                Ok((encoding, Ok(()))) => Ok(encoding),
                Ok((_, Err(e))) => Err(e),
                Err(_) => Err(RecordError::write(&self.partial, "the encoding task vanished (a bug in glint)")),
            },
            Stage::Failed => Err(RecordError::write(&self.partial, "an earlier tick failed to be written")),
        }
    }

    /// Encodes the swapped-in tick as a task on the rayon pool, so it runs among the next
    /// tick's simulation tasks. On a pool thread it runs at once instead: waiting for it there
    /// could leave the pool no thread to run it.
    fn launch(&mut self, mut encoding: Box<Encoding>) -> Result<(), RecordError> {
        if rayon::current_thread_index().is_some() {
            encoding.run()?;
            self.encoder = Stage::Idle(encoding);
            return Ok(());
        }
        let (tx, rx) = sync_channel(1);
        rayon::spawn(move || {
            let result =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| encoding.run())).unwrap_or_else(|_| {
                    Err(RecordError::write(encoding.partial.as_path(), "the Parquet encoder panicked (a bug in glint)"))
                });
            let _ = tx.send((encoding, result));
        });
        self.encoder = Stage::Running(rx);
        Ok(())
    }

    /// Writes the last row group and the footer, and syncs the file (still `.partial`).
    pub(crate) fn close(mut self) -> Result<Finished, RecordError> {
        let mut encoding = self.settle()?;
        let Encoding { file, group, journal, .. } = &mut *encoding;
        group.flush_into(file).map_err(|e| file.inner().error(&self.partial, e))?;
        let meta = file.finish().map_err(|e| file.inner().error(&self.partial, e))?;
        let rows = meta.file_metadata().num_rows() as u64;
        let sink = file.inner_mut();
        let sha256 = sink.finish(&self.partial)?;
        let bytes = sink.bytes;
        if rows != self.rows {
            return Err(RecordError::write(
                &self.partial,
                format!("the writer recorded {rows} rows where {} were written (a bug in glint)", self.rows),
            ));
        }
        let journal = journal.path.clone();
        Ok(Finished { rows, hits: encoding.hits, bytes, sha256, journal })
    }
}
