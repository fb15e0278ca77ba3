//! The `loopsim` binary: exit codes and error messages on bad input.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn loopsim(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn loopsim_bytes(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn guard_stops_at_a_malformed_line_with_its_number() {
    let o = loopsim(
        &["guard"],
        "{\"op\":\"reset\"}\n{\"op\":\"before\",\"tool\":\"read_file\",\"args\":{}}\n{\"op\":\"after\"}\n{\"op\":\"reset\"}\n",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("line 3: missing field `tool`"),
        "{}",
        stderr(&o)
    );
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        out.lines().count(),
        2,
        "answers before the bad line stay, whole: {out}"
    );
    assert!(out.ends_with('\n'));
}

#[test]
fn guard_refuses_lines_that_are_not_strict_json_or_lack_a_field() {
    let before = "{\"op\":\"before\",\"tool\":\"t\",\"args\":{}}\n";
    for (line, want) in [
        (
            &b"{\"op\":\"after\",\"tool\":\"t\",\"args\":{}}"[..],
            "line 2: missing field `result` (null is allowed)",
        ),
        (
            b"{\"op\":\"after\",\"tool\":\"t\",\"result\":null}",
            "line 2: missing field `args`",
        ),
        (
            b"{\"op\":\"before\",\"tool\":\"t\"}",
            "line 2: missing field `args`",
        ),
        (
            b"{\"op\":\"before\",\"tool\":\"t\",\"args\":{\"x\":NaN}}",
            "line 2: not JSON: invalid JSON at byte 38: NaN is not JSON",
        ),
        (
            b"{\"op\":\"before\",\"tool\":\"t\",\"args\":[-Infinity]}",
            "line 2: not JSON: invalid JSON at byte 34: -Infinity is not JSON",
        ),
        (
            b"{\"op\":\"before\",\"tool\":\"t\",\"args\":\"\xfe\"}",
            "line 2: not JSON: invalid JSON at byte 34: invalid UTF-8 in a string",
        ),
    ] {
        let mut input = before.as_bytes().to_vec();
        input.extend_from_slice(line);
        input.extend_from_slice(b"\n{\"op\":\"reset\"}\n");
        let o = loopsim_bytes(&["guard"], &input);
        let shown = String::from_utf8_lossy(line);
        assert_eq!(o.status.code(), Some(2), "{shown}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{shown}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
        assert_eq!(o.stdout.iter().filter(|&&b| b == b'\n').count(), 1);
    }
}

#[test]
fn unknown_profile_is_a_usage_error() {
    let o = loopsim(&["guard", "--profile", "hermes-9"], "");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("invalid value 'hermes-9' for '--profile")
            && stderr(&o).contains("a similar value exists: 'hermes-0.19.0'"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn config_errors_name_the_file_and_line() {
    let dir = std::env::temp_dir().join(format!("loopsim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, "agent:\n  max_turns: [1,\n").unwrap();
    let o = loopsim(&["guard", "--config", bad.to_str().unwrap()], "");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!("{}:", bad.display())),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("invalid YAML"), "{}", stderr(&o));

    let missing = dir.join("missing.yaml");
    let o = loopsim(&["guard", "--config", missing.to_str().unwrap()], "");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!("{}: cannot read", missing.display())),
        "{}",
        stderr(&o)
    );

    let junk = dir.join("junk.yaml");
    std::fs::write(&junk, "tool_loop_guardrails:\n  hard_stop_enabled: true\n  warn_after:\n    exact_failure: lots\n").unwrap();
    let o = loopsim(
        &["guard", "--config", junk.to_str().unwrap()],
        "{\"op\":\"reset\"}\n",
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "Hermes falls back to the default, so do we"
    );
    assert!(
        stderr(&o).contains(":4: `tool_loop_guardrails.warn_after.exact_failure`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_guard_line_without_an_end_is_refused_at_its_limit() {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .arg("guard")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // loopsim stops reading at its limit, so the write may end early: that is the point.
    let _ = stdin.write_all(&vec![b'a'; 65 << 20]);
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("stdin: line 1: longer than 64 MiB"),
        "{}",
        stderr(&o)
    );
}

/// A client that sends one request and waits for its answer (a coprocess) gets each answer
/// before it sends the next request; the guard is killed if an answer never comes.
#[test]
fn guard_answers_a_coprocess_line_by_line() {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::mpsc;
    use std::time::Duration;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .args(["guard", "--profile", "hermes-0.19.0"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let before = r#"{"op":"before","tool":"web_search","args":{"q":"x"}}"#;
    let after = r#"{"op":"after","tool":"web_search","args":{"q":"x"},"result":"Error: boom","failed":true}"#;
    let mut answers = Vec::new();
    for request in [before, after, before, after, before] {
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(answer) => answers.push(answer),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no answer to request {} within 20 s", answers.len() + 1);
            }
        }
    }
    drop(stdin);
    let status = child.wait().unwrap();
    reader.join().unwrap();
    assert!(status.success());
    assert_eq!(answers.len(), 5);
    assert!(
        answers[0].starts_with(r#"{"action":"allow","code":"allow","count":0,"#),
        "{}",
        answers[0]
    );
    assert!(answers[3].contains(r#""count":2"#), "{}", answers[3]);
}
