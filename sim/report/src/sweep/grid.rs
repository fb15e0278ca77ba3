//! A sweep's grid: `--grid KEY=VALUES` flags, checked so that a sweep measures what it says.
//!
//! Every key must be one the engine reads (a misspelled key would give rows equal to the
//! baseline and a confident recommendation), every value of the key's type and one Hermes uses
//! as given, no setting named twice, and every key must change the engine of some run.

use loopsim_engine::config::keys::{self, KeyKind, Scope};
use loopsim_engine::profile::ProfileName;
use loopsim_engine::yaml::{Node, Yaml};
use loopsim_world::scenario::{FAULT_RATES, Scenario};
use serde::{Deserialize, Serialize};

use super::SweepError;
use crate::range;

/// Values per key, at most.
pub const MAX_VALUES: u128 = 10_000;

/// One swept key and its values: each written in one form (for labels and `sweep.json`) and
/// typed once, when the axis is read, as the run will use it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "AxisText", into = "AxisText")]
pub struct Axis {
    pub key: String,
    pub values: Vec<String>,
    /// `values`, typed (same order).
    settings: Vec<Setting>,
}

/// One value of an axis as a run uses it.
#[derive(Clone, Debug, PartialEq)]
enum Setting {
    /// A config key's value, as Hermes's config holds it.
    Config(Yaml),
    /// A fault rate for every model (`faults.RATE`).
    Rate(f64),
}

/// An axis as `sweep.json` writes it: its key and values as text. Read back (`loopsim merge`),
/// it is typed again by [`Axis::parse`]'s rules, so an edited file is refused, not run.
#[derive(Serialize, Deserialize)]
struct AxisText {
    key: String,
    values: Vec<String>,
}

impl From<Axis> for AxisText {
    fn from(a: Axis) -> AxisText {
        AxisText {
            key: a.key,
            values: a.values,
        }
    }
}

impl TryFrom<AxisText> for Axis {
    type Error = SweepError;
    fn try_from(t: AxisText) -> Result<Axis, SweepError> {
        let axis = Axis::parse(&format!("{}={}", t.key, t.values.join(",")))?;
        if axis.values != t.values {
            return Err(grid_err(
                &t.key,
                format!(
                    "values {:?} are not written as loopsim writes them",
                    t.values
                ),
            ));
        }
        Ok(axis)
    }
}

fn grid_err(spec: &str, message: impl Into<String>) -> SweepError {
    SweepError::Grid {
        spec: spec.into(),
        message: message.into(),
    }
}

/// The key's spec: Hermes's, else another runtime's setting (`max_turns`, `request_limit`).
fn spec_of(key: &str) -> Option<&'static keys::KeySpec> {
    keys::lookup(key).or_else(|| loopsim_engine::config::runtime::lookup(key))
}

/// Why `key` is not a key to sweep, with the nearest one.
fn key_problem(key: &str) -> Option<String> {
    match spec_of(key) {
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
        if let Some(rate) = key.strip_prefix("faults.") {
            return Axis::parse_fault_rate(spec, rate, values);
        }
        if let Some(p) = key_problem(key) {
            return Err(err(p));
        }
        let kind = spec_of(key).expect("checked").kind;
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
        // Each value as its type reads it, written back in one form, so `1,01` is one value.
        let mut canonical: Vec<String> = Vec::new();
        let mut settings = Vec::new();
        for v in &values {
            if v.is_empty() {
                return Err(err("empty value".into()));
            }
            let typed = typed(kind, v).map_err(|m| err(format!("`{v}`: {m}")))?;
            let c = show(&typed);
            if canonical.contains(&c) {
                return Err(err(format!("`{v}` is listed twice (as {c})")));
            }
            canonical.push(c);
            settings.push(Setting::Config(typed));
        }
        Ok(Axis {
            key: key.into(),
            values: canonical,
            settings,
        })
    }

    /// `faults.RATE=A,B,C`: a fault rate for every model of each scenario, each value a
    /// probability.
    fn parse_fault_rate(spec: &str, rate: &str, values: &str) -> Result<Axis, SweepError> {
        let err = |m: String| grid_err(spec, m);
        if !FAULT_RATES.contains(&rate) {
            let near = keys::nearest(rate, FAULT_RATES.iter().copied())
                .map(|n| format!(" (did you mean `faults.{n}`?)"))
                .unwrap_or_default();
            return Err(err(format!(
                "`faults.{rate}` is not a fault rate{near}: one of {}",
                FAULT_RATES.map(|r| format!("faults.{r}")).join(", ")
            )));
        }
        if range::parse(values, true).is_some() {
            return Err(err(format!(
                "a fault rate is a probability, not a range: list the values, e.g. `faults.{rate}=0,0.05,0.2`"
            )));
        }
        let mut canonical: Vec<String> = Vec::new();
        let mut settings = Vec::new();
        for v in values.split(',').map(str::trim) {
            let p = v
                .parse::<f64>()
                .ok()
                .filter(|p| (0.0..=1.0).contains(p))
                .ok_or_else(|| err(format!("`{v}`: expected a probability from 0 to 1")))?;
            let c = format!("{p:?}");
            if canonical.contains(&c) {
                return Err(err(format!("`{v}` is listed twice (as {c})")));
            }
            canonical.push(c);
            settings.push(Setting::Rate(p));
        }
        Ok(Axis {
            key: format!("faults.{rate}"),
            values: canonical,
            settings,
        })
    }

    /// The fault rate this axis sets (`faults.KEY`), if it sets one rather than a config key.
    pub fn fault_rate(&self) -> Option<&str> {
        self.key.strip_prefix("faults.")
    }

    /// The scenario with this axis at its value number `i` (as typed when the axis was read).
    pub fn apply(&self, sc: &Scenario, i: usize) -> Result<Scenario, SweepError> {
        Ok(match &self.settings[i] {
            Setting::Rate(p) => {
                let rate = self.fault_rate().expect("a rate axis's key is faults.RATE");
                sc.with_fault_rate(rate, *p)?
            }
            Setting::Config(value) => sc.with_config(
                &self.key,
                Node {
                    value: value.clone(),
                    line: 0,
                },
            )?,
        })
    }
}

