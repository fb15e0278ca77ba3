//! A scripted call's arguments and signature, made once per call spec and run.
//!
//! A spec's arguments are parsed and hashed the first time it runs and shared after that; a
//! `distinct` spec adds its repetition as `n`, so its hash changes every time: its canonical
//! text is kept with the place of `n`'s digits, and each repetition hashes that text with its
//! own digits spliced in instead of printing the arguments again.

use std::rc::Rc;

use loopsim_engine::hash::{Hash, Signature};
use loopsim_engine::json::{self, Value};

use crate::scenario::CallSpec;

/// Arguments per call spec (the specs live as long as the scenario).
pub type ArgsCache = rustc_hash::FxHashMap<*const CallSpec, CachedArgs>;

/// One spec's arguments, parsed and hashed.
pub struct CachedArgs {
    args: Rc<Value>,
    signature: Signature,
    /// A distinct spec's canonical text with `n` = 0, and where that digit sits.
    with_n: Option<(Vec<u8>, usize)>,
    /// Where each repetition's text is put together.
    scratch: Vec<u8>,
    /// A distinct spec's arguments made so far (agents running one script share its
    /// specs): one that no call in flight holds any more is reused, only its `n` changed.
    made: Vec<Rc<Value>>,
}

/// A scenario's TOML arguments as the JSON value a model would send.
fn toml_args(args: &toml::Table) -> Value {
    let v = serde_json::to_value(args).unwrap_or(serde_json::Value::Null);
    json::parse(v.to_string().as_bytes()).unwrap_or(Value::Object(vec![]))
}

/// Arguments kept per distinct spec, at most (one per agent running it at once).
const MAX_MADE: usize = 64;

fn int(n: u32) -> Value {
    Value::Int(n.to_string().into())
}

/// `base` with `n` set to `rep` (last, whatever place it had), when `base` is an object.
fn with_rep(base: &Value, rep: u32) -> Value {
    let Value::Object(base) = base else {
        return base.clone();
    };
    let mut pairs = Vec::with_capacity(base.len() + 1);
    pairs.extend(base.iter().filter(|(k, _)| k.as_slice() != b"n").cloned());
    pairs.push((b"n".to_vec(), int(rep)));
    Value::Object(pairs)
}

/// The canonical text of `base` with `n` = 0 and the place of that digit: the texts for
/// `n` = 0 and `n` = 1 differ in that one byte and nowhere else.
fn text_with_n(base: &Value) -> Option<(Vec<u8>, usize)> {
    if !base.is_object() {
        return None;
    }
    let zero = json::canonical(&with_rep(base, 0));
    let one = json::canonical(&with_rep(base, 1));
    if zero.len() != one.len() {
        return None;
    }
    let mut differ = (0..zero.len()).filter(|&i| zero[i] != one[i]);
    let at = differ.next()?;
    differ.next().is_none().then_some((zero, at))
}

impl CachedArgs {
    fn new(c: &CallSpec) -> CachedArgs {
        let args = match &c.args_json {
            // Validated when the scenario was loaded.
            Some(text) => json::parse(text.get_ref().as_bytes()).unwrap_or(Value::Object(vec![])),
            None => toml_args(&c.args),
        };
        CachedArgs {
            signature: Signature::new(c.tool.get_ref(), &args),
            with_n: if c.distinct { text_with_n(&args) } else { None },
            args: Rc::new(args),
            scratch: Vec::new(),
            made: Vec::new(),
        }
    }

    /// The hash of the arguments with `n` = `rep`, from the kept text.
    fn hash_with(&mut self, rep: u32) -> Option<Hash> {
        let (text, at) = self.with_n.as_ref()?;
        self.scratch.clear();
        self.scratch.extend_from_slice(&text[..*at]);
        self.scratch
            .extend_from_slice(itoa::Buffer::new().format(rep).as_bytes());
        self.scratch.extend_from_slice(&text[at + 1..]);
        Some(Hash::of(&self.scratch))
    }
}

