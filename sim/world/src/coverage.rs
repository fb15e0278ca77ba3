//! Coverage marks: each guardrail decision, notice, exit reason, refund site and recovery
//! path a run can reach counts how often it did, so a suite can show (and `[expect] covers`
//! can require) that its scenarios reach what they claim to exercise.
//!
//! ```
//! use loopsim_world::coverage::{Coverage, Mark};
//!
//! let m = Mark::parse("refund.execute_code_round").unwrap();
//! let mut c = Coverage::default();
//! c.hit(m);
//! c.hit(m);
//! assert_eq!(c.get(m), 2);
//! assert_eq!(Mark::nearest("refund.execute_code"), Some("refund.execute_code_round"));
//! ```

use loopsim_engine::guardrails::{DecisionCode, NoticeKind};
use loopsim_engine::retry::ProviderFault;
use loopsim_engine::turn::{EmptyReply, ExitReason};

/// Where a budget refund was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RefundSite {
    /// A round of execute_code calls only gave its iteration back.
    ExecuteCodeRound,
    /// The call was given back before it was sent (the runtime's context was too small).
    BeforeSend,
}

/// How a delegation was admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Admitted {
    Background,
    Synchronous,
    Rejected,
}

/// A point of a run that coverage counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    Decision(DecisionCode),
    Notice(NoticeKind),
    /// The runtime's strategy-switch hint after failures of one tool in a row.
    StrategyHint,
    /// The runtime's format-error observation after replies it could not parse.
    FormatError,
    /// A turn ended with this exit reason's form (an index into [`ExitReason::FORMS`]).
    Exit(usize),
    Refund(RefundSite),
    EmptyReply(EmptyReply),
    Delegation(Admitted),
    ChildTimeout,
    UserStop,
    SummaryCall,
    PlanningCall,
    Compression,
    ContextTrim,
    ContextExhausted,
    /// A call-limit middleware answered a call with an error instead of running it.
    LimitBlockedCall,
    /// A result was replaced by a reference to an identical earlier one.
    ResultStub,
    /// An identical call in the same reply was dropped before it ran.
    DuplicateCallDropped,
    /// A model request met this provider error.
    Fault(ProviderFault),
    /// The runtime waited and sent a failed model request again.
    ProviderRetry,
    /// A stream dropped and the runtime opened another at once, within the attempt.
    StreamRetry,
    /// A call's attempts were spent on a transport error and the runtime rebuilt its
    /// client for one more round.
    ClientRebuild,
    /// A reply called only tools that do not exist.
    UnknownTool,
    /// A reply called a tool that does not exist besides tools that do.
    UnknownToolInBatch,
    /// A reply carried arguments that are not JSON.
    MalformedArgs,
    /// A tool call hung and ran until its timeout.
    ToolHang,
    /// A child's own code raised, and its parent's delegation reported it failed.
    ChildCrash,
}

/// Every decision code but `allow`, which decides nothing worth counting.
const DECISIONS: &[DecisionCode] = DecisionCode::ALL.split_first().expect("codes").1;
const NOTICES: [NoticeKind; 2] = [NoticeKind::IdenticalCallStreak, NoticeKind::IdenticalCycle];
const REFUNDS: [RefundSite; 2] = [RefundSite::ExecuteCodeRound, RefundSite::BeforeSend];
const EMPTY: [EmptyReply; 3] = [EmptyReply::Nudge, EmptyReply::Retry, EmptyReply::Exhausted];
const ADMITTED: [Admitted; 3] = [
    Admitted::Background,
    Admitted::Synchronous,
    Admitted::Rejected,
];
const SINGLES: [Mark; 23] = [
    Mark::StrategyHint,
    Mark::FormatError,
    Mark::ChildTimeout,
    Mark::UserStop,
    Mark::SummaryCall,
    Mark::PlanningCall,
    Mark::Compression,
    Mark::ContextTrim,
    Mark::ContextExhausted,
    Mark::LimitBlockedCall,
    Mark::ResultStub,
    Mark::DuplicateCallDropped,
    Mark::Fault(ProviderFault::RateLimit),
    Mark::Fault(ProviderFault::ServerError),
    Mark::Fault(ProviderFault::DroppedStream),
    Mark::ProviderRetry,
    Mark::StreamRetry,
    Mark::ClientRebuild,
    Mark::UnknownTool,
    Mark::UnknownToolInBatch,
    Mark::MalformedArgs,
    Mark::ToolHang,
    Mark::ChildCrash,
];

