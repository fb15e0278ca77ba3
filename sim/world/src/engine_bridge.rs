//! The engine bridge: guardrail decisions from an external engine process speaking the
//! engine protocol (`docs/engine-protocol.md`) over JSON lines, such as the real Python
//! Hermes package behind `bridges/hermes/adapter.py`. One process serves every agent of a
//! run; each agent has its own controller there.

use std::cell::RefCell;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::rc::Rc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use loopsim_engine::GuardrailEngine;
use loopsim_engine::guardrails::{
    Action, CallFacts, Decision, DecisionCode, GuardrailRules, NoticeKind, Observation,
};
use loopsim_engine::hash::Signature;
use loopsim_engine::json::{self, Value};
use loopsim_engine::yaml::{Node, Yaml};
use serde::Deserialize;

/// The protocol version this simulator speaks.
pub const PROTOCOL: u32 = 1;
/// How long one answer may take (`LOOPSIM_ENGINE_TIMEOUT_SECS` overrides it).
pub const TIMEOUT: Duration = Duration::from_secs(30);

fn timeout() -> Duration {
    std::env::var("LOOPSIM_ENGINE_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(TIMEOUT, Duration::from_secs_f64)
}

/// Which engine decides the guardrails of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum EngineChoice {
    /// loopsim's Rust engine.
    #[default]
    Builtin,
    /// The installed `hermes-agent` package, through `bridges/hermes/adapter.py` run by this
    /// Python.
    HermesPython { python: PathBuf, adapter: PathBuf },
}

impl EngineChoice {
    pub fn name(&self) -> &'static str {
        match self {
            EngineChoice::Builtin => "builtin",
            EngineChoice::HermesPython { .. } => "hermes-python",
        }
    }
}

/// What went wrong with an external engine.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BridgeError {
    #[error(
        "cannot start `{python}`: {reason} (install Python 3, then: python3 -m venv .venv && .venv/bin/pip install --no-deps hermes-agent==0.19.0 pyyaml, and pass --engine hermes-python=.venv/bin/python)"
    )]
    Start { python: String, reason: String },
    #[error("the engine refused: {0}")]
    Refused(String),
    #[error("the engine speaks protocol {theirs}, loopsim speaks {ours}")]
    Version { theirs: String, ours: u32 },
    #[error("the engine exited after the request `{last}`{stderr}")]
    Crashed { last: String, stderr: String },
    #[error("the engine did not answer within {secs} s (last request `{last}`)")]
    Timeout { secs: f64, last: String },
    #[error("the engine's answer to `{last}` is not understood: {reason}")]
    BadAnswer { last: String, reason: String },
}

struct Process {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<String>,
    stderr: Rc<RefCell<String>>,
    stderr_rx: Receiver<String>,
    last: String,
    failure: Option<BridgeError>,
    pub hermes: String,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Process {
    fn start(
        python: &Path,
        adapter: &Path,
        hello: serde_json::Value,
    ) -> Result<Process, BridgeError> {
        let mut child = Command::new(python)
            .arg(adapter)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| BridgeError::Start {
                python: python.display().to_string(),
                reason: e.to_string(),
            })?;
        let stdout = child.stdout.take().expect("piped");
        let mut stderr_pipe = child.stderr.take().expect("piped");
        let (tx, answers) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (etx, stderr_rx) = channel();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr_pipe.read_to_string(&mut s);
            let _ = etx.send(s);
        });
        let stdin = child.stdin.take().expect("piped");
        let mut p = Process {
            child,
            stdin,
            answers,
            stderr: Rc::new(RefCell::new(String::new())),
            stderr_rx,
            last: String::new(),
            failure: None,
            hermes: String::new(),
        };
        let reply = p.ask(&hello)?;
        match reply.get("op").and_then(|v| v.as_str()) {
            Some("hello") => {}
            Some("error") => {
                return Err(BridgeError::Refused(
                    reply["message"].as_str().unwrap_or("").to_string(),
                ));
            }
            _ => {
                return Err(BridgeError::BadAnswer {
                    last: p.last.clone(),
                    reason: "expected a hello".into(),
                });
            }
        }
        if reply.get("protocol").and_then(|v| v.as_u64()) != Some(u64::from(PROTOCOL)) {
            return Err(BridgeError::Version {
                theirs: reply
                    .get("protocol")
                    .map_or("none".into(), |v| v.to_string()),
                ours: PROTOCOL,
            });
        }
        p.hermes = reply
            .get("hermes")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string();
        Ok(p)
    }

    fn ask(&mut self, req: &serde_json::Value) -> Result<serde_json::Value, BridgeError> {
        self.last = req.to_string();
        let sent = writeln!(self.stdin, "{}", self.last).and_then(|_| self.stdin.flush());
        let limit = timeout();
        let line = match (sent, self.answers.recv_timeout(limit)) {
            (_, Ok(line)) => line,
            (_, Err(RecvTimeoutError::Timeout)) => {
                return Err(BridgeError::Timeout {
                    secs: limit.as_secs_f64(),
                    last: self.last.clone(),
                });
            }
            (_, Err(RecvTimeoutError::Disconnected)) => {
                let _ = self.child.wait();
                let stderr = self
                    .stderr_rx
                    .recv_timeout(Duration::from_secs(2))
                    .unwrap_or_default();
                *self.stderr.borrow_mut() = stderr.clone();
                let tail: String = stderr
                    .lines()
                    .rev()
                    .take(5)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join(" | ");
                return Err(BridgeError::Crashed {
                    last: self.last.clone(),
                    stderr: if tail.is_empty() {
                        String::new()
                    } else {
                        format!(": {tail}")
                    },
                });
            }
        };
        let v: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| BridgeError::BadAnswer {
                last: self.last.clone(),
                reason: e.to_string(),
            })?;
        if v.get("op").and_then(|o| o.as_str()) == Some("error") {
            return Err(BridgeError::Refused(
                v["message"].as_str().unwrap_or("").to_string(),
            ));
        }
        Ok(v)
    }
}

