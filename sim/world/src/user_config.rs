//! A user's Hermes `config.yaml`, laid over a scenario's `[config]`.
//!
//! Hermes ignores unknown keys and replaces bad values by their defaults, so loopsim runs such
//! a file as Hermes would, and says what Hermes silently did: every unknown key inside the
//! sections loopsim reads, every key the profile does not read, and every replaced value is a
//! [`Diagnostic`] with the file, line and key.

use loopsim_engine::config::keys::{self, KeyProblem, Scope};
use loopsim_engine::config::{ConfigError, ConfigNote, EngineConfig};
use loopsim_engine::hash::Hash;
use loopsim_engine::profile::{ProfileName, Runtime};
use loopsim_engine::yaml::{self, Node, Yaml};

/// A warning about an input: where, which key, and what loopsim did.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Diagnostic {
    pub file: String,
    pub line: usize,
    pub key: String,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: `{}`: {}",
            self.file, self.line, self.key, self.message
        )
    }
}

/// Larger config files are refused (Hermes's own is a few kilobytes).
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// A parsed `config.yaml`.
#[derive(Clone, Debug)]
pub struct UserConfig {
    /// The file as the user named it.
    pub file: String,
    /// SHA-256 of its bytes (reports and baselines name it).
    pub hash: Hash,
    /// The file's text (traces embed it).
    pub text: String,
    pub root: Node,
}

impl UserConfig {
    /// Reads and parses a config file.
    pub fn load(path: &std::path::Path) -> Result<UserConfig, ConfigError> {
        let file = path.display().to_string();
        let text =
            crate::input::read_bounded(path, MAX_CONFIG_BYTES, "config files").map_err(|e| {
                ConfigError::Value {
                    file: file.clone(),
                    line: 0,
                    key: "file".into(),
                    message: e.to_string(),
                }
            })?;
        let text = String::from_utf8(text).map_err(|e| ConfigError::Value {
            file: file.clone(),
            line: 0,
            key: "file".into(),
            message: format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        })?;
        UserConfig::parse(&text, &file)
    }

    /// Parses config text; `file` names it in messages.
    pub fn parse(text: &str, file: &str) -> Result<UserConfig, ConfigError> {
        let root = yaml::parse(text).map_err(|e| ConfigError::Yaml {
            file: file.to_string(),
            line: e.line,
            message: format!("column {}: {}", e.col, e.message),
        })?;
        Ok(UserConfig {
            file: file.to_string(),
            hash: Hash::of(text.as_bytes()),
            text: text.to_string(),
            root,
        })
    }

    /// Whether the file sets `path` (a dotted key).
    pub fn sets(&self, path: &str) -> bool {
        self.root.at(path).is_some()
    }

    /// Keys Hermes ignores or this profile does not read, inside the sections loopsim reads.
    /// Keys Hermes reads for other purposes are not reported.
    pub fn key_warnings(&self, profile: ProfileName) -> Vec<Diagnostic> {
        keys::check(&self.root, profile, Scope::UserFile)
            .into_iter()
            .filter(|i| i.problem != KeyProblem::NotSimulated)
            .map(|i| Diagnostic {
                file: self.file.clone(),
                line: i.line,
                message: format!("{}; Hermes ignores it", i.message()),
                key: i.key,
            })
            .collect()
    }

    /// Keys of this file that another spelling of the same setting overrides (a flat
    /// threshold when `merged`, the scenario's config with this file laid over it, has the
    /// nested key): Hermes reads only the winner.
    pub fn shadowed(&self, merged: &Node, scenario: &str) -> Vec<Diagnostic> {
        keys::SIMULATED
            .iter()
            .filter_map(|k| {
                let (winner, false) = k.alias? else {
                    return None;
                };
                let mine = self.root.at(k.path)?;
                merged.at(winner)?;
                let by = if self.sets(winner) {
                    "this file"
                } else {
                    scenario
                };
                Some(Diagnostic {
                    file: self.file.clone(),
                    line: mine.line,
                    key: k.path.to_string(),
                    message: format!(
                        "`{winner}` (set in {by}) is the same setting and wins: Hermes ignores this key"
                    ),
                })
            })
            .collect()
    }

