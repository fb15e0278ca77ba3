//! Seeded provider errors on an agent's model calls ([`ModelFaults`]), drawn in one place so
//! the simulator and `loopsim serve` meet the same errors at the same attempts.
//!
//! Each agent draws from a stream of its own (`agent:NAME/faults`), made only when its model
//! has faults, so a scenario without them keeps every other draw. An attempt takes one draw
//! for its outcome; a failed one then draws its latency (when the scenario gives one) and,
//! when the runtime backs off with jitter, the jitter.

use loopsim_engine::retry::{ProviderFault, ProviderRetry, RetryState, RetryStep};
use rand::RngExt;
use rand::rngs::ChaCha8Rng;

use crate::clock::Duration;
use crate::rng::stream;
use crate::scenario::{ModelFaults, Scenario};

/// The tool a reply with the `unknown_tool` fault calls: no runtime has it, and Hermes's
/// repair (case, separators, a `tool` suffix, a close match) finds none of its own tools in it.
pub const UNKNOWN_TOOL: &str = "hallucinated_call";

/// The trace's detail of the error result a runtime sends back for a call of an unknown tool
/// (`tool_error` events; the live world writes it when the result says so).
pub const UNKNOWN_TOOL_ERROR: &str = "no such tool";

/// The arguments of a call with the `malformed_args` fault: not JSON (a colon and a comma
/// missing), and beyond Hermes's repairs (trailing commas, missing closing braces, control
/// characters), so its stream reader takes the reply as cut off.
pub const MALFORMED_ARGS: &str = r#"{"path" "doc.txt" "mode" "r"}"#;

/// Whether Hermes could repair [`UNKNOWN_TOOL`] to `tool`: the same name once lowered, or
/// similar enough that its close-match search (difflib, cutoff 0.7) might pick it. The
/// letters the two names share bound difflib's ratio from above, so below the cutoff here
/// means below it there.
pub fn close_to_unknown_tool(tool: &str) -> bool {
    let ours = UNKNOWN_TOOL;
    let theirs = tool.to_lowercase().replace(['-', ' '], "_");
    if theirs == ours {
        return true;
    }
    let mut counts = std::collections::HashMap::new();
    for c in ours.chars() {
        *counts.entry(c).or_insert(0i64) += 1;
    }
    let mut shared = 0u32;
    for c in theirs.chars() {
        if let Some(n) = counts.get_mut(&c).filter(|n| **n > 0) {
            *n -= 1;
            shared += 1;
        }
    }
    let total = ours.chars().count() + theirs.chars().count();
    2.0 * f64::from(shared) >= 0.7 * total as f64
}

/// The model faults a seed switches on (`loopsim explore --faults`, `run --seeded-faults`),
/// FoundationDB-style: for each model without faults of its own, the seed's stream
/// `faults/NAME` turns the site on half the time, with a rate-limit probability of 0.02, 0.1
/// or 0.3 (a `Retry-After` of 1 s half the time), a server-error probability of 0, 0.02
/// or 0.1, an unknown-tool probability of 0, 0.05 or 0.2 (0 where a tool of the scenario
/// is close to the made-up name) and a malformed-arguments probability of 0, 0.05 or 0.2,
/// then a mixed-batch probability of 0, 0.05 or 0.2 (0 where the unknown-tool one is).
pub fn seeded_sites(sc: &Scenario, seed: u64) -> Vec<(String, ModelFaults)> {
    use toml::Spanned;
    let at = |x: f64| Spanned::new(0..0, x);
    let mut sites = Vec::new();
    for (name, m) in &sc.file.models {
        if m.faults.is_some() {
            continue;
        }
        let mut rng = stream(seed, &format!("faults/{name}"));
        if rng.random::<f64>() >= 0.5 {
            continue;
        }
        let rate_limit = [0.02, 0.1, 0.3][rng.random_range(0..3)];
        let server_error = [0.0, 0.02, 0.1][rng.random_range(0..3)];
        let retry_after = rng.random::<bool>().then(|| at(1.0));
        // Drawn last, so the provider sites stay those of seeds drawn before it existed.
        let mut unknown_tool = [0.0, 0.05, 0.2][rng.random_range(0..3)];
        if sc.file.tools.keys().any(|t| close_to_unknown_tool(t)) {
            unknown_tool = 0.0;
        }
        let malformed_args = [0.0, 0.05, 0.2][rng.random_range(0..3)];
        let mut unknown_tool_in_batch = [0.0, 0.05, 0.2][rng.random_range(0..3)];
        if unknown_tool == 0.0 {
            // A tool of the scenario is close to the made-up name (or the draw was 0).
            unknown_tool_in_batch = 0.0;
        }
        sites.push((
            name.clone(),
            ModelFaults {
                rate_limit: at(rate_limit),
                retry_after_s: retry_after,
                server_error: at(server_error),
                latency_s: None,
                unknown_tool: at(unknown_tool),
                malformed_args: at(malformed_args),
                unknown_tool_in_batch: at(unknown_tool_in_batch),
                dropped_stream: at(0.0),
            },
        ));
    }
    sites
}

