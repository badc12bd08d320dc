//! The session self-check: every lidar file against its sidecar (row count, schema,
//! SHA-256), its pose table against the sidecar's entry, the `.partial` files a killed run
//! leaves, and the episode log.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::RecordError;
use crate::beams::{beam_path, side_table};
use crate::files::file_sha256;
use crate::poses::{pose_mismatch, pose_path};
use crate::reader::footer;
use crate::schema::mismatch;
use crate::sidecar::{BeamFile, PoseFile, SessionMeta, Sidecar, read_session_meta, read_sidecar};
use crate::tick_tables::{TickTable, check_tick_table};

/// One line of `meta/episodes.jsonl`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct EpisodeRecord {
    /// Episode index.
    pub index: u32,
    /// Simulated seconds recorded.
    pub length_s: f64,
    /// Wall-clock seconds the episode took.
    #[serde(default)]
    pub duration_s: f64,
    /// Ticks recorded (the most any lidar or tick table got).
    pub ticks: u64,
    /// `complete`, `interrupted`, `unstable` or `recovered` ([`crate::EpisodeStatus`]).
    pub status: String,
    /// Its files, relative to the session folder.
    pub files: Vec<String>,
    /// Its MJCF rangefinder table, relative to the session folder, if it has one.
    #[serde(default)]
    pub rangefinders: Option<String>,
    /// Its robot state table (`qpos`, `qvel`, `ctrl`, body poses per tick), relative to the
    /// session folder, if it has one.
    #[serde(default)]
    pub state: Option<String>,
    /// Its camera streams' files (videos, their sidecars, depth folders), relative to the
    /// session folder.
    #[serde(default)]
    pub camera_files: Vec<String>,
}

/// The episodes `meta/episodes.jsonl` lists, in its order; a line that does not read is an
/// error naming it.
pub fn read_episode_records(session: &Path) -> Result<Vec<EpisodeRecord>, RecordError> {
    let log = session.join("meta").join("episodes.jsonl");
    let text = std::fs::read_to_string(&log).map_err(|e| RecordError::io("read", &log, e))?;
    episode_lines(&text)
        .map(|(n, e)| {
            e.map_err(|e| RecordError::Json {
                path: log.clone(),
                what: "episode log",
                reason: format!("line {n}: {e}"),
            })
        })
        .collect()
}

/// What is wrong with one lidar file.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum FileProblem {
    /// The file has another number of rows than its sidecar says.
    RowCount {
        /// Rows the sidecar records.
        sidecar: u64,
        /// Rows the file's footer holds.
        file: u64,
    },
    /// The file's SHA-256 differs from its sidecar's: it changed after it was written.
    Hash {
        /// The sidecar's hash.
        sidecar: String,
        /// The file's hash now.
        file: String,
    },
    /// The file's columns are not those its sidecar's capture mode has.
    Schema(String),
    /// The pose table the sidecar lists is missing, unreadable, or differs from the
    /// sidecar's entry (rows, columns, SHA-256).
    Poses(String),
    /// The beam-direction table the sidecar lists is missing or differs from the sidecar's
    /// entry (rows, SHA-256).
    Beams(String),
    /// The sidecar is missing or cannot be read.
    Sidecar(String),
    /// The file cannot be read as Parquet.
    Unreadable(String),
}

impl fmt::Display for FileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileProblem::RowCount { sidecar, file } => {
                write!(f, "row count mismatch (the sidecar says {sidecar} rows, the file has {file})")
            }
            FileProblem::Hash { sidecar, file } => write!(
                f,
                "hash mismatch (the sidecar's SHA-256 is {}…, the file's is {}…: the file changed after it was written)",
                &sidecar[..sidecar.len().min(12)],
                &file[..file.len().min(12)]
            ),
            FileProblem::Schema(why) => write!(f, "schema mismatch: {why}"),
            FileProblem::Poses(why) => write!(f, "pose table problem: {why}"),
            FileProblem::Beams(why) => write!(f, "beam table problem: {why}"),
            FileProblem::Sidecar(why) => write!(f, "sidecar problem: {why}"),
            FileProblem::Unreadable(why) => write!(f, "unreadable: {why}"),
        }
    }
}

