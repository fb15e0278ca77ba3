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
//! **A ReAct loop that parses the model's action** (`react-loop-article`) takes arguments it
//! cannot parse as a failed iteration: the iteration is spent, nothing runs, and the loop asks
//! again. After a run of such replies ([`MalformedArgs::FailedIteration`]'s
//! `format_error_after`, 2 by default) the reply stays in the conversation with an
//! observation telling the model what format is expected; the count then starts over, and a
//! reply the loop can act on ends it. Only the cap and the token budget end such a turn.
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
//!
//! // The article's loop: each broken reply is an iteration, every second one a format error.
//! use loopsim_engine::turn::invalid_calls::{InvalidCallRules, ParseFailure};
//! let rules = TurnRules { invalid_calls: Some(InvalidCallRules::REACT_LOOP), ..TurnRules::HERMES };
//! let mut turn = TurnGovernor::new(rules, 4);
//! let mut seen = Vec::new();
//! while let Step::Call { tools: true } = turn.begin_iteration(false) {
//!     seen.push(turn.parse_failure());
//! }
//! assert_eq!(seen, [
//!     ParseFailure::AskAgain { streak: 1 },
//!     ParseFailure::FormatError,
//!     ParseFailure::AskAgain { streak: 1 },
//!     ParseFailure::FormatError,
//! ]);
//! assert_eq!(turn.finish().exit_reason.to_string(), "max_iterations_reached(4/4)");
//! ```

use super::{ExitReason, TurnGovernor};

/// A runtime's limits on replies it cannot run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidCallRules {
    /// Replies in a row of only unknown tools the runtime takes before it gives up; `None`:
    /// loopsim has not proved how the runtime takes them.
    pub unknown_tool_strikes: Option<u32>,
    /// What a reply with arguments that are not JSON does.
    pub malformed_args: MalformedArgs,
}

/// How a runtime takes a reply whose arguments it cannot parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MalformedArgs {
    /// Hermes: the reply is dropped and the same request sent again inside the iteration,
    /// up to `retries` times since tools last ran; then the turn ends `truncated_tool_call`.
    SendAgain { retries: u32 },
    /// A ReAct loop: the failed parse spends its iteration and the loop asks again; the
    /// `format_error_after`-th such reply in a row brings a format-error observation
    /// (`None`: never).
    FailedIteration { format_error_after: Option<u32> },
}

impl InvalidCallRules {
    /// Hermes 0.19.0 (`agent/conversation_loop.py`).
    pub const HERMES: InvalidCallRules = InvalidCallRules {
        unknown_tool_strikes: Some(3),
        malformed_args: MalformedArgs::SendAgain { retries: 4 },
    };

    /// The loop-design article's ReAct loop: a format-error observation after repeated
    /// parse failures. The article gives no count; "repeated" is read as the second in a
    /// row (`format_error_after`). It says nothing of unknown tool names.
    pub const REACT_LOOP: InvalidCallRules = InvalidCallRules {
        unknown_tool_strikes: None,
        malformed_args: MalformedArgs::FailedIteration {
            format_error_after: Some(REACT_LOOP_FORMAT_ERROR_AFTER),
        },
    };
}

/// Parse failures in a row after which the article's loop sends a format-error observation.
pub const REACT_LOOP_FORMAT_ERROR_AFTER: u32 = 2;

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

/// What a ReAct loop does with a reply it cannot parse ([`MalformedArgs::FailedIteration`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseFailure {
    /// The reply is dropped and the loop asks again at its next iteration (`streak` such
    /// replies in a row so far).
    AskAgain { streak: u32 },
    /// The reply stays, and an observation telling the model the expected format follows
    /// it; the count starts over.
    FormatError,
}

impl TurnGovernor {
    /// The model's reply called only tools that do not exist. A runtime without proved rules
    /// ([`super::TurnRules::invalid_calls`]) is bounded by its cap alone.
    pub fn unknown_tool_reply(&mut self) -> UnknownTool {
        self.unknown_tool_strikes += 1;
        match self
            .rules
            .invalid_calls
            .and_then(|r| r.unknown_tool_strikes)
        {
            Some(strikes) if self.unknown_tool_strikes >= strikes => {
                self.unknown_tool_strikes = 0;
                self.exit = ExitReason::InvalidToolCall;
                UnknownTool::GiveUp
            }
            _ => UnknownTool::Retry {
                strike: self.unknown_tool_strikes,
            },
        }
    }

