//! `loopsim import` on real Hermes databases: sessions written by Hermes's own session store
//! (`tests/import/make_sessions.py` through the installed hermes-agent 0.19.0), read back,
//! replayed as recorded and under other engines.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use common::{loopsim_in as loopsim, output_text as text};

/// `loopsim replay ARGS` in `dir`: its output, and the counterfactual row of its table.
fn what_if(dir: &Path, args: &[&str]) -> (String, String) {
    let mut all = vec!["replay"];
    all.extend_from_slice(args);
    let out = text(&loopsim(dir, &all));
    let row = out
        .lines()
        .find(|l| l.starts_with("| counterfactual"))
        .unwrap_or_else(|| panic!("no counterfactual row: {out}"))
        .to_string();
    (out, row)
}

fn fresh(name: &str) -> PathBuf {
    let d = common::root()
        .join("target/tmp")
        .join(format!("import-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn python(py: &Path, code: &str, args: &[&Path]) -> Output {
    let o = Command::new(py)
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "python: {}", text(&o));
    o
}

/// Writes the sessions with Hermes's session store into `home` (a HERMES_HOME).
fn make_sessions(py: &Path, home: &Path, extra: &[&str]) {
    let o = Command::new(py)
        .arg(common::root().join("tests/import/make_sessions.py"))
        .arg(home)
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "make_sessions.py: {}", text(&o));
}

/// One closed database shared by the tests that only read it.
fn shared() -> Option<(PathBuf, PathBuf)> {
    static HOME: OnceLock<Option<(PathBuf, PathBuf)>> = OnceLock::new();
    HOME.get_or_init(|| {
        let py = common::python_or_skip(common::Venv::Hermes, "the state.db import tests")?;
        let d = fresh("shared");
        make_sessions(&py, &d.join("home"), &[]);
        Some((d.join("home"), py))
    })
    .clone()
}

fn sha(path: &Path) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

