//! The turn governor's tests: the loop, empty replies, summary calls and bad tool calls.

use super::*;

mod governor {
    use super::*;

    const SUMMARY: TurnRules = TurnRules {
        grace: GraceMode::SummaryCall,
        refund_extends_call_cap: false,
        dedupe_identical_calls: true,
        names_context_exhaustion: true,
        ..TurnRules::HERMES
    };

    fn run_tools(g: &mut TurnGovernor, tool: &str) -> u64 {
        let mut calls = 0;
        while let Step::Call { tools } = g.begin_iteration(false) {
            calls += 1;
            if !tools {
                g.text_reply(FinishReason::Stop);
                continue;
            }
            g.tool_round([tool], false);
        }
        calls
    }

    #[test]
    fn exhaustion_ends_with_max_iterations_and_a_summary_call() {
        let mut g = TurnGovernor::new(SUMMARY, 90);
        assert_eq!(run_tools(&mut g, "terminal"), 90);
        let end = g.finish();
        assert_eq!(end.exit_reason.to_string(), "max_iterations_reached(90/90)");
        assert!(end.summary_call);
        assert_eq!(end.budget_used, 90);
    }

    #[test]
    fn the_ledger_agrees_with_both_counters_after_refunds_and_restarts() {
        let mut g = TurnGovernor::new(SUMMARY, 10);
        for tool in ["terminal", "execute_code", "execute_code"] {
            assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
            g.tool_round([tool], false);
        }
        assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
        g.restart(Restart::PreCallCompression);
        let l = g.ledger();
        assert_eq!((l.calls_begun, l.calls_returned), (4, 1));
        assert_eq!((l.taken, l.returned), (4, 3));
        assert_eq!(g.api_call_count(), l.calls_begun - l.calls_returned);
        assert_eq!(g.budget().used(), l.taken - l.returned);
    }

    #[test]
    fn an_iteration_is_due_exactly_when_the_next_begin_would_call() {
        // Under both grace modes: whenever the loop's test admits an iteration, the next
        // begin makes a call, and once it does not, none does.
        for grace in [GraceMode::SummaryCall, GraceMode::ExtraToolsFreeCall] {
            let rules = TurnRules { grace, ..SUMMARY };
            let mut g = TurnGovernor::new(rules, 3);
            let mut calls = 0;
            loop {
                let due = g.iteration_due();
                let step = g.begin_iteration(false);
                assert_eq!(
                    due,
                    matches!(step, Step::Call { .. }),
                    "{grace:?} call {calls}"
                );
                match step {
                    Step::Call { tools: true } => {
                        g.tool_round(["terminal"], false);
                    }
                    Step::Call { tools: false } => g.text_reply(FinishReason::Stop),
                    Step::Exit => break,
                }
                calls += 1;
            }
            assert!(!g.iteration_due());
            assert_eq!(
                calls,
                if grace == GraceMode::SummaryCall {
                    3
                } else {
                    4
                }
            );
        }
        // A turn that ended on a text reply has no iteration due, budget or not.
        let mut g = TurnGovernor::new(SUMMARY, 10);
        assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
        g.text_reply(FinishReason::Stop);
        assert!(!g.iteration_due());
    }

    #[test]
    fn execute_code_refund_lowers_used_but_not_the_call_cap() {
        let mut g = TurnGovernor::new(SUMMARY, 10);
        assert_eq!(run_tools(&mut g, "execute_code"), 10);
        let end = g.finish();
        assert_eq!((end.api_calls, end.budget_used), (10, 0));
        assert_eq!(end.exit_reason.to_string(), "max_iterations_reached(10/10)");
    }

    #[test]
    fn article_refund_buys_calls_and_grace_is_tools_free() {
        let rules = TurnRules {
            grace: GraceMode::ExtraToolsFreeCall,
            refund_extends_call_cap: true,
            dedupe_identical_calls: false,
            names_context_exhaustion: true,
            ..TurnRules::HERMES
        };
        let mut g = TurnGovernor::new(rules, 5);
        for _ in 0..3 {
            assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
            g.tool_round(["execute_code"], false);
        }
        assert_eq!(g.api_call_count(), 0);
        let mut g = TurnGovernor::new(rules, 2);
        assert_eq!(
            run_tools(&mut g, "terminal"),
            3,
            "two budgeted calls and one grace call"
        );
        let end = g.finish();
        assert_eq!(
            end.exit_reason.to_string(),
            "text_response(finish_reason=stop)"
        );
        assert!(!end.summary_call);
    }