/// How many marks there are.
pub const COUNT: usize = DECISIONS.len()
    + NOTICES.len()
    + ExitReason::FORMS.len()
    + REFUNDS.len()
    + EMPTY.len()
    + ADMITTED.len()
    + SINGLES.len();

impl Mark {
    /// Every mark, in the order tables list them.
    pub fn all() -> impl Iterator<Item = Mark> {
        DECISIONS
            .iter()
            .copied()
            .map(Mark::Decision)
            .chain(NOTICES.into_iter().map(Mark::Notice))
            .chain((0..ExitReason::FORMS.len()).map(Mark::Exit))
            .chain(REFUNDS.into_iter().map(Mark::Refund))
            .chain(EMPTY.into_iter().map(Mark::EmptyReply))
            .chain(ADMITTED.into_iter().map(Mark::Delegation))
            .chain(SINGLES)
    }

    /// The mark of an exit reason as printed (its form: `max_iterations_reached(N/M)` for
    /// every cap).
    pub fn exit(shown: &str) -> Mark {
        let base = shown.split('(').next().unwrap_or(shown);
        let i = ExitReason::FORMS
            .iter()
            .position(|f| f.split('(').next() == Some(base))
            .unwrap_or(0);
        Mark::Exit(i)
    }

    /// Its position in [`Mark::all`].
    fn index(self) -> usize {
        const D: usize = DECISIONS.len();
        const N: usize = D + NOTICES.len();
        const X: usize = N + ExitReason::FORMS.len();
        const R: usize = X + REFUNDS.len();
        const E: usize = R + EMPTY.len();
        const A: usize = E + ADMITTED.len();
        match self {
            Mark::Decision(c) => pos(DECISIONS, c),
            Mark::Notice(k) => D + pos(&NOTICES, k),
            Mark::Exit(i) => N + i,
            Mark::Refund(r) => X + pos(&REFUNDS, r),
            Mark::EmptyReply(e) => R + pos(&EMPTY, e),
            Mark::Delegation(a) => E + pos(&ADMITTED, a),
            single => A + pos(&SINGLES, single),
        }
    }