/// Import one session into `dir`, returning its stdout.
fn import(dir: &Path, db: &Path, session: &str, more: &[&str]) -> String {
    let mut args = vec!["import", db.to_str().unwrap(), "--session", session];
    args.extend_from_slice(more);
    let o = loopsim(dir, &args);
    assert!(o.status.success(), "import {session}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn spin_wait_is_stopped_by_hermes_main_on_telegram_at_spin_call_5() {
    let Some((home, _)) = shared() else { return };
    let db = home.join("state.db");
    let before = sha(&db);
    let dir = fresh("spin");
    let out = import(&dir, &db, "spin-1", &[]);
    assert!(
        out.contains("1 turn, 43 model calls, 43 tool calls"),
        "{out}"
    );
    assert!(
        out.contains("Latency and tokens of all 43 calls come from agent.log"),
        "{out}"
    );
    assert!(out.contains("exits interrupted_by_user"), "{out}");
    assert_eq!(sha(&db), before, "the database was modified");
    // Deterministic: a second import gives the same scenario and the same trace events.
    import(&dir, &db, "spin-1", &["--out", "again"]);
    let a = dir.join("imported/hermes-spin-1");
    let b = dir.join("again");
    assert_eq!(
        std::fs::read(a.join("scenario.toml")).unwrap(),
        std::fs::read(b.join("scenario.toml")).unwrap()
    );
    // Between the header and the footer (they name the scenario's path, which differs).
    let events = |p: PathBuf| {
        let t = std::fs::read_to_string(p).unwrap();
        let lines: Vec<String> = t.lines().map(str::to_string).collect();
        lines[1..lines.len() - 1].to_vec()
    };
    let (ea, eb) = (events(a.join("trace.jsonl")), events(b.join("trace.jsonl")));
    assert!(ea.len() > 100 && ea == eb, "imports differ");
    // Per-call figures from agent.log: call k had a prompt of 12000 + 150 k tokens.
    let sc = std::fs::read_to_string(dir.join("imported/hermes-spin-1/scenario.toml")).unwrap();
    assert!(sc.contains("input_tokens = 12150\ncache_read_tokens = 11750"));
    assert!(sc.contains("platform = \"telegram\""));
    let trace = "imported/hermes-spin-1/trace.jsonl";
    let same = loopsim(&dir, &["replay", trace]);
    assert!(
        text(&same).starts_with("identical: "),
        "replay: {}",
        text(&same)
    );
    // Three ordinary calls, then the spin: the streak notice at spin call 3 (call 6) and
    // identical_call_streak_halt at spin call 5 (call 8), as telegram hard-stops.
    let (t, cf) = what_if(&dir, &[trace, "--profile", "hermes-main"]);
    assert!(
        cf.contains("| 8 |")
            && cf.contains("call 6")
            && cf.contains("call 8 (identical_call_streak_halt)"),
        "{t}"
    );
    assert!(t.contains("saved: 35 calls"), "{t}");
    let report = dir.join("reports/hermes-spin-1-what-if-hermes-main");
    let md = std::fs::read_to_string(report.join("summary.md")).unwrap();
    assert!(
        md.contains("What each run would have saved (against recorded (telegram))"),
        "{md}"
    );
    assert!(
        md.contains("| what if (hermes-main telegram) | 35 |"),
        "{md}"
    );
    assert!(md.contains("agent.log"), "{md}");
    assert!(report.join("cost.png").exists());
    // The what-if's own timeline and budget sit beside the recorded run's.
    for stem in ["timeline", "budget"] {
        assert!(
            report
                .join(format!("{stem}-what-if-hermes-main-telegram.png"))
                .exists(),
            "{stem}"
        );
        let a = std::fs::read(report.join(format!("{stem}.png"))).unwrap();
        let b =
            std::fs::read(report.join(format!("{stem}-what-if-hermes-main-telegram.png"))).unwrap();
        assert_ne!(a, b, "the what-if {stem} plot draws the what-if run");
    }
    // Its rerun line reproduces exactly this what-if.
    assert!(
        t.contains(&format!(
            "rerun: loopsim replay {trace} --profile hermes-main"
        )),
        "{t}"
    );
    // On the CLI (attended) hermes-main only warns: nothing saved.
    let (cli, _) = what_if(
        &dir,
        &[trace, "--profile", "hermes-main", "--platform", "cli"],
    );
    assert!(cli.contains("saved: 0 calls"), "{cli}");
    // The scenario's [expect] is the record: `check` proves the replay faithful.
    let scenario = "imported/hermes-spin-1/scenario.toml";
    let check = loopsim(&dir, &["check", scenario]);
    assert!(
        check.status.success() && text(&check).contains("1 passed, 0 failed"),
        "{}",
        text(&check)
    );
    // A sweep changes the config, so the engine decides (not the record).
    let sweep = loopsim(
        &dir,
        &[
            "sweep",
            scenario,
            "--grid",
            "tool_loop_guardrails.hard_stop_enabled=false,true",
            "--seeds",
            "0..1",
            "--profiles",
            "hermes-main",
            "--platform",
            "cli",
            "--out",
            "sweep",
        ],
    );
    assert!(sweep.status.success(), "{}", text(&sweep));
    let csv = std::fs::read_to_string(dir.join("sweep/sweep.csv")).unwrap();
    let calls: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(11).unwrap())
        .collect();
    assert_eq!(calls, ["43", "43", "8"], "{csv}");
}

