//! Hermes's context compression, as far as a turn's fate depends on it: when the context is
//! compressed, what it holds afterwards, what the summary call reads and writes, and when a
//! turn runs out of attempts and dies of its context.
//!
//! The figures are `agent/context_compressor.py`'s defaults (threshold 50% of the window,
//! raised to 75% below 512 K tokens and floored at 64 K; a tail of 20% of the threshold; a
//! summary of 20% of what it replaces, between 2,000 tokens and 5% of the window or 10,000)
//! and the turn loop's three compression attempts per turn. `compression.threshold` and
//! `compression.target_ratio` set the first two (`config`). What a compaction keeps is
//! decided message by message ([`super::compaction_plan`]); when one is made, skipped or given
//! up on follows the compressor's memory of the session ([`Session`]).

#[cfg(test)]
use super::compaction_plan::SUMMARY_FRAME_TOKENS;
use super::compaction_plan::{self, Message, Plan};

/// Compression settings (Hermes's defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Compression {
    /// `compression.threshold`: the share of the window that triggers compression.
    pub threshold: f64,
    /// `compression.target_ratio`: the tail kept, as a share of the threshold.
    pub target_ratio: f64,
    /// Compressions a turn may make (0.19.0 hard-codes 3).
    pub max_attempts: u32,
}

impl Default for Compression {
    fn default() -> Self {
        Compression {
            threshold: 0.50,
            target_ratio: 0.20,
            max_attempts: 3,
        }
    }
}

/// Windows below this keep at least [`SMALL_WINDOW_THRESHOLD`].
const SMALL_WINDOW: u64 = 512_000;
const SMALL_WINDOW_THRESHOLD: f64 = 0.75;
/// The lowest threshold in tokens (Hermes's `MINIMUM_CONTEXT_LENGTH`).
const MIN_THRESHOLD_TOKENS: u64 = 64_000;
/// Where a window too small for that floor triggers instead.
const MIN_WINDOW_TRIGGER: f64 = 0.85;
const MIN_SUMMARY_TOKENS: u64 = 2_000;
const SUMMARY_RATIO: f64 = 0.20;
const SUMMARY_CEILING: u64 = 10_000;

/// What the gate before a model call decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Send the request as it is.
    Send,
    /// Compact first ([`Compression::compact`]). `attempt`: the compaction counts toward the
    /// turn's attempts (the check before a call, a refused request); the check after a
    /// response that reported a prompt over the threshold does not count. `refused`: the
    /// provider refused the request as larger than the window, and Hermes gives up if
    /// compacting frees too little.
    Compress { attempt: bool, refused: bool },
    /// The context is larger than the window and cannot be compressed again this turn: the
    /// turn ends (`context_compression_exhausted` where Hermes names it).
    Exhausted,
}

/// Hermes's summarizer prompt without the conversation it summarises (its instructions and
/// the task it focuses on), in tokens, as 0.19.0 sends it.
pub const SUMMARY_PROMPT_TOKENS: u64 = 1_500;
/// The most of one message the summarizer reads: its first 4,000 characters and last 1,500.
const SUMMARY_MESSAGE_CAP: u64 = 1_385;
/// What a message's keys and quotes add to Hermes's estimate of it printed whole, beyond
/// its per-message estimate, on average.
const MESSAGE_KEYS: u64 = 4;
/// What each message adds to the summarizer prompt besides its text (its label).
const SUMMARY_MESSAGE_LABEL: u64 = 8;

/// One compaction: the conversation after it and its summary call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compacted {
    pub messages: Vec<Message>,
    /// The summary call's prompt and its output, in tokens.
    pub summary_input: u64,
    pub summary: u64,
}

impl Compression {
    /// The context size that triggers compression in a window of `window` tokens.
    pub fn threshold_tokens(&self, window: u64) -> u64 {
        let share = if window < SMALL_WINDOW {
            self.threshold.max(SMALL_WINDOW_THRESHOLD)
        } else {
            self.threshold
        };
        let floored = ((window as f64 * share) as u64).max(MIN_THRESHOLD_TOKENS);
        if floored >= window {
            ((window as f64 * MIN_WINDOW_TRIGGER) as u64).clamp(1, window.saturating_sub(1).max(1))
        } else {
            floored
        }
    }

    /// The most recent tokens compression keeps as they are.
    pub fn tail_tokens(&self, window: u64) -> u64 {
        (self.threshold_tokens(window) as f64 * self.target_ratio.clamp(0.10, 0.80)) as u64
    }

    /// The summary's size for `summarized` tokens of conversation.
    pub fn summary_tokens(&self, window: u64, summarized: u64) -> u64 {
        let ceiling = ((window as f64 * 0.05) as u64).min(SUMMARY_CEILING);
        ((summarized as f64 * SUMMARY_RATIO) as u64)
            .min(ceiling)
            .max(MIN_SUMMARY_TOKENS)
    }