    /// Its name: `decision.CODE`, `notice.KIND`, `exit.FORM`, `refund.SITE`,
    /// `empty_reply.WHAT`, `delegation.HOW`, or the mark's own name.
    pub fn name(self) -> String {
        match self {
            Mark::Decision(c) => format!("decision.{}", c.as_str()),
            Mark::Notice(k) => format!("notice.{}", k.as_str()),
            Mark::Exit(i) => {
                let f = ExitReason::FORMS[i];
                format!("exit.{}", f.split('(').next().unwrap_or(f))
            }
            Mark::Refund(r) => format!(
                "refund.{}",
                match r {
                    RefundSite::ExecuteCodeRound => "execute_code_round",
                    RefundSite::BeforeSend => "before_send",
                }
            ),
            Mark::EmptyReply(e) => format!(
                "empty_reply.{}",
                match e {
                    EmptyReply::Nudge => "nudge",
                    EmptyReply::Retry => "retry",
                    EmptyReply::Exhausted => "exhausted",
                }
            ),
            Mark::Delegation(a) => format!(
                "delegation.{}",
                match a {
                    Admitted::Background => "background",
                    Admitted::Synchronous => "synchronous",
                    Admitted::Rejected => "rejected",
                }
            ),
            Mark::StrategyHint => "strategy_hint".into(),
            Mark::FormatError => "format_error".into(),
            Mark::ChildTimeout => "child_timeout".into(),
            Mark::UserStop => "user_stop".into(),
            Mark::SummaryCall => "summary_call".into(),
            Mark::PlanningCall => "planning_call".into(),
            Mark::Compression => "compression".into(),
            Mark::ContextTrim => "context_trim".into(),
            Mark::ContextExhausted => "context_exhausted".into(),
            Mark::LimitBlockedCall => "limit_blocked_call".into(),
            Mark::ResultStub => "result_stub".into(),
            Mark::DuplicateCallDropped => "duplicate_call_dropped".into(),
            Mark::Fault(f) => format!("fault.{}", f.key()),
            Mark::ProviderRetry => "fault.retry".into(),
            Mark::StreamRetry => "fault.stream_retry".into(),
            Mark::ClientRebuild => "fault.client_rebuild".into(),
            Mark::UnknownTool => "fault.unknown_tool".into(),
            Mark::UnknownToolInBatch => "fault.unknown_tool_in_batch".into(),
            Mark::MalformedArgs => "fault.malformed_args".into(),
            Mark::ToolHang => "fault.tool_hang".into(),
            Mark::ChildCrash => "fault.child_crash".into(),
        }
    }

    pub fn parse(s: &str) -> Option<Mark> {
        Mark::all().find(|m| m.name() == s)
    }

    /// The mark name closest to a misspelled one.
    pub fn nearest(s: &str) -> Option<&'static str> {
        static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        let names = NAMES.get_or_init(|| Mark::all().map(Mark::name).collect());
        loopsim_engine::config::keys::nearest(s, names.iter().map(String::as_str))
    }
}

fn pos<T: PartialEq>(xs: &[T], x: T) -> usize {
    xs.iter().position(|y| *y == x).expect("listed")
}

/// How often a run (or a suite) reached each mark. Empty until the first hit, so a run
/// that moves its summary around carries a pointer, not the table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    hits: Vec<u64>,
}

impl Coverage {
    pub fn hit(&mut self, m: Mark) {
        if self.hits.is_empty() {
            self.hits = vec![0; COUNT];
        }
        self.hits[m.index()] += 1;
    }

    pub fn get(&self, m: Mark) -> u64 {
        self.hits.get(m.index()).copied().unwrap_or(0)
    }

    pub fn add(&mut self, o: &Coverage) {
        if o.hits.is_empty() {
            return;
        }
        if self.hits.is_empty() {
            self.hits = vec![0; COUNT];
        }
        for (a, b) in self.hits.iter_mut().zip(&o.hits) {
            *a += b;
        }
    }

    /// Every mark with its count, in [`Mark::all`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (Mark, u64)> + '_ {
        Mark::all().map(|m| (m, self.get(m)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mark_has_its_own_slot_and_name_and_parses_back() {
        let all: Vec<Mark> = Mark::all().collect();
        assert_eq!(all.len(), COUNT);
        for (i, m) in all.iter().enumerate() {
            assert_eq!(m.index(), i, "{m:?}");
            assert_eq!(Mark::parse(&m.name()), Some(*m));
        }
    }

    #[test]
    fn allow_is_the_one_code_left_out() {
        assert_eq!(DecisionCode::ALL[0], DecisionCode::Allow);
        assert!(Mark::parse("decision.allow").is_none());
        assert!(Mark::parse("decision.identical_cycle_halt").is_some());
    }

    #[test]
    fn an_exit_reason_marks_its_form() {
        let r = ExitReason::MaxIterationsReached { calls: 90, max: 90 };
        assert_eq!(
            Mark::exit(&r.to_string()).name(),
            "exit.max_iterations_reached"
        );
        assert_eq!(Mark::exit("guardrail_halt").name(), "exit.guardrail_halt");
    }
}
