//! Salvaging the episodes a run did not finish (`glint recover`): each `.partial` lidar file
//! is cut back to its last complete row group, given the footer its row-group journal holds
//! (see [`crate::journal`]), checked by reading every row, and renamed; its pose table is
//! rebuilt from its pose log up to the last salvaged row; then its sidecar is written and the
//! episode logged as `recovered`.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use bytes::Bytes;
use glint_lidar::SecondaryCapture;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};

use crate::beams::write_beams_beside;
use crate::files::file_sha256;
use crate::journal::{GROUPS_SUFFIX, JournaledGroup, TICKS_SUFFIX, footer_of, read_journal, read_ticks, side_path};
use crate::lock::SessionLock;
use crate::poses::{PoseWriter, pose_columns, pose_path};
use crate::reader::recorded_episode_seed;
use crate::reader::{LidarReader, footer};
use crate::schema::{READ_BATCH_ROWS, mismatch};
use crate::session::{EpisodeLine, EpisodeStatus, stem, with_suffix, write_json};
use crate::sidecar::{PoseFile, SensorDescription, SessionMeta, Sidecar, read_session_meta};
use crate::tick_tables::{TableSalvage, TickTable, salvage_table};
use crate::verify::check_session;
use crate::{ROW_GROUP_ROWS, RecordError};

/// What a `.partial` lidar file holds that can be salvaged, by its row-group journal alone
/// (nothing is read back or changed): what `glint replay` reports of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartialState {
    /// Complete row groups the journal records.
    pub row_groups: usize,
    /// Their rows.
    pub rows: u64,
}

/// Reads the row-group journal beside the `.partial` lidar file `partial`: the complete row
/// groups a `glint recover` would salvage (before reading them back). No journal: none.
pub fn partial_state(partial: &Path) -> Result<PartialState, RecordError> {
    let journal = side_path(partial, GROUPS_SUFFIX);
    if !journal.exists() {
        return Ok(PartialState::default());
    }
    let journal = read_journal(&journal)?;
    let groups = usable(&journal, file_len(partial)?);
    Ok(PartialState {
        row_groups: groups.len(),
        rows: groups.iter().map(|g| g.footer.file_metadata().num_rows() as u64).sum(),
    })
}

/// What `glint recover` did with one `.partial` lidar file.
#[derive(Clone, Debug, PartialEq)]
pub struct Salvage {
    /// The `.partial` file, relative to the session folder.
    pub partial: PathBuf,
    /// Its episode index.
    pub episode: u32,
    /// What became of it.
    pub outcome: SalvageOutcome,
}

/// What became of one `.partial` lidar file.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum SalvageOutcome {
    /// Its complete row groups are a finished file now, with a sidecar and a pose table.
    Recovered {
        /// The finished file, relative to the session folder.
        path: PathBuf,
        /// Whether the `.partial` was already whole (the run ended while renaming it): nothing
        /// was lost.
        whole: bool,
        /// Row groups salvaged.
        row_groups: usize,
        /// Rows salvaged.
        rows: u64,
        /// The last salvaged row's timestamp, seconds since the episode began.
        last_timestamp: f64,
        /// Bytes of the `.partial` after the last complete row group (rows that were being
        /// written when the run ended), cut off.
        lost_bytes: u64,
        /// Rows of the pose table (ticks up to the last salvaged row); `None` when the
        /// episode has neither a pose table nor a pose log.
        pose_rows: Option<u64>,
        /// Ticks of the pose log after the last salvaged row, whose lidar rows were lost.
        lost_ticks: u64,
        /// Why the episode has no pose table although it left a pose log (an empty or damaged
        /// log), if so.
        pose_problem: Option<String>,
        /// SHA-256 of the finished file, as its sidecar records it.
        sha256: String,
    },
    /// An episode's tick table (rangefinders, robot state), rebuilt from its log (every tick
    /// logged) with its sidecar.
    TableRecovered {
        /// Which table.
        table: TickTable,
        /// The finished table, relative to the session folder.
        path: PathBuf,
        /// Ticks (rows) salvaged.
        rows: u64,
    },
    /// Nothing could be salvaged (no complete row group, or no usable journal saying where
    /// one ends); the `.partial` is left as it is.
    Nothing {
        /// Why, in words.
        reason: String,
    },
    /// Salvaging the file failed (it or a file beside it could not be read or written); the
    /// other files were salvaged all the same, and this one can be tried again.
    Failed {
        /// The error, naming the file.
        reason: String,
    },
}

