//! Golden outputs: every file the command line makes of the golden scene
//! (`tests/data/golden/golden.toml`) is compared byte for byte with the one an earlier build
//! made (`tests/data/golden/cli/`): a recorded session (lidar files, pose and beam tables,
//! sidecars, `info.json`, `episodes.jsonl`, camera streams), `glint scan` PLYs and PNGs (clean
//! and through the return model), `glint bake`, `glint export`, `glint points` and `glint
//! render`. What legitimately changes between runs is normalised first: the temporary folder,
//! the session folder's time stamp, `created_utc`, each episode's wall-clock `duration_s`, and
//! the session lock (which names the process).
//!
//! After a change that is meant to alter an output, bless the new files with
//! `GLINT_BLESS=1 cargo test --release -p glint-cli --test golden` and commit them with the
//! reason in the message.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::*;

/// The golden files' folder.
fn golden_dir() -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "..", "..", "tests", "data", "golden", "cli"].iter().collect()
}

/// The ffmpeg the recording's camera video is encoded with: the pinned one, so the video's
/// bytes are the same on every machine.
fn ffmpeg() -> String {
    python_ok("import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())").trim().to_string()
}

/// Runs glint with the pinned ffmpeg, which must succeed.
fn run_ok(args: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_glint")).args(args).env("GLINT_FFMPEG", ffmpeg()).output().unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "glint {args:?} failed: {err}\n{out}");
}

/// Every file under `dir`, by its path relative to `dir` (with `/`), in order.
fn files(dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().replace('\\', "/");
                found.insert(rel, p);
            }
        }
    }
    found
}

/// `bytes` with every `from` replaced by `to`.
fn replace(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if !from.is_empty() && bytes[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// The JSON key `key`'s values in a text (one object per line, or pretty), set to `to`.
fn blank_key(text: &str, key: &str, to: &str) -> String {
    let pattern = format!("\"{key}\":");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&pattern) {
        let (head, tail) = rest.split_at(at + pattern.len());
        out.push_str(head);
        let value_start = tail.len() - tail.trim_start().len();
        out.push_str(&tail[..value_start]);
        let tail = &tail[value_start..];
        let end = if let Some(quoted) = tail.strip_prefix('"') {
            quoted.find('"').map_or(tail.len(), |e| e + 2)
        } else {
            tail.find([',', '}', '\n']).unwrap_or(tail.len())
        };
        out.push_str(to);
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// A file's bytes with what differs from run to run normalised (see the module's docs).
fn normalised(path: &Path, dir: &Path, session: &str) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    let bytes = replace(&bytes, dir.to_str().unwrap().as_bytes(), b"$DIR");
    let bytes = replace(&bytes, session.as_bytes(), b"session_$TIME");
    let name = path.file_name().unwrap().to_string_lossy();
    if name.ends_with(".json") || name.ends_with(".jsonl") {
        let text = String::from_utf8(bytes).unwrap();
        let text = blank_key(&text, "created_utc", "\"$CREATED\"");
        return blank_key(&text, "duration_s", "0").into_bytes();
    }
    bytes
}

/// Makes every output of the golden scene under `dir`; returns them by name, normalised.
fn outputs(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let golden: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "tests", "data", "golden"].iter().collect();
    std::fs::copy(golden.join("golden.toml"), dir.join("golden.toml")).unwrap();
    std::fs::copy(example("showroom/showroom.xml"), dir.join("showroom.xml")).unwrap();
    let manifest = dir.join("golden.toml");
    let m = s(&manifest);
    let out = dir.join("out");
    run_ok(&["run", m, "--seconds", "0.2", "--worlds", "2", "--seed", "3", "--out", s(&out)]);
    let session = session_in(&out).unwrap();
    let session_name = session.file_name().unwrap().to_string_lossy().into_owned();
    let ses = s(&session);
    ok(&["scan", m, "--out", s(&dir.join("scan"))]);
    ok(&["scan", m, "--sensor", "1", "--out", s(&dir.join("scan"))]);
    ok(&["bake", m]);
    ok(&["scan", m, "--material", "--colour-by", "intensity", "--size", "128", "--out", s(&dir.join("scan-material"))]);
    ok(&["export", ses, "--bake", "golden", "--out", s(&dir.join("variant"))]);
    let points = dir.join("points");
    ok(&["points", ses, "--out", s(&points.join("roof-000.ply"))]);
    ok(&[
        "points",
        ses,
        "--sensor",
        "livox",
        "--episode",
        "1",
        "--format",
        "pcd",
        "--frame",
        "sensor",
        "--out",
        s(&points.join("livox-001.pcd")),
    ]);
    ok(&[
        "points",
        ses,
        "--variant",
        s(&dir.join("variant")),
        "--format",
        "kitti",
        "--out",
        s(&points.join("roof-000-variant.bin")),
    ]);
    ok(&["render", m, "--steps", "3", "--size", "40", "30", "--out", s(&dir.join("render"))]);

    let mut all = BTreeMap::new();
    for (part, folder) in [
        ("session", session.clone()),
        ("scan", dir.join("scan")),
        ("scan-material", dir.join("scan-material")),
        ("bake", dir.join("MaterialBakes")),
        ("variant", dir.join("variant")),
        ("points", points),
        ("render", dir.join("render")),
    ] {
        for (rel, path) in files(&folder) {
            // The lock names the process that held it.
            if part == "session" && rel == "meta/lock" {
                continue;
            }
            all.insert(format!("{part}/{rel}"), normalised(&path, dir, &session_name));
        }
    }
    all
}

#[test]
fn every_output_of_the_golden_scene_is_byte_identical_to_the_golden_files() {
    let dir = temp_dir("golden");
    let made = outputs(&dir);
    let golden = golden_dir();
    if std::env::var_os("GLINT_BLESS").is_some() {
        let _ = std::fs::remove_dir_all(&golden);
        for (name, bytes) in &made {
            let path = golden.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        eprintln!("blessed {} golden files into {}", made.len(), golden.display());
    }
    let expected: BTreeMap<String, Vec<u8>> =
        files(&golden).into_iter().map(|(name, path)| (name, std::fs::read(path).unwrap())).collect();
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&made), names(&expected), "the outputs are not the golden files' set");
    let differ: Vec<&String> = made.iter().filter(|(name, bytes)| expected[*name] != **bytes).map(|(n, _)| n).collect();
    assert!(
        differ.is_empty(),
        "these outputs differ from their golden files: {differ:?} (made under {})",
        dir.display()
    );
    std::fs::remove_dir_all(&dir).ok();
}
