//! The scenario file an imported session becomes.
//!
//! It is an ordinary loopsim scenario a person can read and edit: one script step per model
//! call with its recorded figures, one `calls` entry per tool call with its exact arguments,
//! result and duration, and the recorded guardrail decision where there was one. `recorded =
//! true` makes a run as written replay those decisions; `--profile` or `--config` replaces
//! them with an engine's.

use std::fmt::Write as _;

use crate::session::{ModelCall, Rebuilt, TurnEnd};

/// What the writer needs besides the calls.
pub struct Header<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub provenance: &'a str,
    pub label: &'a str,
    pub profile: &'a str,
    pub platform: Option<&'a str>,
    /// The run's safety-net horizon: past the session's whole span.
    pub horizon_s: f64,
    /// `price = { ... }` text, or `{ unknown = true }`.
    pub price: String,
    pub database: &'a str,
    pub session: &'a str,
    pub model: Option<&'a str>,
    pub estimated: &'a [String],
    pub note: &'a str,
}

/// A TOML string value.
fn s(x: &str) -> String {
    toml::Value::String(x.to_string()).to_string()
}

/// A TOML key: a one-line basic string, whatever the name holds.
fn key(x: &str) -> String {
    let mut o = String::from("\"");
    for c in x.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(o, "\\u{:04X}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A float TOML keeps exactly (microsecond resolution, as the simulator's clock).
fn secs(x: f64) -> String {
    let us = (x.max(0.0) * 1e6).round() / 1e6;
    format!("{us:?}")
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// The scenario text.
pub fn render(h: &Header<'_>, r: &Rebuilt) -> String {
    let mut t = String::new();
    let calls = || r.turns.iter().flat_map(|t| &t.calls);
    let _ = writeln!(
        t,
        "# Imported by `loopsim import`. Run it as written to replay the session with its own\n\
         # guardrail decisions; add --profile or --config to see what another engine would do.\n\
         # Figures marked \"estimated\" in [source] were not recorded per call."
    );
    let _ = writeln!(t, "name = {}", s(h.name));
    let _ = writeln!(t, "description = {}", s(h.description));
    let _ = writeln!(t, "provenance = {}", s(h.provenance));
    let _ = writeln!(
        t,
        "label = {}   # \"healthy\" if the session should never have been stopped",
        s(h.label)
    );
    let _ = writeln!(t, "profile = {}", s(h.profile));
    if let Some(p) = h.platform {
        let _ = writeln!(t, "platform = {}", s(p));
    }
    let _ = writeln!(t, "recorded = true");
    let _ = writeln!(t);
    let _ = writeln!(t, "[source]");
    let _ = writeln!(t, "kind = \"hermes-state-db\"");
    let _ = writeln!(t, "database = {}", s(h.database));
    let _ = writeln!(t, "session = {}", s(h.session));
    if let Some(m) = h.model {
        let _ = writeln!(t, "model = {}", s(m));
    }
    let est: Vec<String> = h.estimated.iter().map(|e| s(e)).collect();
    let _ = writeln!(t, "estimated = [{}]", est.join(", "));
    let _ = writeln!(t, "note = {}", s(h.note));
    let _ = writeln!(t, "\n[report]\nhorizon_s = {}", secs(h.horizon_s.ceil()));
    let _ = writeln!(t, "\n[models.main]");
    let _ = writeln!(
        t,
        "latency_s = {}   # used only for calls the record does not have",
        secs(mean(calls().map(|c| c.latency_s)))
    );
    let _ = writeln!(
        t,
        "output_tokens = {}",
        mean(calls().map(|c| c.output_tokens as f64)).round()
    );
    let _ = writeln!(t, "price = {}", h.price);
    let mut tools: Vec<&str> = calls()
        .flat_map(|c| &c.calls)
        .map(|c| c.tool.as_str())
        .collect();
    tools.sort_unstable();
    tools.dedup();
    for tool in tools {
        let _ = writeln!(
            t,
            "\n[tools.{}]\nlatency_s = 0\nresult_tokens = 0",
            key(tool)
        );
    }
    let _ = writeln!(t, "\n[agents.parent]\nmodel = \"main\"");
    expectations(&mut t, r);
    let mut k = 0usize;
    for (n, turn) in r.turns.iter().enumerate() {
        let table = if n == 0 {
            "agents.parent.script".to_string()
        } else {
            let _ = writeln!(
                t,
                "\n[[agents.parent.turns]]   # user turn {}\nat_s = {}",
                n + 1,
                secs(turn.at_s)
            );
            "agents.parent.turns.script".to_string()
        };
        for c in &turn.calls {
            k += 1;
            step(&mut t, &table, k, c);
        }
        if turn.end != TurnEnd::Answer {
            let why = match turn.end {
                TurnEnd::GuardrailStop => {
                    "the record has no call after the guardrail stop: a laxer engine ends the turn here"
                }
                _ => "the record ends after a tool round: the user stopped the turn",
            };
            let _ = writeln!(t, "\n[[{table}]]   # {why}\nuser_stop = true");
        }
    }
    t
}

/// `[expect]`: the session as recorded, so `loopsim check` proves the replay faithful.
fn expectations(t: &mut String, r: &Rebuilt) {
    let calls = r.model_calls();
    let last = r.turns.last().map(|t| t.end);
    let exit = match last {
        Some(TurnEnd::Answer) => "text_response(finish_reason=stop)",
        Some(TurnEnd::GuardrailStop) => "guardrail_halt",
        _ => "interrupted_by_user",
    };
    let stop = r
        .turns
        .iter()
        .flat_map(|t| &t.calls)
        .flat_map(|c| &c.calls)
        .find_map(|c| c.decision.as_ref().filter(|d| d.action.halts()));
    let _ = writeln!(
        t,
        "\n[expect]   # as recorded: `loopsim check` on this file checks the replay"
    );
    let _ = writeln!(t, "exit_reason = {}", s(exit));
    let _ = writeln!(t, "parent_calls_min = {calls}\nparent_calls_max = {calls}");
    match stop {
        Some(d) => {
            let _ = writeln!(t, "stop_code = {}", s(d.code.as_str()));
        }
        None => {
            let _ = writeln!(t, "no_hard_stop = true");
        }
    }
}

fn step(t: &mut String, table: &str, k: usize, c: &ModelCall) {
    let origin = if c.from_log { "agent.log" } else { "estimated" };
    let _ = writeln!(t, "\n[[{table}]]   # call {k} ({origin})");
    let _ = writeln!(t, "latency_s = {}", secs(c.latency_s));
    let _ = writeln!(t, "input_tokens = {}", c.input_tokens);
    let _ = writeln!(t, "cache_read_tokens = {}", c.cache_read_tokens);
    if c.cache_write_tokens > 0 {
        let _ = writeln!(t, "cache_write_tokens = {}", c.cache_write_tokens);
    }
    let _ = writeln!(t, "output_tokens = {}", c.output_tokens);
    if let Some(a) = &c.answer {
        let _ = writeln!(t, "answer = {}", s(a));
        return;
    }
    for call in &c.calls {
        let _ = writeln!(t, "[[{table}.calls]]");
        let _ = writeln!(t, "tool = {}", s(&call.tool));
        if let Some(id) = &call.id {
            let _ = writeln!(t, "id = {}", s(id));
        }
        let _ = writeln!(t, "args_json = {}", s(&call.args_json));
        let _ = writeln!(t, "result = {}", s(&call.result));
        let _ = writeln!(t, "fail = {}", call.failed);
        let _ = writeln!(t, "latency_s = {}", secs(call.latency_s));
        if let Some(n) = &call.notice {
            let _ = writeln!(
                t,
                "notice = {{ kind = {}, count = {}, period = {} }}",
                s(n.kind.as_str()),
                n.count,
                n.period
            );
        }
        if let Some(d) = &call.decision {
            let _ = writeln!(
                t,
                "guardrail = {{ action = {}, code = {}, count = {} }}",
                s(d.action.as_str()),
                s(d.code.as_str()),
                d.count
            );
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn odd_tool_names_make_valid_keys() {
        for name in [
            "a\"b'c",
            "line\nbreak",
            "cr\r\n",
            "del\u{7f}",
            "back\\slash",
            "é ü",
        ] {
            let text = format!("[tools.{}]\nx = 1\n", super::key(name));
            let v: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{name:?}: {e}"));
            assert!(
                v["tools"].as_table().unwrap().contains_key(name),
                "{name:?}"
            );
        }
    }
}
