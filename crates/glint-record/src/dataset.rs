//! A dataset: one recorded session, or the catalog (`dataset.json`) that `glint.distributed`
//! writes over its shard sessions, read as one. Every shard is an ordinary session whose
//! files are numbered by the dataset's own episode indices (`glint run --first-episode`), so
//! reading the dataset is finding which session holds an episode.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::{
    EpisodeRecord, RecordError, SessionLock, SessionMeta, file_sha256, read_episode_records, read_session_meta,
};

/// The catalog's file name in a dataset folder.
pub const CATALOG_FILE: &str = "dataset.json";

/// The catalog format this reader understands (`format`, `format_version`).
const CATALOG_FORMAT: (&str, u32) = ("glint-dataset", 1);

/// A recorded session, or a catalog of shard sessions ([`Dataset::open`]).
#[derive(Clone, Debug)]
pub struct Dataset {
    root: PathBuf,
    catalog: Option<Catalog>,
    /// The session's `meta/info.json`, or the first shard's (read once, at opening).
    meta: SessionMeta,
}

/// `dataset.json`, as far as reading needs it.
#[derive(Clone, Debug, Deserialize)]
struct Catalog {
    format: String,
    format_version: u32,
    shards: Vec<CatalogShard>,
    episodes: Vec<CatalogEpisode>,
}

/// One shard of a catalog: a session under `shards/<name>/` holding episodes
/// `first_episode .. first_episode + episodes`.
#[derive(Clone, Debug, Deserialize)]
struct CatalogShard {
    name: String,
    first_episode: u32,
    episodes: u32,
}

#[derive(Clone, Debug, Deserialize)]
struct CatalogEpisode {
    episode: u32,
    files: Vec<CatalogFile>,
}

#[derive(Clone, Debug, Deserialize)]
struct CatalogFile {
    path: String,
    sha256: String,
}

/// One finished episode of a dataset and the session that holds it.
#[derive(Clone, Debug)]
pub struct DatasetEpisode {
    /// The session folder (the dataset itself, or one of its shards).
    pub session: PathBuf,
    /// The episode as the session's `meta/episodes.jsonl` records it.
    pub record: EpisodeRecord,
}

/// A file whose bytes differ from the catalog's SHA-256 for it, or that is missing.
#[derive(Clone, Debug, PartialEq)]
pub struct CatalogMismatch {
    /// The file, in the dataset.
    pub path: PathBuf,
    /// What is wrong ("missing", or the two hashes).
    pub reason: String,
}

impl Dataset {
    /// Opens `path`: a session folder, a folder with a `dataset.json`, or the `dataset.json`
    /// itself. A catalog's shards must all be there and record the same sensors.
    pub fn open(path: &Path) -> Result<Dataset, RecordError> {
        let Some(catalog_path) = Dataset::catalog_at(path) else {
            return Ok(Dataset { root: path.to_path_buf(), catalog: None, meta: read_session_meta(path)? });
        };
        let root = catalog_path.parent().map(Path::to_path_buf).unwrap_or_default();
        let catalog = read_catalog(&catalog_path)?;
        let meta = check_shards(&root, &catalog, &catalog_path)?;
        Ok(Dataset { root, catalog: Some(catalog), meta })
    }

    /// The catalog `path` names (a `.json` file itself, or the `dataset.json` in the folder), if
    /// any.
    pub fn catalog_at(path: &Path) -> Option<PathBuf> {
        let is_json = path.extension().is_some_and(|e| e == "json");
        match path.is_file() {
            true => Some(path.to_path_buf()).filter(|_| is_json),
            false => Some(path.join(CATALOG_FILE)).filter(|p| p.is_file()),
        }
    }

    /// The session folder, or the catalog's folder: where outputs go by default.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether this is a catalog of shards rather than one session.
    pub fn is_catalog(&self) -> bool {
        self.catalog.is_some()
    }

    /// The sessions, in episode order (one for a plain session).
    pub fn sessions(&self) -> Vec<PathBuf> {
        match &self.catalog {
            None => vec![self.root.clone()],
            Some(c) => c.shards.iter().map(|s| shard_dir(&self.root, s)).collect(),
        }
    }

