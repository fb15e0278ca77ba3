//! The committed scenario suite, built into the binary, so that `loopsim list`, `check`,
//! `sweep` and `gate` work wherever the binary is installed.
//!
//! Which scenarios a command uses when given none: `--suite DIR` if given, else `./scenarios`
//! if it exists, else these. A scenario path `scenarios/NAME.toml` that does not exist on disk
//! is the built-in scenario NAME, so rerun lines work anywhere.

/// (name, file text) of every file in `scenarios/`, by name.
pub const SUITE: &[(&str, &str)] = &[
    (
        "budget-exhaustion-summary",
        include_str!("../../scenarios/budget-exhaustion-summary.toml"),
    ),
    (
        "budget-starvation-independent",
        include_str!("../../scenarios/budget-starvation-independent.toml"),
    ),
    (
        "budget-starvation-shared",
        include_str!("../../scenarios/budget-starvation-shared.toml"),
    ),
    (
        "child-timeout",
        include_str!("../../scenarios/child-timeout.toml"),
    ),
    (
        "execute-code-spin-wait",
        include_str!("../../scenarios/execute-code-spin-wait.toml"),
    ),
    (
        "failure-tolerant-terminal",
        include_str!("../../scenarios/failure-tolerant-terminal.toml"),
    ),
    (
        "fan-out-beyond-concurrency",
        include_str!("../../scenarios/fan-out-beyond-concurrency.toml"),
    ),
    (
        "fan-out-beyond-max-subagents",
        include_str!("../../scenarios/fan-out-beyond-max-subagents.toml"),
    ),
    (
        "healthy-distinct-execute-code",
        include_str!("../../scenarios/healthy-distinct-execute-code.toml"),
    ),
    (
        "healthy-progressing-poll",
        include_str!("../../scenarios/healthy-progressing-poll.toml"),
    ),
    (
        "healthy-repeated-check",
        include_str!("../../scenarios/healthy-repeated-check.toml"),
    ),
    (
        "healthy-research-40-searches",
        include_str!("../../scenarios/healthy-research-40-searches.toml"),
    ),
    (
        "incident-100849-telegram-replays",
        include_str!("../../scenarios/incident-100849-telegram-replays.toml"),
    ),
    (
        "incident-112535-identical-terminal",
        include_str!("../../scenarios/incident-112535-identical-terminal.toml"),
    ),
    (
        "incident-115193-execute-code-probe",
        include_str!("../../scenarios/incident-115193-execute-code-probe.toml"),
    ),
    (
        "incident-17327-process-poll",
        include_str!("../../scenarios/incident-17327-process-poll.toml"),
    ),
    (
        "incident-2873-shared-budget",
        include_str!("../../scenarios/incident-2873-shared-budget.toml"),
    ),
    (
        "incident-37911-memory-signal",
        include_str!("../../scenarios/incident-37911-memory-signal.toml"),
    ),
    (
        "incident-52868-async-pool-full",
        include_str!("../../scenarios/incident-52868-async-pool-full.toml"),
    ),
    (
        "incident-64927-qqbot-terminal",
        include_str!("../../scenarios/incident-64927-qqbot-terminal.toml"),
    ),
    (
        "incident-67829-memory-no-action",
        include_str!("../../scenarios/incident-67829-memory-no-action.toml"),
    ),
    (
        "incident-75569-process-wait",
        include_str!("../../scenarios/incident-75569-process-wait.toml"),
    ),
    (
        "incident-85233-fan-out-tokens",
        include_str!("../../scenarios/incident-85233-fan-out-tokens.toml"),
    ),
    (
        "incident-89069-feishu-terminal",
        include_str!("../../scenarios/incident-89069-feishu-terminal.toml"),
    ),
    (
        "incident-94855-memory-oscillation",
        include_str!("../../scenarios/incident-94855-memory-oscillation.toml"),
    ),
    (
        "incident-96247-tool-search-context",
        include_str!("../../scenarios/incident-96247-tool-search-context.toml"),
    ),
    (
        "live-delegation",
        include_str!("../../scenarios/live-delegation.toml"),
    ),
    (
        "live-dropped-streams",
        include_str!("../../scenarios/live-dropped-streams.toml"),
    ),
    (
        "live-empty-exhausted",
        include_str!("../../scenarios/live-empty-exhausted.toml"),
    ),
    (
        "live-empty-replies",
        include_str!("../../scenarios/live-empty-replies.toml"),
    ),
    (
        "live-heeded-warning",
        include_str!("../../scenarios/live-heeded-warning.toml"),
    ),
    (
        "live-malformed-args",
        include_str!("../../scenarios/live-malformed-args.toml"),
    ),
    (
        "live-malformed-args-exhausted",
        include_str!("../../scenarios/live-malformed-args-exhausted.toml"),
    ),
    (
        "live-mixed-batch",
        include_str!("../../scenarios/live-mixed-batch.toml"),
    ),
    (
        "live-nested-delegation",
        include_str!("../../scenarios/live-nested-delegation.toml"),
    ),
    (
        "live-provider-down",
        include_str!("../../scenarios/live-provider-down.toml"),
    ),
    (
        "live-provider-errors",
        include_str!("../../scenarios/live-provider-errors.toml"),
    ),
    (
        "live-provider-unreachable",
        include_str!("../../scenarios/live-provider-unreachable.toml"),
    ),
    (
        "live-recorded-stop",
        include_str!("../../scenarios/live-recorded-stop.toml"),
    ),
    (
        "live-repeated-batch",
        include_str!("../../scenarios/live-repeated-batch.toml"),
    ),
    (
        "live-tool-timeouts",
        include_str!("../../scenarios/live-tool-timeouts.toml"),
    ),
    (
        "live-unknown-tool-in-batch",
        include_str!("../../scenarios/live-unknown-tool-in-batch.toml"),
    ),
    (
        "live-unknown-tool-strikes",
        include_str!("../../scenarios/live-unknown-tool-strikes.toml"),
    ),
    (
        "live-unknown-tools",
        include_str!("../../scenarios/live-unknown-tools.toml"),
    ),
    (
        "live-until-children",
        include_str!("../../scenarios/live-until-children.toml"),
    ),
    (
        "live-user-stop",
        include_str!("../../scenarios/live-user-stop.toml"),
    ),
    (
        "live-user-turns",
        include_str!("../../scenarios/live-user-turns.toml"),
    ),
    (
        "poller-exempt",
        include_str!("../../scenarios/poller-exempt.toml"),
    ),
    (
        "read-only-no-progress",
        include_str!("../../scenarios/read-only-no-progress.toml"),
    ),
    (
        "repeated-identical-failure",
        include_str!("../../scenarios/repeated-identical-failure.toml"),
    ),
    (
        "runtime-context-too-small",
        include_str!("../../scenarios/runtime-context-too-small.toml"),
    ),
    (
        "same-tool-failure-halt",
        include_str!("../../scenarios/same-tool-failure-halt.toml"),
    ),
    (
        "two-call-cycle",
        include_str!("../../scenarios/two-call-cycle.toml"),
    ),
    (
        "web-search-flood",
        include_str!("../../scenarios/web-search-flood.toml"),
    ),
];

/// The path a built-in scenario is known by.
pub fn path_of(name: &str) -> String {
    format!("scenarios/{name}.toml")
}

/// The built-in scenario a missing path stands for: `NAME`, `NAME.toml` or
/// `scenarios/NAME.toml`.
pub fn lookup(path: &std::path::Path) -> Option<(&'static str, &'static str)> {
    let parent = path
        .parent()
        .map(|p| p.as_os_str().to_string_lossy().into_owned());
    if !matches!(
        parent.as_deref(),
        None | Some("") | Some("scenarios") | Some("./scenarios")
    ) {
        return None;
    }
    let name = path.file_name()?.to_str()?;
    let name = name.strip_suffix(".toml").unwrap_or(name);
    SUITE.iter().find(|(n, _)| *n == name).copied()
}
