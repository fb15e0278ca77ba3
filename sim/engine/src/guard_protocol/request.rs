//! The fast reading of a `before` or `after` request: the fields straight into reused buffers,
//! the arguments printed canonically as they are read, nothing allocated in the steady state.
//! Anything else (another op, a field of the wrong type, a line that is not JSON) is left to
//! the tree path, which answers it or names the error exactly as before.

use super::Line;
use super::recent::{ArgsAt, Found, RecentArgs, RecentResults};
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
    /// As decoded (the guard checks it is UTF-8 when it first meets the name).
    pub tool: &'r [u8],
    /// The canonical arguments when they are an object (`None`: they count as `{}`).
    pub args: Option<&'r [u8]>,
    pub args_hash: Hash,
    /// `after` only: the result text (`None` for null).
    pub result: Option<&'r [u8]>,
    /// `after` only: the runtime's verdict, when it gave one.
    pub failed: Option<bool>,
    /// `after` only: where the reader remembers the result, and its hash when known.
    pub recent: Option<(Found, Option<Hash>)>,
}

/// Reused buffers for reading requests.
#[derive(Clone, Debug, Default)]
pub(super) struct RequestReader {
    canon: Canonicalizer,
    key: Vec<u8>,
    op: Vec<u8>,
    tool: Vec<u8>,
    result: Vec<u8>,
    other: Vec<u8>,
    /// Arguments as written, with their kind, canonical text and hash.
    args: RecentArgs,
    /// The slot the last line's arguments went to, when they were large.
    large_args: Option<ArgsAt>,
    recent: RecentResults,
}

/// What the line said of a field: its kind, as last written (a duplicate key's last value is
/// the one that counts).
#[derive(Clone, Copy, Default)]
struct Seen {
    op: Option<Kind>,
    tool: Option<Kind>,
    args: Option<Kind>,
    /// Where the line's arguments are held.
    args_at: ArgsAt,
    result: Option<Kind>,
    failed: Option<Option<bool>>,
    failed_ok: bool,
    id_ok: bool,
    /// The result is the remembered one in this slot.
    found: Option<Found>,
}

