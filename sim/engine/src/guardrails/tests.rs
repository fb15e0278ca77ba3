use super::*;
use crate::json::parse;

fn v(s: &str) -> Value {
    parse(s.as_bytes()).unwrap()
}

fn hard(rules: GuardrailRules) -> Controller {
    Controller::new(
        GuardrailConfig {
            hard_stop_enabled: true,
            ..GuardrailConfig::default()
        },
        rules,
    )
}

fn exec_result(n: u32) -> String {
    format!(
        r#"{{"status":"success","output":"","duration_seconds":0.{n}1,"kernel":{{"execution_count":{n},"mode":"persistent"}}}}"#
    )
}

fn run_exec(c: &mut Controller, n: u32, varying: bool) -> (Decision, Observation) {
    let args = v(r#"{"code":"print(\"waiting\")"}"#);
    let b = c.before_call("execute_code", &args);
    assert_eq!(b.action, Action::Allow);
    let r = if varying {
        exec_result(n)
    } else {
        exec_result(7)
    };
    let facts = CallFacts::new("execute_code", &args, Some(r.as_bytes()), c.rules());
    let d = c.after_call_facts(&facts, false);
    let o = c.observe_call(&facts, false);
    (d, o)
}

#[test]
fn smoke_0_19_allows_six_identical_execute_code_calls() {
    let mut c = hard(GuardrailRules::V0_19);
    for n in 1..=6 {
        let (d, o) = run_exec(&mut c, n, false);
        assert_eq!(
            (d.action, d.code, d.count),
            (Action::Allow, DecisionCode::Allow, 0)
        );
        assert_eq!(o, Observation::default());
    }
    assert!(c.halt_decision().is_none());
}

#[test]
fn smoke_main_notices_from_third_and_halts_at_fifth() {
    let mut c = hard(GuardrailRules::NEWEST);
    for n in 1..=6u32 {
        let (d, o) = run_exec(&mut c, n, true);
        assert_eq!(d.action, Action::Allow);
        assert_eq!(o.kind.is_some(), n >= 3, "call {n}");
        assert!(!o.stub, "short results are never stubbed");
        let halt = c.halt_decision().map(|h| (h.code, h.count));
        if n >= 5 {
            assert_eq!(halt, Some((DecisionCode::IdenticalCallStreakHalt, 5)));
        } else {
            assert_eq!(halt, None);
        }
    }
}

#[test]
fn smoke_v0_21_5_volatile_fields_hide_the_streak() {
    let rules = GuardrailRules {
        result_hashing: ResultHashing::Plain,
        ..GuardrailRules::NEWEST
    };
    let mut c = hard(rules);
    for n in 1..=6 {
        let (_, o) = run_exec(&mut c, n, true);
        assert_eq!(o.kind, None);
        assert_eq!(o.streak, 1);
    }
    assert!(c.halt_decision().is_none());
}

#[test]
fn success_clears_same_tool_count_in_0_19() {
    let mut c = Controller::new(GuardrailConfig::default(), GuardrailRules::V0_19);
    let mut counts = vec![];
    for (i, failed) in [true, true, false, true].into_iter().enumerate() {
        let args = v(&format!(r#"{{"path":"/f{i}"}}"#));
        let d = c.after_call("read_file", &args, Some(b"x"), Some(failed));
        counts.push(if failed {
            c.same_tool_failures["read_file"]
        } else {
            0
        });
        let _ = d;
    }
    assert_eq!(counts, [1, 2, 0, 1]);
}

#[test]
fn exact_failures_warn_then_block_and_a_block_arms_the_halt() {
    let mut c = hard(GuardrailRules::NEWEST);
    let args = v(r#"{"path":"/missing"}"#);
    let mut seen = vec![];
    for _ in 0..6 {
        let b = c.before_call("read_file", &args);
        if b.action == Action::Block {
            seen.push((b.code, b.count));
            break;
        }
        let d = c.after_call(
            "read_file",
            &args,
            Some(br#"{"error":"no such file"}"#),
            None,
        );
        seen.push((d.code, d.count));
    }
    assert_eq!(
        seen,
        [
            (DecisionCode::Allow, 1),
            (DecisionCode::RepeatedExactFailureWarning, 2),
            (DecisionCode::RepeatedExactFailureWarning, 3),
            (DecisionCode::RepeatedExactFailureWarning, 4),
            (DecisionCode::RepeatedExactFailureWarning, 5),
            (DecisionCode::RepeatedExactFailureBlock, 5),
        ]
    );
    assert_eq!(
        c.halt_decision().unwrap().code,
        DecisionCode::RepeatedExactFailureBlock
    );
    c.reset_for_turn();
    assert!(c.halt_decision().is_none());
    assert_eq!(c.before_call("read_file", &args).action, Action::Allow);
}

#[test]
fn progress_reset_makes_a_retry_a_new_experiment() {
    let mut c = hard(GuardrailRules::NEWEST);
    let args = v(r#"{"command":"make"}"#);
    for _ in 0..5 {
        c.after_call("search_files", &args, Some(br#"{"error":"x"}"#), Some(true));
    }
    assert_eq!(c.before_call("search_files", &args).action, Action::Block);
    c.after_call(
        "write_file",
        &v(r#"{"path":"a"}"#),
        Some(br#"{"bytes_written":1}"#),
        None,
    );
    assert_eq!(c.before_call("search_files", &args).action, Action::Allow);
    let d = c.after_call("search_files", &args, Some(br#"{"error":"x"}"#), Some(true));
    assert_eq!(d.count, 1, "the exact count restarted");
}

#[test]
fn failure_tolerant_tools_never_same_tool_halt() {
    let mut c = hard(GuardrailRules::NEWEST);
    for i in 0..12 {
        let d = c.after_call(
            "terminal",
            &v(&format!(r#"{{"command":"t{i}"}}"#)),
            Some(br#"{"exit_code":1}"#),
            None,
        );
        assert_ne!(d.action, Action::Halt);
    }
    let mut old = hard(GuardrailRules::V0_19);
    let halted = (0..12).any(|i| {
        old.after_call(
            "terminal",
            &v(&format!(r#"{{"command":"t{i}"}}"#)),
            Some(br#"{"exit_code":1}"#),
            None,
        )
        .action
            == Action::Halt
    });
    assert!(halted);
}

#[test]
fn loop_caps_apply_without_hard_stops() {
    let mut c = Controller::new(
        GuardrailConfig {
            loop_caps: LoopCaps {
                max_web_searches: 3,
                max_subagents: 2,
            },
            ..GuardrailConfig::default()
        },
        GuardrailRules::NEWEST,
    );
    let actions: Vec<_> = (0..5)
        .map(|i| {
            c.before_call("web_search", &v(&format!(r#"{{"q":"{i}"}}"#)))
                .action
        })
        .collect();
    assert_eq!(
        actions,
        [
            Action::Allow,
            Action::Allow,
            Action::Allow,
            Action::Block,
            Action::Block
        ]
    );
    assert_eq!(
        c.halt_decision().unwrap().code,
        DecisionCode::LoopWebSearchCap
    );

    let r = c.reserve_subagents(5);
    assert_eq!(r.admitted, 2);
    c.commit_subagents(r, 2);
    let d = c.before_call("delegate_task", &v(r#"{"goal":"more"}"#));
    assert_eq!(
        (d.action, d.code, d.count),
        (Action::Block, DecisionCode::LoopSubagentCap, 2)
    );
    let steer = c.before_call("delegate_task", &v(r#"{"action":" Stop "}"#));
    assert_eq!(steer.action, Action::Allow);
}

#[test]
fn cycles_of_two_are_noticed_and_pollers_are_exempt() {
    let mut c = hard(GuardrailRules::NEWEST);
    let mut kinds = vec![];
    for i in 0..10 {
        let tool = if i % 2 == 0 {
            "read_file"
        } else {
            "search_files"
        };
        let args = v(r#"{"p":1}"#);
        let facts = CallFacts::new(tool, &args, Some(b"same"), c.rules());
        c.after_call_facts(&facts, false);
        kinds.push(c.observe_call(&facts, false).kind);
    }
    let first = kinds.iter().position(Option::is_some).unwrap();
    assert_eq!(first, 5, "third lap of a period-2 cycle");
    assert_eq!(
        c.halt_decision().unwrap().code,
        DecisionCode::IdenticalCycleHalt
    );

    let mut p = hard(GuardrailRules::NEWEST);
    let poll = v(r#"{"action":"poll"}"#);
    for _ in 0..10 {
        let facts = CallFacts::new("process_manage", &poll, Some(b"running"), p.rules());
        assert_eq!(p.observe_call(&facts, false).kind, None);
    }
    assert!(p.halt_decision().is_none());
}

#[test]
fn large_identical_results_are_stubbed_from_the_second() {
    let mut c = Controller::new(GuardrailConfig::default(), GuardrailRules::NEWEST);
    let big = "x".repeat(600);
    let empty = v("{}");
    let stubs: Vec<bool> = (0..3)
        .map(|_| {
            let facts = CallFacts::new("read_file", &empty, Some(big.as_bytes()), c.rules());
            c.observe_call(&facts, false).stub
        })
        .collect();
    assert_eq!(stubs, [false, true, true]);
}