    #[test]
    fn openai_agents_raises_before_the_call_past_max_turns_and_refunds_nothing() {
        let rules =
            crate::profile::Profile::get(crate::profile::ProfileName::OpenAiAgents0_24).turn;
        // Ten model calls, execute_code-only rounds included: no refund buys an eleventh.
        let mut g = TurnGovernor::new(rules, 10);
        assert_eq!(run_tools(&mut g, "execute_code"), 10);
        let end = g.finish();
        assert_eq!(end.exit_reason.to_string(), "raised(MaxTurnsExceeded)");
        assert!(!end.summary_call, "the SDK makes no call after it raises");
        assert_eq!((end.api_calls, end.budget_used), (10, 10));
        assert!(!g.completed(true));
        // A text reply at the last allowed call is the final output, not an exception.
        let mut g = TurnGovernor::new(rules, 2);
        g.begin_iteration(false);
        g.tool_round(["terminal"], false);
        assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
        g.text_reply(FinishReason::Stop);
        assert_eq!(
            g.finish().exit_reason.to_string(),
            "text_response(finish_reason=stop)"
        );
        // max_turns 0: it raises before the first call.
        let mut g = TurnGovernor::new(rules, 0);
        assert_eq!(g.begin_iteration(false), Step::Exit);
        assert_eq!(
            g.finish().exit_reason,
            ExitReason::Raised(LimitError::MaxTurnsExceeded)
        );
    }

    #[test]
    fn pydantic_ai_retries_one_empty_reply_per_run_then_raises() {
        let rules = crate::profile::Profile::get(crate::profile::ProfileName::PydanticAi2_68).turn;
        let mut g = TurnGovernor::new(rules, 50);
        g.begin_iteration(false);
        // The first empty reply of the run: one retry request, counted like any other.
        assert_eq!(g.empty_reply(true), EmptyReply::Retry);
        g.begin_iteration(false);
        g.tool_round(["terminal"], false);
        g.begin_iteration(false);
        // The output-retry budget is the run's, not the round's: the second one raises.
        assert_eq!(g.empty_reply(true), EmptyReply::Exhausted);
        assert_eq!(g.begin_iteration(false), Step::Exit);
        let end = g.finish();
        assert_eq!(
            end.exit_reason.to_string(),
            "raised(UnexpectedModelBehavior)"
        );
        assert_eq!(end.api_calls, 3);
        assert!(!end.summary_call);
        // An empty reply at the last allowed request: its retry would pass the limit.
        let mut g = TurnGovernor::new(rules, 2);
        g.begin_iteration(false);
        g.tool_round(["terminal"], false);
        g.begin_iteration(false);
        assert_eq!(g.empty_reply(true), EmptyReply::Retry);
        assert_eq!(g.begin_iteration(false), Step::Exit);
        assert_eq!(
            g.finish().exit_reason.to_string(),
            "raised(UsageLimitExceeded)"
        );
        // request_limit: fifty requests, then UsageLimitExceeded before the fifty-first.
        let mut g = TurnGovernor::new(rules, 50);
        assert_eq!(run_tools(&mut g, "execute_code"), 50);
        assert_eq!(
            g.finish().exit_reason.to_string(),
            "raised(UsageLimitExceeded)"
        );
    }

    /// A LangGraph turn under `limit` with `hooks` middleware nodes per round.
    fn graph_turn(limit: u64, hooks: (u64, u64)) -> TurnGovernor {
        use crate::profile::{GraphLayout, recursion_limit_cap};
        let base = crate::profile::Profile::get(crate::profile::ProfileName::LangGraph1_2).turn;
        let layout = GraphLayout::create_agent(limit, hooks);
        let (max, at_cap) = recursion_limit_cap(layout);
        let rules = TurnRules {
            at_cap,
            graph: Some(layout),
            ..base
        };
        TurnGovernor::new(rules, max)
    }