/// The check of one lidar file.
#[derive(Clone, Debug, PartialEq)]
pub struct FileCheck {
    /// The file, relative to the session folder.
    pub path: PathBuf,
    /// Its sidecar, when it could be read.
    pub sidecar: Option<Sidecar>,
    /// Everything wrong with it; empty when it passed.
    pub problems: Vec<FileProblem>,
}

impl FileCheck {
    /// Whether the file passed every check.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// The result of [`check_session`].
#[derive(Clone, Debug, PartialEq)]
pub struct SessionReport {
    /// The session folder.
    pub dir: PathBuf,
    /// `meta/info.json`, when it could be read.
    pub meta: Option<SessionMeta>,
    /// `meta/episodes.jsonl`, line by line (lines that could not be read are in `problems`).
    pub episodes: Vec<EpisodeRecord>,
    /// Every finished lidar file (`data/chunk-*/*.parquet`), in path order.
    pub files: Vec<FileCheck>,
    /// `.parquet.partial` files, relative to the session folder: episodes a killed run never
    /// finished.
    pub partial: Vec<PathBuf>,
    /// Problems of the session itself (its meta files, files listed but missing, sidecars
    /// without a file).
    pub problems: Vec<String>,
}

impl SessionReport {
    /// Whether every file passed, nothing is incomplete and the session has no problems.
    pub fn ok(&self) -> bool {
        self.files.iter().all(FileCheck::ok) && self.partial.is_empty() && self.problems.is_empty()
    }
}

/// Checks one finished file against its sidecar.
fn check_file(dir: &Path, rel: &Path) -> FileCheck {
    let path = dir.join(rel);
    let mut problems = Vec::new();
    let sidecar_path = path.with_extension("json");
    let sidecar = if sidecar_path.exists() {
        match read_sidecar(&sidecar_path) {
            Ok(s) => Some(s),
            Err(e) => {
                problems.push(FileProblem::Sidecar(e.to_string()));
                None
            }
        }
    } else {
        let name = sidecar_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        problems.push(FileProblem::Sidecar(format!("'{name}' is missing")));
        None
    };
    let footer = match footer(&path) {
        Ok(f) => Some(f),
        Err(e) => {
            problems.push(FileProblem::Unreadable(e.to_string()));
            None
        }
    };
    if let Some(s) = &sidecar {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if s.file != name {
            problems.push(FileProblem::Sidecar(format!("it describes '{}', not '{name}'", s.file)));
        }
        if let Some((schema, rows)) = &footer {
            if let Some(why) = mismatch(schema, s.sensor.secondary_capture) {
                problems.push(FileProblem::Schema(why));
            }
            if *rows != s.rows {
                problems.push(FileProblem::RowCount { sidecar: s.rows, file: *rows });
            }
        }
        match file_sha256(&path) {
            Ok(hash) if hash != s.sha256 => problems.push(FileProblem::Hash { sidecar: s.sha256.clone(), file: hash }),
            Ok(_) => {}
            Err(e) => problems.push(FileProblem::Unreadable(e.to_string())),
        }
        if let Some(entry) = &s.poses {
            problems.extend(check_poses(&path, entry).map(FileProblem::Poses));
        }
        if let Some(entry) = &s.beams {
            problems.extend(check_beams(&path, entry).map(FileProblem::Beams));
        }
    }
    FileCheck { path: rel.to_path_buf(), sidecar, problems }
}

/// Checks the pose table a sidecar lists (beside the lidar file at `lidar`): it exists, is a
/// pose table, and has the sidecar's rows and SHA-256. `None` when it passes.
fn check_poses(lidar: &Path, entry: &PoseFile) -> Option<String> {
    let listed = Listed { kind: "pose table", file: &entry.file, rows: entry.rows, sha256: &entry.sha256 };
    check_side_table(&pose_path(lidar), listed, pose_mismatch)
}

/// Checks the beam table a sidecar lists (beside the lidar file at `lidar`), as
/// [`check_poses`] does.
fn check_beams(lidar: &Path, entry: &BeamFile) -> Option<String> {
    let listed = Listed { kind: "beam table", file: &entry.file, rows: entry.rows, sha256: &entry.sha256 };
    check_side_table(&beam_path(lidar), listed, |_| None)
}

/// A side table as its lidar file's sidecar lists it.
struct Listed<'a> {
    kind: &'static str,
    file: &'a str,
    rows: u64,
    sha256: &'a str,
}