/// The connection shared by every agent of a run.
#[derive(Clone)]
pub struct Bridge(Rc<RefCell<Process>>);

impl Bridge {
    /// Starts the engine process with this run's `tool_loop_guardrails` section.
    pub fn start(
        python: &Path,
        adapter: &Path,
        profile: &str,
        guardrails: Option<&Node>,
    ) -> Result<Bridge, BridgeError> {
        let hello = serde_json::json!({
            "op": "hello",
            "protocol": PROTOCOL,
            "profile": profile,
            "tool_loop_guardrails": guardrails.map_or(serde_json::json!({}), node_to_json),
        });
        Ok(Bridge(Rc::new(RefCell::new(Process::start(
            python, adapter, hello,
        )?))))
    }

    /// The `hermes-agent` version the engine reported.
    pub fn hermes_version(&self) -> String {
        self.0.borrow().hermes.clone()
    }

    /// The first failure, if any (after it, every answer is a harmless allow).
    pub fn failure(&self) -> Option<BridgeError> {
        self.0.borrow().failure.clone()
    }

    /// One agent's view of the engine.
    pub fn agent(&self, name: &str, platform: Option<&str>, rules: GuardrailRules) -> PythonGuard {
        PythonGuard {
            bridge: self.clone(),
            agent: name.to_string(),
            platform: platform.map(str::to_string),
            rules,
            halt: None,
        }
    }
}

/// YAML (as Hermes would have read it) to JSON for the hello.
pub fn node_to_json(n: &Node) -> serde_json::Value {
    match &n.value {
        Yaml::Null => serde_json::Value::Null,
        Yaml::Bool(b) => serde_json::Value::Bool(*b),
        Yaml::Int(i) => i64::try_from(*i).map_or_else(
            |_| serde_json::Value::String(i.to_string()),
            serde_json::Value::from,
        ),
        Yaml::Float(f) => serde_json::Number::from_f64(*f)
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        Yaml::Str(s) => serde_json::Value::String(s.clone()),
        Yaml::Seq(items) => serde_json::Value::Array(items.iter().map(node_to_json).collect()),
        Yaml::Map(pairs) => serde_json::Value::Object(
            pairs
                .iter()
                .map(|(k, v)| {
                    let key = match &k.value {
                        Yaml::Str(s) => s.clone(),
                        other => format!("{other:?}"),
                    };
                    (key, node_to_json(v))
                })
                .collect(),
        ),
    }
}

#[derive(Deserialize)]
struct Halt {
    code: String,
    count: u32,
}

#[derive(Deserialize)]
struct Observe {
    kind: Option<String>,
    stub: bool,
}

#[derive(Deserialize)]
struct Answer {
    action: String,
    code: String,
    count: u32,
    args_hash: String,
    halt: Option<Halt>,
    observe: Option<Observe>,
}

/// An agent's guardrails, decided by the external engine.
pub struct PythonGuard {
    bridge: Bridge,
    agent: String,
    platform: Option<String>,
    rules: GuardrailRules,
    halt: Option<Decision>,
}

fn args_json(args: &Value) -> serde_json::Value {
    serde_json::from_slice(&json::canonical(args)).unwrap_or(serde_json::Value::Null)
}

