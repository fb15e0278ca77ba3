//! Model prices per million tokens: a built-in table of list prices, overridable by a file.
//!
//! A model matches a row when its name, without a provider prefix (`anthropic/`), is the row's
//! name or the row's name followed by a date or tag suffix (`-20250514`, `@2024-08-06`,
//! `:latest`). Anything else is unknown: loopsim says so rather than guess.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::ImportError;

/// Dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    pub input: f64,
    pub cache_read: f64,
    /// Providers without cache-write charges bill writes as input.
    pub cache_write: Option<f64>,
    pub output: f64,
}

/// Where a price came from.
#[derive(Clone, Debug, PartialEq)]
pub enum PriceSource {
    BuiltIn(&'static str),
    File(String),
}

/// List prices, dollars per million tokens: input, cache read, cache write, output.
const BUILT_IN: &[(&str, f64, f64, Option<f64>, f64)] = &[
    ("claude-opus-4", 15.0, 1.50, Some(18.75), 75.0),
    ("claude-opus-4-1", 15.0, 1.50, Some(18.75), 75.0),
    ("claude-opus-4-5", 5.0, 0.50, Some(6.25), 25.0),
    ("claude-sonnet-4", 3.0, 0.30, Some(3.75), 15.0),
    ("claude-sonnet-4-5", 3.0, 0.30, Some(3.75), 15.0),
    ("claude-3-7-sonnet", 3.0, 0.30, Some(3.75), 15.0),
    ("claude-haiku-4-5", 1.0, 0.10, Some(1.25), 5.0),
    ("claude-3-5-haiku", 0.80, 0.08, Some(1.0), 4.0),
    ("gpt-4o", 2.50, 1.25, None, 10.0),
    ("gpt-4o-mini", 0.15, 0.075, None, 0.60),
    ("gpt-4.1", 2.0, 0.50, None, 8.0),
    ("gpt-4.1-mini", 0.40, 0.10, None, 1.60),
    ("gpt-5", 1.25, 0.125, None, 10.0),
    ("gpt-5-mini", 0.25, 0.025, None, 2.0),
];

/// The price table: the built-in rows, then a file's rows over them.
#[derive(Clone, Debug, Default)]
pub struct Prices {
    file: BTreeMap<String, ModelPrice>,
    file_name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceFile {
    models: BTreeMap<String, toml::Spanned<ModelPrice>>,
}

fn normalise(model: &str) -> String {
    let m = model.trim().to_ascii_lowercase();
    m.rsplit('/').next().unwrap_or(&m).replace('.', "-")
}

/// `name` is `row`, or `row` then a date (`-20250514`, `-2025-05-14`) or a tag (`@...`,
/// `:...`, `-latest`). A version number after the row (`claude-opus-4-9`) is another model.
fn matches(name: &str, row: &str) -> bool {
    let Some(rest) = name.strip_prefix(row) else {
        return false;
    };
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let dated = rest.strip_prefix('-').is_some_and(|d| {
        digits(d, 8)
            || (d.len() == 10
                && digits(&d[..4], 4)
                && &d[4..5] == "-"
                && digits(&d[5..7], 2)
                && &d[7..8] == "-"
                && digits(&d[8..], 2))
    });
    rest.is_empty() || rest.starts_with('@') || rest.starts_with(':') || rest == "-latest" || dated
}

impl Prices {
    /// The built-in table alone.
    pub fn built_in() -> Prices {
        Prices::default()
    }

    /// The built-in table with a TOML file's `[models."name"]` rows over it.
    pub fn with_file(path: &Path) -> Result<Prices, ImportError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ImportError::Io {
            path: shown.clone(),
            message: e.to_string(),
        })?;
        let line_of = |at: usize| text[..at.min(text.len())].matches('\n').count() + 1;
        let bad = |at: usize, field: String, message: String| ImportError::Prices {
            path: shown.clone(),
            line: line_of(at),
            field,
            message,
        };
        let parsed: PriceFile = toml::from_str(&text).map_err(|e| {
            let at = e.span().map_or(0, |s| s.start);
            // The key: the `key =` on the offending line.
            let line = text[..at.min(text.len())].rsplit('\n').next().unwrap_or("");
            let key = line
                .split_once('=')
                .map_or("models", |(k, _)| k.trim())
                .to_string();
            bad(at, key, e.message().trim().to_string())
        })?;
        let mut file = BTreeMap::new();
        for (name, v) in parsed.models {
            let at = v.span().start;
            let p = v.into_inner();
            for (k, x) in [
                ("input", p.input),
                ("cache_read", p.cache_read),
                ("cache_write", p.cache_write.unwrap_or(0.0)),
                ("output", p.output),
            ] {
                if !(x.is_finite() && x >= 0.0) {
                    return Err(bad(
                        at,
                        format!("models.{name}.{k}"),
                        format!("{x} is not a non-negative price"),
                    ));
                }
            }
            file.insert(normalise(&name), p);
        }
        Ok(Prices {
            file,
            file_name: shown,
        })
    }

    /// The price of `model`, or `None` when neither table knows it.
    pub fn lookup(&self, model: &str) -> Option<(ModelPrice, PriceSource)> {
        let name = normalise(model);
        let best = |rows: &mut dyn Iterator<Item = &str>| -> Option<String> {
            rows.filter(|r| matches(&name, r))
                .max_by_key(|r| r.len())
                .map(str::to_string)
        };
        if let Some(row) = best(&mut self.file.keys().map(String::as_str)) {
            return Some((self.file[&row], PriceSource::File(self.file_name.clone())));
        }
        let row = best(&mut BUILT_IN.iter().map(|r| r.0))?;
        let &(n, input, cache_read, cache_write, output) = BUILT_IN.iter().find(|r| r.0 == row)?;
        Some((
            ModelPrice {
                input,
                cache_read,
                cache_write,
                output,
            },
            PriceSource::BuiltIn(n),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_prefixes_and_dates_match_new_versions_do_not() {
        let p = Prices::built_in();
        let (s, _) = p.lookup("anthropic/claude-sonnet-4-20250514").unwrap();
        assert_eq!((s.input, s.output), (3.0, 15.0));
        let (o, src) = p.lookup("claude-opus-4.5").unwrap();
        assert_eq!(o.input, 5.0);
        assert_eq!(src, PriceSource::BuiltIn("claude-opus-4-5"));
        assert!(p.lookup("claude-opus-4-9").is_none());
        assert!(p.lookup("claude-opus-4-9-20260301").is_none());
        assert!(p.lookup("anthropic/claude-opus-4.6-20260205").is_none());
        assert_eq!(p.lookup("gpt-4o-2024-08-06").unwrap().0.input, 2.5);
        assert!(p.lookup("my-local-model").is_none());
        assert_eq!(p.lookup("gpt-4o-mini").unwrap().0.input, 0.15);
    }
}
