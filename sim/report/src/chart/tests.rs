use super::*;

/// A fresh directory per test, removed by the test when it passes.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loopsim-plot-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Checks both files of one chart: a valid SVG naming the title, a PNG of the right size
/// that is not one flat colour, and no temporary left behind.
fn check_outputs(dir: &Path, stem: &str, title: &str, paths: &[PathBuf]) {
    assert_eq!(
        paths,
        [
            dir.join(format!("{stem}.svg")),
            dir.join(format!("{stem}.png"))
        ]
    );
    let svg = std::fs::read_to_string(&paths[0]).unwrap();
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "{svg:.60}"
    );
    assert!(svg.contains(title), "the SVG names its title");
    assert!(svg.trim_end().ends_with("</svg>"));
    let png = image::load_from_memory(&std::fs::read(&paths[1]).unwrap())
        .unwrap()
        .to_rgb8();
    assert_eq!(png.dimensions(), (WIDTH, HEIGHT));
    let first = *png.get_pixel(0, 0);
    assert!(
        png.pixels().any(|p| *p != first),
        "the PNG is not one flat colour"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "temporaries left: {leftovers:?}");
}

fn read_both(paths: &[PathBuf]) -> (Vec<u8>, Vec<u8>) {
    (
        std::fs::read(&paths[0]).unwrap(),
        std::fs::read(&paths[1]).unwrap(),
    )
}

/// Cumulative cost of an ungoverned and a governed run over 84 minutes; the governed one is
/// warned at minute 23 and stopped at 23.5 (its children finish the work).
fn sample_cost() -> Vec<Series> {
    let ungoverned = (0..=84)
        .map(|m| {
            let t = f64::from(m);
            (t, 18.0 * (t / 84.0).powf(1.3))
        })
        .collect();
    let mut governed: Vec<(f64, f64)> = (0..=23)
        .map(|m| {
            let t = f64::from(m);
            (t, 5.4 * (t / 23.5).powf(1.2))
        })
        .collect();
    governed.push((23.5, 5.4));
    governed.extend((24..=84).map(|m| {
        let t = f64::from(m);
        (t, 5.4 + 1.6 * (t - 23.5) / 60.5)
    }));
    let at = |t: f64| 5.4 * (t / 23.5).powf(1.2);
    vec![
        Series {
            label: "no governance".into(),
            points: ungoverned,
            markers: vec![],
        },
        Series {
            label: "hermes-default".into(),
            points: governed,
            markers: vec![
                Marker {
                    t_min: 23.0,
                    y: at(23.0),
                    kind: MarkerKind::Warning,
                },
                Marker {
                    t_min: 23.5,
                    y: 5.4,
                    kind: MarkerKind::Stop,
                },
            ],
        },
    ]
}

fn sample_budget() -> Vec<Series> {
    let mut out = vec![Series {
        label: "parent".into(),
        points: (0..=24)
            .map(|m| (f64::from(m), f64::from(90 - 3 * m).max(18.0)))
            .collect(),
        markers: vec![
            Marker {
                t_min: 20.0,
                y: 30.0,
                kind: MarkerKind::Warning,
            },
            Marker {
                t_min: 24.0,
                y: 18.0,
                kind: MarkerKind::Stop,
            },
        ],
    }];
    for c in 0..3u32 {
        let start = 5 + 6 * c;
        out.push(Series {
            label: format!("child-{}", c + 1),
            points: (start..=84)
                .map(|m| (f64::from(m), (50.0 - f64::from(m - start) * 0.8).max(0.0)))
                .collect(),
            markers: vec![],
        });
    }
    out
}

