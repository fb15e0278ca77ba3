//! Hermes's state database, read-only.
//!
//! The file is opened with SQLite's read-only flag (the WAL is read too, and nothing is
//! written to the database or its WAL). Columns are picked by name, so older and newer schema
//! versions both load; a missing optional column reads as NULL and is reported.

use std::path::Path;

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

/// An open state database.
pub struct StateDb {
    conn: Connection,
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
    /// Opens `path` read-only and checks it is a Hermes state database.
    pub fn open(path: &Path) -> Result<StateDb, ImportError> {
        let shown = path.display().to_string();
        let mut head = [0u8; 16];
        match std::fs::File::open(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ImportError::Missing { path: shown });
            }
            Err(e) => {
                return Err(ImportError::Io {
                    path: shown,
                    message: e.to_string(),
                });
            }
            Ok(mut f) => {
                use std::io::Read;
                let n = f.read(&mut head).unwrap_or(0);
                if n < 16 || &head != b"SQLite format 3\0" {
                    return Err(ImportError::NotSqlite { path: shown });
                }
            }
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| sql_error(&shown, e))?;
        conn.busy_timeout(std::time::Duration::from_secs(2))
            .map_err(|e| sql_error(&shown, e))?;
        let mut db = StateDb {
            conn,
            path: shown,
            session_cols: Vec::new(),
            message_cols: Vec::new(),
            missing_columns: Vec::new(),
        };
        db.session_cols = db.columns("sessions", SESSION_COLUMNS, &["id"])?;
        db.message_cols = db.columns("messages", MESSAGE_COLUMNS, &["session_id", "role"])?;
        Ok(db)
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
                .map_err(|e| sql_error(&self.path, e))?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(1))
                .map_err(|e| sql_error(&self.path, e))?;
            for r in rows {
                have.push(r.map_err(|e| sql_error(&self.path, e))?);
            }
        }
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
        let mut stmt = self
            .conn
            .prepare(sql)
            .map_err(|e| sql_error(&self.path, e))?;
        let rows = stmt
            .query_map(params, f)
            .map_err(|e| sql_error(&self.path, e))?;
        rows.collect::<Result<Vec<T>, _>>()
            .map_err(|e| sql_error(&self.path, e))
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
