//! The parser: `json.loads`'s grammar, with Python's errors and value distinctions.

use super::{MAX_DEPTH, MAX_INT_DIGITS, ParseError, Value};

/// A number token: an int's digits as Python prints them, or a float.
pub(super) enum Number<'a> {
    /// ASCII digits, a leading `-` allowed.
    Int(&'a [u8]),
    Float(f64),
}

/// How many leading bytes of `s` are neither `"`, `\\` nor below 0x20: the bytes a string run
/// copies as they are. Sixteen bytes at a time where the processor compares vectors (every
/// x86-64 has SSE2), then eight in one word: a result is usually kilobytes of such bytes.
pub(crate) fn plain_run(s: &[u8]) -> usize {
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    while let Some(chunk) = s.get(i..i + 16) {
        let mask = special16(chunk.try_into().expect("16 bytes"));
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 16;
    }
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    while let Some(chunk) = s.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        // Each mask's lowest set byte is exact (a borrow only runs upwards from a true hit),
        // so the lowest set byte of their union is the first special byte.
        let below = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
        let special =
            below | has_zero(w ^ (ONES * b'"' as u64)) | has_zero(w ^ (ONES * b'\\' as u64));
        if special != 0 {
            return i + (special.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&c) = s.get(i) {
        if c == b'"' || c == b'\\' || c < 0x20 {
            break;
        }
        i += 1;
    }
    i
}

/// One bit per byte of `chunk` that is a quote, a backslash or below 0x20.
#[cfg(target_arch = "x86_64")]
#[inline]
fn special16(chunk: &[u8; 16]) -> u32 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of the x86-64 baseline, and the load reads exactly the 16 bytes
    // of `chunk` (an unaligned load).
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // A byte is below 0x20 exactly when min(byte, 0x1f) is the byte itself.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
    }
}

pub(super) fn parse_with<const STRICT: bool>(text: &[u8]) -> Result<Value, ParseError> {
    let mut p = Parser::<STRICT>::new(text);
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
pub(super) struct Parser<'a, const STRICT: bool> {
    pub(super) s: &'a [u8],
    pub(super) i: usize,
    /// The whole text is known to be UTF-8, so strict mode need not check string runs.
    pub(super) utf8: bool,
}

impl<'a, const STRICT: bool> Parser<'a, STRICT> {
    pub(super) fn new(s: &'a [u8]) -> Self {
        Parser {
            s,
            i: 0,
            utf8: false,
        }
    }

    pub(super) fn err(&self, reason: &'static str) -> ParseError {
        ParseError {
            offset: self.i,
            reason,
        }
    }

    pub(super) fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    pub(super) fn eat(&mut self, lit: &[u8]) -> bool {
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
        Ok(match self.number_token()? {
            Number::Int(digits) => {
                Value::Int(std::str::from_utf8(digits).expect("ascii digits").into())
            }
            Number::Float(f) => Value::Float(f),
        })
    }