impl PythonGuard {
    /// Sends a request; on the first failure records it and answers `None` from then on.
    fn ask(&mut self, req: serde_json::Value) -> Option<serde_json::Value> {
        let mut p = self.bridge.0.borrow_mut();
        if p.failure.is_some() {
            return None;
        }
        match p.ask(&req) {
            Ok(v) => Some(v),
            Err(e) => {
                p.failure = Some(e);
                None
            }
        }
    }

    fn decision(
        &mut self,
        v: serde_json::Value,
        signature: Signature,
    ) -> (Decision, Option<Observe>) {
        let allow = Decision::allow(signature.clone(), 0);
        let last = self.bridge.0.borrow().last.clone();
        let fail = |this: &mut Self, reason: String| {
            this.bridge
                .0
                .borrow_mut()
                .failure
                .get_or_insert(BridgeError::BadAnswer {
                    last: last.clone(),
                    reason,
                });
        };
        let a: Answer = match serde_json::from_value(v) {
            Ok(a) => a,
            Err(e) => {
                fail(self, e.to_string());
                return (allow, None);
            }
        };
        if a.args_hash != signature.args_hash.hex() {
            fail(
                self,
                format!(
                    "args hash {} differs from loopsim's {}",
                    a.args_hash, signature.args_hash
                ),
            );
            return (allow, None);
        }
        let (Some(action), Some(code)) = (Action::parse(&a.action), DecisionCode::parse(&a.code))
        else {
            fail(
                self,
                format!("unknown action or code `{}` / `{}`", a.action, a.code),
            );
            return (allow, None);
        };
        let d = Decision {
            action,
            code,
            count: a.count,
            signature: signature.clone(),
            detail: 0,
        };
        self.halt = match a.halt {
            None => None,
            Some(h) => match DecisionCode::parse(&h.code) {
                Some(code) => Some(Decision {
                    action: if code.as_str().ends_with("_block")
                        || code.as_str().starts_with("loop_")
                    {
                        Action::Block
                    } else {
                        Action::Halt
                    },
                    code,
                    count: h.count,
                    signature,
                    detail: 0,
                }),
                None => {
                    fail(self, format!("unknown halt code `{}`", h.code));
                    None
                }
            },
        };
        (d, a.observe)
    }
}

impl GuardrailEngine for PythonGuard {
    fn name(&self) -> &str {
        "hermes-python"
    }

    fn rules(&self) -> &GuardrailRules {
        &self.rules
    }

    fn reset_turn(&mut self) {
        self.halt = None;
        let req =
            serde_json::json!({ "agent": self.agent, "op": "reset", "platform": self.platform });
        self.ask(req);
    }

    fn before_call(&mut self, signature: Signature, args: &Value) -> Decision {
        let req = serde_json::json!({ "agent": self.agent, "op": "before", "tool": &*signature.tool, "args": args_json(args) });
        match self.ask(req) {
            Some(v) => self.decision(v, signature).0,
            None => Decision::allow(signature, 0),
        }
    }

    fn after_call(&mut self, facts: &CallFacts<'_>, failed: bool) -> (Decision, Observation) {
        let Some(args) = &facts.args else {
            let mut p = self.bridge.0.borrow_mut();
            let last = p.last.clone();
            p.failure.get_or_insert(BridgeError::BadAnswer {
                last,
                reason: "the call's arguments were not kept".into(),
            });
            return (
                Decision::allow(facts.signature.clone(), 0),
                Observation::default(),
            );
        };
        let result = facts
            .result
            .map(|r| String::from_utf8_lossy(r).into_owned());
        let req = serde_json::json!({
            "agent": self.agent, "op": "after", "tool": &*facts.signature.tool, "args": args_json(args),
            "result": result, "failed": failed,
        });
        let Some(v) = self.ask(req) else {
            return (
                Decision::allow(facts.signature.clone(), 0),
                Observation::default(),
            );
        };
        let (d, observe) = self.decision(v, facts.signature.clone());
        let obs = observe.map_or(Observation::default(), |o| Observation {
            kind: o.kind.as_deref().and_then(NoticeKind::parse),
            stub: o.stub,
            ..Observation::default()
        });
        (d, obs)
    }

    fn halt_decision(&self) -> Option<&Decision> {
        self.halt.as_ref()
    }

    fn spawn_subagents(&mut self, count: u32) -> u32 {
        let req = serde_json::json!({ "agent": self.agent, "op": "spawn", "count": count });
        self.ask(req)
            .and_then(|v| v.get("admitted").and_then(|a| a.as_u64()))
            .map_or(count, |a| a as u32)
    }

    fn failure(&self) -> Option<String> {
        self.bridge.failure().map(|e| e.to_string())
    }
}
