fn main() {
    let path = std::env::args().nth(1).unwrap();
    let sc = loopsim_world::scenario::Scenario::load(std::path::Path::new(&path))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut opts = loopsim_world::sim::RunOptions::default();
    if let Some(p) = std::env::args().nth(2) {
        opts.profile = Some(p.parse().unwrap());
    }
    if let Some(p) = std::env::args().nth(3) {
        opts.platform = Some(p);
    }
    let s = loopsim_world::sim::run(&sc, &opts, loopsim_world::trace::TraceWriter::hash_only())
        .unwrap();
    println!("{}", serde_json::to_string_pretty(&serde_json::json!({"exit": s.parent_exit_reason, "began": s.loop_began_us, "dur": s.duration_us, "parent": s.agents[0], "total": s.total, "events": s.events})).unwrap());
}
