//! The guardrail controller over JSON lines (`loopsim guard`): the conformance interface.
//! See `docs/guard-protocol.md`. Pure: it turns request bytes into answer bytes.

mod recent;
mod request;

use std::io::Write as _;

use crate::config::EngineConfig;
use crate::guardrails::{
    Action, CallFacts, Controller, Decision, DecisionCode, subagent_spawn_count,
};
use crate::hash::{Hash, Signature};
use crate::json::{self, Value};
use crate::tool_name::ToolName;
use request::{Call, Op, RequestReader};

/// A request line that does not follow the protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct RequestError {
    pub line: usize,
    pub message: String,
}

/// A request line as its reader has it: text already known to be UTF-8 (a reader that checks
/// its input a block of lines at a time, which is cheaper than line by line), or bytes the
/// session checks itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line<'a> {
    Text(&'a str),
    Bytes(&'a [u8]),
}

impl<'a> Line<'a> {
    pub fn as_bytes(self) -> &'a [u8] {
        match self {
            Line::Text(t) => t.as_bytes(),
            Line::Bytes(b) => b,
        }
    }
}

/// One controller answering a stream of requests.
#[derive(Debug, Clone)]
pub struct GuardSession {
    controller: Controller,
    line: usize,
    reader: RequestReader,
    /// The last tool name met: a call's `after` names its `before`'s tool.
    last_tool: Option<ToolName>,
    hex: LastHex,
    /// Calls read without a tree (off only to test the two paths against each other).
    fast: bool,
}

/// The last hash printed, in hex: an `after` prints its `before`'s arguments hash again.
#[derive(Debug, Clone)]
struct LastHex {
    hash: Option<Hash>,
    hex: [u8; 64],
}

impl Default for LastHex {
    fn default() -> Self {
        LastHex {
            hash: None,
            hex: [b'0'; 64],
        }
    }
}

impl LastHex {
    fn of(&mut self, h: Hash) -> &[u8; 64] {
        if self.hash != Some(h) {
            self.hex = h.hex_bytes();
            self.hash = Some(h);
        }
        &self.hex
    }
}

impl GuardSession {
    pub fn new(config: &EngineConfig) -> Self {
        GuardSession {
            controller: Controller::new(config.guardrails, config.rules),
            line: 0,
            reader: RequestReader::default(),
            last_tool: None,
            hex: LastHex::default(),
            fast: true,
        }
    }

    /// The same session reading every line through the tree path: the reference the fast
    /// path is tested against.
    #[doc(hidden)]
    pub fn tree_only(mut self) -> Self {
        self.fast = false;
        self
    }

    pub fn controller(&self) -> &Controller {
        &self.controller
    }

    fn err(&self, message: impl Into<String>) -> RequestError {
        RequestError {
            line: self.line,
            message: message.into(),
        }
    }

    /// Handles one line, appending the answer (with its newline) to `out`. Blank lines (ASCII
    /// whitespace only, as Python's `bytes.strip` sees it) are skipped and answer nothing.
    pub fn handle_line(&mut self, line: &[u8], out: &mut Vec<u8>) -> Result<(), RequestError> {
        self.handle(Line::Bytes(line), out)
    }

    /// [`GuardSession::handle_line`] on a line its reader has checked to be UTF-8.
    pub fn handle_text(&mut self, line: &str, out: &mut Vec<u8>) -> Result<(), RequestError> {
        self.handle(Line::Text(line), out)
    }