    /// How this runtime takes a reply with arguments it cannot parse (`None`: not proved).
    pub fn malformed_args_rule(&self) -> Option<MalformedArgs> {
        self.rules.invalid_calls.map(|r| r.malformed_args)
    }

    /// The model's reply carried arguments the runtime cannot repair (its reader took the
    /// reply as cut off). A runtime without proved rules sends it again every time.
    pub fn truncated_reply(&mut self) -> Truncated {
        match self.malformed_args_rule() {
            Some(MalformedArgs::SendAgain { retries }) if self.truncated_retries >= retries => {
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

impl TurnGovernor {
    /// The model's reply carried arguments a ReAct loop cannot parse
    /// ([`MalformedArgs::FailedIteration`]): its iteration is spent, nothing runs.
    pub fn parse_failure(&mut self) -> ParseFailure {
        self.parse_failures += 1;
        let after = match self.malformed_args_rule() {
            Some(MalformedArgs::FailedIteration { format_error_after }) => format_error_after,
            _ => None,
        };
        match after {
            Some(n) if self.parse_failures >= n.max(1) => {
                self.parse_failures = 0;
                ParseFailure::FormatError
            }
            _ => ParseFailure::AskAgain {
                streak: self.parse_failures,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::{Step, TurnEnd, TurnRules};

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

    /// A turn of the article's loop (`format_error_after` as given): `p` a reply it cannot
    /// parse, `e` an empty one, `t` a tool round. What each `p` brought, and the end.
    fn react(after: Option<u32>, max: u64, replies: &str) -> (Vec<ParseFailure>, TurnEnd) {
        let rules = TurnRules {
            invalid_calls: Some(InvalidCallRules {
                malformed_args: MalformedArgs::FailedIteration {
                    format_error_after: after,
                },
                ..InvalidCallRules::REACT_LOOP
            }),
            ..TurnRules::HERMES
        };
        let mut g = TurnGovernor::new(rules, max);
        let mut seen = Vec::new();
        for r in replies.chars() {
            let Step::Call { tools: true } = g.begin_iteration(false) else {
                break;
            };
            match r {
                'p' => seen.push(g.parse_failure()),
                'e' => {
                    g.empty_reply(false);
                }
                _ => assert!(g.tool_round(["read_file"], false)),
            }
        }
        (seen, g.finish())
    }

    #[test]
    fn a_parse_failure_spends_its_iteration_and_every_second_in_a_row_brings_the_format_error() {
        use ParseFailure::{AskAgain, FormatError};
        let (seen, end) = react(Some(2), 12, "pppp");
        assert_eq!(
            seen,
            [
                AskAgain { streak: 1 },
                FormatError,
                AskAgain { streak: 1 },
                FormatError
            ]
        );
        assert_eq!((end.api_calls, end.budget_used), (4, 4));
        // Only the cap ends a loop of them, with the summary call owed.
        let (seen, end) = react(Some(2), 5, "pppppppp");
        assert_eq!(seen.len(), 5);
        assert_eq!(end.exit_reason.to_string(), "max_iterations_reached(5/5)");
        assert!(end.summary_call);
        // A tool round, or an empty reply, ends the streak.
        let (seen, _) = react(Some(2), 12, "ptpepp");
        assert_eq!(
            seen,
            [
                AskAgain { streak: 1 },
                AskAgain { streak: 1 },
                AskAgain { streak: 1 },
                FormatError
            ]
        );
        // Another count, and none at all.
        let (seen, _) = react(Some(3), 12, "pppppp");
        assert_eq!(seen.iter().filter(|s| **s == FormatError).count(), 2);
        assert_eq!(seen[2], FormatError);
        let (seen, _) = react(None, 12, "pppppp");
        assert_eq!(seen.last(), Some(&AskAgain { streak: 6 }));
        assert!(!seen.contains(&FormatError));
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