/// The tool hangs a seed switches on (`loopsim explore --faults`, `run --seeded-faults`): for
/// each tool with a `timeout_s` and no `hang_probability` of its own, the seed's stream
/// `faults/tool:NAME` turns the site on half the time, with a hang probability of 0.05, 0.2
/// or 0.5. Streams of their own: the model sites a seed draws stay what they were.
pub fn seeded_tool_hangs(sc: &Scenario, seed: u64) -> Vec<(String, f64)> {
    let mut sites = Vec::new();
    for (name, t) in &sc.file.tools {
        if t.timeout_s.is_none() || *t.hang_probability.get_ref() > 0.0 {
            continue;
        }
        let mut rng = stream(seed, &format!("faults/tool:{name}"));
        if rng.random::<f64>() < 0.5 {
            sites.push((name.clone(), [0.05, 0.2, 0.5][rng.random_range(0..3)]));
        }
    }
    sites
}

/// The child crashes a seed switches on (`loopsim explore --faults`, `run --seeded-faults`):
/// for each agent some step delegates to, without a `crash_probability` of its own, the
/// seed's stream `faults/agent:NAME` turns crashes on half the time, with a probability of
/// 0.02, 0.1 or 0.3 per iteration.
pub fn seeded_child_crashes(sc: &Scenario, seed: u64) -> Vec<(String, f64)> {
    let mut sites = Vec::new();
    for (name, a) in &sc.file.agents {
        if name == "parent" || *a.crash_probability.get_ref() > 0.0 || !sc.file.delegated_to(name) {
            continue;
        }
        let mut rng = stream(seed, &format!("faults/agent:{name}"));
        if rng.random::<f64>() < 0.5 {
            sites.push((name.clone(), [0.02, 0.1, 0.3][rng.random_range(0..3)]));
        }
    }
    sites
}

/// A child's crashes (`agents.NAME.crash_probability`), drawn in one place so the simulator
/// and `loopsim serve` crash the same child at the same iteration: one draw for each
/// iteration its loop admits, from a stream of its own (`agent:NAME/crash`).
#[derive(Debug)]
pub struct CrashStream {
    probability: f64,
    rng: ChaCha8Rng,
}

impl CrashStream {
    /// `None` where the agent never crashes (no stream is made, so no other draw moves).
    pub fn new(seed: u64, agent: &str, probability: f64) -> Option<CrashStream> {
        (probability > 0.0).then(|| CrashStream {
            probability,
            rng: stream(seed, &format!("agent:{agent}/crash")),
        })
    }

    /// Whether the agent's code raises at the top of the iteration starting now.
    pub fn crashes(&mut self) -> bool {
        self.rng.random::<f64>() < self.probability
    }
}

/// One failed attempt of a model call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Failure {
    pub fault: ProviderFault,
    /// The attempt's number within its call (1-based), and the attempts a call gets.
    pub attempt: u32,
    pub attempts: u32,
    /// A dropped stream's number within its attempt (1-based), and the streams an attempt
    /// opens; 0 for the other faults.
    pub stream: u32,
    pub streams: u32,
    /// The attempt came after the client was rebuilt.
    pub rebuilt: bool,
    /// How long the error response took.
    pub latency_us: u64,
    /// The `Retry-After` the response carries (rate limits only).
    pub retry_after_s: Option<f64>,
    /// What the runtime does next.
    pub then: RetryStep,
}

impl Failure {
    /// The trace's detail line: `rate_limit (HTTP 429), attempt 1 of 3`, or for a dropped
    /// stream `timeout (stream dropped), attempt 1 of 3, stream 2 of 3`, with `, rebuilt
    /// client` once the attempts started over.
    pub fn detail(&self) -> String {
        let mut d = match self.fault.status() {
            Some(status) => format!(
                "{} (HTTP {status}), attempt {} of {}",
                self.fault, self.attempt, self.attempts
            ),
            None => format!(
                "{} (stream dropped), attempt {} of {}, stream {} of {}",
                self.fault, self.attempt, self.attempts, self.stream, self.streams
            ),
        };
        if self.rebuilt {
            d.push_str(", rebuilt client");
        }
        d
    }
}

