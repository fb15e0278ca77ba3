//! JSON exactly as Python's `json` module reads and writes it.
//!
//! Hermes hashes tool arguments and results as
//! `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` of what
//! `json.loads` returned, so a byte-compatible hash needs Python's parser and printer, not
//! serde_json's: NaN and Infinity literals, integers of any size, floats printed with `repr`,
//! duplicate keys keeping the last value, and lone UTF-16 surrogates kept as they are.
//!
//! Text is carried as WTF-8 bytes (UTF-8 that may also encode lone surrogates), which is what
//! Python's `str.encode("utf-8", "surrogatepass")` produces.

use std::fmt::Write as _;

/// Python 3.11+ refuses to convert integer strings longer than this (`sys.int_info`).
pub const MAX_INT_DIGITS: usize = 4300;
/// Nesting depth past which we give up; Python raises `RecursionError` near its recursion limit.
pub const MAX_DEPTH: usize = 900;

/// A parsed JSON value with Python's distinctions (ints and floats are different types).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// Decimal digits with an optional leading `-`, normalised as Python prints them.
    Int(Box<str>),
    Float(f64),
    Str(Vec<u8>),
    Array(Vec<Value>),
    /// Pairs in first-insertion order; a duplicate key keeps its first place and last value.
    Object(Vec<(Vec<u8>, Value)>),
}

impl Value {
    /// Looks a key up in an object; `None` for a missing key or a non-object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(pairs) => pairs
                .iter()
                .find(|(k, _)| k.as_slice() == key.as_bytes())
                .map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }

    /// Python truthiness (`bool(value)`).
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(digits) => digits.as_ref() != "0",
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
        }
    }

    /// Python's `value == 0` (true for `0`, `0.0`, `-0.0` and `False`).
    pub fn equals_zero(&self) -> bool {
        match self {
            Value::Bool(b) => !*b,
            Value::Int(d) => d.as_ref() == "0",
            Value::Float(f) => *f == 0.0,
            _ => false,
        }
    }

    /// The string's bytes when this is a string.
    pub fn as_str_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Why a text is not JSON to Python.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON at byte {offset}: {reason}")]
pub struct ParseError {
    pub offset: usize,
    pub reason: &'static str,
}

/// Parses like `json.loads` on a `str` (given as WTF-8 bytes).
pub fn parse(text: &[u8]) -> Result<Value, ParseError> {
    parse_with::<false>(text)
}

/// Parses strict JSON from UTF-8 bytes: as [`parse`], but the `NaN`, `Infinity` and
/// `-Infinity` literals are refused, and so are bytes in strings that are not UTF-8 (a lone
/// surrogate can still be written as a `\ud800` escape). This is `json.loads` on the bytes
/// decoded as strict UTF-8, with `parse_constant` refusing the three literals.
pub fn parse_strict(text: &[u8]) -> Result<Value, ParseError> {
    parse_with::<true>(text)
}

fn parse_with<const STRICT: bool>(text: &[u8]) -> Result<Value, ParseError> {
    let mut p = Parser::<STRICT> { s: text, i: 0 };
    if text.starts_with("\u{feff}".as_bytes()) {
        return Err(p.err("unexpected byte order mark"));
    }
    p.skip_ws();
    let v = p.value(0)?;
    p.skip_ws();
    if p.i != text.len() {
        return Err(p.err("extra data"));
    }
    Ok(v)
}

/// `STRICT`: strict JSON in UTF-8 (see [`parse_strict`]); a constant, so the lenient parser
/// pays nothing for the checks.
struct Parser<'a, const STRICT: bool> {
    s: &'a [u8],
    i: usize,
}

