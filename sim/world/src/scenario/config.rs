//! A scenario's `[config]`: Hermes config keys in `config.yaml`'s shapes, checked at load,
//! with a user's `config.yaml` or a sweep setting laid over them.

use loopsim_engine::config::keys::{self, KeyProblem, Scope};
use loopsim_engine::config::{ConfigError, EngineConfig, runtime};
use loopsim_engine::profile::{ProfileName, Runtime};
use loopsim_engine::yaml::{KeyIndex, Node, Yaml};

use super::spans::SpanTree;
use super::{Lines, Scenario, ScenarioError};
use crate::user_config::UserConfig;

impl Scenario {
    /// Every key is one loopsim simulates and every value one Hermes uses as given, under each
    /// profile the scenario is checked with: a scenario says exactly what it means.
    pub(super) fn check_config(&self, l: &Lines<'_>) -> Result<(), ScenarioError> {
        let mut profiles = vec![self.profile];
        profiles.extend(
            self.file
                .expect
                .profiles
                .iter()
                .filter_map(|p| p.get_ref().parse::<ProfileName>().ok()),
        );
        profiles.extend(
            self.file
                .expect
                .under
                .keys()
                .filter_map(|k| super::under_key(k).0.parse::<ProfileName>().ok()),
        );
        let at = |line: usize, key: &str, message: String| ScenarioError {
            file: l.file.to_string(),
            line,
            key: format!("config.{key}"),
            message,
        };
        for k in keys::SIMULATED {
            if let Some((winner, false)) = k.alias
                && let (Some(flat), Some(_)) =
                    (self.config_node.at(k.path), self.config_node.at(winner))
            {
                return Err(at(
                    flat.line,
                    k.path,
                    format!("`{winner}` is the same setting and wins over this key: give one"),
                ));
            }
        }
        // `[config]` is in the keys of the scenario's own runtime: a profile of another
        // runtime runs at its own defaults, so its expectations do not read it.
        let own = self.profile.runtime();
        for profile in profiles.into_iter().filter(|p| p.runtime() == own) {
            if let Some(issue) = keys::check(&self.config_node, profile, Scope::Scenario)
                .into_iter()
                .find(|i| !matches!(i.problem, KeyProblem::NotRead { .. }))
            {
                let message = match &issue.problem {
                    KeyProblem::Unknown {
                        suggestion: Some(s),
                    } => format!("not a key loopsim simulates (did you mean `{s}`?)"),
                    _ => issue.message(),
                };
                return Err(at(issue.line, &issue.key, message));
            }
            let cfg = self.engine_config_as(profile, None).map_err(|e| match e {
                ConfigError::Value {
                    line, key, message, ..
                } => at(line, &key, message),
                ConfigError::Yaml { line, message, .. } => at(line, "", message),
            })?;
            if let Some(n) = cfg.notes.first() {
                return Err(at(
                    n.line,
                    &n.key,
                    if profile.runtime() == Runtime::Hermes {
                        format!(
                            "{} under {profile}; Hermes would replace this value, so a scenario may not use it",
                            n.message
                        )
                    } else {
                        format!(
                            "{} under {profile}; a run that cannot call the model is no scenario",
                            n.message
                        )
                    },
                ));
            }
        }
        Ok(())
    }

