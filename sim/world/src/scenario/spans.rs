//! Where each key and value of a scenario file is, so that an error names the line of the
//! offending value and the whole path of its key, inside inline tables and arrays too.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

#[derive(Clone, Debug)]
enum Kind {
    /// Keys with the span of the key itself and their values.
    Table(Vec<(String, Range<usize>, SpanNode)>),
    Array(Vec<SpanNode>),
    Leaf,
}

#[derive(Clone, Debug)]
struct SpanNode {
    span: Range<usize>,
    kind: Kind,
}

impl SpanNode {
    fn from_table(t: &DeTable<'_>, span: Range<usize>) -> SpanNode {
        let entries = t
            .iter()
            .map(|(k, v)| {
                (
                    k.get_ref().to_string(),
                    k.span(),
                    SpanNode::from_value(v.get_ref(), v.span()),
                )
            })
            .collect();
        SpanNode {
            span,
            kind: Kind::Table(entries),
        }
    }

    fn from_value(v: &DeValue<'_>, span: Range<usize>) -> SpanNode {
        match v {
            DeValue::Table(t) => SpanNode::from_table(t, span),
            DeValue::Array(a) => SpanNode {
                span,
                kind: Kind::Array(
                    a.iter()
                        .map(|e| SpanNode::from_value(e.get_ref(), e.span()))
                        .collect(),
                ),
            },
            _ => SpanNode {
                span,
                kind: Kind::Leaf,
            },
        }
    }
}

/// One step of a key path: `agents.parent.script[3]` is `agents`, `parent`, `script`, `3`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// Splits `a.b[3].c` into its steps.
pub(crate) fn segments(path: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (name, rest) = part.split_once('[').unwrap_or((part, ""));
        if !name.is_empty() {
            out.push(Seg::Key(name.to_string()));
        }
        for idx in rest.split('[') {
            if let Some(i) = idx.strip_suffix(']').and_then(|i| i.parse().ok()) {
                out.push(Seg::Index(i));
            }
        }
    }
    out
}

/// The spans of a parsed scenario text.
#[derive(Clone, Debug)]
pub(crate) struct SpanTree {
    root: SpanNode,
    /// Byte offsets where lines start.
    line_starts: Vec<usize>,
}

impl SpanTree {
    /// Parses `text` as far as it goes; the errors are the parser's own (syntax, duplicates).
    pub(crate) fn parse(text: &str) -> (SpanTree, Vec<toml::de::Error>) {
        let (table, errors) = DeTable::parse_recoverable(text);
        let root = SpanNode::from_table(table.get_ref(), table.span());
        let mut line_starts = vec![0];
        line_starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        (SpanTree { root, line_starts }, errors)
    }

    /// The 1-based line of a byte offset.
    pub(crate) fn line_of(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset).max(1)
    }

    /// The node at `path`, or the deepest one that exists on the way, with whether the whole
    /// path was found.
    fn find(&self, path: &str) -> (&SpanNode, Option<&Range<usize>>, bool) {
        let mut node = &self.root;
        let mut key_span = None;
        for seg in segments(path) {
            let next = match (&node.kind, &seg) {
                (Kind::Table(entries), Seg::Key(k)) => entries
                    .iter()
                    .find(|(name, _, _)| name == k)
                    .map(|(_, ks, v)| (Some(ks), v)),
                (Kind::Array(items), Seg::Index(i)) => items.get(*i).map(|v| (None, v)),
                _ => None,
            };
            match next {
                Some((ks, v)) => {
                    // An array element has no key of its own.
                    key_span = ks;
                    node = v;
                }
                None => return (node, key_span, false),
            }
        }
        (node, key_span, true)
    }

    /// The line of the value at `path`, or of the nearest enclosing value that exists.
    pub(crate) fn line_of_path(&self, path: &str) -> usize {
        let (node, key_span, found) = self.find(path);
        // A table's own span can be its header's or its whole extent: point at its key.
        let at = match (&node.kind, key_span) {
            (Kind::Table(_), Some(ks)) if found => ks.start,
            _ => node.span.start,
        };
        self.line_of(at)
    }

    /// Whether `path` names a table in the file.
    pub(crate) fn is_table(&self, path: &str) -> bool {
        let (node, _, found) = self.find(path);
        found && matches!(node.kind, Kind::Table(_))
    }

    /// Whether `path` names a value in the file.
    pub(crate) fn has(&self, path: &str) -> bool {
        self.find(path).2
    }

    /// The line of the key `path` itself (for a duplicate or unknown key).
    pub(crate) fn line_of_key(&self, path: &str) -> usize {
        let (node, key_span, _) = self.find(path);
        self.line_of(key_span.map_or(node.span.start, |s| s.start))
    }

    /// The path of the innermost key whose key or value contains `offset`. Tables opened by
    /// a `[header]` do not span their keys, so every branch is searched.
    pub(crate) fn path_at(&self, offset: usize) -> String {
        fn search(node: &SpanNode, offset: usize, path: &str) -> Option<String> {
            match &node.kind {
                Kind::Table(entries) => entries.iter().find_map(|(k, ks, v)| {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    search(v, offset, &p)
                        .or_else(|| (ks.contains(&offset) || v.span.contains(&offset)).then_some(p))
                }),
                Kind::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
                    let p = format!("{path}[{i}]");
                    search(v, offset, &p).or_else(|| v.span.contains(&offset).then_some(p))
                }),
                Kind::Leaf => None,
            }
        }
        search(&self.root, offset, "").unwrap_or_default()
    }
}

