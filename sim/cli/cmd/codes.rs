//! `loopsim codes`: every name loopsim accepts, one command away.

use anyhow::Result;
use loopsim_engine::config::keys::{self, KeyKind, ReadBy};
use loopsim_engine::config::runtime;
use loopsim_engine::guardrails::{ATTENDED_PLATFORMS, DecisionCode};
use loopsim_engine::platform::UNATTENDED_PLATFORMS;
use loopsim_engine::profile::{ProfileName, Runtime};
use loopsim_engine::turn::ExitReason;
use loopsim_world::coverage::Mark;
use loopsim_world::sim::Invariant;

use crate::args::Format;
use crate::out::{emit, say};

fn profile_about(p: ProfileName) -> &'static str {
    match p {
        ProfileName::Article2026_06 => {
            "the June 2026 article: cap 90, a tools-free grace call, 600 s child timeout"
        }
        ProfileName::Hermes0_19_0 => "hermes-agent 0.19.0 from PyPI: cap 90, no platform rule",
        ProfileName::HermesV0_21_5 => {
            "the incident version: newest guardrails, unlimited cap, whole-result hashing"
        }
        ProfileName::HermesMain => "newest: execute_code's volatile fields dropped from hashes",
        ProfileName::OpenAiAgents0_24 => {
            "openai-agents 0.24.0 from PyPI: max_turns 10, then MaxTurnsExceeded; no loop detection"
        }
        ProfileName::LangGraph1_2 => {
            "langgraph 1.2.22 under langchain 1.5's create_agent: recursion_limit 9999 graph steps, then GraphRecursionError"
        }
        ProfileName::PydanticAi2_68 => {
            "pydantic-ai-slim 2.68.0 from PyPI: request_limit 50, then UsageLimitExceeded; no loop detection"
        }
        ProfileName::Smolagents1_26 => {
            "smolagents 1.26.0 from PyPI (ToolCallingAgent): max_steps 20, then a final-answer call; no loop detection"
        }
        ProfileName::OpenHandsSdk1_58 => {
            "openhands-sdk 1.58.2 from PyPI: max_iteration_per_run 500, and its stuck detector (4 repeated action/observation pairs, 3 empty replies, A/B alternation over 6)"
        }
        ProfileName::ReactLoopArticle => {
            "the loop-design article's ReAct loop: 12 iterations then a summary call, a token budget, 30 s tool timeouts, results cut to 2,000 characters, a hint after 3 failures of a tool"
        }
    }
}

/// What a decision does: `warn`, `block`, `halt` (a loop cap refuses like a block).
fn action_of(c: DecisionCode) -> &'static str {
    let s = c.as_str();
    if s == "allow" {
        "allow"
    } else if s.ends_with("_warning") {
        "warn"
    } else if s.ends_with("_halt") {
        "halt"
    } else {
        "block"
    }
}

fn read_by(r: ReadBy) -> &'static str {
    match r {
        ReadBy::All => "all profiles",
        ReadBy::PlatformRule => "hermes-v0.21.5, hermes-main",
        ReadBy::StallGuards => "profiles with stall guards",
    }
}

pub fn run(format: Format) -> Result<()> {
    let keys: Vec<_> = keys::SIMULATED
        .iter()
        .filter(|k| k.kind != KeyKind::Section)
        .collect();
    if format == Format::Json {
        emit!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "profiles": ProfileName::ALL.iter().map(|p| serde_json::json!({
                    "name": p.as_str(), "about": profile_about(*p),
                })).collect::<Vec<_>>(),
                "platforms": {
                    "attended": ATTENDED_PLATFORMS,
                    "unattended": UNATTENDED_PLATFORMS,
                },
                "decision_codes": DecisionCode::ALL.iter().map(|c| serde_json::json!({
                    "code": c.as_str(), "action": action_of(*c), "stop": c.is_stop(),
                })).collect::<Vec<_>>(),
                "exit_reasons": ExitReason::FORMS.as_slice(),
                "coverage_marks": Mark::all().map(Mark::name).collect::<Vec<_>>(),
                "invariants": Invariant::ALL.iter().map(|i| i.as_str()).collect::<Vec<_>>(),
                "config_keys": keys.iter().map(|k| serde_json::json!({
                    "key": k.path, "value": k.kind.describe(), "read_by": read_by(k.read_by),
                    "same_setting_as": k.alias.map(|a| a.0),
                })).collect::<Vec<_>>(),
                "runtime_keys": other_runtimes().map(|p| serde_json::json!({
                    "profile": p.as_str(),
                    "keys": runtime::keys(p.runtime()).iter().map(|k| serde_json::json!({
                        "key": k.path, "value": k.kind.describe(),
                    })).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            }))?
        );
        return Ok(());
    }
    say!("profiles (--profile, a scenario's profile):");
    for p in ProfileName::ALL {
        say!("  {:<18} {}", p.as_str(), profile_about(p));
    }
    say!("\nplatforms (--platform): attended ones never hard-stop by the platform rule");
    say!("  attended:   {}", ATTENDED_PLATFORMS.join(", "));
    say!("  unattended: {}", UNATTENDED_PLATFORMS.join(", "));
    say!("  any other name is unattended (Hermes accepts plugin platforms); loopsim warns");
    say!("\nguardrail decision codes ([expect] stop_code takes a block or halt code):");
    for c in DecisionCode::ALL {
        say!("  {:<34} {}", c.as_str(), action_of(c));
    }
    say!("\nexit reasons ([expect] exit_reason; N, M and ... are filled in by the run):");
    for f in ExitReason::FORMS {
        say!("  {f}");
    }
    say!("\ncoverage marks ([expect] covers; `loopsim check --coverage` counts them):");
    for m in Mark::all() {
        say!("  {}", m.name());
    }
    say!(
        "\ninvariants (checked after every event by `loopsim explore`, `run --check-invariants`):"
    );
    for i in Invariant::ALL {
        say!("  {i}");
    }
    say!("\nHermes config keys the engine reads ([config.*], config.yaml, --grid):");
    for k in keys {
        let alias = k.alias.map_or(String::new(), |(a, wins)| {
            format!(
                "; same setting as {a}{}",
                if wins { " (this one wins)" } else { "" }
            )
        });
        say!(
            "  {:<58} {} ({}{alias})",
            k.path,
            k.kind.describe(),
            read_by(k.read_by)
        );
    }
    for p in other_runtimes() {
        say!(
            "\n{p} settings, in the runtime's own names (config.yaml, [config.*] of its scenarios):"
        );
        for k in runtime::keys(p.runtime()) {
            say!("  {:<58} {}", k.path, k.kind.describe());
        }
    }
    Ok(())
}

/// Profiles of runtimes other than Hermes, which read their own settings.
fn other_runtimes() -> impl Iterator<Item = ProfileName> {
    ProfileName::ALL
        .into_iter()
        .filter(|p| p.runtime() != Runtime::Hermes)
}