    /// The scenario with one Hermes config key set to `value` (a sweep setting), laid over
    /// everything else. Another config is another engine: a recording's own decisions no
    /// longer apply.
    pub fn with_config(&self, key: &str, value: Node) -> Result<Scenario, ScenarioError> {
        let bad = |message: String| ScenarioError {
            file: self.path.clone(),
            line: 0,
            key: format!("config.{key}"),
            message,
        };
        let parts: Vec<&str> = key.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(bad("not a dotted key".into()));
        }
        let mut s = self.clone();
        // The key goes where a runtime reads it: the scenario's own settings, each other
        // runtime's, or both (`max_turns` is Hermes's legacy cap and the SDK's).
        let own = self.profile.runtime();
        let others: Vec<Runtime> = Runtime::ALL
            .into_iter()
            .filter(|&r| r != own && runtime::reads(r, key))
            .collect();
        if runtime::reads(own, key) || others.is_empty() {
            set_path(&mut s.config_node, &parts, value.clone()).map_err(bad)?;
        }
        for r in others {
            let node = s.foreign_config.entry(r).or_insert_with(|| Node {
                value: Yaml::Map(Vec::new()),
                line: 0,
            });
            set_path(node, &parts, value.clone()).map_err(bad)?;
        }
        s.file.recorded = false;
        s.engine_config(None).map_err(|e| bad(e.to_string()))?;
        Ok(s)
    }

    /// The scenario with a user's config.yaml laid over `[config]`: keys the file sets win, the
    /// scenario's other keys stay (a user's file rarely repeats what the workload needs, such
    /// as its delegation limits).
    pub fn with_user_config(&self, user: &UserConfig) -> Scenario {
        let mut s = self.clone();
        if !user.is_empty() {
            s.config_node = merge_nodes(&self.config_node, &user.root);
            // Each other runtime takes the file's keys it reads (one file may serve a run that
            // compares runtimes); a single run under a profile checks the whole file.
            let own = self.profile.runtime();
            for r in Runtime::ALL.into_iter().filter(|&r| r != own) {
                let Yaml::Map(pairs) = &user.root.value else {
                    break;
                };
                let mine: Vec<(Node, Node)> = pairs
                    .iter()
                    .filter(|(k, _)| matches!(&k.value, Yaml::Str(n) if runtime::reads(r, n)))
                    .cloned()
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                let over = Node {
                    value: Yaml::Map(mine),
                    line: user.root.line,
                };
                let base = s.foreign_config.remove(&r).unwrap_or_else(|| Node {
                    value: Yaml::Map(Vec::new()),
                    line: 0,
                });
                s.foreign_config.insert(r, merge_nodes(&base, &over));
            }
            s.file.recorded = false;
        }
        s
    }

    /// [`Scenario::engine_config_as`] with a user's config.yaml laid over `[config]`.
    pub fn engine_config_over(
        &self,
        profile: ProfileName,
        platform: Option<&str>,
        user: Option<&UserConfig>,
    ) -> Result<EngineConfig, ConfigError> {
        match user {
            None => self.engine_config_as(profile, platform),
            Some(u) => {
                let platform = platform.or(self.file.platform.as_deref());
                let merged = merge_nodes(self.config_for(profile), &u.root);
                let mut c = EngineConfig::from_node(profile, platform, &merged, &u.file)?;
                c.delegation.child_budget = self.child_budget;
                Ok(c)
            }
        }
    }

    /// `[config]` with a user's config.yaml laid over it.
    pub fn config_node_over(&self, user: Option<&UserConfig>) -> Node {
        match user {
            Some(u) if !u.is_empty() => merge_nodes(&self.config_node, &u.root),
            _ => self.config_node.clone(),
        }
    }

    /// `[config]` as Hermes would read it (with any laid-over config).
    pub fn config_node(&self) -> &Node {
        &self.config_node
    }

    /// A top-level section of `[config]` (e.g. `tool_loop_guardrails`) as Hermes reads it.
    pub fn config_section(&self, key: &str) -> Option<&Node> {
        self.config_node.get(key)
    }

    /// The engine configuration: the profile, the scenario's `[config]`, and the platform
    /// (`platform` overrides the scenario's).
    pub fn engine_config(&self, platform: Option<&str>) -> Result<EngineConfig, ConfigError> {
        self.engine_config_as(self.profile, platform)
    }

    /// [`Scenario::engine_config`] under another profile.
    pub fn engine_config_as(
        &self,
        profile: ProfileName,
        platform: Option<&str>,
    ) -> Result<EngineConfig, ConfigError> {
        let platform = platform.or(self.file.platform.as_deref());
        let mut c =
            EngineConfig::from_node(profile, platform, self.config_for(profile), &self.path)?;
        c.delegation.child_budget = self.child_budget;
        Ok(c)
    }

    /// `[config]` where `profile` reads it: it is in the keys of the scenario's own runtime,
    /// so a profile of another runtime runs at that runtime's defaults.
    pub fn config_for(&self, profile: ProfileName) -> &Node {
        static NONE: Node = Node {
            value: Yaml::Null,
            line: 0,
        };
        if profile.runtime() == self.profile.runtime() {
            &self.config_node
        } else {
            self.foreign_config.get(&profile.runtime()).unwrap_or(&NONE)
        }
    }
}

fn str_node(s: &str, line: usize) -> Node {
    Node {
        value: Yaml::Str(s.to_string()),
        line,
    }
}

/// Sets `parts` in a mapping, creating mappings on the way.
fn set_path(node: &mut Node, parts: &[&str], value: Node) -> Result<(), String> {
    let Yaml::Map(pairs) = &mut node.value else {
        return Err("the scenario's config has a value where a section should be".into());
    };
    let (first, rest) = parts.split_first().expect("a non-empty key");
    let slot = match pairs
        .iter()
        .position(|(k, _)| matches!(&k.value, Yaml::Str(s) if s == first))
    {
        Some(i) => &mut pairs[i].1,
        None => {
            let empty = Node {
                value: if rest.is_empty() {
                    Yaml::Null
                } else {
                    Yaml::Map(Vec::new())
                },
                line: 0,
            };
            pairs.push((str_node(first, 0), empty));
            &mut pairs.last_mut().expect("just pushed").1
        }
    };
    if rest.is_empty() {
        *slot = value;
        Ok(())
    } else {
        if !slot.is_map() {
            return Err(format!(
                "`{first}` is not a section in the scenario's config"
            ));
        }
        set_path(slot, rest, value)
    }
}

