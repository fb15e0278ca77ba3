//! The agent's context before each model call: Hermes's compaction of the conversation,
//! message by message ([`loopsim_engine::turn::compaction_plan`]), with the compressor's memory of
//! the session ([`Session`]); the article loop's trimming; and the turn that dies of its
//! context.

use loopsim_engine::observation::trimmed_context;
use loopsim_engine::turn::compaction_plan::Message;
use loopsim_engine::turn::compression::{Gate, Session};

use super::{CompressionCall, ContextGate, ScriptedAgent, stream};
use crate::clock::Duration;

/// The conversation as Hermes's compressor sees it, kept only where the agent compacts.
#[derive(Clone, Debug, Default)]
pub(super) struct Conversation {
    /// The messages after the system prompt (the task first, with no tokens of its own: the
    /// scenario's `context_tokens` hold the system prompt, the tools and the task).
    messages: Vec<Message>,
    session: Option<Session>,
    /// Compactions made in the session (the head is protected only before the first).
    compacted: u32,
}

impl ScriptedAgent<'_> {
    /// Whether the conversation is kept message by message (the agent compacts it).
    fn tracks(&self) -> bool {
        self.window.is_some() && self.compresses && self.observation.trim_context_at.is_none()
    }

    /// A message joined the conversation.
    pub(super) fn record(&mut self, m: Message) {
        if !self.tracks() {
            return;
        }
        let c = &mut self.conversation;
        if c.messages.is_empty() {
            c.messages.push(Message::user(0));
        }
        c.messages.push(m);
    }

    /// The last message grew (a hint the runtime appends to a result).
    pub(super) fn record_growth(&mut self, tokens: u64) {
        if let Some(m) = self.conversation.messages.last_mut() {
            m.tokens += tokens;
        }
    }

    /// A response came back for a prompt of `input` tokens (`called_tools`: the loop runs
    /// its calls, so Hermes checks the prompt's size after it).
    pub(super) fn responded(&mut self, input: u64, called_tools: bool) {
        if let Some(s) = self.session() {
            s.after_call(input, called_tools);
        }
    }

    fn session(&mut self) -> Option<&mut Session> {
        if !self.tracks() {
            return None;
        }
        let threshold = self.compression.threshold_tokens(self.window?);
        Some(
            self.conversation
                .session
                .get_or_insert_with(|| Session::new(threshold)),
        )
    }

    /// Whether [`context_gate`](Self::context_gate) would compact now, with a summary call,
    /// without compacting (live mode: which agent a runtime's summary request is for).
    pub fn compression_due(&self) -> bool {
        let (Some(window), true) = (self.window, self.tracks()) else {
            return false;
        };
        let threshold = self.compression.threshold_tokens(window);
        let mut session = self
            .conversation
            .session
            .unwrap_or_else(|| Session::new(threshold));
        let mut attempts = self.compressions;
        loop {
            match session.before_call(&self.compression, window, self.context, attempts) {
                Gate::Send | Gate::Exhausted => return false,
                Gate::Compress { attempt, .. } => {
                    let messages = self.messages_now();
                    if self
                        .compression
                        .compact(window, &messages, self.conversation.compacted)
                        .is_some()
                    {
                        return true;
                    }
                    session.nothing_to_compact();
                    attempts += u32::from(attempt);
                }
            }
        }
    }

    /// The conversation now (the task alone before the first message).
    fn messages_now(&self) -> Vec<Message> {
        if self.conversation.messages.is_empty() {
            vec![Message::user(0)]
        } else {
            self.conversation.messages.clone()
        }
    }

    /// The share of the window that triggers compression, in tokens, when the agent
    /// compresses at all.
    pub fn compression_threshold(&self) -> Option<u64> {
        self.window
            .filter(|_| self.compresses)
            .map(|w| self.compression.threshold_tokens(w))
    }

    /// Hermes's check before a model call: compact the conversation if it nears the model's
    /// window, or give up when it no longer fits; the article loop drops its oldest results
    /// instead.
    pub fn context_gate(&mut self) -> ContextGate {
        let Some(window) = self.window else {
            return ContextGate::Send;
        };
        if let Some(share) = self.observation.trim_context_at {
            let floor = self.spec.context_tokens;
            if let Some(after) = trimmed_context(self.context, window, share, floor) {
                let before = self.context;
                self.context = after;
                // What the cache held after the dropped results is gone.
                self.cold_cache = true;
                return ContextGate::Trimmed { before, after };
            }
        }
        if !self.tracks() {
            return if self.context >= window {
                ContextGate::Exhausted
            } else {
                ContextGate::Send
            };
        }
        loop {
            let (rules, context, attempts) = (self.compression, self.context, self.compressions);
            let session = self.session().expect("tracked");
            let (attempt, refused) = match session.before_call(&rules, window, context, attempts) {
                Gate::Send => return ContextGate::Send,
                Gate::Exhausted => return ContextGate::Exhausted,
                Gate::Compress { attempt, refused } => (attempt, refused),
            };
            if attempt {
                self.compressions += 1;
            }
            let messages = self.messages_now();
            let made = self.conversation.compacted;
            let compacted = rules.compact(window, &messages, made);
            let held: u64 = messages.iter().map(|m| m.tokens).sum();
            let Some(c) = compacted else {
                if refused {
                    // Refused by the provider and nothing to summarise: Hermes gives up.
                    return ContextGate::Exhausted;
                }
                // Nothing to summarise: an attempt that saved nothing; the check runs again.
                self.session().expect("tracked").nothing_to_compact();
                continue;
            };
            let kept: u64 = c.messages.iter().map(|m| m.tokens).sum();
            if refused && c.messages.len() >= messages.len() && kept as f64 >= held as f64 * 0.95 {
                // Refused, and the compaction freed too little to try again.
                return ContextGate::Exhausted;
            }
            let before = self.context;
            let after = before.saturating_sub(held) + kept;
            self.conversation.messages = c.messages;
            self.conversation.compacted += 1;
            self.session().expect("tracked").compacted(after);
            let (seed, name) = (self.seed, &self.name);
            let rng = self
                .compression_rng
                .get_or_insert_with(|| stream(seed, &format!("agent:{name}/compression")));
            let latency = Duration::from_secs_f64(self.model.latency_s.get_ref().sample(rng));
            self.context = after;
            // The prompt's prefix changed: the next call reads nothing from the cache.
            self.cold_cache = true;
            return ContextGate::Compressed(CompressionCall {
                attempt: self.compressions,
                before,
                after,
                latency,
                input_tokens: c.summary_input,
                output_tokens: c.summary,
            });
        }
    }
}
