//! `loopsim guard` reads its input in 256 KiB chunks and checks each chunk's whole lines to be
//! UTF-8 at once. These tests hold its answers and errors to the session's own line-by-line
//! reading (`GuardSession::handle_line`), on streams of several chunks whose multi-byte
//! characters straddle a chunk's end, with a bad byte past the first chunk, and with a last
//! line that has no newline.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use loopsim_engine::config::EngineConfig;
use loopsim_engine::guard_protocol::GuardSession;
use loopsim_engine::profile::ProfileName;

/// The CLI's read size.
const CHUNK: usize = 1 << 18;

/// A looping agent's calls with text of one to four bytes a character, about 1 MB.
fn stream() -> Vec<u8> {
    let words = [
        "plain",
        "café",
        "Ωmega",
        "日本語",
        "𝄞clef",
        "naïve\\u00e9",
        "x\\ud800y",
    ];
    let mut out = Vec::new();
    for i in 0..4_000usize {
        let w = words[i % words.len()];
        let v = words[(i / 7) % words.len()];
        let args = format!(
            "{{\"path\": \"/src/{w}/{}.rs\", \"note\": \"{v}\"}}",
            i % 13
        );
        let result = format!(
            "{{\\\"text\\\": \\\"{v} {w} {}\\\", \\\"ok\\\": true}}",
            i % 5
        );
        out.extend_from_slice(
            format!("{{\"op\":\"before\",\"tool\":\"read_file\",\"args\":{args}}}\n").as_bytes(),
        );
        out.extend_from_slice(
            format!(
                "{{\"op\":\"after\",\"tool\":\"read_file\",\"args\":{args},\"result\":\"{result}\"}}\n"
            )
            .as_bytes(),
        );
        if i % 97 == 96 {
            out.extend_from_slice(b"{\"op\":\"reset\"}\n");
        }
    }
    out
}

/// The answers line-by-line reading gives, and its error.
fn expected(input: &[u8]) -> (Vec<u8>, Option<String>) {
    let mut s = GuardSession::new(&EngineConfig::new(ProfileName::Hermes0_19_0, None));
    let mut out = Vec::new();
    let mut lines: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    if input.ends_with(b"\n") {
        lines.pop();
    }
    for line in lines {
        if let Err(e) = s.handle_line(line, &mut out) {
            return (out, Some(e.to_string()));
        }
    }
    (out, None)
}

fn guard_on_file(name: &str, input: &[u8]) -> Output {
    let dir = std::env::temp_dir().join(format!("loopsim-guard-chunks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path: PathBuf = dir.join(name);
    std::fs::write(&path, input).unwrap();
    // From a file, every read but the last fills the reader's whole chunk.
    let out = Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .args(["guard", "--profile", "hermes-0.19.0"])
        .stdin(File::open(&path).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    out
}

/// `input` with blank lines in front so that the multi-byte character nearest the first
/// chunk's end of `width` bytes is cut after its first byte.
fn straddling(input: &[u8], width: usize) -> Vec<u8> {
    let lead = |b: u8| match width {
        2 => (0xC2..=0xDF).contains(&b),
        3 => (0xE0..=0xEF).contains(&b),
        _ => (0xF0..=0xF4).contains(&b),
    };
    let start = input[..CHUNK - 1]
        .iter()
        .rposition(|&b| lead(b))
        .expect("a character of that width in the first chunk");
    // Shift so that its first byte is the chunk's last one.
    let shift = CHUNK - 1 - start;
    let mut out = vec![b' '; shift - 1];
    out.push(b'\n');
    out.extend_from_slice(input);
    assert_eq!(
        std::str::from_utf8(&out[..CHUNK]).unwrap_err().error_len(),
        None,
        "the chunk ends inside a character"
    );
    out
}

#[test]
fn answers_are_the_line_by_line_answers_across_chunk_ends() {
    let base = stream();
    assert!(base.len() > 3 * CHUNK, "{} bytes", base.len());
    for width in [2, 3, 4] {
        let input = straddling(&base, width);
        let (want, err) = expected(&input);
        assert_eq!(err, None);
        let o = guard_on_file("whole.jsonl", &input);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(o.stdout == want, "answers differ (width {width})");
    }
}

#[test]
fn a_bad_byte_past_the_first_chunk_is_named_with_its_line() {
    let mut input = stream();
    // A lone continuation byte inside a string, in the third chunk.
    let at = input[2 * CHUNK + 100..]
        .windows(5)
        .position(|w| w == b"plain")
        .map(|i| 2 * CHUNK + 100 + i)
        .unwrap();
    input[at + 2] = 0x80;
    let (want, err) = expected(&input);
    let err = err.expect("the line-by-line reading refuses it");
    assert!(err.contains("invalid UTF-8"), "{err}");
    let o = guard_on_file("bad.jsonl", &input);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains(&err), "{stderr} (want {err})");
    assert!(o.stdout == want, "the answers before the bad line differ");
    assert!(
        want.len() > CHUNK,
        "answers before it: {} bytes",
        want.len()
    );
}

#[test]
fn a_last_line_without_a_newline_is_answered() {
    let mut input = stream();
    input.truncate(input.len() - 1);
    assert!(!input.ends_with(b"\n"));
    let (want, err) = expected(&input);
    assert_eq!(err, None);
    let o = guard_on_file("open-end.jsonl", &input);
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stdout == want, "answers differ");
    // The last line's character past the checked lines still counts: a bad one is refused.
    let mut bad = input.clone();
    let last = bad.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let at = last + bad[last..].windows(4).position(|w| w == b"tool").unwrap();
    bad[at] = 0xFF;
    let o = guard_on_file("open-end-bad.jsonl", &bad);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("UTF-8"));
}

#[test]
fn a_closed_stdout_ends_the_guard_quietly() {
    use std::io::{Read, Write};
    let input = stream();
    let mut child = Command::new(env!("CARGO_BIN_EXE_loopsim"))
        .args(["guard", "--profile", "hermes-0.19.0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The guard may stop reading once its answers have nowhere to go: the write may fail.
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    // Read some answers (as `head` does), then close the pipe.
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 4096];
    out.read_exact(&mut first).unwrap();
    assert!(first.starts_with(b"{\"action\":\"allow\""));
    drop(out);
    let o = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}
