//! Python's `str` operations on WTF-8 text: length, prefix and `strip`.

/// Counts code points in WTF-8 (Python's `len(str)`): the bytes that are not continuation
/// bytes (`10xxxxxx`). Counted in blocks of 255 bytes into a byte-wide counter, which the
/// compiler turns into vector compares and adds. The stall guards ask this of every repeated
/// result.
pub fn char_len(s: &[u8]) -> usize {
    let continuation: usize = s
        .chunks(255)
        .map(|block| {
            let mut n = 0u8;
            for &b in block {
                n += u8::from((b & 0xC0) == 0x80);
            }
            usize::from(n)
        })
        .sum();
    s.len() - continuation
}

/// Byte offset just past the first `n` code points (Python's `s[:n]`).
pub fn char_prefix(s: &[u8], n: usize) -> &[u8] {
    // A text has at most as many characters as bytes, and ASCII bytes are characters.
    if s.len() <= n {
        return s;
    }
    if s[..n].is_ascii() {
        return &s[..n];
    }
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

/// Whether `s` is UTF-8, as `std::str::from_utf8(s).is_ok()`: ASCII 32 bytes at a time (four
/// words or'ed together), then eight, and each other sequence checked in place against the
/// well-formed byte ranges. Request lines are short and mostly ASCII, where the standard
/// check's setup costs more than the check.
pub fn is_utf8(s: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let word = |w: &[u8]| u64::from_le_bytes(w.try_into().expect("8 bytes"));
    let mut i = 0;
    while i < s.len() {
        if let Some(w) = s.get(i..i + 32)
            && (word(&w[..8]) | word(&w[8..16]) | word(&w[16..24]) | word(&w[24..])) & HIGH == 0
        {
            i += 32;
            continue;
        }
        if let Some(w) = s.get(i..i + 8)
            && word(w) & HIGH == 0
        {
            i += 8;
            continue;
        }
        if s[i] < 0x80 {
            i += 1;
            continue;
        }
        match sequence_len(&s[i..]) {
            Some(n) => i += n,
            None => return false,
        }
    }
    true
}

/// The length of the well-formed UTF-8 sequence `s` starts with (its first byte not ASCII), or
/// `None`: the ranges of the Unicode standard's table of well-formed byte sequences (no
/// overlong forms, no surrogates, nothing past U+10FFFF).
fn sequence_len(s: &[u8]) -> Option<usize> {
    let within = |i: usize, lo: u8, hi: u8| s.get(i).is_some_and(|b| (lo..=hi).contains(b));
    let tail = |from: usize, n: usize| (from..n).all(|i| within(i, 0x80, 0xBF));
    let (second, n) = match s[0] {
        0xC2..=0xDF => ((0x80, 0xBF), 2),
        0xE0 => ((0xA0, 0xBF), 3),
        0xE1..=0xEC | 0xEE..=0xEF => ((0x80, 0xBF), 3),
        0xED => ((0x80, 0x9F), 3),
        0xF0 => ((0x90, 0xBF), 4),
        0xF1..=0xF3 => ((0x80, 0xBF), 4),
        0xF4 => ((0x80, 0x8F), 4),
        _ => return None,
    };
    (within(1, second.0, second.1) && tail(2, n)).then_some(n)
}
