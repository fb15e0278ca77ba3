//! OpenHands' stuck detector (`openhands-sdk` 1.58, `conversation/stuck_detector.py`),
//! ported from its source: before every step the conversation looks at its last events since
//! the user last spoke, and stops the run (status `STUCK`, no further model call) when they
//! repeat.
//!
//! The rules, with the package's defaults ([`StuckThresholds::DEFAULT`]):
//! - **action and observation**: the last 4 actions are one action and the last 4 observations
//!   one observation (compared apart, not pairwise: 4 identical calls in one reply are enough);
//! - **action and error**: the same action 4 times in a row, each failing with the same error
//!   (at 3, the conversation sends the model one nudge instead of checking);
//! - **monologue**: 3 agent messages in a row with no action (empty replies; the runtime's own
//!   nudges between them do not count or break the run);
//! - **alternating**: the last 6 actions and the last 6 observations each alternate A, B.
//!
//! Only the last [`WINDOW`] events of the conversation are read, and of those only the ones
//! after the last user message.
//!
//! ```
//! use loopsim_engine::hash::Hash;
//! use loopsim_engine::stuck::{Check, LogEvent, StuckDetector, StuckRule, StuckThresholds};
//!
//! let mut d = StuckDetector::new(StuckThresholds::DEFAULT);
//! d.push(LogEvent::System);
//! d.push(LogEvent::UserMessage);
//! let (call, result) = (Hash::of(b"terminal {}"), Hash::of(b"still running"));
//! for _ in 0..3 {
//!     assert_eq!(d.check(), Check::Go);
//!     d.push(LogEvent::Action(call));
//!     d.push(LogEvent::Observation(result));
//! }
//! assert_eq!(d.check(), Check::Go);
//! d.push(LogEvent::Action(call));
//! d.push(LogEvent::Observation(result));
//! assert_eq!(d.check(), Check::Stuck(StuckRule::ActionObservation));
//! ```

use std::collections::VecDeque;

use crate::hash::Hash;

/// Events of the conversation's log the detector reads (`MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION`).
pub const WINDOW: usize = 20;

/// The rules' thresholds (`StuckDetectionThresholds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StuckThresholds {
    pub action_observation: usize,
    pub action_error: usize,
    pub monologue: usize,
    pub alternating_pattern: usize,
}

impl StuckThresholds {
    /// The package's defaults.
    pub const DEFAULT: StuckThresholds = StuckThresholds {
        action_observation: 4,
        action_error: 3,
        monologue: 3,
        alternating_pattern: 6,
    };
}

/// One event of the conversation's log, as the detector compares it: an action by its tool
/// and arguments (and the reply's text), an observation by its tool, text and error flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogEvent {
    /// The system prompt, the log's first event.
    System,
    /// A message of the user's (a task, a later turn): the detector reads only what follows.
    UserMessage,
    /// A reply of the model's without an action (an empty one: a text reply ends the run).
    AgentMessage,
    /// The runtime's own message to the model (its nudge after an empty reply).
    EnvironmentMessage,
    Action(Hash),
    Observation(Hash),
    /// A call that raised in the runtime: its error text.
    AgentError(Hash),
    /// Any other event (the error event a run at its cap ends with).
    Other,
}

/// Which rule found the run stuck.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StuckRule {
    ActionObservation,
    ActionError,
    Monologue,
    Alternating,
}

impl StuckRule {
    pub fn as_str(self) -> &'static str {
        match self {
            StuckRule::ActionObservation => "action_observation",
            StuckRule::ActionError => "action_error",
            StuckRule::Monologue => "monologue",
            StuckRule::Alternating => "alternating_pattern",
        }
    }
}

/// What the check before a step decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Make the step.
    Go,
    /// The same call failed with the same error `action_error` times: the runtime sends the
    /// model a nudge (an environment message, already in the log) and makes the step.
    Nudge,
    /// The run stops here, with no further model call.
    Stuck(StuckRule),
}

