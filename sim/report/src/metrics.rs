//! One flat row of metrics per run: what `runs.csv` and `sweep.csv` hold, and what sweeps
//! aggregate. Money is in dollars, time in minutes of virtual time.

use loopsim_world::sim::RunSummary;
use serde::{Deserialize, Serialize};

/// A run's metrics. The waste is what the parent spent after its scenario's loop began.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    /// The job's index in its sweep (0 outside sweeps): shards merge by it.
    pub job: u64,
    pub scenario: String,
    pub label: String,
    pub scenario_hash: String,
    pub config_hash: String,
    /// The sweep setting, `key=value;key=value` (empty outside sweeps).
    pub setting: String,
    pub profile: String,
    pub platform: String,
    pub seed: u64,
    pub exit_reason: String,
    pub duration_min: f64,
    pub calls: u64,
    pub parent_calls: u64,
    pub input_tokens: u64,
    pub cache_read_tokens: u64,
    pub output_tokens: u64,
    pub approval_calls: u64,
    pub cost_usd: f64,
    pub model_latency_s: f64,
    pub tool_time_s: f64,
    pub wait_s: f64,
    pub warnings: u64,
    pub first_warning_call: Option<u64>,
    pub first_warning_min: Option<f64>,
    /// The first guardrail stop anywhere in the run (empty when none).
    pub stop_code: String,
    pub stop_call: Option<u64>,
    pub stop_min: Option<f64>,
    pub waste_calls: u64,
    pub waste_input_tokens: u64,
    pub waste_usd: f64,
    pub waste_min: f64,
    pub hit_horizon: bool,
    pub trace_hash: String,
}

fn min(us: u64) -> f64 {
    us as f64 / 60e6
}

/// Rounds to a fixed number of decimals so CSV and JSON output is stable.
pub fn round(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    // Adding 0.0 turns -0.0 into 0.0, so nothing prints as "-0.00".
    (x * f).round() / f + 0.0
}

impl RunMetrics {
    pub fn from_summary(s: &RunSummary, setting: &str) -> RunMetrics {
        let p = &s.agents[0];
        let stop = s
            .agents
            .iter()
            .filter_map(|a| a.stop.as_ref())
            .min_by_key(|st| st.t_us);
        let warnings: u64 = s
            .agents
            .iter()
            .map(|a| u64::from(a.warnings + a.notices))
            .sum();
        let waste = p.after_loop_began.clone().unwrap_or_default();
        let waste_min = match s.loop_began_us {
            Some(began) => {
                let end = p.stop.as_ref().map_or(p.last_activity_us, |st| st.t_us);
                min(end.saturating_sub(began))
            }
            None => 0.0,
        };
        RunMetrics {
            job: 0,
            scenario: s.scenario.clone(),
            label: s.label.to_string(),
            scenario_hash: s.scenario_hash.clone(),
            config_hash: s.config_hash.clone(),
            setting: setting.to_string(),
            // A recorded session's own decisions are not any profile's.
            profile: if s.recorded {
                "recorded".into()
            } else {
                s.profile.to_string()
            },
            platform: s.platform.clone().unwrap_or_default(),
            seed: s.seed,
            exit_reason: s.parent_exit_reason.to_string(),
            duration_min: round(min(s.duration_us), 3),
            calls: s.total.model_calls,
            parent_calls: p.usage.model_calls,
            input_tokens: s.total.input_tokens,
            cache_read_tokens: s.total.cache_read_tokens,
            output_tokens: s.total.output_tokens,
            approval_calls: s.total.approval_calls,
            cost_usd: round(s.total.cost_usd(), 6),
            model_latency_s: round(s.total.model_latency_us as f64 / 1e6, 3),
            tool_time_s: round(s.total.tool_time_us as f64 / 1e6, 3),
            wait_s: round(
                s.agents.iter().map(|a| a.wait_us).sum::<u64>() as f64 / 1e6,
                3,
            ),
            warnings,
            first_warning_call: p.first_warning_call,
            first_warning_min: p.first_warning_us.map(|t| round(min(t), 3)),
            stop_code: stop.map_or(String::new(), |st| st.code.clone()),
            stop_call: stop.map(|st| st.call),
            stop_min: stop.map(|st| round(min(st.t_us), 3)),
            waste_calls: waste.model_calls,
            waste_input_tokens: waste.input_tokens,
            waste_usd: round(waste.cost_usd(), 6),
            waste_min: round(waste_min, 3),
            hit_horizon: s.hit_horizon,
            trace_hash: s.trace_hash.clone(),
        }
    }

    /// Whether a guardrail stopped anything in this run.
    pub fn stopped(&self) -> bool {
        !self.stop_code.is_empty()
    }
}

/// Writes rows as CSV (header first) into a byte buffer.
pub fn to_csv(rows: &[RunMetrics]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r)?;
    }
    w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
}

/// The CSV header line of [`RunMetrics`] rows.
pub fn csv_header() -> Vec<u8> {
    let all = to_csv(&[RunMetrics::default()]).expect("serialisable");
    let end = all
        .iter()
        .position(|&b| b == b'\n')
        .map_or(all.len(), |i| i + 1);
    all[..end].to_vec()
}

/// One row as a CSV line (no header), for writers that stream.
pub fn csv_line(row: &RunMetrics) -> Vec<u8> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .buffer_capacity(1024)
        .from_writer(Vec::with_capacity(512));
    w.serialize(row).expect("serialisable");
    w.into_inner().expect("in memory")
}

/// Reads rows written by [`to_csv`].
pub fn from_csv(bytes: &[u8]) -> Result<Vec<RunMetrics>, csv::Error> {
    csv::Reader::from_reader(bytes).deserialize().collect()
}