/// Checks the side table at `expected` against its sidecar entry: its name, that it exists
/// (or is still `.partial`), its columns (`mismatch`), rows and SHA-256.
fn check_side_table(
    expected: &Path,
    listed: Listed,
    mismatch: impl Fn(&arrow_schema::Schema) -> Option<String>,
) -> Option<String> {
    let name = expected.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if listed.file != name {
        return Some(format!(
            "the sidecar lists '{}', where the {} of this file is '{name}'",
            listed.file, listed.kind
        ));
    }
    if !expected.exists() {
        let partial = expected.with_extension("parquet.partial");
        return Some(if partial.exists() {
            format!("'{name}' is still '.partial' (the run was killed while finishing the episode)")
        } else {
            format!("'{name}' is missing")
        });
    }
    let (schema, rows) = match footer(expected) {
        Ok(f) => f,
        Err(e) => return Some(e.to_string()),
    };
    if let Some(why) = mismatch(&schema) {
        return Some(format!("'{name}': {why}"));
    }
    if rows != listed.rows {
        return Some(format!("'{name}' has {rows} rows, and the sidecar says {}", listed.rows));
    }
    match file_sha256(expected) {
        Ok(hash) if hash != listed.sha256 => Some(format!(
            "'{name}' has SHA-256 {}…, and the sidecar says {}… (it changed after it was written)",
            &hash[..12],
            &listed.sha256[..listed.sha256.len().min(12)]
        )),
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    }
}

/// The episodes of an `episodes.jsonl` text, each with its 1-based line number (blank lines
/// skipped).
pub(crate) fn episode_lines(text: &str) -> impl Iterator<Item = (usize, serde_json::Result<EpisodeRecord>)> + '_ {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, line)| (n + 1, serde_json::from_str::<EpisodeRecord>(line)))
}

/// Sorted entries of a folder.
fn entries(dir: &Path) -> Result<Vec<PathBuf>, RecordError> {
    let rd = std::fs::read_dir(dir).map_err(|e| RecordError::io("list", dir, e))?;
    let mut out = Vec::new();
    for e in rd {
        out.push(e.map_err(|e| RecordError::io("list", dir, e))?.path());
    }
    out.sort();
    Ok(out)
}

