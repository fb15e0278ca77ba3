//! The streaming canonical printer against the tree parser and printer: on every generated
//! text (valid, odd and broken, lenient and strict) both give the same bytes or the same error,
//! and the member reader sees what the strict parser sees.

mod common;

use common::jsongen::text;
use loopsim_engine::json::{self, Canonicalizer, Kind, Members, Value};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

fn tree(text: &[u8], strict: bool) -> Result<(Vec<u8>, Value), json::ParseError> {
    let v = if strict {
        json::parse_strict(text)?
    } else {
        json::parse(text)?
    };
    Ok((json::canonical(&v), v))
}

fn kind(v: &Value) -> Kind {
    match v {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Int(_) => Kind::Int,
        Value::Float(_) => Kind::Float,
        Value::Str(_) => Kind::Str,
        Value::Array(_) => Kind::Array,
        Value::Object(_) => Kind::Object,
    }
}

#[test]
fn streaming_printer_matches_parse_then_print() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut canon = Canonicalizer::default();
    let mut out = Vec::new();
    let (mut ok, mut broken, mut rewritten) = (0, 0, 0);
    for _ in 0..60_000 {
        let t = text(&mut rng);
        for strict in [false, true] {
            out.clear();
            out.extend_from_slice(b"prefix");
            let got = if strict {
                canon.canonical_strict(&t, &mut out)
            } else {
                canon.canonical(&t, &mut out)
            };
            match (tree(&t, strict), got) {
                (Ok((want, v)), Ok(k)) => {
                    assert_eq!(&out[6..], &want[..], "{}", String::from_utf8_lossy(&t));
                    assert_eq!(k, kind(&v));
                    ok += 1;
                    rewritten += usize::from(!t.ends_with(&want));
                }
                (Err(want), Err(e)) => {
                    assert_eq!(e, want, "{}", String::from_utf8_lossy(&t));
                    broken += 1;
                }
                (want, got) => panic!(
                    "{}: tree {want:?}, stream {got:?}",
                    String::from_utf8_lossy(&t)
                ),
            }
        }
    }
    // The generator reaches every side: valid texts, broken ones, and texts the printer rewrites.
    assert!(
        ok > 40_000 && broken > 20_000 && rewritten > 10_000,
        "{ok} {broken} {rewritten}"
    );
}

#[test]
fn deep_nesting_fails_as_the_parser_fails() {
    let mut canon = Canonicalizer::default();
    for n in [json::MAX_DEPTH, json::MAX_DEPTH + 1, json::MAX_DEPTH + 2] {
        let t = "[".repeat(n) + &"]".repeat(n);
        let mut out = Vec::new();
        let got = canon.canonical(t.as_bytes(), &mut out).map(|_| out);
        assert_eq!(
            got,
            json::parse(t.as_bytes()).map(|v| json::canonical(&v)),
            "{n}"
        );
    }
}

/// The member reader over an object gives the strict parser's members (the last of a
/// duplicate key winning once the caller keeps the last).
#[test]
fn member_reader_sees_what_the_strict_parser_sees() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut canon = Canonicalizer::default();
    let (mut key, mut text_buf, mut printed) = (Vec::new(), Vec::new(), Vec::new());
    let mut objects = 0;
    for _ in 0..30_000 {
        let t = text(&mut rng);
        let want = json::parse_strict(&t);
        let Some(mut m) = Members::new(&t) else {
            assert!(!matches!(want, Ok(Value::Object(_))));
            continue;
        };
        let mut seen: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let read = (|| {
            while let Some(k) = m.next_key(&mut key)? {
                let key = k.to_vec();
                let as_text = rng.random_bool(0.5);
                let k = m.value(&mut canon, as_text.then_some(&mut text_buf), &mut printed)?;
                let v = if as_text && k == Kind::Str {
                    json::canonical(&Value::Str(text_buf.clone()))
                } else {
                    printed.clone()
                };
                match seen.iter_mut().find(|(k, _)| *k == key) {
                    Some(slot) => slot.1 = v,
                    None => seen.push((key.clone(), v)),
                }
            }
            m.finish()
        })();
        match (want, read) {
            (Ok(Value::Object(pairs)), Ok(())) => {
                objects += 1;
                assert_eq!(pairs.len(), seen.len());
                for ((wk, wv), (k, v)) in pairs.iter().zip(&seen) {
                    let printed_key = json::canonical(&Value::Str(wk.clone()));
                    assert_eq!(&printed_key[1..printed_key.len() - 1], &k[..]);
                    assert_eq!(&json::canonical(wv), v);
                }
            }
            (Ok(_), Ok(())) => panic!("not an object: {}", String::from_utf8_lossy(&t)),
            (Err(_), Err(_)) => {}
            (w, r) => panic!("{}: {w:?} vs {r:?}", String::from_utf8_lossy(&t)),
        }
    }
    assert!(objects > 3_000, "{objects}");
}