/// A value written as its kind reads it.
fn show(v: &Yaml) -> String {
    match v {
        Yaml::Bool(b) => b.to_string(),
        Yaml::Int(i) => i.to_string(),
        Yaml::Float(f) => format!("{f:?}"),
        Yaml::Str(s) => s.clone(),
        _ => String::new(),
    }
}

/// A value of the key's kind, or why not.
fn typed(kind: KeyKind, v: &str) -> Result<Yaml, String> {
    match kind {
        KeyKind::Bool if v == "true" || v == "false" => Ok(Yaml::Bool(v == "true")),
        KeyKind::Bool => Err("expected true or false".into()),
        KeyKind::Int { min } => match v.parse::<i64>() {
            Ok(i) if i >= min => Ok(Yaml::Int(i.into())),
            Ok(i) => Err(format!(
                "Hermes replaces values below {min} by the default, so {i} would run the default"
            )),
            Err(_) => Err(format!("expected an integer >= {min}")),
        },
        KeyKind::TurnLimit => v
            .parse::<i64>()
            .map(|i| Yaml::Int(i.into()))
            .map_err(|_| "expected an integer".into()),
        KeyKind::Seconds => match v.parse::<f64>() {
            Ok(f) if f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f < 1e15 => {
                Ok(Yaml::Int(f as i128))
            }
            Ok(f) if f.is_finite() && f >= 0.0 => Ok(Yaml::Float(f)),
            _ => Err("expected a non-negative number of seconds".into()),
        },
        KeyKind::Fraction => match v.parse::<f64>() {
            Ok(f) if f > 0.0 && f <= 1.0 => Ok(Yaml::Float(f)),
            _ => Err("expected a number above 0 and at most 1".into()),
        },
        KeyKind::Ratio => match v.parse::<f64>() {
            Ok(f) if f.is_finite() && f >= 0.0 => Ok(Yaml::Float(f)),
            _ => Err("expected a number of 0 or more (a share, e.g. 0.5)".into()),
        },
        KeyKind::Choice(words) if words.contains(&v) => Ok(Yaml::Str(v.to_string())),
        KeyKind::Choice(words) => Err(format!("expected one of: {}", words.join(", "))),
        KeyKind::Text if !v.is_empty() => Ok(Yaml::Str(v.to_string())),
        KeyKind::Text => Err("expected a name".into()),
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
    /// Each (scenario, profile)'s hard-stop rule as the baseline runs it.
    pub baseline: Vec<String>,
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
    for sc in scenarios {
        let own = [sc.profile];
        let ps = if profiles.is_empty() {
            &own[..]
        } else {
            profiles
        };
        for &profile in ps {
            if let Ok(cfg) = sc.engine_config_as(profile, platform) {
                report.baseline.push(format!(
                    "{} under {profile} on {}: hard stops are {}",
                    sc.file.name,
                    cfg.platform.as_deref().unwrap_or("no platform"),
                    cfg.hard_stop_rule
                ));
            }
        }
    }
    for axis in axes {
        if axis.fault_rate().is_some() {
            check_fault_rate(axis, scenarios, profiles)?;
            continue;
        }
        let mut unchanged: Vec<String> = Vec::new();
        let mut reasons: Vec<String> = Vec::new();
        let mut runs = 0usize;
        // What each value does to every run: two values that do the same everywhere are one.
        let mut per_value: Vec<Vec<loopsim_engine::hash::Hash>> =
            vec![Vec::new(); axis.values.len()];
        for sc in scenarios {
            let own = [sc.profile];
            let profiles = if profiles.is_empty() {
                &own[..]
            } else {
                profiles
            };
            for &profile in profiles {
                runs += 1;
                let base = sc
                    .engine_config_as(profile, platform)
                    .map_err(|e| grid_err(&axis.key, e.to_string()))?
                    .behaviour_fingerprint();
                let mut inert = None;
                let mut same = true;
                for (i, v) in axis.values.iter().enumerate() {
                    let spec = format!("{}={v}", axis.key);
                    let s = axis.apply(sc, i)?;
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
                    let print = cfg.behaviour_fingerprint();
                    same &= print == base;
                    inert = inert.or_else(|| cfg.inert_reason(&axis.key));
                    per_value[i].push(print);
                }
                if same {
                    unchanged.push(format!("{} under {profile}", sc.file.name));
                    reasons.push(why_unchanged(axis, sc, profile, platform, inert));
                }
            }
        }
        if unchanged.len() == runs {
            reasons.sort();
            reasons.dedup();
            return Err(grid_err(
                &axis.key,
                format!("no value changes any run: {}", reasons.join("; ")),
            ));
        }
        for i in 0..per_value.len() {
            if let Some(j) = (i + 1..per_value.len()).find(|&j| per_value[j] == per_value[i]) {
                return Err(grid_err(
                    &axis.key,
                    format!(
                        "`{}` and `{}` make the same decisions in every run (Hermes reads them alike): keep one",
                        axis.values[i], axis.values[j]
                    ),
                ));
            }
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

/// Every value of a fault-rate axis makes a scenario each profile the sweep runs can run: a
/// rate a runtime has no proved handling for is refused here, not in the middle of the sweep.
fn check_fault_rate(
    axis: &Axis,
    scenarios: &[Scenario],
    profiles: &[ProfileName],
) -> Result<(), SweepError> {
    for sc in scenarios {
        let own = [sc.profile];
        let ps = if profiles.is_empty() {
            &own[..]
        } else {
            profiles
        };
        for (i, v) in axis.values.iter().enumerate() {
            let spec = format!("{}={v}", axis.key);
            let s = axis
                .apply(sc, i)
                .map_err(|e| grid_err(&spec, e.to_string()))?;
            for &profile in ps {
                if let Some(why) = s.unsupported_under(profile) {
                    return Err(grid_err(&spec, format!("under {profile}: {why}")));
                }
            }
        }
    }
    Ok(())
}

/// The likely reason a key leaves a run's decisions as they were.
fn why_unchanged(
    axis: &Axis,
    sc: &Scenario,
    profile: ProfileName,
    platform: Option<&str>,
    inert: Option<String>,
) -> String {
    let spec = spec_of(&axis.key).expect("checked at parse");
    let runtime = profile.runtime();
    if !loopsim_engine::config::runtime::reads(runtime, &axis.key) {
        return format!(
            "{profile} does not read `{}` (not a setting of {})",
            axis.key,
            runtime.title()
        );
    }
    if !spec.read_by.reads(profile) {
        return format!("{profile} does not read `{}`", axis.key);
    }
    if let Some((other, false)) = spec.alias
        && sc.config_node().at(other).is_some()
    {
        return format!(
            "{} sets `{other}`, which wins over `{}`: sweep `{other}`",
            sc.file.name, axis.key
        );
    }
    if let Some(why) = inert {
        return format!("for {} under {profile}, {why}", sc.file.name);
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
        "every value gives {} under {profile} the decisions of its own config",
        sc.file.name
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_typed_once_and_sweep_json_reads_back_the_same_axis() {
        let a = Axis::parse("tool_loop_guardrails.hard_stop_after.exact_failure=2,03,4").unwrap();
        assert_eq!(a.values, ["2", "3", "4"]);
        assert_eq!(a.settings[1], Setting::Config(Yaml::Int(3)));
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(
            json,
            r#"{"key":"tool_loop_guardrails.hard_stop_after.exact_failure","values":["2","3","4"]}"#
        );
        assert_eq!(serde_json::from_str::<Axis>(&json).unwrap(), a);
        let rate = Axis::parse("faults.rate_limit=0,0.25").unwrap();
        assert_eq!(rate.settings, [Setting::Rate(0.0), Setting::Rate(0.25)]);
        let back: Axis = serde_json::from_str(&serde_json::to_string(&rate).unwrap()).unwrap();
        assert_eq!(back, rate);
    }

    #[test]
    fn an_edited_sweep_json_axis_is_refused_not_run() {
        for edited in [
            r#"{"key":"tool_loop_guardrails.hard_stop_after.exact_failure","values":["two"]}"#,
            r#"{"key":"tool_loop_guardrails.hard_stop_after.exact_failure","values":["02"]}"#,
            r#"{"key":"faults.rate_limit","values":["1.5"]}"#,
            r#"{"key":"tool_loop_guardrails.hard_stop_afterr","values":["2"]}"#,
        ] {
            let e = serde_json::from_str::<Axis>(edited)
                .unwrap_err()
                .to_string();
            assert!(e.contains("--grid"), "{edited}: {e}");
        }
    }
}
