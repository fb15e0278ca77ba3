//! The fast reading of a `before` or `after` request: the fields straight into reused buffers,
//! the arguments printed canonically as they are read, nothing allocated in the steady state.
//! Anything else (another op, a field of the wrong type, a line that is not JSON) is left to
//! the tree path, which answers it or names the error exactly as before.

use crate::hash::{EMPTY_ARGS_HASH, Hash};
use crate::json::{Canonicalizer, Kind, Members};

/// Which call-shaped request a line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Before,
    After,
}

/// A well-formed `before` or `after` request, borrowed from the reader's buffers.
pub(super) struct Call<'r> {
    pub op: Op,
    pub tool: &'r str,
    /// The canonical arguments when they are an object (`None`: they count as `{}`).
    pub args: Option<&'r [u8]>,
    pub args_hash: Hash,
    /// `after` only: the result text (`None` for null).
    pub result: Option<&'r [u8]>,
    /// `after` only: the runtime's verdict, when it gave one.
    pub failed: Option<bool>,
}

/// Reused buffers for reading requests.
#[derive(Clone, Debug, Default)]
pub(super) struct RequestReader {
    canon: Canonicalizer,
    key: Vec<u8>,
    op: Vec<u8>,
    tool: Vec<u8>,
    args: Vec<u8>,
    result: Vec<u8>,
    other: Vec<u8>,
    /// The last arguments as written, with their kind and hash: an `after` repeats its
    /// `before`'s arguments, and a loop repeats its calls.
    last_args: LastArgs,
}

#[derive(Clone, Debug, Default)]
struct LastArgs {
    written: Vec<u8>,
    kind: Option<Kind>,
    hash: Hash,
}

/// What the line said of a field: its kind, as last written (a duplicate key's last value is
/// the one that counts).
#[derive(Clone, Copy, Default)]
struct Seen {
    op: Option<Kind>,
    tool: Option<Kind>,
    args: Option<Kind>,
    result: Option<Kind>,
    failed: Option<Option<bool>>,
    failed_ok: bool,
    id_ok: bool,
}

impl RequestReader {
    /// The line as a call, or `None` when the tree path must decide.
    pub(super) fn read(&mut self, line: &[u8]) -> Option<Call<'_>> {
        let mut m = Members::new(line)?;
        let mut seen = Seen {
            failed_ok: true,
            id_ok: true,
            ..Seen::default()
        };
        let r = &mut *self;
        while m.next_key(&mut r.key).ok()? {
            let canon = &mut r.canon;
            match r.key.as_slice() {
                b"op" => seen.op = Some(m.value(canon, Some(&mut r.op), &mut r.other).ok()?),
                b"tool" => seen.tool = Some(m.value(canon, Some(&mut r.tool), &mut r.other).ok()?),
                b"args" => {
                    let last = &mut r.last_args;
                    if last.kind.is_some() && m.skip_if_written_as(&last.written) {
                        seen.args = last.kind;
                        continue;
                    }
                    last.kind = None;
                    let start = m.position();
                    let kind = m.value(canon, None, &mut r.args).ok()?;
                    last.written.clear();
                    last.written.extend_from_slice(&line[start..m.position()]);
                    last.hash = if kind == Kind::Object {
                        Hash::of(&r.args)
                    } else {
                        EMPTY_ARGS_HASH
                    };
                    last.kind = Some(kind);
                    seen.args = Some(kind);
                }
                b"result" => {
                    seen.result = Some(m.value(canon, Some(&mut r.result), &mut r.other).ok()?)
                }
                b"failed" => {
                    let kind = m.value(canon, None, &mut r.other).ok()?;
                    seen.failed_ok = matches!(kind, Kind::Bool | Kind::Null);
                    seen.failed = Some((kind == Kind::Bool).then(|| r.other == b"true"));
                }
                b"tool_call_id" => {
                    seen.id_ok = m.value(canon, None, &mut r.other).ok()? == Kind::Str;
                }
                _ => {
                    m.value(canon, None, &mut r.other).ok()?;
                }
            }
        }
        m.finish().ok()?;
        let op = match (seen.op?, self.op.as_slice()) {
            (Kind::Str, b"before") => Op::Before,
            (Kind::Str, b"after") => Op::After,
            _ => return None,
        };
        if seen.tool? != Kind::Str {
            return None;
        }
        let tool = std::str::from_utf8(&self.tool).ok()?;
        let args = (seen.args? == Kind::Object).then_some(self.args.as_slice());
        let args_hash = self.last_args.hash;
        if op == Op::Before {
            return Some(Call {
                op,
                tool,
                args,
                args_hash,
                result: None,
                failed: None,
            });
        }
        let result = match seen.result? {
            Kind::Str => Some(self.result.as_slice()),
            Kind::Null => None,
            _ => return None,
        };
        if !(seen.failed_ok && seen.id_ok) {
            return None;
        }
        Some(Call {
            op,
            tool,
            args,
            args_hash,
            result,
            failed: seen.failed.flatten(),
        })
    }
}
