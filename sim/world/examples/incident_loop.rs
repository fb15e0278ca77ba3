//! Runs the incident scenario many times (for profiling the simulator).
fn main() {
    let sc = loopsim_world::scenario::Scenario::load(std::path::Path::new(
        "scenarios/execute-code-spin-wait.toml",
    ))
    .unwrap();
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(500);
    for _ in 0..n {
        let s = loopsim_world::sim::run(
            &sc,
            &Default::default(),
            loopsim_world::trace::TraceWriter::off(),
        )
        .unwrap();
        std::hint::black_box(s);
    }
}
