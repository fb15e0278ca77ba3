//! Hermes's context compression, as far as a turn's fate depends on it: when the context is
//! compressed, what it holds afterwards, what the summary call reads and writes, and when a
//! turn runs out of attempts and dies of its context.
//!
//! The figures are `agent/context_compressor.py`'s defaults (threshold 50% of the window,
//! raised to 75% below 512 K tokens and floored at 64 K; a tail of 20% of the threshold; a
//! summary of 20% of what it replaces, between 2,000 tokens and 5% of the window or 10,000)
//! and the turn loop's three compression attempts per turn. `compression.threshold` and
//! `compression.target_ratio` set the first two (`config`); the compression that re-arms
//! after a verified compaction (newest) and refunds are not modelled yet.

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
    /// Compress first: a summary call reads `summarized` tokens and writes `summary`; the
    /// context then holds `after` tokens.
    Compress {
        summarized: u64,
        summary: u64,
        after: u64,
    },
    /// The context is larger than the window and cannot be compressed again this turn: the
    /// turn ends (`context_compression_exhausted` where Hermes names it).
    Exhausted,
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

    /// Before a model call: a `context` of tokens, of which the first `head` (system prompt
    /// and first messages) are always kept, after `attempts` compressions this turn.
    pub fn gate(&self, window: u64, context: u64, head: u64, attempts: u32) -> Gate {
        if context < self.threshold_tokens(window) {
            return Gate::Send;
        }
        if attempts >= self.max_attempts {
            // The gate stops compressing; the provider takes the request while it fits.
            return if context > window {
                Gate::Exhausted
            } else {
                Gate::Send
            };
        }
        let middle = context.saturating_sub(head);
        let tail = self.tail_tokens(window).min(middle);
        let summarized = middle - tail;
        let summary = self.summary_tokens(window, summarized);
        let after = head + summary + tail;
        if after >= context {
            // Nothing left to shrink: Hermes gives up ("cannot compress further").
            return if context > window {
                Gate::Exhausted
            } else {
                Gate::Send
            };
        }
        Gate::Compress {
            summarized,
            summary,
            after,
        }
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

    #[test]
    fn gate_compresses_three_times_then_lets_the_window_fill() {
        let c = Compression::default();
        assert_eq!(c.gate(130_000, 97_499, 10_000, 0), Gate::Send);
        match c.gate(130_000, 97_500, 10_000, 0) {
            Gate::Compress {
                summarized,
                summary,
                after,
            } => {
                assert_eq!(summarized, 97_500 - 10_000 - 19_500);
                assert_eq!(summary, 6_500);
                assert_eq!(after, 10_000 + 6_500 + 19_500);
            }
            other => panic!("{other:?}"),
        }
        // No attempt left: sent while it fits, the turn dies once it does not.
        assert_eq!(c.gate(130_000, 120_000, 10_000, 3), Gate::Send);
        assert_eq!(c.gate(130_000, 130_001, 10_000, 3), Gate::Exhausted);
        // A head as large as the threshold cannot be compressed.
        assert_eq!(c.gate(130_000, 131_000, 130_000, 0), Gate::Exhausted);
    }
}
