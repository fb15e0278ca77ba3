//! What a runtime does to a tool's result before the model sees it: a tool timeout of the
//! runtime's own, a cut to the result's first characters, and a hint to change strategy after
//! a run of failures of one tool. Hermes does none of these (its results reach the model whole,
//! and its failure detectors are the guardrails); the loop-design article's ReAct loop
//! (`react-loop-article`) does all three.
//!
//! ```
//! use loopsim_engine::observation::{FailureStreaks, ObservationRules, cut_head};
//!
//! let rules = ObservationRules::REACT_LOOP_ARTICLE;
//! let (seen, cut) = cut_head(&"x".repeat(2500), rules.max_chars.unwrap());
//! assert_eq!(cut, 500);
//! assert!(seen.starts_with(&"x".repeat(2000)));
//!
//! let mut streaks = FailureStreaks::default();
//! let hints: Vec<bool> = (0..4).map(|_| streaks.observe("terminal", true, 3)).collect();
//! assert_eq!(hints, [false, false, true, false]);
//! ```

use std::collections::BTreeMap;

/// A runtime's rules for tool results. `None` everywhere is Hermes's (and the agent SDKs'):
/// results as the tool returned them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ObservationRules {
    /// A call running longer is cut off there; the model sees a timeout, not a result.
    pub tool_timeout_s: Option<f64>,
    /// A longer result is cut to its first this many characters.
    pub max_chars: Option<usize>,
    /// After this many failures of one tool in a row, its last result carries a hint to try
    /// another approach.
    pub failure_hint_after: Option<u32>,
    /// A context past this share of the model's window has its oldest results dropped, back
    /// to that share, before the next call.
    pub trim_context_at: Option<f64>,
}

impl ObservationRules {
    /// Results as the tool returned them.
    pub const NONE: ObservationRules = ObservationRules {
        tool_timeout_s: None,
        max_chars: None,
        failure_hint_after: None,
        trim_context_at: None,
    };

    /// The article's loop: 30 s tool timeouts returned as observations, observations cut to
    /// 2,000 characters keeping the head, a strategy-switch hint after 3 failures of a tool.
    pub const REACT_LOOP_ARTICLE: ObservationRules = ObservationRules {
        tool_timeout_s: Some(30.0),
        max_chars: Some(2000),
        failure_hint_after: Some(3),
        trim_context_at: Some(0.7),
    };

    /// Whether any rule is on.
    pub fn any(&self) -> bool {
        self.tool_timeout_s.is_some()
            || self.max_chars.is_some()
            || self.failure_hint_after.is_some()
            || self.trim_context_at.is_some()
    }
}

/// The context after trimming: a context past `share` of `window` tokens loses its oldest
/// results, down to that share, but never below `floor` (the system prompt and the task, which
/// are not trimmed). `None`: nothing to trim.
pub fn trimmed_context(context: u64, window: u64, share: f64, floor: u64) -> Option<u64> {
    let limit = (window as f64 * share).floor() as u64;
    (context > limit && limit > floor).then_some(limit)
}

/// Characters a context token stands for when a cut result's size is counted in tokens.
pub const CHARS_PER_TOKEN: u64 = 4;

/// `text` cut to its first `max_chars` characters (on a character boundary), with a note of
/// how many were cut; and how many were.
pub fn cut_head(text: &str, max_chars: usize) -> (String, usize) {
    let Some((end, _)) = text.char_indices().nth(max_chars) else {
        return (text.to_string(), 0);
    };
    let cut = text[end..].chars().count();
    let mut out = String::with_capacity(end + 48);
    out.push_str(&text[..end]);
    out.push_str(&format!("\n[observation cut: {cut} more characters]"));
    (out, cut)
}

/// The context tokens a result of `tokens` adds once cut to `max_chars` characters.
pub fn cut_tokens(tokens: u64, max_chars: usize) -> u64 {
    tokens.min((max_chars as u64).div_ceil(CHARS_PER_TOKEN))
}

/// Failures in a row, per tool: a success of the tool ends its streak; other tools' calls do
/// not.
#[derive(Clone, Debug, Default)]
pub struct FailureStreaks {
    streaks: BTreeMap<String, u32>,
}

impl FailureStreaks {
    /// Records a call of `tool`; true when its result gets the strategy-switch hint (the
    /// `after`-th failure in a row, after which the count starts over).
    pub fn observe(&mut self, tool: &str, failed: bool, after: u32) -> bool {
        if !failed {
            self.streaks.remove(tool);
            return false;
        }
        let n = self.streaks.entry(tool.to_string()).or_insert(0);
        *n += 1;
        if *n >= after.max(1) {
            *n = 0;
            return true;
        }
        false
    }

    /// A new task: no streaks.
    pub fn reset(&mut self) {
        self.streaks.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_keeps_the_head_on_a_character_boundary() {
        let text = "é".repeat(2001);
        let (seen, cut) = cut_head(&text, 2000);
        assert_eq!(cut, 1);
        assert!(seen.starts_with(&"é".repeat(2000)));
        assert!(!seen.starts_with(&"é".repeat(2001)));
        assert_eq!(cut_head("short", 2000), ("short".to_string(), 0));
        // 2,000 characters are 500 tokens; a smaller result keeps its own size.
        assert_eq!((cut_tokens(3000, 2000), cut_tokens(120, 2000)), (500, 120));
    }

    #[test]
    fn a_context_past_seventy_percent_is_trimmed_back_to_it() {
        assert_eq!(trimmed_context(70_001, 100_000, 0.7, 5_000), Some(70_000));
        assert_eq!(trimmed_context(70_000, 100_000, 0.7, 5_000), None);
        // The task itself is never trimmed: nothing left to drop.
        assert_eq!(trimmed_context(90_000, 100_000, 0.7, 80_000), None);
    }

    #[test]
    fn the_hint_comes_on_the_third_failure_in_a_row_of_one_tool() {
        let mut s = FailureStreaks::default();
        assert!(!s.observe("terminal", true, 3));
        assert!(!s.observe("terminal", true, 3));
        // Another tool's failure is its own streak; a success of this one ends its streak.
        assert!(!s.observe("web_search", true, 3));
        assert!(!s.observe("terminal", false, 3));
        assert!(!s.observe("terminal", true, 3));
        assert!(!s.observe("terminal", true, 3));
        assert!(s.observe("terminal", true, 3));
        // Then it starts over: three more before the next hint.
        assert!(!s.observe("terminal", true, 3));
        assert!(!s.observe("terminal", true, 3));
        assert!(s.observe("terminal", true, 3));
        s.reset();
        assert!(!s.observe("terminal", true, 3));
    }
}
