//! The evidence bundle CODE_ANALYSIS hands to a patch strategy (analysis.json): what failed and
//! where, with the source around it, the triage class of each log, the code most likely at fault
//! ranked, and what earlier candidates did. Pure: source files come in through a reader, so the bundle is unit-tested
//! without a repository.

use super::triage::LogTriage;
use super::{CrashReport, Diagnostic, Location, Severity};
use crate::results::{CaseStatus, TestCase};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Lines of source shown on each side of a line of interest.
const CONTEXT_LINES: u32 = 6;
/// Past this many bytes of serialised bundle, the oldest attempts' diffs are compacted into one
/// line each: the bundle goes into a model's prompt whole.
const BUNDLE_BUDGET: usize = 32 * 1024;
/// Added to a suspect function's score when its file changed since the last known-good commit.
const CHANGED_FILE_BOOST: f32 = 0.25;

/// Source text around a line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Excerpt {
    pub file: String,
    /// The line of interest (1-based).
    pub line: u32,
    pub first_line: u32,
    /// The lines, each prefixed with its number; the line of interest is marked with `>`.
    pub text: String,
}

/// A failing case with its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailingCase {
    #[serde(flatten)]
    pub case: TestCase,
    pub source: Option<Excerpt>,
}

/// A compiler or linker diagnostic with its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagnosticEvidence {
    #[serde(flatten)]
    pub diagnostic: Diagnostic,
    pub source: Option<Excerpt>,
}

/// A function or file that may be at fault, with why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suspect {
    /// A function name, or a file path when only the file is known.
    pub name: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub score: f32,
    pub reasons: Vec<String>,
}

/// An earlier candidate and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub iteration: u32,
    pub origin: String,
    /// What happened, e.g. `BROKE_BUILD`, `REGRESSED`.
    pub outcome: String,
    pub reason: String,
    /// The candidate's diff; None once compacted.
    pub diff: Option<String>,
}

/// Everything the evidence is made from.
#[derive(Debug, Clone, Default)]
pub struct Inputs<'a> {
    pub cases: &'a [TestCase],
    pub crash: Option<&'a CrashReport>,
    pub hang_site: Option<&'a Location>,
    pub diagnostics: &'a [Diagnostic],
    /// The triage of each log the last build and test wrote.
    pub logs: Vec<LogTriage>,
    /// Functions defined in the image (for matching names in messages and test bodies).
    pub functions: &'a [String],
    /// Files changed since the last known-good commit, when one is known.
    pub changed_files: &'a [String],
    /// The source file each function is defined in, as the build named it (relative to the work
    /// tree): how a suspect function is found to lie in a changed file.
    pub defined_in: BTreeMap<String, String>,
    pub history: Vec<Attempt>,
    pub hints: &'a [String],
}

/// The bundle written to analysis.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// Each log of the iteration with its triage class and the lines that decided it.
    pub logs: Vec<LogTriage>,
    pub failing: Vec<FailingCase>,
    pub crash: Option<CrashReport>,
    pub crash_source: Vec<Excerpt>,
    pub hang_site: Option<Location>,
    pub hang_source: Option<Excerpt>,
    pub diagnostics: Vec<DiagnosticEvidence>,
    /// Files changed since the last known-good commit, committed or not (empty when none was
    /// named).
    pub changed_files: Vec<String>,
    pub suspects: Vec<Suspect>,
    pub history: Vec<Attempt>,
    /// One line per attempt that was compacted out of `history`'s diffs.
    pub history_summary: Vec<String>,
    pub hints: Vec<String>,
}

