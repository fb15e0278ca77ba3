//! The engine benches' call sequence: ~1,000 realistic tool calls built deterministically
//! (no RNG crate: a fixed SplitMix64), in turns separated by resets.
//!
//! Mix: read_file (~2 KB JSON results, files change after patches), web_search (~1 KB),
//! execute_code (~150 B with volatile `duration_seconds` / `kernel.execution_count`),
//! terminal, search_files, patch, write_file, todo; failures (terminal exit codes, missing
//! files, tracebacks, a rate limit); and loops: re-reads, retried failing commands, polling
//! execute_code, two-call cycles. Every call carries an explicit `failed` flag, as the
//! runtime passes its own failure detection.
//!
//! [`Sequence::write_jsonl`] exports the same calls for `benches/python_controller.py`.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use loopsim_engine::json::{self, Value};

/// Tool calls in the sequence (resets not counted).
pub const CALLS: usize = 1000;
const SEED: u64 = 0x1005_e9ed;

pub struct Call {
    pub tool: String,
    /// The arguments as the model sent them (JSON text), parsed, and canonical.
    pub args_json: String,
    pub args: Value,
    pub args_canon: Vec<u8>,
    pub result: Vec<u8>,
    pub failed: bool,
}

pub enum Item {
    /// A new user turn: `reset_for_turn`.
    Reset,
    Call(Call),
}

pub struct Sequence {
    pub items: Vec<Item>,
}

impl Sequence {
    /// The sequence as `loopsim guard` requests: a `before`/`after` pair per call (`reset` at
    /// turn boundaries), repeated to exactly `lines` lines. `short_results` replaces each
    /// result with one of under 40 bytes.
    pub fn guard_lines(&self, short_results: bool, lines: usize) -> String {
        let mut out = String::new();
        let mut n = 0;
        'fill: loop {
            for (k, item) in self.items.iter().enumerate() {
                let (line_a, line_b) = match item {
                    Item::Reset => ("{\"op\":\"reset\"}".to_string(), None),
                    Item::Call(c) => {
                        let result = if short_results {
                            format!("{{\"ok\": true, \"n\": {}}}", k % 7)
                        } else {
                            std::str::from_utf8(&c.result).expect("UTF-8").to_string()
                        };
                        let tool = js(&c.tool);
                        (
                            format!(
                                "{{\"op\":\"before\",\"tool\":{tool},\"args\":{}}}",
                                c.args_json
                            ),
                            Some(format!(
                                "{{\"op\":\"after\",\"tool\":{tool},\"args\":{},\"result\":{},\"failed\":{}}}",
                                c.args_json,
                                js(&result),
                                c.failed
                            )),
                        )
                    }
                };
                for l in std::iter::once(line_a).chain(line_b) {
                    if n == lines {
                        break 'fill;
                    }
                    out.push_str(&l);
                    out.push('\n');
                    n += 1;
                }
            }
        }
        out
    }

    pub fn calls(&self) -> impl Iterator<Item = &Call> {
        self.items.iter().filter_map(|i| match i {
            Item::Call(c) => Some(c),
            Item::Reset => None,
        })
    }

    pub fn len_calls(&self) -> usize {
        self.calls().count()
    }

    pub fn args_bytes(&self) -> usize {
        self.calls().map(|c| c.args_canon.len()).sum()
    }

    pub fn result_bytes(&self) -> usize {
        self.calls().map(|c| c.result.len()).sum()
    }

    /// One JSON object per line: `{"reset":true}` or `{"tool","args","result","failed"}`.
    pub fn write_jsonl(&self, path: &Path) -> std::io::Result<()> {
        let mut out = String::new();
        for item in &self.items {
            match item {
                Item::Reset => out.push_str("{\"reset\":true}\n"),
                Item::Call(c) => {
                    let result = std::str::from_utf8(&c.result).expect("results are UTF-8");
                    let _ = writeln!(
                        out,
                        "{{\"tool\":{},\"args\":{},\"result\":{},\"failed\":{}}}",
                        js(&c.tool),
                        c.args_json,
                        js(result),
                        c.failed
                    );
                }
            }
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::File::create(path)?.write_all(out.as_bytes())
    }

    pub fn generate() -> Sequence {
        let mut g = Gen {
            rng: SplitMix(SEED),
            items: Vec::new(),
            calls: 0,
            file_versions: [0; FILES.len()],
            exec_count: 0,
        };
        let mut turn_left = 0usize;
        while g.calls < CALLS {
            if turn_left == 0 {
                if g.calls > 0 {
                    g.items.push(Item::Reset);
                }
                turn_left = g.rng.range(20, 80);
                g.exec_count = 0;
            }
            let before = g.calls;
            g.episode();
            turn_left = turn_left.saturating_sub(g.calls - before);
        }
        // Trim to exactly CALLS calls.
        while g.calls > CALLS {
            if let Some(Item::Call(_)) = g.items.pop() {
                g.calls -= 1;
            }
        }
        Sequence { items: g.items }
    }
}