impl SpanTree {
    /// The path of the innermost table whose value spans all of `range` (where a missing
    /// key belongs); empty for the top level.
    pub(crate) fn table_containing(&self, range: &Range<usize>) -> String {
        fn search(node: &SpanNode, range: &Range<usize>, path: &str) -> Option<String> {
            let Kind::Table(entries) = &node.kind else {
                return None;
            };
            entries.iter().find_map(|(k, _, v)| {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                let covers = v.span.start <= range.start && range.end <= v.span.end;
                (covers && matches!(v.kind, Kind::Table(_)))
                    .then(|| search(v, range, &p).unwrap_or(p))
            })
        }
        search(&self.root, range, "").unwrap_or_default()
    }
}

/// A `[table]` or `[[array]]` header line: its 1-based line and the key path it opens
/// (`agents.parent.script[2]` for the third `[[agents.parent.script]]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) line: usize,
    pub(crate) path: String,
    /// The path as written, without the array index (to compare headers).
    pub(crate) name: String,
}

/// Every header line of a TOML text, in order (a scan of the text: it holds where the parser
/// gave up too).
pub(crate) fn headers(text: &str) -> Vec<Header> {
    let mut out: Vec<Header> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let t = raw.trim_start();
        let (array, rest) = match (t.strip_prefix("[["), t.strip_prefix('[')) {
            (Some(r), _) => (true, r),
            (None, Some(r)) => (false, r),
            _ => continue,
        };
        let Some(end) = rest.find(']') else { continue };
        let name: String = rest[..end]
            .split('.')
            .map(|p| p.trim().trim_matches('"').trim_matches('\''))
            .collect::<Vec<_>>()
            .join(".");
        if name.is_empty() {
            continue;
        }
        let path = if array {
            let n = out.iter().filter(|h| h.name == name).count();
            format!("{name}[{n}]")
        } else {
            name.clone()
        };
        out.push(Header {
            line: i + 1,
            path,
            name,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "name = \"x\"\n\n[models.main]\nlatency_s = 1\nprice = { input = 3.0,\n  output = -1 }\n\n[agents.parent]\nscript = [\n  { answer = \"a\" },\n  { times = 2, calls = [{ tool = \"t\", distinct = 3 }] },\n]\n";

    #[test]
    fn lines_and_paths_inside_inline_tables_and_arrays() {
        let (t, errors) = SpanTree::parse(TEXT);
        assert!(errors.is_empty());
        assert_eq!(t.line_of_path("models.main.price.output"), 6);
        assert_eq!(t.line_of_path("models.main.price.input"), 5);
        assert_eq!(
            t.line_of_path("agents.parent.script[1].calls[0].distinct"),
            11
        );
        assert_eq!(t.line_of_path("agents.parent.script[0]"), 10);
        // A missing key points at the nearest enclosing value.
        assert_eq!(t.line_of_path("models.main.price.cache_write"), 5);
        assert!(t.has("agents.parent.script[1].times"));
        assert!(!t.has("agents.parent.script[2]"));
        let at = TEXT.find("distinct").unwrap();
        assert_eq!(t.path_at(at), "agents.parent.script[1].calls[0].distinct");
        assert_eq!(
            segments("a.b[2][0].c"),
            vec![
                Seg::Key("a".into()),
                Seg::Key("b".into()),
                Seg::Index(2),
                Seg::Index(0),
                Seg::Key("c".into())
            ]
        );
    }
}