/// Builds the bundle; `read` returns a source file's text by its path as the build named it.
pub fn build(inputs: Inputs<'_>, read: &dyn Fn(&str) -> Option<String>) -> Evidence {
    let excerpt = |file: &str, line: u32| read(file).map(|text| excerpt_of(file, &text, line));
    let failing: Vec<FailingCase> = inputs
        .cases
        .iter()
        .filter(|c| !matches!(c.status, CaseStatus::Pass | CaseStatus::Ignore))
        .map(|c| FailingCase {
            case: c.clone(),
            source: match (&c.file, c.line) {
                (Some(f), Some(l)) => excerpt(f, l),
                _ => None,
            },
        })
        .collect();
    let mut crash_source = Vec::new();
    if let Some(c) = inputs.crash {
        if let (Some(f), Some(l)) = (&c.file, c.line) {
            crash_source.extend(excerpt(f, l));
        }
        if let Some(Location {
            file: Some(f),
            line: Some(l),
            ..
        }) = &c.caller
        {
            if c.file.as_ref() != Some(f) || c.line != Some(*l) {
                crash_source.extend(excerpt(f, *l));
            }
        }
    }
    let hang_source = inputs.hang_site.and_then(|h| match (&h.file, h.line) {
        (Some(f), Some(l)) => excerpt(f, l),
        _ => None,
    });
    let diagnostics = inputs
        .diagnostics
        .iter()
        .filter(|d| d.severity != Severity::Note)
        .map(|d| DiagnosticEvidence {
            diagnostic: d.clone(),
            source: match (&d.file, d.line) {
                (Some(f), Some(l)) => excerpt(f, l),
                _ => None,
            },
        })
        .collect();
    let suspects = rank_suspects(&inputs, &failing, read);
    let mut evidence = Evidence {
        logs: inputs.logs,
        failing,
        crash: inputs.crash.cloned(),
        crash_source,
        hang_site: inputs.hang_site.cloned(),
        hang_source,
        diagnostics,
        changed_files: inputs.changed_files.to_vec(),
        suspects,
        history: inputs.history,
        history_summary: Vec::new(),
        hints: inputs.hints.to_vec(),
    };
    compact(&mut evidence, BUNDLE_BUDGET);
    evidence
}

/// Ranks the code most likely at fault: the crash or hang site, its caller, the functions the
/// failing tests call and name in their messages, the files that failed to compile, and the
/// files changed since the last known-good commit.
fn rank_suspects(
    inputs: &Inputs<'_>,
    failing: &[FailingCase],
    read: &dyn Fn(&str) -> Option<String>,
) -> Vec<Suspect> {
    let mut by_name: BTreeMap<String, Suspect> = BTreeMap::new();
    let mut add =
        |name: &str, file: Option<&String>, line: Option<u32>, score: f32, why: String| {
            let s = by_name.entry(name.to_string()).or_insert_with(|| Suspect {
                name: name.to_string(),
                file: file.cloned(),
                line,
                score: 0.0,
                reasons: Vec::new(),
            });
            // Independent reasons add up, but never past 1.
            s.score = (s.score + score).min(1.0);
            if s.file.is_none() {
                s.file = file.cloned();
                s.line = line;
            }
            s.reasons.push(why);
        };
    if let Some(c) = inputs.crash {
        if let Some(f) = &c.function {
            add(f, c.file.as_ref(), c.line, 0.9, "the crash site".into());
        }
        if let Some(Location {
            function: Some(f),
            file,
            line,
            ..
        }) = &c.caller
        {
            add(
                f,
                file.as_ref(),
                *line,
                0.6,
                "called the crashing code".into(),
            );
        }
    }
    if let Some(Location {
        function: Some(f),
        file,
        line,
        ..
    }) = inputs.hang_site
    {
        add(f, file.as_ref(), *line, 0.9, "where the image hung".into());
    }
    let is_test = |name: &str| failing.iter().any(|c| c.case.name == name);
    for fc in failing {
        let text = fc.case.file.as_deref().and_then(read);
        let body = match (&text, fc.case.line) {
            (Some(t), Some(l)) => test_body(t, &fc.case.name, l),
            _ => String::new(),
        };
        // Where the case failed, when that is inside the firmware's own code rather than a test
        // (a regex harness's fail line that names file:line, an assert in the code under test):
        // the function around that line.
        let failed_in = match (&text, fc.case.line) {
            (Some(t), Some(l)) => enclosing_function(t, l),
            _ => None,
        }
        .filter(|f| inputs.functions.contains(f) && !is_test(f) && !f.starts_with("test"));
        if let (Some(func), Some(file), Some(line)) = (failed_in, &fc.case.file, fc.case.line) {
            add(
                &func,
                Some(file),
                Some(line),
                0.8,
                format!("{} failed there ({file}:{line})", fc.case.name),
            );
        }
        let message = fc.case.message.clone().unwrap_or_default();
        for func in inputs.functions {
            if is_test(func) || func.starts_with("test") {
                continue;
            }
            if contains_word(&message, func) {
                add(
                    func,
                    None,
                    None,
                    0.5,
                    format!("named in {}'s message", fc.case.name),
                );
            }
            if contains_word(&body, func) {
                add(func, None, None, 0.4, format!("called by {}", fc.case.name));
            }
        }
    }
    for d in inputs
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
    {
        // A file outside the repository (a system header, an SDK elsewhere) is no patch's to
        // change, however loudly it fails to compile.
        if let Some(f) = d.file.as_ref().filter(|f| super::diagnostics::in_tree(f)) {
            add(
                f,
                Some(f),
                d.line,
                0.7,
                format!("does not compile: {}", d.message),
            );
        }
    }
    for f in inputs.changed_files {
        add(
            f,
            Some(f),
            None,
            0.3,
            "changed since the last known-good commit".into(),
        );
    }
    // A function under suspicion whose file changed since the last known-good commit is
    // the likelier culprit: the regression came in with that change.
    for s in by_name.values_mut() {
        if s.file.is_none() {
            s.file = inputs.defined_in.get(&s.name).cloned();
        }
        let in_changed = s
            .file
            .as_ref()
            .filter(|f| **f != s.name && inputs.changed_files.contains(f));
        if let Some(f) = in_changed {
            s.score = (s.score + CHANGED_FILE_BOOST).min(1.0);
            s.reasons.push(format!(
                "defined in {f}, changed since the last known-good commit"
            ));
        }
    }
    let mut suspects: Vec<Suspect> = by_name.into_values().collect();
    suspects.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.name.cmp(&b.name)));
    suspects
}