    /// A value note of an engine config built with this file, as a warning on the file that
    /// set the key (`scenario` otherwise).
    pub fn note_warning(&self, note: &ConfigNote, scenario: &str) -> Diagnostic {
        let file = if self.sets(&note.key) || note.key == "(top level)" {
            self.file.clone()
        } else {
            scenario.to_string()
        };
        Diagnostic {
            file,
            line: note.line,
            key: note.key.clone(),
            message: format!("{} (as Hermes does)", note.message),
        }
    }

    /// The file on its own (`guard`, `validate`): its engine config under `profile` and
    /// `platform`, and every warning about it, in file order.
    pub fn diagnostics(
        &self,
        profile: ProfileName,
        platform: Option<&str>,
    ) -> Result<(EngineConfig, Vec<Diagnostic>), ConfigError> {
        let cfg = EngineConfig::from_node(profile, platform, &self.root, &self.file)?;
        let mut all = self.key_warnings(profile);
        all.extend(cfg.notes.iter().map(|n| self.note_warning(n, &self.file)));
        all.sort();
        all.dedup();
        Ok((cfg, all))
    }

    /// The file's part that `runtime` reads, for commands that run several runtimes with one
    /// file: another runtime's top-level settings are left to it (Hermes keeps every other key,
    /// and warns of those as usual).
    pub fn for_runtime(&self, runtime: Runtime) -> UserConfig {
        let Yaml::Map(pairs) = &self.root.value else {
            return self.clone();
        };
        let name = |k: &Node| match &k.value {
            Yaml::Str(s) => Some(s.clone()),
            _ => None,
        };
        let keep = |k: &Node| match (runtime, name(k)) {
            (Runtime::Hermes, Some(n)) => {
                loopsim_engine::config::runtime::reads(Runtime::Hermes, &n)
                    || loopsim_engine::config::runtime::lookup(&n).is_none()
            }
            (Runtime::Hermes, None) => true,
            (r, Some(n)) => loopsim_engine::config::runtime::reads(r, &n),
            (_, None) => false,
        };
        let mut u = self.clone();
        u.root.value = Yaml::Map(pairs.iter().filter(|(k, _)| keep(k)).cloned().collect());
        u
    }

    /// Whether the file is empty (a bare document): it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.root.value == Yaml::Null
    }
}

/// Every warning about the config of these runs (each scenario under a profile, with a user's
/// file laid over it): the file's unknown keys and keys the profile does not read, keys another
/// spelling overrides, and every value Hermes would replace. Each once, in file order.
pub fn run_warnings(
    runs: &[(&crate::scenario::Scenario, ProfileName)],
    platform: Option<&str>,
    user: Option<&UserConfig>,
) -> Result<Vec<Diagnostic>, ConfigError> {
    let mut all: Vec<Diagnostic> = Vec::new();
    let first = runs.first().map(|r| r.1.runtime());
    let mixed = runs.iter().any(|r| Some(r.1.runtime()) != first);
    for (i, (sc, profile)) in runs.iter().enumerate() {
        let part = user.map(|u| {
            if mixed {
                u.for_runtime(profile.runtime())
            } else {
                u.clone()
            }
        });
        let user = part.as_ref();
        if let Some(u) = user {
            if !runs[..i].iter().any(|r| r.1 == *profile) {
                all.extend(u.key_warnings(*profile));
            }
            all.extend(u.shadowed(&sc.config_node_over(Some(u)), &sc.path));
        }
        let cfg = sc.engine_config_over(*profile, platform, user)?;
        for n in &cfg.notes {
            all.push(match user {
                Some(u) => u.note_warning(n, &sc.path),
                None => Diagnostic {
                    file: sc.path.clone(),
                    line: n.line,
                    key: n.key.clone(),
                    message: format!("{} (as Hermes does)", n.message),
                },
            });
        }
    }
    all.sort();
    all.dedup();
    Ok(all)
}
