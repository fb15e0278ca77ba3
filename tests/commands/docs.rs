//! The README, docs and code stand alone: nothing points at notes outside the repository,
//! and every `docs/...` page (and section) cited by the README, the docs or a scenario's
//! provenance line exists.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{root, scenario_files};

/// Where the checked files live, relative to the repository root.
const CHECKED: [&str; 8] = [
    "README.md",
    "docs",
    "scenarios",
    "sim",
    "benches",
    "tests",
    "bridges",
    "traces",
];

/// References to files outside the repository (built from pieces so this file passes).
fn outside_references() -> [String; 3] {
    [
        format!("../{}", "shared"),
        format!("{}{}.md", "SEMAN", "TICS"),
        format!("{}{}.md", "DES", "IGN"),
    ]
}

/// The tracked files under `CHECKED`; without git, every file there (build outputs and
/// hidden folders skipped).
fn checked_files() -> Vec<PathBuf> {
    let root = root();
    let git = Command::new("git")
        .arg("ls-files")
        .arg("-z")
        .arg("--")
        .args(CHECKED)
        .current_dir(&root)
        .output();
    if let Ok(out) = git
        && out.status.success()
        && !out.stdout.is_empty()
    {
        return out
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| root.join(String::from_utf8_lossy(p).as_ref()))
            .filter(|p| p.is_file())
            .collect();
    }
    let mut files = Vec::new();
    for c in CHECKED {
        walk(&root.join(c), &mut files);
    }
    files
}

fn walk(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_file() {
        out.push(path.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        walk(&e.path(), out);
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn nothing_points_outside_the_repository() {
    let files = checked_files();
    assert!(
        files.iter().any(|f| f.ends_with("README.md")),
        "no files found"
    );
    let mut bad = Vec::new();
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        for pattern in outside_references() {
            if !contains(&bytes, pattern.as_bytes()) {
                continue;
            }
            let text = String::from_utf8_lossy(&bytes);
            for (n, line) in text.lines().enumerate() {
                if line.contains(&pattern) {
                    let rel = f.strip_prefix(root()).unwrap_or(f);
                    bad.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "these lines point outside the repository; cite docs/ instead:\n{}",
        bad.join("\n")
    );
}

/// One citation of a docs page: the path and the section numbers after it, if any.
#[derive(Debug)]
struct Citation {
    path: String,
    sections: Vec<String>,
}

/// Every `docs/NAME.EXT` in `text`, with a following `section N` / `sections N-M and K`.
fn citations(text: &str) -> Vec<Citation> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("docs/") {
        // Only a path that starts a word: not `xdocs/` or `a/docs/`.
        let before = rest[..i].chars().next_back();
        let tail = &rest[i..];
        let len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)))
            .unwrap_or(tail.len());
        let path = tail[..len].trim_end_matches('.');
        rest = &tail[len..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
            || !path["docs/".len()..].contains('.')
        {
            continue;
        }
        out.push(Citation {
            path: path.to_string(),
            sections: sections_after(rest),
        });
    }
    out
}

/// The section numbers cited right after a path: skips link and code punctuation, then reads
/// `section 3`, `sections 11-12`, `sections 9.4 and 16.2`, `sections 3 / 4`.
fn sections_after(text: &str) -> Vec<String> {
    let t = text.trim_start_matches(|c: char| "`)] (".contains(c));
    let Some(t) = t
        .strip_prefix("sections ")
        .or_else(|| t.strip_prefix("section "))
    else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut t = t;
    loop {
        let len = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let number = t[..len].trim_end_matches('.');
        if number.is_empty() {
            break;
        }
        found.push(number.to_string());
        t = &t[len..];
        match ["-", " and ", ", ", " / "]
            .into_iter()
            .find(|sep| t.starts_with(sep))
        {
            Some(sep) => t = &t[sep.len()..],
            None => break,
        }
    }
    found
}

/// Whether a Markdown page has a heading numbered `number` (`## 3. ...` or `### 9.4 ...`).
fn has_section(page: &str, number: &str) -> bool {
    page.lines().any(|l| {
        let h = l.trim_start_matches('#');
        l.starts_with('#')
            && (h.starts_with(&format!(" {number}. ")) || h.starts_with(&format!(" {number} ")))
    })
}

#[test]
fn cited_docs_pages_and_sections_exist() {
    let root = root();
    let mut sources: Vec<(String, String)> = Vec::new();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    sources.push(("README.md".into(), readme));
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            let name = format!("docs/{}", p.file_name().unwrap().to_string_lossy());
            sources.push((name, std::fs::read_to_string(&p).unwrap()));
        }
    }
    let mut provenance_lines = 0;
    for f in scenario_files() {
        let text = std::fs::read_to_string(&f).unwrap();
        let name = format!("scenarios/{}", f.file_name().unwrap().to_string_lossy());
        let line = text
            .lines()
            .find(|l| l.starts_with("provenance = "))
            .unwrap_or_else(|| panic!("{name} has no provenance line"));
        provenance_lines += 1;
        sources.push((name, line.to_string()));
    }
    assert!(provenance_lines >= 19, "only {provenance_lines} scenarios");

    let mut cited = 0;
    let mut bad = Vec::new();
    for (source, text) in &sources {
        for c in citations(text) {
            cited += 1;
            let page = root.join(&c.path);
            let Ok(body) = std::fs::read_to_string(&page) else {
                bad.push(format!("{source}: {} does not exist", c.path));
                continue;
            };
            for s in &c.sections {
                if !has_section(&body, s) {
                    bad.push(format!("{source}: {} has no section {s}", c.path));
                }
            }
        }
    }
    assert!(
        cited >= 20,
        "only {cited} citations found: is the parser broken?"
    );
    assert!(bad.is_empty(), "broken citations:\n{}", bad.join("\n"));
}

