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

mod canon;
mod members;
mod parse;
mod text;
mod write;

pub use canon::{Canonicalizer, Kind};
pub use members::Members;
use parse::parse_with;
pub(crate) use parse::plain_run;
pub use parse::push_code_point;
pub use text::{char_len, char_prefix, code_points, is_utf8, py_strip};
pub(crate) use write::push_u64;
pub use write::{Sink, canonical, float_repr, write_canonical};

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
    fn utf8_check_agrees_with_the_standard_library() {
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u32
        };
        // Long ASCII pieces put the other sequences at every offset of a 32-byte block.
        let pieces: [&[u8]; 20] = [
            b"\xe0\x80\x80",
            b"\xe0\xa0\x80",
            b"\xf0\x8f\xbf\xbf",
            b"\xf4\x8f\xbf\xbf",
            b"\xed\x9f\xbf",
            b"\xf8\x88\x80\x80\x80",
            b"abcdefghijklmnopqrstuvwxyz01234",
            b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEF",
            b"abcdefgh",
            b"x",
            "é".as_bytes(),
            "中".as_bytes(),
            "\u{1F600}".as_bytes(),
            b"\xff",
            b"\xc3",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"\xe2\x82",
            b"\x80",
            b"\xc0\xaf",
        ];
        for _ in 0..200_000 {
            let mut s = Vec::new();
            for _ in 0..next() % 24 {
                s.extend_from_slice(pieces[(next() % 20) as usize]);
            }
            assert_eq!(is_utf8(&s), std::str::from_utf8(&s).is_ok(), "{s:?}");
        }
    }

    #[test]
    fn char_len_counts_the_bytes_that_start_a_code_point() {
        let mut state = 11u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u8
        };
        for len in 0..4000 {
            let s: Vec<u8> = (0..len % 200).map(|_| next()).collect();
            let starts = s.iter().filter(|&&b| (b & 0xC0) != 0x80).count();
            assert_eq!(char_len(&s), starts, "{s:?}");
        }
        assert_eq!(char_len(&[0x80; 64]), 0);
        assert_eq!(char_len(&[0xBF; 17]), 0);
        assert_eq!(char_len(&[0xC0; 17]), 17);
        assert_eq!(char_len("é😀abcdefgh中".as_bytes()), 11);
    }

    #[test]
    fn python_strip_and_prefix() {
        assert_eq!(py_strip("\u{a0} x \u{3000}".as_bytes()), b"x");
        assert_eq!(py_strip(b"   "), b"");
        assert_eq!(char_prefix("éab".as_bytes(), 2), "éa".as_bytes());
        assert_eq!(char_len("é\u{1F600}".as_bytes()), 2);
    }
}