    /// Handles a line as [`GuardSession::handle_line`] does, bytes or checked text.
    pub fn handle(&mut self, line: Line<'_>, out: &mut Vec<u8>) -> Result<(), RequestError> {
        self.line += 1;
        if line
            .as_bytes()
            .iter()
            .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c'))
        {
            return Ok(());
        }
        // Most lines are calls: read without a tree. Anything else takes the tree below.
        if self.fast
            && let Some(call) = self.reader.read(line)
            && let Some(tool) = match &self.last_tool {
                Some(t) if t.as_bytes() == call.tool => Some(t.clone()),
                _ => ToolName::from_bytes(call.tool),
            }
        {
            self.last_tool = Some(tool.clone());
            let recent = call.recent;
            let (d, obs, hash) = answer(&mut self.controller, tool, call);
            if let (Some((f, None)), Some(h)) = (recent, hash) {
                self.reader.remember_hash(f, d.signature.tool.as_bytes(), h);
            }
            self.write_decision(&d, obs, out);
            return Ok(());
        }
        // Strict: NaN and Infinity are not JSON, and the line must be UTF-8. (Result text is
        // parsed later the lenient way, as Hermes's json.loads reads it.)
        let line = line.as_bytes();
        let req = json::parse_strict(line).map_err(|e| self.err(format!("not JSON: {e}")))?;
        if !req.is_object() {
            return Err(self.err("a request must be a JSON object"));
        }
        let op = match req.get("op") {
            Some(Value::Str(s)) => s.as_slice(),
            Some(_) => return Err(self.err("field `op`: expected a string")),
            None => return Err(self.err("missing field `op`")),
        };
        match op {
            b"reset" => {
                self.controller.reset_for_turn();
                out.extend_from_slice(b"{\"op\":\"reset\"}\n");
            }
            b"spawn" => {
                let n = match req.get("count") {
                    Some(Value::Int(d)) => d.parse::<u32>().map_err(|_| {
                        self.err("field `count`: expected an integer from 0 to 4294967295")
                    })?,
                    _ => return Err(self.err("field `count`: expected a non-negative integer")),
                };
                let r = self.controller.reserve_subagents(n);
                let admitted = r.admitted;
                self.controller.commit_subagents(r, admitted);
                let _ = writeln!(out, "{{\"op\":\"spawn\",\"admitted\":{admitted}}}");
            }
            b"before" => {
                let tool = self.tool(&req)?;
                let args = self.args(&req)?;
                let d = self.controller.before_call(&tool, args);
                self.write_decision(&d, None, out);
            }
            b"after" => {
                let tool = self.tool(&req)?;
                let args = self.args(&req)?;
                let result = match req.get("result") {
                    Some(Value::Str(s)) => Some(s.as_slice()),
                    Some(Value::Null) => None,
                    Some(_) => return Err(self.err("field `result`: expected a string or null")),
                    None => return Err(self.err("missing field `result` (null is allowed)")),
                };
                let failed = match req.get("failed") {
                    Some(Value::Bool(b)) => Some(*b),
                    Some(Value::Null) | None => None,
                    Some(_) => return Err(self.err("field `failed`: expected true, false or null")),
                };
                match req.get("tool_call_id") {
                    Some(Value::Str(_)) | None => {}
                    Some(_) => return Err(self.err("field `tool_call_id`: expected a string")),
                }
                let c = &mut self.controller;
                let facts = CallFacts::new(&tool, args, result, c.rules());
                let failed = failed.unwrap_or_else(|| c.classify(&tool, result));
                let d = c.after_call_facts(&facts, failed);
                let obs = c
                    .rules()
                    .stall_guards
                    .then(|| c.observe_call(&facts, failed));
                self.write_decision(&d, obs, out);
            }
            _ => return Err(self.err("field `op`: expected before, after, reset or spawn")),
        }
        Ok(())
    }

    fn tool(&self, req: &Value) -> Result<String, RequestError> {
        match req.get("tool") {
            Some(Value::Str(s)) => {
                String::from_utf8(s.clone()).map_err(|_| self.err("field `tool`: not valid UTF-8"))
            }
            Some(_) => Err(self.err("field `tool`: expected a string")),
            None => Err(self.err("missing field `tool`")),
        }
    }