/// `over` laid on `base`: mappings merge key by key (recursively), anything else replaces.
pub fn merge_nodes(base: &Node, over: &Node) -> Node {
    match (&base.value, &over.value) {
        (Yaml::Map(b), Yaml::Map(o)) => {
            let mut pairs: Vec<(Node, Node)> = b.clone();
            let mut index = KeyIndex::new(&pairs);
            for (k, v) in o {
                match index.find(&pairs, &k.value) {
                    Some(pos) => pairs[pos].1 = merge_nodes(&pairs[pos].1, v),
                    None => {
                        index.add(&k.value, pairs.len());
                        pairs.push((k.clone(), v.clone()));
                    }
                }
            }
            Node {
                value: Yaml::Map(pairs),
                line: over.line,
            }
        }
        _ => over.clone(),
    }
}

/// A TOML table at `path` of the file as the YAML mapping Hermes would have read, with the
/// file's lines.
pub(super) fn table_to_node(t: &toml::Table, spans: &SpanTree, path: &str) -> Node {
    Node {
        value: Yaml::Map(
            t.iter()
                .map(|(k, v)| {
                    let p = format!("{path}.{k}");
                    (
                        str_node(k, spans.line_of_key(&p)),
                        toml_to_node(v, spans, &p),
                    )
                })
                .collect(),
        ),
        line: spans.line_of_path(path),
    }
}

/// TOML values in Hermes's config shapes become the YAML values Hermes would have read.
fn toml_to_node(v: &toml::Value, spans: &SpanTree, path: &str) -> Node {
    let value = match v {
        toml::Value::String(s) => Yaml::Str(s.clone()),
        toml::Value::Integer(i) => Yaml::Int(*i as i128),
        toml::Value::Float(f) => Yaml::Float(*f),
        toml::Value::Boolean(b) => Yaml::Bool(*b),
        toml::Value::Datetime(d) => Yaml::Str(d.to_string()),
        toml::Value::Array(a) => Yaml::Seq(
            a.iter()
                .enumerate()
                .map(|(i, e)| toml_to_node(e, spans, &format!("{path}[{i}]")))
                .collect(),
        ),
        toml::Value::Table(t) => return table_to_node(t, spans, path),
    };
    Node {
        value,
        line: spans.line_of_path(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_a_config_with_many_keys_is_not_quadratic() {
        // 60,000 new keys: ~1.8 billion key comparisons if each were compared with all before.
        let text: String = (0..60_000).map(|i| format!("k{i}: {i}\n")).collect();
        let over = loopsim_engine::yaml::parse(&text).unwrap();
        let base = loopsim_engine::yaml::parse("k5: {a: 1}\nz: 2\n").unwrap();
        let merged = merge_nodes(&base, &over);
        let Yaml::Map(pairs) = &merged.value else {
            panic!("a mapping")
        };
        assert_eq!(pairs.len(), 60_001);
        assert_eq!(merged.get("k5").unwrap().value, Yaml::Int(5));
        assert_eq!(merged.get("z").unwrap().value, Yaml::Int(2));
        // Mappings still merge key by key, the first equal key taking the value.
        let deep = merge_nodes(
            &loopsim_engine::yaml::parse("g: {a: 1, b: 2}\n").unwrap(),
            &loopsim_engine::yaml::parse("g: {b: 3}\n").unwrap(),
        );
        let g = deep.get("g").unwrap();
        assert_eq!(g.get("a").unwrap().value, Yaml::Int(1));
        assert_eq!(g.get("b").unwrap().value, Yaml::Int(3));
    }

    #[test]
    fn a_sweep_setting_is_set_at_its_path() {
        let mut node = loopsim_engine::yaml::parse(
            "tool_loop_guardrails:\n  warn_after:\n    exact_failure: 2\n",
        )
        .unwrap();
        let three = Node {
            value: Yaml::Int(3),
            line: 0,
        };
        set_path(
            &mut node,
            &["tool_loop_guardrails", "warn_after", "exact_failure"],
            three.clone(),
        )
        .unwrap();
        set_path(&mut node, &["delegation", "max_iterations"], three).unwrap();
        let g = node
            .get("tool_loop_guardrails")
            .unwrap()
            .get("warn_after")
            .unwrap();
        assert_eq!(g.get("exact_failure").unwrap().value, Yaml::Int(3));
        assert_eq!(
            node.get("delegation")
                .unwrap()
                .get("max_iterations")
                .unwrap()
                .value,
            Yaml::Int(3)
        );
        let err = set_path(
            &mut node,
            &["tool_loop_guardrails", "warn_after", "exact_failure", "x"],
            Node {
                value: Yaml::Null,
                line: 0,
            },
        )
        .unwrap_err();
        assert!(err.contains("not a section"), "{err}");
    }
}