#[test]
fn the_citation_parser_reads_the_forms_in_use() {
    let c = citations(
        "see [`docs/hermes-semantics.md`](docs/hermes-semantics.md) (sections 9.4 and 16.2); \
         docs/incident.md, docs/hermes-semantics.md sections 11-12 and docs/workloads.md.",
    );
    let got: Vec<(&str, Vec<&str>)> = c
        .iter()
        .map(|c| {
            (
                c.path.as_str(),
                c.sections.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("docs/hermes-semantics.md", vec![]),
            ("docs/hermes-semantics.md", vec!["9.4", "16.2"]),
            ("docs/incident.md", vec![]),
            ("docs/hermes-semantics.md", vec!["11", "12"]),
            ("docs/workloads.md", vec![]),
        ]
    );
    assert!(has_section(
        "## 9. Signatures\n### 9.4 Test vectors\n",
        "9.4"
    ));
    assert!(has_section("## 9. Signatures\n", "9"));
    assert!(!has_section("## 19. Other\n", "9"));
}

/// Every `package==version` the README, the docs and `.ci/run` name for a runtime the tests
/// install is the pin of `tests/python-venvs.tsv`: one table, read by the tests and CI, and the
/// docs held to it.
#[test]
fn documented_package_pins_are_the_tested_ones() {
    let pins: Vec<(String, String)> = common::venv_table()
        .iter()
        .flat_map(|v| v.pip_args.clone())
        .filter_map(|a| {
            let (name, version) = a.split_once("==")?;
            // `pydantic-ai-slim[openai]` is documented as `pydantic-ai-slim[openai]` too.
            Some((name.to_string(), version.to_string()))
        })
        .collect();
    assert!(pins.len() >= 10, "the table's pins: {pins:?}");
    let mut files: Vec<PathBuf> = vec![root().join("README.md"), root().join(".ci/run")];
    walk(&root().join("docs"), &mut files);
    let mut checked = 0;
    let mut wrong = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for (name, version) in &pins {
            let needle = format!("{name}==");
            for (at, _) in text.match_indices(&needle) {
                let before = text[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_') {
                    continue; // a longer name that ends with this one
                }
                let rest = &text[at + needle.len()..];
                let said: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
                    .collect();
                checked += 1;
                if &said != version {
                    wrong.push(format!(
                        "{}: {name}=={said} (tested: {version})",
                        f.display()
                    ));
                }
            }
        }
    }
    assert!(checked >= 10, "only {checked} pins found in the docs");
    assert!(
        wrong.is_empty(),
        "pins that differ from tests/python-venvs.tsv:\n{}",
        wrong.join("\n")
    );
}