    /// `args`: any JSON value (a non-object counts as `{}`), but present.
    fn args<'r>(&self, req: &'r Value) -> Result<&'r Value, RequestError> {
        req.get("args")
            .ok_or_else(|| self.err("missing field `args`"))
    }

    fn write_decision(
        &mut self,
        d: &Decision,
        obs: Option<crate::guardrails::Observation>,
        out: &mut Vec<u8>,
    ) {
        match opening(d.action, d.code) {
            Some(o) => out.extend_from_slice(o),
            None => {
                out.extend_from_slice(b"{\"action\":\"");
                out.extend_from_slice(d.action.as_str().as_bytes());
                out.extend_from_slice(b"\",\"code\":\"");
                out.extend_from_slice(d.code.as_str().as_bytes());
                out.extend_from_slice(b"\",\"count\":");
            }
        }
        // `write!` would cost more than the rest of the answer.
        crate::json::push_u64(out, u64::from(d.count));
        out.extend_from_slice(b",\"args_hash\":\"");
        out.extend_from_slice(self.hex.of(d.signature.args_hash));
        out.extend_from_slice(b"\",\"halt\":");
        match self.controller.halt_decision() {
            None => out.extend_from_slice(b"null"),
            Some(h) => {
                // Once a turn has halted, every answer carries the halt: no formatting machinery.
                out.extend_from_slice(b"{\"code\":\"");
                out.extend_from_slice(h.code.as_str().as_bytes());
                out.extend_from_slice(b"\",\"count\":");
                crate::json::push_u64(out, u64::from(h.count));
                out.push(b'}');
            }
        }
        if let Some(o) = obs {
            out.extend_from_slice(b",\"observe\":{\"kind\":");
            match o.kind {
                None => out.extend_from_slice(b"null"),
                Some(k) => {
                    out.push(b'"');
                    out.extend_from_slice(k.as_str().as_bytes());
                    out.push(b'"');
                }
            }
            out.extend_from_slice(if o.stub {
                b",\"stub\":true}"
            } else {
                b",\"stub\":false}"
            });
        }
        out.extend_from_slice(b"}\n");
    }
}

/// An answer's opening up to its count, in one piece, for the action each code comes with.
fn opening(action: Action, code: DecisionCode) -> Option<&'static [u8]> {
    macro_rules! open {
        ($a:literal, $c:literal) => {
            concat!("{\"action\":\"", $a, "\",\"code\":\"", $c, "\",\"count\":").as_bytes()
        };
    }
    let o: &'static [u8] = match (action, code) {
        (Action::Allow, DecisionCode::Allow) => open!("allow", "allow"),
        (Action::Warn, DecisionCode::RepeatedExactFailureWarning) => {
            open!("warn", "repeated_exact_failure_warning")
        }
        (Action::Warn, DecisionCode::SameToolFailureWarning) => {
            open!("warn", "same_tool_failure_warning")
        }
        (Action::Warn, DecisionCode::IdempotentNoProgressWarning) => {
            open!("warn", "idempotent_no_progress_warning")
        }
        (Action::Block, DecisionCode::RepeatedExactFailureBlock) => {
            open!("block", "repeated_exact_failure_block")
        }
        (Action::Block, DecisionCode::IdempotentNoProgressBlock) => {
            open!("block", "idempotent_no_progress_block")
        }
        (Action::Halt, DecisionCode::SameToolFailureHalt) => {
            open!("halt", "same_tool_failure_halt")
        }
        _ => return None,
    };
    Some(o)
}