/// A JSON string literal (as Python's `json.dumps(..., ensure_ascii=False)` writes it).
pub fn js(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo) as u64) as usize
    }

    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.range(0, xs.len())]
    }
}

const FILES: [&str; 14] = [
    "src/main.rs",
    "src/config.rs",
    "src/guard.rs",
    "src/json.rs",
    "src/hash.rs",
    "src/turn.rs",
    "src/budget.rs",
    "tests/test_guard.py",
    "tests/conftest.py",
    "agent/tool_guardrails.py",
    "agent/run_agent.py",
    "README.md",
    "pyproject.toml",
    "docs/design.md",
];

const CODE: [&str; 24] = [
    "use std::collections::HashMap;",
    "pub fn handle_line(&mut self, line: &[u8]) -> Result<(), Error> {",
    "    let req = json::parse(line).map_err(|e| self.err(e))?;",
    "    if !req.is_object() {",
    "        return Err(self.err(\"a request must be a JSON object\"));",
    "    }",
    "}",
    "def after_call(self, tool_name, args, result, *, failed=None):",
    "    signature = ToolCallSignature.from_call(tool_name, args)",
    "    if failed is None:",
    "        failed, _ = classify_tool_failure(tool_name, result)",
    "    return ToolGuardrailDecision(tool_name=tool_name, signature=signature)",
    "# The controller is per turn; reset_for_turn() forgets everything.",
    "import json, hashlib",
    "        self._exact_failure_counts[signature] = exact_count",
    "    assert decision.action == \"warn\", decision",
    "[project]",
    "name = \"hermes-agent\"",
    "dependencies = [\"httpx>=0.27\", \"pyyaml>=6\"]",
    "    for (k, v) in pairs.iter() {",
    "        out.put(b\",\");",
    "## Performance targets: at most 2x the raw SHA-256 of the bytes",
    "            \"duration_seconds\": round(time.monotonic() - start, 3),",
    "    \tpass  # tab-indented legacy line",
];

const QUERIES: [&str; 10] = [
    "python json.dumps sort_keys separators canonical",
    "rust sha2 crate sha-ni performance",
    "hermes agent tool loop guardrails",
    "criterion iter_custom example",
    "pytest fixture scope session",
    "serde_json preserve_order",
    "café menu unicode normalization NFC",
    "linux pipe buffer size",
    "how to detect agent stuck in loop",
    "valgrind callgrind annotate inclusive",
];

const COMMANDS: [&str; 10] = [
    "cargo test -p loopsim-engine",
    "pytest -x tests/test_guard.py",
    "ls -la src",
    "git status --short",
    "python -m pip install -e .",
    "grep -rn after_call agent/",
    "cargo build --release",
    "wc -l src/*.rs",
    "git diff --stat",
    "npm run lint",
];

struct Gen {
    rng: SplitMix,
    items: Vec<Item>,
    calls: usize,
    file_versions: [u32; FILES.len()],
    exec_count: u32,
}

impl Gen {
    fn push(&mut self, tool: &str, args_json: String, result: String, failed: bool) {
        let args = json::parse(args_json.as_bytes()).expect("bench args are JSON");
        let args_canon = json::canonical(&args);
        self.items.push(Item::Call(Call {
            tool: tool.to_string(),
            args_json,
            args,
            args_canon,
            result: result.into_bytes(),
            failed,
        }));
        self.calls += 1;
    }

    fn episode(&mut self) {
        let roll = self.rng.range(0, 100);
        match roll {
            0..=21 => self.read_file(None),
            22..=35 => self.terminal(None),
            36..=47 => self.execute_code(None),
            48..=56 => self.web_search(None),
            57..=63 => self.search_files(),
            64..=69 => self.patch(),
            70..=72 => self.write_file(),
            73..=75 => self.todo(),
            // Loops.
            76..=81 => {
                let f = self.rng.range(0, FILES.len());
                for _ in 0..self.rng.range(2, 7) {
                    self.read_file(Some(f));
                }
            }
            82..=87 => {
                let cmd = self.rng.range(0, COMMANDS.len());
                for _ in 0..self.rng.range(3, 8) {
                    self.terminal(Some((cmd, true)));
                }
            }
            88..=93 => {
                let code = self.rng.range(0, 4);
                for _ in 0..self.rng.range(3, 9) {
                    self.execute_code(Some(code));
                }
            }
            94..=96 => {
                let q = self.rng.range(0, QUERIES.len());
                for _ in 0..self.rng.range(2, 5) {
                    self.web_search(Some(q));
                }
            }
            _ => {
                let f = self.rng.range(0, FILES.len());
                let cmd = self.rng.range(0, COMMANDS.len());
                for _ in 0..self.rng.range(2, 5) {
                    self.read_file(Some(f));
                    self.terminal(Some((cmd, false)));
                }
            }
        }
    }