/// The detector over one conversation's log (its last [`WINDOW`] events).
#[derive(Clone, Debug)]
pub struct StuckDetector {
    thresholds: StuckThresholds,
    log: VecDeque<LogEvent>,
    /// Events pushed so far, and the position of the error event a nudge was sent for.
    pushed: u64,
    nudged_at: Option<u64>,
    /// The position of the newest error event.
    last_error_at: u64,
}

impl StuckDetector {
    pub fn new(thresholds: StuckThresholds) -> Self {
        StuckDetector {
            thresholds,
            log: VecDeque::with_capacity(WINDOW + 1),
            pushed: 0,
            nudged_at: None,
            last_error_at: 0,
        }
    }

    pub fn push(&mut self, e: LogEvent) {
        self.pushed += 1;
        if matches!(e, LogEvent::AgentError(_)) {
            self.last_error_at = self.pushed;
        }
        self.log.push_back(e);
        if self.log.len() > WINDOW {
            self.log.pop_front();
        }
    }

    /// The events read: the window's, after its last user message.
    fn window(&self) -> Vec<LogEvent> {
        let start = self
            .log
            .iter()
            .rposition(|e| *e == LogEvent::UserMessage)
            .map_or(0, |i| i + 1);
        self.log.iter().skip(start).copied().collect()
    }

    /// The check before a step.
    pub fn check(&mut self) -> Check {
        let events = self.window();
        let t = self.thresholds;
        let actions: Vec<Hash> = newest(
            &events,
            t.action_observation.max(t.action_error + 1),
            |e| match e {
                LogEvent::Action(h) => Some(*h),
                _ => None,
            },
        );
        let observations: Vec<LogEvent> = newest(
            &events,
            t.action_observation.max(t.action_error + 1),
            |e| match e {
                LogEvent::Observation(_) | LogEvent::AgentError(_) => Some(*e),
                _ => None,
            },
        );
        // The same call failing the same way `action_error` times: one nudge per streak.
        if self.error_streak(&actions, &observations) == t.action_error
            && self.nudged_at != Some(self.last_error_at)
        {
            self.nudged_at = Some(self.last_error_at);
            self.push(LogEvent::EnvironmentMessage);
            return Check::Nudge;
        }
        let least = t
            .action_observation
            .min(t.action_error)
            .min(t.monologue)
            .max(1);
        if events.len() < least {
            return Check::Go;
        }
        let n = t.action_observation;
        if actions.len() >= n
            && observations.len() >= n
            && actions[..n].iter().all(|a| *a == actions[0])
            && observations[..n].iter().all(|o| *o == observations[0])
        {
            return Check::Stuck(StuckRule::ActionObservation);
        }
        if self.error_streak(&actions, &observations) > t.action_error {
            return Check::Stuck(StuckRule::ActionError);
        }
        let monologue = events
            .iter()
            .rev()
            .filter(|e| **e != LogEvent::EnvironmentMessage)
            .take_while(|e| **e == LogEvent::AgentMessage)
            .count();
        if monologue >= t.monologue {
            return Check::Stuck(StuckRule::Monologue);
        }
        let k = t.alternating_pattern;
        if events.len() >= k {
            let acts = newest(&events, k, |e| match e {
                LogEvent::Action(h) => Some(*h),
                _ => None,
            });
            let obs = newest(&events, k, |e| match e {
                LogEvent::Observation(_) | LogEvent::AgentError(_) => Some(*e),
                _ => None,
            });
            if alternates(&acts, k) && alternates(&obs, k) {
                return Check::Stuck(StuckRule::Alternating);
            }
        }
        Check::Go
    }

    /// How many of the newest (action, observation) pairs are the newest action failing with
    /// an error, in a row.
    fn error_streak(&self, actions: &[Hash], observations: &[LogEvent]) -> usize {
        actions
            .iter()
            .zip(observations)
            .take_while(|(a, o)| **a == actions[0] && matches!(o, LogEvent::AgentError(_)))
            .count()
    }
}

