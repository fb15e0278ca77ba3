//! Shrinking a failing run to a smaller scenario that fails the same way: fewer agents, steps,
//! repetitions and calls, each reduction kept only if some seed still breaks the same
//! invariant (or fails the same expectations). Removing a step moves every later random draw,
//! so each candidate is tried at the failing seed first, then at the first [`SEEDS`] seeds.

use loopsim_world::scenario::Scenario;
use toml::{Table, Value};

use super::{ExploreOptions, Finding, Problem, explore_one};

/// Seeds tried for each candidate, after the seed that failed last.
pub const SEEDS: u64 = 256;
/// Runs a shrink may make in all: it stops with the smallest scenario found by then.
pub const MAX_RUNS: u64 = 10_000;

/// A smaller scenario that fails as the finding did.
#[derive(Clone, Debug, PartialEq)]
pub struct Shrunk {
    /// The scenario file's text.
    pub text: String,
    /// The seed at which it fails.
    pub seed: u64,
    /// The finding at that seed.
    pub finding: Finding,
    /// Script steps (each repetition counted) and tool calls per step, summed over agents.
    pub size_before: u64,
    pub size_after: u64,
    pub runs: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum ShrinkError {
    #[error("{path}: cannot be shrunk: {message}")]
    Toml { path: String, message: String },
}

/// Shrinks `finding` (a run of `sc`). The scenario is renamed `<name>-shrunk` and its
/// `seed` set to the failing one, so it can sit beside the original in a suite.
pub fn shrink(
    sc: &Scenario,
    finding: &Finding,
    opts: &ExploreOptions,
) -> Result<Shrunk, ShrinkError> {
    let bad = |message: String| ShrinkError::Toml {
        path: sc.path.clone(),
        message,
    };
    let mut table: Table = toml::from_str(&sc.text).map_err(|e| bad(e.to_string()))?;
    table.insert(
        "name".into(),
        Value::String(format!("{}-shrunk", sc.file.name)),
    );
    let size_before = size(&table);
    let mut best = (finding.seed, finding.clone());
    let mut runs = 0u64;
    'outer: loop {
        for cand in candidates(&table, matches!(finding.problem, Problem::Invariant(_))) {
            if size(&cand) >= size(&table) {
                continue;
            }
            let Ok(text) = toml::to_string(&cand) else {
                continue;
            };
            let Ok(small) = Scenario::parse(&text, &sc.path) else {
                continue;
            };
            let seeds = std::iter::once(best.0).chain((0..SEEDS).filter(|s| *s != best.0));
            for seed in seeds {
                if runs >= MAX_RUNS {
                    break 'outer;
                }
                runs += 1;
                if let Ok(Some(f)) = explore_one(&small, seed, opts)
                    && same_problem(&f.problem, &finding.problem)
                {
                    table = cand;
                    best = (seed, f);
                    continue 'outer;
                }
            }
        }
        break;
    }
    if let Ok(seed) = i64::try_from(best.0) {
        table.insert("seed".into(), Value::Integer(seed));
    }
    let what = match &best.1.problem {
        Problem::Invariant(v) => format!("invariant {} at event {}", v.invariant, v.event),
        Problem::Expectations { failed } => {
            let keys: Vec<&str> = failed.iter().map(|v| v.key.as_str()).collect();
            format!("expectations {}", keys.join(", "))
        }
    };
    let text = format!(
        "# Shrunk by `loopsim explore --shrink` from {} (seed {}); fails at seed {}: {what}.\n{}",
        sc.path,
        finding.seed,
        best.0,
        toml::to_string(&table).map_err(|e| bad(e.to_string()))?
    );
    Ok(Shrunk {
        text,
        seed: best.0,
        finding: best.1,
        size_before,
        size_after: size(&table),
        runs,
    })
}

/// The same invariant broken, or the same expectations failed.
fn same_problem(a: &Problem, b: &Problem) -> bool {
    match (a, b) {
        (Problem::Invariant(x), Problem::Invariant(y)) => x.invariant == y.invariant,
        (Problem::Expectations { failed: x }, Problem::Expectations { failed: y }) => {
            x.iter().map(|v| &v.key).eq(y.iter().map(|v| &v.key))
        }
        _ => false,
    }
}