/// The body of a C test function starting near `line`: from its definition to the closing brace
/// at the start of a line. Good enough to see which functions a Unity or ztest test calls.
fn test_body(text: &str, name: &str, line: u32) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| contains_word(l, name) && l.contains('('))
        .unwrap_or_else(|| (line as usize).saturating_sub(1));
    let mut body = String::new();
    for l in lines.iter().skip(start) {
        body.push_str(l);
        body.push('\n');
        if l.starts_with('}') {
            break;
        }
    }
    body
}

/// The C function whose body holds `line` (1-based): the nearest definition above it that starts
/// a line (`static int has_room(const struct queue *q)`), unless a closing brace at the start of
/// a line between them says `line` lies outside any function. A guess from the text's shape, not
/// a parse: enough for code written the usual way.
fn enclosing_function(text: &str, line: u32) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let at = usize::try_from(line).ok()?.checked_sub(1)?;
    for l in lines.get(..=at)?.iter().rev() {
        if l.starts_with('}') {
            return None;
        }
        let starts_definition = l.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && !l.trim_end().ends_with(';')
            && !l.starts_with("typedef")
            && !l.starts_with("struct ");
        if let Some(name) = starts_definition.then(|| defined_name(l)).flatten() {
            return Some(name);
        }
    }
    None
}

/// The name a definition line defines: the first identifier outside parentheses followed by
/// `(`, attributes (`__attribute__((noinline))`) skipped.
fn defined_name(line: &str) -> Option<String> {
    let mut depth = 0usize;
    let mut ident = String::new();
    for c in line.chars() {
        match c {
            '(' if depth == 0 => {
                let name = ident.trim();
                if !name.is_empty()
                    && !name.starts_with(|c: char| c.is_ascii_digit())
                    && !name.starts_with("__attribute")
                    && !name.starts_with("__declspec")
                {
                    return Some(name.to_string());
                }
                depth = 1;
            }
            '(' => depth += 1,
            ')' => {
                depth = depth.saturating_sub(1);
                ident.clear();
            }
            c if depth == 0 && (c.is_ascii_alphanumeric() || c == '_') => ident.push(c),
            _ if depth == 0 => ident.clear(),
            _ => {}
        }
    }
    None
}

