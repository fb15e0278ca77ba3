//! What a runtime does when its provider answers a model request with an error: how many
//! attempts one model call gets, how long it waits between them, and when it gives up.
//!
//! Hermes retries inside one iteration: the attempts of a call cost no iteration and no
//! `api_call_count`, and the call that gives up ends the turn as failed. The waits follow
//! Hermes's `jittered_backoff` (base 2 s, cap 60 s, up to half again as jitter), except that
//! a rate limit's `Retry-After` (in seconds, capped at 600 s) replaces it when it is set and
//! not zero.
//!
//! A stream that drops before its first token is a transport error, and Hermes meets it in two
//! layers: its stream reader sends the request again at once, up to three streams per
//! attempt, before the attempt counts as failed (classified `timeout`); and when the last
//! attempt of a call fails that way, Hermes rebuilds its client once, waits
//! `min(3 + attempts, 8)` s and starts the attempts over ([`ProviderRetry::step`]).
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
    /// The response stream closes before its first token: a transport error (Hermes's
    /// `timeout`).
    DroppedStream,
}

impl ProviderFault {
    pub const ALL: [ProviderFault; 3] = [
        ProviderFault::RateLimit,
        ProviderFault::ServerError,
        ProviderFault::DroppedStream,
    ];

    /// The HTTP status the provider answers with; a dropped stream has none.
    pub fn status(self) -> Option<u16> {
        match self {
            ProviderFault::RateLimit => Some(429),
            ProviderFault::ServerError => Some(500),
            ProviderFault::DroppedStream => None,
        }
    }

    /// Hermes's classified reason (`failure_reason` of a turn that gives up on it).
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderFault::RateLimit => "rate_limit",
            ProviderFault::ServerError => "server_error",
            ProviderFault::DroppedStream => "timeout",
        }
    }

    /// The fault's key in a scenario's `faults` table.
    pub fn key(self) -> &'static str {
        match self {
            ProviderFault::DroppedStream => "dropped_stream",
            other => other.as_str(),
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
    /// The stream dropped: open a new one at once, within the same attempt.
    Reconnect,
    /// The call's attempts are spent on a transport error: rebuild the client, sleep this
    /// long, and start the attempts over (once per call).
    Rebuild { us: u64 },
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
    /// Streams per attempt when a stream drops (Hermes's `HERMES_STREAM_RETRIES` + 1).
    pub stream_attempts: u32,
    /// Whether a call whose attempts a transport error spent gets one more round after
    /// rebuilding the client.
    pub transport_rebuild: bool,
}

/// Where one model call stands in its retries: [`ProviderRetry::step`] keeps it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryState {
    /// Failed attempts since the call began or its client was rebuilt.
    pub failed: u32,
    /// Dropped streams within the current attempt.
    pub dropped: u32,
    /// The client was rebuilt in this call.
    pub rebuilt: bool,
}

impl ProviderRetry {
    /// Hermes 0.19.0 and later (`agent/conversation_loop.py`, `agent/retry_utils.py`).
    pub const HERMES: ProviderRetry = ProviderRetry {
        attempts: 3,
        base_s: 2.0,
        cap_s: 60.0,
        jitter_ratio: 0.5,
        retry_after_cap_s: 600.0,
        stream_attempts: 3,
        transport_rebuild: true,
    };

    /// What follows `fault` on the call in `state`, which it updates; `jitter` gives a
    /// uniform draw in `[0, 1)` and is called only when the wait uses one, so the caller's
    /// random stream stays in step. A call that gives up leaves `state` fresh.
    pub fn step(
        &self,
        state: &mut RetryState,
        fault: ProviderFault,
        retry_after_s: Option<f64>,
        jitter: impl FnOnce() -> f64,
    ) -> RetryStep {
        if fault == ProviderFault::DroppedStream {
            state.dropped += 1;
            if state.dropped < self.stream_attempts {
                return RetryStep::Reconnect;
            }
        }
        // The attempt failed; the next one opens its streams afresh.
        state.dropped = 0;
        state.failed += 1;
        if state.failed >= self.attempts {
            if fault == ProviderFault::DroppedStream && self.transport_rebuild && !state.rebuilt {
                let secs = u64::from(state.failed.saturating_add(3).min(8));
                state.failed = 0;
                state.rebuilt = true;
                return RetryStep::Rebuild {
                    us: secs * 1_000_000,
                };
            }
            *state = RetryState::default();
            return RetryStep::GiveUp;
        }
        let draw = if self.needs_jitter(state.failed, fault, retry_after_s) {
            jitter()
        } else {
            0.0
        };
        self.after_failure(state.failed, fault, retry_after_s, draw)
    }

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
            other => panic!("{other:?}"),
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
        assert_eq!(
            ProviderFault::parse("timeout"),
            Some(ProviderFault::DroppedStream)
        );
    }

    /// Every stream dropping: three streams an attempt, three attempts, the rebuild after
    /// 6 s, three more attempts, then the call gives up: 18 streams in all.
    #[test]
    fn dropped_streams_reconnect_then_back_off_then_rebuild_once() {
        let h = ProviderRetry::HERMES;
        let mut st = RetryState::default();
        let steps: Vec<RetryStep> = (0..18)
            .map(|_| h.step(&mut st, ProviderFault::DroppedStream, None, || 0.0))
            .collect();
        use RetryStep::*;
        let round = [
            Reconnect,
            Reconnect,
            Wait { us: 2_000_000 },
            Reconnect,
            Reconnect,
            Wait { us: 4_000_000 },
            Reconnect,
            Reconnect,
        ];
        assert_eq!(steps[..8], round);
        assert_eq!(steps[8], Rebuild { us: 6_000_000 });
        assert_eq!(steps[9..17], round);
        assert_eq!(steps[17], GiveUp);
        assert_eq!(st, RetryState::default());
    }

    #[test]
    fn a_status_error_ends_the_attempt_at_once_and_only_a_transport_error_rebuilds() {
        let h = ProviderRetry::HERMES;
        let mut st = RetryState::default();
        let mut step = |f| h.step(&mut st, f, None, || 0.5);
        assert_eq!(step(ProviderFault::DroppedStream), RetryStep::Reconnect);
        // A 500 on the second stream fails the attempt; the streams count from zero again.
        assert_eq!(
            step(ProviderFault::ServerError),
            RetryStep::Wait { us: 2_500_000 }
        );
        assert_eq!(step(ProviderFault::DroppedStream), RetryStep::Reconnect);
        assert_eq!(step(ProviderFault::DroppedStream), RetryStep::Reconnect);
        assert_eq!(
            step(ProviderFault::DroppedStream),
            RetryStep::Wait { us: 5_000_000 }
        );
        // The last attempt failing on a 500 gives up: no rebuild.
        assert_eq!(step(ProviderFault::ServerError), RetryStep::GiveUp);
        // Six attempts: the rebuild's wait is capped at 8 s.
        let six = ProviderRetry { attempts: 6, ..h };
        let mut st = RetryState {
            failed: 5,
            dropped: 2,
            rebuilt: false,
        };
        assert_eq!(
            six.step(&mut st, ProviderFault::DroppedStream, None, || 0.0),
            RetryStep::Rebuild { us: 8_000_000 }
        );
    }
}
