//! Invariants of the guardrail controller over many random call sequences, for every profile
//! and with hard stops on and off.

use loopsim_engine::config::EngineConfig;
use loopsim_engine::guardrails::{
    Action, CallFacts, Controller, Decision, DecisionCode, GuardrailConfig,
};
use loopsim_engine::json::{self, Value};
use loopsim_engine::profile::ProfileName;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

const TOOLS: &[&str] = &[
    "read_file",
    "web_search",
    "terminal",
    "execute_code",
    "write_file",
    "process_manage",
    "delegate_task",
    "x_poll",
];

#[derive(Clone, Debug)]
enum Op {
    Before(&'static str, Value),
    After(&'static str, Value, Option<String>, Option<bool>),
}

fn random_ops(rng: &mut ChaCha8Rng, n: usize) -> Vec<Op> {
    (0..n)
        .map(|_| {
            let tool = TOOLS[rng.random_range(0..TOOLS.len())];
            let args =
                json::parse(format!(r#"{{"k":{}}}"#, rng.random_range(0..3)).as_bytes()).unwrap();
            if rng.random_bool(0.4) {
                Op::Before(tool, args)
            } else {
                let result = match rng.random_range(0..4) {
                    0 => None,
                    1 => Some(r#"{"error":"boom"}"#.to_string()),
                    2 => Some(format!(r#"{{"ok":{}}}"#, rng.random_range(0..2))),
                    _ => Some("x".repeat(600)),
                };
                let failed = match rng.random_range(0..3) {
                    0 => None,
                    1 => Some(true),
                    _ => Some(false),
                };
                Op::After(tool, args, result, failed)
            }
        })
        .collect()
}

fn apply(
    c: &mut Controller,
    op: &Op,
) -> (Decision, Option<loopsim_engine::guardrails::Observation>) {
    match op {
        Op::Before(t, a) => (c.before_call(t, a), None),
        Op::After(t, a, r, f) => {
            let facts = CallFacts::new(t, a, r.as_deref().map(str::as_bytes), c.rules());
            let failed = f.unwrap_or_else(|| c.classify(t, facts.result));
            let d = c.after_call_facts(&facts, failed);
            let o = c.observe_call(&facts, failed);
            (d, Some(o))
        }
    }
}

fn configs() -> Vec<EngineConfig> {
    let mut out = vec![];
    for p in ProfileName::ALL {
        for platform in [Some("cli"), Some("cron")] {
            let mut c = EngineConfig::new(p, platform);
            out.push(c.clone());
            c.guardrails = GuardrailConfig {
                hard_stop_enabled: true,
                no_progress_block_after: 2,
                exact_failure_block_after: 2,
                ..c.guardrails
            };
            out.push(c);
        }
    }
    out
}

#[test]
fn halting_decisions_always_arm_the_halt_and_it_sticks() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for cfg in configs() {
        for _ in 0..40 {
            let mut c = Controller::new(cfg.guardrails, cfg.rules);
            let mut armed = false;
            for op in random_ops(&mut rng, 60) {
                let (d, _) = apply(&mut c, &op);
                if d.action.halts() {
                    armed = true;
                    assert!(
                        c.halt_decision().is_some(),
                        "{:?} did not arm the halt",
                        d.code
                    );
                }
                if armed {
                    assert!(
                        c.halt_decision().is_some(),
                        "a recorded halt never disappears within a turn"
                    );
                }
                if !cfg.guardrails.hard_stop_enabled {
                    assert!(
                        matches!(d.action, Action::Allow | Action::Warn)
                            || matches!(
                                d.code,
                                DecisionCode::LoopWebSearchCap | DecisionCode::LoopSubagentCap
                            ),
                        "without hard stops only loop caps may block: {:?}",
                        d.code
                    );
                }
            }
        }
    }
}

#[test]
fn after_a_reset_the_controller_behaves_like_a_new_one() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for cfg in configs() {
        for _ in 0..20 {
            let first = random_ops(&mut rng, 50);
            let second = random_ops(&mut rng, 50);
            let mut used = Controller::new(cfg.guardrails, cfg.rules);
            for op in &first {
                apply(&mut used, op);
            }
            used.reset_for_turn();
            assert!(used.halt_decision().is_none());
            let mut fresh = Controller::new(cfg.guardrails, cfg.rules);
            for op in &second {
                assert_eq!(
                    apply(&mut used, op),
                    apply(&mut fresh, op),
                    "{:?}",
                    cfg.profile
                );
            }
        }
    }
}

#[test]
fn loop_caps_block_whether_or_not_hard_stops_are_on() {
    for hard in [false, true] {
        let mut cfg = EngineConfig::new(ProfileName::HermesMain, Some("cli"));
        cfg.guardrails.hard_stop_enabled = hard;
        cfg.guardrails.loop_caps.max_web_searches = 5;
        let mut c = Controller::new(cfg.guardrails, cfg.rules);
        let blocked = (0..8)
            .filter(|i| {
                let args = json::parse(format!(r#"{{"q":{i}}}"#).as_bytes()).unwrap();
                c.before_call("web_search", &args).code == DecisionCode::LoopWebSearchCap
            })
            .count();
        assert_eq!(blocked, 3, "hard stops {hard}");
    }
}