    /// Model calls made and tool rounds run until the graph stops, the model always calling.
    fn graph_run(g: &mut TurnGovernor) -> (u64, u64) {
        let (mut made, mut ran) = (0, 0);
        while let Step::Call { .. } = g.begin_iteration(false) {
            made += 1;
            if g.drops_reply() {
                break;
            }
            g.tool_round(["terminal"], false);
            ran += 1;
        }
        (made, ran)
    }

    #[test]
    fn langgraph_counts_graph_steps_and_an_odd_limit_drops_the_last_reply() {
        // (limit, model calls, tool rounds run): the model at odd steps, its tools at even.
        for (limit, calls, rounds) in [(1, 1, 0), (2, 1, 1), (6, 3, 3), (7, 4, 3), (25, 13, 12)] {
            let mut g = graph_turn(limit, (0, 0));
            assert_eq!(
                graph_run(&mut g),
                (calls, rounds),
                "recursion_limit {limit}"
            );
            assert_eq!(
                g.finish().exit_reason.to_string(),
                "raised(GraphRecursionError)"
            );
        }
        // An even limit's last call may answer; an odd one's answer comes one step too late.
        let mut g = graph_turn(4, (0, 0));
        g.begin_iteration(false);
        g.tool_round(["terminal"], false);
        g.begin_iteration(false);
        assert!(!g.drops_reply());
        g.text_reply(FinishReason::Stop);
        assert_eq!(
            g.finish().exit_reason.to_string(),
            "text_response(finish_reason=stop)"
        );
        let mut g = graph_turn(3, (0, 0));
        g.begin_iteration(false);
        g.tool_round(["terminal"], false);
        g.begin_iteration(false);
        assert!(g.drops_reply());
    }

    #[test]
    fn langgraph_middleware_hooks_are_steps_of_their_own() {
        // Measured against langchain 1.5: at recursion_limit 25, ModelCallLimitMiddleware
        // alone (a hook before the model and one after) leaves 6 calls, all of whose tools run.
        let mut g = graph_turn(25, (1, 1));
        assert_eq!(graph_run(&mut g), (6, 6));
        // The least limits for one tool round and an answer: 4, 6 with the tool-call limit's
        // hook, 8 with the model-call limit's two, 10 with both.
        use crate::profile::GraphLayout;
        for (hooks, least) in [((0, 0), 4), ((0, 1), 6), ((1, 1), 8), ((1, 2), 10)] {
            assert_eq!(
                GraphLayout::create_agent(0, hooks).limit_for_calls(2),
                least
            );
            for limit in [least - 1, least] {
                let mut g = graph_turn(limit, hooks);
                assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
                assert!(!g.drops_reply());
                g.tool_round(["terminal"], false);
                assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
                if g.drops_reply() {
                    assert_eq!(limit, least - 1, "{hooks:?}");
                    continue;
                }
                g.text_reply(FinishReason::Stop);
                assert_eq!(limit, least, "{hooks:?}");
            }
        }
        // A round whose calls were all blocked has no tools step: the next call comes sooner
        // (the steps decide; the cap in calls is only their bound).
        let rules = graph_turn(9, (0, 1)).rules;
        let mut g = TurnGovernor::new(rules, 100);
        let mut made = 0;
        while let Step::Call { .. } = g.begin_iteration(false) {
            made += 1;
            if g.drops_reply() {
                break;
            }
            g.all_calls_blocked();
            g.tool_round(["terminal"], false);
        }
        // Model at steps 1, 3, 5, 7, 9 (each round: the model and the hook).
        assert_eq!(made, 5);
    }

    #[test]
    fn a_limit_hook_acts_only_if_its_step_runs() {
        use crate::call_limits::{LimitStop, Limited};
        // Tool-call limit's hook right after the model's step, at recursion_limit 3 with
        // (0, 1) hooks: model at 1, hook at 2, tools at 3.
        let end = LimitStop::End(Limited::ToolCalls);
        let raise = LimitStop::Raise(LimitError::ToolCallLimitExceededError);
        for (limit, stop, exit) in [
            (3, end, "tool_call_limit_reached"),
            (2, end, "raised(GraphRecursionError)"),
            (2, raise, "raised(ToolCallLimitExceededError)"),
            (1, raise, "raised(GraphRecursionError)"),
        ] {
            let mut g = graph_turn(limit, (0, 1));
            g.begin_iteration(false);
            assert!(g.reply_stops(Some(stop)));
            assert_eq!(g.finish().exit_reason.to_string(), exit, "limit {limit}");
        }
        // The model-call limit's hook comes before the model: the cap goes first.
        let mut g = graph_turn(9999, (1, 1));
        let stop = LimitStop::End(Limited::ModelCalls);
        assert_eq!(g.begin_iteration_unless(true, Some(stop)), Step::Exit);
        let end = g.finish();
        assert_eq!(end.exit_reason.to_string(), "model_call_limit_reached");
        assert_eq!(end.api_calls, 0, "no model call past the limit");
    }

