//! Who is using a session folder, so that no command changes a session another is writing.
//!
//! The lock is `meta/lock`, an advisory `flock` the operating system drops when its holder
//! exits, however it exits (a `kill -9` included): a lock file left behind by a dead process
//! locks nothing. A recording holds it exclusively from the session's creation to its last
//! episode, and `glint recover` holds it exclusively while it salvages; `glint export` holds it
//! shared (exports may read a session side by side, but not while it is written or salvaged).
//! An exclusive holder writes who it is into the file ([`SessionUser`]), which is what the
//! others' messages quote. Sessions made before the lock existed get the file when first
//! locked.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::RecordError;

/// The lock file, relative to the session folder.
const LOCK_FILE: [&str; 2] = ["meta", "lock"];

/// The process holding a session exclusively, as it wrote itself into the lock file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionUser {
    /// Its process id.
    pub pid: u32,
    /// Its command line.
    pub command: String,
    /// What it does with the session: `recording`, `recovering`.
    pub doing: String,
    /// Since when, UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub since: String,
}

impl std::fmt::Display for SessionUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` (pid {}) is {} it since {}", self.command, self.pid, self.doing, self.since)
    }
}

/// A hold on a session folder, released when dropped (or when the process ends).
#[derive(Debug)]
pub struct SessionLock {
    /// `None` where the session cannot hold a lock file (a read-only copy): nobody can be
    /// writing it there either.
    _file: Option<File>,
}

/// `dir`'s lock file.
fn lock_path(dir: &Path) -> PathBuf {
    dir.join(LOCK_FILE[0]).join(LOCK_FILE[1])
}

impl SessionLock {
    /// Holds the session at `dir` alone for `doing` (`recording`, `recovering`), and writes
    /// this process into the lock file. An error naming the holder when another process holds
    /// it (or, for `verb`, what was refused: "recover").
    pub(crate) fn exclusive(dir: &Path, doing: &str, verb: &'static str) -> Result<SessionLock, RecordError> {
        let path = lock_path(dir);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| RecordError::io("open the session lock", &path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(in_use(dir, verb)),
            Err(TryLockError::Error(e)) => return Err(RecordError::io("lock", &path, e)),
        }
        let user = SessionUser {
            pid: std::process::id(),
            command: command_line(),
            doing: doing.into(),
            since: crate::session::utc_now().1,
        };
        let text = serde_json::to_string(&user).unwrap_or_default();
        file.set_len(0)
            .and_then(|()| file.write_all(text.as_bytes()))
            .map_err(|e| RecordError::io("write", &path, e))?;
        Ok(SessionLock { _file: Some(file) })
    }

    /// Holds the session at `dir` beside other readers for `verb` ("export"); an error naming
    /// the holder ([`RecordError::InUse`]) while a recording or a salvage holds it. A command
    /// takes it before its work, so that a live session is refused before minutes of it.
    pub fn shared(dir: &Path, verb: &'static str) -> Result<SessionLock, RecordError> {
        let Some(file) = open_existing(dir, true)? else { return Ok(SessionLock { _file: None }) };
        match file.try_lock_shared() {
            Ok(()) => Ok(SessionLock { _file: Some(file) }),
            Err(TryLockError::WouldBlock) => Err(in_use(dir, verb)),
            Err(TryLockError::Error(e)) => Err(RecordError::io("lock", lock_path(dir), e)),
        }
    }

    /// Whether a lock file is held (tests).
    #[cfg(test)]
    fn holds(&self) -> bool {
        self._file.is_some()
    }
}

/// The session's lock file opened for reading. Where it is missing (a session made before
/// locks) it is created when `create`; `None` where it is missing and not created, or cannot be
/// created (a read-only copy, a folder without `meta/`): nobody can hold it then.
fn open_existing(dir: &Path, create: bool) -> Result<Option<File>, RecordError> {
    let path = lock_path(dir);
    match File::open(&path) {
        Ok(f) => return Ok(Some(f)),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(RecordError::io("open", &path, e)),
        Err(_) if !create => return Ok(None),
        Err(_) => {}
    }
    match OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path) {
        Ok(f) => Ok(Some(f)),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::ReadOnlyFilesystem
                    | std::io::ErrorKind::PermissionDenied
                    | std::io::ErrorKind::NotFound
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(RecordError::io("create the session lock", &path, e)),
    }
}

/// Who holds the session at `dir` exclusively (a recording, a salvage) right now, if anyone:
/// what `glint replay` and `glint points` ask before they call `.partial` files unfinished.
pub fn session_user(dir: &Path) -> Result<Option<SessionUser>, RecordError> {
    let Some(file) = open_existing(dir, false)? else { return Ok(None) };
    match file.try_lock_shared() {
        Ok(()) => Ok(None),
        Err(TryLockError::WouldBlock) => Ok(Some(holder(dir))),
        Err(TryLockError::Error(e)) => Err(RecordError::io("lock", lock_path(dir), e)),
    }
}

/// The exclusive holder as it described itself (an unknown process while it has not yet).
fn holder(dir: &Path) -> SessionUser {
    let text = std::fs::read_to_string(lock_path(dir)).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or_else(|_| SessionUser {
        pid: 0,
        command: "another glint".into(),
        doing: "starting on".into(),
        since: "a moment ago".into(),
    })
}

/// The refusal of `verb` on the session at `dir`, which another process holds.
fn in_use(dir: &Path, verb: &'static str) -> RecordError {
    let reason = match session_user(dir) {
        Ok(Some(user)) if user.doing == "recording" => format!(
            "{user}. Wait for the run to end, or stop it with Ctrl-C{}: it closes the episode in progress",
            if user.pid > 0 { format!(" or `kill -INT {}`", user.pid) } else { String::new() }
        ),
        Ok(Some(user)) => format!("{user}. Wait for it to end and try again"),
        _ => "another glint command (an export) is reading it. Wait for it to end and try again".into(),
    };
    RecordError::InUse { verb, path: dir.to_path_buf(), reason }
}

/// Holds the output folder `out` (a variant being exported) for this process alone, so that
/// concurrent exports into it never share its staging folder: the lock is a hidden file
/// beside it, `.<name>.lock`, left in place (removing a lock file lets two processes hold
/// two different files). [`RecordError::VariantBusy`] while another process holds it.
pub(crate) fn hold_output(out: &Path) -> Result<File, RecordError> {
    let name = out.file_name().map_or_else(|| "variant".into(), |n| n.to_string_lossy().into_owned());
    let path = out.with_file_name(format!(".{name}.lock"));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| RecordError::io("create", &path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(RecordError::VariantBusy { path: out.to_path_buf() }),
        Err(TryLockError::Error(e)) => Err(RecordError::io("lock", &path, e)),
    }
}

/// This process's command line, as a shell would show it (program name without its folder).
fn command_line() -> String {
    let mut args = std::env::args();
    let program =
        args.next().map(|p| Path::new(&p).file_name().map_or_else(|| p.clone(), |n| n.to_string_lossy().into_owned()));
    program.into_iter().chain(args).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("glint-lock-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("meta")).unwrap();
        dir
    }

    #[test]
    fn an_exclusive_hold_refuses_every_other_and_names_its_holder() {
        let dir = session("exclusive");
        let held = SessionLock::exclusive(&dir, "recording", "record").unwrap();
        assert!(held.holds());
        let user = session_user(&dir).unwrap().expect("the session is in use");
        assert_eq!(user.pid, std::process::id());
        assert_eq!(user.doing, "recording");
        let refused = SessionLock::exclusive(&dir, "recovering", "recover").unwrap_err().to_string();
        assert!(refused.contains("cannot recover") && refused.contains("is recording it"), "{refused}");
        assert!(refused.contains(&format!("kill -INT {}", std::process::id())), "{refused}");
        let refused = SessionLock::shared(&dir, "export").unwrap_err().to_string();
        assert!(refused.contains("cannot export"), "{refused}");
        drop(held);
        assert_eq!(session_user(&dir).unwrap(), None, "a released lock leaves the session free");
        assert!(SessionLock::exclusive(&dir, "recovering", "recover").is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn shared_holds_sit_side_by_side_and_keep_salvage_out() {
        let dir = session("shared");
        let (a, b) = (SessionLock::shared(&dir, "export").unwrap(), SessionLock::shared(&dir, "export").unwrap());
        assert!(a.holds() && b.holds());
        assert_eq!(session_user(&dir).unwrap(), None, "readers are not recording");
        let refused = SessionLock::exclusive(&dir, "recovering", "recover").unwrap_err().to_string();
        assert!(refused.contains("an export"), "{refused}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
