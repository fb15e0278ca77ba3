//! Canonical JSON straight from text, without building a [`Value`](super::Value) tree.
//!
//! The guard and the result hashes only need `json.dumps(json.loads(text), sort_keys=True,
//! separators=(",", ":"), ensure_ascii=False)`, and building a tree for that costs an
//! allocation per string, key and container. [`Canonicalizer`] writes the canonical bytes while
//! it reads: a string's plain runs are copied as they are (the printer would print them
//! unchanged), escapes are decoded and printed the printer's way, and an object's members are
//! reordered only when they did not arrive sorted. Its output and its errors are exactly those
//! of [`parse`](super::parse) followed by [`write_canonical`](super::write_canonical); the
//! tests compare the two on every input they generate.

use super::parse::{Number, Parser};
use super::write::{push_canonical_char, push_float_repr};
use super::{MAX_DEPTH, ParseError};

/// What kind of value a canonical text is (Python's types, ints and floats apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    Int,
    Float,
    Str,
    Array,
    Object,
}

/// One object member already printed: `"key":value` at `start..end`, the key's text (between
/// its quotes) ending at `key_end - 1`.
#[derive(Clone, Copy, Debug)]
struct Member {
    start: usize,
    key_end: usize,
    end: usize,
    /// The printed key holds an escape, so its bytes do not sort as the decoded key does.
    escaped: bool,
}

/// Reusable scratch for canonical printing: keep one and pass it every text, and the steady
/// state allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct Canonicalizer {
    members: Vec<Member>,
    order: Vec<u32>,
    tmp: Vec<u8>,
    keys: Vec<u8>,
    key_spans: Vec<(usize, usize)>,
}

impl Canonicalizer {
    /// Appends the canonical text of `text` read as `json.loads` reads a `str` (WTF-8 bytes):
    /// exactly `write_canonical(&parse(text)?)`. On an error `out` holds a partial text.
    pub fn canonical(&mut self, text: &[u8], out: &mut Vec<u8>) -> Result<Kind, ParseError> {
        self.whole::<false>(text, out)
    }

    /// As [`Canonicalizer::canonical`] for [`parse_strict`](super::parse_strict)'s grammar.
    pub fn canonical_strict(&mut self, text: &[u8], out: &mut Vec<u8>) -> Result<Kind, ParseError> {
        self.whole::<true>(text, out)
    }

