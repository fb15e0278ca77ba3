//! Hermes's state database, read-only, leaving its folder exactly as it was.
//!
//! SQLite opens a database in WAL mode (as Hermes keeps `state.db`) by creating `state.db-shm`
//! beside it, even read-only, and may create `state.db-wal`; a read-only connection also
//! writes to an existing `-shm`. So the file is opened one of three ways:
//!
//! - **A `-wal` with content** (Hermes is running, or exited without closing the database):
//!   `state.db` and `state.db-wal` are copied into a private temporary folder (removed again
//!   when the database is dropped, also after an error) and the copy is opened, WAL included.
//!   A file that changes during the copy is copied again, a few times, before the import gives
//!   up (Hermes's writers never lock readers out in WAL mode, so a change is the only sign).
//!   The copy needs room for `state.db` in the temporary folder (`TMPDIR`).
//! - **WAL mode without WAL content**: everything is in `state.db`, which is opened in place
//!   with `immutable=1` (no locks, no `-shm`, no `-wal`). As SQLite then cannot see a writer,
//!   loopsim checks after each query that the file is unchanged.
//! - **Rollback-journal mode**: opened in place with SQLite's read-only flag, which creates
//!   nothing and takes SQLite's shared lock, so a writer holding the database gives the
//!   "locked by another process" error.
//!
//! Columns are picked by name, so older and newer schema versions both load; a missing
//! optional column reads as NULL and is reported.

use std::path::{Path, PathBuf};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use crate::ImportError;

/// Columns loopsim reads from `sessions`; `id` is required.
const SESSION_COLUMNS: &[&str] = &[
    "id",
    "source",
    "model",
    "started_at",
    "ended_at",
    "end_reason",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "api_call_count",
    "estimated_cost_usd",
    "actual_cost_usd",
    "title",
];

/// Columns loopsim reads from `messages`; `session_id` and `role` are required.
const MESSAGE_COLUMNS: &[&str] = &[
    "id",
    "session_id",
    "role",
    "content",
    "tool_call_id",
    "tool_calls",
    "tool_name",
    "timestamp",
    "finish_reason",
    "active",
    "compacted",
];

/// One row of `sessions`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionRow {
    pub id: String,
    pub source: Option<String>,
    pub model: Option<String>,
    pub started_at: Option<f64>,
    pub ended_at: Option<f64>,
    pub end_reason: Option<String>,
    /// Uncached input tokens (Hermes counts cache reads and writes apart).
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_tokens: Option<u64>,
    pub cache_write_tokens: Option<u64>,
    pub api_call_count: Option<u64>,
    pub estimated_cost_usd: Option<f64>,
    pub actual_cost_usd: Option<f64>,
    pub title: Option<String>,
}

/// One row of `messages`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MessageRow {
    pub id: i64,
    pub role: String,
    pub content: Option<String>,
    pub tool_call_id: Option<String>,
    pub tool_calls: Option<String>,
    pub tool_name: Option<String>,
    pub timestamp: Option<f64>,
    pub finish_reason: Option<String>,
    /// Rows that compaction or a rewind took out of the live context are inactive.
    pub active: bool,
    /// Summarised away by compaction (as opposed to taken back by a rewind).
    pub compacted: bool,
}

/// What identifies a file's content cheaply: a change of any of these means it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    #[cfg(unix)]
    inode: (u64, u64),
}