/// What [`recover_session`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct RecoveryReport {
    /// The session folder.
    pub dir: PathBuf,
    /// One entry per `.partial` lidar file, in path order.
    pub files: Vec<Salvage>,
    /// Episodes appended to `meta/episodes.jsonl` as `recovered`.
    pub logged: Vec<u32>,
    /// Salvage logs removed because their file was already finished (the run ended between
    /// renaming a file and removing its logs), relative to the session folder.
    pub removed: Vec<PathBuf>,
}

/// Salvages every `.partial` lidar file of the session at `dir` (and its pose table), and
/// logs each episode salvaged that `meta/episodes.jsonl` does not list, as `recovered`. A
/// file with no complete row group (or no usable row-group journal) is reported and left as
/// it is, and so is one whose salvage failed ([`SalvageOutcome::Failed`]): the others are
/// salvaged all the same. An error when `dir` is not a session, when another process is
/// recording it ([`RecordError::InUse`]: a live session is never touched), or when the
/// episode log cannot be written.
pub fn recover_session(dir: &Path) -> Result<RecoveryReport, RecordError> {
    let meta = read_session_meta(dir)?;
    let _lock = SessionLock::exclusive(dir, "recovering", "recover")?;
    let before = check_session(dir)?;
    let mut report =
        RecoveryReport { dir: dir.to_path_buf(), files: Vec::new(), logged: Vec::new(), removed: Vec::new() };
    for rel in &before.partial {
        let name = rel.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if let Some((table, episode)) = TickTable::of_file(&name, ".partial") {
            let outcome = match salvage_table(table, &dir.join(rel), episode) {
                Ok(TableSalvage::Recovered(rows)) => {
                    SalvageOutcome::TableRecovered { table, path: table.file(episode), rows }
                }
                Ok(TableSalvage::Nothing(reason)) => SalvageOutcome::Nothing { reason },
                Err(e) => SalvageOutcome::Failed { reason: e.to_string() },
            };
            report.files.push(Salvage { partial: rel.clone(), episode, outcome });
            continue;
        }
        let Some((sensor, episode)) = sensor_of(&meta, &name) else {
            report.files.push(Salvage {
                partial: rel.clone(),
                episode: u32::MAX,
                outcome: SalvageOutcome::Nothing {
                    reason: "its name is not that of a sensor of this session (meta/info.json)".into(),
                },
            });
            continue;
        };
        let outcome = salvage(dir, rel, &meta, sensor, episode)
            .unwrap_or_else(|e| SalvageOutcome::Failed { reason: e.to_string() });
        report.files.push(Salvage { partial: rel.clone(), episode, outcome });
    }
    // Episodes with a salvaged file that the log does not list.
    let mut episodes: Vec<u32> = report
        .files
        .iter()
        .filter(|s| matches!(s.outcome, SalvageOutcome::Recovered { .. } | SalvageOutcome::TableRecovered { .. }))
        .map(|s| s.episode)
        .collect();
    episodes.sort_unstable();
    episodes.dedup();
    for index in episodes {
        if before.episodes.iter().any(|e| e.index == index) {
            continue;
        }
        log_episode(dir, &meta, index)?;
        report.logged.push(index);
    }
    report.removed = remove_orphan_logs(dir)?;
    Ok(report)
}

/// The sensor and episode of a lidar file named `lidar-<Name>-NNN.parquet.partial`.
fn sensor_of<'a>(meta: &'a SessionMeta, name: &str) -> Option<(&'a SensorDescription, u32)> {
    let (sensor, index) = crate::session::stem_parts(name.strip_suffix(".parquet.partial")?)?;
    let index: u32 = index.parse().ok()?;
    let sensor = meta.sensors.iter().find(|s| s.file_name == sensor)?;
    Some((sensor, index))
}

fn file_len(path: &Path) -> Result<u64, RecordError> {
    Ok(std::fs::metadata(path).map_err(|e| RecordError::io("read", path, e))?.len())
}

/// The journal's records that describe row groups lying one after the other within a file of
/// `len` bytes (a record past the file's end describes rows that never reached it).
fn usable(groups: &[JournaledGroup], len: u64) -> &[JournaledGroup] {
    let mut last = 4;
    let n = groups
        .iter()
        .take_while(|g| {
            let rg = g.footer.row_group(0);
            let within = rg.columns().iter().all(|c| {
                let (start, size) = c.byte_range();
                start >= last && start + size <= g.end
            });
            let ok = within && g.end <= len && rg.num_rows() > 0;
            last = g.end;
            ok
        })
        .count();
    &groups[..n]
}