    fn whole<const STRICT: bool>(
        &mut self,
        text: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Kind, ParseError> {
        self.begin();
        let mut p = Parser::<STRICT>::new(text);
        if text.starts_with("\u{feff}".as_bytes()) {
            return Err(p.err("unexpected byte order mark"));
        }
        p.skip_ws();
        let kind = self.value(&mut p, 0, out)?;
        p.skip_ws();
        if p.i != text.len() {
            return Err(p.err("extra data"));
        }
        Ok(kind)
    }

    /// Forgets members left by a text that failed part-way.
    pub(super) fn begin(&mut self) {
        self.members.clear();
    }

    /// Prints the value at the parser's position (nested `depth` deep) and moves past it.
    pub(super) fn value<const STRICT: bool>(
        &mut self,
        p: &mut Parser<'_, STRICT>,
        depth: usize,
        out: &mut Vec<u8>,
    ) -> Result<Kind, ParseError> {
        if depth > MAX_DEPTH {
            return Err(p.err("nesting too deep"));
        }
        let rest = &p.s[p.i..];
        let (lit, kind): (&[u8], Kind) = match rest.first() {
            None => return Err(p.err("expecting value")),
            Some(b'"') => {
                p.i += 1;
                string(p, out)?;
                return Ok(Kind::Str);
            }
            Some(b'{') => return self.object(p, depth, out),
            Some(b'[') => return self.array(p, depth, out),
            Some(b'n') if rest.starts_with(b"null") => (b"null", Kind::Null),
            Some(b't') if rest.starts_with(b"true") => (b"true", Kind::Bool),
            Some(b'f') if rest.starts_with(b"false") => (b"false", Kind::Bool),
            Some(b'N') if STRICT && rest.starts_with(b"NaN") => {
                return Err(p.err("NaN is not JSON"));
            }
            Some(b'I') if STRICT && rest.starts_with(b"Infinity") => {
                return Err(p.err("Infinity is not JSON"));
            }
            Some(b'-') if STRICT && rest.starts_with(b"-Infinity") => {
                return Err(p.err("-Infinity is not JSON"));
            }
            Some(b'N') if rest.starts_with(b"NaN") => (b"NaN", Kind::Float),
            Some(b'I') if rest.starts_with(b"Infinity") => (b"Infinity", Kind::Float),
            Some(b'-') if rest.starts_with(b"-Infinity") => (b"-Infinity", Kind::Float),
            Some(b'-' | b'0'..=b'9') => {
                return Ok(match p.number_token()? {
                    Number::Int(digits) => {
                        out.extend_from_slice(digits);
                        Kind::Int
                    }
                    Number::Float(f) => {
                        push_float_repr(out, f);
                        Kind::Float
                    }
                });
            }
            Some(_) => return Err(p.err("expecting value")),
        };
        p.i += lit.len();
        out.extend_from_slice(lit);
        Ok(kind)
    }

    fn array<const STRICT: bool>(
        &mut self,
        p: &mut Parser<'_, STRICT>,
        depth: usize,
        out: &mut Vec<u8>,
    ) -> Result<Kind, ParseError> {
        p.i += 1;
        out.push(b'[');
        p.skip_ws();
        if p.s.get(p.i) == Some(&b']') {
            p.i += 1;
            out.push(b']');
            return Ok(Kind::Array);
        }
        loop {
            self.value(p, depth + 1, out)?;
            p.skip_ws();
            match p.s.get(p.i) {
                Some(b',') => {
                    p.i += 1;
                    out.push(b',');
                    p.skip_ws();
                }
                Some(b']') => {
                    p.i += 1;
                    out.push(b']');
                    return Ok(Kind::Array);
                }
                _ => return Err(p.err("expecting ',' delimiter")),
            }
        }
    }

    fn object<const STRICT: bool>(
        &mut self,
        p: &mut Parser<'_, STRICT>,
        depth: usize,
        out: &mut Vec<u8>,
    ) -> Result<Kind, ParseError> {
        p.i += 1;
        out.push(b'{');
        p.skip_ws();
        if p.s.get(p.i) == Some(&b'}') {
            p.i += 1;
            out.push(b'}');
            return Ok(Kind::Object);
        }
        let base = self.members.len();
        let body = out.len();
        loop {
            if p.s.get(p.i) != Some(&b'"') {
                return Err(p.err("expecting property name enclosed in double quotes"));
            }
            p.i += 1;
            let start = out.len();
            let escaped = string(p, out)?;
            let key_end = out.len();
            p.skip_ws();
            if p.s.get(p.i) != Some(&b':') {
                return Err(p.err("expecting ':' delimiter"));
            }
            p.i += 1;
            out.push(b':');
            p.skip_ws();
            self.value(p, depth + 1, out)?;
            self.members.push(Member {
                start,
                key_end,
                end: out.len(),
                escaped,
            });
            p.skip_ws();
            match p.s.get(p.i) {
                Some(b',') => {
                    p.i += 1;
                    out.push(b',');
                    p.skip_ws();
                }
                Some(b'}') => {
                    p.i += 1;
                    break;
                }
                _ => return Err(p.err("expecting ',' delimiter")),
            }
        }
        self.sort_members(base, body, out);
        self.members.truncate(base);
        out.push(b'}');
        Ok(Kind::Object)
    }

    /// Puts the members printed since `base` in key order, the last of equal keys winning (a
    /// Python dict keeps one value per key). Members that arrived sorted stay where they are.
    fn sort_members(&mut self, base: usize, body: usize, out: &mut Vec<u8>) {
        let Canonicalizer {
            members,
            order,
            tmp,
            keys,
            key_spans,
        } = self;
        let members = &members[base..];
        let printed = |m: &Member| &out[m.start + 1..m.key_end - 1];
        let escaped = members.iter().any(|m| m.escaped);
        if !escaped && members.windows(2).all(|w| printed(&w[0]) < printed(&w[1])) {
            return;
        }
        // Decoded keys, when some printed key holds an escape (its bytes sort differently).
        keys.clear();
        key_spans.clear();
        for m in members.iter().filter(|_| escaped) {
            let a = keys.len();
            decode_printed(printed(m), keys);
            key_spans.push((a, keys.len()));
        }
        let sort_key = |n: u32| -> &[u8] {
            if escaped {
                let (a, b) = key_spans[n as usize];
                &keys[a..b]
            } else {
                printed(&members[n as usize])
            }
        };
        order.clear();
        order.extend(0..members.len() as u32);
        // Stable: among equal keys the last one read comes last, and it is the one kept.
        order.sort_by(|&a, &b| sort_key(a).cmp(sort_key(b)));
        let mut kept = 0;
        for n in 0..order.len() {
            let m = order[n];
            if order
                .get(n + 1)
                .is_some_and(|&next| sort_key(next) == sort_key(m))
            {
                continue;
            }
            order[kept] = m;
            kept += 1;
        }
        order.truncate(kept);
        tmp.clear();
        tmp.extend_from_slice(&out[body..]);
        out.truncate(body);
        for (n, &m) in order.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            let m = &members[m as usize];
            out.extend_from_slice(&tmp[m.start - body..m.end - body]);
        }
    }
}

