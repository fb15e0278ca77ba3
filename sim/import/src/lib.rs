//! # loopsim-import
//!
//! Reads a real Hermes session (its `state.db` rows and, where it still has them, its
//! `agent.log` lines) into a loopsim scenario that replays it: the same calls, arguments,
//! results, timing and tokens, with the guardrail decisions the session recorded. Running the
//! scenario with another profile or config shows where that engine would have warned and
//! stopped, and what it would have saved.
//!
//! The database is opened read-only and never written; nothing is created beside it (see
//! [`db`] for how a database in WAL mode is read).
//!
//! ```
//! use loopsim_import::session::apportion;
//! // Session token totals are spread over calls exactly, in proportion to their context.
//! assert_eq!(apportion(100, &[1, 3]), vec![25, 75]);
//! ```

pub mod agentlog;
pub mod db;
pub mod prices;
pub mod recover;
pub mod scenario;
pub mod session;

use std::path::{Path, PathBuf};

use loopsim_engine::profile::ProfileName;

use crate::db::{SessionRow, StateDb};
use crate::prices::{PriceSource, Prices};
use crate::session::{Rebuilt, TurnEnd};

/// Why a session could not be imported. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: no such file")]
    Missing { path: String },
    #[error("{path}: not a SQLite database")]
    NotSqlite { path: String },
    #[error(
        "{path}: the database is locked by another process; try again when Hermes is idle (nothing was changed)"
    )]
    Locked { path: String },
    #[error(
        "{path}: the database changed while loopsim read it (Hermes is writing to it); try again when Hermes is idle (nothing was changed)"
    )]
    Changing { path: String },
    #[error("{path}: not a Hermes state database: it has no `{table}` table")]
    NoTable { path: String, table: &'static str },
    #[error("{path}: table `{table}` has no `{column}` column, which the import needs")]
    NoColumn {
        path: String,
        table: &'static str,
        column: &'static str,
    },
    #[error("{path}: no session `{id}` (`loopsim import {path} --list` lists them)")]
    UnknownSession { path: String, id: String },
    #[error("{path}: session `{id}` has no model calls to replay")]
    Empty { path: String, id: String },
    #[error("{path}: {message}")]
    Sqlite { path: String, message: String },
    #[error("{path}:{line}: {field}: {message}")]
    Prices {
        path: String,
        line: usize,
        field: String,
        message: String,
    },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

/// What to import.
pub struct Request<'a> {
    pub database: &'a Path,
    pub session: &'a str,
    /// agent.log; by default `logs/agent.log` beside the database (Hermes's home layout).
    pub agent_log: Option<&'a Path>,
    pub prices: &'a Prices,
    /// The profile the scenario names (its turn rules and hashing; `--profile` at replay
    /// swaps it). `None`: hermes-0.19.0, or hermes-main when the record shows stall guards,
    /// which 0.19.0 does not have.
    pub profile: Option<ProfileName>,
}

/// An imported session: the scenario text and what went into it.
pub struct Imported {
    pub name: String,
    pub scenario: String,
    pub session: SessionRow,
    pub rebuilt: Rebuilt,
    pub provenance: session::Provenance,
    pub agent_log: Option<PathBuf>,
    /// Lines agent.log had for this session.
    pub logged_calls: usize,
    /// What the reader should know about the figures.
    pub warnings: Vec<String>,
    pub price: Option<PriceSource>,
    pub missing_columns: Vec<String>,
    pub estimated: Vec<String>,
    pub note: String,
    /// The profile the scenario names.
    pub profile: ProfileName,
}

/// `1 turn`, `2 turns`.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// A file-name-safe scenario name for a session id.
fn scenario_name(id: &str) -> String {
    let clean: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("hermes-{clean}")
}

