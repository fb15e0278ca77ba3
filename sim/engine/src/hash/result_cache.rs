//! Result hashes remembered by the result's raw bytes: see [`ResultHashCache`].

use super::{Hash, ResultHasher, ResultHashing};

/// Remembers result hashes by their raw bytes. A looping agent sends the same bytes again and
/// again; a hit costs a fast non-cryptographic hash and a comparison instead of a print and
/// SHA-256.
///
/// Two-way: each text has a pair of slots (by its fast hash), the one met last first; a miss
/// takes over the pair's older slot and reuses its buffer, so distinct results cost a copy and
/// no allocation. With one slot per text, two texts of a cycle that landed on the same slot
/// pushed each other out on every lap: the imported-sessions stream (69 distinct results in a
/// lap of 92 calls) hashed one call in nine. It starts small (a short run pays for a few
/// slots) and doubles once evictions pass a quarter of its slots, up to
/// [`ResultHashCache::MAX_SLOTS`]; texts longer than [`ResultHashCache::MAX_TEXT`] are not
/// kept, and the texts held stay under [`ResultHashCache::MAX_BYTES`] together (slots alone
/// would allow 64 MiB, and a stream of distinct 10 KB results held that much): past it, other
/// slots are emptied in turn. While results keep coming back new (a healthy agent's), the
/// cache only pays for itself on repeats it never sees: after [`ResultHashCache::COLD_AFTER`]
/// misses in a row it looks up one result in [`ResultHashCache::PROBE_EVERY`] and hashes the
/// others straight away, until a probe hits.
#[derive(Clone, Debug, Default)]
pub struct ResultHashCache {
    /// Pairs of slots, `2k` and `2k + 1`; in each, the text met last first.
    slots: Vec<Slot>,
    evictions: usize,
    misses_in_a_row: u32,
    /// Results to hash without a lookup before the next probe.
    skip: u32,
    /// Texts hashed (misses, skipped lookups and texts too long to keep).
    hashed: u64,
    /// The slots' text buffers, in bytes of capacity.
    held: usize,
    /// The next slot [`ResultHashCache::trim`] looks at.
    hand: usize,
    hasher: ResultHasher,
}

#[derive(Clone, Debug, Default)]
struct Slot {
    /// The text's fast hash (with the hashing mode folded in); 0 marks an empty slot.
    key: u64,
    text: Vec<u8>,
    hash: Hash,
}

impl ResultHashCache {
    pub const MIN_SLOTS: usize = 8;
    pub const MAX_SLOTS: usize = 4096;
    /// Longer texts are hashed each time: a slot does not keep a large buffer.
    pub const MAX_TEXT: usize = 1 << 14;
    /// The most text the slots hold together.
    pub const MAX_BYTES: usize = 4 << 20;
    /// Misses in a row after which lookups become probes.
    pub const COLD_AFTER: u32 = 64;
    /// One result in this many is looked up while the results are new.
    pub const PROBE_EVERY: u32 = 16;