/// The arguments and signature of one call: parsed and hashed once per call spec; distinct
/// repetitions add `n` and are hashed again.
pub fn call_args(cache: &mut ArgsCache, c: &CallSpec, rep: u32) -> (Rc<Value>, Signature) {
    let cached = cache
        .entry(c as *const CallSpec)
        .or_insert_with(|| CachedArgs::new(c));
    if !c.distinct || !cached.args.is_object() {
        return (cached.args.clone(), cached.signature.clone());
    }
    let free = cached.made.iter().position(|v| Rc::strong_count(v) == 1);
    let v = match free {
        Some(i) => {
            let v = Rc::get_mut(&mut cached.made[i]).expect("held by no call");
            match v {
                // `with_rep` put `n` last.
                Value::Object(pairs) => pairs.last_mut().expect("n").1 = int(rep),
                _ => *v = with_rep(&cached.args, rep),
            }
            cached.made[i].clone()
        }
        None => {
            let v = Rc::new(with_rep(&cached.args, rep));
            if cached.made.len() < MAX_MADE {
                cached.made.push(v.clone());
            }
            v
        }
    };
    let signature = match cached.hash_with(rep) {
        Some(args_hash) => Signature {
            tool: cached.signature.tool.clone(),
            args_hash,
        },
        None => Signature::new(c.tool.get_ref(), &v),
    };
    (v, signature)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    /// Every distinct call of every scenario, at many repetitions, hashes as its arguments
    /// printed whole do, and carries them.
    #[test]
    fn spliced_hashes_equal_the_printed_arguments_hashes() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios");
        let mut distinct = 0;
        for entry in std::fs::read_dir(dir).expect("scenarios") {
            let path = entry.expect("entry").path();
            if path.extension().is_none_or(|e| e != "toml") {
                continue;
            }
            let sc = Scenario::load(&path).expect("loads");
            for agent in sc.file.agents.values() {
                let steps = agent.script.iter().chain(&agent.on_result);
                let steps = steps.chain(agent.turns.iter().flat_map(|t| &t.script));
                let calls = steps.flat_map(|s| {
                    let chosen = s.choose.iter().flat_map(|c| &c.calls);
                    let cycled = s.cycle.iter().flat_map(|c| &c.calls);
                    s.calls.iter().chain(chosen).chain(cycled)
                });
                for c in calls.filter(|c| c.distinct) {
                    let mut cache = ArgsCache::default();
                    let n_of = |v: &Value| match v {
                        Value::Object(pairs) => {
                            let n = pairs.iter().find(|(k, _)| k == b"n").expect("n");
                            Some(n.1.clone())
                        }
                        _ => None,
                    };
                    // Calls stay in flight over the next ones (up to twelve at once, as
                    // children running one script do): each keeps its own n.
                    let mut held: Vec<(u32, Rc<Value>)> = Vec::new();
                    for rep in (0..300).chain([999, 1000, 65_535, u32::MAX]) {
                        let (v, sig) = call_args(&mut cache, c, rep);
                        assert_eq!(sig, Signature::new(c.tool.get_ref(), &v), "{path:?}");
                        if let Some(n) = n_of(&v) {
                            assert_eq!(n, Value::Int(rep.to_string().into()));
                        }
                        for (r, h) in &held {
                            if let Some(n) = n_of(h) {
                                assert_eq!(n, Value::Int(r.to_string().into()), "{path:?}");
                            }
                        }
                        if rep % 3 != 0 {
                            held.push((rep, v));
                        }
                        if held.len() > 12 || rep % 17 == 0 {
                            held.drain(..held.len() / 2);
                        }
                    }
                    distinct += 1;
                }
            }
        }
        assert!(distinct >= 10, "only {distinct} distinct calls");
    }

    /// Arguments that already have an `n`, or other keys around it, splice the same way.
    #[test]
    fn an_existing_n_and_keys_on_either_side_are_handled() {
        for args in [
            r#"{"n": "x", "a": 1, "z": [1, 2]}"#,
            r#"{"m": {"n": 5}, "o": "é\u0001"}"#,
            r#"{}"#,
            r#"{"n0": 1, "N": 2, "n": 3}"#,
        ] {
            let base = json::parse(args.as_bytes()).expect("json");
            let (text, at) = text_with_n(&base).expect("an object");
            for rep in [0, 7, 10, 123_456] {
                let mut spliced = text[..at].to_vec();
                spliced.extend_from_slice(rep.to_string().as_bytes());
                spliced.extend_from_slice(&text[at + 1..]);
                assert_eq!(spliced, json::canonical(&with_rep(&base, rep)), "{args}");
            }
        }
        assert!(text_with_n(&Value::Null).is_none());
    }
}