/// The bytes a salvaged file is read from before it is written: the `.partial`'s first `end`
/// bytes, then `footer`.
struct Spliced {
    file: Mutex<File>,
    end: u64,
    footer: Bytes,
}

/// [`Spliced`] as Parquet's reader takes it.
#[derive(Clone)]
struct SplicedFile(Arc<Spliced>);

/// A reader of [`Spliced`] from some offset.
struct SplicedRead {
    spliced: Arc<Spliced>,
    pos: u64,
}

impl Read for SplicedRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let s = &*self.spliced;
        let n = if self.pos < s.end {
            let want = buf.len().min((s.end - self.pos) as usize);
            let mut file = s.file.lock().unwrap_or_else(|p| p.into_inner());
            file.seek(SeekFrom::Start(self.pos))?;
            file.read(&mut buf[..want])?
        } else {
            let at = ((self.pos - s.end) as usize).min(s.footer.len());
            let n = buf.len().min(s.footer.len() - at);
            buf[..n].copy_from_slice(&s.footer[at..at + n]);
            n
        };
        self.pos += n as u64;
        Ok(n)
    }
}

impl Length for SplicedFile {
    fn len(&self) -> u64 {
        self.0.end + self.0.footer.len() as u64
    }
}

impl ChunkReader for SplicedFile {
    type T = BufReader<SplicedRead>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(BufReader::with_capacity(64 << 10, SplicedRead { spliced: self.0.clone(), pos: start }))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let mut out = vec![0; length];
        SplicedRead { spliced: self.0.clone(), pos: start }
            .read_exact(&mut out)
            .map_err(|e| ParquetError::External(Box::new(e)))?;
        Ok(out.into())
    }
}

/// Reads every row of a lidar file from `reader`, checking its columns against `capture`;
/// returns its row groups, rows and last timestamp.
fn read_back<R: ChunkReader + 'static>(reader: R, capture: SecondaryCapture) -> Result<(usize, u64, f64), String> {
    let b =
        ParquetRecordBatchReaderBuilder::try_new(reader).map_err(|e| e.to_string())?.with_batch_size(READ_BATCH_ROWS);
    if let Some(why) = mismatch(b.schema(), capture) {
        return Err(why);
    }
    let groups = b.metadata().num_row_groups();
    let expected = b.metadata().file_metadata().num_rows().max(0) as u64;
    let (mut rows, mut last) = (0u64, f64::NAN);
    for batch in b.build().map_err(|e| e.to_string())? {
        let batch = batch.map_err(|e| e.to_string())?;
        rows += batch.num_rows() as u64;
        let t = batch.column(0).as_primitive_opt::<Float64Type>().ok_or("timestamp is not float64")?;
        if let Some(&v) = t.values().last() {
            last = v;
        }
        if t.null_count() > 0 {
            return Err("timestamps are missing".into());
        }
    }
    if rows != expected {
        return Err(format!("the footer says {expected} rows, and {rows} were read"));
    }
    Ok((groups, rows, last))
}

