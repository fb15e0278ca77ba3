//! The canonical printer: `json.dumps(sort_keys=True, separators=(",", ":"),
//! ensure_ascii=False)` of a parsed [`Value`].

use std::fmt::Write as _;

use super::Value;

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
            // Keys usually arrive sorted: then there is nothing to sort or allocate.
            let member = |out: &mut S, n: usize, (k, val): &(Vec<u8>, Value)| {
                if n > 0 {
                    out.put(b",");
                }
                write_str(k, out);
                out.put(b":");
                write_canonical(val, out);
            };
            if pairs.windows(2).all(|w| w[0].0 < w[1].0) {
                for (n, pair) in pairs.iter().enumerate() {
                    member(out, n, pair);
                }
            } else {
                let mut sorted: Vec<&(Vec<u8>, Value)> = pairs.iter().collect();
                sorted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                for (n, pair) in sorted.into_iter().enumerate() {
                    member(out, n, pair);
                }
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

/// How the printer writes an ASCII byte that cannot stand for itself in a string (a quote, a
/// backslash or a control character): a short escape, or `\u00XX`.
fn escape(c: u8) -> ([u8; 6], usize) {
    let short = |e: u8| ([b'\\', e, 0, 0, 0, 0], 2);
    match c {
        b'"' => short(b'"'),
        b'\\' => short(b'\\'),
        b'\n' => short(b'n'),
        b'\r' => short(b'r'),
        b'\t' => short(b't'),
        8 => short(b'b'),
        12 => short(b'f'),
        _ => {
            let hex = b"0123456789abcdef";
            let u = [
                b'\\',
                b'u',
                b'0',
                b'0',
                hex[(c >> 4) as usize],
                hex[(c & 15) as usize],
            ];
            (u, 6)
        }
    }
}

/// Prints one decoded code point as the printer would inside a string; returns whether it
/// printed an escape.
pub(super) fn push_canonical_char(out: &mut Vec<u8>, cp: u32) -> bool {
    match cp {
        0x22 | 0x5C | 0..=0x1F => {
            let (e, n) = escape(cp as u8);
            out.extend_from_slice(&e[..n]);
            true
        }
        _ => {
            super::push_code_point(out, cp);
            false
        }
    }
}

fn write_str<S: Sink>(s: &[u8], out: &mut S) {
    out.put(b"\"");
    let mut i = 0;
    loop {
        // Runs of bytes that print as they are, found eight at a time.
        let run = super::parse::plain_run(&s[i..]);
        out.put(&s[i..i + run]);
        i += run;
        let Some(&c) = s.get(i) else {
            break;
        };
        let (e, n) = escape(c);
        out.put(&e[..n]);
        i += 1;
    }
    out.put(b"\"");
}

/// Python's `repr(float)`: shortest round-trip digits, `1.0`, `1e+16`, `1e-05`, `nan` as `NaN`.
pub fn float_repr(f: f64) -> String {
    let mut out = Vec::with_capacity(24);
    push_float_repr(&mut out, f);
    String::from_utf8(out).expect("ascii")
}

/// A fixed buffer `{:e}` can print into: a float's shortest digits need at most 24 bytes.
struct Sci {
    buf: [u8; 32],
    len: usize,
}

impl std::fmt::Write for Sci {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        self.buf
            .get_mut(self.len..end)
            .ok_or(std::fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Appends [`float_repr`] of `f`, without allocating.
pub fn push_float_repr(out: &mut Vec<u8>, f: f64) {
    if f.is_nan() {
        return out.extend_from_slice(b"NaN");
    }
    if f.is_infinite() {
        return out.extend_from_slice(if f > 0.0 { b"Infinity" } else { b"-Infinity" });
    }
    // `{:e}` gives the shortest round-trip digits as d.ddde<exp>.
    let mut sci = Sci {
        buf: [0; 32],
        len: 0,
    };
    write!(sci, "{f:e}").expect("a float fits");
    let sci = &sci.buf[..sci.len];
    let e = sci.iter().position(|&c| c == b'e').expect("exponent");
    let exp: i32 = std::str::from_utf8(&sci[e + 1..])
        .expect("ascii")
        .parse()
        .expect("exponent digits");
    let (neg, mantissa) = match sci[..e].strip_prefix(b"-") {
        Some(m) => (true, m),
        None => (false, &sci[..e]),
    };
    let mut digits = [0u8; 24];
    let mut n = 0;
    for &c in mantissa.iter().filter(|&&c| c != b'.') {
        digits[n] = c;
        n += 1;
    }
    let digits = &digits[..n];
    let decpt = exp + 1;
    if neg {
        out.push(b'-');
    }
    if !(-4 < decpt && decpt <= 16) {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        // At least two exponent digits, as Python prints them (the largest has three).
        let a = exp.unsigned_abs();
        if a >= 100 {
            out.push(b'0' + (a / 100) as u8);
        }
        out.push(b'0' + (a / 10 % 10) as u8);
        out.push(b'0' + (a % 10) as u8);
    } else if decpt <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-decpt) as usize));
        out.extend_from_slice(digits);
    } else if (decpt as usize) < digits.len() {
        out.extend_from_slice(&digits[..decpt as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[decpt as usize..]);
    } else {
        out.extend_from_slice(digits);
        out.extend(std::iter::repeat_n(b'0', decpt as usize - digits.len()));
        out.extend_from_slice(b".0");
    }
}
