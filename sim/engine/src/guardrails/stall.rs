//! Stall guards: notice when the same call keeps returning the same result, either
//! consecutively (a streak) or as a repeating cycle of 2 to 4 calls; and mark byte-identical
//! large results for replacement by a short reference.

use std::collections::VecDeque;

use crate::hash::{Hash, Signature};
use crate::json;

use super::CallFacts;
use super::tools::is_repeatable;

/// The streak length that produces the first notice.
pub const IDENTICAL_CALL_THRESHOLD: u32 = 3;
/// Longest cycle period looked for.
pub const MAX_CYCLE_PERIOD: usize = 4;
/// How many recent calls the cycle detector remembers.
pub const CYCLE_HISTORY: usize = 64;
/// Results shorter than this (in characters) are not worth a reference stub.
pub const STUB_MIN_CHARS: usize = 512;

/// Which detector produced a notice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NoticeKind {
    IdenticalCallStreak,
    IdenticalCycle,
}

impl NoticeKind {
    pub fn parse(s: &str) -> Option<NoticeKind> {
        [NoticeKind::IdenticalCallStreak, NoticeKind::IdenticalCycle]
            .into_iter()
            .find(|k| k.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            NoticeKind::IdenticalCallStreak => "identical_call_streak",
            NoticeKind::IdenticalCycle => "identical_cycle",
        }
    }
}

/// What the stall guards saw in one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Observation {
    /// A notice is appended to the result exactly when this is set.
    pub kind: Option<NoticeKind>,
    /// The result should be replaced by a reference to the earlier identical one.
    pub stub: bool,
    /// Length of the current identical streak (0 for a non-text result).
    pub streak: u32,
    /// For a cycle notice: the period and the number of laps.
    pub period: u32,
    pub laps: u32,
}

impl Observation {
    /// loopsim's wording of the notice, if any.
    pub fn notice(&self, tool: &str) -> Option<String> {
        match self.kind? {
            NoticeKind::IdenticalCallStreak => Some(format!(
                "[loopsim note: {} identical call to {tool} in a row, same arguments, same \
                 result. Change the arguments, use another tool, or go on with what you have.]",
                ordinal(self.streak)
            )),
            NoticeKind::IdenticalCycle => Some(format!(
                "[loopsim note: the same {}-call cycle (last call {tool}) has repeated {} times \
                 with identical arguments and results. Do not send that batch again.]",
                self.period, self.laps
            )),
        }
    }
}

/// 1st, 2nd, 3rd, 4th ... 11th, 12th, 13th, 21st.
pub fn ordinal(n: u32) -> String {
    let suffix = if (11..=13).contains(&(n % 100)) {
        "th"
    } else {
        match n % 10 {
            1 => "st",
            2 => "nd",
            3 => "rd",
            _ => "th",
        }
    };
    format!("{n}{suffix}")
}

#[derive(Clone, Debug, Default)]
pub(super) struct StallState {
    streak: Option<(Signature, Hash)>,
    streak_count: u32,
    history: VecDeque<(Signature, Hash, bool)>,
}

impl StallState {
    /// Forgets every streak and cycle (a new turn), keeping the history's room.
    pub(super) fn reset(&mut self) {
        self.streak = None;
        self.streak_count = 0;
        self.history.clear();
    }

    /// `hash` is the result hash, present exactly when the result is text.
    pub(super) fn observe(
        &mut self,
        facts: &CallFacts<'_>,
        hash: Option<Hash>,
        failed: bool,
    ) -> Observation {
        let tool: &str = &facts.signature.tool;
        let (Some(result), Some(h)) = (facts.result, hash) else {
            // A non-text (multimodal) result breaks every streak and cycle.
            self.streak = None;
            self.streak_count = 0;
            self.history.clear();
            return Observation::default();
        };
        let same = matches!(&self.streak, Some((s, rh)) if *s == facts.signature && *rh == h);
        if same {
            self.streak_count += 1;
        } else {
            self.streak = Some((facts.signature.clone(), h));
            self.streak_count = 1;
        }
        let count = self.streak_count;
        let repeatable = is_repeatable(tool);
        let mut obs = Observation {
            streak: count,
            ..Observation::default()
        };
        if !repeatable && count >= IDENTICAL_CALL_THRESHOLD {
            obs.kind = Some(NoticeKind::IdenticalCallStreak);
        }
        if self.history.len() == CYCLE_HISTORY {
            self.history.pop_front();
        }
        self.history
            .push_back((facts.signature.clone(), h, repeatable));
        if obs.kind.is_none()
            && let Some((period, laps)) = self.detect_cycle()
        {
            obs.kind = Some(NoticeKind::IdenticalCycle);
            obs.period = period as u32;
            obs.laps = laps;
        }
        // A text has at most as many characters as bytes: a short one is not counted.
        obs.stub = count >= 2
            && !failed
            && result.len() >= STUB_MIN_CHARS
            && json::char_len(result) >= STUB_MIN_CHARS;
        obs
    }

    /// The smallest period whose trailing laps repeat at least the threshold number of times.
    fn detect_cycle(&self) -> Option<(usize, u32)> {
        let h = &self.history;
        let len = h.len();
        let same = |a: usize, b: usize| h[a].0 == h[b].0 && h[a].1 == h[b].1;
        for period in 2..=MAX_CYCLE_PERIOD {
            if len < period * IDENTICAL_CALL_THRESHOLD as usize {
                continue;
            }
            let mut laps = 1u32;
            while let Some(base) = len.checked_sub(period * (laps as usize + 1)) {
                if !(0..period).all(|i| same(base + i, len - period + i)) {
                    break;
                }
                laps += 1;
            }
            if laps >= IDENTICAL_CALL_THRESHOLD {
                if (len - period..len).all(|i| h[i].2) {
                    continue;
                }
                return Some((period, laps));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals() {
        let got: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 111, 112]
            .map(ordinal)
            .into();
        assert_eq!(
            got,
            [
                "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd",
                "111th", "112th"
            ]
        );
    }
}
