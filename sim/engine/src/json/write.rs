//! The canonical printer: `json.dumps(sort_keys=True, separators=(",", ":"),
//! ensure_ascii=False)` of a parsed [`Value`].

use super::Value;

/// Where canonical JSON goes: a buffer, or straight into a hasher.
pub trait Sink {
    fn put(&mut self, bytes: &[u8]);

    /// One byte: the printer's punctuation.
    fn put_byte(&mut self, b: u8) {
        self.put(&[b]);
    }

    /// Python's `repr` of a float.
    fn put_float(&mut self, f: f64) {
        self.put(float_repr(f).as_bytes());
    }
}

/// Inlined: most pieces are a few bytes, where a call costs more than the copy.
impl Sink for Vec<u8> {
    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    #[inline(always)]
    fn put_byte(&mut self, b: u8) {
        self.push(b);
    }

    /// Straight into the buffer: no string per float.
    fn put_float(&mut self, f: f64) {
        push_float_repr(self, f);
    }
}

/// Writes `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`.
pub fn write_canonical<S: Sink>(v: &Value, out: &mut S) {
    match v {
        Value::Null => out.put(b"null"),
        Value::Bool(true) => out.put(b"true"),
        Value::Bool(false) => out.put(b"false"),
        Value::Int(d) => out.put(d.as_bytes()),
        Value::Float(f) => out.put_float(*f),
        Value::Str(s) => write_str(s, out),
        Value::Array(items) => {
            out.put_byte(b'[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.put_byte(b',');
                }
                write_canonical(item, out);
            }
            out.put_byte(b']');
        }
        Value::Object(pairs) => {
            out.put_byte(b'{');
            // Byte order of generalised UTF-8 is code-point order, which is Python's sort.
            // Keys usually arrive sorted: then there is nothing to sort or allocate.
            let member = |out: &mut S, n: usize, (k, val): &(Vec<u8>, Value)| {
                if n > 0 {
                    out.put_byte(b',');
                }
                write_str(k, out);
                out.put_byte(b':');
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
            out.put_byte(b'}');
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
    out.put_byte(b'"');
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
    out.put_byte(b'"');
}

/// Python's `repr(float)`: shortest round-trip digits, `1.0`, `1e+16`, `1e-05`, `nan` as `NaN`.
pub fn float_repr(f: f64) -> String {
    let mut out = Vec::with_capacity(24);
    push_float_repr(&mut out, f);
    String::from_utf8(out).expect("ascii")
}

/// Appends [`float_repr`] of `f`, without allocating. Integral values below 1e16 (most floats
/// in arguments: `1.0`, `-0.0`, `3.0`) print as their integer; others take ryu's shortest
/// round-trip digits, laid out Python's way (ryu breaks a tie between two shortest
/// spellings to even, as Python does; `{:e}` rounds it up).
pub fn push_float_repr(out: &mut Vec<u8>, f: f64) {
    if f.is_nan() {
        return out.extend_from_slice(b"NaN");
    }
    if f.is_infinite() {
        return out.extend_from_slice(if f > 0.0 { b"Infinity" } else { b"-Infinity" });
    }
    if f == f.trunc() && f.abs() < 1e16 {
        if f.is_sign_negative() {
            out.push(b'-');
        }
        push_u64(out, f.abs() as u64);
        return out.extend_from_slice(b".0");
    }
    let mut ryu = ryu::Buffer::new();
    let text = ryu.format_finite(f).as_bytes();
    let (neg, text) = match text.strip_prefix(b"-") {
        Some(t) => (true, t),
        None => (false, text),
    };
    let (mantissa, exp) = match text.iter().position(|&c| c == b'e') {
        Some(e) => (&text[..e], parse_exp(&text[e + 1..])),
        None => (text, 0),
    };
    // The mantissa's digits without the point, and where the point falls among them.
    let mut digits = [0u8; 24];
    let mut n = 0;
    let mut point = mantissa.len() as i32;
    let mut leading_zeros = 0;
    for (i, &c) in mantissa.iter().enumerate() {
        if c == b'.' {
            point = i as i32;
        } else if n == 0 && c == b'0' {
            leading_zeros += 1;
        } else {
            digits[n] = c;
            n += 1;
        }
    }
    while n > 1 && digits[n - 1] == b'0' {
        n -= 1;
    }
    lay_out(out, neg, &digits[..n], point - leading_zeros + exp);
}

/// Python's layout of shortest digits `d1 d2 ...` worth `0.d1d2... * 10^decpt`: positional
/// from 1e-4 to below 1e16, else `d.ddde+XX`.
fn lay_out(out: &mut Vec<u8>, neg: bool, digits: &[u8], decpt: i32) {
    if neg {
        out.push(b'-');
    }
    if !(-4 < decpt && decpt <= 16) {
        let exp = decpt - 1;
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

/// An exponent as ryu prints it: `16`, `-7`.
fn parse_exp(text: &[u8]) -> i32 {
    let (neg, digits) = match text.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, text),
    };
    let v = digits
        .iter()
        .fold(0i32, |v, &c| v * 10 + i32::from(c - b'0'));
    if neg { -v } else { v }
}

/// Appends `n`'s decimal digits, without formatting machinery.
pub(crate) fn push_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::ChaCha8Rng;
    use rand::{RngExt, SeedableRng};

    /// The layout from `{:e}`'s shortest digits, as the printer did before it used ryu (which
    /// breaks ties between two shortest spellings the other way).
    fn reference(f: f64) -> String {
        if f.is_nan() || f.is_infinite() {
            return float_repr(f);
        }
        let sci = format!("{f:e}");
        let (mantissa, exp) = sci.split_once('e').unwrap();
        let exp: i32 = exp.parse().unwrap();
        let (neg, mantissa) = match mantissa.strip_prefix('-') {
            Some(m) => (true, m),
            None => (false, mantissa),
        };
        let digits: Vec<u8> = mantissa.bytes().filter(|&c| c != b'.').collect();
        let mut out = Vec::new();
        lay_out(&mut out, neg, &digits, exp + 1);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn ryu_digits_lay_out_as_the_shortest_digits_of_fmt() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let (mut checked, mut ties) = (0, 0);
        for i in 0..400_000u64 {
            let f = match i % 4 {
                // Any bit pattern: every exponent, subnormals, NaNs.
                0 => f64::from_bits(rng.random()),
                // Integers and halves near the 1e16 switch and below.
                1 => (rng.random_range(0..20_000_000_000_000_000u64) as f64) / 2.0,
                // Short decimals, as people write them.
                2 => rng.random_range(-100_000i64..100_000) as f64 / 1000.0,
                _ => 10f64.powi(rng.random_range(-330..310)) * rng.random_range(1..10) as f64,
            };
            let f = if rng.random_bool(0.5) { -f } else { f };
            let (ours, fmt) = (float_repr(f), reference(f));
            if ours != fmt {
                // A tie between two shortest spellings: Python (and ryu) round the last digit
                // to even, core::fmt rounds it up; tests/reference/conformance.rs holds ours to Python.
                assert_eq!(ours.len(), fmt.len(), "{f:e}");
                assert_eq!(
                    ours.parse::<f64>().unwrap().to_bits(),
                    f.to_bits(),
                    "{ours}"
                );
                let (a, b) = (ours.as_bytes(), fmt.as_bytes());
                let at = a.iter().zip(b).position(|(x, y)| x != y).unwrap();
                assert!(a[at] % 2 == 0 && a[at] + 1 == b[at], "{ours} vs {fmt}");
                ties += 1;
            }
            checked += 1;
        }
        assert_eq!(checked, 400_000);
        assert!(ties > 0, "the draw has ties between shortest spellings");
        for (f, want) in [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1e16, "1e+16"),
            (9999999999999998.0, "9999999999999998.0"),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (0.1, "0.1"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (123456.789, "123456.789"),
            // Python: repr(-1238030092324805.25) is '-1238030092324805.2' (core::fmt says .3).
            (f64::from_bits(0xc311_97ed_5f7f_3f15), "-1238030092324805.2"),
        ] {
            assert_eq!(float_repr(f), want);
        }
    }
}