/// Decides a call read by the fast path, as the tree path decides it; with the result hash
/// when one was computed.
fn answer(
    c: &mut Controller,
    tool: ToolName,
    call: Call<'_>,
) -> (
    Decision,
    Option<crate::guardrails::Observation>,
    Option<Hash>,
) {
    let signature = Signature {
        tool,
        args_hash: call.args_hash,
    };
    if call.op == Op::Before {
        // The canonical text parses back to the same arguments.
        let spawns = || {
            call.args
                .and_then(|a| json::parse(a).ok())
                .map_or(1, |v| subagent_spawn_count(&v))
        };
        return (c.before_call_with(signature, spawns), None, None);
    }
    let mut facts = CallFacts::with_signature(signature, call.result, c.rules());
    if let Some((_, Some(h))) = call.recent {
        facts = facts.with_result_hash(h);
    }
    let failed = call
        .failed
        .unwrap_or_else(|| c.classify(&facts.signature.tool, call.result));
    let d = c.after_call_facts(&facts, failed);
    let obs = c
        .rules()
        .stall_guards
        .then(|| c.observe_call(&facts, failed));
    (d, obs, facts.known_result_hash())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::ProfileName;

    fn run(
        profile: ProfileName,
        platform: Option<&str>,
        input: &str,
    ) -> Result<String, RequestError> {
        let mut s = GuardSession::new(&EngineConfig::new(profile, platform));
        let mut out = Vec::new();
        for line in input.lines() {
            s.handle_line(line.as_bytes(), &mut out)?;
        }
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn a_whole_opening_is_the_opening_written_piece_by_piece() {
        let mut whole = 0;
        for action in [Action::Allow, Action::Warn, Action::Block, Action::Halt] {
            for code in DecisionCode::ALL {
                if let Some(o) = opening(action, code) {
                    let pieces = format!(
                        "{{\"action\":\"{}\",\"code\":\"{}\",\"count\":",
                        action.as_str(),
                        code.as_str()
                    );
                    assert_eq!(o, pieces.as_bytes());
                    whole += 1;
                }
            }
        }
        assert_eq!(whole, 7);
    }

    #[test]
    fn answers_have_the_documented_shape() {
        let out = run(
            ProfileName::HermesMain,
            None,
            "{\"op\":\"before\",\"tool\":\"read_file\",\"args\":{}}\n\n{\"op\":\"after\",\"tool\":\"read_file\",\"args\":[1],\"result\":\"x\"}\n{\"op\":\"reset\"}\n{\"op\":\"spawn\",\"count\":60}",
        )
        .unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            r#"{"action":"allow","code":"allow","count":0,"args_hash":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","halt":null}"#
        );
        assert_eq!(
            lines[1],
            r#"{"action":"allow","code":"allow","count":1,"args_hash":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","halt":null,"observe":{"kind":null,"stub":false}}"#
        );
        assert_eq!(lines[2], r#"{"op":"reset"}"#);
        assert_eq!(lines[3], r#"{"op":"spawn","admitted":50}"#);
        let old = run(
            ProfileName::Hermes0_19_0,
            None,
            "{\"op\":\"after\",\"tool\":\"t\",\"args\":{},\"result\":null}",
        )
        .unwrap();
        assert!(!old.contains("observe"));
    }

    #[test]
    fn bad_lines_name_the_line_and_field() {
        let cases = [
            (
                "{\"op\":\"reset\"}\n[1]",
                "line 2: a request must be a JSON object",
            ),
            ("{\"op\":\"before\"}", "line 1: missing field `tool`"),
            (
                "{\"op\":\"after\",\"tool\":\"t\",\"args\":{},\"result\":3}",
                "line 1: field `result`: expected a string or null",
            ),
            (
                "{\"op\":\"jump\"}",
                "line 1: field `op`: expected before, after, reset or spawn",
            ),
            (
                "{\"op\":\"after\",\"tool\":\"t\",\"args\":{},\"result\":null,\"failed\":\"yes\"}",
                "line 1: field `failed`: expected true, false or null",
            ),
            (
                "{\"op\":\"spawn\",\"count\":-1}",
                "line 1: field `count`: expected an integer from 0 to 4294967295",
            ),
        ];
        for (input, want) in cases {
            let err = run(ProfileName::HermesMain, None, input).unwrap_err();
            assert_eq!(err.to_string(), want);
        }
        let err = run(ProfileName::HermesMain, None, "{nope").unwrap_err();
        assert!(err.to_string().starts_with("line 1: not JSON"), "{err}");
    }

    fn run_bytes(input: &[u8]) -> Result<String, RequestError> {
        let mut s = GuardSession::new(&EngineConfig::new(ProfileName::HermesMain, None));
        let mut out = Vec::new();
        for line in input.split(|&b| b == b'\n') {
            s.handle_line(line, &mut out)?;
        }
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn required_fields_are_required() {
        let ok = "{\"op\":\"reset\"}\n";
        for (line, want) in [
            (
                "{\"op\":\"before\",\"tool\":\"t\"}",
                "line 2: missing field `args`",
            ),
            (
                "{\"op\":\"after\",\"tool\":\"t\",\"result\":\"x\"}",
                "line 2: missing field `args`",
            ),
            (
                "{\"op\":\"after\",\"tool\":\"t\",\"args\":{}}",
                "line 2: missing field `result` (null is allowed)",
            ),
            (
                "{\"op\":\"after\",\"tool\":\"t\",\"args\":{},\"result\":null,\"tool_call_id\":null}",
                "line 2: field `tool_call_id`: expected a string",
            ),
        ] {
            let err = run_bytes(format!("{ok}{line}").as_bytes()).unwrap_err();
            assert_eq!(err.to_string(), want, "{line}");
        }
        // `result` may be null, `failed` null or absent, `tool_call_id` absent.
        let fine = "{\"op\":\"after\",\"tool\":\"t\",\"args\":null,\"result\":null}\n\
                    {\"op\":\"after\",\"tool\":\"t\",\"args\":{},\"result\":\"x\",\"failed\":null}";
        assert_eq!(run_bytes(fine.as_bytes()).unwrap().lines().count(), 2);
    }

    #[test]
    fn request_lines_are_strict_json_and_utf8() {
        for (line, want) in [
            (
                &b"{\"op\":\"before\",\"tool\":\"t\",\"args\":[NaN]}"[..],
                "line 1: not JSON: invalid JSON at byte 34: NaN is not JSON",
            ),
            (
                b"{\"op\":\"before\",\"tool\":\"t\",\"args\":{\"x\":Infinity}}",
                "line 1: not JSON: invalid JSON at byte 38: Infinity is not JSON",
            ),
            (
                b"{\"op\":\"before\",\"tool\":\"t\",\"args\":-Infinity}",
                "line 1: not JSON: invalid JSON at byte 33: -Infinity is not JSON",
            ),
            (
                b"{\"op\":\"before\",\"tool\":\"t\",\"args\":\"a\xffb\"}",
                "line 1: not JSON: invalid JSON at byte 35: invalid UTF-8 in a string",
            ),
            // A surrogate encoded raw is not UTF-8 either (only the \\ud800 escape is JSON).
            (
                b"{\"op\":\"before\",\"tool\":\"t\",\"args\":{\"k\\n\xed\xa0\x80\":1}}",
                "line 1: not JSON: invalid JSON at byte 38: invalid UTF-8 in a string",
            ),
            (
                b"{\"op\":\"after\",\"tool\":\"t\",\"args\":{},\"result\":\"\xc3\"}",
                "line 1: not JSON: invalid JSON at byte 45: invalid UTF-8 in a string",
            ),
        ] {
            let err = run_bytes(line).unwrap_err();
            assert_eq!(err.to_string(), want, "{}", String::from_utf8_lossy(line));
        }
        // Valid JSON stays valid: floats, big integers, lone-surrogate escapes, raw UTF-8,
        // and NaN inside result text (which is hashed as Python's json.loads reads it).
        let fine = "{\"op\":\"before\",\"tool\":\"t\",\"args\":{\"f\":1e400,\"g\":-0.0,\"i\":123456789012345678901234567890,\"s\":\"\\ud800 \u{e9} \u{2028} \u{1F600}\"}}\n\
                    {\"op\":\"after\",\"tool\":\"t\",\"args\":{},\"result\":\"{\\\"v\\\": [NaN, Infinity]}\"}\n\
                    \x0b\x0c \t\r";
        let out = run_bytes(fine.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(out.lines().count(), 2, "{out}");
    }
}
