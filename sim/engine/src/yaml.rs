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

    /// The value at a dotted path of string keys (`tool_loop_guardrails.warn_after`).
    pub fn at(&self, path: &str) -> Option<&Node> {
        path.split('.').try_fold(self, |n, part| n.get(part))
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

/// Levels of collections past which a text is refused. PyYAML's composer recurses once per
/// level and raises `RecursionError` near 490, so Hermes cannot load anything deeper either.
pub const MAX_DEPTH: usize = 500;

/// Memory the values of one text may take, counted as nodes plus string bytes. PyYAML shares
/// an aliased value between its uses; loopsim copies it, so a small text full of aliases of
/// aliases ("billion laughs") would otherwise expand without bound.
pub const MAX_BYTES: usize = 64 << 20;

/// What one node counts against [`MAX_BYTES`].
fn own_cost(value: &Yaml) -> usize {
    std::mem::size_of::<Node>()
        + match value {
            Yaml::Str(s) => s.len(),
            _ => 0,
        }
}

/// A collection being read: its node, a key waiting for its value, its anchor, and the
/// height and cost of what it holds so far. Heights count collection levels (a scalar is 0).
struct Open {
    node: Node,
    key: Option<Node>,
    anchor: usize,
    height: usize,
    cost: usize,
}

/// An anchored value with its height and cost.
struct Anchored {
    node: Node,
    height: usize,
    cost: usize,
}

/// A finished value on its way into its parent.
struct Done {
    node: Node,
    anchor: usize,
    height: usize,
    cost: usize,
}

fn expansion_error(line: usize, col: usize) -> YamlError {
    YamlError {
        line,
        col,
        message: format!(
            "the file expands past loopsim's limit of {} MiB of values (aliases count once per use)",
            MAX_BYTES >> 20
        ),
    }
}

fn depth_error(line: usize, col: usize, via_alias: bool) -> YamlError {
    YamlError {
        line,
        col,
        message: format!(
            "{} deeper than {MAX_DEPTH} levels, loopsim's limit (PyYAML gives up near 490)",
            if via_alias {
                "this alias nests a value"
            } else {
                "values nest"
            }
        ),
    }
}

/// PyYAML refuses a `...` before the first document ("expected the node content"), which
/// saphyr-parser skips: look for one on the lines before `first_line`.
fn leading_document_end(text: &str, first_line: Option<usize>) -> Result<(), YamlError> {
    for (n, line) in text.split('\n').enumerate() {
        if first_line.is_some_and(|l| n + 1 >= l) {
            break;
        }
        let line = if n == 0 {
            line.strip_prefix('\u{feff}').unwrap_or(line)
        } else {
            line
        };
        if let Some(rest) = line.strip_prefix("...")
            && matches!(rest.chars().next(), None | Some(' ' | '\t' | '\r'))
        {
            return Err(YamlError {
                line: n + 1,
                col: 1,
                message: "expected the node content, but found '<document end>'".into(),
            });
        }
    }
    Ok(())
}

/// Parses a YAML text holding one document, as PyYAML's `yaml.safe_load` does: an empty text
/// is `null`, and a second document is an error. Aliases are copied, within [`MAX_BYTES`];
/// nesting is limited to [`MAX_DEPTH`].
pub fn parse(text: &str) -> Result<Node, YamlError> {
    let mut anchors: HashMap<usize, Anchored> = HashMap::new();
    let mut stack: Vec<Open> = Vec::new();
    let mut root: Option<Node> = None;
    let mut documents = 0usize;
    let mut total = 0usize;
    for item in Parser::new_from_str(text) {
        let (event, span) = item.map_err(|e| YamlError {
            line: e.marker().line(),
            col: e.marker().col() + 1,
            message: e.info().to_string(),
        })?;
        let line = span.start.line();
        let col = span.start.col() + 1;
        // Every node counts against the limit once made: scalars and collections as they
        // are read, an alias's whole copy, and each anchor's own copy.
        let mut charge = |cost: usize| {
            total = total.saturating_add(cost);
            if total > MAX_BYTES {
                Err(expansion_error(line, col))
            } else {
                Ok(())
            }
        };
        let mut open = |value: Yaml, anchor: usize, depth: usize| {
            if depth >= MAX_DEPTH {
                return Err(depth_error(line, col, false));
            }
            let node = Node { value, line };
            let cost = own_cost(&node.value);
            charge(cost)?;
            Ok(Open {
                node,
                key: None,
                anchor,
                height: 0,
                cost,
            })
        };
        let finished: Option<Done> = match event {
            Event::StreamEnd if documents == 0 => {
                leading_document_end(text, None)?;
                None
            }
            Event::DocumentStart(_) => {
                if documents == 0 {
                    leading_document_end(text, Some(line))?;
                } else {
                    return Err(YamlError {
                        line,
                        col,
                        message: "expected a single document in the stream, but found another \
                                  document (PyYAML's safe_load refuses it too)"
                            .into(),
                    });
                }
                documents += 1;
                None
            }
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
                            col,
                            message: format!("unsupported tag {}{}", t.handle, t.suffix),
                        });
                    }
                    (None, ScalarStyle::Plain) => resolve_plain(&value),
                    (None, _) => Yaml::Str(value.to_string()),
                };
                let cost = own_cost(&typed);
                charge(cost)?;
                Some(Done {
                    node: Node { value: typed, line },
                    anchor,
                    height: 0,
                    cost,
                })
            }
            Event::Alias(id) => {
                let a = anchors.get(&id).ok_or_else(|| YamlError {
                    line,
                    col,
                    message: "unknown alias".into(),
                })?;
                // Checked before copying, so the copy itself stays within the limits.
                if stack.len() + a.height > MAX_DEPTH {
                    return Err(depth_error(line, col, true));
                }
                charge(a.cost)?;
                // The value is the anchor's; its place in the file is the alias's.
                let mut node = a.node.clone();
                node.line = line;
                Some(Done {
                    node,
                    anchor: 0,
                    height: a.height,
                    cost: a.cost,
                })
            }
            Event::SequenceStart(anchor, _) => {
                stack.push(open(Yaml::Seq(Vec::new()), anchor, stack.len())?);
                None
            }
            Event::MappingStart(anchor, _) => {
                stack.push(open(Yaml::Map(Vec::new()), anchor, stack.len())?);
                None
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let mut o = stack.pop().ok_or_else(|| YamlError {
                    line,
                    col,
                    message: "unbalanced collection end".into(),
                })?;
                if let Yaml::Map(pairs) = &mut o.node.value {
                    apply_merge_keys(pairs);
                }
                Some(Done {
                    node: o.node,
                    anchor: o.anchor,
                    height: o.height + 1,
                    cost: o.cost,
                })
            }
            _ => None,
        };
        let Some(done) = finished else { continue };
        if done.anchor != 0 {
            charge(done.cost)?;
            anchors.insert(
                done.anchor,
                Anchored {
                    node: done.node.clone(),
                    height: done.height,
                    cost: done.cost,
                },
            );
        }
        match stack.last_mut() {
            None => root = Some(done.node),
            Some(parent) => {
                parent.height = parent.height.max(done.height);
                parent.cost = parent.cost.saturating_add(done.cost);
                match &mut parent.node.value {
                    Yaml::Seq(items) => items.push(done.node),
                    Yaml::Map(pairs) => match parent.key.take() {
                        None => parent.key = Some(done.node),
                        Some(key) => pairs.push((key, done.node)),
                    },
                    _ => unreachable!("only collections are stacked"),
                }
            }
        }
    }
    Ok(root.unwrap_or(Node {
        value: Yaml::Null,
        line: 1,
    }))
}

