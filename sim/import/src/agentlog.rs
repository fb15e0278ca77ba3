//! Per-call figures from Hermes's `agent.log`.
//!
//! After every model call with usage, Hermes logs one INFO line tagged with the session id:
//! the call's number in the session, prompt and completion tokens, latency, and cache reads
//! when there were any. Rotated logs (`agent.log.1`, ...) are read too.

use std::collections::BTreeMap;
use std::path::Path;

/// One logged model call.
#[derive(Clone, Debug, PartialEq)]
pub struct LoggedCall {
    /// Prompt tokens (cache reads and writes included).
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub latency_s: f64,
    pub cache_read_tokens: u64,
}

/// The session's logged calls by their number in the session (1-based).
///
/// Files are read oldest first (`agent.log.N` ... `agent.log.1`, `agent.log`). A session resumed
/// in a new process numbers its calls from 1 again; such a restart continues the numbering
/// after the calls before it, so the k-th call of the session is the k-th logged one.
pub fn read(path: &Path, session: &str) -> std::io::Result<BTreeMap<u64, LoggedCall>> {
    let name = path
        .file_name()
        .map_or("agent.log".into(), |n| n.to_string_lossy().into_owned());
    let mut files: Vec<std::path::PathBuf> = (1..=20)
        .rev()
        .map(|i| path.with_file_name(format!("{name}.{i}")))
        .filter(|p| p.exists())
        .collect();
    files.push(path.to_path_buf());
    let mut calls = BTreeMap::new();
    let (mut offset, mut last) = (0u64, 0u64);
    for f in files {
        let bytes = std::fs::read(&f)?;
        for line in String::from_utf8_lossy(&bytes).lines() {
            if let Some((n, c)) = parse_line(line, session) {
                if n <= last.saturating_sub(offset) {
                    offset = last;
                }
                last = n + offset;
                calls.insert(last, c);
            }
        }
    }
    Ok(calls)
}

/// Parses one line if it is this session's per-call line.
pub fn parse_line(line: &str, session: &str) -> Option<(u64, LoggedCall)> {
    let tag = format!(" [{session}] ");
    let at = line.find(&tag)?;
    let rest = &line[at + tag.len()..];
    let rest = &rest[rest.find("API call #")? + "API call #".len()..];
    let (n, rest) = rest.split_once(':')?;
    let n: u64 = n.trim().parse().ok()?;
    let mut input = None;
    let mut output = None;
    let mut latency = None;
    let mut cache = 0;
    for word in rest.split_whitespace() {
        if let Some(v) = word.strip_prefix("in=") {
            input = v.parse().ok();
        } else if let Some(v) = word.strip_prefix("out=") {
            output = v.parse().ok();
        } else if let Some(v) = word.strip_prefix("latency=") {
            latency = v.trim_end_matches('s').parse().ok();
        } else if let Some(v) = word.strip_prefix("cache=") {
            cache = v.split('/').next()?.parse().ok()?;
        }
    }
    Some((
        n,
        LoggedCall {
            input_tokens: input?,
            output_tokens: output?,
            latency_s: latency.filter(|l: &f64| l.is_finite() && *l >= 0.0)?,
            cache_read_tokens: cache,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_per_call_line_of_its_session_only() {
        let l = "2026-11-02 10:00:01,250 INFO [s-1] agent.conversation_loop: API call #7: model=m provider=p in=1200 out=80 total=1280 latency=9.4s cache=1100/1200 (92%)";
        let (n, c) = parse_line(l, "s-1").unwrap();
        assert_eq!(n, 7);
        assert_eq!(
            c,
            LoggedCall {
                input_tokens: 1200,
                output_tokens: 80,
                latency_s: 9.4,
                cache_read_tokens: 1100
            }
        );
        assert!(parse_line(l, "s-2").is_none());
        let no_cache = "2026-11-02 10:00:01,250 INFO [s-1] agent.conversation_loop: API call #8: model=m provider=p in=10 out=2 total=12 latency=0.5s";
        assert_eq!(parse_line(no_cache, "s-1").unwrap().1.cache_read_tokens, 0);
        assert!(parse_line("garbage [s-1] API call #x: in=1", "s-1").is_none());
    }

    #[test]
    fn rotated_files_and_a_resumed_session_number_calls_in_order() {
        let dir = std::env::temp_dir().join(format!("loopsim-agentlog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let line = |n: u64, input: u64| {
            format!(
                "t INFO [s] agent.conversation_loop: API call #{n}: in={input} out=1 total=1 latency=1.0s\n"
            )
        };
        // The older file has calls 1 and 2; the current one a resumed process's 1 and 2.
        std::fs::write(dir.join("agent.log.1"), line(1, 10) + &line(2, 20)).unwrap();
        std::fs::write(dir.join("agent.log"), line(1, 30) + &line(2, 40)).unwrap();
        let calls = read(&dir.join("agent.log"), "s").unwrap();
        let inputs: Vec<(u64, u64)> = calls.iter().map(|(k, c)| (*k, c.input_tokens)).collect();
        assert_eq!(inputs, vec![(1, 10), (2, 20), (3, 30), (4, 40)]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
