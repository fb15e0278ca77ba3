//! Arguments and long results met before, as written on the line. An `after` repeats its
//! `before`'s arguments, and a looping agent sends the same calls (often a cycle of a few) with
//! the same results again; printing arguments canonically and hashing them, or reading a long
//! escaped string and looking its hash up by the decoded text, costs more than deciding the
//! call. A value written byte for byte as a remembered one takes what was made of it.
//!
//! Arguments: [`RecentArgs::SLOTS`] slots found by the value's first bytes (with whatever
//! follows when it is shorter), each value of at most [`RecentArgs::MAX_WRITTEN`] bytes.
//!
//! Results: only results of at least [`RecentResults::MIN_WRITTEN`] bytes are kept: a slot is found by
//! the first that many bytes of the value, which for a shorter result would take in the rest of
//! the line (its call id). Direct-mapped and bounded: at most [`RecentResults::SLOTS`] results
//! of at most [`RecentResults::MAX_WRITTEN`] bytes.

use crate::hash::Hash;
use crate::json::Kind;

/// The fast hash of the first `n` bytes of `rest` (all of it when shorter); never 0.
fn head_key(rest: &[u8], n: usize) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = rustc_hash::FxBuildHasher.build_hasher();
    h.write(&rest[..n.min(rest.len())]);
    h.finish() | 1
}

/// Arguments read before: as written, their kind, canonical text and hash.
#[derive(Clone, Debug, Default)]
pub(super) struct RecentArgs {
    slots: Vec<ArgsSlot>,
}

#[derive(Clone, Debug, Default)]
pub(super) struct ArgsSlot {
    key: u64,
    pub written: Vec<u8>,
    /// `None`: the slot holds nothing (or a value whose reading failed).
    pub kind: Option<Kind>,
    /// Filled by the reader: the canonical text when the value is an object.
    pub canonical: Vec<u8>,
    pub hash: Hash,
}

/// A slot of [`RecentArgs`].
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ArgsAt(usize);

impl RecentArgs {
    pub(super) const SLOTS: usize = 256;
    pub(super) const MAX_WRITTEN: usize = 1 << 12;
    const HEAD: usize = 32;

    /// The slot for a value starting at `rest`, and whether it holds that value as written
    /// there (the caller still checks the bytes against [`ArgsSlot::written`]).
    pub(super) fn lookup(&mut self, rest: &[u8]) -> (ArgsAt, bool) {
        if self.slots.is_empty() {
            self.slots.resize_with(Self::SLOTS, ArgsSlot::default);
        }
        let key = head_key(rest, Self::HEAD);
        let at = (key >> 7) as usize % self.slots.len();
        let slot = &mut self.slots[at];
        let held = slot.key == key && slot.kind.is_some();
        if !held {
            slot.key = key;
            slot.kind = None;
        }
        (ArgsAt(at), held)
    }

    /// Lets a slot's large buffers go once the line that needed them is answered, so that the
    /// slots hold at most [`RecentArgs::MAX_WRITTEN`]-sized values between lines.
    pub(super) fn release_large(&mut self, at: ArgsAt) {
        let slot = &mut self.slots[at.0];
        if slot.canonical.capacity() > Self::MAX_WRITTEN * 2 {
            *slot = ArgsSlot::default();
        }
    }

    pub(super) fn slot(&self, at: ArgsAt) -> &ArgsSlot {
        &self.slots[at.0]
    }

    pub(super) fn slot_mut(&mut self, at: ArgsAt) -> &mut ArgsSlot {
        &mut self.slots[at.0]
    }
}

#[derive(Clone, Debug, Default)]
pub(super) struct RecentResults {
    slots: Vec<Slot>,
}

#[derive(Clone, Debug, Default)]
struct Slot {
    /// The fast hash of the written value's first bytes; 0 marks an empty slot.
    key: u64,
    /// The value as written: a JSON string, quotes included.
    written: Vec<u8>,
    /// The decoded text.
    text: Vec<u8>,
    /// The result hash under `tool`'s hashing, once known.
    hash: Option<(Vec<u8>, Hash)>,
}

/// A remembered result: its slot, and its text.
#[derive(Clone, Copy, Debug)]
pub(super) struct Found(usize);

impl RecentResults {
    pub(super) const SLOTS: usize = 512;
    pub(super) const MIN_WRITTEN: usize = 128;
    pub(super) const MAX_WRITTEN: usize = 1 << 14;

    /// The key of a value starting at `rest`, when it is long enough to be remembered.
    pub(super) fn key(rest: &[u8]) -> Option<u64> {
        let head = rest.get(..Self::MIN_WRITTEN)?;
        (head[0] == b'"').then(|| head_key(head, Self::MIN_WRITTEN))
    }

    /// The slot that could hold the value with `key`, if it holds one: the caller still checks
    /// the bytes ([`RecentResults::written`]).
    pub(super) fn find(&self, key: u64) -> Option<Found> {
        let at = self.at(key)?;
        (self.slots[at].key == key).then_some(Found(at))
    }

    pub(super) fn written(&self, f: Found) -> &[u8] {
        &self.slots[f.0].written
    }

    pub(super) fn text(&self, f: Found) -> &[u8] {
        &self.slots[f.0].text
    }

    /// The remembered hash of the result for `tool`.
    pub(super) fn hash(&self, f: Found, tool: &[u8]) -> Option<Hash> {
        match &self.slots[f.0].hash {
            Some((t, h)) if t == tool => Some(*h),
            _ => None,
        }
    }

    /// Remembers the hash computed for the result in `f` under `tool`.
    pub(super) fn set_hash(&mut self, f: Found, tool: &[u8], h: Hash) {
        let slot = &mut self.slots[f.0];
        match &mut slot.hash {
            Some((t, old)) => {
                t.clear();
                t.extend_from_slice(tool);
                *old = h;
            }
            None => slot.hash = Some((tool.to_vec(), h)),
        }
    }

    /// Keeps a value read from a line (`written`, with its decoded `text`) under `key`.
    pub(super) fn keep(&mut self, key: u64, written: &[u8], text: &[u8]) -> Option<Found> {
        if !(Self::MIN_WRITTEN..=Self::MAX_WRITTEN).contains(&written.len()) {
            return None;
        }
        if self.slots.is_empty() {
            self.slots.resize_with(Self::SLOTS, Slot::default);
        }
        let at = self.at(key)?;
        let slot = &mut self.slots[at];
        slot.key = key;
        slot.written.clear();
        slot.written.extend_from_slice(written);
        slot.text.clear();
        slot.text.extend_from_slice(text);
        slot.hash = None;
        Some(Found(at))
    }

    fn at(&self, key: u64) -> Option<usize> {
        (!self.slots.is_empty()).then(|| (key >> 7) as usize % self.slots.len())
    }
}