/// The first position of each key of a mapping's pairs, found without scanning them all:
/// string keys by hash, other keys (rare in configs) by comparison.
#[derive(Debug, Default)]
pub struct KeyIndex {
    strings: HashMap<String, usize>,
    others: Vec<usize>,
}

impl KeyIndex {
    pub fn new(pairs: &[(Node, Node)]) -> Self {
        let mut index = KeyIndex::default();
        for (pos, (k, _)) in pairs.iter().enumerate() {
            index.add(&k.value, pos);
        }
        index
    }

    /// Records a key at `pos` unless an equal key is already recorded.
    pub fn add(&mut self, key: &Yaml, pos: usize) {
        match key {
            Yaml::Str(s) => {
                self.strings.entry(s.clone()).or_insert(pos);
            }
            _ => self.others.push(pos),
        }
    }

    /// Where the first key equal to `key` is in `pairs` (the pairs this index was built on).
    pub fn find(&self, pairs: &[(Node, Node)], key: &Yaml) -> Option<usize> {
        match key {
            Yaml::Str(s) => self.strings.get(s).copied(),
            _ => self
                .others
                .iter()
                .copied()
                .find(|&pos| pairs[pos].0.value == *key),
        }
    }
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
    let mut index = KeyIndex::new(pairs);
    for src in sources {
        if let Yaml::Map(extra) = src.value {
            for (k, v) in extra {
                if index.find(pairs, &k.value).is_none() {
                    index.add(&k.value, pairs.len());
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
        // An alias's value sits on the alias's line (where a warning about it points).
        let aliased = parse("base: &v 0\nx: 1\ny: 2\nz: *v\n").unwrap();
        assert_eq!(aliased.get("z").unwrap().line, 4);
        let err = parse("a: [1, 2\nb: 3").unwrap_err();
        assert!(err.line >= 1, "{err}");
    }
}

#[cfg(test)]
mod hostile_input {
    use super::*;

    /// The error for a text that must not parse (without printing a huge value if it does).
    fn refused(text: &str) -> YamlError {
        match parse(text) {
            Ok(_) => panic!("parsed, but should not: {:?}", &text[..text.len().min(60)]),
            Err(e) => e,
        }
    }

    /// Nine levels of nine aliases each: 9^9 leaves if every alias were copied.
    fn alias_bomb() -> String {
        let mut text = String::from("a: &a [x,x,x,x,x,x,x,x,x]\n");
        for (prev, name) in "abcdefgh".chars().zip("bcdefghi".chars()) {
            let items = vec![format!("*{prev}"); 9].join(",");
            text.push_str(&format!("{name}: &{name} [{items}]\n"));
        }
        text
    }

    #[test]
    fn an_alias_bomb_stops_at_the_expansion_limit_with_its_line() {
        let err = refused(&alias_bomb());
        assert!(err.message.contains("loopsim's limit"), "{err}");
        assert!((2..=9).contains(&err.line), "{err}");
        // Aliases that stay small still work, also when used many times.
        let n = parse("base: &b {x: 1}\nlist: [*b, *b, *b]\n").unwrap();
        let Yaml::Seq(items) = &n.get("list").unwrap().value else {
            panic!("a list")
        };
        assert_eq!(items.len(), 3);
        assert_eq!(items[2].get("x").unwrap().value, Yaml::Int(1));
    }

    #[test]
    fn an_anchor_chain_cannot_copy_a_long_string_without_bound() {
        // One 1 MB string and 200 aliases of it: 200 MB if every alias were copied.
        let big = "x".repeat(1 << 20);
        let text = format!("s: &s {big}\nl: [{}]\n", vec!["*s"; 200].join(", "));
        let err = refused(&text);
        assert_eq!(err.line, 2, "{err}");
        assert!(err.message.contains("loopsim's limit"), "{err}");
    }

    #[test]
    fn only_a_single_document_is_accepted_as_pyyaml_safe_load_does() {
        for (text, line) in [
            ("a: 1\n---\nb: 2\n", 2),
            ("a: 1\n---\n", 2),
            ("---\na: 1\n---\n", 3),
            ("a: 1\n...\n# x\n---\n", 4),
            ("---\n---\n", 2),
        ] {
            let err = refused(text);
            assert_eq!(err.line, line, "{text:?}: {err}");
            assert!(
                err.message
                    .starts_with("expected a single document in the stream"),
                "{text:?}: {err}"
            );
        }
        // A `...` before any document: PyYAML finds no node content there.
        for (text, line) in [("...\n", 1), ("# c\n...\n", 2), ("...\na: 1\n", 1)] {
            let err = refused(text);
            assert_eq!(err.line, line, "{text:?}: {err}");
            assert!(err.message.contains("<document end>"), "{text:?}: {err}");
        }
        let one = |t: &str| parse(t).unwrap_or_else(|e| panic!("{t:?}: {e}"));
        assert_eq!(
            one("---\na: 1\n...\n").get("a").unwrap().value,
            Yaml::Int(1)
        );
        assert_eq!(
            one("a: 1\n...\n...\n# end\n").get("a").unwrap().value,
            Yaml::Int(1)
        );
        assert_eq!(one("%YAML 1.1\n---\na: 1\n").get("a").unwrap().line, 3);
        assert_eq!(one("--- a\n...\n").value, Yaml::Str("a".into()));
        assert_eq!(one("").value, Yaml::Null);
        assert_eq!(one("# only a comment\n").value, Yaml::Null);
        assert_eq!(one("---\n").value, Yaml::Null);
        assert_eq!(one("---\n...\n").value, Yaml::Null);
        assert_eq!(one("...x\n").value, Yaml::Str("...x".into()));
    }

    #[test]
    fn a_merge_of_many_keys_into_many_keys_is_not_quadratic() {
        // 40,000 keys merged into 40,000 others: billions of comparisons if each merged key
        // were compared with every key already there.
        let keys = |p: &str| {
            (0..40_000)
                .map(|i| format!("{p}{i}: {i}"))
                .collect::<Vec<_>>()
        };
        let text = format!(
            "base: &b {{{}}}\nc: {{<<: *b, {}, k7: own}}\n",
            keys("k").join(", "),
            keys("x").join(", ")
        );
        let n = parse(&text).unwrap_or_else(|e| panic!("{e}"));
        let c = n.get("c").unwrap();
        let Yaml::Map(pairs) = &c.value else {
            panic!("a mapping")
        };
        assert_eq!(pairs.len(), 80_000);
        assert_eq!(c.get("k7").unwrap().value, Yaml::Str("own".into()));
        assert_eq!(c.get("k8").unwrap().value, Yaml::Int(8));
        // Non-string keys merge by equality too.
        let n = parse("b: &b {1: a, [x]: b}\nc: {<<: *b, 1: own}\n").unwrap();
        let Yaml::Map(pairs) = &n.get("c").unwrap().value else {
            panic!("a mapping")
        };
        assert_eq!(pairs.len(), 2);
        assert_eq!(pairs[0].1.value, Yaml::Str("own".into()));
    }

    #[test]
    fn deep_nesting_is_an_error_with_a_line_not_a_crash() {
        let n = 100_000;
        let texts = [
            "[".repeat(n) + &"]".repeat(n),
            "{a: ".repeat(n) + "1" + &"}".repeat(n),
            "- ".repeat(n) + "x\n",
            "a:\n".to_string() + &"- ".repeat(n) + "x\n",
            (0..2_000)
                .map(|i| format!("{}a:\n", " ".repeat(i)))
                .collect::<String>(),
        ];
        for text in &texts {
            let err = refused(text);
            assert!(err.line >= 1, "{err}");
        }
        // An alias cannot carry a deep value deeper than the limit.
        let deep = "[".repeat(200) + &"]".repeat(200);
        let mut text = format!("a: &a {deep}\n");
        for (prev, name) in ["a", "b", "c"].iter().zip(["b", "c", "d"]) {
            text.push_str(&format!(
                "{name}: &{name} {}*{prev}{}\n",
                "[".repeat(200),
                "]".repeat(200)
            ));
        }
        let err = refused(&text);
        assert_eq!(err.line, 3, "{err}");
        assert!(err.message.contains("deeper than"), "{err}");
        // Nesting Hermes can load still parses; the limit counts collection levels.
        assert!(parse(&("- ".repeat(400) + "x\n")).is_ok());
        assert!(parse(&("- ".repeat(MAX_DEPTH) + "x\n")).is_ok());
        let err = refused(&("- ".repeat(MAX_DEPTH + 1) + "x\n"));
        assert_eq!((err.line, err.col), (1, 2 * MAX_DEPTH + 1), "{err}");
    }
}