/// Reads one session and writes its scenario (in memory).
pub fn import(req: &Request<'_>) -> Result<Imported, ImportError> {
    let db = StateDb::open(req.database)?;
    let shown = req.database.display().to_string();
    let row = db.session(req.session)?;
    let rows = db.messages(req.session)?;
    let mut rebuilt = session::rebuild(&rows, &row);
    if rebuilt.model_calls() == 0 {
        return Err(ImportError::Empty {
            path: shown,
            id: req.session.to_string(),
        });
    }
    let default_log = req
        .database
        .parent()
        .map(|d| d.join("logs").join("agent.log"));
    let log_path = match req.agent_log {
        Some(p) => Some(p.to_path_buf()),
        None => default_log.filter(|p| p.exists()),
    };
    let log = match &log_path {
        Some(p) => agentlog::read(p, req.session).map_err(|e| ImportError::Io {
            path: p.display().to_string(),
            message: e.to_string(),
        })?,
        None => Default::default(),
    };
    // Lines are paired with calls by number. A log with more calls than the record (a retry
    // after a malformed reply is logged but leaves no row) would misplace every figure after
    // it, so then none is used.
    let mut warnings = Vec::new();
    let logged_lines = log.len();
    let calls_recorded = rebuilt.model_calls() as u64;
    let log = match log.keys().next_back() {
        Some(&n) if n > calls_recorded => {
            warnings.push(format!(
                "agent.log numbers {n} calls for this session but the record has {calls_recorded}; its figures cannot be paired with calls, so all are estimated"
            ));
            Default::default()
        }
        _ => log,
    };
    if let Some(n) = row
        .api_call_count
        .filter(|n| *n > 0 && *n != calls_recorded)
    {
        warnings.push(format!(
            "the session counts {n} API calls; {calls_recorded} model calls are in its rows (retries and auxiliary calls leave none)"
        ));
    }
    let prov = session::fill_figures(&mut rebuilt, &row, &log);
    let mut bad_args = 0;
    for c in rebuilt
        .turns
        .iter_mut()
        .flat_map(|t| t.calls.iter_mut())
        .flat_map(|c| c.calls.iter_mut())
    {
        if loopsim_engine::json::parse(c.args_json.as_bytes()).is_err() {
            c.args_json = "{}".into();
            bad_args += 1;
        }
    }
    let model = row.model.clone();
    let priced = model.as_deref().and_then(|m| req.prices.lookup(m));
    let price = match &priced {
        Some((p, _)) => {
            let cw = p
                .cache_write
                .map_or(String::new(), |w| format!(", cache_write = {w:?}"));
            format!(
                "{{ input = {:?}, cache_read = {:?}{cw}, output = {:?} }}",
                p.input, p.cache_read, p.output
            )
        }
        None => "{ unknown = true }".to_string(),
    };
    let mut estimated = vec!["tool_latency".to_string()];
    if prov.logged_calls < prov.calls {
        estimated.extend(
            [
                "latency",
                "input_tokens",
                "output_tokens",
                "cache_read_tokens",
            ]
            .map(String::from),
        );
    }
    if row.cache_write_tokens.unwrap_or(0) > 0 {
        estimated.push("cache_write_tokens".into());
    }
    let calls = rebuilt.model_calls();
    let figures = if prov.logged_calls == calls {
        format!("Latency and tokens of all {calls} calls come from agent.log")
    } else {
        let how = if prov.session_totals {
            "the session's token totals spread over the calls by context size"
        } else {
            "tokens from text length, as the session has no token totals"
        };
        format!(
            "Latency and tokens: agent.log for {} of {calls} calls; the rest are estimated (latency from message timestamps, {how})",
            prov.logged_calls
        )
    };
    let price_text = match &priced {
        Some((_, PriceSource::BuiltIn(n))) => format!("built-in list price for {n}"),
        Some((_, PriceSource::File(f))) => format!("from {f}"),
        None => "unknown".into(),
    };
    let source = row.source.clone().filter(|s| !s.trim().is_empty());
    let note = format!(
        "Imported from {shown}, session {} ({}, {}): {}, {}, {}. {figures}. Tool durations are estimated from message timestamps. Price: {price_text}.",
        row.id,
        source.as_deref().unwrap_or("unknown source"),
        model.as_deref().unwrap_or("unknown model"),
        plural(rebuilt.turns.len(), "turn"),
        plural(calls, "model call"),
        plural(rebuilt.tool_calls(), "tool call"),
    );
    let stall_guards = rebuilt
        .turns
        .iter()
        .flat_map(|t| &t.calls)
        .flat_map(|c| &c.calls)
        .any(|c| {
            c.notice.is_some()
                || c.decision.as_ref().is_some_and(|d| {
                    matches!(
                        d.code,
                        loopsim_engine::guardrails::DecisionCode::IdenticalCallStreakHalt
                            | loopsim_engine::guardrails::DecisionCode::IdenticalCycleHalt
                    )
                })
        })
        || rebuilt.stubs_restored + rebuilt.stubs_unresolved > 0;
    let profile = req.profile.unwrap_or(if stall_guards {
        ProfileName::HermesMain
    } else {
        ProfileName::Hermes0_19_0
    });
    let stopped = rebuilt.turns.iter().any(|t| t.end != TurnEnd::Answer);
    // Every turn's start plus every call's time bounds the replay's span.
    let busy: f64 = rebuilt
        .turns
        .iter()
        .flat_map(|t| &t.calls)
        .map(|c| c.latency_s + c.calls.iter().map(|t| t.latency_s).sum::<f64>())
        .sum();
    let last_turn = rebuilt.turns.last().map_or(0.0, |t| t.at_s);
    let horizon_s = (1.5 * (last_turn + busy) + 3_600.0).max(86_400.0);
    let name = scenario_name(&row.id);
    let description = format!(
        "Hermes session {} as recorded{}.",
        row.id,
        row.title
            .as_deref()
            .map_or(String::new(), |t| format!(": {t}"))
    );
    let provenance = format!("loopsim import {shown} --session {}", row.id);
    let header = scenario::Header {
        name: &name,
        description: &description,
        provenance: &provenance,
        label: if stopped { "loop" } else { "healthy" },
        profile: profile.as_str(),
        platform: source.as_deref(),
        horizon_s,
        price,
        database: &shown,
        session: &row.id,
        model: model.as_deref(),
        estimated: &estimated,
        note: &note,
    };
    let text = scenario::render(&header, &rebuilt);
    let mut missing = db.missing_columns.clone();
    if bad_args > 0 {
        missing.push(format!(
            "{bad_args} tool calls had arguments that are not JSON (replayed as {{}})"
        ));
    }
    Ok(Imported {
        name,
        scenario: text,
        session: row,
        rebuilt,
        provenance: prov,
        agent_log: log_path,
        logged_calls: logged_lines,
        warnings,
        price: priced.map(|p| p.1),
        missing_columns: missing,
        estimated,
        note,
        profile,
    })
}