    fn read_file(&mut self, which: Option<usize>) {
        let k = which.unwrap_or_else(|| self.rng.range(0, FILES.len()));
        let path = format!("/work/app/{}", FILES[k]);
        let args = format!("{{\"path\": {}, \"offset\": 1, \"limit\": 500}}", js(&path));
        if which.is_none() && self.rng.chance(0.06) {
            let missing = format!("/work/app/src/missing_{}.rs", self.rng.range(0, 3));
            let args = format!("{{\"path\": {}}}", js(&missing));
            let res = format!(
                "{{\"error\": {}}}",
                js(&format!("File not found: {missing}"))
            );
            return self.push("read_file", args, res, true);
        }
        let v = self.file_versions[k] as usize;
        let mut content = String::new();
        for i in 0..58 {
            let line = CODE[(k * 7 + i * 5 + v * 3) % CODE.len()];
            let _ = writeln!(content, "{:>6}|{}", i + 1, line);
        }
        let res = format!(
            "{{\"content\": {}, \"path\": {}, \"total_lines\": {}, \"file_size\": {}, \
             \"truncated\": false, \"is_binary\": false, \"is_image\": false}}",
            js(&content),
            js(&path),
            58 + k * 3,
            content.len() + 97 * k
        );
        self.push("read_file", args, res, false);
    }

    fn terminal(&mut self, which: Option<(usize, bool)>) {
        let (c, fail) = match which {
            Some(x) => x,
            None => (self.rng.range(0, COMMANDS.len()), self.rng.chance(0.2)),
        };
        let cmd = COMMANDS[c];
        let args = format!("{{\"command\": {}, \"timeout\": 180}}", js(cmd));
        let lines = 2 + (c * 3) % 7;
        let mut output = String::new();
        for i in 0..lines {
            let _ = writeln!(output, "{cmd}: step {i} ok ({} items)", (c + 1) * (i + 3));
        }
        let res = if fail {
            output.push_str("error[E0308]: mismatched types\n  --> src/guard.rs:42:9\n");
            format!(
                "{{\"output\": {}, \"exit_code\": {}, \"error\": null}}",
                js(&output),
                1 + c % 2
            )
        } else {
            format!(
                "{{\"output\": {}, \"exit_code\": 0, \"error\": null}}",
                js(&output)
            )
        };
        self.push("terminal", args, res, fail);
    }

    fn execute_code(&mut self, which: Option<usize>) {
        let code_no = which.unwrap_or_else(|| self.rng.range(0, 8));
        let code = match code_no % 4 {
            0 => {
                "import subprocess\nr = subprocess.run(['pytest', '-q'], capture_output=True)\nprint(r.returncode)"
            }
            1 => {
                "from hermes_tools import terminal\nprint(terminal('git log --oneline -3')['output'])"
            }
            2 => "import json\nd = json.load(open('report.json'))\nprint(len(d['items']))",
            _ => "print(sum(range(10)))",
        };
        let args = format!("{{\"code\": {}}}", js(&format!("{code}\n# job {code_no}")));
        self.exec_count += 1;
        let dur = 0.05 + (self.rng.range(0, 3000) as f64) / 1000.0;
        let fail = which.is_none() && self.rng.chance(0.1);
        let res = if fail {
            format!(
                "{{\"status\": \"error\", \"output\": \"\", \"error\": \"Traceback (most recent call last):\\n  File \\\"<stdin>\\\", line 3\\nNameError: name 'd' is not defined\", \
                 \"duration_seconds\": {dur:.3}, \"kernel\": {{\"execution_count\": {}, \"mode\": \"persistent\"}}}}",
                self.exec_count
            )
        } else {
            format!(
                "{{\"status\": \"success\", \"output\": \"{}\\n\", \"tool_calls_made\": {}, \
                 \"duration_seconds\": {dur:.3}, \"kernel\": {{\"execution_count\": {}, \"mode\": \"persistent\"}}}}",
                ["0", "a1b2c3d fix guard\\n9f8e7d6 add bench", "42", "45"][code_no % 4],
                code_no % 2,
                self.exec_count
            )
        };
        self.push("execute_code", args, res, fail);
    }