#[test]
fn recorded_refusal_and_warnings_match_the_built_in_0_19_engine() {
    let Some((home, _)) = shared() else { return };
    let dir = fresh("blocked");
    let out = import(&dir, &home.join("state.db"), "blocked-1", &[]);
    assert!(
        out.contains("warn idempotent_no_progress_warning (count 2)")
            && out.contains("block idempotent_no_progress_block (count 5)"),
        "{out}"
    );
    assert!(
        out.contains("exits guardrail_halt, text_response(finish_reason=stop)"),
        "{out}"
    );
    // Hermes's halt reply is not a model call: 6 calls in turn 1, one in turn 2.
    assert!(
        out.contains("2 turns, 7 model calls, 6 tool calls"),
        "{out}"
    );
    std::fs::write(
        dir.join("hard.yaml"),
        "tool_loop_guardrails:\n  hard_stop_enabled: true\n",
    )
    .unwrap();
    let trace = "imported/hermes-blocked-1/trace.jsonl";
    // loopsim's 0.19.0 engine with the session's config makes the same decisions at the same
    // calls: the traces do not diverge.
    let (same, _) = what_if(
        &dir,
        &[trace, "--profile", "hermes-0.19.0", "--config", "hard.yaml"],
    );
    assert!(same.contains("no divergence: the same events"), "{same}");
    assert!(
        same.contains("call 6 (idempotent_no_progress_block)"),
        "{same}"
    );
    // Without hard stops the refusal never comes; the record has no call after it.
    let (lax, cf) = what_if(&dir, &[trace, "--profile", "hermes-0.19.0"]);
    assert!(cf.ends_with("| - |"), "{lax}");
    // A stricter threshold stops it earlier and saves calls.
    std::fs::write(
        dir.join("strict.yaml"),
        "tool_loop_guardrails:\n  hard_stop_enabled: true\n  hard_stop_after:\n    idempotent_no_progress: 3\n",
    )
    .unwrap();
    let (strict, _) = what_if(&dir, &[trace, "--config", "strict.yaml"]);
    assert!(
        strict.contains("call 4 (idempotent_no_progress_block)"),
        "{strict}"
    );
    assert!(strict.contains("saved: 2 calls"), "{strict}");
}

#[test]
fn newer_hermes_notices_and_streak_halt_are_read_back_and_match_hermes_main() {
    let Some((home, _)) = shared() else { return };
    let dir = fresh("newer");
    let out = import(&dir, &home.join("state.db"), "spin-newer-1", &[]);
    assert!(
        out.contains("halt identical_call_streak_halt (count 5); 3 stall-guard notices"),
        "{out}"
    );
    // Stall guards are not in 0.19.0: the scenario names hermes-main.
    assert!(out.contains("scenario profile: hermes-main"), "{out}");
    assert!(out.contains("exits guardrail_halt"), "{out}");
    let trace = "imported/hermes-spin-newer-1/trace.jsonl";
    // The recorded notices and halt are exactly what loopsim's hermes-main engine does.
    let (same, _) = what_if(&dir, &[trace, "--profile", "hermes-main"]);
    assert!(same.contains("no divergence: the same events"), "{same}");
    assert!(
        same.contains("call 4 | call 6 (identical_call_streak_halt)"),
        "{same}"
    );
    // Without execute_code stripping nothing is caught: the record's six calls all run.
    let (old, cf) = what_if(&dir, &[trace, "--profile", "hermes-v0.21.5"]);
    assert!(cf.contains("| 6 |") && cf.ends_with("| - | - |"), "{old}");
}

#[test]
fn hermes_row_shapes_are_counted_as_the_calls_they_were() {
    let Some((home, _)) = shared() else { return };
    let dir = fresh("shapes");
    let db = home.join("state.db");
    for (session, want) in [
        // Identical calls sharing one tool_call_id are six calls, not copies.
        (
            "same-ids-1",
            vec![
                "1 turn, 6 model calls, 6 tool calls",
                "exits interrupted_by_user",
            ],
        ),
        // Hermes's closing reply after /stop is not a call; the turn was interrupted; the
        // second message two days later is still replayed (the horizon covers it).
        (
            "stopped-1",
            vec![
                "2 turns, 5 model calls, 4 tool calls",
                "not model calls: 1 replies",
                "exits interrupted_by_user, text_response(finish_reason=stop)",
                "2881.",
            ],
        ),
        // The copied tail is read once; the loop after the compaction counts in full.
        (
            "compact-loop-1",
            vec![
                "3 re-inserted by compaction",
                "1 turn, 13 model calls, 12 tool calls",
            ],
        ),
        // agent.log has a line for a retried reply that left no row: pairing by number
        // would misplace figures, so none is used.
        (
            "retry-1",
            vec![
                "warning: agent.log numbers 3 calls for this session but the record has 2",
                "agent.log for 0 of 2 calls",
            ],
        ),
        // A guardrail line quoted inside a tool's output is not a decision.
        (
            "quoted-1",
            vec!["recorded guardrail actions: none", "1 turn, 3 model calls"],
        ),
    ] {
        let out = import(&dir, &db, session, &[]);
        for w in want {
            assert!(out.contains(w), "{session}: `{w}` not in\n{out}");
        }
        let scenario = format!("imported/hermes-{session}/scenario.toml");
        let check = loopsim(&dir, &["check", &scenario]);
        assert!(check.status.success(), "{session}: {}", text(&check));
    }
}