    #[test]
    fn smolagents_runs_max_steps_then_makes_its_final_answer_call() {
        let rules = crate::profile::Profile::get(crate::profile::ProfileName::Smolagents1_26).turn;
        // Twenty steps, execute_code-only ones included, then the tools-free final-answer call.
        let mut g = TurnGovernor::new(rules, 20);
        let mut steps = 0;
        while let Step::Call { tools } = g.begin_iteration(false) {
            assert!(tools, "every step offers the tools");
            steps += 1;
            g.tool_round(["execute_code"], false);
        }
        assert_eq!(steps, 20);
        let end = g.finish();
        assert_eq!(end.exit_reason.to_string(), "max_steps_error");
        assert!(end.summary_call && end.exit_reason.is_runtime_limit());
        assert_eq!((end.api_calls, end.budget_used), (20, 20));
        // An empty reply fails its step, which counts, and the loop goes on, every time.
        let mut g = TurnGovernor::new(rules, 3);
        for _ in 0..3 {
            assert_eq!(g.begin_iteration(false), Step::Call { tools: true });
            assert_eq!(g.empty_reply(true), EmptyReply::Retry);
        }
        assert_eq!(g.begin_iteration(false), Step::Exit);
        assert!(
            g.finish().summary_call,
            "the last step's empty reply changes nothing"
        );
        // The user's stop at the cap: the step loop is over first, so the call is made.
        let mut g = TurnGovernor::new(rules, 1);
        g.begin_iteration(false);
        g.tool_round(["terminal"], false);
        assert_eq!(g.begin_iteration(true), Step::Exit);
        assert_eq!(g.finish().exit_reason, ExitReason::MaxStepsError);
        // Before it, the stop ends the run with no call.
        let mut g = TurnGovernor::new(rules, 5);
        g.begin_iteration(false);
        g.tool_round(["terminal"], false);
        assert_eq!(g.begin_iteration(true), Step::Exit);
        let end = g.finish();
        assert_eq!(end.exit_reason, ExitReason::InterruptedByUser);
        assert!(!end.summary_call);
    }

    #[test]
    fn halts_interrupts_and_context_refunds() {
        let mut g = TurnGovernor::new(SUMMARY, 90);
        g.begin_iteration(false);
        assert!(!g.tool_round(["read_file"], true));
        assert_eq!(g.begin_iteration(false), Step::Exit);
        assert_eq!(g.finish().exit_reason, ExitReason::GuardrailHalt);

        let mut g = TurnGovernor::new(SUMMARY, 90);
        g.begin_iteration(false);
        assert_eq!(g.begin_iteration(true), Step::Exit);
        let end = g.finish();
        assert_eq!(end.exit_reason.to_string(), "interrupted_by_user");
        assert!(!end.summary_call);

        let mut g = TurnGovernor::new(SUMMARY, 90);
        g.begin_iteration(false);
        g.runtime_context_too_small();
        let end = g.finish();
        assert_eq!((end.api_calls, end.budget_used), (0, 0));
        assert_eq!(
            end.exit_reason.to_string(),
            "ollama_runtime_context_too_small"
        );
    }

    #[test]
    fn shared_budget_with_reserve_stops_the_child_first() {
        let parent = Arc::new(IterationBudget::new(90));
        let mut child = TurnGovernor::with_budget(SUMMARY, 50, Arc::clone(&parent), 10);
        let calls = run_tools(&mut child, "web_search");
        assert_eq!(calls, 50, "the child's own cap binds first");
        let mut child2 = TurnGovernor::with_budget(SUMMARY, 50, Arc::clone(&parent), 10);
        assert_eq!(run_tools(&mut child2, "web_search"), 30, "then the reserve");
        assert_eq!(parent.remaining(), 10);
    }

