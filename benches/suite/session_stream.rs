//! A guard request stream built from real Hermes sessions, so the guard is also measured on
//! what Hermes itself stores rather than on generated calls only.
//!
//! `tests/import/make_sessions.py` writes its sessions through Hermes 0.19.0's own session
//! store (`hermes_state.SessionDB`) into `target/loopsim-bench/sessions/state.db`; they are
//! read back with the importer's database reader (`loopsim_import::db::StateDb`, the reader
//! `loopsim import` uses) and replayed as requests:
//!
//! - a session's start and each user message: `{"op":"reset"}` (a new turn; two in a row are
//!   written once);
//! - each tool call of an assistant message: `{"op":"before","tool":T,"args":A}`, then its
//!   result row as `{"op":"after","tool":T,"args":A,"result":R}` with no `failed` field, so
//!   the guard's own classifier decides, as it does for imported sessions. `A` is the
//!   arguments text exactly as Hermes stored it (the JSON text inside the stored string);
//!   `R` is the tool row's stored content, guardrail lines Hermes appended included.
//!
//! Rows are walked as stored, in insertion order, inactive ones and the rows a compaction
//! inserted again included: the stream is what the database holds, not a rebuilt history.
//! Calls without a result row are left out.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use loopsim_engine::json;
use loopsim_import::db::{MessageRow, StateDb};

use crate::support::{Ctx, root};

/// Writes (once; reuses an existing file) a guard request stream of exactly `lines` lines built from
/// real Hermes sessions: the sessions `tests/import/make_sessions.py` writes through Hermes's own
/// session store, read back with loopsim's importer's database reader. Returns its path.
pub fn ensure_session_stream(ctx: &Ctx, lines: u64) -> Result<PathBuf, String> {
    let path = ctx
        .out_dir
        .join(format!("guard-imported-sessions-{lines}.jsonl"));
    if path.exists() {
        return Ok(path);
    }
    let py = ctx
        .python
        .as_ref()
        .ok_or_else(|| ctx.python_missing.clone())?;
    let home = ctx.out_dir.join("sessions");
    make_sessions(py, &home)?;
    let pass = session_lines(&home.join("state.db"))?;
    if pass.is_empty() {
        return Err(format!(
            "{}: no requests in the sessions",
            home.join("state.db").display()
        ));
    }
    let mut out = String::new();
    for line in pass
        .iter()
        .cycle()
        .take(usize::try_from(lines).unwrap_or(usize::MAX))
    {
        out.push_str(line);
        out.push('\n');
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, out).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// Runs `make_sessions.py` into a fresh `home`: the script creates its sessions and would
/// fail on the ids an earlier run left there.
fn make_sessions(py: &Path, home: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(home) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", home.display())),
    }
    let script = root().join("tests/import/make_sessions.py");
    let out = Command::new(py)
        .arg(&script)
        .arg(home)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", py.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed ({}): {}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// One pass over every session of `db`, in the order `StateDb::sessions` gives: the request
/// lines, without their newlines.
fn session_lines(db: &Path) -> Result<Vec<String>, String> {
    let db = StateDb::open(db).map_err(|e| e.to_string())?;
    let mut lines = Vec::new();
    for session in db.sessions().map_err(|e| e.to_string())? {
        let rows = db.messages(&session.id).map_err(|e| e.to_string())?;
        push_reset(&mut lines);
        session_requests(&rows, &mut lines);
    }
    Ok(lines)
}

const RESET: &str = "{\"op\":\"reset\"}";

/// A turn boundary; a second one right after the first would only repeat it.
fn push_reset(lines: &mut Vec<String>) {
    if lines.last().map(String::as_str) != Some(RESET) {
        lines.push(RESET.to_string());
    }
}

/// The requests of one session's rows.
fn session_requests(rows: &[MessageRow], lines: &mut Vec<String>) {
    let mut claimed = vec![false; rows.len()];
    for (i, row) in rows.iter().enumerate() {
        match row.role.as_str() {
            "user" => push_reset(lines),
            "assistant" => {
                let calls = row
                    .tool_calls
                    .as_deref()
                    .map(tool_calls)
                    .unwrap_or_default();
                for call in calls {
                    let Some(j) = result_row(rows, i, call.id.as_deref(), &claimed) else {
                        continue;
                    };
                    claimed[j] = true;
                    let tool = js(&call.name);
                    let args = &call.args;
                    lines.push(format!(
                        "{{\"op\":\"before\",\"tool\":{tool},\"args\":{args}}}"
                    ));
                    let result = rows[j].content.as_deref().map_or("null".to_string(), js);
                    lines.push(format!(
                        "{{\"op\":\"after\",\"tool\":{tool},\"args\":{args},\"result\":{result}}}"
                    ));
                }
            }
            _ => {}
        }
    }
}

/// The row holding the result of the call the assistant row `i` made: the first unclaimed
/// tool row after it with the call's id, else (no id, or no row with it) the next unclaimed
/// row of the tool rows that follow it.
fn result_row(rows: &[MessageRow], i: usize, id: Option<&str>, claimed: &[bool]) -> Option<usize> {
    let open = |j: &usize| rows[*j].role == "tool" && !claimed[*j];
    id.and_then(|id| {
        (i + 1..rows.len()).find(|j| open(j) && rows[*j].tool_call_id.as_deref() == Some(id))
    })
    .or_else(|| {
        (i + 1..rows.len())
            .take_while(|j| rows[*j].role == "tool")
            .find(open)
    })
}

/// One stored tool call.
struct Call {
    id: Option<String>,
    name: String,
    /// The arguments as a JSON text fit for a request line.
    args: String,
}

/// The calls of an assistant row's `tool_calls` JSON, read as the importer reads them (both
/// shapes Hermes stores), with the arguments made fit for a request line.
fn tool_calls(text: &str) -> Vec<Call> {
    loopsim_import::session::parse_tool_calls(text)
        .into_iter()
        .map(|(id, name, args)| Call {
            id,
            name,
            args: stored_args(&args),
        })
        .collect()
}

/// The stored arguments string as the request's `args`: its own text when it is one strict
/// JSON value on one line (what Hermes stores, `json.dumps` of the model's arguments), kept
/// byte for byte so the guard hashes what Hermes hashed; otherwise the string itself as a
/// JSON string (a non-object, which the guard counts as `{}`, as Hermes does).
fn stored_args(s: &str) -> String {
    let text = s.trim_matches([' ', '\t', '\r', '\n']);
    if !text.is_empty()
        && !text.contains(['\n', '\r'])
        && json::parse_strict(text.as_bytes()).is_ok()
    {
        text.to_string()
    } else {
        js(s)
    }
}

/// A JSON string literal.
fn js(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}