/// The stamp of `path`, `None` when it does not exist.
fn stamp(path: &Path) -> std::io::Result<Option<Stamp>> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(Some(Stamp {
            len: m.len(),
            modified: m.modified().ok(),
            #[cfg(unix)]
            inode: {
                use std::os::unix::fs::MetadataExt;
                (m.dev(), m.ino())
            },
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// `path` with `suffix` appended to its file name (`state.db` -> `state.db-wal`).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// A private temporary folder, removed with everything in it when dropped.
#[derive(Debug)]
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new() -> std::io::Result<Scratch> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let base = std::env::temp_dir();
        let mut last = None;
        for _ in 0..100 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!("loopsim-import-{}-{n}", std::process::id()));
            let mut builder = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            match builder.create(&dir) {
                Ok(()) => {
                    // An interrupted import removes it too (the CLI's signal handler).
                    loopsim_world::temporaries::track(&dir);
                    return Ok(Scratch { dir });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        loopsim_world::temporaries::untrack(&self.dir);
    }
}

/// How many times a database that keeps changing is copied before the import gives up.
const COPY_ATTEMPTS: u32 = 5;

/// `file:` URI of a path for SQLite, with `immutable=1`.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    for &b in absolute.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// An open state database.
pub struct StateDb {
    /// Declared before `_scratch`, so the connection closes before its folder is removed.
    conn: Connection,
    /// The private copy's folder, when the database is read from a copy.
    _scratch: Option<Scratch>,
    /// For a database opened in place without locks: the file and how it looked when opened.
    watch: Option<(PathBuf, Option<Stamp>)>,
    path: String,
    session_cols: Vec<&'static str>,
    message_cols: Vec<&'static str>,
    /// Optional columns this database does not have, as `table.column`.
    pub missing_columns: Vec<String>,
}

fn text(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Null => None,
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
    }
}

fn real(v: ValueRef<'_>) -> Option<f64> {
    match v {
        ValueRef::Integer(i) => Some(i as f64),
        ValueRef::Real(f) => Some(f),
        ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        _ => None,
    }
}

fn count(v: ValueRef<'_>) -> Option<u64> {
    real(v)
        .filter(|x| x.is_finite() && *x >= 0.0)
        .map(|x| x as u64)
}

impl StateDb {
    /// Opens `path` read-only and checks it is a Hermes state database. Nothing is created
    /// or changed beside it (see the module documentation).
    pub fn open(path: &Path) -> Result<StateDb, ImportError> {
        let shown = path.display().to_string();
        let io = |e: std::io::Error| ImportError::Io {
            path: shown.clone(),
            message: e.to_string(),
        };
        // The header: its magic, and bytes 18-19 (file format versions; 2 means WAL mode).
        let mut head = [0u8; 20];
        match std::fs::File::open(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ImportError::Missing { path: shown });
            }
            Err(e) => return Err(io(e)),
            Ok(mut f) => {
                use std::io::Read;
                let n = f.read(&mut head).unwrap_or(0);
                if n < 20 || &head[..16] != b"SQLite format 3\0" {
                    return Err(ImportError::NotSqlite { path: shown });
                }
            }
        }
        let wal_path = sibling(path, "-wal");
        let wal = stamp(&wal_path).map_err(io)?;
        // SQLite itself treats an empty -wal as absent.
        let wal_content = wal.as_ref().is_some_and(|w| w.len > 0);
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let (conn, scratch, watch) = if wal_content {
            let (copy, scratch) = Self::private_copy(path, &wal_path, &shown)?;
            let conn =
                Connection::open_with_flags(&copy, flags).map_err(|e| sql_error(&shown, e))?;
            (conn, Some(scratch), None)
        } else if head[18] == 2 || head[19] == 2 {
            let before = stamp(path).map_err(io)?;
            let conn = Connection::open_with_flags(
                immutable_uri(path),
                flags | OpenFlags::SQLITE_OPEN_URI,
            )
            .map_err(|e| sql_error(&shown, e))?;
            (conn, None, Some((path.to_path_buf(), before)))
        } else {
            let conn =
                Connection::open_with_flags(path, flags).map_err(|e| sql_error(&shown, e))?;
            (conn, None, None)
        };
        conn.busy_timeout(std::time::Duration::from_secs(2))
            .map_err(|e| sql_error(&shown, e))?;
        let mut db = StateDb {
            conn,
            _scratch: scratch,
            watch,
            path: shown,
            session_cols: Vec::new(),
            message_cols: Vec::new(),
            missing_columns: Vec::new(),
        };
        db.session_cols = db.columns("sessions", SESSION_COLUMNS, &["id"])?;
        db.message_cols = db.columns("messages", MESSAGE_COLUMNS, &["session_id", "role"])?;
        Ok(db)
    }

    /// Copies the database and its WAL into a private folder, again when either changed
    /// while being copied; returns the copy's path.
    fn private_copy(
        path: &Path,
        wal_path: &Path,
        shown: &str,
    ) -> Result<(PathBuf, Scratch), ImportError> {
        let scratch = Scratch::new().map_err(|e| ImportError::Io {
            path: std::env::temp_dir().display().to_string(),
            message: format!("cannot make a private folder to read {shown} from: {e}"),
        })?;
        let copy = scratch.dir.join("state.db");
        let copy_wal = sibling(&copy, "-wal");
        let io = |e: std::io::Error| ImportError::Io {
            path: shown.to_string(),
            message: format!("cannot copy it to {}: {e}", scratch.dir.display()),
        };
        for attempt in 0..COPY_ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(std::time::Duration::from_millis(50 << attempt));
            }
            let before = (stamp(path).map_err(io)?, stamp(wal_path).map_err(io)?);
            std::fs::copy(path, &copy).map_err(io)?;
            match std::fs::copy(wal_path, &copy_wal) {
                Ok(_) => {}
                // Checkpointed and removed meanwhile: the stamps below see it.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let _ = std::fs::remove_file(&copy_wal);
                }
                Err(e) => return Err(io(e)),
            }
            let after = (stamp(path).map_err(io)?, stamp(wal_path).map_err(io)?);
            if before == after {
                return Ok((copy, scratch));
            }
        }
        Err(ImportError::Changing {
            path: shown.to_string(),
        })
    }

    /// An SQLite error while reading; reported as a change of the file when it changed
    /// under a lock-free read (a torn read can look like a corrupt database).
    fn sql(&self, e: rusqlite::Error) -> ImportError {
        match self.unchanged() {
            Err(changed) => changed,
            Ok(()) => sql_error(&self.path, e),
        }
    }

    /// For a database read in place without locks: an error when the file changed since it
    /// was opened, as what was read may mix old and new pages.
    fn unchanged(&self) -> Result<(), ImportError> {
        if let Some((file, before)) = &self.watch {
            let now = stamp(file).map_err(|e| ImportError::Io {
                path: self.path.clone(),
                message: e.to_string(),
            })?;
            if now != *before {
                return Err(ImportError::Changing {
                    path: self.path.clone(),
                });
            }
        }
        Ok(())
    }

    /// The wanted columns the table has; errors when the table or a required column is missing.
    fn columns(
        &mut self,
        table: &'static str,
        wanted: &[&'static str],
        required: &[&'static str],
    ) -> Result<Vec<&'static str>, ImportError> {
        let mut have: Vec<String> = Vec::new();
        {
            let mut stmt = self
                .conn
                .prepare(&format!("PRAGMA table_info(\"{table}\")"))
                .map_err(|e| self.sql(e))?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(1))
                .map_err(|e| self.sql(e))?;
            for r in rows {
                have.push(r.map_err(|e| self.sql(e))?);
            }
        }
        self.unchanged()?;
        if have.is_empty() {
            return Err(ImportError::NoTable {
                path: self.path.clone(),
                table,
            });
        }
        let mut present = Vec::new();
        for c in wanted {
            if have.iter().any(|h| h.eq_ignore_ascii_case(c)) {
                present.push(*c);
            } else if required.contains(c) {
                return Err(ImportError::NoColumn {
                    path: self.path.clone(),
                    table,
                    column: c,
                });
            } else {
                self.missing_columns.push(format!("{table}.{c}"));
            }
        }
        Ok(present)
    }

    fn select(cols: &[&str], wanted: &[&str]) -> String {
        wanted
            .iter()
            .map(|c| {
                if cols.contains(c) {
                    format!("\"{c}\"")
                } else {
                    "NULL".to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn session_from(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
        let v = |i: usize| r.get_ref(i);
        Ok(SessionRow {
            id: text(v(0)?).unwrap_or_default(),
            source: text(v(1)?),
            model: text(v(2)?),
            started_at: real(v(3)?),
            ended_at: real(v(4)?),
            end_reason: text(v(5)?),
            input_tokens: count(v(6)?),
            output_tokens: count(v(7)?),
            cache_read_tokens: count(v(8)?),
            cache_write_tokens: count(v(9)?),
            api_call_count: count(v(10)?),
            estimated_cost_usd: real(v(11)?),
            actual_cost_usd: real(v(12)?),
            title: text(v(13)?),
        })
    }

    /// Every session, oldest first.
    pub fn sessions(&self) -> Result<Vec<SessionRow>, ImportError> {
        let order = if self.session_cols.contains(&"started_at") {
            "\"started_at\", \"id\""
        } else {
            "\"id\""
        };
        let sql = format!(
            "SELECT {} FROM sessions ORDER BY {order}",
            Self::select(&self.session_cols, SESSION_COLUMNS)
        );
        self.query(&sql, &[], Self::session_from)
    }

    /// One session by id.
    pub fn session(&self, id: &str) -> Result<SessionRow, ImportError> {
        let sql = format!(
            "SELECT {} FROM sessions WHERE \"id\" = ?1",
            Self::select(&self.session_cols, SESSION_COLUMNS)
        );
        self.query(&sql, &[&id], Self::session_from)?
            .into_iter()
            .next()
            .ok_or_else(|| ImportError::UnknownSession {
                path: self.path.clone(),
                id: id.to_string(),
            })
    }

    /// Every message row of a session in insertion order, inactive rows included.
    pub fn messages(&self, session: &str) -> Result<Vec<MessageRow>, ImportError> {
        // `id` is the rowid alias in every Hermes schema; insertion order is the true order
        // (timestamps can tie, and compaction re-inserts rows with old timestamps).
        let sql = format!(
            "SELECT {}, rowid FROM messages WHERE \"session_id\" = ?1 ORDER BY rowid",
            Self::select(&self.message_cols, MESSAGE_COLUMNS)
        );
        self.query(&sql, &[&session], |r| {
            let v = |i: usize| r.get_ref(i);
            let flag = |i: usize, default: bool| -> rusqlite::Result<bool> {
                Ok(real(v(i)?).map_or(default, |x| x != 0.0))
            };
            Ok(MessageRow {
                id: real(v(0)?).map_or(r.get::<_, i64>(11)?, |x| x as i64),
                role: text(v(2)?).unwrap_or_default(),
                content: text(v(3)?),
                tool_call_id: text(v(4)?),
                tool_calls: text(v(5)?),
                tool_name: text(v(6)?),
                timestamp: real(v(7)?),
                finish_reason: text(v(8)?),
                active: flag(9, true)?,
                compacted: flag(10, false)?,
            })
        })
    }

    /// Message rows per session (for `--list`).
    pub fn message_counts(&self) -> Result<Vec<(String, u64, u64)>, ImportError> {
        self.query(
            "SELECT \"session_id\", COUNT(*), SUM(CASE WHEN \"role\" = 'assistant' THEN 1 ELSE 0 END) FROM messages GROUP BY \"session_id\"",
            &[],
            |r| {
                Ok((
                    text(r.get_ref(0)?).unwrap_or_default(),
                    count(r.get_ref(1)?).unwrap_or(0),
                    count(r.get_ref(2)?).unwrap_or(0),
                ))
            },
        )
    }

    fn query<T>(
        &self,
        sql: &str,
        params: &[&dyn rusqlite::ToSql],
        f: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, ImportError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.sql(e))?;
        let rows = stmt.query_map(params, f).map_err(|e| self.sql(e))?;
        let out = rows
            .collect::<Result<Vec<T>, _>>()
            .map_err(|e| self.sql(e))?;
        self.unchanged()?;
        Ok(out)
    }
}

fn sql_error(path: &str, e: rusqlite::Error) -> ImportError {
    use rusqlite::ErrorCode;
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => ImportError::Locked {
            path: path.to_string(),
        },
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => ImportError::NotSqlite {
            path: path.to_string(),
        },
        _ => ImportError::Sqlite {
            path: path.to_string(),
            message: e.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("loopsim-dbtest-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A WAL-mode database with the two tables, as a writer connection left open.
    fn wal_db(path: &Path) -> Connection {
        let c = Connection::open(path).unwrap();
        c.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;
             CREATE TABLE sessions (id TEXT PRIMARY KEY, started_at REAL);
             CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT);",
        )
        .unwrap();
        c
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn rows_only_in_the_wal_are_read_from_a_private_copy_removed_afterwards() {
        let dir = folder("copy");
        let path = dir.join("state.db");
        let writer = wal_db(&path);
        writer
            .execute("INSERT INTO sessions VALUES ('w1', 1.0)", [])
            .unwrap();
        assert!(std::fs::metadata(sibling(&path, "-wal")).unwrap().len() > 0);
        let before = names(&dir);
        let db = StateDb::open(&path).unwrap();
        let scratch = db._scratch.as_ref().expect("read from a copy").dir.clone();
        assert!(scratch.join("state.db").exists());
        assert_eq!(db.session("w1").unwrap().id, "w1");
        assert!(matches!(
            db.session("nope"),
            Err(ImportError::UnknownSession { .. })
        ));
        drop(db);
        assert!(!scratch.exists(), "the private copy was left behind");
        assert_eq!(names(&dir), before);
        drop(writer);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_that_changes_under_a_lock_free_read_is_an_error_not_a_torn_read() {
        let dir = folder("changed");
        let path = dir.join("state.db");
        let writer = wal_db(&path);
        writer
            .execute("INSERT INTO sessions VALUES ('c1', 1.0)", [])
            .unwrap();
        drop(writer); // checkpointed into state.db, -wal removed; WAL mode stays
        assert!(!sibling(&path, "-wal").exists());
        let db = StateDb::open(&path).unwrap();
        assert!(db._scratch.is_none() && db.watch.is_some());
        assert_eq!(db.sessions().unwrap().len(), 1);
        assert_eq!(names(&dir), ["state.db"]);
        // A checkpoint writing pages meanwhile (here: one more page at the end).
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend(std::iter::repeat_n(0u8, 4096));
        std::fs::write(&path, bytes).unwrap();
        let err = db.sessions().unwrap_err();
        assert!(matches!(err, ImportError::Changing { .. }), "{err}");
        assert!(
            err.to_string()
                .ends_with("the database changed while loopsim read it (Hermes is writing to it); try again when Hermes is idle (nothing was changed)"),
            "{err}"
        );
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_path_with_uri_characters_opens_in_place() {
        let dir = folder("odd").join("a b?c#d%e é");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.db");
        let writer = wal_db(&path);
        writer
            .execute("INSERT INTO sessions VALUES ('o1', 1.0)", [])
            .unwrap();
        drop(writer);
        let db = StateDb::open(&path).unwrap();
        assert!(db.watch.is_some());
        assert_eq!(db.session("o1").unwrap().id, "o1");
        drop(db);
        assert_eq!(names(&dir), ["state.db"]);
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }
}
