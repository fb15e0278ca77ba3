//! A sweep's grid: `--grid KEY=VALUES` flags, checked so that a sweep measures what it says.
//!
//! Every key must be one the engine reads (a misspelled key would give rows equal to the
//! baseline and a confident recommendation), every value of the key's type and one Hermes uses
//! as given, no setting named twice, and every key must change the engine of some run.

use loopsim_engine::config::keys::{self, KeyKind, Scope};
use loopsim_engine::profile::ProfileName;
use loopsim_engine::yaml::{Node, Yaml};
use loopsim_world::scenario::Scenario;
use serde::{Deserialize, Serialize};

use super::SweepError;
use crate::range;

/// Values per key, at most.
pub const MAX_VALUES: u128 = 10_000;

/// One swept key and its values (as written, for labels; typed by the key's kind).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    pub key: String,
    pub values: Vec<String>,
}

fn grid_err(spec: &str, message: impl Into<String>) -> SweepError {
    SweepError::Grid {
        spec: spec.into(),
        message: message.into(),
    }
}

/// Why `key` is not a key to sweep, with the nearest one.
fn key_problem(key: &str) -> Option<String> {
    match keys::lookup(key) {
        Some(k) if k.kind == KeyKind::Section => {
            let inside: Vec<&str> = keys::SIMULATED
                .iter()
                .filter_map(|s| s.path.strip_prefix(&format!("{key}.")))
                .filter(|rest| !rest.contains('.'))
                .collect();
            Some(format!(
                "`{key}` is a section; sweep a key inside it: {}",
                inside.join(", ")
            ))
        }
        Some(_) => None,
        None => {
            // The key as a one-key config tree, checked like a scenario's.
            let mut node = Node {
                value: Yaml::Null,
                line: 0,
            };
            for part in key.rsplit('.') {
                node = Node {
                    value: Yaml::Map(vec![(
                        Node {
                            value: Yaml::Str(part.to_string()),
                            line: 0,
                        },
                        node,
                    )]),
                    line: 0,
                };
            }
            let issue = keys::check(&node, ProfileName::HermesMain, Scope::Scenario)
                .into_iter()
                .next();
            Some(match issue {
                Some(i) => format!("`{}`: {}", i.key, i.message()),
                None => format!("`{key}` is not a key loopsim simulates"),
            })
        }
    }
}

impl Axis {
    /// `KEY=START..END[:STEP]` (END excluded), `KEY=START..=END[:STEP]` (END included) or
    /// `KEY=A,B,C`. The key is a Hermes config key the engine reads, and the values are of
    /// its type.
    pub fn parse(spec: &str) -> Result<Axis, SweepError> {
        let err = |m: String| grid_err(spec, m);
        let (key, values) = spec
            .split_once('=')
            .ok_or_else(|| err("expected KEY=VALUES".into()))?;
        let key = key.trim();
        if key.is_empty() || key.split('.').any(str::is_empty) {
            return Err(err("the key must be a dotted Hermes config key".into()));
        }
        if let Some(p) = key_problem(key) {
            return Err(err(p));
        }
        let kind = keys::lookup(key).expect("checked").kind;
        let values: Vec<String> = match range::parse(values, true) {
            Some(r) => {
                let r = r.map_err(err)?;
                if kind == KeyKind::Bool {
                    return Err(err(format!(
                        "`{key}` is true or false, not a range: give `{key}=true,false`"
                    )));
                }
                if r.len() > MAX_VALUES {
                    return Err(err(format!(
                        "{} values: at most {MAX_VALUES} per key",
                        r.len()
                    )));
                }
                r.values().map(|v| v.to_string()).collect()
            }
            None => values.split(',').map(|v| v.trim().to_string()).collect(),
        };
        let mut seen: Vec<&str> = Vec::new();
        for v in &values {
            if v.is_empty() {
                return Err(err("empty value".into()));
            }
            if seen.contains(&v.as_str()) {
                return Err(err(format!("`{v}` is listed twice")));
            }
            seen.push(v);
            check_value(kind, v).map_err(|m| err(format!("`{v}`: {m}")))?;
        }
        Ok(Axis {
            key: key.into(),
            values,
        })
    }

    /// The value `v` of this axis as Hermes's config would hold it.
    pub fn value_node(&self, v: &str) -> Node {
        let value = match keys::lookup(&self.key).map(|k| k.kind) {
            Some(KeyKind::Bool) => Yaml::Bool(v == "true"),
            Some(KeyKind::Seconds) => match v.parse::<i128>() {
                Ok(i) => Yaml::Int(i),
                Err(_) => Yaml::Float(v.parse().unwrap_or(f64::NAN)),
            },
            _ => Yaml::Int(v.parse().unwrap_or(0)),
        };
        Node { value, line: 0 }
    }
}