    /// The result hash of `result` for `tool`, computed once per distinct text in a slot.
    pub fn get(&mut self, result: Option<&[u8]>, tool: &str, hashing: ResultHashing) -> Hash {
        let text = result.unwrap_or(b"");
        if text.len() > Self::MAX_TEXT {
            return self.hash(result, tool, hashing);
        }
        if self.skip > 0 {
            self.skip -= 1;
            return self.hash(result, tool, hashing);
        }
        let strip = hashing == ResultHashing::StripExecuteCodeVolatile && tool == "execute_code";
        let key = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = rustc_hash::FxBuildHasher.build_hasher();
            h.write(text);
            h.write_u8(u8::from(strip));
            h.finish() | 1
        };
        if self.slots.is_empty() {
            self.slots.resize_with(Self::MIN_SLOTS, Slot::default);
        }
        let mut at = self.pair(key);
        let holds = |s: &Slot| s.key == key && s.text == text;
        if holds(&self.slots[at]) {
            self.misses_in_a_row = 0;
            return self.slots[at].hash;
        }
        if holds(&self.slots[at + 1]) {
            self.misses_in_a_row = 0;
            self.slots.swap(at, at + 1);
            return self.slots[at].hash;
        }
        self.misses_in_a_row = self.misses_in_a_row.saturating_add(1);
        if self.misses_in_a_row >= Self::COLD_AFTER {
            self.skip = Self::PROBE_EVERY - 1;
        }
        let h = self.hash(result, tool, hashing);
        if self.slots[at + 1].key != 0 {
            self.evictions += 1;
            if self.evictions * 4 > self.slots.len() && self.slots.len() < Self::MAX_SLOTS {
                self.grow();
                at = self.pair(key);
            }
        }
        // The pair's older slot takes the text, and becomes the newer.
        let slot = &mut self.slots[at + 1];
        self.held -= slot.text.capacity();
        slot.key = key;
        slot.text.clear();
        slot.text.extend_from_slice(text);
        slot.hash = h;
        self.held += slot.text.capacity();
        self.slots.swap(at, at + 1);
        self.trim(at);
        h
    }

    /// While the texts held pass [`ResultHashCache::MAX_BYTES`], empties other pairs' slots,
    /// a hand going round them (the pair at `keep` was just used).
    fn trim(&mut self, keep: usize) {
        while self.held > Self::MAX_BYTES {
            let at = self.hand % self.slots.len();
            self.hand = at + 1;
            if at / 2 * 2 != keep {
                self.held -= self.slots[at].text.capacity();
                self.slots[at] = Slot::default();
            }
        }
    }

    /// Bytes of text the slots hold (their buffers' capacity).
    pub fn held_bytes(&self) -> usize {
        self.held
    }

    /// How many texts were hashed rather than found.
    pub fn hashed(&self) -> u64 {
        self.hashed
    }

    fn hash(&mut self, result: Option<&[u8]>, tool: &str, hashing: ResultHashing) -> Hash {
        self.hashed += 1;
        self.hasher.hash(result, tool, hashing)
    }

    /// The first slot of the pair for `key`.
    fn pair(&self, key: u64) -> usize {
        (key >> 7) as usize % (self.slots.len() / 2) * 2
    }

    /// Many distinct texts in play: twice the slots, the kept texts moved over (each pair's
    /// older text first, so that where two meet again the newer one stays first).
    fn grow(&mut self) {
        let mut old = std::mem::take(&mut self.slots);
        self.slots.resize_with(old.len() * 2, Slot::default);
        let (older, newer) = ((1..old.len()).step_by(2), (0..old.len()).step_by(2));
        for i in older.chain(newer) {
            let s = std::mem::take(&mut old[i]);
            if s.key != 0 {
                let at = self.pair(s.key);
                self.slots[at + 1] = std::mem::replace(&mut self.slots[at], s);
            }
        }
        // Texts that met two newer ones in their new pair are gone.
        self.held = self.slots.iter().map(|s| s.text.capacity()).sum();
        self.evictions = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::result_hash;

    #[test]
    fn the_cache_agrees_with_direct_hashing() {
        let mut cache = ResultHashCache::default();
        let exec = br#"{"duration_seconds":1,"kernel":{"execution_count":1},"output":"x"}"#;
        for _ in 0..2 {
            for tool in ["execute_code", "terminal"] {
                for hashing in [
                    ResultHashing::Plain,
                    ResultHashing::StripExecuteCodeVolatile,
                ] {
                    assert_eq!(
                        cache.get(Some(exec), tool, hashing),
                        result_hash(Some(exec), tool, hashing)
                    );
                }
            }
            assert_eq!(cache.get(None, "t", ResultHashing::Plain), Hash::of(b""));
        }
        // Far more texts than slots, each seen twice, some too long to keep.
        let texts: Vec<Vec<u8>> = (0..1000)
            .map(|n| match n % 3 {
                0 => format!("{{\"n\": {n}, \"a\": [1.0]}}").into_bytes(),
                1 => format!("plain {n}").into_bytes(),
                _ => format!("\"{}\"", "x".repeat(n * 80)).into_bytes(),
            })
            .collect();
        for round in 0..2 {
            for t in &texts {
                let want = result_hash(Some(t), "read_file", ResultHashing::Plain);
                assert_eq!(
                    cache.get(Some(t), "read_file", ResultHashing::Plain),
                    want,
                    "{round}"
                );
            }
        }
    }

    #[test]
    fn new_results_turn_lookups_into_probes_and_a_repeat_turns_them_back() {
        let mut cache = ResultHashCache::default();
        let plain = ResultHashing::Plain;
        for n in 0..ResultHashCache::COLD_AFTER {
            let t = format!("{{\"n\": {n}}}");
            let got = cache.get(Some(t.as_bytes()), "t", plain);
            assert_eq!(got, result_hash(Some(t.as_bytes()), "t", plain));
        }
        assert_eq!(cache.skip, ResultHashCache::PROBE_EVERY - 1);
        // Skipped results are hashed all the same.
        assert_eq!(cache.get(Some(b"[1, 2]"), "t", plain), Hash::of(b"[1,2]"));
        assert_eq!(cache.skip, ResultHashCache::PROBE_EVERY - 2);
        // A result that repeats is met by a probe, kept, and met again by the next one: then
        // every call looks it up.
        for _ in 0..3 * ResultHashCache::PROBE_EVERY {
            assert_eq!(cache.get(Some(b"same"), "t", plain), Hash::of(b"same"));
        }
        assert_eq!((cache.misses_in_a_row, cache.skip), (0, 0));
    }

    #[test]
    fn two_texts_of_one_pair_are_both_kept() {
        let plain = ResultHashing::Plain;
        let mut cache = ResultHashCache::default();
        cache.get(Some(b"first"), "t", plain);
        // Another text whose pair is the first text's, in the starting slots.
        let at = |c: &ResultHashCache| c.slots.iter().position(|s| s.key != 0);
        let first_pair = at(&cache).unwrap() / 2 * 2;
        let other = (0..)
            .map(|n| format!("other {n}"))
            .find(|t| {
                let mut c = ResultHashCache::default();
                c.get(Some(t.as_bytes()), "t", plain);
                at(&c).unwrap() / 2 * 2 == first_pair
            })
            .unwrap();
        for _ in 0..50 {
            for t in [&b"first"[..], other.as_bytes()] {
                assert_eq!(
                    cache.get(Some(t), "t", plain),
                    result_hash(Some(t), "t", plain)
                );
            }
        }
        assert_eq!(cache.hashed(), 2, "each text hashed once");
    }

    #[test]
    fn the_texts_held_stay_under_the_bound() {
        let plain = ResultHashing::Plain;
        let mut cache = ResultHashCache::default();
        // Distinct 10 KB results, then two of them again and again: once the bound is met,
        // new texts are hashed and not kept, and the repeats still are.
        let text = |n: usize| format!("{n:>10240}");
        for n in 0..20_000 {
            let t = text(n);
            assert_eq!(
                cache.get(Some(t.as_bytes()), "t", plain),
                result_hash(Some(t.as_bytes()), "t", plain)
            );
            assert!(cache.held_bytes() <= ResultHashCache::MAX_BYTES, "{n}");
        }
        let held = cache.slots.iter().map(|s| s.text.capacity()).sum::<usize>();
        assert_eq!(cache.held_bytes(), held);
        assert!(held > ResultHashCache::MAX_BYTES / 2, "{held}");
        let before = cache.hashed();
        for _ in 0..100 {
            for t in [text(1), text(2)] {
                cache.get(Some(t.as_bytes()), "t", plain);
            }
        }
        assert!(cache.hashed() - before <= 2 * ResultHashCache::PROBE_EVERY as u64);
    }

    #[test]
    fn a_lap_of_many_texts_is_hashed_about_once() {
        // 69 distinct results in a lap of 92 calls, as in the imported-sessions stream.
        let plain = ResultHashing::Plain;
        let lap: Vec<String> = (0..92)
            .map(|n| format!("{{\"output\": \"line {}\", \"exit_code\": 0}}", n % 69))
            .collect();
        let mut cache = ResultHashCache::default();
        for _ in 0..100 {
            for t in &lap {
                let t = t.as_bytes();
                assert_eq!(
                    cache.get(Some(t), "t", plain),
                    result_hash(Some(t), "t", plain)
                );
            }
        }
        // The first laps' texts (while lookups were probes, and while the slots grew), then
        // none: at most three laps' worth in all. One slot per text hashed over 1,000.
        assert!(
            cache.hashed() <= 3 * 92,
            "{} of 9,200 calls hashed",
            cache.hashed()
        );
    }
}