/// An agent's provider errors.
#[derive(Debug)]
pub struct FaultStream {
    rng: ChaCha8Rng,
    /// The current call's retries so far.
    state: RetryState,
}

impl FaultStream {
    pub fn new(seed: u64, agent: &str) -> FaultStream {
        FaultStream {
            rng: stream(seed, &format!("agent:{agent}/faults")),
            state: RetryState::default(),
        }
    }

    /// The agent's current call is over (its reply was taken): the next call starts its
    /// attempts afresh.
    pub fn call_answered(&mut self) {
        self.state = RetryState::default();
    }

    /// The next attempt of the agent's current call: `None` when the provider answers it.
    pub fn attempt(&mut self, faults: &ModelFaults, policy: &ProviderRetry) -> Option<Failure> {
        let u: f64 = self.rng.random();
        let rate_limit = *faults.rate_limit.get_ref();
        let server_error = rate_limit + *faults.server_error.get_ref();
        let fault = if u < rate_limit {
            ProviderFault::RateLimit
        } else if u < server_error {
            ProviderFault::ServerError
        } else if u < server_error + *faults.dropped_stream.get_ref() {
            ProviderFault::DroppedStream
        } else {
            // Answered: the attempts count on if the reply is sent again in the same call
            // (Hermes's retry counter lives as long as its request loop).
            return None;
        };
        let latency_us = faults.latency_s.as_ref().map_or(0, |d| {
            Duration::from_secs_f64(d.get_ref().sample(&mut self.rng)).0
        });
        let retry_after_s = match fault {
            ProviderFault::RateLimit => faults.retry_after_s.as_ref().map(|s| *s.get_ref()),
            ProviderFault::ServerError | ProviderFault::DroppedStream => None,
        };
        let before = self.state;
        let rng = &mut self.rng;
        let then = policy.step(&mut self.state, fault, retry_after_s, || rng.random());
        let dropped = fault == ProviderFault::DroppedStream;
        Some(Failure {
            fault,
            attempt: before.failed + 1,
            attempts: policy.attempts,
            stream: if dropped { before.dropped + 1 } else { 0 },
            streams: if dropped { policy.stream_attempts } else { 0 },
            rebuilt: before.rebuilt,
            latency_us,
            retry_after_s,
            then,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toml::Spanned;

    fn faults(rate_limit: f64, server_error: f64) -> ModelFaults {
        ModelFaults {
            rate_limit: Spanned::new(0..0, rate_limit),
            retry_after_s: Some(Spanned::new(0..0, 1.5)),
            server_error: Spanned::new(0..0, server_error),
            latency_s: None,
            unknown_tool: Spanned::new(0..0, 0.0),
            malformed_args: Spanned::new(0..0, 0.0),
            unknown_tool_in_batch: Spanned::new(0..0, 0.0),
            dropped_stream: Spanned::new(0..0, 0.0),
        }
    }

    #[test]
    fn seeds_switch_crashes_on_for_delegated_agents_without_a_rate() {
        let sc = Scenario::parse(
            include_str!("../../../scenarios/live-delegation.toml"),
            "d.toml",
        )
        .unwrap();
        let mut on = 0;
        for seed in 0..64 {
            let sites = seeded_child_crashes(&sc, seed);
            assert_eq!(sites, seeded_child_crashes(&sc, seed), "seed {seed}");
            for (agent, rate) in &sites {
                // Only the delegated worker; never the parent.
                assert_eq!(agent, "worker");
                assert!([0.02, 0.1, 0.3].contains(rate), "{rate}");
            }
            on += sites.len();
        }
        assert!((16..48).contains(&on), "{on} of 64 seeds");
        // An agent with a rate of its own keeps it; a scenario without delegation has none.
        let own = Scenario::parse(
            &include_str!("../../../scenarios/live-delegation.toml").replace(
                "context_tokens = 4000\n",
                "context_tokens = 4000\ncrash_probability = 0.5\n",
            ),
            "d.toml",
        )
        .unwrap();
        assert!((0..64).all(|s| seeded_child_crashes(&own, s).is_empty()));
        let none = Scenario::parse(
            include_str!("../../../scenarios/live-tool-timeouts.toml"),
            "t.toml",
        )
        .unwrap();
        assert!((0..64).all(|s| seeded_child_crashes(&none, s).is_empty()));
    }

    #[test]
    fn a_crash_stream_is_made_only_for_a_rate_and_draws_the_same_per_seed_and_agent() {
        assert!(CrashStream::new(1, "w#1", 0.0).is_none());
        let draws = |seed, agent| {
            let mut c = CrashStream::new(seed, agent, 0.3).unwrap();
            (0..200).map(|_| c.crashes()).collect::<Vec<bool>>()
        };
        let a = draws(7, "lead#1/helper#1");
        assert_eq!(a, draws(7, "lead#1/helper#1"));
        assert_ne!(a, draws(7, "lead#1/helper#2"));
        let share = a.iter().filter(|x| **x).count();
        assert!((30..90).contains(&share), "{share} of 200 at 0.3");
        let mut always = CrashStream::new(7, "w", 1.0).unwrap();
        assert!((0..50).all(|_| always.crashes()));
    }

    #[test]
    fn seeds_switch_hangs_on_for_timed_tools_without_a_rate() {
        let timed = Scenario::parse(
            include_str!("../../../scenarios/live-tool-timeouts.toml"),
            "t.toml",
        )
        .unwrap();
        let mut on = 0;
        for seed in 0..64 {
            let sites = seeded_tool_hangs(&timed, seed);
            for (tool, rate) in &sites {
                assert_eq!(tool, "terminal");
                assert!([0.05, 0.2, 0.5].contains(rate), "{rate}");
            }
            on += sites.len();
            assert_eq!(
                sites,
                seeded_tool_hangs(&timed, seed),
                "a seed draws one way"
            );
        }
        assert!((16..48).contains(&on), "{on} of 64 seeds");
        // A tool with a rate of its own keeps it; one without a timeout cannot hang.
        let own = Scenario::parse(
            include_str!("../../../scenarios/live-tool-hangs.toml"),
            "h.toml",
        )
        .unwrap();
        let untimed = Scenario::parse(
            include_str!("../../../scenarios/two-call-cycle.toml"),
            "c.toml",
        )
        .unwrap();
        assert!(
            (0..64).all(|s| seeded_tool_hangs(&own, s).is_empty()
                && seeded_tool_hangs(&untimed, s).is_empty())
        );
    }

    #[test]
    fn every_attempt_failing_gives_up_at_the_policys_count_then_starts_over() {
        let mut s = FaultStream::new(1, "parent");
        let f = faults(0.0, 1.0);
        let policy = ProviderRetry::HERMES;
        let steps: Vec<_> = (0..4).map(|_| s.attempt(&f, &policy).unwrap()).collect();
        assert_eq!(
            steps.iter().map(|x| x.attempt).collect::<Vec<_>>(),
            [1, 2, 3, 1]
        );
        assert_eq!(steps[2].then, RetryStep::GiveUp);
        let RetryStep::Wait { us } = steps[0].then else {
            panic!()
        };
        assert!((2_000_000..=3_000_000).contains(&us), "{us}");
        let RetryStep::Wait { us } = steps[1].then else {
            panic!()
        };
        assert!((4_000_000..=6_000_000).contains(&us), "{us}");
        assert_eq!(steps[0].detail(), "server_error (HTTP 500), attempt 1 of 3");
    }

    #[test]
    fn rate_limits_wait_their_retry_after_and_no_faults_never_fail() {
        let mut s = FaultStream::new(1, "parent");
        let first = s
            .attempt(&faults(1.0, 0.0), &ProviderRetry::HERMES)
            .unwrap();
        assert_eq!(first.then, RetryStep::Wait { us: 1_500_000 });
        assert_eq!(first.retry_after_s, Some(1.5));
        let mut s = FaultStream::new(1, "parent");
        assert!((0..100).all(|_| {
            s.attempt(&faults(0.0, 0.0), &ProviderRetry::HERMES)
                .is_none()
        }));
    }

    #[test]
    fn the_made_up_tool_is_far_from_hermes_s_tools_and_close_to_itself() {
        for t in [
            "read_file",
            "terminal",
            "execute_code",
            "web_search",
            "delegate_task",
        ] {
            assert!(!close_to_unknown_tool(t), "{t}");
        }
        for t in [
            "hallucinated_call",
            "Hallucinated-Call",
            "hallucinate_call",
            "hallucinated",
        ] {
            assert!(close_to_unknown_tool(t), "{t}");
        }
    }

    #[test]
    fn the_same_seed_and_agent_draw_the_same_faults() {
        let f = faults(0.3, 0.3);
        let draw = |seed, agent| {
            let mut s = FaultStream::new(seed, agent);
            (0..50)
                .map(|_| s.attempt(&f, &ProviderRetry::HERMES))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(4, "parent"), draw(4, "parent"));
        assert_ne!(draw(4, "parent"), draw(4, "worker#1"));
    }
}