    fn web_search(&mut self, which: Option<usize>) {
        let q = which.unwrap_or_else(|| self.rng.range(0, QUERIES.len()));
        let args = format!("{{\"query\": {}, \"limit\": 5}}", js(QUERIES[q]));
        if which.is_none() && self.rng.chance(0.04) {
            let res = "{\"success\": false, \"error\": \"Search backend rate limited (429); retry later\"}";
            return self.push("web_search", args, res.to_string(), true);
        }
        let mut web = Vec::new();
        for i in 0..5 {
            web.push(format!(
                "{{\"title\": {}, \"url\": {}, \"description\": {}}}",
                js(&format!("{} - result {i}", QUERIES[q])),
                js(&format!("https://example.org/{q}/article-{i}?ref=search")),
                js(&format!(
                    "An explanation of {} with examples, caveats and a short benchmark; \
                     covers the common pitfalls and links to the reference documentation (part {i}).",
                    QUERIES[q]
                ))
            ));
        }
        let res = format!(
            "{{\"success\": true, \"data\": {{\"web\": [{}]}}}}",
            web.join(", ")
        );
        self.push("web_search", args, res, false);
    }

    fn search_files(&mut self) {
        let pat = self.rng.pick(&[
            "after_call",
            "fn handle_line",
            "TODO",
            "sha256",
            "reset_for_turn",
        ]);
        let args = format!(
            "{{\"pattern\": {}, \"path\": \"/work/app\", \"target\": \"content\", \"file_glob\": \"*.py\"}}",
            js(pat)
        );
        let mut matches = Vec::new();
        for i in 0..4 {
            let f = FILES[(pat.len() + i * 3) % FILES.len()];
            matches.push(format!(
                "{{\"path\": {}, \"line\": {}, \"content\": {}}}",
                js(&format!("/work/app/{f}")),
                10 + i * 17,
                js(&format!("    {pat}(self, tool_name, args)  # match {i}"))
            ));
        }
        let res = format!(
            "{{\"total_count\": 4, \"matches\": [{}], \"truncated\": false}}",
            matches.join(", ")
        );
        self.push("search_files", args, res, false);
    }

    fn patch(&mut self) {
        let k = self.rng.range(0, FILES.len());
        let path = format!("/work/app/{}", FILES[k]);
        let old = CODE[(k + 2) % CODE.len()];
        let new = CODE[(k + 9) % CODE.len()];
        let args = format!(
            "{{\"mode\": \"replace\", \"path\": {}, \"old_string\": {}, \"new_string\": {}, \"replace_all\": false}}",
            js(&path),
            js(old),
            js(new)
        );
        if self.rng.chance(0.15) {
            let res = "{\"success\": false, \"error\": \"old_string not found in file\"}";
            return self.push("patch", args, res.to_string(), true);
        }
        self.file_versions[k] += 1;
        let diff = format!("--- a{path}\n+++ b{path}\n@@ -12,1 +12,1 @@\n-{old}\n+{new}\n");
        let res = format!(
            "{{\"success\": true, \"diff\": {}, \"files_modified\": [{}]}}",
            js(&diff),
            js(&path)
        );
        self.push("patch", args, res, false);
    }

    fn write_file(&mut self) {
        let k = self.rng.range(0, FILES.len());
        let path = format!("/work/app/{}.new", FILES[k]);
        let content: String = (0..10)
            .map(|i| CODE[(k + i) % CODE.len()])
            .collect::<Vec<_>>()
            .join("\n");
        let args = format!("{{\"path\": {}, \"content\": {}}}", js(&path), js(&content));
        let res = format!(
            "{{\"bytes_written\": {}, \"dirs_created\": false}}",
            content.len()
        );
        self.push("write_file", args, res, false);
    }

    fn todo(&mut self) {
        let n = self.rng.range(2, 5);
        let todos: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    "{{\"id\": \"{i}\", \"content\": {}, \"status\": \"{}\"}}",
                    js(&format!("step {i}: {}", COMMANDS[i])),
                    ["completed", "in_progress", "pending"][i % 3]
                )
            })
            .collect();
        let list = todos.join(", ");
        let args = format!("{{\"todos\": [{list}], \"merge\": false}}");
        let res = format!(
            "{{\"todos\": [{list}], \"summary\": {{\"total\": {n}, \"pending\": {}, \"in_progress\": 1, \"completed\": 1}}}}",
            n - 2
        );
        self.push("todo", args, res, false);
    }
}
