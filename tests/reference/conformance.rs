//! Conformance of `loopsim guard` with Hermes's Python guardrail controller.
//!
//! 1. Recorded vectors (`traces/conformance/`) from the newest Hermes controller, for the
//!    profiles that cannot be pip-installed: every answer must be byte-identical.
//! 2. Live: thousands of generated requests go to both the real `hermes-agent==0.19.0`
//!    package and `loopsim guard --profile hermes-0.19.0`; zero differences allowed.
//!    The package is installed into `target/hermes-venv` on first use (or taken from
//!    `LOOPSIM_PYTHON`). Without Python or PyPI the live test is skipped with a loud message,
//!    unless `LOOPSIM_REQUIRE_HERMES=1` (CI sets it), where it fails instead.
//! 3. Malformed lines (missing fields, NaN/Infinity, bytes that are not UTF-8): the Python
//!    driver and `loopsim guard` refuse the same ones with exit code 2.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{Venv, python_or_skip, root};

fn run_guard(args: &[&str], input: &[u8]) -> Vec<u8> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .arg("guard")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start loopsim");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "loopsim guard failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn first_difference(want: &[u8], got: &[u8], input: &[u8]) -> Option<String> {
    let w: Vec<&[u8]> = want.split(|&b| b == b'\n').collect();
    let g: Vec<&[u8]> = got.split(|&b| b == b'\n').collect();
    let i: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    for n in 0..w.len().max(g.len()) {
        if w.get(n) != g.get(n) {
            return Some(format!(
                "answer {} differs\n  request: {}\n  hermes:  {}\n  loopsim: {}",
                n + 1,
                String::from_utf8_lossy(i.get(n).unwrap_or(&&b""[..])),
                String::from_utf8_lossy(w.get(n).unwrap_or(&&b"<none>"[..])),
                String::from_utf8_lossy(g.get(n).unwrap_or(&&b"<none>"[..])),
            ));
        }
    }
    None
}

/// A header field's raw JSON text (the header is flat apart from the config mapping).
fn header_field<'a>(header: &'a str, key: &str) -> &'a str {
    let start = header
        .find(&format!("\"{key}\":"))
        .unwrap_or_else(|| panic!("header lacks {key}"))
        + key.len()
        + 3;
    let rest = &header[start..];
    if rest.starts_with('{') {
        let mut depth = 0;
        for (i, c) in rest.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return &rest[..=i];
                    }
                }
                _ => {}
            }
        }
    }
    let end = rest.find([',', '}']).unwrap();
    &rest[..end]
}

#[test]
fn recorded_vectors_of_the_newest_controller_match_byte_for_byte() {
    let dir = root().join("traces/conformance");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 5,
        "expected the committed vector files in {}",
        dir.display()
    );
    let mut total = 0;
    for file in files {
        let text = std::fs::read(&file).unwrap();
        let mut lines = text.split(|&b| b == b'\n').filter(|l| !l.is_empty());
        let header = String::from_utf8(lines.next().unwrap().to_vec()).unwrap();
        let (mut input, mut want) = (Vec::new(), Vec::new());
        for line in lines {
            let split = line
                .windows(7)
                .rposition(|w| w == b",\"out\":")
                .expect("an out field");
            input.extend_from_slice(&line[6..split]);
            input.push(b'\n');
            want.extend_from_slice(&line[split + 7..line.len() - 1]);
            want.push(b'\n');
            total += 1;
        }
        let profile = header_field(&header, "profile")
            .trim_matches('"')
            .to_string();
        let platform = header_field(&header, "platform")
            .trim_matches('"')
            .to_string();
        let cfg = std::env::temp_dir().join(format!(
            "loopsim-vec-{}.yaml",
            file.file_stem().unwrap().to_string_lossy()
        ));
        std::fs::write(
            &cfg,
            format!(
                "tool_loop_guardrails: {}\n",
                header_field(&header, "tool_loop_guardrails")
            ),
        )
        .unwrap();
        let mut args = vec!["--profile", &profile, "--config", cfg.to_str().unwrap()];
        if platform != "null" {
            args.extend(["--platform", &platform]);
        }
        let got = run_guard(&args, &input);
        if let Some(diff) = first_difference(&want, &got, &input) {
            panic!("{}: {diff}", file.display());
        }
    }
    assert!(total >= 15_000, "only {total} vectors");
}

