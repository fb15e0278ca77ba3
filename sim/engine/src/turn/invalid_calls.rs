//! Replies whose tool calls name no tool the runtime has.
//!
//! Hermes 0.19.0 first tries to repair such a name (case, separators, a `_tool` suffix, a
//! close match); what stays unknown is rejected before anything runs. When every call of a
//! reply is unknown, the reply and one error result per call join the conversation, and the
//! loop goes on: the next model call is a counted iteration like any other, and the
//! guardrails never see the rejected calls. The third such reply in a row ends the turn at
//! once, with no summary call and no exit reason of Hermes's own; loopsim names it
//! `invalid_tool_call`. A reply whose calls all exist starts the count over.
//!
//! ```
//! use loopsim_engine::turn::invalid_calls::UnknownTool;
//! use loopsim_engine::turn::{ExitReason, Step, TurnGovernor, TurnRules};
//!
//! let mut turn = TurnGovernor::new(TurnRules::HERMES, 90);
//! let mut seen = Vec::new();
//! while let Step::Call { .. } = turn.begin_iteration(false) {
//!     seen.push(turn.unknown_tool_reply());
//!     if seen.last() == Some(&UnknownTool::GiveUp) {
//!         break;
//!     }
//! }
//! assert_eq!(seen, [UnknownTool::Retry { strike: 1 }, UnknownTool::Retry { strike: 2 }, UnknownTool::GiveUp]);
//! assert_eq!(turn.finish().exit_reason, ExitReason::InvalidToolCall);
//! ```

use super::{ExitReason, TurnGovernor};

/// Replies in a row of only unknown tools Hermes takes before it gives up.
pub const HERMES_STRIKES: u32 = 3;

/// What the runtime does with a reply whose calls all name unknown tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnknownTool {
    /// Error results go back to the model and the loop goes on (`strike` such replies in a
    /// row so far).
    Retry { strike: u32 },
    /// The strikes are used up: the turn ends `invalid_tool_call`.
    GiveUp,
}

impl TurnGovernor {
    /// The model's reply called only tools that do not exist. A runtime without a strike
    /// rule ([`super::TurnRules::invalid_tool_strikes`]) is bounded by its cap alone.
    pub fn unknown_tool_reply(&mut self) -> UnknownTool {
        self.unknown_tool_strikes += 1;
        match self.rules.invalid_tool_strikes {
            Some(max) if self.unknown_tool_strikes >= max => {
                self.unknown_tool_strikes = 0;
                self.exit = ExitReason::InvalidToolCall;
                UnknownTool::GiveUp
            }
            _ => UnknownTool::Retry {
                strike: self.unknown_tool_strikes,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::{Step, TurnRules};

    /// Runs replies through a turn: `u` only unknown tools, `t` a tool round. Returns the
    /// calls made, the budget used and the exit reason.
    fn run(max: u64, replies: &str) -> (u64, u64, String) {
        let mut g = TurnGovernor::new(TurnRules::HERMES, max);
        for r in replies.chars() {
            let Step::Call { tools: true } = g.begin_iteration(false) else {
                break;
            };
            match r {
                'u' => {
                    if g.unknown_tool_reply() == UnknownTool::GiveUp {
                        break;
                    }
                }
                _ => assert!(g.tool_round(["read_file"], false)),
            }
        }
        let end = g.finish();
        (end.api_calls, end.budget_used, end.exit_reason.to_string())
    }

    #[test]
    fn three_unknown_replies_in_a_row_end_the_turn_each_one_an_iteration() {
        assert_eq!(run(90, "uuu"), (3, 3, "invalid_tool_call".into()));
        assert_eq!(run(90, "tuuu"), (4, 4, "invalid_tool_call".into()));
    }

    #[test]
    fn a_reply_with_real_tools_starts_the_count_over() {
        // Two, a real round, two more: never three in a row, the budget ends the turn.
        assert_eq!(
            run(5, "uutuu"),
            (5, 5, "max_iterations_reached(5/5)".into())
        );
    }

    #[test]
    fn the_budget_can_run_out_between_strikes() {
        let (calls, used, exit) = run(2, "uu");
        assert_eq!((calls, used), (2, 2));
        assert_eq!(exit, "max_iterations_reached(2/2)");
    }

    #[test]
    fn without_a_strike_rule_only_the_cap_stops_it() {
        let rules = TurnRules {
            invalid_tool_strikes: None,
            ..TurnRules::HERMES
        };
        let mut g = TurnGovernor::new(rules, 90);
        for strike in 1..=10 {
            assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
            assert_eq!(g.unknown_tool_reply(), UnknownTool::Retry { strike });
        }
    }
}