    /// The session holding episode `episode`: the session itself, or the catalog's shard
    /// whose range holds it (an error listing the dataset's range otherwise).
    pub fn session_of(&self, episode: u32) -> Result<PathBuf, RecordError> {
        let Some(catalog) = &self.catalog else { return Ok(self.root.clone()) };
        match catalog.shards.iter().find(|s| (s.first_episode..s.first_episode + s.episodes).contains(&episode)) {
            Some(shard) => Ok(shard_dir(&self.root, shard)),
            None => Err(RecordError::Setting(format!(
                "the dataset '{}' has no episode {episode}: its shards hold episodes {}",
                self.root.display(),
                episode_ranges(catalog)
            ))),
        }
    }

    /// The session's description ([`read_session_meta`]); for a catalog, its first shard's
    /// (every shard records the same sensors, as [`Dataset::open`] checked).
    pub fn meta(&self) -> &SessionMeta {
        &self.meta
    }

    /// Every finished episode, by index, with the session that holds it.
    pub fn episodes(&self) -> Result<Vec<DatasetEpisode>, RecordError> {
        let mut all = Vec::new();
        for session in self.sessions() {
            for record in read_episode_records(&session)? {
                all.push(DatasetEpisode { session: session.clone(), record });
            }
        }
        all.sort_by_key(|e| e.record.index);
        Ok(all)
    }

    /// Holds every session beside other readers for `verb` ([`SessionLock::shared`]).
    pub fn lock_shared(&self, verb: &'static str) -> Result<Vec<SessionLock>, RecordError> {
        self.sessions().iter().map(|s| SessionLock::shared(s, verb)).collect()
    }

    /// Where `session`'s part of a dataset-wide output folder `out` goes: `out` itself for a
    /// plain session, `out/shards/<shard>/` for a catalog's shard (a variant of a dataset is a
    /// dataset of the same shards).
    pub fn part_of(&self, out: &Path, session: &Path) -> PathBuf {
        match (&self.catalog, session.file_name()) {
            (Some(_), Some(name)) => out.join("shards").join(name),
            _ => out.to_path_buf(),
        }
    }

    /// The catalog's files (of `episode`, or all) whose bytes no longer match its SHA-256
    /// (none for a plain session, whose own sidecars carry the hashes the session check
    /// compares).
    pub fn verify_catalog(&self, episode: Option<u32>) -> Result<Vec<CatalogMismatch>, RecordError> {
        let Some(catalog) = &self.catalog else { return Ok(Vec::new()) };
        let mut mismatches = Vec::new();
        let listed = catalog.episodes.iter().filter(|e| episode.is_none_or(|n| n == e.episode));
        for file in listed.flat_map(|e| &e.files) {
            let path = self.root.join(&file.path);
            if !path.is_file() {
                mismatches.push(CatalogMismatch { path, reason: "missing".into() });
                continue;
            }
            let sha = file_sha256(&path)?;
            if sha != file.sha256 {
                let reason = format!("SHA-256 {sha}, the catalog says {}", file.sha256);
                mismatches.push(CatalogMismatch { path, reason });
            }
        }
        Ok(mismatches)
    }
}

fn shard_dir(root: &Path, shard: &CatalogShard) -> PathBuf {
    root.join("shards").join(&shard.name)
}

/// Every shard of `catalog` is a session recording the same sensors as the first: the first
/// shard's description.
fn check_shards(root: &Path, catalog: &Catalog, catalog_path: &Path) -> Result<SessionMeta, RecordError> {
    let bad = |reason: String| RecordError::Json { path: catalog_path.to_path_buf(), what: "dataset catalog", reason };
    let sensors = |meta: &SessionMeta| meta.sensors.iter().map(|s| s.file_name.clone()).collect::<Vec<String>>();
    let mut first: Option<(PathBuf, SessionMeta)> = None;
    for session in catalog.shards.iter().map(|s| shard_dir(root, s)) {
        if !session.is_dir() {
            return Err(bad(format!(
                "its shard '{}' is missing: run the same `glint.distributed.generate` call again to make it",
                session.display()
            )));
        }
        let meta = read_session_meta(&session)?;
        match &first {
            None => first = Some((session, meta)),
            Some((dir, head)) if sensors(head) != sensors(&meta) => {
                return Err(bad(format!(
                    "its shards record different sensors ('{}': {:?}, '{}': {:?})",
                    dir.display(),
                    sensors(head),
                    session.display(),
                    sensors(&meta)
                )));
            }
            Some(_) => {}
        }
    }
    first.map(|(_, meta)| meta).ok_or_else(|| bad("it lists no shard".into()))
}