#[test]
fn healthy_session_without_log_lines_is_estimated_and_never_stopped() {
    let Some((home, _)) = shared() else { return };
    let dir = fresh("healthy");
    let out = import(&dir, &home.join("state.db"), "healthy-1", &[]);
    assert!(
        out.contains("2 turns, 8 model calls, 7 tool calls"),
        "{out}"
    );
    assert!(
        out.contains("warn same_tool_failure_warning (count 3)"),
        "{out}"
    );
    assert!(out.contains("agent.log for 0 of 8 calls"), "{out}");
    assert!(
        out.contains("estimated: tool_latency, latency, input_tokens"),
        "{out}"
    );
    // The session's totals are spread exactly: 8 calls of 12000 + 150 k prompt tokens.
    assert!(
        out.contains("as recorded: 8 calls, 101400 input tokens"),
        "{out}"
    );
    let sc = std::fs::read_to_string(dir.join("imported/hermes-healthy-1/scenario.toml")).unwrap();
    assert!(sc.contains("# call 1 (estimated)"));
    assert!(sc.contains("label = \"healthy\""));
    // Stored without ids: results joined by position.
    assert!(sc.contains("result = '{\"output\": \"12 passed\", \"exit_code\": 0}'"));
    let (main, _) = what_if(
        &dir,
        &[
            "imported/hermes-healthy-1/trace.jsonl",
            "--profile",
            "hermes-main",
        ],
    );
    assert!(main.contains("saved: 0 calls"), "{main}");
}

#[test]
fn compaction_rows_are_counted_once_and_an_unknown_price_says_so() {
    let Some((home, _)) = shared() else { return };
    let dir = fresh("compacted");
    let db = home.join("state.db");
    let out = import(&dir, &db, "compacted-1", &[]);
    assert!(
        out.contains("14 rows (6 inactive, 4 re-inserted by compaction), 2 turns, 5 model calls, 3 tool calls"),
        "{out}"
    );
    assert!(
        out.contains("Price: unknown") && out.contains("unknown, "),
        "{out}"
    );
    let md = std::fs::read_to_string(dir.join("imported/hermes-compacted-1/summary.md")).unwrap();
    assert!(md.contains("| unknown |") && !md.contains("$0.00"), "{md}");
    // No cost chart without a price (it would draw a flat $0); the timeline is there.
    let out_dir = dir.join("imported/hermes-compacted-1");
    assert!(!out_dir.join("cost.png").exists() && out_dir.join("timeline.png").exists());
    // A price file names the model: dollars appear, and the file is named as their source.
    std::fs::write(
        dir.join("prices.toml"),
        "[models.\"mystery-model-9\"]\ninput = 2.0\ncache_read = 0.2\noutput = 8.0\n",
    )
    .unwrap();
    let out = import(&dir, &db, "compacted-1", &["--prices", "prices.toml"]);
    assert!(out.contains("Price: from prices.toml"), "{out}");
    assert!(!out.contains("unknown,"), "{out}");
}

#[test]
fn a_database_still_in_wal_mode_is_read_without_changing_it() {
    let Some(py) = common::python_or_skip(common::Venv::Hermes, "the WAL import test") else {
        return;
    };
    let dir = fresh("wal");
    let home = dir.join("home");
    make_sessions(&py, &home, &["--leave-wal"]);
    let (db, wal) = (home.join("state.db"), home.join("state.db-wal"));
    assert!(std::fs::metadata(&wal).unwrap().len() > 0, "no WAL left");
    // The last session is only in the WAL: the main file alone does not have it.
    let main_only = python(
        &py,
        "import sqlite3,sys; c=sqlite3.connect('file:'+sys.argv[1]+'?immutable=1', uri=True); print(c.execute(\"select count(*) from sessions where id='late-1'\").fetchone()[0])",
        &[&db],
    );
    assert_eq!(String::from_utf8_lossy(&main_only.stdout).trim(), "0");
    let (before_db, before_wal) = (sha(&db), sha(&wal));
    let out = import(&dir, &db, "late-1", &[]);
    assert!(out.contains("1 turn, 1 model call, 0 tool calls"), "{out}");
    let list = text(&loopsim(&dir, &["import", db.to_str().unwrap(), "--list"]));
    assert!(list.contains("| late-1 | cli | gpt-4o |"), "{list}");
    assert_eq!(sha(&db), before_db, "state.db was modified");
    assert_eq!(sha(&wal), before_wal, "state.db-wal was modified");
}