    /// Scans a number at `i` (a `-` or a digit), as Python's scanner does: an int keeps its
    /// digits (`-0` is `0`), anything with a fraction or exponent is a float.
    pub(super) fn number_token(&mut self) -> Result<Number<'a>, ParseError> {
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
        let s: &'a [u8] = self.s;
        let text = &s[start..self.i];
        if is_float {
            if let Some(f) = short_decimal(text) {
                return Ok(Number::Float(f));
            }
            // Rust and CPython both round decimal strings correctly; overflow gives infinity.
            let f: f64 = std::str::from_utf8(text)
                .expect("ascii")
                .parse()
                .map_err(|_| self.err("bad float"))?;
            return Ok(Number::Float(f));
        }
        let neg = text.starts_with(b"-");
        let digits = &s[if neg { start + 1 } else { start }..int_end];
        if digits.len() > MAX_INT_DIGITS {
            return Err(self.err("integer exceeds the 4300-digit conversion limit"));
        }
        Ok(Number::Int(if digits == b"0" { b"0" } else { text }))
    }

    pub(super) fn hex4(&mut self) -> Result<u32, ParseError> {
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
        self.string_into(&mut out)?;
        Ok(out)
    }

    /// The length of the run of bytes from `i` that stand for themselves in a string (not a
    /// quote, a backslash or a control character), eight bytes at a time.
    pub(super) fn plain_run(&self) -> usize {
        plain_run(&self.s[self.i..])
    }

    /// In strict mode, checks that a run of string bytes is UTF-8.
    #[inline]
    pub(super) fn check_run(&self, run_start: usize) -> Result<(), ParseError> {
        if !STRICT || self.utf8 {
            return Ok(());
        }
        let run = &self.s[run_start..self.i];
        // Only runs with a non-ASCII byte need checking. A run stops only at ASCII bytes, so it
        // never splits a UTF-8 sequence.
        if !run.is_ascii()
            && let Err(e) = std::str::from_utf8(run)
        {
            return Err(ParseError {
                offset: run_start + e.valid_up_to(),
                reason: "invalid UTF-8 in a string",
            });
        }
        Ok(())
    }

    /// Reads a string body after the opening quote, appending its WTF-8 bytes to `out`.
    pub(super) fn string_into(&mut self, out: &mut Vec<u8>) -> Result<(), ParseError> {
        loop {
            let run_start = self.i;
            self.i += self.plain_run();
            self.check_run(run_start)?;
            out.extend_from_slice(&self.s[run_start..self.i]);
            match self.s.get(self.i) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    // The one-letter escapes stand for one byte; `\u` takes the long way.
                    let byte = match self.s.get(self.i + 1) {
                        Some(b'"') => b'"',
                        Some(b'\\') => b'\\',
                        Some(b'/') => b'/',
                        Some(b'n') => b'\n',
                        Some(b't') => b'\t',
                        Some(b'r') => b'\r',
                        Some(b'b') => 8,
                        Some(b'f') => 12,
                        _ => {
                            push_code_point(out, self.escape()?);
                            continue;
                        }
                    };
                    out.push(byte);
                    self.i += 2;
                }
                Some(_) => return Err(self.err("invalid control character in string")),
            }
        }
    }

    /// Decodes the escape at `i` (a backslash) into a code point; a `\uD8xx\uDCxx` pair is
    /// one code point, a lone surrogate stays a surrogate.
    pub(super) fn escape(&mut self) -> Result<u32, ParseError> {
        self.i += 1;
        let Some(&e) = self.s.get(self.i) else {
            return Err(self.err("unterminated string"));
        };
        self.i += 1;
        Ok(match e {
            b'"' => 0x22,
            b'\\' => 0x5C,
            b'/' => 0x2F,
            b'b' => 8,
            b'f' => 12,
            b'n' => 0x0A,
            b'r' => 0x0D,
            b't' => 0x09,
            b'u' => {
                let mut cp = self.hex4()?;
                if (0xD800..0xDC00).contains(&cp) && self.s.get(self.i..self.i + 2) == Some(b"\\u")
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
                cp
            }
            _ => {
                self.i -= 1;
                return Err(self.err("invalid escape"));
            }
        })
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
#[inline]
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

/// The value of a decimal without exponent and with at most 15 digits (`1.5`, `-0.25`,
/// `100.0`): the digits as an integer over a power of ten, both exact in an f64, so the one
/// division rounds correctly, as a full decimal conversion would.
fn short_decimal(text: &[u8]) -> Option<f64> {
    const POW10: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let (neg, t) = match text.strip_prefix(b"-") {
        Some(t) => (true, t),
        None => (false, text),
    };
    let (mut m, mut digits, mut frac, mut point) = (0u64, 0usize, 0usize, false);
    for &c in t {
        match c {
            b'.' => point = true,
            b'0'..=b'9' => {
                m = m * 10 + u64::from(c - b'0');
                digits += 1;
                frac += usize::from(point);
            }
            _ => return None,
        }
        if digits > 15 {
            return None;
        }
    }
    let f = m as f64 / POW10[frac];
    Some(if neg { -f } else { f })
}

#[cfg(test)]
mod tests {
    use super::short_decimal;
    use rand::rngs::ChaCha8Rng;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn short_decimals_read_as_a_full_conversion_reads_them() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut fast = 0;
        for _ in 0..300_000 {
            let n = rng.random_range(2..=17);
            let mut text: Vec<u8> = (0..n).map(|_| b'0' + rng.random_range(0..10u8)).collect();
            let point = rng.random_range(1..n);
            text.insert(point, b'.');
            if rng.random_bool(0.5) {
                text.insert(0, b'-');
            }
            let s = std::str::from_utf8(&text).unwrap();
            let want: f64 = s.parse().unwrap();
            match short_decimal(&text) {
                Some(f) => {
                    assert_eq!(f.to_bits(), want.to_bits(), "{s}");
                    fast += 1;
                }
                None => assert!(n > 15, "{s} has {n} digits"),
            }
        }
        assert!(fast > 100_000, "only {fast} took the short path");
        assert_eq!(
            short_decimal(b"-0.0").map(f64::to_bits),
            Some((-0.0f64).to_bits())
        );
        assert_eq!(short_decimal(b"1e5"), None);
    }
}
