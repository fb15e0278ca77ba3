//! `loopsim import`: a Hermes session as a scenario and trace that replay it.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use loopsim_engine::profile::ProfileName;
use loopsim_import::plural;
use loopsim_import::prices::Prices;
use loopsim_report::markdown::ReportRun;
use loopsim_report::metrics::RunMetrics;
use loopsim_report::output::Outputs;
use loopsim_world::scenario::Scenario;
use loopsim_world::sim::{RunOptions, RunSummary};

use crate::args::Format;
use crate::out::{emit, say};
use crate::run_to_memory;
use loopsim_report::report_files;
use loopsim_report::shell::quote;

#[allow(clippy::too_many_arguments)]
pub fn run(
    database: &std::path::Path,
    session: Option<&str>,
    list: bool,
    agent_log: Option<&std::path::Path>,
    prices: Option<&std::path::Path>,
    profile: Option<ProfileName>,
    out: Option<&PathBuf>,
    format: Format,
) -> Result<()> {
    let prices = match prices {
        Some(p) => Prices::with_file(p)?,
        None => Prices::built_in(),
    };
    if list {
        return list_sessions(database, &prices, format);
    }
    let session = session.context("--session is required (or --list)")?;
    let done = import_session(database, session, agent_log, &prices, profile, out)?;
    match format {
        Format::Json => print_json(&done),
        Format::Text => print_text(&done),
    }
}

/// `--list`: the database's sessions, one row each.
fn list_sessions(database: &std::path::Path, prices: &Prices, format: Format) -> Result<()> {
    let (rows, missing) = loopsim_import::list(database, prices)?;
    if format == Format::Json {
        let sessions: Vec<serde_json::Value> = rows
            .iter()
            .map(|l| {
                let s = &l.session;
                serde_json::json!({
                    "session": s.id,
                    "source": s.source,
                    "model": s.model,
                    "started_utc": s.started_at.map(loopsim_import::utc),
                    "calls": l.calls,
                    "tokens": l.tokens,
                    "cost_usd": l.cost_usd,
                })
            })
            .collect();
        emit!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "sessions": sessions,
                "missing_columns": missing,
            }))?
        );
        return Ok(());
    }
    say!("| session | source | model | started (UTC) | calls | tokens | cost |");
    say!("| --- | --- | --- | --- | --- | --- | --- |");
    for l in &rows {
        let s = &l.session;
        say!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            s.id,
            s.source.as_deref().unwrap_or("-"),
            s.model.as_deref().unwrap_or("-"),
            s.started_at.map_or("-".into(), loopsim_import::utc),
            l.calls,
            l.tokens,
            l.cost_usd.map_or("unknown".into(), |c| format!("${c:.2}"))
        );
    }
    if !missing.is_empty() {
        say!("columns this database lacks: {}", missing.join(", "));
    }
    Ok(())
}

/// An imported session, with its replay as recorded and where it was written.
struct Imported {
    imported: loopsim_import::Imported,
    summary: RunSummary,
    dir: PathBuf,
    /// The scenario file's path as shown.
    shown: String,
}

/// Imports one session, replays it as recorded (it must make every recorded call) and writes
/// the scenario, trace and report together, or nothing.
fn import_session(
    database: &std::path::Path,
    session: &str,
    agent_log: Option<&std::path::Path>,
    prices: &Prices,
    profile: Option<ProfileName>,
    out: Option<&PathBuf>,
) -> Result<Imported> {
    let imported = loopsim_import::import(&loopsim_import::Request {
        database,
        session,
        agent_log,
        prices,
        profile,
    })?;
    let dir = out
        .cloned()
        .unwrap_or_else(|| PathBuf::from("imported").join(&imported.name));
    let scenario_path = dir.join("scenario.toml");
    let shown = scenario_path.display().to_string();
    // Validated and run before anything is written.
    let sc = Scenario::parse(&imported.scenario, &shown)
        .with_context(|| "the imported scenario does not load (a loopsim bug)")?;
    let opts = RunOptions {
        record_series: true,
        ..RunOptions::default()
    };
    let (summary, trace_bytes) = run_to_memory(&sc, &opts)?;
    let r = &imported.rebuilt;
    if summary.total.model_calls != r.model_calls() as u64 || summary.hit_horizon {
        bail!(
            "{}: session {}: the replay makes {} of the {} recorded model calls{}; nothing was written (please report this session's shape)",
            database.display(),
            imported.session.id,
            summary.total.model_calls,
            r.model_calls(),
            if summary.hit_horizon {
                " before its horizon"
            } else {
                ""
            }
        );
    }
    // Every file is staged and put in place together (the scenario last), so a failure
    // leaves neither half a file nor a new scenario beside an old trace.
    let mut outputs = Outputs::new();
    let rerun = format!(
        "loopsim replay {}",
        quote(&dir.join("trace.jsonl").display().to_string())
    );
    let runs = vec![ReportRun {
        label: "recorded".into(),
        metrics: RunMetrics::from_summary(&summary, ""),
        summary: summary.clone(),
    }];
    report_files::stage(&mut outputs, &dir, &runs, &[], &rerun, &trace_bytes)?;
    outputs
        .write(&scenario_path, imported.scenario.as_bytes())
        .with_context(|| format!("{}: cannot write", dir.display()))?;
    outputs
        .commit()
        .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", dir.display()))?;
    Ok(Imported {
        summary: runs.into_iter().next().expect("one run").summary,
        imported,
        dir,
        shown,
    })
}

