//! A trace's events: what happened, to which agent, when; the kind is a type, its name the
//! trace's word for it.

use serde::Serialize;

/// What an event records. Its name in a trace is the snake_case word [`EventKind::as_str`]
/// gives; live mode, the comparison of a live run and the reports read the same kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    /// An agent's turn begins.
    TurnStart,
    /// A turn ends: `detail` is the exit reason.
    TurnEnd,
    /// A model call answered: tokens and latency.
    ModelCall,
    /// A model call failed (a provider error, a dropped stream).
    ModelError,
    /// A tool ran: arguments, result, failure.
    ToolCall,
    /// A call the runtime could not run (an unknown tool, arguments that are not JSON).
    ToolError,
    /// A call-limit middleware answered a call with an error; it never ran.
    ToolBlocked,
    /// The approval model's call (its tokens count in the run).
    ApprovalCall,
    /// A guardrail's decision: action, code, count.
    Decision,
    /// A stall guard's notice.
    Notice,
    /// The "summarise now" call when the budget ran out.
    SummaryCall,
    /// A planning step's model call.
    PlanningCall,
    /// The context was compressed.
    Compression,
    /// The runtime's estimate of the context.
    ContextEstimate,
    /// The context stayed past the window.
    ContextExhausted,
    /// The runtime trimmed the context.
    ContextTrim,
    /// Iterations given back to the budget.
    BudgetRefund,
    /// Children delegated.
    Spawn,
    /// A child finished.
    ChildDone,
    /// A child was cut off by its timeout.
    ChildTimeout,
    /// A child's own code raised.
    ChildCrash,
    /// A background child's result arrived.
    BackgroundResult,
    /// The user stopped the run.
    Interrupt,
}

impl EventKind {
    pub const ALL: [EventKind; 23] = [
        EventKind::TurnStart,
        EventKind::TurnEnd,
        EventKind::ModelCall,
        EventKind::ModelError,
        EventKind::ToolCall,
        EventKind::ToolError,
        EventKind::ToolBlocked,
        EventKind::ApprovalCall,
        EventKind::Decision,
        EventKind::Notice,
        EventKind::SummaryCall,
        EventKind::PlanningCall,
        EventKind::Compression,
        EventKind::ContextEstimate,
        EventKind::ContextExhausted,
        EventKind::ContextTrim,
        EventKind::BudgetRefund,
        EventKind::Spawn,
        EventKind::ChildDone,
        EventKind::ChildTimeout,
        EventKind::ChildCrash,
        EventKind::BackgroundResult,
        EventKind::Interrupt,
    ];

    /// The kind's word in a trace.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::TurnStart => "turn_start",
            EventKind::TurnEnd => "turn_end",
            EventKind::ModelCall => "model_call",
            EventKind::ModelError => "model_error",
            EventKind::ToolCall => "tool_call",
            EventKind::ToolError => "tool_error",
            EventKind::ToolBlocked => "tool_blocked",
            EventKind::ApprovalCall => "approval_call",
            EventKind::Decision => "decision",
            EventKind::Notice => "notice",
            EventKind::SummaryCall => "summary_call",
            EventKind::PlanningCall => "planning_call",
            EventKind::Compression => "compression",
            EventKind::ContextEstimate => "context_estimate",
            EventKind::ContextExhausted => "context_exhausted",
            EventKind::ContextTrim => "context_trim",
            EventKind::BudgetRefund => "budget_refund",
            EventKind::Spawn => "spawn",
            EventKind::ChildDone => "child_done",
            EventKind::ChildTimeout => "child_timeout",
            EventKind::ChildCrash => "child_crash",
            EventKind::BackgroundResult => "background_result",
            EventKind::Interrupt => "interrupt",
        }
    }

    /// The kind a trace's word names.
    pub fn parse(word: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == word)
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EventKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq<&str> for EventKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// One thing that happened. Fields not relevant to a kind are left out.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    pub t_us: u64,
    pub agent: String,
    pub kind: EventKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_used: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub children: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Event {
    /// An event of `kind` for `agent` at `t_us`, every other field left out.
    pub fn new(t_us: u64, agent: String, kind: EventKind) -> Event {
        Event {
            t_us,
            agent,
            kind,
            call: None,
            tool: None,
            args_hash: None,
            result_hash: None,
            failed: None,
            action: None,
            code: None,
            count: None,
            input_tokens: None,
            cache_read_tokens: None,
            cache_write_tokens: None,
            output_tokens: None,
            latency_us: None,
            budget_used: None,
            children: None,
            detail: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_from_its_word_and_serialises_as_it() {
        for k in EventKind::ALL {
            assert_eq!(EventKind::parse(k.as_str()), Some(k));
            assert_eq!(
                serde_json::to_string(&k).unwrap(),
                format!("\"{}\"", k.as_str())
            );
        }
        assert_eq!(EventKind::parse("end"), None);
        let mut words: Vec<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
        words.sort();
        words.dedup();
        assert_eq!(words.len(), EventKind::ALL.len(), "two kinds with one word");
    }
}