fn python_output(py: &Path, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
    let mut child = Command::new(py)
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.unwrap_or_default().to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn live_hermes_0_19_0_controller_agrees_on_generated_streams() {
    let Some(py) = python_or_skip(Venv::Hermes, "live Hermes conformance") else {
        return;
    };
    let configs = [
        ("default", ""),
        (
            "hard-stops",
            "tool_loop_guardrails:\n  hard_stop_enabled: yes\n  warn_after:\n    exact_failure: 3\n  no_progress_block_after: '2'\n  same_tool_failure_halt_after: 4\n",
        ),
        (
            "warnings-off",
            "tool_loop_guardrails:\n  warnings_enabled: off\n  hard_stop_enabled: 'on'\n  hard_stop_after:\n    exact_failure: 2\n",
        ),
    ];
    let mut total = 0;
    for (seed, (name, yaml)) in [11, 12, 13].into_iter().zip(configs) {
        let seed = seed.to_string();
        let input = python_output(
            &py,
            &[
                "tests/conformance/gen_sequences.py",
                "--seed",
                &seed,
                "--lines",
                "6000",
                "--no-spawn",
            ],
            None,
        );
        let cfg = std::env::temp_dir().join(format!("loopsim-live-{name}.yaml"));
        std::fs::write(&cfg, yaml).unwrap();
        let cfg_s = cfg.to_str().unwrap();
        let want = python_output(
            &py,
            &["tests/conformance/hermes_driver.py", "--config", cfg_s],
            Some(&input),
        );
        let got = run_guard(&["--profile", "hermes-0.19.0", "--config", cfg_s], &input);
        if let Some(diff) = first_difference(&want, &got, &input) {
            panic!("config {name}, seed {seed}: {diff}");
        }
        total += want.iter().filter(|&&b| b == b'\n').count();
    }
    assert!(total >= 18_000, "only {total} answers compared");
    eprintln!("live Hermes 0.19.0 conformance: {total} answers identical");
}

/// Exit code, stdout and stderr of `cmd` fed `input`.
fn outcome(cmd: &mut Command, input: &[u8]) -> (Option<i32>, Vec<u8>, String) {
    let mut child = cmd
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    (
        out.status.code(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn hermes_driver_and_loopsim_guard_refuse_the_same_lines() {
    let Some(py) = python_or_skip(Venv::Hermes, "the malformed-line conformance test") else {
        return;
    };
    let refused: [&[u8]; 9] = [
        br#"{"op":"after","tool":"t","args":{}}"#,
        br#"{"op":"after","tool":"t","result":null}"#,
        br#"{"op":"before","tool":"t"}"#,
        br#"{"op":"before","tool":"t","args":{"x":NaN}}"#,
        br#"{"op":"before","tool":"t","args":[-Infinity]}"#,
        br#"{"op":"before","tool":"t","args":Infinity}"#,
        b"{\"op\":\"before\",\"tool\":\"t\",\"args\":\"\xfe\"}",
        b"{\"op\":\"before\",\"tool\":\"t\",\"args\":\"\xed\xa0\x80\"}",
        br#"{"op":"after","tool":"t","args":{},"result":null,"tool_call_id":null}"#,
    ];
    let accepted: [&[u8]; 3] = [
        b"\x0b\x0c \t\r",
        br#"{"op":"before","tool":"t","args":"\ud800"}"#,
        br#"{"op":"after","tool":"t","args":{},"result":"[NaN, Infinity]"}"#,
    ];
    for (line, ok) in refused
        .iter()
        .map(|l| (l, false))
        .chain(accepted.iter().map(|l| (l, true)))
    {
        let mut input = b"{\"op\":\"reset\"}\n".to_vec();
        input.extend_from_slice(line);
        input.push(b'\n');
        let shown = String::from_utf8_lossy(line);
        let hermes = outcome(
            Command::new(&py).arg("tests/conformance/hermes_driver.py"),
            &input,
        );
        let ours = outcome(
            Command::new(env!("CARGO_BIN_EXE_loopsim")).args([
                "guard",
                "--profile",
                "hermes-0.19.0",
            ]),
            &input,
        );
        let want = if ok { Some(0) } else { Some(2) };
        assert_eq!(hermes.0, want, "driver on {shown}: {}", hermes.2);
        assert_eq!(ours.0, want, "loopsim on {shown}: {}", ours.2);
        assert_eq!(hermes.1, ours.1, "answers to {shown}");
        if !ok {
            assert!(ours.2.contains("line 2: "), "{shown}: {}", ours.2);
        }
    }
}

/// Floats in arguments hash as Python prints them (`repr`), ties between two shortest
/// spellings included: Python rounds the last digit to even there, where Rust's own
/// formatting rounds up (1238030092324805.25 is `...805.2` to Python).
#[test]
fn live_hermes_0_19_0_hashes_floats_as_python_prints_them() {
    use rand::rngs::ChaCha8Rng;
    use rand::{RngExt, SeedableRng};
    let Some(py) = python_or_skip(Venv::Hermes, "the float conformance test") else {
        return;
    };
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut input = Vec::new();
    let mut ties = 0;
    for i in 0..6000u64 {
        let f = match i % 3 {
            0 => f64::from_bits(rng.random()),
            // Quarters between 2^50 and 2^53, where the shortest spellings can tie.
            1 => (rng.random_range(1u64 << 52..1 << 55) as f64) / 4.0,
            _ => 10f64.powi(rng.random_range(-330..310)) * rng.random_range(1.0..10.0),
        };
        if !f.is_finite() {
            continue;
        }
        // The significant digits of a spelling: `-1.25e+07` and `12500000.0` give `125`.
        let digits = |s: &str| -> String {
            let m = s.split(['e', 'E']).next().unwrap();
            let d: String = m.chars().filter(char::is_ascii_digit).collect();
            d.trim_start_matches('0').trim_end_matches('0').to_string()
        };
        if digits(&format!("{f:e}")) != digits(&loopsim_engine::json::float_repr(f)) {
            ties += 1;
        }
        // Any spelling that reads back as `f` will do: Rust's shortest.
        writeln!(
            input,
            r#"{{"op":"before","tool":"t","args":{{"x":{f:e},"n":[{f:?}]}}}}"#
        )
        .unwrap();
    }
    let want = python_output(&py, &["tests/conformance/hermes_driver.py"], Some(&input));
    let got = run_guard(&["--profile", "hermes-0.19.0"], &input);
    if let Some(diff) = first_difference(&want, &got, &input) {
        panic!("{diff}");
    }
    let answers = want.iter().filter(|&&b| b == b'\n').count();
    assert!(answers >= 5000, "only {answers} answers");
    assert!(
        ties > 50,
        "only {ties} floats whose shortest spellings tie were drawn"
    );
    eprintln!("floats: {answers} answers identical, {ties} with tied shortest spellings");
}
