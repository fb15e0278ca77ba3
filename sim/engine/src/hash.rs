//! Call signatures and result hashes, byte-compatible with Hermes.
//!
//! A signature is `(tool name, SHA-256 of the canonical arguments)`; a result hash is the
//! SHA-256 of the canonical re-encoding of the parsed result, or of the raw text when it is not
//! JSON (or is the literal `null`). Canonical JSON streams straight into the hasher, so no
//! intermediate string is built.

use std::fmt;

use sha2::{Digest, Sha256};

use crate::json::{self, Canonicalizer, Kind, Value};
use crate::tool_name::ToolName;

mod result_cache;
pub use result_cache::ResultHashCache;

/// A SHA-256 digest; prints as lowercase hex like Python's `hexdigest()`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Hash(pub [u8; 32]);

impl Hash {
    pub fn of(bytes: &[u8]) -> Hash {
        Hash(Sha256::digest(bytes).into())
    }

    pub fn hex(&self) -> String {
        self.to_string()
    }

    /// Lowercase hex digits, without formatting machinery (answers print one per line).
    pub fn hex_bytes(&self) -> [u8; 64] {
        /// Both digits of every byte value.
        const PAIRS: [[u8; 2]; 256] = {
            const DIGITS: &[u8; 16] = b"0123456789abcdef";
            let mut t = [[0u8; 2]; 256];
            let mut b = 0;
            while b < 256 {
                t[b] = [DIGITS[b >> 4], DIGITS[b & 15]];
                b += 1;
            }
            t
        };
        let mut out = [0u8; 64];
        for (pair, b) in out.chunks_exact_mut(2).zip(self.0) {
            pair.copy_from_slice(&PAIRS[b as usize]);
        }
        out
    }
}

impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(std::str::from_utf8(&self.hex_bytes()).expect("ascii"))
    }
}

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hash({self})")
    }
}

thread_local! {
    /// Reused canonical-JSON buffer: one SHA-256 call over the whole text is faster than
    /// feeding the hasher fragment by fragment.
    static CANONICAL_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// SHA-256 of a value's canonical JSON.
pub fn canonical_hash(v: &Value) -> Hash {
    CANONICAL_BUF.with(|buf| {
        let mut buf = buf.borrow_mut();
        buf.clear();
        json::write_canonical(v, &mut *buf);
        let h = Hash::of(&buf);
        if buf.capacity() > 1 << 20 {
            *buf = Vec::new();
        }
        h
    })
}

/// `sha256("{}")`: the hash of any non-object argument list.
pub const EMPTY_ARGS_HASH: Hash = Hash([
    0x44, 0x13, 0x6f, 0xa3, 0x55, 0xb3, 0x67, 0x8a, 0x11, 0x46, 0xad, 0x16, 0xf7, 0xe8, 0x64, 0x9e,
    0x94, 0xfb, 0x4f, 0xc2, 0x1f, 0xe7, 0x7e, 0x83, 0x10, 0xc0, 0x60, 0xf6, 0x1c, 0xaa, 0xff, 0x8a,
]);

/// The args hash of a call; arguments that are not an object count as `{}`.
pub fn args_hash(args: &Value) -> Hash {
    if args.is_object() {
        canonical_hash(args)
    } else {
        EMPTY_ARGS_HASH
    }
}

/// Identity of a call: tool name plus argument hash (raw arguments are never kept).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct Signature {
    /// Interned, so copying a signature into the controller's maps costs no allocation.
    pub tool: ToolName,
    pub args_hash: Hash,
}

/// The names first: interned names compare by pointer, and equal signatures hash alike.
impl std::hash::Hash for Signature {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.tool.hash(state);
        self.args_hash.hash(state);
    }
}

impl Signature {
    pub fn new(tool: &str, args: &Value) -> Signature {
        Signature {
            tool: ToolName::new(tool),
            args_hash: args_hash(args),
        }
    }
}

/// Whether execute_code's volatile bookkeeping is dropped before hashing its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultHashing {
    /// Hash the whole parsed result (0.19.0, v0.21.5).
    Plain,
    /// Drop top-level `duration_seconds` and `kernel.execution_count` of execute_code results.
    StripExecuteCodeVolatile,
}