    /// Compacts `msgs` (the conversation after the system prompt) after `made` earlier
    /// compactions in the session; `None` when there is nothing to summarise
    /// ([`compaction_plan::plan`]).
    pub fn compact(&self, window: u64, msgs: &[Message], made: u32) -> Option<Compacted> {
        let Plan::Summarise { pruned, start, end } =
            compaction_plan::plan(msgs, made, self.tail_tokens(window))
        else {
            return None;
        };
        let read = compaction_plan::summarised(&pruned, start, end);
        // Hermes sizes the summary from the messages printed whole (their keys too).
        let content: u64 = read.iter().map(|m| m.tokens + MESSAGE_KEYS).sum();
        let summary = self.summary_tokens(window, content);
        let prompt: u64 = read
            .iter()
            .map(|m| m.tokens.min(SUMMARY_MESSAGE_CAP) + SUMMARY_MESSAGE_LABEL)
            .sum();
        Some(Compacted {
            messages: compaction_plan::compacted(msgs, &pruned, start, end, summary),
            summary_input: SUMMARY_PROMPT_TOKENS + prompt,
            summary,
        })
    }
}

/// What Hermes's compressor remembers between calls in a session, as far as it decides
/// when to compact: the provider's last prompt size, the estimate after the last
/// compaction, and the compactions that did not help. A compaction is skipped while the
/// estimate has grown only a little (4,096 tokens, or 5% of the threshold) since a request
/// the provider proved fits, and automatic compaction stops after two that did not help.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Session {
    /// The threshold in tokens.
    threshold: u64,
    /// The last response's prompt, and whether it called tools.
    last_input: u64,
    last_called_tools: bool,
    /// The estimate right after the last compaction.
    compacted_at: u64,
    /// The estimate of a request the provider has shown fits.
    fit_baseline: u64,
    /// A compaction was made and no response has come since.
    awaiting: bool,
    /// The next response says whether the last compaction got under the threshold.
    verify: bool,
    /// Compactions in a row that did not help.
    ineffective: u32,
    /// The check after the last response has been made.
    post_checked: bool,
}

/// Growth over a request known to fit that Hermes does not compact for (at least).
const DEFER_GROWTH: u64 = 4_096;
/// Compactions in a row that did not help after which Hermes stops compacting by itself.
const INEFFECTIVE_LIMIT: u32 = 2;

impl Session {
    pub fn new(threshold: u64) -> Self {
        Session {
            threshold,
            ..Session::default()
        }
    }

    /// The check before a model call with `context` tokens, after `attempts` compactions
    /// counted this turn.
    pub fn before_call(
        &mut self,
        rules: &Compression,
        window: u64,
        context: u64,
        attempts: u32,
    ) -> Gate {
        let blocked = self.ineffective >= INEFFECTIVE_LIMIT;
        if self.last_called_tools
            && self.last_input >= self.threshold
            && !blocked
            && !self.post_checked
        {
            // The check after that response compacts before this call, uncounted.
            self.post_checked = true;
            return Gate::Compress {
                attempt: false,
                refused: false,
            };
        }
        if context < self.threshold {
            return Gate::Send;
        }
        if attempts >= rules.max_attempts {
            // Sent as it is; past the window the provider refuses it and the turn ends.
            return if context > window {
                Gate::Exhausted
            } else {
                Gate::Send
            };
        }
        let skipped = self.defers(context) || blocked;
        if context <= window && skipped {
            return Gate::Send;
        }
        // Before the call, or once the provider refuses a prompt past the window (which
        // compacts even when the checks would not).
        Gate::Compress {
            attempt: true,
            refused: skipped,
        }
    }

    /// Whether an estimate of `context` tokens, over the threshold, is put down to noise:
    /// it has grown little since a request the provider proved fits.
    fn defers(&mut self, context: u64) -> bool {
        if self.awaiting {
            return true;
        }
        if self.last_input == 0 || self.last_input >= self.threshold {
            return false;
        }
        let baseline = if self.fit_baseline > 0 {
            self.fit_baseline
        } else {
            self.compacted_at
        };
        let tolerated = DEFER_GROWTH.max((self.threshold as f64 * 0.05) as u64);
        if baseline == 0 || context.saturating_sub(baseline) > tolerated {
            return false;
        }
        self.fit_baseline = baseline.max(context);
        true
    }

    /// A compaction left `after` tokens.
    pub fn compacted(&mut self, after: u64) {
        self.compacted_at = after;
        self.awaiting = true;
        self.verify = true;
    }

    /// A compaction found nothing to summarise.
    pub fn nothing_to_compact(&mut self) {
        self.ineffective += 1;
    }