/// How big a scenario is: tools, models, agents, steps (a repeated step counted per
/// repetition, one that repeats until stopped as 100), calls and choices per step, and an
/// `[expect]` block.
pub fn size(t: &Table) -> u64 {
    let mut n = u64::from(t.contains_key("expect"));
    for key in ["tools", "models"] {
        n += t
            .get(key)
            .and_then(Value::as_table)
            .map_or(0, |x| x.len() as u64);
    }
    for (_, agent) in agents(t) {
        n += 1;
        for step in script(agent) {
            let Some(s) = step.as_table() else { continue };
            let times = s
                .get("times")
                .and_then(Value::as_integer)
                .map_or(1, |k| k.max(1) as u64);
            let until = if s.contains_key("until") { 100 } else { 0 };
            let width = ["calls", "choose"]
                .iter()
                .filter_map(|k| s.get(*k).and_then(Value::as_array))
                .map(|a| a.len() as u64)
                .sum::<u64>()
                + s.get("tasks")
                    .and_then(Value::as_integer)
                    .map_or(0, |k| k.max(0) as u64);
            n += times + until + width;
        }
    }
    n
}

fn agents(t: &Table) -> Vec<(&String, &Table)> {
    t.get("agents")
        .and_then(Value::as_table)
        .map(|a| {
            a.iter()
                .filter_map(|(k, v)| v.as_table().map(|v| (k, v)))
                .collect()
        })
        .unwrap_or_default()
}

fn script(agent: &Table) -> &[Value] {
    agent
        .get("script")
        .and_then(Value::as_array)
        .map_or(&[], |a| a.as_slice())
}

/// Every one-step reduction of a scenario, biggest first.
fn candidates(t: &Table, drop_expect: bool) -> Vec<Table> {
    let mut out = Vec::new();
    if drop_expect && t.contains_key("expect") {
        let mut c = t.clone();
        c.remove("expect");
        out.push(c);
    }
    for key in ["tools", "models"] {
        let names: Vec<String> = t
            .get(key)
            .and_then(Value::as_table)
            .map(|x| x.keys().cloned().collect())
            .unwrap_or_default();
        for name in names {
            // One still in use makes the candidate invalid, and it is skipped.
            let mut c = t.clone();
            if let Some(x) = c.get_mut(key).and_then(Value::as_table_mut) {
                x.remove(&name);
            }
            out.push(c);
        }
    }
    let names: Vec<String> = agents(t).into_iter().map(|(k, _)| k.clone()).collect();
    for name in names.iter().filter(|n| *n != "parent") {
        let mut c = t.clone();
        if let Some(a) = c.get_mut("agents").and_then(Value::as_table_mut) {
            a.remove(name);
        }
        out.push(c);
    }
    for name in &names {
        let steps = agents(t)
            .into_iter()
            .find(|(k, _)| *k == name)
            .map_or(0, |(_, a)| script(a).len());
        for i in 0..steps {
            if steps > 1 {
                out.push(edit_script(t, name, |s| {
                    s.remove(i);
                }));
            }
            out.extend(step_reductions(t, name, i));
        }
    }
    out
}

/// Reductions of one step: fewer repetitions, no `until`, fewer calls, choices or tasks.
fn step_reductions(t: &Table, agent: &str, i: usize) -> Vec<Table> {
    let mut out = Vec::new();
    let step = |t: &Table| -> Option<Table> {
        let a = agents(t).into_iter().find(|(k, _)| *k == agent)?.1;
        script(a).get(i)?.as_table().cloned()
    };
    let Some(s) = step(t) else { return out };
    let edit = |f: &dyn Fn(&mut Table)| {
        edit_script(t, agent, |steps| {
            if let Some(Value::Table(s)) = steps.get_mut(i) {
                f(s);
            }
        })
    };
    if let Some(n) = s.get("times").and_then(Value::as_integer)
        && n > 1
    {
        out.push(edit(&|s| {
            s.insert("times".into(), Value::Integer(1));
        }));
        if n > 2 {
            out.push(edit(&|s| {
                s.insert("times".into(), Value::Integer(n / 2));
            }));
        }
    }
    if s.contains_key("until") {
        out.push(edit(&|s| {
            s.remove("until");
        }));
    }
    for key in ["calls", "choose"] {
        let len = s.get(key).and_then(Value::as_array).map_or(0, |a| a.len());
        for j in 0..len {
            if len > 1 {
                out.push(edit(&|s| {
                    if let Some(Value::Array(a)) = s.get_mut(key) {
                        a.remove(j);
                    }
                }));
            }
        }
    }
    if let Some(n) = s.get("tasks").and_then(Value::as_integer)
        && n > 1
    {
        out.push(edit(&|s| {
            s.insert("tasks".into(), Value::Integer(1));
        }));
    }
    out
}

fn edit_script(t: &Table, agent: &str, f: impl FnOnce(&mut Vec<Value>)) -> Table {
    let mut c = t.clone();
    if let Some(Value::Array(steps)) = c
        .get_mut("agents")
        .and_then(Value::as_table_mut)
        .and_then(|a| a.get_mut(agent))
        .and_then(Value::as_table_mut)
        .and_then(|a| a.get_mut("script"))
    {
        f(steps);
    }
    c
}
