//! Generated JSON texts for the parser tests: odd keys and strings (escapes, surrogates,
//! unicode), numbers in every spelling, nesting, whitespace, and broken variants.

use rand::RngExt;
use rand::rngs::ChaCha8Rng;

const KEYS: &[&str] = &[
    "a",
    "b",
    "ab",
    "ab ",
    "a\\\"",
    "a#",
    "\\u0061",
    "z",
    "\\u00e9",
    "é",
    "\\ud83d\\ude00",
    "\u{1F600}",
    "\\n",
    "\\u0001",
    "\\/",
    "",
    "op",
    "\\ud800",
    "\\udc00x",
    "B",
    "aa",
];

const STRINGS: &[&str] = &[
    "",
    "plain text",
    "é ü 中",
    "\\\"quoted\\\"",
    "back\\\\slash",
    "\\n\\r\\t\\b\\f",
    "\\u0000\\u001f",
    "\\u007f",
    "\\u2028",
    "\\ud83d\\ude00",
    "\\ud800",
    "\\udfff\\ud800",
    "\\ud800\\u0041",
    "\\/path\\/x",
    "long long long long long long long long long long text",
    "\u{10FFFF}",
    "\\uD834\\uDD1E",
];

const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-17",
    "123456789012345678901234567890",
    "1.0",
    "-0.0",
    "1e5",
    "1E+5",
    "2.5e-310",
    "1e400",
    "-1e400",
    "0.1",
    "1e16",
    "1.5e300",
    "123.456e-7",
    "10E2",
    "3.14159",
];

pub fn ws(rng: &mut ChaCha8Rng, out: &mut String) {
    if rng.random_bool(0.3) {
        out.push_str([" ", "\n", "\t ", "\r\n  "][rng.random_range(0..4)]);
    }
}

pub fn value(rng: &mut ChaCha8Rng, depth: u32, out: &mut String) {
    let pick = if depth > 4 {
        rng.random_range(0..6)
    } else {
        rng.random_range(0..9)
    };
    match pick {
        0 => out.push_str("null"),
        1 => out.push_str(if rng.random_bool(0.5) {
            "true"
        } else {
            "false"
        }),
        2 | 3 => out.push_str(NUMBERS[rng.random_range(0..NUMBERS.len())]),
        4 | 5 => {
            out.push('"');
            for _ in 0..rng.random_range(1..3) {
                out.push_str(STRINGS[rng.random_range(0..STRINGS.len())]);
            }
            out.push('"');
        }
        6 => {
            out.push('[');
            let n = rng.random_range(0..4);
            for k in 0..n {
                if k > 0 {
                    out.push(',');
                }
                ws(rng, out);
                value(rng, depth + 1, out);
                ws(rng, out);
            }
            out.push(']');
        }
        _ => {
            out.push('{');
            let n = rng.random_range(0..6);
            for k in 0..n {
                if k > 0 {
                    out.push(',');
                }
                ws(rng, out);
                out.push('"');
                out.push_str(KEYS[rng.random_range(0..KEYS.len())]);
                out.push('"');
                ws(rng, out);
                out.push(':');
                ws(rng, out);
                value(rng, depth + 1, out);
            }
            ws(rng, out);
            out.push('}');
        }
    }
}

/// A generated text, sometimes broken: a byte dropped, doubled or replaced, or cut short.
pub fn text(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut s = String::new();
    ws(rng, &mut s);
    value(rng, 0, &mut s);
    ws(rng, &mut s);
    let mut b = s.into_bytes();
    if rng.random_bool(0.35) {
        mutate(rng, &mut b);
    }
    b
}

/// Breaks a text in one place: a byte dropped, doubled or replaced, a cut, or a splice of a
/// constant, a byte order mark or a lone surrogate's bytes.
pub fn mutate(rng: &mut ChaCha8Rng, b: &mut Vec<u8>) {
    if !b.is_empty() {
        let at = rng.random_range(0..b.len());
        const SPLICES: [&[u8]; 5] = [
            b"NaN",
            b"Infinity",
            b"-Infinity",
            b"\xef\xbb\xbf",
            b"\xed\xa0\x80",
        ];
        match rng.random_range(0..5) {
            0 => {
                b.remove(at);
            }
            1 => b.insert(at, b[at]),
            2 => b[at] = b"{}[]\",:\\ \x01\xffNI-0e."[rng.random_range(0..17)],
            3 => b.truncate(at),
            _ => {
                let s = SPLICES[rng.random_range(0..SPLICES.len())];
                b.splice(at..at, s.iter().copied());
            }
        }
    }
}