impl<const STRICT: bool> Parser<'_, STRICT> {
    fn err(&self, reason: &'static str) -> ParseError {
        ParseError {
            offset: self.i,
            reason,
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn eat(&mut self, lit: &[u8]) -> bool {
        if self.s[self.i..].starts_with(lit) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        match self.s.get(self.i) {
            None => Err(self.err("expecting value")),
            Some(b'"') => {
                self.i += 1;
                Ok(Value::Str(self.string()?))
            }
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'n') if self.eat(b"null") => Ok(Value::Null),
            Some(b't') if self.eat(b"true") => Ok(Value::Bool(true)),
            Some(b'f') if self.eat(b"false") => Ok(Value::Bool(false)),
            Some(b'N') if STRICT && self.s[self.i..].starts_with(b"NaN") => {
                Err(self.err("NaN is not JSON"))
            }
            Some(b'I') if STRICT && self.s[self.i..].starts_with(b"Infinity") => {
                Err(self.err("Infinity is not JSON"))
            }
            Some(b'-') if STRICT && self.s[self.i..].starts_with(b"-Infinity") => {
                Err(self.err("-Infinity is not JSON"))
            }
            Some(b'N') if self.eat(b"NaN") => Ok(Value::Float(f64::NAN)),
            Some(b'I') if self.eat(b"Infinity") => Ok(Value::Float(f64::INFINITY)),
            Some(b'-') if self.s[self.i..].starts_with(b"-Infinity") => {
                self.i += 9;
                Ok(Value::Float(f64::NEG_INFINITY))
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.err("expecting value")),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.s.get(self.i) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.i;
        if self.s[self.i] == b'-' {
            self.i += 1;
        }
        match self.s.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err("expecting value")),
        }
        let int_end = self.i;
        let mut is_float = false;
        if self.s.get(self.i) == Some(&b'.') && matches!(self.s.get(self.i + 1), Some(b'0'..=b'9'))
        {
            self.i += 1;
            self.digits();
            is_float = true;
        }
        if let Some(b'e' | b'E') = self.s.get(self.i) {
            let save = self.i;
            self.i += 1;
            if let Some(b'+' | b'-') = self.s.get(self.i) {
                self.i += 1;
            }
            if self.digits() == 0 {
                self.i = save;
            } else {
                is_float = true;
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).expect("ascii");
        if is_float {
            // Rust and CPython both round decimal strings correctly; overflow gives infinity.
            let f: f64 = text.parse().map_err(|_| self.err("bad float"))?;
            return Ok(Value::Float(f));
        }
        let neg = text.starts_with('-');
        let digits = &self.s[if neg { start + 1 } else { start }..int_end];
        if digits.len() > MAX_INT_DIGITS {
            return Err(self.err("integer exceeds the 4300-digit conversion limit"));
        }
        let normalised = if digits == b"0" { "0" } else { text };
        Ok(Value::Int(normalised.into()))
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let Some(h) = self.s.get(self.i..self.i + 4) else {
            return Err(self.err("invalid \\uXXXX escape"));
        };
        let mut v = 0u32;
        for &c in h {
            let d = (c as char)
                .to_digit(16)
                .ok_or_else(|| self.err("invalid \\uXXXX escape"))?;
            v = v * 16 + d;
        }
        self.i += 4;
        Ok(v)
    }

    /// Reads a string body after the opening quote, returning WTF-8 bytes.
    fn string(&mut self) -> Result<Vec<u8>, ParseError> {
        let mut out = Vec::new();
        loop {
            let run_start = self.i;
            while let Some(&c) = self.s.get(self.i) {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            let run = &self.s[run_start..self.i];
            // Only runs with a non-ASCII byte need checking. A run stops only at ASCII bytes,
            // so it never splits a UTF-8 sequence.
            if STRICT
                && !run.is_ascii()
                && let Err(e) = std::str::from_utf8(run)
            {
                return Err(ParseError {
                    offset: run_start + e.valid_up_to(),
                    reason: "invalid UTF-8 in a string",
                });
            }
            out.extend_from_slice(run);
            match self.s.get(self.i) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let Some(&e) = self.s.get(self.i) else {
                        return Err(self.err("unterminated string"));
                    };
                    self.i += 1;
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp)
                                && self.s.get(self.i..self.i + 2) == Some(b"\\u")
                            {
                                let save = self.i;
                                self.i += 2;
                                let low = self.hex4()?;
                                if (0xDC00..0xE000).contains(&low) {
                                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                                } else {
                                    self.i = save;
                                }
                            }
                            push_code_point(&mut out, cp);
                        }
                        _ => {
                            self.i -= 1;
                            return Err(self.err("invalid escape"));
                        }
                    }
                }
                Some(_) => return Err(self.err("invalid control character in string")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.i += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.s.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.s.get(self.i) {
                Some(b',') => {
                    self.i += 1;
                    self.skip_ws();
                }
                Some(b']') => {
                    self.i += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.err("expecting ',' delimiter")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.i += 1;
        let mut pairs: Vec<(Vec<u8>, Value)> = Vec::new();
        self.skip_ws();
        if self.s.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(Value::Object(pairs));
        }
        loop {
            if self.s.get(self.i) != Some(&b'"') {
                return Err(self.err("expecting property name enclosed in double quotes"));
            }
            self.i += 1;
            let key = self.string()?;
            self.skip_ws();
            if self.s.get(self.i) != Some(&b':') {
                return Err(self.err("expecting ':' delimiter"));
            }
            self.i += 1;
            self.skip_ws();
            let v = self.value(depth + 1)?;
            match pairs.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = v,
                None => pairs.push((key, v)),
            }
            self.skip_ws();
            match self.s.get(self.i) {
                Some(b',') => {
                    self.i += 1;
                    self.skip_ws();
                }
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Object(pairs));
                }
                _ => return Err(self.err("expecting ',' delimiter")),
            }
        }
    }
}

