//! What a runtime does when its provider answers a model request with an error: how many
//! attempts one model call gets, how long it waits between them, and when it gives up.
//!
//! Hermes retries inside one iteration: the attempts of a call cost no iteration and no
//! `api_call_count`, and the call that gives up ends the turn as failed. The waits follow
//! Hermes's `jittered_backoff` (base 2 s, cap 60 s, up to half again as jitter), except that
//! a rate limit's `Retry-After` (in seconds, capped at 600 s) replaces it when it is set and
//! not zero.
//!
//! ```
//! use loopsim_engine::retry::{ProviderFault, ProviderRetry, RetryStep};
//!
//! let hermes = ProviderRetry::HERMES;
//! // The first 5xx waits 2 s plus jitter (the caller draws the jitter: 0.5 adds a quarter).
//! assert_eq!(hermes.after_failure(1, ProviderFault::ServerError, None, 0.5), RetryStep::Wait { us: 2_500_000 });
//! // A rate limit with a Retry-After waits exactly that long.
//! assert_eq!(hermes.after_failure(2, ProviderFault::RateLimit, Some(7.0), 0.9), RetryStep::Wait { us: 7_000_000 });
//! // The third failed attempt gives up.
//! assert_eq!(hermes.after_failure(3, ProviderFault::ServerError, None, 0.0), RetryStep::GiveUp);
//! ```

use std::fmt;

/// A provider error a model request can meet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProviderFault {
    /// HTTP 429: the provider's rate limit (Hermes's `rate_limit`).
    RateLimit,
    /// HTTP 500: a transient server error (Hermes's `server_error`).
    ServerError,
}

impl ProviderFault {
    pub const ALL: [ProviderFault; 2] = [ProviderFault::RateLimit, ProviderFault::ServerError];

    /// The HTTP status the provider answers with.
    pub fn status(self) -> u16 {
        match self {
            ProviderFault::RateLimit => 429,
            ProviderFault::ServerError => 500,
        }
    }

    /// Hermes's classified reason (`failure_reason` of a turn that gives up on it).
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderFault::RateLimit => "rate_limit",
            ProviderFault::ServerError => "server_error",
        }
    }

    pub fn parse(s: &str) -> Option<ProviderFault> {
        ProviderFault::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

impl fmt::Display for ProviderFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What follows a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryStep {
    /// Sleep this long, then send the same request again.
    Wait { us: u64 },
    /// The call fails: the turn ends with [`crate::turn::ExitReason::ApiCallFailed`].
    GiveUp,
}

/// A runtime's retry policy for provider errors.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProviderRetry {
    /// Attempts per model call, the first included (`agent.api_max_retries`).
    pub attempts: u32,
    pub base_s: f64,
    pub cap_s: f64,
    /// The jitter's share of the delay: uniform in `[0, ratio * delay]`.
    pub jitter_ratio: f64,
    /// A rate limit's `Retry-After` is cut to this.
    pub retry_after_cap_s: f64,
}

impl ProviderRetry {
    /// Hermes 0.19.0 and later (`agent/conversation_loop.py`, `agent/retry_utils.py`).
    pub const HERMES: ProviderRetry = ProviderRetry {
        attempts: 3,
        base_s: 2.0,
        cap_s: 60.0,
        jitter_ratio: 0.5,
        retry_after_cap_s: 600.0,
    };

    /// Whether the wait after the `failed`-th failure uses a jitter draw (the caller then
    /// passes one; otherwise the draw is not made, so the random stream stays in step).
    pub fn needs_jitter(
        &self,
        failed: u32,
        fault: ProviderFault,
        retry_after_s: Option<f64>,
    ) -> bool {
        failed < self.attempts && self.retry_after(fault, retry_after_s).is_none()
    }

    /// The wait after the `failed`-th failed attempt of one call (1-based); `jitter` is a
    /// uniform draw in `[0, 1)`.
    pub fn after_failure(
        &self,
        failed: u32,
        fault: ProviderFault,
        retry_after_s: Option<f64>,
        jitter: f64,
    ) -> RetryStep {
        if failed >= self.attempts {
            return RetryStep::GiveUp;
        }
        let secs = match self.retry_after(fault, retry_after_s) {
            Some(s) => s,
            None => {
                let exponent = failed.saturating_sub(1);
                let delay = if exponent >= 63 {
                    self.cap_s
                } else {
                    (self.base_s * 2f64.powi(exponent as i32)).min(self.cap_s)
                };
                delay + jitter * self.jitter_ratio * delay
            }
        };
        RetryStep::Wait {
            us: (secs * 1e6).round() as u64,
        }
    }

    /// Hermes reads `Retry-After` on rate limits only, and a zero falls back to the backoff.
    fn retry_after(&self, fault: ProviderFault, retry_after_s: Option<f64>) -> Option<f64> {
        match (fault, retry_after_s) {
            (ProviderFault::RateLimit, Some(s)) if s > 0.0 => Some(s.min(self.retry_after_cap_s)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hermes_backoff_doubles_from_two_seconds_and_caps_at_sixty() {
        let h = ProviderRetry {
            attempts: 10,
            ..ProviderRetry::HERMES
        };
        let wait = |n| match h.after_failure(n, ProviderFault::ServerError, None, 0.0) {
            RetryStep::Wait { us } => us,
            RetryStep::GiveUp => panic!("gave up"),
        };
        assert_eq!(
            [wait(1), wait(2), wait(3), wait(6), wait(7)],
            [2_000_000, 4_000_000, 8_000_000, 60_000_000, 60_000_000]
        );
        // The jitter adds at most half the delay.
        assert_eq!(
            h.after_failure(2, ProviderFault::ServerError, None, 1.0),
            RetryStep::Wait { us: 6_000_000 }
        );
    }

    #[test]
    fn retry_after_only_for_rate_limits_capped_and_zero_falls_back() {
        let h = ProviderRetry::HERMES;
        assert_eq!(
            h.after_failure(1, ProviderFault::RateLimit, Some(900.0), 0.3),
            RetryStep::Wait { us: 600_000_000 }
        );
        assert_eq!(
            h.after_failure(1, ProviderFault::RateLimit, Some(0.0), 0.0),
            RetryStep::Wait { us: 2_000_000 }
        );
        assert_eq!(
            h.after_failure(1, ProviderFault::ServerError, Some(9.0), 0.0),
            RetryStep::Wait { us: 2_000_000 }
        );
        assert!(!h.needs_jitter(1, ProviderFault::RateLimit, Some(1.0)));
        assert!(h.needs_jitter(1, ProviderFault::RateLimit, None));
        assert!(!h.needs_jitter(3, ProviderFault::ServerError, None));
    }

    #[test]
    fn three_attempts_then_give_up() {
        let h = ProviderRetry::HERMES;
        assert!(matches!(
            h.after_failure(2, ProviderFault::RateLimit, None, 0.0),
            RetryStep::Wait { .. }
        ));
        assert_eq!(
            h.after_failure(3, ProviderFault::RateLimit, None, 0.0),
            RetryStep::GiveUp
        );
        assert_eq!(
            ProviderFault::parse("server_error"),
            Some(ProviderFault::ServerError)
        );
    }
}