/// Hermes's result hash of a tool result (`None` counts as the empty string).
pub fn result_hash(result: Option<&[u8]>, tool: &str, hashing: ResultHashing) -> Hash {
    thread_local! {
        static HASHER: std::cell::RefCell<ResultHasher> = std::cell::RefCell::default();
    }
    HASHER.with(|h| h.borrow_mut().hash(result, tool, hashing))
}

/// Computes result hashes with reused scratch: the canonical text is printed straight from the
/// result's text by [`Canonicalizer`], with no tree in between.
#[derive(Clone, Debug, Default)]
pub struct ResultHasher {
    canon: Canonicalizer,
    buf: Vec<u8>,
    stripped: Vec<u8>,
}

impl ResultHasher {
    /// Hermes's result hash of a tool result (`None` counts as the empty string).
    pub fn hash(&mut self, result: Option<&[u8]>, tool: &str, hashing: ResultHashing) -> Hash {
        let text = result.unwrap_or(b"");
        let strip = hashing == ResultHashing::StripExecuteCodeVolatile && tool == "execute_code";
        self.buf.clear();
        let h = match self.canon.canonical(text, &mut self.buf) {
            Err(_) | Ok(Kind::Null) => Hash::of(text),
            Ok(Kind::Object) if strip => {
                // The two fields come out of the printed text (sorted, one member per key).
                self.stripped.clear();
                strip_printed(&self.buf, &mut self.stripped);
                Hash::of(&self.stripped)
            }
            Ok(_) => Hash::of(&self.buf),
        };
        if self.buf.capacity() > 1 << 20 {
            self.buf = Vec::new();
        }
        h
    }
}

/// [`strip_execute_code_volatile`] on a canonical object's text: `printed` without its
/// top-level `duration_seconds` member and, when its `kernel` is an object, without that
/// object's `execution_count`, appended to `out`.
fn strip_printed(printed: &[u8], out: &mut Vec<u8>) {
    write_without(printed, b"duration_seconds", true, out);
}