/// Whether `word` occurs in `text` as a whole identifier.
fn contains_word(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// Numbered lines around `line`, the line itself marked.
fn excerpt_of(file: &str, text: &str, line: u32) -> Excerpt {
    let first = line.saturating_sub(CONTEXT_LINES).max(1);
    let last = line + CONTEXT_LINES;
    let mut out = String::new();
    for (n, l) in (1u32..).zip(text.lines()) {
        if n < first || n > last {
            continue;
        }
        let mark = if n == line { '>' } else { ' ' };
        out.push_str(&format!("{mark}{n:5} | {l}\n"));
    }
    Excerpt {
        file: file.to_string(),
        line,
        first_line: first,
        text: out,
    }
}

/// Once the serialised bundle passes `budget` bytes, compacts earlier attempts into one summary
/// line each, oldest first, until it fits. The newest attempt keeps its diff whatever the size:
/// it is what the next candidate most needs to see, and the rest of the bundle is not history's
/// to shrink.
fn compact(evidence: &mut Evidence, budget: usize) {
    let size = |e: &Evidence| serde_json::to_vec(e).map(|b| b.len()).unwrap_or(0);
    let older = evidence.history.len().saturating_sub(1);
    for i in 0..older {
        if size(evidence) <= budget {
            break;
        }
        let a = &mut evidence.history[i];
        if a.diff.take().is_some() {
            evidence.history_summary.push(format!(
                "iteration {} ({}): {}: {}",
                a.iteration, a.origin, a.outcome, a.reason
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST_SRC: &str = "#include \"crc.h\"\n\nvoid test_crc16_known_vector(void)\n{\n    TEST_ASSERT_EQUAL_HEX16(0x29B1, crc16_ccitt(v, 9));\n}\n";
    const CRC_SRC: &str = "uint16_t crc16_ccitt(const uint8_t *d, size_t n)\n{\n    uint16_t crc = 0;\n    return crc;\n}\n";

    fn read(path: &str) -> Option<String> {
        match path {
            "tests/test_crc.c" => Some(TEST_SRC.to_string()),
            "src/crc.c" => Some(CRC_SRC.to_string()),
            _ => None,
        }
    }

    fn failing_case() -> TestCase {
        TestCase {
            name: "test_crc16_known_vector".into(),
            status: CaseStatus::Fail,
            message: Some("Expected 0x29B1 Was 0x31C3".into()),
            file: Some("tests/test_crc.c".into()),
            line: Some(5),
        }
    }

    #[test]
    fn the_function_a_failure_line_lies_in_is_found_by_the_shape_of_the_code() {
        let src = "#include \"queue.h\"\n\
                   \n\
                   static int has_room(const struct queue *q)\n\
                   {\n\
                   \x20   return q->count < QUEUE_LEN;\n\
                   }\n\
                   \n\
                   int count = 0;\n\
                   void __attribute__((noinline)) consumer_task(void)\n\
                   {\n\
                   \x20   if (seq != expected) {\n\
                   \x20       health_fail(&h, 1u, expected, seq);\n\
                   \x20   }\n\
                   }\n";
        assert_eq!(enclosing_function(src, 5).as_deref(), Some("has_room"));
        assert_eq!(
            enclosing_function(src, 12).as_deref(),
            Some("consumer_task")
        );
        // Between functions, and past the end: none.
        assert_eq!(enclosing_function(src, 7), None);
        assert_eq!(enclosing_function(src, 8), None);
        assert_eq!(enclosing_function(src, 99), None);
        assert_eq!(enclosing_function(src, 0), None);
    }

    #[test]
    fn a_failure_located_in_the_firmware_makes_its_function_a_suspect() {
        const PIPELINE: &str = "void consumer_task(void)\n{\n    check(seq);\n    if (bad) {\n        health_fail(&h, 1u, e, seq);\n    }\n}\n";
        let read = |path: &str| (path == "src/pipeline.c").then(|| PIPELINE.to_string());
        let cases = [TestCase {
            name: "self_check".into(),
            status: CaseStatus::Fail,
            message: Some("status: ERROR queue: expected item 5, got 13".into()),
            file: Some("src/pipeline.c".into()),
            line: Some(5),
        }];
        let functions = ["consumer_task".to_string(), "check".to_string()];
        let e = build(
            Inputs {
                cases: &cases,
                functions: &functions,
                ..Inputs::default()
            },
            &read,
        );
        let top = &e.suspects[0];
        assert_eq!(top.name, "consumer_task", "{:?}", e.suspects);
        assert_eq!(top.file.as_deref(), Some("src/pipeline.c"));
        assert_eq!(top.line, Some(5));
        assert_eq!(top.reasons, ["self_check failed there (src/pipeline.c:5)"]);
        // A Unity failure lies in its test function: no suspect of its own.
        let cases = [failing_case()];
        let functions = [
            "test_crc16_known_vector".to_string(),
            "crc16_ccitt".to_string(),
        ];
        let e = build(
            Inputs {
                cases: &cases,
                functions: &functions,
                ..Inputs::default()
            },
            &super::tests::read,
        );
        assert!(e
            .suspects
            .iter()
            .all(|s| !s.reasons[0].contains("failed there")));
    }

    #[test]
    fn failing_cases_carry_their_source_with_the_line_marked() {
        let cases = [failing_case()];
        let e = build(
            Inputs {
                cases: &cases,
                ..Inputs::default()
            },
            &read,
        );
        let src = e.failing[0].source.as_ref().unwrap();
        assert!(
            src.text.contains(">    5 |     TEST_ASSERT_EQUAL_HEX16"),
            "{}",
            src.text
        );
        assert_eq!(src.first_line, 1);
    }

    #[test]
    fn functions_the_failing_test_calls_are_suspects() {
        let cases = [failing_case()];
        let functions = [
            "crc16_ccitt".to_string(),
            "crc8".to_string(),
            "test_crc16_known_vector".to_string(),
        ];
        let e = build(
            Inputs {
                cases: &cases,
                functions: &functions,
                ..Inputs::default()
            },
            &read,
        );
        assert_eq!(e.suspects.len(), 1, "{:?}", e.suspects);
        assert_eq!(e.suspects[0].name, "crc16_ccitt");
        assert!(e.suspects[0].reasons[0].contains("called by test_crc16_known_vector"));
    }

    #[test]
    fn the_crash_site_ranks_first_and_its_source_is_shown() {
        let crash = CrashReport {
            pc: Some("0xfffffffe".into()),
            lr: Some("0x00000299".into()),
            cfsr: Some("0x00000001".into()),
            hfsr: None,
            function: Some("crc16_ccitt".into()),
            file: Some("src/crc.c".into()),
            line: Some(3),
            caller: None,
            fault_bits: vec!["IACCVIOL".into()],
            fault_address: None,
            exception: Some("HardFault".into()),
            lockup: false,
            summary: "HardFault".into(),
        };
        let changed = ["src/other.c".to_string()];
        let e = build(
            Inputs {
                crash: Some(&crash),
                changed_files: &changed,
                ..Inputs::default()
            },
            &read,
        );
        assert_eq!(e.suspects[0].name, "crc16_ccitt");
        assert!(e.suspects[0].score > e.suspects[1].score);
        assert!(e.crash_source[0].text.contains(">    3 |"));
    }

    #[test]
    fn functions_in_files_changed_since_the_known_good_commit_rank_higher() {
        let functions = ["crc16_ccitt".to_string(), "crc8".to_string()];
        let message_names_crc8 = TestCase {
            message: Some("crc8 disagrees".into()),
            ..failing_case()
        };
        let cases_both = [message_names_crc8];
        let defined_in: BTreeMap<String, String> = [
            ("crc16_ccitt".to_string(), "src/crc.c".to_string()),
            ("crc8".to_string(), "src/crc8.c".to_string()),
        ]
        .into();
        let changed = ["src/crc.c".to_string()];
        let without = build(
            Inputs {
                cases: &cases_both,
                functions: &functions,
                defined_in: defined_in.clone(),
                ..Inputs::default()
            },
            &read,
        );
        assert_eq!(without.suspects[0].name, "crc8", "{:?}", without.suspects);
        assert!(without.changed_files.is_empty());
        let with = build(
            Inputs {
                cases: &cases_both,
                functions: &functions,
                changed_files: &changed,
                defined_in,
                ..Inputs::default()
            },
            &read,
        );
        assert_eq!(with.changed_files, changed);
        let top = &with.suspects[0];
        assert_eq!(top.name, "crc16_ccitt", "{:?}", with.suspects);
        assert_eq!(top.file.as_deref(), Some("src/crc.c"));
        assert!(top
            .reasons
            .contains(&"defined in src/crc.c, changed since the last known-good commit".into()));
        assert!(with.suspects.iter().any(|s| s.name == "src/crc.c"));
    }

    /// Regression: a FreeRTOS demo's compile error named a file outside the repository (as read
    /// from the wrong directory), and that path became the top suspect for a patch.
    #[test]
    fn only_files_in_the_repository_are_suspects_for_a_compile_error() {
        let error = |file: &str, line: u32| Diagnostic {
            severity: Severity::Error,
            tool: "compiler".into(),
            kind: "compile".into(),
            file: Some(file.into()),
            line: Some(line),
            column: Some(1),
            message: "expected ';'".into(),
            log_line: 1,
        };
        let diagnostics = [
            error("/usr/include/stdio.h", 10),
            error("../../Demo/x.c", 2),
            error("src/crc.c", 3),
        ];
        let e = build(
            Inputs {
                diagnostics: &diagnostics,
                ..Inputs::default()
            },
            &read,
        );
        let names: Vec<_> = e.suspects.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["src/crc.c"]);
        assert!(e.diagnostics[2].source.is_some());
        assert!(e.diagnostics[..2].iter().all(|d| d.source.is_none()));
    }

    fn attempts(n: u32, diff_len: usize) -> Vec<Attempt> {
        (1..=n)
            .map(|i| Attempt {
                iteration: i,
                origin: format!("c{i}"),
                outcome: "REGRESSED".into(),
                reason: "broke crc32".into(),
                diff: Some("x".repeat(diff_len)),
            })
            .collect()
    }

    fn serialised_len(e: &Evidence) -> usize {
        serde_json::to_vec(e).unwrap().len()
    }

    #[test]
    fn a_bundle_under_budget_keeps_every_attempts_diff() {
        let e = build(
            Inputs {
                history: attempts(4, 200),
                ..Inputs::default()
            },
            &read,
        );
        assert!(serialised_len(&e) < BUNDLE_BUDGET);
        assert!(e.history.iter().all(|a| a.diff.is_some()), "{e:?}");
        assert!(e.history_summary.is_empty());
    }

    #[test]
    fn a_bundle_over_budget_compacts_the_oldest_attempts_until_it_fits() {
        let e = build(
            Inputs {
                history: attempts(6, 10 * 1024),
                ..Inputs::default()
            },
            &read,
        );
        assert!(
            serialised_len(&e) <= BUNDLE_BUDGET,
            "{}",
            serialised_len(&e)
        );
        let whole: Vec<u32> = e
            .history
            .iter()
            .filter(|a| a.diff.is_some())
            .map(|a| a.iteration)
            .collect();
        // 6 x 10 KiB in a 32 KiB bundle: the three oldest go, the three newest stay whole.
        assert_eq!(whole, [4, 5, 6]);
        assert_eq!(e.history.len(), 6, "compacted attempts stay listed");
        assert_eq!(e.history_summary.len(), 3);
        assert!(e.history_summary[0].starts_with("iteration 1 (c1): REGRESSED: broke crc32"));
    }

    #[test]
    fn the_newest_attempt_keeps_its_diff_even_when_the_bundle_cannot_fit() {
        let e = build(
            Inputs {
                history: attempts(2, 2 * BUNDLE_BUDGET),
                ..Inputs::default()
            },
            &read,
        );
        assert!(e.history[0].diff.is_none());
        assert!(e.history[1].diff.is_some());
        assert_eq!(e.history_summary.len(), 1);
    }

    #[test]
    fn each_log_keeps_its_triage() {
        let t = crate::analysis::triage::classify(
            "src/crc.c:3:5: error: expected ';' before 'return'\n",
            &Default::default(),
        );
        let e = build(
            Inputs {
                logs: vec![LogTriage::new("iter-000/build.log", &t)],
                ..Inputs::default()
            },
            &read,
        );
        assert_eq!(e.logs.len(), 1);
        assert_eq!(e.logs[0].file, "iter-000/build.log");
        assert_eq!(e.logs[0].lines, vec![1]);
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["logs"][0]["class"], "BUILD_ERROR");
    }

    #[test]
    fn whole_words_only() {
        assert!(contains_word("x = crc8(v);", "crc8"));
        assert!(!contains_word("x = crc8_table[0];", "crc8"));
        assert!(!contains_word("mycrc8(v)", "crc8"));
    }
}