/// Appends a code point (surrogates included) in generalised UTF-8.
pub fn push_code_point(out: &mut Vec<u8>, cp: u32) {
    match cp {
        0..=0x7F => out.push(cp as u8),
        0x80..=0x7FF => out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]),
        0x800..=0xFFFF => out.extend_from_slice(&[
            0xE0 | (cp >> 12) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]),
        _ => out.extend_from_slice(&[
            0xF0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]),
    }
}

/// Where canonical JSON goes: a buffer, or straight into a hasher.
pub trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// Writes `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`.
pub fn write_canonical<S: Sink>(v: &Value, out: &mut S) {
    match v {
        Value::Null => out.put(b"null"),
        Value::Bool(true) => out.put(b"true"),
        Value::Bool(false) => out.put(b"false"),
        Value::Int(d) => out.put(d.as_bytes()),
        Value::Float(f) => out.put(float_repr(*f).as_bytes()),
        Value::Str(s) => write_str(s, out),
        Value::Array(items) => {
            out.put(b"[");
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.put(b",");
                }
                write_canonical(item, out);
            }
            out.put(b"]");
        }
        Value::Object(pairs) => {
            out.put(b"{");
            // Byte order of generalised UTF-8 is code-point order, which is Python's sort.
            let mut sorted: Vec<&(Vec<u8>, Value)> = pairs.iter().collect();
            sorted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            for (n, (k, val)) in sorted.into_iter().enumerate() {
                if n > 0 {
                    out.put(b",");
                }
                write_str(k, out);
                out.put(b":");
                write_canonical(val, out);
            }
            out.put(b"}");
        }
    }
}

/// The canonical text of a value as bytes.
pub fn canonical(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_canonical(v, &mut out);
    out
}

fn write_str<S: Sink>(s: &[u8], out: &mut S) {
    out.put(b"\"");
    let mut run = 0;
    for (i, &c) in s.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            8 => b"\\b",
            12 => b"\\f",
            0..=0x1F => {
                out.put(&s[run..i]);
                let hex = b"0123456789abcdef";
                out.put(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    hex[(c >> 4) as usize],
                    hex[(c & 15) as usize],
                ]);
                run = i + 1;
                continue;
            }
            _ => continue,
        };
        out.put(&s[run..i]);
        out.put(esc);
        run = i + 1;
    }
    out.put(&s[run..]);
    out.put(b"\"");
}

/// Python's `repr(float)`: shortest round-trip digits, `1.0`, `1e+16`, `1e-05`, `nan` as `NaN`.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // `{:e}` gives the shortest round-trip digits as d.ddde<exp>.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().expect("exponent digits");
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let decpt = exp + 1;
    let mut out = String::with_capacity(24);
    if neg {
        out.push('-');
    }
    if !(-4 < decpt && decpt <= 16) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    } else if decpt <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-decpt) as usize));
        out.push_str(&digits);
    } else if (decpt as usize) < digits.len() {
        out.push_str(&digits[..decpt as usize]);
        out.push('.');
        out.push_str(&digits[decpt as usize..]);
    } else {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', decpt as usize - digits.len()));
        out.push_str(".0");
    }
    out
}

/// Counts code points in WTF-8 (Python's `len(str)`).
pub fn char_len(s: &[u8]) -> usize {
    s.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}

/// Byte offset just past the first `n` code points (Python's `s[:n]`).
pub fn char_prefix(s: &[u8], n: usize) -> &[u8] {
    let mut seen = 0;
    for (i, &b) in s.iter().enumerate() {
        if (b & 0xC0) != 0x80 {
            if seen == n {
                return &s[..i];
            }
            seen += 1;
        }
    }
    s
}

/// Python's `str.strip()` whitespace test for one code point.
fn is_py_space(cp: u32) -> bool {
    matches!(cp, 0x09..=0x0D | 0x1C..=0x20 | 0x85 | 0xA0 | 0x1680 | 0x2000..=0x200A
        | 0x2028 | 0x2029 | 0x202F | 0x205F | 0x3000)
}

/// Decodes WTF-8 into code points (input is trusted to be well formed).
pub fn code_points(s: &[u8]) -> impl DoubleEndedIterator<Item = (usize, usize, u32)> + '_ {
    let mut starts = Vec::new();
    for (i, &b) in s.iter().enumerate() {
        if (b & 0xC0) != 0x80 {
            starts.push(i);
        }
    }
    let n = starts.len();
    (0..n).map(move |k| {
        let a = starts[k];
        let b = if k + 1 < n { starts[k + 1] } else { s.len() };
        let bytes = &s[a..b];
        let cp = match bytes.len() {
            1 => bytes[0] as u32,
            2 => ((bytes[0] as u32 & 0x1F) << 6) | (bytes[1] as u32 & 0x3F),
            3 => {
                ((bytes[0] as u32 & 0x0F) << 12)
                    | ((bytes[1] as u32 & 0x3F) << 6)
                    | (bytes[2] as u32 & 0x3F)
            }
            _ => {
                ((bytes[0] as u32 & 0x07) << 18)
                    | ((bytes[1] as u32 & 0x3F) << 12)
                    | ((bytes[2] as u32 & 0x3F) << 6)
                    | (bytes.get(3).copied().unwrap_or(0) as u32 & 0x3F)
            }
        };
        (a, b, cp)
    })
}