impl RequestReader {
    /// The line as a call, or `None` when the tree path must decide.
    pub(super) fn read(&mut self, line: Line<'_>) -> Option<Call<'_>> {
        if let Some(at) = self.large_args.take() {
            self.args.release_large(at);
        }
        let mut seen = Seen {
            failed_ok: true,
            id_ok: true,
            ..Seen::default()
        };
        let mut m = match (self.usual_opening(line.as_bytes(), &mut seen), line) {
            (Some(at), Line::Text(text)) => Members::resume_text(text, at)?,
            (Some(at), Line::Bytes(bytes)) => Members::resume(bytes, at)?,
            (None, Line::Text(text)) => Members::new_text(text)?,
            (None, Line::Bytes(bytes)) => Members::new(bytes)?,
        };
        // The key buffer is lent out while the members fill the other buffers.
        let mut key = std::mem::take(&mut self.key);
        let read = self.members(&mut m, &mut key, &mut seen);
        self.key = key;
        read?;
        m.finish().ok()?;
        self.call(seen)
    }

    /// Reads `{"op":"before","tool":"NAME"` or the same with `after`, the way every client
    /// of the protocol writes a call's first two members, as bytes: the position after them,
    /// or `None` for any other opening (the member reader takes the line from its start).
    fn usual_opening(&mut self, line: &[u8], seen: &mut Seen) -> Option<usize> {
        let (op, rest): (&[u8], _) =
            if let Some(rest) = line.strip_prefix(b"{\"op\":\"before\",\"tool\":\"") {
                (b"before", rest)
            } else {
                (
                    b"after",
                    line.strip_prefix(b"{\"op\":\"after\",\"tool\":\"")?,
                )
            };
        // A name without escapes ends at the first quote; one with an escape takes the reader.
        let end = crate::json::plain_run(rest);
        if rest.get(end) != Some(&b'"') {
            return None;
        }
        self.op.clear();
        self.op.extend_from_slice(op);
        self.tool.clear();
        self.tool.extend_from_slice(&rest[..end]);
        seen.op = Some(Kind::Str);
        seen.tool = Some(Kind::Str);
        Some(line.len() - rest.len() + end + 1)
    }

    /// Reads every member into the buffers, noting what each field was.
    fn members(
        &mut self,
        m: &mut Members<'_>,
        key_buf: &mut Vec<u8>,
        seen: &mut Seen,
    ) -> Option<()> {
        let r = self;
        while let Some(key) = m.next_key(key_buf).ok()? {
            let canon = &mut r.canon;
            match key {
                b"op" => seen.op = Some(m.value(canon, Some(&mut r.op), &mut r.other).ok()?),
                b"tool" => seen.tool = Some(m.value(canon, Some(&mut r.tool), &mut r.other).ok()?),
                b"args" => {
                    let (at, held) = r.args.lookup(m.rest());
                    seen.args_at = at;
                    let slot = r.args.slot_mut(at);
                    if held && m.skip_if_written_as(&slot.written) {
                        seen.args = slot.kind;
                        continue;
                    }
                    slot.kind = None;
                    let start = m.position();
                    let kind = m.value(canon, None, &mut slot.canonical).ok()?;
                    let written = m.text(start);
                    seen.args = Some(kind);
                    if written.len() > RecentArgs::MAX_WRITTEN {
                        // Kept for this line only: the slot does not hold a large buffer.
                        slot.written.clear();
                        r.large_args = Some(at);
                    } else {
                        slot.written.clear();
                        slot.written.extend_from_slice(written);
                    }
                    slot.hash = if kind == Kind::Object {
                        Hash::of(&slot.canonical)
                    } else {
                        EMPTY_ARGS_HASH
                    };
                    slot.kind = Some(kind);
                }
                b"result" => {
                    seen.found = None;
                    let key = RecentResults::key(m.rest());
                    if let Some(key) = key
                        && let Some(f) = r.recent.find(key)
                        && m.skip_if_written_as(r.recent.written(f))
                    {
                        seen.result = Some(Kind::Str);
                        seen.found = Some(f);
                        continue;
                    }
                    let start = m.position();
                    let kind = m.value(canon, Some(&mut r.result), &mut r.other).ok()?;
                    seen.result = Some(kind);
                    if kind == Kind::Str
                        && let Some(key) = key
                    {
                        seen.found = r.recent.keep(key, m.text(start), &r.result);
                    }
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
        Some(())
    }

    /// The call the fields make, if they make one.
    fn call(&self, seen: Seen) -> Option<Call<'_>> {
        let op = match (seen.op?, self.op.as_slice()) {
            (Kind::Str, b"before") => Op::Before,
            (Kind::Str, b"after") => Op::After,
            _ => return None,
        };
        if seen.tool? != Kind::Str {
            return None;
        }
        let tool = self.tool.as_slice();
        let kind = seen.args?;
        let held = self.args.slot(seen.args_at);
        let args = (kind == Kind::Object).then_some(held.canonical.as_slice());
        let args_hash = held.hash;
        if op == Op::Before {
            return Some(Call {
                op,
                tool,
                args,
                args_hash,
                result: None,
                failed: None,
                recent: None,
            });
        }
        let result = match (seen.result?, seen.found) {
            (Kind::Str, Some(f)) => Some(self.recent.text(f)),
            (Kind::Str, None) => Some(self.result.as_slice()),
            (Kind::Null, _) => None,
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
            recent: seen.found.map(|f| (f, self.recent.hash(f, tool))),
        })
    }

    /// Remembers the hash the controller computed for a remembered result.
    pub(super) fn remember_hash(&mut self, f: Found, tool: &[u8], h: Hash) {
        self.recent.set_hash(f, tool, h);
    }
}