#[test]
fn newer_and_older_schemas_load_by_column_name() {
    let Some((home, py)) = shared() else { return };
    let dir = fresh("schemas");
    let newer = dir.join("newer.db");
    std::fs::copy(home.join("state.db"), &newer).unwrap();
    python(
        &py,
        "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('alter table messages add column sentiment real'); c.execute('alter table sessions add column carbon_grams integer default 7'); c.commit()",
        &[&newer],
    );
    let out = import(&dir, &newer, "spin-1", &["--out", "newer"]);
    assert!(
        out.contains("43 model calls") && !out.contains("not in this database"),
        "{out}"
    );
    // An older shape: fewer columns, same rows (copied from the Hermes-written database).
    let older = dir.join("older.db");
    python(
        &py,
        "import sqlite3,sys\nsrc,dst=sys.argv[1],sys.argv[2]\nc=sqlite3.connect(dst)\nc.execute(\"attach database ? as h\", (src,))\nc.execute('create table sessions (id text primary key, source text, model text, started_at real, input_tokens integer, output_tokens integer)')\nc.execute('create table messages (id integer primary key, session_id text, role text, content text, tool_call_id text, tool_calls text, timestamp real)')\nc.execute('insert into sessions select id, source, model, started_at, input_tokens, output_tokens from h.sessions')\nc.execute('insert into messages select id, session_id, role, content, tool_call_id, tool_calls, timestamp from h.messages')\nc.commit()",
        &[&home.join("state.db"), &older],
    );
    let out = import(&dir, &older, "healthy-1", &["--out", "older"]);
    assert!(
        out.contains("2 turns, 8 model calls, 7 tool calls"),
        "{out}"
    );
    assert!(
        out.contains("not in this database: sessions.ended_at, sessions.end_reason")
            && out.contains("messages.active")
            && out.contains("messages.compacted"),
        "{out}"
    );
}

#[test]
fn bad_input_is_a_clear_error_with_exit_2_and_nothing_written() {
    let Some((home, py)) = shared() else { return };
    let dir = fresh("bad");
    let db = home.join("state.db");
    let before = sha(&db);
    std::fs::write(dir.join("notes.txt"), "not a database\n").unwrap();
    let empty = dir.join("other.db");
    python(
        &py,
        "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('create table things (x)'); c.commit()",
        &[&empty],
    );
    std::fs::write(
        dir.join("prices.toml"),
        "[models.\"m\"]\ninput = \"cheap\"\n",
    )
    .unwrap();
    let dbs = db.to_str().unwrap();
    for (args, want) in [
        (
            vec!["import", "notes.txt", "--session", "x"],
            "notes.txt: not a SQLite database",
        ),
        (
            vec!["import", "missing.db", "--list"],
            "missing.db: no such file",
        ),
        (
            vec!["import", dbs, "--session", "nope"],
            "no session `nope`",
        ),
        (
            vec!["import", "other.db", "--list"],
            "other.db: not a Hermes state database: it has no `sessions` table",
        ),
        (
            vec![
                "import",
                dbs,
                "--session",
                "spin-1",
                "--prices",
                "prices.toml",
            ],
            "prices.toml:2: input: invalid type",
        ),
        (
            vec![
                "import",
                dbs,
                "--session",
                "spin-1",
                "--agent-log",
                "no.log",
            ],
            "no.log",
        ),
    ] {
        let o = loopsim(&dir, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(want), "{args:?}: {}", text(&o));
        assert!(!text(&o).contains("panicked"));
    }
    assert!(!dir.join("imported").exists(), "an output was written");
    // An output that cannot be written: exit 2, and no scenario without its trace.
    std::fs::create_dir_all(dir.join("blocked/trace.jsonl")).unwrap();
    let o = loopsim(
        &dir,
        &["import", dbs, "--session", "healthy-1", "--out", "blocked"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("blocked: cannot write"), "{}", text(&o));
    assert!(!dir.join("blocked/scenario.toml").exists());
    assert!(
        std::fs::read_dir(&dir).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("partial")),
        "a scratch folder was left behind"
    );
    assert_eq!(sha(&db), before);
    // A database another process holds an exclusive lock on.
    let locked = dir.join("locked.db");
    std::fs::copy(&db, &locked).unwrap();
    let mut holder = Command::new(&py)
        .arg("-c")
        .arg("import sqlite3,sys; c=sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('pragma journal_mode=delete'); c.execute('begin exclusive'); print('locked', flush=True); sys.stdin.read()")
        .arg(&locked)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");
    let o = loopsim(&dir, &["import", "locked.db", "--session", "spin-1"]);
    drop(holder.stdin.take());
    let _ = holder.wait();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("locked.db: the database is locked by another process"),
        "{}",
        text(&o)
    );
}