/// Prints a string body (after its opening quote) the canonical way, closing quote included.
/// Returns whether the printed text holds an escape.
pub(super) fn string<const STRICT: bool>(
    p: &mut Parser<'_, STRICT>,
    out: &mut Vec<u8>,
) -> Result<bool, ParseError> {
    out.push(b'"');
    let mut escaped = false;
    loop {
        let run_start = p.i;
        p.i += p.plain_run();
        p.check_run(run_start)?;
        out.extend_from_slice(&p.s[run_start..p.i]);
        match p.s.get(p.i) {
            None => return Err(p.err("unterminated string")),
            Some(b'"') => {
                p.i += 1;
                out.push(b'"');
                return Ok(escaped);
            }
            Some(b'\\') => match p.s.get(p.i + 1) {
                // These print as they are written; `\/` prints as `/`; `\u` takes the long way.
                Some(&e @ (b'"' | b'\\' | b'n' | b't' | b'r' | b'b' | b'f')) => {
                    out.extend_from_slice(&[b'\\', e]);
                    p.i += 2;
                    escaped = true;
                }
                Some(b'/') => {
                    out.push(b'/');
                    p.i += 2;
                }
                _ => escaped |= push_canonical_char(out, p.escape()?),
            },
            Some(_) => return Err(p.err("invalid control character in string")),
        }
    }
}

/// Decodes a printed key's text (the printer's escapes only) back to its WTF-8 bytes.
fn decode_printed(text: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < text.len() {
        if text[i] != b'\\' {
            out.push(text[i]);
            i += 1;
            continue;
        }
        let (byte, len) = match text[i + 1] {
            b'n' => (b'\n', 2),
            b'r' => (b'\r', 2),
            b't' => (b'\t', 2),
            b'b' => (8, 2),
            b'f' => (12, 2),
            b'u' => {
                let hex = |c: u8| (c as char).to_digit(16).expect("printed hex") as u8;
                (hex(text[i + 4]) * 16 + hex(text[i + 5]), 6)
            }
            c => (c, 2),
        };
        out.push(byte);
        i += len;
    }
}