/// What was imported and where it was written, as JSON.
fn print_json(done: &Imported) -> Result<()> {
    let (imported, r, s, dir) = (
        &done.imported,
        &done.imported.rebuilt,
        &done.summary,
        &done.dir,
    );
    emit!(
        "{}",
        serde_json::to_string_pretty(&serde_json::json!({
            "session": imported.session.id,
            "rows": r.rows,
            "turns": r.turns.len(),
            "model_calls": r.model_calls(),
            "tool_calls": r.tool_calls(),
            "profile": imported.profile.as_str(),
            "estimated": imported.estimated,
            "warnings": imported.warnings,
            "missing_columns": imported.missing_columns,
            "as_recorded": s,
            "scenario": done.shown,
            "trace": dir.join("trace.jsonl").display().to_string(),
        }))?
    );
    Ok(())
}

/// What was imported, what was recorded and estimated, and where it was written.
fn print_text(done: &Imported) -> Result<()> {
    let (s, dir, shown) = (&done.summary, &done.dir, &done.shown);
    print_recorded(&done.imported)?;
    print_caveats(&done.imported)?;
    say!(
        "as recorded: {} calls, {} input tokens, {}, {:.1} min; exits {}",
        s.total.model_calls,
        s.total.input_tokens,
        loopsim_report::terminal::usd(s.total.cost_usd(), s.price_unknown),
        s.duration_us as f64 / 60e6,
        s.agents[0].exit_reasons.join(", ")
    );
    say!(
        "wrote {shown} and {}/{{trace.jsonl, summary.md, summary.json, runs.csv}} and plots",
        dir.display()
    );
    say!(
        "what if: loopsim replay {} --profile hermes-main [--platform telegram] [--config my-config.yaml]",
        dir.join("trace.jsonl").display()
    );
    Ok(())
}

/// The session's shape and the guardrail actions Hermes recorded in it.
fn print_recorded(imported: &loopsim_import::Imported) -> Result<()> {
    let r = &imported.rebuilt;
    let decisions: Vec<String> = r
        .turns
        .iter()
        .flat_map(|t| &t.calls)
        .flat_map(|c| &c.calls)
        .filter_map(|c| c.decision.as_ref())
        .map(|d| {
            format!(
                "{} {} (count {})",
                d.action.as_str(),
                d.code.as_str(),
                d.count
            )
        })
        .collect();
    say!(
        "session {}: {} rows ({} inactive, {} re-inserted by compaction), {}, {}, {}",
        imported.session.id,
        r.rows,
        r.inactive_rows,
        r.compaction_rows,
        plural(r.turns.len(), "turn"),
        plural(r.model_calls(), "model call"),
        plural(r.tool_calls(), "tool call")
    );
    let notices = r
        .turns
        .iter()
        .flat_map(|t| &t.calls)
        .flat_map(|c| &c.calls)
        .filter(|c| c.notice.is_some())
        .count();
    say!(
        "recorded guardrail actions: {}; {}",
        if decisions.is_empty() {
            "none".to_string()
        } else {
            decisions.join(", ")
        },
        plural(notices, "stall-guard notice")
    );
    if r.stubs_restored + r.stubs_unresolved > 0 {
        say!(
            "identical-result references: {} restored to the earlier result, {} not found",
            r.stubs_restored,
            r.stubs_unresolved
        );
    }
    Ok(())
}

/// What the replay took from where, what it assumed, and what the session's record lacks.
fn print_caveats(imported: &loopsim_import::Imported) -> Result<()> {
    let r = &imported.rebuilt;
    say!("{}", imported.note);
    say!("scenario profile: {}", imported.profile);
    match &imported.agent_log {
        Some(p) => say!(
            "agent.log: {} ({} lines for this session)",
            p.display(),
            imported.logged_calls
        ),
        None => say!("agent.log: none found (give --agent-log)"),
    }
    say!("estimated: {}", imported.estimated.join(", "));
    if !imported.missing_columns.is_empty() {
        say!(
            "not in this database: {}",
            imported.missing_columns.join(", ")
        );
    }
    if r.runtime_replies + r.refused_calls > 0 {
        say!(
            "not model calls: {} replies Hermes wrote itself (after a halt or an interrupt); refused calls: {}",
            r.runtime_replies,
            r.refused_calls
        );
    }
    if r.clamped_times > 0 {
        say!(
            "timestamps: {} rows jumped by more than 30 days and were taken as no time passing",
            r.clamped_times
        );
    }
    for w in &imported.warnings {
        say!("warning: {w}");
    }
    if r.orphan_results + r.missing_results > 0 {
        say!(
            "unmatched: {} tool results without a call, {} calls without a result",
            r.orphan_results,
            r.missing_results
        );
    }
    Ok(())
}