/// One line of `loopsim import DB --list`.
#[derive(Clone, Debug, PartialEq)]
pub struct Listing {
    pub session: SessionRow,
    pub calls: u64,
    pub tokens: u64,
    /// Hermes's own cost figure, else one from the price table, else None (unknown).
    pub cost_usd: Option<f64>,
}

/// Every session in the database with its calls, tokens and cost.
pub fn list(database: &Path, prices: &Prices) -> Result<(Vec<Listing>, Vec<String>), ImportError> {
    let db = StateDb::open(database)?;
    let counts = db.message_counts()?;
    let rows = db.sessions()?;
    let out = rows
        .into_iter()
        .map(|s| {
            let assistant = counts.iter().find(|c| c.0 == s.id).map_or(0, |c| c.2);
            let calls = s.api_call_count.filter(|n| *n > 0).unwrap_or(assistant);
            let input = s.input_tokens.unwrap_or(0);
            let read = s.cache_read_tokens.unwrap_or(0);
            let write = s.cache_write_tokens.unwrap_or(0);
            let output = s.output_tokens.unwrap_or(0);
            let tokens = input
                .saturating_add(read)
                .saturating_add(write)
                .saturating_add(output);
            let own = s
                .actual_cost_usd
                .filter(|c| *c > 0.0)
                .or(s.estimated_cost_usd.filter(|c| *c > 0.0));
            let table = s
                .model
                .as_deref()
                .and_then(|m| prices.lookup(m))
                .map(|(p, _)| {
                    (input as f64 * p.input
                        + read as f64 * p.cache_read
                        + write as f64 * p.cache_write.unwrap_or(p.input)
                        + output as f64 * p.output)
                        / 1e6
                });
            Listing {
                calls,
                tokens,
                // Without token totals a table price would say $0.00 for unknown usage.
                cost_usd: own.or(table.filter(|_| tokens > 0)),
                session: s,
            }
        })
        .collect();
    Ok((out, db.missing_columns.clone()))
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM` UTC.
pub fn utc(epoch_s: f64) -> String {
    if !epoch_s.is_finite() {
        return "-".into();
    }
    let secs = epoch_s.floor() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3_600,
        rem % 3_600 / 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0.0), "1970-01-01 00:00");
        assert_eq!(super::utc(1_796_040_000.0), "2026-11-30 12:00");
        assert_eq!(super::utc(951_782_400.0), "2000-02-29 00:00");
    }
}
