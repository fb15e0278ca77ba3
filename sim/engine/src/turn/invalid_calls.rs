//! Replies whose tool calls the runtime cannot run: a name no tool has, or arguments that
//! are not JSON.
//!
//! **Unknown tools.** Hermes 0.19.0 first tries to repair such a name (case, separators, a
//! `_tool` suffix, a close match); what stays unknown is rejected before anything runs. When
//! every call of a reply is unknown, the reply and one error result per call join the
//! conversation, and the loop goes on: the next model call is a counted iteration like any
//! other, and the guardrails never see the rejected calls. The third such reply in a row ends
//! the turn at once, with no summary call and no exit reason of Hermes's own; loopsim names it
//! `invalid_tool_call`. A reply whose calls all exist starts the count over.
//!
//! **Broken arguments.** Hermes streams its main loop's replies, and the stream's reader
//! repairs arguments it can (trailing commas, missing closing braces, control characters).
//! Arguments it cannot repair mark the whole reply as cut off by the output limit: Hermes
//! drops it, sends the same request again with a larger output budget, inside the same
//! iteration (no budget, no `api_call_count`), and after four such retries since tools last
//! ran returns the turn as partial; loopsim names it `truncated_tool_call`.
//!
//! ```
//! use loopsim_engine::turn::invalid_calls::{Truncated, UnknownTool};
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
//!
//! // Five broken replies in one iteration: four sent again, then the turn ends.
//! let mut turn = TurnGovernor::new(TurnRules::HERMES, 90);
//! assert_eq!(turn.begin_iteration(false), Step::Call { tools: true });
//! let replies: Vec<_> = (0..5).map(|_| turn.truncated_reply()).collect();
//! assert_eq!(replies[3], Truncated::SendAgain { retry: 4 });
//! assert_eq!(replies[4], Truncated::GiveUp);
//! let end = turn.finish();
//! assert_eq!((end.exit_reason, end.budget_used), (ExitReason::TruncatedToolCall, 1));
//! ```

use super::{ExitReason, TurnGovernor};

/// A runtime's limits on replies it cannot run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidCallRules {
    /// Replies in a row of only unknown tools the runtime takes before it gives up.
    pub unknown_tool_strikes: u32,
    /// Replies with arguments it cannot repair that it sends again (since tools last ran)
    /// before it gives up.
    pub truncated_retries: u32,
}

impl InvalidCallRules {
    /// Hermes 0.19.0 (`agent/conversation_loop.py`).
    pub const HERMES: InvalidCallRules = InvalidCallRules {
        unknown_tool_strikes: 3,
        truncated_retries: 4,
    };
}

/// What the runtime does with a reply whose calls all name unknown tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnknownTool {
    /// Error results go back to the model and the loop goes on (`strike` such replies in a
    /// row so far).
    Retry { strike: u32 },
    /// The strikes are used up: the turn ends `invalid_tool_call`.
    GiveUp,
}

/// What the runtime does with a reply whose arguments it cannot repair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Truncated {
    /// The same request goes out again at once, in the same iteration (`retry` of them since
    /// tools last ran).
    SendAgain { retry: u32 },
    /// The retries are used up: the turn ends `truncated_tool_call`.
    GiveUp,
}

impl TurnGovernor {
    /// The model's reply called only tools that do not exist. A runtime without proved rules
    /// ([`super::TurnRules::invalid_calls`]) is bounded by its cap alone.
    pub fn unknown_tool_reply(&mut self) -> UnknownTool {
        self.unknown_tool_strikes += 1;
        match self.rules.invalid_calls {
            Some(r) if self.unknown_tool_strikes >= r.unknown_tool_strikes => {
                self.unknown_tool_strikes = 0;
                self.exit = ExitReason::InvalidToolCall;
                UnknownTool::GiveUp
            }
            _ => UnknownTool::Retry {
                strike: self.unknown_tool_strikes,
            },
        }
    }

    /// The model's reply carried arguments the runtime cannot repair (its reader took the
    /// reply as cut off). A runtime without proved rules sends it again every time.
    pub fn truncated_reply(&mut self) -> Truncated {
        match self.rules.invalid_calls {
            Some(r) if self.truncated_retries >= r.truncated_retries => {
                self.exit = ExitReason::TruncatedToolCall;
                Truncated::GiveUp
            }
            _ => {
                self.truncated_retries += 1;
                Truncated::SendAgain {
                    retry: self.truncated_retries,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::{Step, TurnRules};

    /// Runs replies through a turn: `u` only unknown tools, `b` broken arguments (sent again
    /// in the same iteration), `t` a tool round. Returns the calls made, the budget used and
    /// the exit reason.
    fn run(max: u64, replies: &str) -> (u64, u64, String) {
        let mut g = TurnGovernor::new(TurnRules::HERMES, max);
        let mut replies = replies.chars().peekable();
        'turn: while replies.peek().is_some() {
            let Step::Call { tools: true } = g.begin_iteration(false) else {
                break;
            };
            for r in replies.by_ref() {
                match r {
                    'b' => match g.truncated_reply() {
                        Truncated::SendAgain { .. } => continue,
                        Truncated::GiveUp => break 'turn,
                    },
                    'u' => {
                        if g.unknown_tool_reply() == UnknownTool::GiveUp {
                            break 'turn;
                        }
                    }
                    _ => assert!(g.tool_round(["read_file"], false)),
                }
                continue 'turn;
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
    fn broken_replies_cost_no_iteration_and_the_fifth_since_tools_ran_ends_the_turn() {
        // Four sent again inside the first iteration, then two rounds: 2 iterations.
        assert_eq!(run(90, "bbbbtt").1, 2);
        // Each round starts them over; the fifth in one iteration gives up.
        assert_eq!(run(90, "bbtbbtbbbbb"), (3, 3, "truncated_tool_call".into()));
        // An unknown-tool reply runs no tools: two, then three more across the iterations.
        assert_eq!(run(90, "bbubbb"), (2, 2, "truncated_tool_call".into()));
        // A round in between starts them over.
        assert_eq!(run(3, "bbbbtbbbbt").2, "unknown");
    }

    #[test]
    fn without_rules_only_the_cap_stops_them() {
        let rules = TurnRules {
            invalid_calls: None,
            ..TurnRules::HERMES
        };
        let mut g = TurnGovernor::new(rules, 90);
        for strike in 1..=10 {
            assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
            assert_eq!(g.unknown_tool_reply(), UnknownTool::Retry { strike });
            assert_eq!(g.truncated_reply(), Truncated::SendAgain { retry: strike });
        }
    }
}