/// Checks the session at `dir`: every `data/chunk-*/*.parquet` against its sidecar (row
/// count, exact columns and types for the sidecar's capture mode, SHA-256), the `.partial`
/// files a killed run left, and `meta/episodes.jsonl`. Problems go into the report; an error
/// only when `dir` is not a session at all or cannot be listed.
pub fn check_session(dir: &Path) -> Result<SessionReport, RecordError> {
    let info = dir.join("meta").join("info.json");
    let data = dir.join("data");
    if !info.exists() && !data.is_dir() {
        return Err(RecordError::NotASession {
            path: dir.to_path_buf(),
            reason: "it has neither meta/info.json nor data/".into(),
        });
    }
    let mut report = SessionReport {
        dir: dir.to_path_buf(),
        meta: None,
        episodes: Vec::new(),
        files: Vec::new(),
        partial: Vec::new(),
        problems: Vec::new(),
    };
    match read_session_meta(dir) {
        Ok(meta) => report.meta = Some(meta),
        Err(e) => report.problems.push(e.to_string()),
    }
    let log = dir.join("meta").join("episodes.jsonl");
    match std::fs::read_to_string(&log) {
        Ok(text) => {
            for (n, line) in episode_lines(&text) {
                match line {
                    Ok(e) => report.episodes.push(e),
                    Err(e) => report.problems.push(format!("meta/episodes.jsonl line {n}: {e}")),
                }
            }
        }
        Err(e) => report.problems.push(format!("meta/episodes.jsonl cannot be read: {e}")),
    }
    if data.is_dir() {
        for chunk in entries(&data)? {
            let chunk_name = chunk.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if !chunk.is_dir() || !chunk_name.starts_with("chunk-") {
                continue;
            }
            for path in entries(&chunk)? {
                let rel = path.strip_prefix(dir).unwrap_or(&path).to_path_buf();
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                if let Some(table) = side_table(&name) {
                    // A pose or beam table is checked with its lidar file, through the sidecar.
                    let lidar = path.with_file_name(name.replace(&format!(".{table}.parquet"), ".parquet"));
                    let partial = lidar.with_extension("parquet.partial");
                    if !lidar.exists() && !partial.exists() {
                        report.problems.push(format!("{} is a {table} table without its lidar file", rel.display()));
                    }
                } else if name.ends_with(".poses.parquet.partial") || name.ends_with(".beams.parquet.partial") {
                    // Left beside the lidar file's own `.partial`, which is what is reported.
                } else if name.ends_with(".parquet.partial") {
                    report.partial.push(rel);
                } else if let Some((table, _)) = TickTable::of_file(&name, "") {
                    let problems = check_tick_table(table, &path);
                    report.problems.extend(problems.into_iter().map(|p| format!("{}: {p}", rel.display())));
                } else if TickTable::is_sidecar(&name) {
                    if !path.with_extension("parquet").exists() && !path.with_extension("parquet.partial").exists() {
                        report.problems.push(format!("{} is a sidecar without its Parquet file", rel.display()));
                    }
                } else if name.ends_with(".parquet") {
                    report.files.push(check_file(dir, &rel));
                } else if name.ends_with(".json") {
                    let stem = path.with_extension("");
                    let finished = stem.with_extension("parquet");
                    let partial = stem.with_extension("parquet.partial");
                    if !finished.exists() && !partial.exists() {
                        report.problems.push(format!("{} is a sidecar without its Parquet file", rel.display()));
                    }
                }
            }
        }
    } else {
        report.problems.push("the session has no data/ folder".into());
    }
    for e in &report.episodes {
        for f in e.files.iter().chain(&e.rangefinders).chain(&e.state) {
            if !dir.join(f).exists() {
                report.problems.push(format!("episode {} lists {f}, which is missing", e.index));
            }
        }
    }
    Ok(report)
}

/// The file at `path` checked against the SHA-256 `expected` its description (`described_in`,
/// a sidecar or `augmentation.json`) records; [`RecordError::Changed`] naming both when the
/// bytes differ. Every reader of recorded rows goes through this (or [`verified_sidecar`]), so
/// a damaged file is refused rather than read as other rows.
pub(crate) fn verify_hash(path: &Path, expected: &str, described_in: &str) -> Result<(), RecordError> {
    let found = file_sha256(path)?;
    if found == expected {
        return Ok(());
    }
    Err(RecordError::Changed {
        path: path.to_path_buf(),
        reason: format!(
            "its SHA-256 is {}…, and {described_in} records {}… (the file changed or was damaged after it was written)",
            &found[..12],
            &expected[..expected.len().min(12)]
        ),
    })
}

/// The sidecar of the finished lidar file `lidar`, once the file and the pose and beam tables
/// the sidecar lists are checked against its SHA-256s ([`RecordError::Changed`] naming the
/// file that differs).
pub fn verified_sidecar(lidar: &Path) -> Result<Sidecar, RecordError> {
    let sidecar = read_sidecar(&lidar.with_extension("json"))?;
    verify_hash(lidar, &sidecar.sha256, "its sidecar")?;
    if let Some(entry) = &sidecar.poses {
        verify_hash(&pose_path(lidar), &entry.sha256, "the lidar file's sidecar")?;
    }
    if let Some(entry) = &sidecar.beams {
        verify_hash(&beam_path(lidar), &entry.sha256, "the lidar file's sidecar")?;
    }
    Ok(sidecar)
}
