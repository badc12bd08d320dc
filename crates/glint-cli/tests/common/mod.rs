//! What the command-line tests share: running `glint`, reading its output, temporary folders,
//! the pinned Python, and a tmpfs to fill. Each test file uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// A hang guard for waiting on a command: far longer than anything here takes on a slow,
/// busy machine. Tests wait for what a command writes, never for a time.
pub const HANG_GUARD: Duration = Duration::from_secs(30 * 60);

/// Runs `glint ARGS` to its end.
pub fn glint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_glint")).args(args).output().expect("glint runs")
}

/// Standard output and standard error, as text.
pub fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Runs glint, which must succeed; its standard output.
pub fn ok(args: &[&str]) -> String {
    let o = glint(args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "glint {args:?} failed: {err}\n{out}");
    out
}

/// Runs glint, which must fail with exit status 1 and no panic; its standard error.
pub fn fails(args: &[&str]) -> String {
    let o = glint(args);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "glint {args:?} should fail: {err}\n{out}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// A path as an argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A file of the repository's `examples/`.
pub fn example(name: &str) -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", name].iter().collect()
}

/// A fresh, empty temporary folder for this test process, named by `tag`.
pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The one session folder under `out`, once it exists.
pub fn session_in(out: &Path) -> Option<PathBuf> {
    std::fs::read_dir(out).ok()?.filter_map(|e| e.ok()).map(|e| e.path()).find(|p| p.is_dir())
}

/// The repository's pinned Python (pyarrow, plyfile), installed by `make test`.
pub fn python() -> PathBuf {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", ".deps", "venv", "bin", "python"].iter().collect();
    assert!(p.exists(), "{} is missing: run `make test`, which installs the pinned Python packages", p.display());
    p
}

/// Runs a Python script that must succeed; its standard output.
pub fn python_ok(script: &str) -> String {
    let out = Command::new(python()).args(["-c", script]).output().expect("python runs");
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A tmpfs mounted for one test, unmounted when dropped.
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `bytes` at `dir` (created if missing); `None` (with the reason
    /// printed) where this user or machine cannot mount one.
    pub fn mount(dir: &Path, bytes: u64) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let o = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs", s(dir)]).output();
        match o {
            Ok(o) if o.status.success() => Some(Tmpfs(dir.to_path_buf())),
            Ok(o) => {
                eprintln!("skipped: cannot mount a tmpfs here ({})", String::from_utf8_lossy(&o.stderr).trim());
                None
            }
            Err(e) => {
                eprintln!("skipped: cannot run mount ({e})");
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}