/// Whether the newest `k` of `x` alternate: each equal to the one two before it.
fn alternates<T: PartialEq>(x: &[T], k: usize) -> bool {
    x.len() >= k && (0..k.saturating_sub(2)).all(|i| x[i] == x[i + 2])
}

/// The newest `n` events `pick` keeps, newest first.
fn newest<T>(events: &[LogEvent], n: usize, pick: impl Fn(&LogEvent) -> Option<T>) -> Vec<T> {
    events.iter().rev().filter_map(pick).take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Hash {
        Hash::of(s.as_bytes())
    }

    fn started() -> StuckDetector {
        let mut d = StuckDetector::new(StuckThresholds::DEFAULT);
        d.push(LogEvent::System);
        d.push(LogEvent::UserMessage);
        d
    }

    #[test]
    fn four_identical_calls_in_one_reply_are_enough() {
        let mut d = started();
        for _ in 0..4 {
            d.push(LogEvent::Action(h("a")));
        }
        for _ in 0..4 {
            d.push(LogEvent::Observation(h("o")));
        }
        assert_eq!(d.check(), Check::Stuck(StuckRule::ActionObservation));
    }

    #[test]
    fn a_changing_result_is_no_repetition_and_a_user_message_starts_over() {
        let mut d = started();
        for i in 0..10 {
            d.push(LogEvent::Action(h("a")));
            d.push(LogEvent::Observation(h(&format!("o{i}"))));
            assert_eq!(d.check(), Check::Go);
        }
        let mut d = started();
        for _ in 0..3 {
            d.push(LogEvent::Action(h("a")));
            d.push(LogEvent::Observation(h("o")));
        }
        d.push(LogEvent::UserMessage);
        d.push(LogEvent::Action(h("a")));
        d.push(LogEvent::Observation(h("o")));
        assert_eq!(d.check(), Check::Go);
    }

    #[test]
    fn three_empty_replies_are_a_monologue_whatever_the_nudges_between() {
        let mut d = started();
        for n in 1..=3 {
            d.push(LogEvent::AgentMessage);
            d.push(LogEvent::EnvironmentMessage);
            let want = if n == 3 {
                Check::Stuck(StuckRule::Monologue)
            } else {
                Check::Go
            };
            assert_eq!(d.check(), want, "{n}");
        }
    }

    #[test]
    fn an_a_b_alternation_over_six_steps_is_stuck() {
        let mut d = started();
        for i in 0..6 {
            let (a, o) = if i % 2 == 0 { ("a", "x") } else { ("b", "y") };
            assert_eq!(d.check(), Check::Go, "{i}");
            d.push(LogEvent::Action(h(a)));
            d.push(LogEvent::Observation(h(o)));
        }
        assert_eq!(d.check(), Check::Stuck(StuckRule::Alternating));
    }

    #[test]
    fn the_same_error_three_times_brings_one_nudge_and_the_fourth_stops() {
        let mut d = started();
        for _ in 0..3 {
            assert_eq!(d.check(), Check::Go);
            d.push(LogEvent::Action(h("a")));
            d.push(LogEvent::AgentError(h("boom")));
        }
        assert_eq!(d.check(), Check::Nudge);
        d.push(LogEvent::Action(h("a")));
        d.push(LogEvent::AgentError(h("boom")));
        // The fourth also repeats action and observation: that rule is checked first.
        assert_eq!(d.check(), Check::Stuck(StuckRule::ActionObservation));
    }

    #[test]
    fn only_the_last_twenty_events_are_read() {
        let mut d = started();
        // An old repetition, pushed out of the window by other events.
        for _ in 0..4 {
            d.push(LogEvent::Action(h("a")));
        }
        for i in 0..20 {
            d.push(LogEvent::Observation(h(&format!("o{i}"))));
        }
        assert_eq!(d.check(), Check::Go);
    }
}