/// Salvages the `.partial` lidar file `rel` of sensor `sensor`, episode `episode`.
fn salvage(
    dir: &Path,
    rel: &Path,
    meta: &SessionMeta,
    sensor: &SensorDescription,
    episode: u32,
) -> Result<SalvageOutcome, RecordError> {
    let partial = dir.join(rel);
    let capture = sensor.secondary_capture;
    let journal_path = side_path(&partial, GROUPS_SUFFIX);
    let len = file_len(&partial)?;
    let opened = File::open(&partial).map_err(|e| RecordError::io("open", &partial, e))?;
    // A `.partial` the run finished but did not rename is whole already.
    let (whole, row_groups, rows, last, lost_bytes) = match read_back(opened, capture) {
        Ok((groups, rows, last)) => (true, groups, rows, last, 0),
        Err(_) => {
            if !journal_path.exists() {
                return Ok(SalvageOutcome::Nothing {
                    reason: format!(
                        "it has no row-group journal ('{}'), so nothing says where its row groups end ({len} bytes lost)",
                        journal_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
                    ),
                });
            }
            let journal = match read_journal(&journal_path) {
                Ok(journal) => journal,
                Err(e) => {
                    return Ok(SalvageOutcome::Nothing {
                        reason: format!("{e}, so nothing says where its row groups end ({len} bytes lost)"),
                    });
                }
            };
            let groups = usable(&journal, len);
            if groups.is_empty() {
                return Ok(SalvageOutcome::Nothing {
                    reason: format!(
                        "no row group ({ROW_GROUP_ROWS} rows) was complete when the run ended: {len} bytes of rows lost"
                    ),
                });
            }
            // The most row groups that read back whole (a row group a power cut left unwritten
            // fails, and the ones before it are tried).
            let mut found = None;
            let mut why = String::new();
            for k in (1..=groups.len()).rev() {
                let footer = footer_of(&groups[..k]).map_err(|e| RecordError::parquet(&journal_path, e))?;
                let file = File::open(&partial).map_err(|e| RecordError::io("open", &partial, e))?;
                let (end, footer) = (groups[k - 1].end, Bytes::from(footer));
                let spliced = Spliced { file: Mutex::new(file), end, footer: footer.clone() };
                match read_back(SplicedFile(Arc::new(spliced)), capture) {
                    Ok((groups, rows, last)) => {
                        found = Some((end, footer, groups, rows, last));
                        break;
                    }
                    Err(e) => why = e,
                }
            }
            let Some((end, footer, groups, rows, last)) = found else {
                return Ok(SalvageOutcome::Nothing {
                    reason: format!("its complete row groups do not read back ({why}): {len} bytes lost"),
                });
            };
            // Cut off the rows in flight and append the footer.
            let mut file =
                OpenOptions::new().write(true).open(&partial).map_err(|e| RecordError::io("open", &partial, e))?;
            file.set_len(end).map_err(|e| RecordError::io("truncate", &partial, e))?;
            file.seek(SeekFrom::Start(end)).map_err(|e| RecordError::io("write", &partial, e))?;
            file.write_all(&footer).map_err(|e| RecordError::io("write", &partial, e))?;
            file.sync_all().map_err(|e| RecordError::io("sync", &partial, e))?;
            (false, groups, rows, last, len - end)
        }
    };
    let path = partial.with_extension("");
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let (poses, lost_ticks, pose_problem) = pose_table(&path, whole, last)?;
    let sha256 = file_sha256(&partial)?;
    let config = sensor.scan;
    let sidecar = Sidecar::new(
        name,
        episode,
        EpisodeStatus::Recovered.name(),
        sensor.clone(),
        &config,
        capture,
        meta.lidar_runner_hz,
        rows,
        sha256.clone(),
    );
    let pose_rows = poses.as_ref().map(|p| p.rows);
    // The beam table is a function of the configuration and the rows, so it is rebuilt whole.
    let beams = Some(write_beams_beside(&path, &config, rows)?);
    let physics_timestep = Some(meta.physics_timestep);
    let episode_seed = recorded_episode_seed(&partial);
    let sidecar = Sidecar { poses, beams, episode_seed, physics_timestep, tick_steps: meta.tick_steps, ..sidecar };
    write_json(&path.with_extension("json"), &sidecar)?;
    std::fs::rename(&partial, &path).map_err(|e| RecordError::io("rename", &partial, e))?;
    // The project's reader reads it as a finished file.
    let mut reader = LidarReader::open(&path)?;
    if reader.rows() != rows || footer(&path)?.1 != rows {
        return Err(RecordError::parquet(&path, format!("the salvaged file does not hold the {rows} rows written")));
    }
    reader.try_for_each(|part| part.map(drop))?;
    if journal_path.exists() {
        std::fs::remove_file(&journal_path).map_err(|e| RecordError::io("remove", &journal_path, e))?;
    }
    let path = path.strip_prefix(dir).unwrap_or(&path).to_path_buf();
    Ok(SalvageOutcome::Recovered {
        path,
        whole,
        row_groups,
        rows,
        last_timestamp: last,
        lost_bytes,
        pose_rows,
        lost_ticks,
        pose_problem,
        sha256,
    })
}

