//! A YAML reader that types scalars the way PyYAML does.
//!
//! Hermes loads `config.yaml` with PyYAML, which follows YAML 1.1: an unquoted `yes`, `off`
//! or `On` is a boolean, `0x1F` and `017` are integers, `1e5` (no dot) is a string. Modern
//! YAML crates follow 1.2, so we take events from `saphyr-parser` (which keeps each scalar's
//! quoting style and position) and apply PyYAML's implicit resolvers ourselves.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use saphyr_parser::{Event, Parser, ScalarStyle};

/// A YAML value as PyYAML's safe loader would build it.
#[derive(Clone, Debug, PartialEq)]
pub enum Yaml {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

/// A value with the (1-based) line it starts on.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub value: Yaml,
    pub line: usize,
}

impl Node {
    /// Python's `mapping.get(key)` for a string key; `None` for missing keys and non-mappings.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Yaml::Map(pairs) => pairs
                .iter()
                .rev()
                .find(|(k, _)| matches!(&k.value, Yaml::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn is_map(&self) -> bool {
        matches!(self.value, Yaml::Map(_))
    }
}

/// A YAML syntax error with its position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {col}: {message}")]
pub struct YamlError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

static BOOL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$")
        .unwrap()
});
static INT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$").unwrap()
});
static FLOAT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$").unwrap()
});
static NULL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(?:~|null|Null|NULL|)$").unwrap());

fn sexagesimal(s: &str) -> (f64, bool) {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v = 0.0;
    for part in body.split(':') {
        v = v * 60.0 + part.parse::<f64>().unwrap_or(0.0);
    }
    (v, neg)
}

fn construct_int(s: &str) -> Yaml {
    let s = s.replace('_', "");
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, &s[..]),
    };
    let parsed = if body == "0" {
        Some(0)
    } else if let Some(b) = body.strip_prefix("0b") {
        i128::from_str_radix(b, 2).ok()
    } else if let Some(h) = body.strip_prefix("0x") {
        i128::from_str_radix(h, 16).ok()
    } else if body.contains(':') {
        Some(sexagesimal(body).0 as i128)
    } else if let Some(o) = body.strip_prefix('0') {
        i128::from_str_radix(o, 8).ok()
    } else {
        body.parse().ok()
    };
    match parsed {
        Some(v) => Yaml::Int(if neg { -v } else { v }),
        // Beyond i128: keep the text; Python would hold a big int, config never needs one.
        None => Yaml::Str(s),
    }
}

fn construct_float(s: &str) -> Yaml {
    let s = s.replace('_', "").to_lowercase();
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, &s[..]),
    };
    let v = if body == ".inf" {
        f64::INFINITY
    } else if body == ".nan" {
        f64::NAN
    } else if body.contains(':') {
        sexagesimal(body).0
    } else {
        body.parse().unwrap_or(f64::NAN)
    };
    Yaml::Float(if neg { -v } else { v })
}

/// PyYAML's implicit typing of a plain scalar.
pub fn resolve_plain(s: &str) -> Yaml {
    if NULL.is_match(s) {
        Yaml::Null
    } else if BOOL.is_match(s) {
        Yaml::Bool(matches!(
            s,
            "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON"
        ))
    } else if INT.is_match(s) {
        construct_int(s)
    } else if FLOAT.is_match(s) {
        construct_float(s)
    } else {
        Yaml::Str(s.to_string())
    }
}

