//! The fake model's numbers: sampling latencies and token counts, and pricing a call.

use rand::RngExt;
use rand::rngs::ChaCha8Rng;
use serde::Serialize;

use crate::scenario::{Dist, Price};

impl Dist {
    /// One draw, from 0 to [`Dist::MAX`] (a long tail is cut there).
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> f64 {
        self.draw(rng).min(Dist::MAX)
    }

    fn draw(&self, rng: &mut ChaCha8Rng) -> f64 {
        match self {
            Dist::Fixed(x) => *x,
            Dist::Spec(s) => {
                if let Some([a, b]) = s.uniform {
                    a + (b - a) * rng.random::<f64>()
                } else if let Some([m, sd]) = s.normal {
                    (m + sd * standard_normal(rng)).max(0.0)
                } else if let Some([median, sigma]) = s.lognormal {
                    median * (sigma * standard_normal(rng)).exp()
                } else {
                    0.0
                }
            }
        }
    }

    /// The distribution's mean (for reports and calibration).
    pub fn mean(&self) -> f64 {
        match self {
            Dist::Fixed(x) => *x,
            Dist::Spec(s) => {
                if let Some([a, b]) = s.uniform {
                    (a + b) / 2.0
                } else if let Some([m, _]) = s.normal {
                    m
                } else if let Some([median, sigma]) = s.lognormal {
                    median * (sigma * sigma / 2.0).exp()
                } else {
                    0.0
                }
            }
        }
    }
}

/// Box-Muller on two uniform draws.
fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// Tokens, time and money spent on model calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Usage {
    pub model_calls: u64,
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    /// Recorded prompt-cache writes (imported sessions only; simulated calls write none).
    #[serde(skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
    pub model_latency_us: u64,
    pub tool_time_us: u64,
    pub approval_calls: u64,
    pub approval_input_tokens: u64,
    pub approval_output_tokens: u64,
    pub approval_latency_us: u64,
    /// Dollars, rounded to micro-dollars so sums are exact and stable.
    pub cost_micro_usd: u64,
    /// Model requests the provider answered with an error (not billed).
    #[serde(skip_serializing_if = "is_zero")]
    pub provider_errors: u64,
    /// Time spent waiting to send a failed request again.
    #[serde(skip_serializing_if = "is_zero")]
    pub retry_wait_us: u64,
}

/// Context compression's summary calls (Hermes's auxiliary model; here priced at the
/// agent's). Kept apart from [`Usage`], which every call updates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Compressions {
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub latency_us: u64,
}

impl Compressions {
    pub fn is_none(&self) -> bool {
        self.calls == 0
    }
}

/// The price of one call in micro-dollars.
pub fn cost_micro_usd(price: &Price, input: u64, cache_read: u64, output: u64) -> u64 {
    cost_with_cache_writes(price, input, cache_read, 0, output)
}

/// The price of one call whose prompt (`input`) includes cache reads and cache writes.
pub fn cost_with_cache_writes(
    price: &Price,
    input: u64,
    cache_read: u64,
    cache_write: u64,
    output: u64,
) -> u64 {
    let fresh = input.saturating_sub(cache_read).saturating_sub(cache_write) as f64;
    let usd = (fresh * price.input
        + cache_read as f64 * price.cache_read
        + cache_write as f64 * price.cache_write.unwrap_or(price.input)
        + output as f64 * price.output)
        / 1e6;
    (usd * 1e6).round() as u64
}

impl Usage {
    /// One main-model call.
    pub fn model_call(
        price: &Price,
        input: u64,
        cache_read: u64,
        output: u64,
        latency_us: u64,
    ) -> Usage {
        Usage {
            model_calls: 1,
            input_tokens: input,
            cache_read_tokens: cache_read,
            output_tokens: output,
            model_latency_us: latency_us,
            cost_micro_usd: cost_micro_usd(price, input, cache_read, output),
            ..Usage::default()
        }
    }

    /// One main-model call with recorded cache writes.
    pub fn recorded_call(
        price: &Price,
        input: u64,
        cache_read: u64,
        cache_write: u64,
        output: u64,
        latency_us: u64,
    ) -> Usage {
        Usage {
            cache_write_tokens: cache_write,
            cost_micro_usd: cost_with_cache_writes(price, input, cache_read, cache_write, output),
            ..Usage::model_call(price, input, cache_read, output, latency_us)
        }
    }

    /// Sums saturate: a figure at its integer's end stays there rather than wrapping.
    pub fn add(&mut self, o: &Usage) {
        let sum = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        sum(&mut self.model_calls, o.model_calls);
        sum(&mut self.input_tokens, o.input_tokens);
        sum(&mut self.cache_read_tokens, o.cache_read_tokens);
        sum(&mut self.cache_write_tokens, o.cache_write_tokens);
        sum(&mut self.output_tokens, o.output_tokens);
        sum(&mut self.model_latency_us, o.model_latency_us);
        sum(&mut self.tool_time_us, o.tool_time_us);
        sum(&mut self.approval_calls, o.approval_calls);
        sum(&mut self.approval_input_tokens, o.approval_input_tokens);
        sum(&mut self.approval_output_tokens, o.approval_output_tokens);
        sum(&mut self.approval_latency_us, o.approval_latency_us);
        sum(&mut self.cost_micro_usd, o.cost_micro_usd);
        sum(&mut self.provider_errors, o.provider_errors);
        sum(&mut self.retry_wait_us, o.retry_wait_us);
    }

    pub fn cost_usd(&self) -> f64 {
        self.cost_micro_usd as f64 / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use crate::scenario::DistSpec;

    #[test]
    fn samples_stay_in_range_and_match_their_mean() {
        let mut r = stream(3, "t");
        let u = Dist::Spec(DistSpec {
            uniform: Some([2.0, 4.0]),
            normal: None,
            lognormal: None,
        });
        let ln = Dist::Spec(DistSpec {
            uniform: None,
            normal: None,
            lognormal: Some([9.0, 0.3]),
        });
        let n = 20_000;
        let (mut su, mut sl) = (0.0, 0.0);
        for _ in 0..n {
            let x = u.sample(&mut r);
            assert!((2.0..=4.0).contains(&x));
            su += x;
            sl += ln.sample(&mut r);
        }
        assert!((su / n as f64 - 3.0).abs() < 0.05);
        assert!((sl / n as f64 - ln.mean()).abs() / ln.mean() < 0.02);
    }

    #[test]
    fn call_cost() {
        let p = Price {
            input: 3.0,
            cache_read: 0.3,
            output: 15.0,
            ..Price::default()
        };
        // 1M fresh input = $3, 1M cache reads = $0.30, 1k output = $0.015
        assert_eq!(cost_micro_usd(&p, 2_000_000, 1_000_000, 1_000), 3_315_000);
    }
}
