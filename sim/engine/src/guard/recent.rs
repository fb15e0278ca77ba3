//! Long results met before, as written on the line: a looping agent's `after` carries the same
//! result again, and reading a long escaped string (and looking its hash up by the decoded
//! text) costs more than deciding the call. A line whose result is written byte for byte as a
//! remembered one takes the remembered text and, once the controller has computed it, hash.
//!
//! Only results of at least [`RecentResults::MIN_WRITTEN`] bytes are kept: a slot is found by
//! the first that many bytes of the value, which for a shorter result would take in the rest of
//! the line (its call id). Direct-mapped and bounded: at most [`RecentResults::SLOTS`] results
//! of at most [`RecentResults::MAX_WRITTEN`] bytes.

use crate::hash::Hash;

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
        use std::hash::{BuildHasher, Hasher};
        let head = rest.get(..Self::MIN_WRITTEN)?;
        if head[0] != b'"' {
            return None;
        }
        let mut h = rustc_hash::FxBuildHasher.build_hasher();
        h.write(head);
        Some(h.finish() | 1)
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