/// Every file under `dir`, by path relative to it, with its bytes.
fn snapshot(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                files.insert(p.strip_prefix(dir).unwrap().to_path_buf(), bytes);
            }
        }
    }
    files
}

/// Names of the files that differ between two snapshots (added, removed or changed).
fn changed(
    a: &std::collections::BTreeMap<PathBuf, Vec<u8>>,
    b: &std::collections::BTreeMap<PathBuf, Vec<u8>>,
) -> Vec<String> {
    a.keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| k.display().to_string())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[test]
fn an_import_leaves_the_database_folder_byte_for_byte_as_it_was() {
    let Some(py) = common::python_or_skip(common::Venv::Hermes, "the untouched-folder import test")
    else {
        return;
    };
    let dir = fresh("untouched");
    // In WAL mode with rows only in state.db-wal (as while Hermes runs), in WAL mode closed
    // cleanly (no -wal), and in rollback-journal mode.
    let (live, closed, rollback) = (dir.join("live"), dir.join("closed"), dir.join("rollback"));
    make_sessions(&py, &live, &["--leave-wal"]);
    make_sessions(&py, &closed, &[]);
    std::fs::create_dir_all(&rollback).unwrap();
    std::fs::copy(closed.join("state.db"), rollback.join("state.db")).unwrap();
    python(
        &py,
        "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma journal_mode=delete'); c.close()",
        &[&rollback.join("state.db")],
    );
    let header = |home: &Path| std::fs::read(home.join("state.db")).unwrap()[18..20].to_vec();
    assert_eq!(header(&live), [2, 2], "not in WAL mode");
    assert!(std::fs::metadata(live.join("state.db-wal")).unwrap().len() > 0);
    assert_eq!(header(&closed), [2, 2], "not in WAL mode");
    assert!(!closed.join("state.db-wal").exists());
    assert_eq!(header(&rollback), [1, 1], "not in rollback mode");
    let work = dir.join("work");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    for (home, session, listed) in [
        (&live, "late-1", "| late-1 | cli | gpt-4o |"),
        (&closed, "healthy-1", "| healthy-1 | cli |"),
        (&rollback, "healthy-1", "| healthy-1 | cli |"),
    ] {
        let db = home.join("state.db");
        let db = db.to_str().unwrap();
        let before = snapshot(home);
        for (args, code, want) in [
            (vec!["import", db, "--list"], 0, listed),
            (
                vec!["import", db, "--session", session, "--out", "out"],
                0,
                "model call",
            ),
            (
                vec!["import", db, "--session", "nope"],
                2,
                "no session `nope`",
            ),
        ] {
            let o = Command::new(env!("CARGO_BIN_EXE_loopsim"))
                .args(&args)
                .current_dir(&work)
                .env("TMPDIR", &tmp)
                .output()
                .unwrap();
            assert_eq!(o.status.code(), Some(code), "{args:?}: {}", text(&o));
            assert!(text(&o).contains(want), "{args:?}: {}", text(&o));
            let after = snapshot(home);
            assert!(
                after == before,
                "{args:?} changed the database's folder: {:?}",
                changed(&before, &after)
            );
            let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
            assert!(left.is_empty(), "{args:?} left {left:?} in TMPDIR");
        }
    }
}
