//! The shape of the source tree, read from `src/` as a reviewer would: no two modules import each
//! other, however indirectly (a circle means neither can be understood or tested alone), and the
//! layers that must not talk to people (policy, the orchestrator, the library below `ui/` and
//! `cli/`) do not print or read the terminal.

use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's module path (`orchestrator::job`; `orchestrator` for its `mod.rs`, "" for the root).
fn module_of(file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src_dir()).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The file's text without its unit tests, which may reach anywhere.
fn code_of(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    match text.find("#[cfg(test)]") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Module → the other modules it names through `crate::` or `super::` paths (its own
/// ancestors excluded: a child may use what its parent declares).
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    let modules: BTreeMap<String, PathBuf> = files
        .iter()
        .map(|f| (module_of(f).join("::"), f.clone()))
        .collect();
    let resolve = |segments: &[String]| -> Option<String> {
        (1..=segments.len())
            .rev()
            .map(|n| segments[..n].join("::"))
            .find(|candidate| modules.contains_key(candidate))
    };
    let path = Regex::new(r"\b(crate|super)((?:::\w+)+)").unwrap();
    let group = Regex::new(r"(?s)use (crate|super)::\{(.*?)\};").unwrap();
    let item = Regex::new(r"\w+(?:::\w+)*").unwrap();
    let mut graph = BTreeMap::new();
    for (name, file) in &modules {
        let base: Vec<String> = module_of(file);
        let parent: Vec<String> = base[..base.len().saturating_sub(1)].to_vec();
        let code = code_of(file);
        let mut targets = Vec::new();
        let anchor = |kind: &str| {
            if kind == "crate" {
                Vec::new()
            } else {
                parent.clone()
            }
        };
        for found in path.captures_iter(&code) {
            let mut segments = anchor(&found[1]);
            segments.extend(
                found[2]
                    .trim_start_matches("::")
                    .split("::")
                    .map(String::from),
            );
            targets.push(segments);
        }
        for found in group.captures_iter(&code) {
            for listed in item.find_iter(&found[2]) {
                let mut segments = anchor(&found[1]);
                segments.extend(listed.as_str().split("::").map(String::from));
                targets.push(segments);
            }
        }
        let deps: BTreeSet<String> = targets
            .iter()
            .filter_map(|segments| resolve(segments))
            .filter(|dep| !dep.is_empty() && dep != name && !name.starts_with(&format!("{dep}::")))
            .collect();
        graph.insert(name.clone(), deps);
    }
    graph
}

/// A circle through `start`, if there is one: the modules in order, `start` first and last.
fn circle_through(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((at, trail)) = stack.pop() {
        for next in graph.get(&at).into_iter().flatten() {
            if next == start {
                let mut circle = trail.clone();
                circle.push(start.to_string());
                return Some(circle);
            }
            if seen.insert(next.clone()) {
                let mut longer = trail.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

#[test]
fn no_module_imports_itself_through_others() {
    let graph = import_graph();
    assert!(graph.len() > 50, "{} modules found", graph.len());
    // The reader sees through the usual forms, or this test would pass on anything.
    assert!(graph["orchestrator::command"].contains("orchestrator::bisect"));
    assert!(graph["orchestrator::job"].contains("orchestrator::board"));
    assert!(graph["dut::lease"].contains("events"));
    let circles: Vec<String> = graph
        .keys()
        .filter_map(|module| circle_through(&graph, module))
        .map(|circle| circle.join(" → "))
        .collect();
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn a_circle_is_found_when_there_is_one() {
    let mut graph = BTreeMap::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        graph
            .entry(from.to_string())
            .or_insert_with(BTreeSet::new)
            .insert(to.to_string());
    }
    assert_eq!(
        circle_through(&graph, "a").unwrap(),
        ["a", "b", "c", "a"].map(String::from)
    );
    assert_eq!(circle_through(&graph, "d"), None);
}

#[test]
fn only_ui_and_cli_talk_to_a_person() {
    let talking = Regex::new(
        r"\b(println!|eprintln!|print!|eprint!|std::io::stdin\(\)|std::io::stderr\(\)|std::io::stdout\(\))",
    )
    .unwrap();
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    let mut offenders = Vec::new();
    for file in &files {
        let module = module_of(file);
        let allowed = matches!(
            module.first().map(String::as_str),
            None | Some("ui" | "cli" | "mcp" | "main")
        ) || module == ["process", "guardian"];
        if allowed {
            continue;
        }
        for (n, line) in code_of(file).lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if talking.is_match(code) {
                offenders.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "the library talks to the terminal outside ui/ and cli/:\n{}",
        offenders.join("\n")
    );
}