    /// A response came back for a prompt of `input` tokens; `called_tools`: it asked for
    /// tools the loop runs.
    pub fn after_call(&mut self, input: u64, called_tools: bool) {
        self.last_input = input;
        self.last_called_tools = called_tools;
        if input > 0 {
            if input < self.threshold {
                if self.awaiting && self.compacted_at > 0 {
                    self.fit_baseline = self.compacted_at;
                }
                self.ineffective = 0;
            } else {
                self.fit_baseline = 0;
                if self.verify {
                    self.ineffective += 1;
                }
            }
        }
        self.verify = false;
        self.awaiting = false;
        self.post_checked = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_follow_hermes_floors() {
        let c = Compression::default();
        // Below 512 K the 50% default is raised to 75%.
        assert_eq!(c.threshold_tokens(130_000), 97_500);
        // From 512 K on, 50% stands.
        assert_eq!(c.threshold_tokens(1_000_000), 500_000);
        // The 64 K floor would reach a 64 K window: 85% instead.
        assert_eq!(c.threshold_tokens(64_000), 54_400);
        // A 80 K window: 75% is 60 K, floored to 64 K.
        assert_eq!(c.threshold_tokens(80_000), 64_000);
        assert_eq!(c.tail_tokens(130_000), 19_500);
    }

    #[test]
    fn summary_is_bounded() {
        let c = Compression::default();
        assert_eq!(c.summary_tokens(130_000, 1_000), 2_000);
        assert_eq!(c.summary_tokens(130_000, 30_000), 6_000);
        // 5% of the window caps it (6,500), and 10,000 caps that.
        assert_eq!(c.summary_tokens(130_000, 100_000), 6_500);
        assert_eq!(c.summary_tokens(1_000_000, 900_000), 10_000);
    }

    fn rounds(n: usize, result: u64) -> Vec<Message> {
        let mut m = vec![Message::user(100)];
        for _ in 0..n {
            m.push(Message::calls(45));
            m.push(Message::tool(result));
        }
        m
    }

    #[test]
    fn a_compaction_keeps_the_head_and_tail_and_summarises_the_rest() {
        let c = Compression::default();
        let got = c.compact(64_000, &rounds(9, 5_000), 0).unwrap();
        // Head: the task and the first round; tail: the last five rounds; between them the
        // summary of rounds 2 to 4 (15,135 tokens, 15,159 with the messages' keys: 20% is
        // 3,031; 5% of 64 K would cap it at 3,200).
        assert_eq!(got.summary, 3_031);
        assert_eq!(got.messages.len(), 3 + 1 + 10);
        assert_eq!(
            got.messages[3],
            Message::summary(3_031 + SUMMARY_FRAME_TOKENS)
        );
        // The summarizer reads each result's first and last characters only.
        assert_eq!(
            got.summary_input,
            SUMMARY_PROMPT_TOKENS + 3 * (45 + 1_385 + 16)
        );
        assert_eq!(c.compact(64_000, &rounds(3, 5_000), 0), None);
    }

    #[test]
    fn the_session_compacts_at_the_threshold_and_gives_up_after_the_attempts() {
        let c = Compression::default();
        let mut s = Session::new(c.threshold_tokens(130_000));
        assert_eq!(s.before_call(&c, 130_000, 97_499, 0), Gate::Send);
        assert_eq!(
            s.before_call(&c, 130_000, 97_500, 0),
            Gate::Compress {
                attempt: true,
                refused: false
            }
        );
        // No attempt left: sent while it fits, the turn dies once it does not.
        assert_eq!(s.before_call(&c, 130_000, 120_000, 3), Gate::Send);
        assert_eq!(s.before_call(&c, 130_000, 130_001, 3), Gate::Exhausted);
    }

    #[test]
    fn growth_just_after_a_fitting_request_is_not_compacted() {
        let c = Compression::default();
        let thr = c.threshold_tokens(64_000);
        let mut s = Session::new(thr);
        // A compaction that left the estimate just under the threshold; the next request fits.
        s.compacted(thr - 1_000);
        s.after_call(thr - 1_000, true);
        // 2,000 tokens more is within 4,096 of that request: sent as it is.
        assert_eq!(s.before_call(&c, 64_000, thr + 1_000, 0), Gate::Send);
        // The provider then reports a prompt over the threshold: compacted before the next
        // call, without counting an attempt.
        s.after_call(thr + 1_000, true);
        assert_eq!(
            s.before_call(&c, 64_000, thr + 6_000, 3),
            Gate::Compress {
                attempt: false,
                refused: false,
            }
        );
        // Once per response.
        assert_eq!(s.before_call(&c, 64_000, thr + 6_000, 3), Gate::Send);
    }

    #[test]
    fn two_compactions_that_do_not_help_stop_compaction() {
        let c = Compression::default();
        let thr = c.threshold_tokens(64_000);
        let mut s = Session::new(thr);
        s.nothing_to_compact();
        assert_eq!(
            s.before_call(&c, 64_000, thr, 1),
            Gate::Compress {
                attempt: true,
                refused: false
            }
        );
        s.nothing_to_compact();
        assert_eq!(s.before_call(&c, 64_000, thr, 2), Gate::Send);
        // Past the window the provider refuses the request, and Hermes compacts anyway
        // while it has attempts left.
        assert_eq!(
            s.before_call(&c, 64_000, 64_001, 2),
            Gate::Compress {
                attempt: true,
                refused: true
            }
        );
        assert_eq!(s.before_call(&c, 64_000, 64_001, 3), Gate::Exhausted);
        // A request under the threshold clears the count.
        s.after_call(thr - 1, true);
        assert_eq!(
            s.before_call(&c, 64_000, thr, 0),
            Gate::Compress {
                attempt: true,
                refused: false
            }
        );
    }
}