/// Python's `str.strip()` on WTF-8.
pub fn py_strip(s: &[u8]) -> &[u8] {
    let start = code_points(s)
        .find(|&(_, _, cp)| !is_py_space(cp))
        .map(|(a, _, _)| a);
    let Some(start) = start else {
        return &s[s.len()..];
    };
    let end = code_points(s)
        .rev()
        .find(|&(_, _, cp)| !is_py_space(cp))
        .map(|(_, b, _)| b)
        .unwrap_or(s.len());
    &s[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(text: &str) -> String {
        String::from_utf8(canonical(&parse(text.as_bytes()).unwrap())).unwrap()
    }

    #[test]
    fn floats_print_like_python_repr() {
        let cases = [
            (1.0, "1.0"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1e-5, "1e-05"),
            (1e-7, "1e-07"),
            (0.0001, "0.0001"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (123.456, "123.456"),
            (1.5e300, "1.5e+300"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (2.5e-310, "2.5e-310"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (f, want) in cases {
            assert_eq!(float_repr(f), want, "{f:e}");
        }
    }

    #[test]
    fn canonical_form_matches_python() {
        assert_eq!(canon(r#"{"b":1,"a":"é"}"#), r#"{"a":"é","b":1}"#);
        assert_eq!(canon(" [1.0, 1e400, -0, 10E2] "), "[1.0,Infinity,0,1000.0]");
        assert_eq!(canon(r#"{"a":1,"a":2}"#), r#"{"a":2}"#);
        assert_eq!(
            canon(r#""\u0001\u007f\u2028\t""#),
            "\"\\u0001\u{7f}\u{2028}\\t\""
        );
        assert_eq!(canon(r#""\ud83d\ude00""#), "\"\u{1F600}\"");
        assert_eq!(
            canon("123456789012345678901234567890"),
            "123456789012345678901234567890"
        );
    }

    #[test]
    fn lone_surrogates_are_kept_as_wtf8() {
        let v = parse(br#""\ud800x""#).unwrap();
        assert_eq!(v, Value::Str(vec![0xED, 0xA0, 0x80, b'x']));
    }

    #[test]
    fn python_rejects_what_we_reject() {
        for bad in [
            "",
            "1.",
            "01",
            "[1,]",
            "{'a':1}",
            "\"a\u{1}\"",
            "nul",
            "-",
            "1e",
            "\u{feff}1",
            "{\"a\" 1}",
        ] {
            assert!(parse(bad.as_bytes()).is_err(), "{bad:?} should not parse");
        }
        let big = "9".repeat(MAX_INT_DIGITS + 1);
        assert!(parse(big.as_bytes()).is_err());
        assert!(parse("9".repeat(MAX_INT_DIGITS).as_bytes()).is_ok());
        let deep = "[".repeat(MAX_DEPTH + 5) + &"]".repeat(MAX_DEPTH + 5);
        assert!(parse(deep.as_bytes()).is_err());
    }

    #[test]
    fn strict_parsing_refuses_only_the_constants_and_bytes_that_are_not_utf8() {
        for text in [
            &b"NaN"[..],
            b"[Infinity]",
            b"{\"a\":-Infinity}",
            b"\"\xff\"",
            b"\"\xed\xa0\x80\"",
        ] {
            assert!(parse(text).is_ok(), "lenient: {text:?}");
            assert!(parse_strict(text).is_err(), "strict: {text:?}");
        }
        for text in [
            &br#""\ud800""#[..],
            "\"é\u{2028}\"".as_bytes(),
            b"[1e400,-0.0,10E2]",
        ] {
            assert_eq!(parse_strict(text), parse(text), "{text:?}");
        }
        assert_eq!(
            parse_strict(b"[1, \"ok\", \"\xc3\"]").unwrap_err(),
            ParseError {
                offset: 11,
                reason: "invalid UTF-8 in a string"
            }
        );
    }

    #[test]
    fn python_strip_and_prefix() {
        assert_eq!(py_strip("\u{a0} x \u{3000}".as_bytes()), b"x");
        assert_eq!(py_strip(b"   "), b"");
        assert_eq!(char_prefix("éab".as_bytes(), 2), "éa".as_bytes());
        assert_eq!(char_len("é\u{1F600}".as_bytes()), 2);
    }
}
