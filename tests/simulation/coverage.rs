//! Coverage marks: `check --coverage` counts how often the suite reached each guardrail code,
//! exit reason, refund site and recovery path; a scenario's `[expect] covers` claim fails
//! where its runs never reach the mark; a misspelled mark is bad input.

use crate::common;

use std::path::PathBuf;

use common::{loopsim_in, root};

fn scratch(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loopsim-coverage-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.toml")), text).unwrap();
    dir
}

/// The committed two-call cycle with its `[expect]` block's claim replaced.
fn two_call_cycle_claiming(claim: &str) -> String {
    let text = std::fs::read_to_string(root().join("scenarios/two-call-cycle.toml")).unwrap();
    let (head, tail) = text.split_once("[expect]\ncovers = [").unwrap();
    let rest = tail.split_once("]\n").unwrap().1;
    format!("{head}[expect]\ncovers = [\"{claim}\"]\n{rest}")
}

#[test]
fn the_suite_reaches_every_mark_it_claims_and_the_table_counts_them() {
    let o = loopsim_in(&root(), &["check", "--coverage", "--format", "json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["unmet"].as_array().unwrap().len(), 0);
    let rows = v["coverage"].as_array().unwrap();
    let row = |m: &str| rows.iter().find(|r| r["mark"] == m).unwrap().clone();
    // Every execute_code-only round of the spin-wait gives its iteration back.
    let refund = row("refund.execute_code_round");
    assert!(refund["hits"].as_u64().unwrap() > 100, "{refund}");
    assert!(
        refund["claimed_by"]
            .as_array()
            .unwrap()
            .contains(&"execute-code-spin-wait".into())
    );
    let cycle = row("decision.identical_cycle_halt");
    assert!(cycle["runs"].as_u64().unwrap() >= 3, "{cycle}");
    // A mark no scenario reaches is listed with zero, not left out.
    let never = row("exit.session_persistence_failed");
    assert_eq!(
        (never["runs"].as_u64(), never["hits"].as_u64()),
        (Some(0), Some(0))
    );
    let claimed = rows
        .iter()
        .filter(|r| !r["claimed_by"].as_array().unwrap().is_empty())
        .count();
    assert!(claimed >= 25, "{claimed} marks claimed");
}

#[test]
fn a_claim_no_run_reaches_fails_the_check() {
    let dir = scratch("claim", &two_call_cycle_claiming("child_timeout"));
    let o = loopsim_in(&dir, &["check", "claim.toml", "--coverage"]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("FAIL two-call-cycle seed 9 hermes-main: covers.child_timeout: expected reached, got 0 times"),
        "{out}"
    );
    assert!(
        out.contains("UNMET two-call-cycle claims child_timeout, which none of its runs reached"),
        "{out}"
    );
    assert!(
        out.contains("| child_timeout | 0 | 0 | two-call-cycle |"),
        "{out}"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("1 claimed coverage marks unreached"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_misspelled_mark_names_its_line_and_the_nearest_mark() {
    let dir = scratch(
        "typo",
        &two_call_cycle_claiming("decision.identical_cycle_hlt"),
    );
    let o = loopsim_in(&dir, &["check", "typo.toml"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("typo.toml:"), "{err}");
    assert!(err.contains("expect.covers[0]"), "{err}");
    assert!(
        err.contains("did you mean `decision.identical_cycle_halt`?"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