/// Parses the first document of a YAML text (an empty text is `null`, as PyYAML gives `None`).
pub fn parse(text: &str) -> Result<Node, YamlError> {
    let mut anchors: HashMap<usize, Node> = HashMap::new();
    let mut stack: Vec<(Node, Option<Node>, usize)> = Vec::new();
    let mut root: Option<Node> = None;
    for item in Parser::new_from_str(text) {
        let (event, span) = item.map_err(|e| YamlError {
            line: e.marker().line(),
            col: e.marker().col() + 1,
            message: e.info().to_string(),
        })?;
        let line = span.start.line();
        let finished: Option<(Node, usize)> = match event {
            Event::Scalar(value, style, anchor, tag) => {
                let typed = match (&tag, style) {
                    (Some(t), _) if t.handle == "!!" || t.handle == "tag:yaml.org,2002:" => {
                        match t.suffix.as_str() {
                            "str" => Yaml::Str(value.to_string()),
                            _ => resolve_plain(&value),
                        }
                    }
                    (Some(t), _) => {
                        return Err(YamlError {
                            line,
                            col: span.start.col() + 1,
                            message: format!("unsupported tag {}{}", t.handle, t.suffix),
                        });
                    }
                    (None, ScalarStyle::Plain) => resolve_plain(&value),
                    (None, _) => Yaml::Str(value.to_string()),
                };
                Some((Node { value: typed, line }, anchor))
            }
            Event::Alias(id) => {
                let node = anchors.get(&id).cloned().ok_or_else(|| YamlError {
                    line,
                    col: span.start.col() + 1,
                    message: "unknown alias".into(),
                })?;
                Some((node, 0))
            }
            Event::SequenceStart(anchor, _) => {
                stack.push((
                    Node {
                        value: Yaml::Seq(Vec::new()),
                        line,
                    },
                    None,
                    anchor,
                ));
                None
            }
            Event::MappingStart(anchor, _) => {
                stack.push((
                    Node {
                        value: Yaml::Map(Vec::new()),
                        line,
                    },
                    None,
                    anchor,
                ));
                None
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (mut node, _, anchor) = stack.pop().expect("balanced events");
                if let Yaml::Map(pairs) = &mut node.value {
                    apply_merge_keys(pairs);
                }
                Some((node, anchor))
            }
            Event::DocumentEnd if root.is_some() => break,
            _ => None,
        };
        if let Some((node, anchor)) = finished {
            if anchor != 0 {
                anchors.insert(anchor, node.clone());
            }
            match stack.last_mut() {
                None => root = Some(node),
                Some((parent, pending_key, _)) => match &mut parent.value {
                    Yaml::Seq(items) => items.push(node),
                    Yaml::Map(pairs) => match pending_key.take() {
                        None => *pending_key = Some(node),
                        Some(key) => pairs.push((key, node)),
                    },
                    _ => unreachable!("only collections are stacked"),
                },
            }
        }
    }
    Ok(root.unwrap_or(Node {
        value: Yaml::Null,
        line: 1,
    }))
}

/// `<<: *base` merges another mapping's keys that this mapping does not set itself.
fn apply_merge_keys(pairs: &mut Vec<(Node, Node)>) {
    let Some(pos) = pairs
        .iter()
        .position(|(k, _)| matches!(&k.value, Yaml::Str(s) if s == "<<"))
    else {
        return;
    };
    let (_, merged) = pairs.remove(pos);
    let sources: Vec<Node> = match merged.value {
        Yaml::Map(_) => vec![merged],
        Yaml::Seq(items) => items,
        _ => return,
    };
    for src in sources {
        if let Yaml::Map(extra) = src.value {
            for (k, v) in extra {
                if !pairs.iter().any(|(have, _)| have.value == k.value) {
                    pairs.push((k, v));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_1_1_scalars() {
        assert_eq!(resolve_plain("yes"), Yaml::Bool(true));
        assert_eq!(resolve_plain("Off"), Yaml::Bool(false));
        assert_eq!(resolve_plain("y"), Yaml::Str("y".into()));
        assert_eq!(resolve_plain("017"), Yaml::Int(15));
        assert_eq!(resolve_plain("0x1F"), Yaml::Int(31));
        assert_eq!(resolve_plain("1_000"), Yaml::Int(1000));
        assert_eq!(resolve_plain("1:30"), Yaml::Int(90));
        assert_eq!(resolve_plain("1e5"), Yaml::Str("1e5".into()));
        assert_eq!(resolve_plain("1.5e+3"), Yaml::Float(1500.0));
        assert_eq!(resolve_plain("-.inf"), Yaml::Float(f64::NEG_INFINITY));
        assert_eq!(resolve_plain("~"), Yaml::Null);
        assert_eq!(resolve_plain(""), Yaml::Null);
    }

    #[test]
    fn documents_quotes_lines_and_aliases() {
        let doc = "a: yes\nb: 'yes'\nbase: &b\n  x: 1\nc:\n  <<: *b\n  y: 2\n";
        let n = parse(doc).unwrap();
        assert_eq!(n.get("a").unwrap().value, Yaml::Bool(true));
        assert_eq!(n.get("b").unwrap().value, Yaml::Str("yes".into()));
        assert_eq!(n.get("b").unwrap().line, 2);
        let c = n.get("c").unwrap();
        assert_eq!(c.get("x").unwrap().value, Yaml::Int(1));
        assert_eq!(c.get("y").unwrap().value, Yaml::Int(2));
        assert_eq!(parse("").unwrap().value, Yaml::Null);
        let err = parse("a: [1, 2\nb: 3").unwrap_err();
        assert!(err.line >= 1, "{err}");
    }
}
