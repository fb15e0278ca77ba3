//! A user's Hermes `config.yaml`, laid over a scenario's `[config]`.
//!
//! Hermes ignores unknown keys and replaces bad values by their defaults, so loopsim runs such
//! a file as Hermes would, and says what Hermes silently did: every unknown key inside the
//! sections loopsim reads, every key the profile does not read, and every replaced value is a
//! [`Diagnostic`] with the file, line and key.

use loopsim_engine::config::keys::{self, KeyProblem, Scope};
use loopsim_engine::config::{ConfigError, ConfigNote};
use loopsim_engine::hash::Hash;
use loopsim_engine::profile::ProfileName;
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
        if let Ok(m) = std::fs::metadata(path)
            && m.len() > MAX_CONFIG_BYTES
        {
            return Err(ConfigError::Value {
                file,
                line: 0,
                key: "file".into(),
                message: format!(
                    "{} bytes: loopsim reads config files of at most {} MiB",
                    m.len(),
                    MAX_CONFIG_BYTES >> 20
                ),
            });
        }
        let text = std::fs::read(path).map_err(|e| ConfigError::Value {
            file: file.clone(),
            line: 0,
            key: "file".into(),
            message: format!("cannot read: {e}"),
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
        let mut node = &self.root;
        for part in path.split('.') {
            match node.get(part) {
                Some(n) => node = n,
                None => return false,
            }
        }
        true
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

    /// Whether the file is empty (a bare document): it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.root.value == Yaml::Null
    }
}