/// A value of the key's kind, or why not.
fn check_value(kind: KeyKind, v: &str) -> Result<(), String> {
    match kind {
        KeyKind::Bool if v == "true" || v == "false" => Ok(()),
        KeyKind::Bool => Err("expected true or false".into()),
        KeyKind::Int { min } => match v.parse::<i64>() {
            Ok(i) if i >= min => Ok(()),
            Ok(i) => Err(format!(
                "Hermes replaces values below {min} by the default, so {i} would run the default"
            )),
            Err(_) => Err(format!("expected an integer >= {min}")),
        },
        KeyKind::TurnLimit => v
            .parse::<i64>()
            .map(|_| ())
            .map_err(|_| "expected an integer".into()),
        KeyKind::Seconds => match v.parse::<f64>() {
            Ok(f) if f.is_finite() && f >= 0.0 => Ok(()),
            _ => Err("expected a non-negative number of seconds".into()),
        },
        KeyKind::Section => Err("a section has no value".into()),
    }
}

/// No key twice, and no two spellings of one setting (the nested key wins over the flat one,
/// so the other would be ignored).
pub fn check_axes(axes: &[Axis]) -> Result<(), SweepError> {
    for (i, a) in axes.iter().enumerate() {
        for b in &axes[..i] {
            if a.key == b.key {
                return Err(grid_err(
                    &a.key,
                    "the same key is given twice: list all its values in one --grid",
                ));
            }
            let alias = keys::lookup(&a.key).and_then(|k| k.alias);
            if alias.is_some_and(|(other, _)| other == b.key) {
                return Err(grid_err(
                    &a.key,
                    format!(
                        "`{}` and `{}` are one setting (the nested key wins): sweep one of them",
                        b.key, a.key
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// What the check of a grid against its scenarios found besides errors.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GridReport {
    /// Keys that change nothing for some (scenario, profile): one line each.
    pub warnings: Vec<String>,
}

/// Every value is one Hermes uses as given under every profile the sweep runs, and every key
/// changes the engine of at least one run (a warning names the runs it does not change).
/// `scenarios` already carry any `--config` file; `profiles` are the sweep's (empty: each
/// scenario's own).
pub fn check_effect(
    axes: &[Axis],
    scenarios: &[Scenario],
    profiles: &[ProfileName],
    platform: Option<&str>,
) -> Result<GridReport, SweepError> {
    let mut report = GridReport::default();
    for axis in axes {
        let mut unchanged: Vec<String> = Vec::new();
        let mut changed_any = false;
        let mut reasons: Vec<String> = Vec::new();
        for sc in scenarios {
            let own = [sc.profile];
            let profiles = if profiles.is_empty() {
                &own[..]
            } else {
                profiles
            };
            for &profile in profiles {
                let mut prints = Vec::new();
                for v in &axis.values {
                    let spec = format!("{}={v}", axis.key);
                    let s = sc.with_config(&axis.key, axis.value_node(v))?;
                    let cfg = s
                        .engine_config_as(profile, platform)
                        .map_err(|e| grid_err(&spec, e.to_string()))?;
                    if let Some(n) = cfg.notes.iter().find(|n| n.key == axis.key) {
                        return Err(grid_err(
                            &spec,
                            format!(
                                "{} under {profile}: Hermes would not use this value",
                                n.message
                            ),
                        ));
                    }
                    prints.push(cfg.fingerprint());
                }
                let base = sc
                    .engine_config_as(profile, platform)
                    .map_err(|e| grid_err(&axis.key, e.to_string()))?
                    .fingerprint();
                if prints.iter().all(|p| *p == prints[0]) && prints[0] == base {
                    unchanged.push(format!("{} under {profile}", sc.file.name));
                    reasons.push(why_unchanged(axis, sc, profile, platform));
                } else {
                    changed_any = true;
                }
            }
        }
        if !changed_any {
            reasons.sort();
            reasons.dedup();
            return Err(grid_err(
                &axis.key,
                format!(
                    "no value changes the engine of any run: {}",
                    reasons.join("; ")
                ),
            ));
        }
        if !unchanged.is_empty() {
            report.warnings.push(format!(
                "--grid {}: changes nothing for {} ({})",
                axis.key,
                unchanged.join(", "),
                reasons.first().cloned().unwrap_or_default()
            ));
        }
    }
    Ok(report)
}

/// The likely reason a key leaves a run's engine as it was.
fn why_unchanged(
    axis: &Axis,
    sc: &Scenario,
    profile: ProfileName,
    platform: Option<&str>,
) -> String {
    let spec = keys::lookup(&axis.key).expect("checked at parse");
    if !spec.read_by.reads(profile) {
        return format!("{profile} does not read `{}`", axis.key);
    }
    if let Some((other, false)) = spec.alias {
        let mut node = sc.config_node();
        let mut found = true;
        for part in other.split('.') {
            match node.get(part) {
                Some(n) => node = n,
                None => {
                    found = false;
                    break;
                }
            }
        }
        if found {
            return format!(
                "{} sets `{other}`, which wins over `{}`: sweep `{other}`",
                sc.file.name, axis.key
            );
        }
    }
    if axis.key == "tool_loop_guardrails.hard_stop_enabled"
        && let Ok(cfg) = sc.engine_config_as(profile, platform)
        && let loopsim_engine::config::HardStopRule::Unattended { platform } = &cfg.hard_stop_rule
    {
        return format!(
            "on {platform} (unattended) {profile}'s platform rule turns hard stops on whatever hard_stop_enabled says; sweep tool_loop_guardrails.non_interactive_hard_stop_enabled, or use an attended platform"
        );
    }
    format!(
        "every value gives {} under {profile} the same engine as its own config",
        sc.file.name
    )
}
