//! Which messages a Hermes compaction keeps, message by message (0.19.0,
//! `agent/context_compressor.py`): the protected head, the tail the token budget keeps, the
//! old tool results it prunes first, and the middle a summary replaces.
//!
//! The conversation is the list after the system prompt (which Hermes always keeps apart).
//! Each message is known by its role and its size in Hermes's own per-message estimate
//! (content over 4, plus a little for its keys). The rules, in the order Hermes applies them:
//!
//! 1. Too short to compress (the head plus four messages or fewer): nothing changes, and the
//!    attempt counts as one that saved nothing.
//! 2. Old tool results are pruned: outside the most recent messages (the tail budget's worth,
//!    and never fewer than 20), a result of more than 200 characters becomes a one-line note.
//! 3. The head: the first three messages at the session's first compaction, none after it.
//! 4. The tail: walking back from the end, messages are kept while they fit in 1.5 times the
//!    tail budget, and at least 8 are kept (fewer on a short conversation); the cut never
//!    parts an assistant's tool calls from their results, keeps the newest real user message
//!    and the newest assistant reply in the tail, and always leaves at least one message to
//!    summarise.
//!
//! ```
//! use loopsim_engine::turn::compaction_plan::{Message, Plan, plan};
//!
//! // A task, then nine rounds of a call and its 5,000-token result.
//! let mut msgs = vec![Message::user(120)];
//! for _ in 0..9 {
//!     msgs.push(Message::calls(45));
//!     msgs.push(Message::tool(5_000));
//! }
//! match plan(&msgs, 0, 10_880) {
//!     // The task and the first round are the head; the last five rounds are the tail.
//!     Plan::Summarise { start, end, .. } => assert_eq!((start, end), (3, 9)),
//!     other => panic!("{other:?}"),
//! }
//! ```

/// What a message is, as far as the cut depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A user's message (a task, a later turn, a background result).
    User,
    /// A model reply: with tool calls, and whether it has text a reader would see.
    Assistant { calls: bool, text: bool },
    /// A tool's result.
    Tool,
    /// An earlier compaction's summary, in an assistant message or a user one (Hermes never
    /// takes it for the user's own; in an assistant message it counts as a reply with text).
    Summary { assistant: bool },
}

