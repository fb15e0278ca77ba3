//! Where a Hermes compaction cuts a conversation: the engine's
//! [`loopsim_engine::turn::compaction::plan`] against Hermes 0.19.0's own `ContextCompressor`
//! (`tests/conformance/compaction_driver.py`) on thousands of generated conversations.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{hermes_live_python_or_skip, root};
use loopsim_engine::turn::compaction::{Message, Plan, Role, plan};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};

/// A conversation as agents make them: a task, rounds of calls and results, now and then a
/// reply with text, a new user message or (after a compaction) an earlier summary.
fn conversation(rng: &mut ChaCha8Rng, made: u32) -> Vec<Message> {
    let big = |rng: &mut ChaCha8Rng| match rng.random_range(0..4) {
        0 => rng.random_range(20..60),
        1 => rng.random_range(60..600),
        2 => rng.random_range(600..4_000),
        _ => rng.random_range(4_000..12_000),
    };
    let mut m = vec![Message::user(big(rng))];
    let rounds = rng.random_range(0..30);
    let summary_at = (made > 0).then(|| rng.random_range(0..=rounds));
    for r in 0..rounds {
        if summary_at == Some(r) {
            m.push(Message::summary(rng.random_range(600..4_000)));
        }
        match rng.random_range(0..10) {
            0 => m.push(Message::text(big(rng))),
            1 => m.push(Message::user(big(rng))),
            _ => {
                m.push(Message::calls(rng.random_range(40..400)));
                for _ in 0..rng.random_range(1..4) {
                    let t = big(rng);
                    m.push(Message::tool(t).with_note(note(t)));
                }
            }
        }
    }
    m
}

/// The note Hermes prunes the driver's results to: they are `read_file` results with no
/// readable path, of `4 * (tokens - 10)` characters.
fn note(tokens: u64) -> u64 {
    let chars = 4 * (tokens - 10);
    let mut digits = chars.to_string();
    let mut i = digits.len();
    while i > 3 {
        i -= 3;
        digits.insert(i, ',');
    }
    let text = format!("[read_file] read ? from line 1 ({digits} chars)");
    text.len() as u64 / 4 + 10
}

fn role_name(r: Role) -> &'static str {
    match r {
        Role::User => "user",
        Role::Assistant { calls: true, .. } => "calls",
        Role::Assistant { .. } => "text",
        Role::Tool => "tool",
        Role::Summary => "summary",
    }
}

#[test]
fn live_hermes_0_19_0_cuts_conversations_where_the_engine_does() {
    let Some(py) = hermes_live_python_or_skip("the compaction conformance test") else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    let mut cases = Vec::new();
    let mut input = Vec::new();
    for _ in 0..3_000 {
        let made = rng.random_range(0..3);
        let budget = [2_000, 10_880, 20_000, 40_000][rng.random_range(0..4)];
        let msgs = conversation(&mut rng, made);
        let line = json!({
            "messages": msgs.iter().map(|m| json!({"role": role_name(m.role), "tokens": m.tokens})).collect::<Vec<_>>(),
            "made": made,
            "tail_budget": budget,
        });
        writeln!(input, "{line}").unwrap();
        cases.push((msgs, made, budget));
    }
    let mut child = Command::new(&py)
        .arg("tests/conformance/compaction_driver.py")
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), cases.len());
    let (mut nothing, mut pruned) = (0, 0);
    for (i, ((msgs, made, budget), want)) in cases.iter().zip(&answers).enumerate() {
        let got = match plan(msgs, *made, *budget) {
            Plan::Nothing => {
                nothing += 1;
                json!({"plan": "nothing"})
            }
            Plan::Summarise {
                pruned: p,
                start,
                end,
            } => {
                let changed: Vec<usize> = (0..msgs.len())
                    .filter(|&j| p[j].tokens != msgs[j].tokens)
                    .collect();
                pruned += usize::from(!changed.is_empty());
                json!({"start": start, "end": end, "pruned": changed})
            }
        };
        assert_eq!(
            &got, want,
            "case {i}: made {made}, tail budget {budget}, {msgs:?}"
        );
    }
    // The generated cases reach every branch that matters: nothing to do, and pruning.
    assert!(
        nothing > 100 && pruned > 300,
        "{nothing} left alone, {pruned} pruned"
    );
}