    #[test]
    fn exit_strings() {
        assert_eq!(
            ExitReason::LocalProcessingError("x".repeat(100))
                .to_string()
                .len(),
            "local_processing_error()".len() + 80
        );
        assert_eq!(
            ExitReason::TextResponse(FinishReason::Other("end_turn".into())).to_string(),
            "text_response(finish_reason=end_turn)"
        );
        assert_eq!(
            ExitReason::PendingToolResult
                .failure_mapping()
                .unwrap()
                .failure_reason,
            "loop_error"
        );
    }
}
mod empty_reply_tests {
    use super::*;

    const RULES: TurnRules = TurnRules {
        grace: GraceMode::SummaryCall,
        refund_extends_call_cap: false,
        dedupe_identical_calls: true,
        names_context_exhaustion: true,
        ..TurnRules::HERMES
    };

    /// Runs replies through a turn: `e` empty, `t` a tool round, `x` text. Returns the calls
    /// made, the budget used and the exit reason.
    fn run(max: u64, replies: &str) -> (u64, u64, String) {
        let mut g = TurnGovernor::new(RULES, max);
        let mut recent = false;
        for r in replies.chars() {
            match g.begin_iteration(false) {
                Step::Exit => break,
                Step::Call { .. } => {}
            }
            let go_on = match r {
                'e' => g.empty_reply(recent) != EmptyReply::Exhausted,
                't' => {
                    recent = true;
                    g.tool_round(["terminal"], false)
                }
                _ => {
                    g.text_reply(FinishReason::Stop);
                    false
                }
            };
            if !go_on {
                break;
            }
        }
        let end = g.finish();
        (end.api_calls, end.budget_used, end.exit_reason.to_string())
    }

    // The cases observed in the real hermes-agent 0.19.0 loop (agent/conversation_loop.py):
    // every empty reply, nudge and retry is a counted request; nothing is refunded.
    #[test]
    fn empty_replies_are_counted_retried_three_times_and_nudged_once_after_tools() {
        let exhausted = "empty_response_exhausted".to_string();
        assert_eq!(run(90, "eeeeeeee"), (4, 4, exhausted.clone()));
        assert_eq!(
            run(90, "ex"),
            (2, 2, "text_response(finish_reason=stop)".into())
        );
        assert_eq!(
            run(90, "tex"),
            (3, 3, "text_response(finish_reason=stop)".into())
        );
        assert_eq!(run(90, "teeeeeeee"), (6, 6, exhausted.clone()));
        // A tool round does not give the retries back, but it brings a new nudge.
        assert_eq!(run(90, "eetteeeee"), (7, 7, exhausted));
    }

    #[test]
    fn a_budget_spent_on_empty_replies_ends_unknown_without_a_summary() {
        let g = run(2, "eeee");
        assert_eq!(g, (2, 2, "unknown".to_string()));
        let mut gov = TurnGovernor::new(RULES, 2);
        for _ in 0..2 {
            assert_eq!(gov.begin_iteration(false), Step::Call { tools: true });
            gov.empty_reply(false);
        }
        assert_eq!(gov.begin_iteration(false), Step::Exit);
        assert!(!gov.finish().summary_call);
    }
}

mod summary_tests {
    use super::*;

    #[test]
    fn an_empty_reply_is_retried_once() {
        let mut replies = vec!["", "", "late"].into_iter();
        let mut calls = 0;
        let out = summary_call(|| {
            calls += 1;
            replies.next().unwrap().to_string()
        });
        assert_eq!((out, calls), (SummaryOutcome::Fallback, 2));
        let mut replies = vec!["", "  done  "].into_iter();
        assert_eq!(
            summary_call(|| replies.next().unwrap().to_string()),
            SummaryOutcome::Text("done".into())
        );
    }

    #[test]
    fn think_only_replies_fall_back_without_retry() {
        let mut calls = 0;
        let out = summary_call(|| {
            calls += 1;
            "<think>hmm</think>  ".to_string()
        });
        assert_eq!((out, calls), (SummaryOutcome::Fallback, 1));
        assert_eq!(strip_think_blocks("a<think>x</think>b<think>y"), "ab");
    }
}