fn read_catalog(path: &Path) -> Result<Catalog, RecordError> {
    let bad = |reason: String| RecordError::Json { path: path.to_path_buf(), what: "dataset catalog", reason };
    let text = std::fs::read_to_string(path).map_err(|e| RecordError::io("read", path, e))?;
    let catalog: Catalog = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if (catalog.format.as_str(), catalog.format_version) != CATALOG_FORMAT {
        return Err(bad(format!(
            "its format is '{}' version {}, and this glint reads '{}' version {}",
            catalog.format, catalog.format_version, CATALOG_FORMAT.0, CATALOG_FORMAT.1
        )));
    }
    if catalog.shards.is_empty() {
        return Err(bad("it lists no shard".into()));
    }
    for shard in &catalog.shards {
        if shard.name.is_empty() || shard.name.contains(['/', '\\']) || shard.name.starts_with('.') {
            return Err(bad(format!("shard name '{}' is not a folder name", shard.name)));
        }
    }
    Ok(catalog)
}

/// The episode ranges of the catalog's shards, as `0..=5, 8..=11`.
fn episode_ranges(catalog: &Catalog) -> String {
    let mut ranges: Vec<(u32, u32)> = catalog
        .shards
        .iter()
        .filter(|s| s.episodes > 0)
        .map(|s| (s.first_episode, s.first_episode + s.episodes - 1))
        .collect();
    ranges.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::new();
    for (a, b) in ranges {
        match merged.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged.iter().map(|(a, b)| format!("{a}..={b}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(shards: &[(u32, u32)]) -> Catalog {
        Catalog {
            format: CATALOG_FORMAT.0.into(),
            format_version: CATALOG_FORMAT.1,
            shards: shards
                .iter()
                .enumerate()
                .map(|(i, &(first_episode, episodes))| CatalogShard {
                    name: format!("shard-{i:05}"),
                    first_episode,
                    episodes,
                })
                .collect(),
            episodes: Vec::new(),
        }
    }

    #[test]
    fn episodes_resolve_to_their_shard() {
        let meta: SessionMeta = serde_json::from_value(serde_json::json!({
            "format_version": 1, "glint_version": "0", "created_utc": "", "manifest": "", "scene": "", "seed": 0,
            "episodes": 6, "seconds_per_episode": 1.0, "worlds": 1, "physics_timestep": 0.002,
            "lidar_runner_hz": 50.0, "controller": "zero", "mujoco_version": "3.17.0", "sensors": [],
            "manifest_text": ""
        }))
        .unwrap();
        let catalog = Some(catalog(&[(0, 2), (2, 2), (6, 2)]));
        let dataset = Dataset { root: PathBuf::from("/d"), catalog, meta };
        assert_eq!(dataset.session_of(3).unwrap(), PathBuf::from("/d/shards/shard-00001"));
        assert_eq!(dataset.session_of(7).unwrap(), PathBuf::from("/d/shards/shard-00002"));
        let missing = dataset.session_of(4).unwrap_err().to_string();
        assert!(missing.contains("no episode 4") && missing.contains("0..=3, 6..=7"), "{missing}");
        assert_eq!(
            dataset.part_of(Path::new("/v"), Path::new("/d/shards/shard-00001")),
            PathBuf::from("/v/shards/shard-00001")
        );
    }

    #[test]
    fn a_foreign_or_newer_catalog_is_refused() {
        let dir = std::env::temp_dir().join(format!("glint-catalog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(CATALOG_FILE);
        std::fs::write(&path, r#"{"format": "glint-dataset", "format_version": 2, "shards": [], "episodes": []}"#)
            .unwrap();
        let e = Dataset::open(&dir).unwrap_err().to_string();
        assert!(e.contains("version 2") && e.contains("reads 'glint-dataset' version 1"), "{e}");
        std::fs::write(&path, r#"{"format": "glint-dataset", "format_version": 1, "shards": [{"name": "s", "first_episode": 0, "episodes": 1}], "episodes": []}"#).unwrap();
        let e = Dataset::open(&path).unwrap_err().to_string();
        assert!(e.contains("shard") && e.contains("is missing") && e.contains("generate"), "{e}");
        std::fs::write(&path, "{").unwrap();
        assert!(Dataset::open(&dir).unwrap_err().to_string().contains("dataset catalog"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