/// Appends a canonical object's text without its member `drop`; `kernel`: likewise without
/// `execution_count` in the `kernel` member when that is an object.
fn write_without(object: &[u8], drop: &[u8], kernel: bool, out: &mut Vec<u8>) {
    out.push(b'{');
    let mut first = true;
    for (key, value) in printed_members(object) {
        if key == drop {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        out.push(b'"');
        out.extend_from_slice(key);
        out.extend_from_slice(b"\":");
        if kernel && key == b"kernel" && value.first() == Some(&b'{') {
            write_without(value, b"execution_count", false, out);
        } else {
            out.extend_from_slice(value);
        }
    }
    out.push(b'}');
}

/// The members of a canonical object's text (no whitespace, strings closed): each key as
/// printed (between its quotes) and its value's text.
fn printed_members(object: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    // Past a string whose opening quote is at `at`: the index after its closing quote.
    let string_end = move |mut at: usize| {
        at += 1;
        loop {
            at += memchr::memchr2(b'"', b'\\', &object[at..]).expect("a closed string");
            match object[at] {
                b'\\' => at += 2,
                _ => return at + 1,
            }
        }
    };
    let mut at = 1;
    std::iter::from_fn(move || {
        if object.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(at);
        let key = &object[at + 1..key_end - 1];
        let start = key_end + 1;
        let mut end = start;
        let mut depth = 0usize;
        loop {
            match object[end] {
                b'"' => {
                    end = string_end(end);
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth == 0 => break,
                b'}' | b']' => depth -= 1,
                b',' if depth == 0 => break,
                _ => {}
            }
            end += 1;
        }
        // Past the delimiter: the next key's quote, or the end of the object.
        at = end + 1;
        Some((key, &object[start..end]))
    })
}

/// Removes the two fields that change on every execute_code run even when nothing happened.
pub fn strip_execute_code_volatile(v: &mut Value) {
    if let Value::Object(pairs) = v {
        pairs.retain(|(k, _)| k.as_slice() != b"duration_seconds");
        for (k, inner) in pairs.iter_mut() {
            if k.as_slice() == b"kernel"
                && let Value::Object(kernel) = inner
            {
                kernel.retain(|(k, _)| k.as_slice() != b"execution_count");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(text: &str) -> String {
        canonical_hash(&json::parse(text.as_bytes()).unwrap()).hex()
    }

    // Vectors observed by running Hermes (docs/hermes-semantics.md section 9.4).
    #[test]
    fn hermes_vectors() {
        assert_eq!(EMPTY_ARGS_HASH.hex(), Hash::of(b"{}").hex());
        assert_eq!(
            h("{}"),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert_eq!(
            h(r#"{"b":1,"a":"é"}"#),
            "aa58fba8483623bed37c1b02edfccbdd9a53123837c20bfa4cb4049993a2872e"
        );
        assert_eq!(
            h("{\"x\":1.0,\"y\":[true,null],\"z\":\"\u{2028}\"}"),
            "90549b9fbccc3bd86a1a3f175a20f3c39888091e4ed27f0402a346d750740d51"
        );
        assert_eq!(
            result_hash(Some(b"hello"), "terminal", ResultHashing::Plain).hex(),
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        // A lone surrogate, encoded with surrogatepass.
        assert_eq!(
            result_hash(Some(&[0xED, 0xA0, 0x80]), "x", ResultHashing::Plain).hex(),
            "91a681b998555fb475479817b126c94e57e52011fa1842c5d188795a4a05226b"
        );
        assert_eq!(
            result_hash(Some(br#""\ud800""#), "x", ResultHashing::Plain).hex(),
            "ee4a76500d4d714ca691afe56c1fd9e0a5fbcb42d6c8f8d7178aae4ddb683cf7"
        );
        let exec = br#"{"status":"success","output":"","duration_seconds":0.12,"kernel":{"execution_count":7,"mode":"persistent"}}"#;
        assert_eq!(
            result_hash(
                Some(exec),
                "execute_code",
                ResultHashing::StripExecuteCodeVolatile
            )
            .hex(),
            "0dfdf60eb56e67f1011b73664a56d25d9b8a8a15c11707781bafef98ae82a769"
        );
        assert_eq!(
            result_hash(Some(exec), "execute_code", ResultHashing::Plain).hex(),
            "8aad07df77e3bd2dd3cb47cdced9a6e3c6484d26245fecc87e8e04ec265dd2e1"
        );
    }

    #[test]
    fn stripping_only_touches_execute_code() {
        let exec = br#"{"duration_seconds":1,"kernel":{"execution_count":1}}"#;
        let other = result_hash(
            Some(exec),
            "terminal",
            ResultHashing::StripExecuteCodeVolatile,
        );
        assert_eq!(
            other,
            result_hash(Some(exec), "terminal", ResultHashing::Plain)
        );
        let stripped = result_hash(
            Some(exec),
            "execute_code",
            ResultHashing::StripExecuteCodeVolatile,
        );
        assert_eq!(stripped, Hash::of(br#"{"kernel":{}}"#));
    }

    /// The printed-text stripping against the tree's, on execute_code results of every shape.
    #[test]
    fn stripping_the_printed_text_is_stripping_the_tree() {
        let members = [
            r#""duration_seconds": 0.5"#,
            r#""duration\u005fseconds": 2"#,
            r#""kernel": {"execution_count": 3, "mode": "persistent"}"#,
            r#""kernel": {"mode": "x", "execution_count": {"a": [1, "}"]}}"#,
            r#""kernel": {"execution_count": 1}"#,
            r#""kernel": [1, {"execution_count": 2}]"#,
            r#""kernel": "execution_count""#,
            r#""kernel": {}"#,
            r#""output": "a \"quoted\" {brace} [x], \\ done""#,
            r#""status": "success""#,
            r#""error": null"#,
            r#""z": {"duration_seconds": 1}"#,
            r#""\u00e9t\u00e9": [[], {}, "", 1e5]"#,
        ];
        let mut state = 7u64;
        let mut next = |n: usize| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize % n
        };
        for _ in 0..20_000 {
            let picked: Vec<&str> = (0..next(6)).map(|_| members[next(members.len())]).collect();
            let text = format!("{{ {} }}", picked.join(" , "));
            let mut tree = json::parse(text.as_bytes()).unwrap();
            strip_execute_code_volatile(&mut tree);
            assert_eq!(
                result_hash(
                    Some(text.as_bytes()),
                    "execute_code",
                    ResultHashing::StripExecuteCodeVolatile
                ),
                canonical_hash(&tree),
                "{text}"
            );
        }
    }

    #[test]
    fn null_and_non_json_hash_the_raw_text() {
        let raw = b" null ";
        assert_eq!(
            result_hash(Some(raw), "t", ResultHashing::Plain),
            Hash::of(raw)
        );
        assert_eq!(result_hash(None, "t", ResultHashing::Plain), Hash::of(b""));
    }
}