/// The pose table of the salvaged lidar file `lidar` (its final path): the finished one if the
/// run got that far, the `.partial` one if it is whole and so is the lidar file, else rebuilt
/// from the pose log with the ticks up to `last` (the last salvaged row's time). Returns the
/// sidecar's entry for it (none without a table or a usable log), the ticks of the log left
/// out, and what was wrong with a log that could not be used.
type PoseSalvage = (Option<PoseFile>, u64, Option<String>);
fn pose_table(lidar: &Path, whole: bool, last: f64) -> Result<PoseSalvage, RecordError> {
    let path = pose_path(lidar);
    let partial = with_suffix(&path, ".partial");
    let log = side_path(&partial, TICKS_SUFFIX);
    let entry = |rows: u64, sha256: String| PoseFile {
        file: path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        rows,
        sha256,
        columns: pose_columns(),
    };
    let remove = |p: &Path| -> Result<(), RecordError> {
        match std::fs::remove_file(p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RecordError::io("remove", p, e)),
            _ => Ok(()),
        }
    };
    let mut result = (None, 0, None);
    if path.exists() {
        result.0 = Some(entry(footer(&path)?.1, file_sha256(&path)?));
    } else if whole && partial.exists() && crate::poses::read_pose_file(&partial).is_ok() {
        let rows = footer(&partial)?.1;
        let sha256 = file_sha256(&partial)?;
        std::fs::rename(&partial, &path).map_err(|e| RecordError::io("rename", &partial, e))?;
        result.0 = Some(entry(rows, sha256));
    } else if log.exists() {
        let ticks = match read_ticks(&log) {
            Ok(ticks) => ticks,
            // Kept for whoever wants to look at it; the lidar rows are salvaged without poses.
            Err(e) => return Ok((None, 0, Some(e.to_string()))),
        };
        let keep: Vec<[f64; 8]> = ticks.iter().copied().filter(|row| whole || row[0] <= last).collect();
        let temp = with_suffix(&path, ".recovering");
        remove(&temp)?;
        let mut writer = PoseWriter::without_log(temp.clone(), path.clone())?;
        for &row in &keep {
            writer.push_row(row)?;
        }
        let done = writer.close()?;
        std::fs::rename(&temp, &path).map_err(|e| RecordError::io("rename", &temp, e))?;
        remove(&partial)?;
        result = (Some(entry(done.rows, done.sha256)), (ticks.len() - keep.len()) as u64, None);
    }
    remove(&log)?;
    Ok(result)
}

/// Appends episode `index` to `meta/episodes.jsonl` as `recovered`, with its finished lidar
/// files; its length is that of its longest pose table (ticks × the runner's period), and its
/// wall-clock duration unknown (0).
fn log_episode(dir: &Path, meta: &SessionMeta, index: u32) -> Result<(), RecordError> {
    let mut files = Vec::new();
    let (mut ticks, mut seed) = (0, None);
    for s in &meta.sensors {
        let lidar = with_suffix(&dir.join(stem(index, &s.file_name)), ".parquet");
        if !lidar.exists() {
            continue;
        }
        seed = seed.or_else(|| recorded_episode_seed(&lidar));
        let poses = pose_path(&lidar);
        if poses.exists() {
            ticks = ticks.max(footer(&poses)?.1);
        }
        files.push(lidar.strip_prefix(dir).unwrap_or(&lidar).to_string_lossy().replace('\\', "/"));
    }
    let mut table_file = |table: TickTable| -> Result<Option<String>, RecordError> {
        let rel = table.file(index);
        if !dir.join(&rel).exists() {
            return Ok(None);
        }
        ticks = ticks.max(footer(&dir.join(&rel))?.1);
        Ok(Some(rel.to_string_lossy().replace('\\', "/")))
    };
    let (rangefinders, state) = (table_file(TickTable::Rangefinders)?, table_file(TickTable::State)?);
    let line = EpisodeLine {
        index,
        length_s: ticks as f64 / meta.lidar_runner_hz,
        duration_s: 0.0,
        ticks,
        status: EpisodeStatus::Recovered.name(),
        seed,
        files,
        camera_files: Vec::new(),
        randomized: Default::default(),
        variant: None,
        rangefinders,
        state,
    };
    line.append(dir)
}

/// Removes the salvage logs (`*.partial.groups`, `*.partial.ticks`) whose `.partial` file is
/// gone (finished or salvaged); returns them, relative to the session folder.
fn remove_orphan_logs(dir: &Path) -> Result<Vec<PathBuf>, RecordError> {
    let mut removed = Vec::new();
    let data = dir.join("data");
    let list = |d: &Path| -> Result<Vec<PathBuf>, RecordError> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(d).map_err(|e| RecordError::io("list", d, e))? {
            out.push(e.map_err(|e| RecordError::io("list", d, e))?.path());
        }
        out.sort();
        Ok(out)
    };
    if !data.is_dir() {
        return Ok(removed);
    }
    for chunk in list(&data)?.into_iter().filter(|c| c.is_dir()) {
        for path in list(&chunk)? {
            let name = path.to_string_lossy().into_owned();
            let Some(partial) = name.strip_suffix(GROUPS_SUFFIX).or_else(|| name.strip_suffix(TICKS_SUFFIX)) else {
                continue;
            };
            if partial.ends_with(".partial") && !Path::new(partial).exists() {
                std::fs::remove_file(&path).map_err(|e| RecordError::io("remove", &path, e))?;
                removed.push(path.strip_prefix(dir).unwrap_or(&path).to_path_buf());
            }
        }
    }
    Ok(removed)
}