/// A small deterministic generator so the sample timeline looks irregular.
fn lcg(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

fn sample_timeline(agents: usize) -> Vec<TimelineRow> {
    let mut seed = 7u64;
    (0..agents)
        .map(|a| {
            let mut t = if a == 0 {
                0.0
            } else {
                2.0 + 3.0 * lcg(&mut seed)
            };
            let end = if a == 0 {
                84.0
            } else {
                40.0 + 44.0 * lcg(&mut seed)
            };
            let mut spans = Vec::new();
            while t < end {
                let r = lcg(&mut seed);
                let kind = if r < 0.45 {
                    SpanKind::Model
                } else if r < 0.8 {
                    SpanKind::Tool
                } else {
                    SpanKind::Waiting
                };
                let d = 0.5 + 3.0 * lcg(&mut seed);
                spans.push((t, (t + d).min(end), kind));
                t += d + 0.2;
            }
            TimelineRow {
                agent: if a == 0 {
                    "parent".into()
                } else {
                    format!("child-{a:02}")
                },
                spans,
            }
        })
        .collect()
}

/// A 7x7 sweep of warn_after x hard_stop_after; cells where the hard stop would come before
/// the warning were not run.
fn sample_grid() -> (Vec<String>, Vec<String>, Vec<Vec<Option<f64>>>) {
    let steps = [10, 20, 30, 40, 50, 60, 70];
    let xs = steps.iter().map(|s| s.to_string()).collect();
    let ys = steps.iter().map(|s| s.to_string()).collect();
    let cells = steps
        .iter()
        .map(|&stop| {
            steps
                .iter()
                .map(|&warn| {
                    (stop >= warn).then(|| {
                        let f = f64::from(stop);
                        (0.45 * (-f / 25.0).exp() + f64::from(warn) / 900.0).min(1.0)
                    })
                })
                .collect()
        })
        .collect();
    (xs, ys, cells)
}

fn sample_pareto() -> Vec<ParetoPoint> {
    let raw = [
        (0.0, 2.1, "warn 70 / stop 90", true),
        (1.5, 6.8, "warn 50 / stop 70", true),
        (2.0, 4.9, "warn 60 / stop 70", false),
        (3.5, 9.6, "warn 40 / stop 60", true),
        (4.0, 7.2, "warn 30 / stop 70", false),
        (6.0, 11.0, "warn 30 / stop 50", true),
        (7.5, 9.9, "warn 20 / stop 60", false),
        (9.0, 12.1, "warn 20 / stop 40", true),
        (12.0, 11.5, "warn 10 / stop 40", false),
        (15.0, 12.4, "warn 10 / stop 30", true),
    ];
    raw.iter()
        .map(|&(x, y, label, on_frontier)| ParetoPoint {
            x,
            y,
            label: label.into(),
            on_frontier,
        })
        .collect()
}

fn heatmap_sample(dir: &Path, stem: &str, title: &str) -> Result<Vec<PathBuf>, PlotError> {
    let (xs, ys, cells) = sample_grid();
    heatmap(
        dir,
        stem,
        title,
        "warn_after (iterations)",
        &xs,
        "hard_stop_after (iterations)",
        &ys,
        &cells,
        "false-stop rate",
        true,
    )
}

#[test]
fn cost_over_time_writes_svg_and_png() {
    let dir = scratch("cost");
    let title = "Cumulative cost by profile";
    let paths = cost_over_time(&dir, "cost", title, &sample_cost()).unwrap();
    check_outputs(&dir, "cost", title, &paths);
    let svg = std::fs::read_to_string(&paths[0]).unwrap();
    for text in [
        "virtual time (min)",
        "cumulative cost ($)",
        "no governance",
        "stopped",
    ] {
        assert!(svg.contains(text), "SVG lacks {text:?}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn budget_over_time_writes_svg_and_png() {
    let dir = scratch("budget");
    let title = "Iteration budget by agent";
    let paths = budget_over_time(&dir, "budget", title, &sample_budget()).unwrap();
    check_outputs(&dir, "budget", title, &paths);
    let svg = std::fs::read_to_string(&paths[0]).unwrap();
    assert!(svg.contains("iterations remaining"));
    assert!(svg.contains("child-3"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn agent_timeline_writes_svg_and_png_for_1_to_50_lanes() {
    let dir = scratch("timeline");
    for n in [1, 11, 50] {
        let title = format!("Agent activity ({n} agents)");
        let stem = format!("timeline-{n}");
        let paths = agent_timeline(&dir, &stem, &title, &sample_timeline(n)).unwrap();
        check_outputs(&dir, &stem, &title, &paths);
        let svg = std::fs::read_to_string(&paths[0]).unwrap();
        assert!(svg.contains("model call") && svg.contains("waiting"));
        assert!(svg.contains("parent"));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn heatmap_writes_svg_and_png_with_values_and_grey_cells() {
    let dir = scratch("heatmap");
    let title = "False-stop rate by warn/stop setting";
    let paths = heatmap_sample(&dir, "heat", title).unwrap();
    check_outputs(&dir, "heat", title, &paths);
    let svg = std::fs::read_to_string(&paths[0]).unwrap();
    assert!(svg.contains("not run"));
    assert!(svg.contains("31%"), "cell values printed as percentages");
    assert!(svg.contains("warn_after (iterations)"));

    let xs = vec!["a".to_string(), "b".to_string()];
    let ys = vec!["low".to_string()];
    let cells = vec![vec![Some(1.25), None]];
    let paths = heatmap(
        &dir,
        "dollars",
        "Savings",
        "x",
        &xs,
        "y",
        &ys,
        &cells,
        "saved ($)",
        false,
    )
    .unwrap();
    check_outputs(&dir, "dollars", "Savings", &paths);
    assert!(std::fs::read_to_string(&paths[0]).unwrap().contains("1.25"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn heatmap_rejects_cells_that_do_not_match_labels() {
    let dir = scratch("heat-shape");
    let xs = vec!["a".to_string(), "b".to_string()];
    let ys = vec!["y".to_string()];
    let err = heatmap(
        &dir,
        "h",
        "t",
        "x",
        &xs,
        "y",
        &ys,
        &[vec![None]],
        "v",
        false,
    );
    assert!(matches!(err, Err(PlotError::Shape(_))), "{err:?}");
    let err = heatmap(&dir, "h", "t", "x", &xs, "y", &ys, &[], "v", false);
    assert!(matches!(err, Err(PlotError::Shape(_))), "{err:?}");
    assert!(!dir.join("h.svg").exists());
}

#[test]
fn pareto_writes_svg_and_png_with_frontier_labels() {
    let dir = scratch("pareto");
    let title = "Savings against false stops";
    let paths = pareto(
        &dir,
        "pareto",
        title,
        "false-stop rate (%)",
        "dollars saved ($)",
        &sample_pareto(),
    )
    .unwrap();
    check_outputs(&dir, "pareto", title, &paths);
    let svg = std::fs::read_to_string(&paths[0]).unwrap();
    assert!(
        svg.contains("warn 40 / stop 60"),
        "frontier points are labelled"
    );
    assert!(!svg.contains("warn 60 / stop 70"), "other points are not");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn same_inputs_give_byte_identical_files() {
    let dir = scratch("determinism");
    type Render = Box<dyn Fn(&Path) -> Result<Vec<PathBuf>, PlotError>>;
    let charts: Vec<Render> = vec![
        Box::new(|d| cost_over_time(d, "c", "cost", &sample_cost())),
        Box::new(|d| budget_over_time(d, "b", "budget", &sample_budget())),
        Box::new(|d| agent_timeline(d, "t", "timeline", &sample_timeline(11))),
        Box::new(|d| {
            let axis = TimeAxis::compress_idle(&[(0.0, 30.0), (2000.0, 2084.0)], 2100.0);
            budget_used_over_time(d, "u", "used", &sample_budget_lines(), &axis)
        }),
        Box::new(|d| heatmap_sample(d, "h", "heat")),
        Box::new(|d| pareto(d, "p", "pareto", "x (%)", "y ($)", &sample_pareto())),
    ];
    for chart in &charts {
        let first = read_both(&chart(&dir.join("one")).unwrap());
        let second = read_both(&chart(&dir.join("two")).unwrap());
        assert!(first == second, "a chart differs between two renders");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn empty_and_degenerate_inputs_still_draw() {
    let dir = scratch("empty");
    let empty_series = Series {
        label: "nothing yet".into(),
        points: vec![],
        markers: vec![],
    };
    let one_point = Series {
        label: "one point".into(),
        points: vec![(3.0, 2.0), (f64::NAN, 1.0)],
        markers: vec![Marker {
            t_min: f64::INFINITY,
            y: 1.0,
            kind: MarkerKind::Stop,
        }],
    };
    let empty_row = TimelineRow {
        agent: "idle".into(),
        spans: vec![],
    };
    let results = [
        ("c0", cost_over_time(&dir, "c0", "empty cost", &[])),
        (
            "c1",
            cost_over_time(&dir, "c1", "empty line", &[empty_series]),
        ),
        (
            "c2",
            cost_over_time(&dir, "c2", "one point", std::slice::from_ref(&one_point)),
        ),
        ("b0", budget_over_time(&dir, "b0", "empty budget", &[])),
        (
            "b1",
            budget_over_time(&dir, "b1", "flat budget", &[one_point]),
        ),
        ("t0", agent_timeline(&dir, "t0", "no agents", &[])),
        ("t1", agent_timeline(&dir, "t1", "idle agent", &[empty_row])),
        (
            "h0",
            heatmap(&dir, "h0", "empty heat", "x", &[], "y", &[], &[], "v", true),
        ),
        (
            "h1",
            heatmap(
                &dir,
                "h1",
                "all not run",
                "x",
                &["1".into()],
                "y",
                &["1".into()],
                &[vec![None]],
                "v",
                false,
            ),
        ),
        ("p0", pareto(&dir, "p0", "empty pareto", "x", "y", &[])),
    ];
    for (stem, result) in results {
        let paths = result.unwrap_or_else(|e| panic!("{stem}: {e}"));
        assert_eq!(paths.len(), 2);
        let png = image::open(&paths[1]).unwrap();
        assert_eq!((png.width(), png.height()), (WIDTH, HEIGHT));
    }
    let svg = std::fs::read_to_string(dir.join("c0.svg")).unwrap();
    assert!(svg.contains("no data"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_stems_are_refused() {
    let dir = scratch("stems");
    for stem in ["", ".", "..", "a/b", "../up", "/abs"] {
        let err = cost_over_time(&dir, stem, "t", &[]);
        assert!(
            matches!(err, Err(PlotError::InvalidStem(_))),
            "{stem:?}: {err:?}"
        );
    }
    assert!(!dir.exists(), "nothing written for a bad stem");
}

/// Renders one sample of each chart for a person to look at: into `$LOOPSIM_PLOT_SAMPLES`
/// when set (e.g. `/tmp/plots`), else into a scratch directory that is removed.
#[test]
fn render_samples() {
    let keep = std::env::var_os("LOOPSIM_PLOT_SAMPLES").map(PathBuf::from);
    let dir = keep.clone().unwrap_or_else(|| scratch("samples"));
    let mut written = Vec::new();
    written.extend(
        cost_over_time(
            &dir,
            "cost_over_time",
            "Cumulative cost: one task, two profiles",
            &sample_cost(),
        )
        .unwrap(),
    );
    written.extend(
        budget_over_time(
            &dir,
            "budget_over_time",
            "Iteration budget: parent and children",
            &sample_budget(),
        )
        .unwrap(),
    );
    written.extend(
        agent_timeline(
            &dir,
            "agent_timeline",
            "Agent activity: parent and 10 children",
            &sample_timeline(11),
        )
        .unwrap(),
    );
    written.extend(
        agent_timeline(
            &dir,
            "agent_timeline_50",
            "Agent activity: 50 agents",
            &sample_timeline(50),
        )
        .unwrap(),
    );
    written
        .extend(heatmap_sample(&dir, "heatmap", "False-stop rate by warn/stop setting").unwrap());
    written.extend(
        heatmap_row(
            &dir,
            "heatmap_row",
            "Wasted dollars by one swept key",
            "hard_stop_after",
            &["2", "3", "4", "5", "6"].map(String::from),
            &[Some(0.0301), Some(0.0324), Some(0.0412), None, Some(0.0598)],
            "$ wasted",
            false,
        )
        .unwrap(),
    );
    written.extend(
        pareto(
            &dir,
            "pareto",
            "Dollars saved against false stops (10 settings)",
            "false-stop rate (%)",
            "dollars saved ($)",
            &sample_pareto(),
        )
        .unwrap(),
    );
    written.extend(
        budget_used_over_time(
            &dir,
            "budget_used",
            "Iterations used: a parent and 10 workers",
            &sample_budget_lines(),
            &TimeAxis::linear(84.0),
        )
        .unwrap(),
    );
    assert_eq!(written.len(), 16);
    assert!(written.iter().all(|p| p.exists()));
    if keep.is_none() {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn color_bar_ticks_are_round_distinct_and_inside_the_range() {
    for (lo, hi) in [
        (0.0301, 0.0598),
        (0.0, 1.0),
        (0.0, 0.3333),
        (2.0, 2.001),
        (-3.0, 7.0),
    ] {
        let (ticks, step) = heatmap::bar_ticks(lo, hi);
        assert!(
            ticks.len() >= 2 && ticks.len() <= 6,
            "{lo}..{hi}: {ticks:?}"
        );
        assert!(ticks.iter().all(|t| *t >= lo - 1e-12 && *t <= hi + 1e-12));
        for pct in [false, true] {
            let spec = heatmap::HeatSpec::for_test(pct);
            let mut labels: Vec<String> = ticks.iter().map(|t| spec.fmt_tick(*t, step)).collect();
            labels.dedup();
            assert_eq!(labels.len(), ticks.len(), "{lo}..{hi}: {labels:?}");
        }
    }
    assert_eq!(
        heatmap::bar_ticks(0.0301, 0.0598).0.len(),
        5,
        "steps of 0.005"
    );
}

#[test]
fn one_row_heatmap_has_no_y_tick_and_rejects_a_wrong_length() {
    let dir = scratch("heat-row");
    let xs = ["a", "b"].map(String::from);
    let paths = heatmap_row(
        &dir,
        "r",
        "Row",
        "x",
        &xs,
        &[Some(0.5), Some(0.5)],
        "v",
        true,
    )
    .unwrap();
    check_outputs(&dir, "r", "Row", &paths);
    let svg = std::fs::read_to_string(&paths[0]).unwrap();
    assert!(
        svg.contains("50% (all cells)"),
        "one value: one flat colour, said once"
    );
    let err = heatmap_row(&dir, "bad", "t", "x", &xs, &[None], "v", false);
    assert!(matches!(err, Err(PlotError::Shape(_))), "{err:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_two_day_idle_gap_becomes_a_narrow_break() {
    let axis = TimeAxis::compress_idle(&[(0.0, 3.0), (2.5, 5.0), (2880.0, 2885.0)], 2885.0);
    assert_eq!(
        axis.breaks(),
        [IdleBreak {
            from_min: 5.0,
            to_min: 2880.0
        }]
    );
    // 10 active minutes and a break 3% of them wide, not 2 days.
    assert!(
        (axis.drawn_end() - 10.3).abs() < 1e-9,
        "{}",
        axis.drawn_end()
    );
    assert!((axis.to_drawn(2880.0) - 5.3).abs() < 1e-9);
    assert!((axis.to_drawn(2882.0) - 7.3).abs() < 1e-9);
    assert_eq!(axis.to_drawn(4.0), 4.0);
    assert_eq!(axis.end_min(), 2885.0);
    // Ticks name real times, and none sits inside the break.
    let ticks = axis.ticks();
    assert!(ticks.iter().any(|t| t.1 == "2d 00:00"), "{ticks:?}");
    assert!(ticks.iter().any(|t| t.1 == "0d 00:02"), "{ticks:?}");
    assert!(ticks.iter().all(|t| t.0 <= 5.0 || t.0 >= 5.3 - 1e-9));
    assert!(ticks.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(axis.desc(), "virtual time (days, h:mm)");
    assert_eq!(idle_label(2875.0), "2.0 d idle");
}

#[test]
fn only_long_gaps_are_compressed() {
    let gaps = |busy: &[(f64, f64)], end: f64| TimeAxis::compress_idle(busy, end).breaks().len();
    // Always busy (the incident's parent): one scale.
    assert_eq!(gaps(&[(0.0, 84.0)], 84.0), 0);
    // 8 minutes idle is under 10 minutes.
    assert_eq!(gaps(&[(0.0, 30.0), (38.0, 60.0)], 60.0), 0);
    // 15 idle minutes in 200 active ones is under 20% of them.
    assert_eq!(gaps(&[(0.0, 100.0), (115.0, 215.0)], 215.0), 0);
    // 50 idle minutes against 100 active ones is not.
    assert_eq!(gaps(&[(0.0, 50.0), (100.0, 150.0)], 150.0), 1);
    // A late start and a long idle tail are breaks too.
    let late = TimeAxis::compress_idle(&[(600.0, 610.0)], 1200.0);
    assert_eq!(
        late.breaks(),
        [
            IdleBreak {
                from_min: 0.0,
                to_min: 600.0
            },
            IdleBreak {
                from_min: 610.0,
                to_min: 1200.0
            }
        ]
    );
    // Nothing at all, or nonsense: a plain axis.
    assert_eq!(gaps(&[], 30.0), 0);
    assert_eq!(gaps(&[(f64::NAN, 1.0)], f64::INFINITY), 0);
}

#[test]
fn linear_axis_ticks_are_round_minutes() {
    let axis = TimeAxis::linear(84.0);
    let labels: Vec<String> = axis.ticks().into_iter().map(|t| t.1).collect();
    assert_eq!(
        labels,
        ["0", "10", "20", "30", "40", "50", "60", "70", "80"]
    );
    assert_eq!(axis.desc(), "virtual time (min)");
    let hours: Vec<String> = TimeAxis::linear(300.0)
        .ticks()
        .into_iter()
        .map(|t| t.1)
        .collect();
    assert_eq!(hours, ["0:00", "1:00", "2:00", "3:00", "4:00", "5:00"]);
}

#[test]
fn timeline_with_a_two_day_gap_marks_the_break() {
    let dir = scratch("timeline-gap");
    let rows = [TimelineRow {
        agent: "parent".into(),
        spans: vec![
            (0.0, 2.0, SpanKind::Model),
            (2.0, 2.5, SpanKind::Tool),
            (2880.0, 2882.0, SpanKind::Model),
        ],
    }];
    let paths = agent_timeline(&dir, "t", "Two turns", &rows).unwrap();
    check_outputs(&dir, "t", "Two turns", &paths);
    let svg = std::fs::read_to_string(&paths[0]).unwrap();
    assert!(svg.contains("2.0 d idle") && svg.contains("2d 00:00"));
    assert!(!svg.contains(">\n500\n<"), "no tick at minute 500");
    std::fs::remove_dir_all(dir).unwrap();
}

fn sample_budget_lines() -> Vec<BudgetLine> {
    let mut out = vec![BudgetLine {
        agent: "parent".into(),
        family: "parent".into(),
        points: vec![(0.0, 0.0), (10.0, 40.0), (84.0, 48.0)],
        cap: None,
    }];
    for c in 1..=10u32 {
        let start = 20.0 + f64::from(c) * 0.3;
        out.push(BudgetLine {
            agent: format!("worker#{c}"),
            family: "worker".into(),
            points: vec![
                (start, 0.0),
                (start + 9.0, 20.0 + f64::from(c)),
                (84.0, 21.0),
            ],
            cap: Some(50.0),
        });
    }
    out
}

#[test]
fn budget_chart_groups_a_family_in_shades_with_caps() {
    let dir = scratch("budget-used");
    let title = "Iterations used per turn";
    let axis = TimeAxis::linear(84.0);
    let paths = budget_used_over_time(&dir, "b", title, &sample_budget_lines(), &axis).unwrap();
    check_outputs(&dir, "b", title, &paths);
    let svg = std::fs::read_to_string(&paths[0]).unwrap();
    // The family's legend entry, and its cap's label.
    assert_eq!(svg.matches("worker (10)").count(), 2);
    for text in [
        "parent (no cap)",
        "#1 dark … #10 light",
        "cap 50: worker (10)",
        "iterations used (this turn)",
    ] {
        assert_eq!(svg.matches(text).count(), 1, "{text:?} once");
    }
    assert!(!svg.contains("worker#2"), "one legend entry for the family");
    let mut shades: Vec<(u8, u8, u8)> = (0..10)
        .map(|j| {
            let c = budget::shade(series_color(1), j, 10);
            (c.0, c.1, c.2)
        })
        .collect();
    shades.dedup();
    assert_eq!(shades.len(), 10, "ten distinct shades");
    std::fs::remove_dir_all(dir).unwrap();
}