impl Role {
    /// The role the message has in the conversation.
    fn speaker(self) -> Speaker {
        match self {
            Role::User | Role::Summary { assistant: false } => Speaker::User,
            Role::Assistant { .. } | Role::Summary { assistant: true } => Speaker::Assistant,
            Role::Tool => Speaker::Tool,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Speaker {
    User,
    Assistant,
    Tool,
}

/// One message of the conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    /// Its size in Hermes's per-message estimate.
    pub tokens: u64,
    /// A tool result's size once pruned to its one-line note (which names the tool, its
    /// main argument and the result's length).
    pub note: u64,
}

impl Message {
    pub fn user(tokens: u64) -> Self {
        Message {
            role: Role::User,
            tokens,
            note: PRUNED_TOKENS,
        }
    }
    /// A reply that calls tools (and has no text).
    pub fn calls(tokens: u64) -> Self {
        Message {
            role: Role::Assistant {
                calls: true,
                text: false,
            },
            tokens,
            note: PRUNED_TOKENS,
        }
    }
    /// A reply of text only.
    pub fn text(tokens: u64) -> Self {
        Message {
            role: Role::Assistant {
                calls: false,
                text: true,
            },
            tokens,
            note: PRUNED_TOKENS,
        }
    }
    pub fn tool(tokens: u64) -> Self {
        Message {
            role: Role::Tool,
            tokens,
            note: PRUNED_TOKENS,
        }
    }
    /// The message with its note's size, when known.
    pub fn with_note(mut self, note: u64) -> Self {
        self.note = note;
        self
    }
    /// A summary in a user message.
    pub fn summary(tokens: u64) -> Self {
        Message {
            role: Role::Summary { assistant: false },
            tokens,
            note: PRUNED_TOKENS,
        }
    }
}

/// Messages of the first exchange kept at the session's first compaction.
pub const PROTECT_FIRST: usize = 3;
/// The fewest recent messages pruning leaves alone.
pub const PROTECT_LAST: usize = 20;
/// The fewest messages the tail keeps (when the conversation has them).
const TAIL_FLOOR: usize = 8;
/// A result longer than 200 characters is pruned to a one-line note: 60 tokens in the
/// estimate, which adds 10 to the content's 50.
const PRUNE_ABOVE: u64 = 60;
/// The usual size of that note in Hermes's estimate ("[tool] did what (N chars)").
pub const PRUNED_TOKENS: u64 = 21;

/// What Hermes puts around a summary in its own message (a note that it is for reference
/// only, an end marker), in its per-message estimate.
pub const SUMMARY_FRAME_TOKENS: u64 = 439;
/// The same when the summary is appended to the first message of the tail (with a header
/// and a delimiter besides).
pub const MERGED_FRAME_TOKENS: u64 = 457;

/// What a compaction does to a conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Nothing to summarise: the conversation stays as it is, and the attempt saved nothing.
    Nothing,
    /// The messages `start..end` (of `pruned`, the conversation after pruning) become one
    /// summary; the rest stays.
    Summarise {
        pruned: Vec<Message>,
        start: usize,
        end: usize,
    },
}

/// The compaction of `msgs` after `made` earlier compactions in the session, with a tail
/// budget of `tail_budget` tokens (the threshold times `compression.target_ratio`).
pub fn plan(msgs: &[Message], made: u32, tail_budget: u64) -> Plan {
    let head = head_size(msgs, made);
    if msgs.len() <= head + 4 {
        return Plan::Nothing;
    }
    let pruned = prune(msgs, tail_budget);
    let start = align_forward(&pruned, head);
    let end = tail_cut(&pruned, start, tail_budget);
    if start >= end {
        return Plan::Nothing;
    }
    Plan::Summarise { pruned, start, end }
}

/// The protected head: the first exchange until the session has compacted once (or holds
/// an earlier summary), then nothing.
fn head_size(msgs: &[Message], made: u32) -> usize {
    if made > 0 || msgs.iter().any(|m| matches!(m.role, Role::Summary { .. })) {
        0
    } else {
        PROTECT_FIRST
    }
}

/// Old tool results outside the recent messages become one-line notes.
fn prune(msgs: &[Message], tail_budget: u64) -> Vec<Message> {
    let n = msgs.len();
    let floor = PROTECT_LAST.min(n);
    let mut kept = 0u64;
    let mut boundary = n;
    for i in (0..n).rev() {
        if kept + msgs[i].tokens > tail_budget && n - i >= floor {
            boundary = i;
            break;
        }
        kept += msgs[i].tokens;
        boundary = i;
    }
    let protected = (n - boundary).max(floor);
    let mut out = msgs.to_vec();
    for m in &mut out[..n - protected] {
        if m.role == Role::Tool && m.tokens > PRUNE_ABOVE {
            m.tokens = m.note;
        }
    }
    out
}

/// Past any tool results at `i` (a cut never starts inside a group of results).
fn align_forward(msgs: &[Message], mut i: usize) -> usize {
    while i < msgs.len() && msgs[i].role == Role::Tool {
        i += 1;
    }
    i
}

/// When results end just before `i`, back to the reply that called them.
fn align_backward(msgs: &[Message], i: usize) -> usize {
    if i == 0 || i >= msgs.len() {
        return i;
    }
    let mut check = i;
    while check > 0 && msgs[check - 1].role == Role::Tool {
        check -= 1;
    }
    match check.checked_sub(1).map(|c| (c, msgs[c].role)) {
        Some((c, Role::Assistant { calls: true, .. })) => c,
        _ => i,
    }
}

/// Where the tail starts, for a middle that may start at `head_end`.
fn tail_cut(msgs: &[Message], head_end: usize, budget: u64) -> usize {
    let n = msgs.len();
    let available = n.saturating_sub(head_end + 1);
    let min_tail = if available > 1 {
        TAIL_FLOOR
            .min(3.max(available.saturating_sub(2)))
            .min(available)
    } else {
        0
    };
    let ceiling = (budget as f64 * 1.5) as u64;
    let mut kept = 0u64;
    let mut cut = n;
    for i in (head_end..n).rev() {
        if kept + msgs[i].tokens > ceiling && n - i >= min_tail {
            break;
        }
        kept += msgs[i].tokens;
        cut = i;
    }
    if cut <= head_end && kept <= ceiling && kept > 0 {
        // Everything fits: cut by the budget itself, so that something is summarised.
        let mut raw = 0u64;
        for j in (head_end..n).rev() {
            if raw + msgs[j].tokens > budget && n - j >= min_tail {
                cut = j;
                break;
            }
            raw += msgs[j].tokens;
            cut = j;
        }
    }
    let floor_cut = n - min_tail;
    cut = cut.min(floor_cut);
    if cut <= head_end {
        cut = floor_cut.max(head_end + 1);
    }
    cut = align_backward(msgs, cut);
    cut = keep_last_user(msgs, cut, head_end);
    cut = keep_last_reply(msgs, cut, head_end);
    align_forward(msgs, cut.max(head_end + 1))
}

/// The newest user message stays in the tail; where that would split it from its reply,
/// the whole exchange is summarised instead.
fn keep_last_user(msgs: &[Message], cut: usize, head_end: usize) -> usize {
    let Some(u) = (head_end..msgs.len())
        .rev()
        .find(|&i| msgs[i].role == Role::User)
    else {
        return cut;
    };
    if u >= cut {
        return cut;
    }
    if head_end + 1 > u {
        return exchange_end(msgs, u).max(head_end + 1);
    }
    u
}

/// The index after the user message at `u`, its reply and that reply's results.
fn exchange_end(msgs: &[Message], u: usize) -> usize {
    let mut i = u + 1;
    if i >= msgs.len() || msgs[i].role.speaker() != Speaker::Assistant {
        return i;
    }
    i += 1;
    while i < msgs.len() && msgs[i].role == Role::Tool {
        i += 1;
    }
    i
}

/// The newest reply with text (else the newest reply) stays in the tail.
fn keep_last_reply(msgs: &[Message], cut: usize, head_end: usize) -> usize {
    let mut any = None;
    let mut found = None;
    for i in (head_end..msgs.len()).rev() {
        let text = match msgs[i].role {
            Role::Assistant { text, .. } => text,
            Role::Summary { assistant: true } => true,
            _ => continue,
        };
        any.get_or_insert(i);
        if text {
            found = Some(i);
            break;
        }
    }
    match found.or(any) {
        Some(a) if a < cut => align_backward(msgs, a).max(head_end + 1),
        _ => cut,
    }
}

/// The messages a summary replaces that it reads: those after the newest earlier summary
/// among them (that one's text is carried forward instead).
pub fn summarised(pruned: &[Message], start: usize, end: usize) -> &[Message] {
    let from = (start..end)
        .rev()
        .find(|&i| matches!(pruned[i].role, Role::Summary { .. }))
        .map_or(start, |i| i + 1);
    &pruned[from..end]
}

/// The conversation after a compaction that replaced `pruned[start..end]` with a summary of
/// `summary` tokens: the summary in its own message (its role chosen so that no two
/// neighbours share one) or appended to the first message of the tail when no role fits;
/// and, where no message of the user's own is left, the newest one of `original` put back.
pub fn compacted(
    original: &[Message],
    pruned: &[Message],
    start: usize,
    end: usize,
    summary: u64,
) -> Vec<Message> {
    let n = pruned.len();
    let last_head = start
        .checked_sub(1)
        .map_or(Speaker::User, |i| pruned[i].role.speaker());
    let first_tail = pruned.get(end).map_or(Speaker::User, |m| m.role.speaker());
    let user_survives = pruned[..start]
        .iter()
        .chain(&pruned[end..])
        .any(|m| m.role.speaker() == Speaker::User);
    let force_user = !user_survives;
    let mut speaker = if last_head != Speaker::User || force_user {
        Speaker::User
    } else {
        Speaker::Assistant
    };
    let mut merge = false;
    if speaker == first_tail {
        let flipped = if speaker == Speaker::User {
            Speaker::Assistant
        } else {
            Speaker::User
        };
        if flipped != last_head && !force_user {
            speaker = flipped;
        } else {
            merge = true;
        }
    }
    let mut out = Vec::with_capacity(n - (end - start) + 2);
    out.extend_from_slice(&pruned[..start]);
    if !merge {
        out.push(Message {
            role: Role::Summary {
                assistant: speaker == Speaker::Assistant,
            },
            tokens: summary + SUMMARY_FRAME_TOKENS,
            note: PRUNED_TOKENS,
        });
    }
    for (i, m) in pruned[end..].iter().enumerate() {
        let mut m = *m;
        if merge && i == 0 {
            m.tokens += summary + MERGED_FRAME_TOKENS;
            m.role = Role::Summary {
                assistant: m.role.speaker() == Speaker::Assistant,
            };
        }
        out.push(m);
    }
    if !out.iter().any(|m| m.role == Role::User)
        && let Some(anchor) = original.iter().rev().find(|m| m.role == Role::User)
    {
        put_back(&mut out, *anchor);
    }
    out
}

/// The user's newest message goes back before the first reply that no user message
/// precedes, else at the end, else (after a user message of the runtime's own) into it.
fn put_back(out: &mut Vec<Message>, anchor: Message) {
    let slot = (0..out.len()).find(|&i| {
        out[i].role.speaker() == Speaker::Assistant
            && (i == 0 || out[i - 1].role.speaker() != Speaker::User)
    });
    match (slot, out.last()) {
        (Some(i), _) => out.insert(i, anchor),
        (None, None) => out.push(anchor),
        (None, Some(last)) if last.role.speaker() != Speaker::User => out.push(anchor),
        (None, Some(last)) if matches!(last.role, Role::Summary { .. }) => out.push(anchor),
        (None, Some(_)) => {
            let last = out.last_mut().expect("not empty");
            last.tokens += anchor.tokens;
            last.role = Role::User;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rounds(task: u64, n: usize, result: u64) -> Vec<Message> {
        let mut m = vec![Message::user(task)];
        for _ in 0..n {
            m.push(Message::calls(45));
            m.push(Message::tool(result));
        }
        m
    }

    #[test]
    fn short_conversations_are_left_alone() {
        // The head (3) plus four messages or fewer.
        assert_eq!(plan(&rounds(100, 3, 5_000), 0, 10_880), Plan::Nothing);
        assert!(matches!(
            plan(&rounds(100, 4, 5_000), 0, 10_880),
            Plan::Summarise { .. }
        ));
    }

    #[test]
    fn the_tail_keeps_eight_messages_and_whole_rounds() {
        let Plan::Summarise { start, end, pruned } = plan(&rounds(100, 9, 5_000), 0, 10_880) else {
            panic!()
        };
        // Eight messages would cut after a result: the cut moves back to its call.
        assert_eq!((start, end), (3, 9));
        assert_eq!(pruned, rounds(100, 9, 5_000), "19 messages: nothing pruned");
    }

    #[test]
    fn old_results_are_pruned_past_twenty_messages() {
        let msgs = rounds(100, 15, 5_000);
        let Plan::Summarise { pruned, .. } = plan(&msgs, 0, 10_880) else {
            panic!()
        };
        let notes = pruned.iter().filter(|m| m.tokens == PRUNED_TOKENS).count();
        // 31 messages, the newest 20 kept: the 5 results among the first 11 are pruned.
        assert_eq!(notes, 5);
    }

    #[test]
    fn after_the_first_compaction_the_head_is_gone() {
        let mut msgs = rounds(100, 2, 5_000);
        msgs.push(Message::summary(3_600));
        msgs.extend(rounds(0, 5, 5_000).into_iter().skip(1));
        match plan(&msgs, 1, 10_880) {
            // The task is the newest user message: it and its first exchange are summarised
            // together (never parted), the rest, the earlier summary too, stays.
            Plan::Summarise { start, end, .. } => assert_eq!((start, end), (0, 3)),
            other => panic!("{other:?}"),
        }
    }
}
