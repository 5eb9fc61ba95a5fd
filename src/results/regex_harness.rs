//! The regex harness, like Twister's console harness: the profile lists regular expressions the
//! console must show (`[test.regex] patterns`), and optionally lines that mean a failure
//! (`fail_patterns`) or a crash (`crash_patterns`). For firmware that prints no test framework's
//! format at all: a boot banner, a sample's output, a self-test line.
//!
//! The first decisive line decides the run, as on firmware that never exits (an RTOS printing a
//! status line for ever): the line that completes the patterns passes it, a fail line fails it and
//! a crash line crashes it, even when no pattern matched before; nothing after that line counts, and
//! the detector ends the attempt there.
//!
//! Cases:
//! - `one_line`: one case, named `case_name`: PASS when the pattern matched, FAIL or CRASH when a
//!   fail or crash line came first (the line itself is the case's message), HANG when the timeout
//!   came first, MISSING when the run ended without it.
//! - `multi_line`: one case per pattern, named by the pattern: PASS when it matched (in order,
//!   when `ordered`), FAIL when it matched only before its turn, MISSING when it never matched;
//!   plus the run's own case, named `case_name`, that carries what happened to the run as a
//!   whole: PASS, or the FAIL line, the CRASH, the HANG. (It is always there, so a run that stops
//!   crashing has a case that now passes.)
//!
//! A fail or crash pattern with named groups `file` and `line` (`(?P<file>[^:]+):(?P<line>\d+)`)
//! gives the case that failed or crashed its location, as Unity's and ztest's lines do.
//!
//! A pattern an ordered list repeats must match that many lines, in turn; its later cases are
//! named `<pattern> #2`, ... (the profile refuses a repeat in an unordered list, and a fail or
//! crash pattern that is also a required one).
//!
//! Matching, line by line, on the line without its line ending: with `ordered` only the pattern
//! whose turn it is can match a line (Twister's rule); otherwise every pattern not yet matched is
//! tried. A line any required pattern matches is never a failure or crash line (so `Error count:
//! 0` can be required while `Error` fails the run). A fault dump on the console (see
//! [`super::crash_dump`]) is a crash unless a required pattern matched after it, or it began after
//! the decisive line.
//!
//! The detector ends the run as soon as every pattern has matched, or a fail or crash line came.
//! Pure: it reads UART text only, and must not touch files, the clock or the DUT.

use super::attribution::{self, Stop};
use super::common;
use super::crash_dump::{self, Dump};
use super::lines::{clean, is_nonce};
use super::{
    CaseStatus, HarnessParser, HarnessStream, ParseContext, TestCase, TestResults, Verdict,
};
use crate::capture::{Capture, EndDetector, FaultSnapshot, LineRead, RunEnd};
use crate::config::{Pattern, RegexMode, RegexSpec};

const HARNESS: &str = "regex";

/// Parses a console against a profile's `[test.regex]`.
#[derive(Debug, Clone)]
pub struct RegexParser {
    spec: RegexSpec,
}

impl RegexParser {
    pub fn new(spec: RegexSpec) -> RegexParser {
        RegexParser { spec }
    }
}

impl HarnessParser for RegexParser {
    fn name(&self) -> &'static str {
        HARNESS
    }

    fn stream(&self) -> Box<dyn HarnessStream> {
        Box::new(RegexStream {
            spec: self.spec.clone(),
            matcher: Matcher::new(&self.spec),
            lines: 0,
            dumps: crash_dump::Finder::default(),
        })
    }
}

/// The regex harness's parse of one attempt, line by line: the run is over once every pattern
/// has matched, or a fail or crash line came.
#[derive(Debug, Clone)]
pub struct RegexStream {
    spec: RegexSpec,
    matcher: Matcher,
    /// UART lines read so far: the index of the next one.
    lines: usize,
    dumps: crash_dump::Finder,
}

impl EndDetector for RegexStream {
    /// Kept: a line any pattern (pass, fail or crash) matches.
    fn read_line(&mut self, line: &str) -> LineRead {
        let keep = self.matcher.feed(self.lines, line);
        let settle = self.dumps.line(line);
        self.lines += 1;
        LineRead {
            verdict: self.matcher.decided(),
            keep,
            settle,
        }
    }
}

impl HarnessStream for RegexStream {
    fn fault_dump(&self) -> Option<FaultSnapshot> {
        self.dumps.fault()
    }

    fn finish(&mut self, capture: &Capture, _ctx: &ParseContext) -> TestResults {
        results(&self.spec, &self.matcher, capture, self.dumps.dump())
    }
}

/// A line a pattern matched: its index among the UART lines, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hit {
    index: usize,
    text: String,
}

impl Hit {
    fn describe(&self) -> String {
        format!("line {}: {}", self.index + 1, self.text)
    }
}

/// The matching state of one attempt: what decides the run's end and its results alike.
#[derive(Debug, Clone)]
struct Matcher {
    patterns: Vec<Pattern>,
    fail_patterns: Vec<Pattern>,
    crash_patterns: Vec<Pattern>,
    ordered: bool,
    /// Where each pattern matched (in its turn, when ordered).
    seen: Vec<Option<Hit>>,
    /// Ordered only: where a pattern matched before its turn.
    early: Vec<Option<Hit>>,
    /// The first fail line, and which fail pattern matched it.
    failed: Option<(Hit, usize)>,
    crashed: Option<(Hit, usize)>,
    /// The last line a required pattern matched.
    last_required: Option<usize>,
    /// The line that decided the run (completed the patterns, or failed or crashed it): no later
    /// line is read.
    decided_at: Option<usize>,
    saw_output: bool,
}

impl Matcher {
    fn new(spec: &RegexSpec) -> Matcher {
        let n = spec.patterns.len();
        Matcher {
            patterns: spec.patterns.clone(),
            fail_patterns: spec.fail_patterns.clone(),
            crash_patterns: spec.crash_patterns.clone(),
            ordered: spec.ordered && spec.mode == RegexMode::MultiLine,
            seen: vec![None; n],
            early: vec![None; n],
            failed: None,
            crashed: None,
            last_required: None,
            decided_at: None,
            saw_output: false,
        }
    }

    /// Reads one line; true when any pattern (pass, fail or crash) matches it. After the
    /// decision the line is only matched, never counted.
    fn feed(&mut self, index: usize, raw: &str) -> bool {
        if self.decided_at.is_some() {
            return self.matches_any(clean(raw));
        }
        let matched = self.match_line(index, raw);
        if self.decided() {
            self.decided_at = Some(index);
        }
        matched
    }

    fn matches_any(&self, line: &str) -> bool {
        [&self.patterns, &self.fail_patterns, &self.crash_patterns]
            .into_iter()
            .flatten()
            .any(|p| p.is_match(line))
    }

    /// Counts one line's matches; true when any pattern matched it.
    fn match_line(&mut self, index: usize, raw: &str) -> bool {
        let line = clean(raw);
        if line.is_empty() || is_nonce(line) {
            return self.matches_any(line);
        }
        self.saw_output = true;
        let hit = || Hit {
            index,
            text: line.to_string(),
        };
        let matching: Vec<usize> = (0..self.patterns.len())
            .filter(|&k| self.patterns.get(k).is_some_and(|p| p.is_match(line)))
            .collect();
        if !matching.is_empty() {
            self.last_required = Some(index);
            if self.ordered {
                // Only the pattern whose turn it is counts; one that matches ahead of its turn is
                // remembered to explain why it never matched in order.
                let turn = self.seen.iter().position(Option::is_none);
                match turn.filter(|t| matching.contains(t)) {
                    Some(t) => self.seen[t] = Some(hit()),
                    None => {
                        for k in matching {
                            if turn.is_some_and(|t| k > t) && self.early[k].is_none() {
                                self.early[k] = Some(hit());
                            }
                        }
                    }
                }
            } else {
                for k in matching {
                    if self.seen[k].is_none() {
                        self.seen[k] = Some(hit());
                    }
                }
            }
            return true;
        }
        // Both are checked: a line that matches a crash and a fail pattern is a crash.
        let crash = self.crash_patterns.iter().position(|p| p.is_match(line));
        if let Some(k) = crash {
            self.crashed = Some((hit(), k));
        }
        let fail = self.fail_patterns.iter().position(|p| p.is_match(line));
        if let Some(k) = fail {
            self.failed = Some((hit(), k));
        }
        crash.is_some() || fail.is_some()
    }

    fn complete(&self) -> bool {
        self.seen.iter().all(Option::is_some)
    }

    fn decided(&self) -> bool {
        self.complete() || self.failed.is_some() || self.crashed.is_some()
    }
}

/// What happened to the run as a whole: the case message, and for a decisive line the note that
/// says which pattern matched it where, and the file and line its named groups captured.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Crashed {
        message: String,
        why: String,
        at: At,
    },
    Failed {
        message: String,
        why: String,
        at: At,
    },
    Hung(String),
    Finished,
}

/// Where a fail or crash line says the failure is: the pattern's named groups `file` and `line`,
/// as Unity's and ztest's own lines give them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct At {
    file: Option<String>,
    line: Option<u32>,
}

impl At {
    /// The groups `pattern` captures in `text`; a `line` that is no number is left out.
    fn captured(pattern: &Pattern, text: &str) -> At {
        let Some(caps) = pattern.regex().captures(text) else {
            return At::default();
        };
        let group = |name: &str| {
            caps.name(name)
                .map(|m| m.as_str().trim())
                .filter(|s| !s.is_empty())
        };
        At {
            file: group("file").map(str::to_string),
            line: group("line").and_then(|l| l.parse().ok()),
        }
    }
}

fn quoted(pattern: &Pattern) -> String {
    format!("`{pattern}`")
}

/// The results of the matching `m` did, with the console's first fault dump `dump`.
fn results(spec: &RegexSpec, m: &Matcher, capture: &Capture, dump: Option<Dump>) -> TestResults {
    let mut notes = Vec::new();
    common::truncation_note(capture, &mut notes);
    // A failed assertion the profile's own pattern decided on is what the pattern says it is.
    let dump = dump.filter(|dump| {
        m.last_required.is_none_or(|last| last < dump.first)
            && m.decided_at.is_none_or(|decided| {
                dump.first < decided || (dump.first == decided && !dump.assertion_alone())
            })
    });
    if let Some(dump) = &dump {
        notes.push(attribution::dump_note(dump));
    }

    // The decisive line itself is the case message; which pattern matched it, and where, a note;
    // the file and line its groups name, the case's location.
    let decisive = |found: &Option<(Hit, usize)>, patterns: &[Pattern]| {
        found.as_ref().and_then(|(hit, k)| {
            let pattern = patterns.get(*k)?;
            Some((
                hit.text.clone(),
                format!("{} matched {}", quoted(pattern), hit.describe()),
                At::captured(pattern, &hit.text),
            ))
        })
    };
    let crash_pattern = decisive(&m.crashed, &spec.crash_patterns);
    let fail_pattern = decisive(&m.failed, &spec.fail_patterns);
    let console_crash = crash_pattern.is_some() || dump.is_some();
    let outcome = match (
        Stop::of(capture.end, console_crash),
        crash_pattern,
        fail_pattern,
    ) {
        (_, Some((message, why, at)), _) => Outcome::Crashed { message, why, at },
        (Some(Stop::Crashed), None, _) => {
            // `why` follows "the image crashed: " in the notes; the message stands alone.
            let (message, why) = match &dump {
                Some(dump) => (attribution::dump_note(dump), attribution::dump_note(dump)),
                None => (
                    "the image crashed (the core faulted)".to_string(),
                    "the core faulted".to_string(),
                ),
            };
            let assertion = dump.as_ref().and_then(|d| d.assertion.as_ref());
            Outcome::Crashed {
                message,
                why,
                at: At {
                    file: assertion.and_then(|a| a.file.clone()),
                    line: assertion.and_then(|a| a.line),
                },
            }
        }
        (_, None, Some((message, why, at))) => Outcome::Failed { message, why, at },
        (Some(Stop::Hung), None, None) if !m.complete() => {
            Outcome::Hung("the test timeout came before every pattern had matched".to_string())
        }
        (Some(Stop::Hung) | None, None, None) => Outcome::Finished,
    };

    let mut cases = match spec.mode {
        RegexMode::OneLine => vec![one_line_case(spec, m, &outcome)],
        RegexMode::MultiLine => multi_line_cases(spec, m, &outcome),
    };
    if spec.mode == RegexMode::MultiLine {
        cases.push(run_case(&spec.case_name, &outcome));
    }
    let verdict = decide(spec, m, capture.end, &outcome, &cases, &mut notes);
    TestResults {
        harness: HARNESS.to_string(),
        cases,
        summary: None,
        verdict,
        notes,
    }
}

/// Where the run's own case failed: what the decisive line's groups captured.
fn located(mut case: TestCase, outcome: &Outcome) -> TestCase {
    if let Outcome::Crashed { at, .. } | Outcome::Failed { at, .. } = outcome {
        case.file.clone_from(&at.file);
        case.line = at.line;
    }
    case
}

fn one_line_case(spec: &RegexSpec, m: &Matcher, outcome: &Outcome) -> TestCase {
    let pattern = spec.patterns.first().map(quoted).unwrap_or_default();
    let (status, message) = match (outcome, m.seen.first().and_then(Option::as_ref)) {
        (Outcome::Crashed { message, .. }, _) => (CaseStatus::Crash, Some(message.clone())),
        (Outcome::Failed { message, .. }, _) => (CaseStatus::Fail, Some(message.clone())),
        (_, Some(_)) => (CaseStatus::Pass, None),
        (Outcome::Hung(_), None) => (
            CaseStatus::Hang,
            Some(format!("no line matched {pattern} before the test timeout")),
        ),
        (Outcome::Finished, None) => (
            CaseStatus::Missing,
            Some(format!("no line matched {pattern}")),
        ),
    };
    located(
        TestCase {
            name: spec.case_name.clone(),
            status,
            message,
            file: None,
            line: None,
        },
        outcome,
    )
}

fn multi_line_cases(spec: &RegexSpec, m: &Matcher, outcome: &Outcome) -> Vec<TestCase> {
    let stopped = match outcome {
        Outcome::Crashed { .. } => " before the image crashed",
        Outcome::Failed { .. } => " before the failure line",
        Outcome::Hung(_) => " before the test timeout",
        Outcome::Finished => "",
    };
    let names = spec.pattern_case_names();
    spec.patterns
        .iter()
        .zip(names)
        .enumerate()
        .map(|(k, (_, name))| {
            let seen = m.seen.get(k).and_then(Option::as_ref);
            let early = m.early.get(k).and_then(Option::as_ref);
            let previous = k.checked_sub(1).and_then(|p| spec.patterns.get(p));
            let (status, message) = match (seen, early, previous) {
                (Some(_), _, _) => (CaseStatus::Pass, None),
                (None, Some(hit), Some(previous)) => (
                    CaseStatus::Fail,
                    Some(format!(
                        "matched only out of order, at {}, before {} had matched",
                        hit.describe(),
                        quoted(previous)
                    )),
                ),
                (None, _, _) => (
                    CaseStatus::Missing,
                    Some(format!("no line matched{stopped}")),
                ),
            };
            TestCase {
                name,
                status,
                message,
                file: None,
                line: None,
            }
        })
        .collect()
}

fn run_case(name: &str, outcome: &Outcome) -> TestCase {
    let (status, message) = match outcome {
        Outcome::Crashed { message, .. } => (CaseStatus::Crash, Some(message.clone())),
        Outcome::Failed { message, .. } => (CaseStatus::Fail, Some(message.clone())),
        Outcome::Hung(why) => (CaseStatus::Hang, Some(why.clone())),
        Outcome::Finished => (CaseStatus::Pass, None),
    };
    located(
        TestCase {
            name: name.to_string(),
            status,
            message,
            file: None,
            line: None,
        },
        outcome,
    )
}

fn decide(
    spec: &RegexSpec,
    m: &Matcher,
    end: RunEnd,
    outcome: &Outcome,
    cases: &[TestCase],
    notes: &mut Vec<String>,
) -> Verdict {
    if let Some(verdict) = attribution::environment_end(end, notes) {
        return verdict;
    }
    let pattern_cases = match spec.mode {
        RegexMode::OneLine => cases,
        RegexMode::MultiLine => cases.get(..spec.patterns.len()).unwrap_or(cases),
    };
    let unmatched: Vec<&str> = pattern_cases
        .iter()
        .filter(|c| c.status != CaseStatus::Pass)
        .map(|c| c.name.as_str())
        .collect();
    let unmatched_note = |notes: &mut Vec<String>| {
        if spec.mode == RegexMode::MultiLine && !unmatched.is_empty() {
            notes.push(format!(
                "{} of {} patterns did not match{}: {}",
                unmatched.len(),
                spec.patterns.len(),
                if m.ordered { " in order" } else { "" },
                unmatched.join(", ")
            ));
        }
    };
    match outcome {
        Outcome::Crashed { why, .. } => {
            notes.push(format!("the image crashed: {why}"));
            unmatched_note(notes);
            return Verdict::Fail;
        }
        Outcome::Failed { why, .. } => {
            notes.push(format!("a failure line came: {why}"));
            unmatched_note(notes);
            return Verdict::Fail;
        }
        Outcome::Hung(why) => {
            notes.push(format!("the image hung: {why}"));
            unmatched_note(notes);
            return Verdict::Fail;
        }
        Outcome::Finished => {}
    }
    if !m.saw_output {
        notes.push(match end {
            RunEnd::Exited { code } => {
                format!("the image printed nothing on its console and exited with code {code}")
            }
            _ => "the image printed nothing on its console".to_string(),
        });
        return Verdict::Inconclusive;
    }
    if !unmatched.is_empty() {
        if spec.mode == RegexMode::OneLine {
            notes.push(format!(
                "no line matched {}",
                spec.patterns.first().map(quoted).unwrap_or_default()
            ));
        }
        unmatched_note(notes);
        return Verdict::Fail;
    }
    if let RunEnd::Exited { code } = end {
        if code != 0 {
            notes.push(format!(
                "every pattern matched but the image exited with code {code}"
            ));
            return Verdict::Inconclusive;
        }
    }
    notes.push(match (spec.patterns.len(), m.ordered) {
        (1, _) => "the pattern matched".to_string(),
        (n, true) => format!("all {n} patterns matched in order"),
        (n, false) => format!("all {n} patterns matched"),
    });
    Verdict::Pass
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{self, capture, notes, statuses};
    use super::*;
    use crate::capture::{ConsoleLine, Stream};
    use proptest::prelude::*;

    const BOOT_PASS: &str = include_str!("../../tests/data/console/regex_boot_pass.log");
    const FAIL: &str = include_str!("../../tests/data/console/regex_fail.log");
    const OUT_OF_ORDER: &str = include_str!("../../tests/data/console/regex_out_of_order.log");
    const HARDFAULT: &str = include_str!("../../tests/data/console/regex_hardfault.log");
    /// The rtos fixture (`fixtures/rtos`): a status line a second, for ever.
    const RTOS_OK: &str = include_str!("../../tests/data/console/rtos_ok.log");
    const RTOS_REGRESS: &str = include_str!("../../tests/data/console/rtos_regress.log");

    fn patterns(list: &[&str]) -> Vec<Pattern> {
        list.iter().map(|p| Pattern::new(p).unwrap()).collect()
    }

    fn spec(mode: RegexMode, ordered: bool, required: &[&str]) -> RegexSpec {
        RegexSpec {
            mode,
            ordered,
            patterns: patterns(required),
            fail_patterns: patterns(&["ASSERT", "Error"]),
            crash_patterns: patterns(&["HardFault", "Guru Meditation"]),
            case_name: "console".to_string(),
        }
    }

    fn multi(ordered: bool) -> RegexSpec {
        spec(RegexMode::MultiLine, ordered, &["Hello", "tick [0-9]+"])
    }

    fn parse(spec: &RegexSpec, text: &str, end: RunEnd) -> TestResults {
        RegexParser::new(spec.clone()).parse(&capture(text, end), &ParseContext::default())
    }

    /// The 1-based line the detector first fires on (the backend stops reading there).
    fn fires(spec: &RegexSpec, text: &str) -> Vec<usize> {
        let mut d = RegexParser::new(spec.clone()).stream();
        text.lines()
            .enumerate()
            .find(|(_, l)| d.read_line(l).verdict)
            .map(|(i, _)| i + 1)
            .into_iter()
            .collect()
    }

    #[test]
    fn the_lines_any_pattern_matches_are_kept() {
        let mut d = RegexParser::new(multi(true)).stream();
        assert!(d.read_line("Hello\r").keep);
        assert!(d.read_line("tick 42").keep);
        assert!(d.read_line("ASSERT failed").keep);
        assert!(d.read_line("HardFault!").keep);
        assert!(!d.read_line("trace: idle 12345").keep);
    }

    #[test]
    fn multi_line_ordered_pass_ends_at_the_last_pattern() {
        let s = multi(true);
        let r = parse(&s, BOOT_PASS, RunEnd::Verdict);
        assert_eq!(r.harness, "regex");
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("Hello", CaseStatus::Pass),
                ("tick [0-9]+", CaseStatus::Pass),
                ("console", CaseStatus::Pass),
            ]
        );
        assert_eq!(r.summary, None);
        assert_eq!(notes(&r), "all 2 patterns matched in order");
        // `tick 1` on line 4 completes the patterns: the run ends there, before `tick 2`.
        assert_eq!(fires(&s, BOOT_PASS).first(), Some(&4));
    }

    #[test]
    fn ordered_patterns_seen_out_of_order_fail_unordered_pass() {
        let r = parse(&multi(true), OUT_OF_ORDER, RunEnd::Exited { code: 0 });
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("Hello", CaseStatus::Pass),
                ("tick [0-9]+", CaseStatus::Fail),
                ("console", CaseStatus::Pass),
            ]
        );
        assert_eq!(
            r.cases[1].message.as_deref(),
            Some("matched only out of order, at line 2: tick 1, before `Hello` had matched")
        );
        assert!(notes(&r).contains("1 of 2 patterns did not match in order: tick [0-9]+"));
        assert!(fires(&multi(true), OUT_OF_ORDER).is_empty());

        let r = parse(&multi(false), OUT_OF_ORDER, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(fires(&multi(false), OUT_OF_ORDER), vec![3]);
    }

    #[test]
    fn a_fail_line_fails_the_run_case_with_the_line() {
        let s = multi(true);
        assert_eq!(fires(&s, FAIL), vec![3]);
        let r = parse(&s, FAIL, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("Hello", CaseStatus::Pass),
                ("tick [0-9]+", CaseStatus::Missing),
                ("console", CaseStatus::Fail),
            ]
        );
        assert_eq!(
            r.cases[2].message.as_deref(),
            Some("ASSERTION FAIL [buf != NULL] @ WEST_TOPDIR/app/src/main.c:31")
        );
        assert!(notes(&r).contains(
            "a failure line came: `ASSERT` matched line 3: ASSERTION FAIL [buf != NULL] @ \
             WEST_TOPDIR/app/src/main.c:31"
        ));
        assert_eq!(
            r.cases[1].message.as_deref(),
            Some("no line matched before the failure line")
        );
    }

    /// Zephyr's assert line names the file and line; groups `file` and `line` in the fail pattern
    /// make them the case's location, as Unity's and ztest's own lines do. Without them (or with
    /// a `line` that is no number) the case has none.
    #[test]
    fn named_groups_file_and_line_locate_the_failure() {
        let mut s = multi(true);
        s.fail_patterns =
            patterns(&[r"^ASSERTION FAIL .* @ (?:WEST_TOPDIR/)?(?P<file>\S+):(?P<line>\d+)$"]);
        let r = parse(&s, FAIL, RunEnd::Verdict);
        let run = &r.cases[2];
        assert_eq!(run.status, CaseStatus::Fail);
        assert_eq!(run.file.as_deref(), Some("app/src/main.c"));
        assert_eq!(run.line, Some(31));
        assert!(r.cases[..2]
            .iter()
            .all(|c| c.file.is_none() && c.line.is_none()));

        // one_line: its only case; a crash pattern's groups too.
        let mut one = spec(RegexMode::OneLine, true, &["^status: OK "]);
        one.fail_patterns = patterns(&[r"^status: ERROR .* at (?P<file>[^ :]+):(?P<line>\d+) "]);
        one.crash_patterns = patterns(&[r"^PANIC in (?P<file>[^:]+):(?P<line>\w+)"]);
        let text =
            "boot\nstatus: ERROR queue: expected item 5, got 13 at src/pipeline.c:77 ticks=1000\n";
        let r = parse(&one, text, RunEnd::Verdict);
        assert_eq!(
            (r.cases[0].file.as_deref(), r.cases[0].line),
            (Some("src/pipeline.c"), Some(77))
        );
        let r = parse(&one, "PANIC in src/kernel.c:idle\n", RunEnd::Verdict);
        assert_eq!(r.cases[0].status, CaseStatus::Crash);
        assert_eq!(
            (r.cases[0].file.as_deref(), r.cases[0].line),
            (Some("src/kernel.c"), None)
        );
        let r = parse(
            &spec(RegexMode::OneLine, true, &["^OK"]),
            "ASSERT at x.c:3\n",
            RunEnd::Verdict,
        );
        assert_eq!((r.cases[0].file.as_deref(), r.cases[0].line), (None, None));
    }

    /// An ordered list that repeats a pattern asks for its line that many times; each repeat is
    /// a case named `<pattern> #n`.
    #[test]
    fn a_pattern_repeated_in_order_needs_its_line_that_many_times() {
        let s = spec(
            RegexMode::MultiLine,
            true,
            &["Hello", "tick [0-9]+", "tick [0-9]+", "tick [0-9]+"],
        );
        let text = "Hello\ntick 1\ntick 2\n";
        let r = parse(&s, text, RunEnd::Timeout);
        assert_eq!(
            statuses(&r),
            vec![
                ("Hello", CaseStatus::Pass),
                ("tick [0-9]+", CaseStatus::Pass),
                ("tick [0-9]+ #2", CaseStatus::Pass),
                ("tick [0-9]+ #3", CaseStatus::Missing),
                ("console", CaseStatus::Hang),
            ]
        );
        let text = "Hello\ntick 1\ntick 2\ntick 3\ntick 4\n";
        assert_eq!(fires(&s, text), vec![4]);
        assert_eq!(parse(&s, text, RunEnd::Verdict).verdict, Verdict::Pass);
    }

    #[test]
    fn crash_patterns_and_console_dumps_crash_the_run() {
        let s = spec(RegexMode::MultiLine, true, &["Hello", "done"]);
        assert_eq!(fires(&s, HARDFAULT), vec![3]);
        let r = parse(&s, HARDFAULT, RunEnd::Timeout);
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("Hello", CaseStatus::Pass),
                ("done", CaseStatus::Missing),
                ("console", CaseStatus::Crash),
            ]
        );
        assert_eq!(r.cases[2].message.as_deref(), Some("HardFault!"));
        assert!(notes(&r).contains("the image crashed: `HardFault` matched line 3: HardFault!"));

        // Without crash patterns the register dump itself is recognised.
        let mut no_crash_patterns = s.clone();
        no_crash_patterns.crash_patterns.clear();
        let r = parse(&no_crash_patterns, HARDFAULT, RunEnd::Timeout);
        assert_eq!(r.cases[2].status, CaseStatus::Crash, "{}", notes(&r));
        assert!(r.cases[2]
            .message
            .as_deref()
            .unwrap()
            .contains("fault dump from line 3: HardFault!"));

        // QEMU saw the fault before anything was printed.
        let r = parse(&no_crash_patterns, "Hello\n", RunEnd::Crashed);
        assert_eq!(r.cases[2].status, CaseStatus::Crash);
        assert_eq!(r.verdict, Verdict::Fail);
        // Regression: the note read "the image crashed: the image crashed (the core faulted)".
        assert!(
            notes(&r).contains("the image crashed: the core faulted"),
            "{}",
            notes(&r)
        );
        assert!(!notes(&r).contains("crashed: the image crashed"));
        assert_eq!(
            r.cases[2].message.as_deref(),
            Some("the image crashed (the core faulted)")
        );
    }

    fn status_lines() -> RegexSpec {
        RegexSpec {
            mode: RegexMode::OneLine,
            ordered: true,
            patterns: patterns(&["^status: OK "]),
            fail_patterns: patterns(&["^status: ERROR "]),
            crash_patterns: patterns(&["^PANIC"]),
            case_name: "self_check".to_string(),
        }
    }

    #[test]
    fn firmware_that_never_exits_passes_at_its_first_ok_line() {
        let s = status_lines();
        // The banner, then the first status line: the detector ends the attempt there.
        assert_eq!(fires(&s, RTOS_OK), vec![2]);
        let r = parse(&s, RTOS_OK, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(statuses(&r), vec![("self_check", CaseStatus::Pass)]);
        assert_eq!(r.cases[0].message, None);
    }

    #[test]
    fn a_fail_line_decides_even_when_no_pattern_matched_and_its_line_is_the_message() {
        let s = status_lines();
        assert_eq!(fires(&s, RTOS_REGRESS), vec![2]);
        for end in [RunEnd::Verdict, RunEnd::Timeout, RunEnd::Exited { code: 0 }] {
            let r = parse(&s, RTOS_REGRESS, end);
            assert_eq!(r.verdict, Verdict::Fail, "{end:?}: {}", notes(&r));
            assert_eq!(statuses(&r), vec![("self_check", CaseStatus::Fail)]);
            assert_eq!(
                r.cases[0].message.as_deref(),
                Some("status: ERROR queue: expected item 5, got 13 ticks=1000"),
                "{end:?}"
            );
            assert!(
                notes(&r).contains("`^status: ERROR ` matched line 2: status: ERROR queue"),
                "{}",
                notes(&r)
            );
        }
    }

    #[test]
    fn nothing_after_the_first_decisive_line_counts() {
        let s = status_lines();
        let ok_then_error = "boot\nstatus: OK ticks=1000\nstatus: ERROR queue: lost ticks=2000\n";
        let r = parse(&s, ok_then_error, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));

        let error_then_ok = "boot\nstatus: ERROR regs: r7 ticks=1000\nstatus: OK ticks=2000\n";
        assert_eq!(fires(&s, error_then_ok), vec![2]);
        let r = parse(&s, error_then_ok, RunEnd::Exited { code: 0 });
        assert_eq!(r.cases[0].status, CaseStatus::Fail, "{}", notes(&r));
        assert_eq!(
            r.cases[0].message.as_deref(),
            Some("status: ERROR regs: r7 ticks=1000")
        );

        let error_then_panic = "status: ERROR regs: r7 ticks=1000\nPANIC: double fault\n";
        let r = parse(&s, error_then_panic, RunEnd::Verdict);
        assert_eq!(r.cases[0].status, CaseStatus::Fail, "{}", notes(&r));

        let panic_then_ok = "PANIC: stack smashed\nstatus: OK ticks=1000\n";
        assert_eq!(fires(&s, panic_then_ok), vec![1]);
        let r = parse(&s, panic_then_ok, RunEnd::Verdict);
        assert_eq!(r.cases[0].status, CaseStatus::Crash, "{}", notes(&r));
        assert_eq!(r.cases[0].message.as_deref(), Some("PANIC: stack smashed"));

        // A fault dump after the decisive line is not this run's verdict; one before it is.
        let pass_then_dump = format!("status: OK ticks=1000\n{HARDFAULT}");
        let r = parse(&s, &pass_then_dump, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        let dump_then_error = format!("{HARDFAULT}status: ERROR late ticks=1000\n");
        let r = parse(&s, &dump_then_error, RunEnd::Verdict);
        assert_eq!(r.cases[0].status, CaseStatus::Crash, "{}", notes(&r));
    }

    #[test]
    fn a_line_a_required_pattern_matches_is_never_a_failure_line() {
        let s = spec(RegexMode::OneLine, true, &["Error count: 0"]);
        let r = parse(&s, "boot\nError count: 0\n", RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(statuses(&r), vec![("console", CaseStatus::Pass)]);
    }

    #[test]
    fn one_line_case_takes_every_outcome() {
        let s = spec(RegexMode::OneLine, true, &["tick [0-9]+"]);
        let status = |text: &str, end| parse(&s, text, end).cases[0].status;
        assert_eq!(status(BOOT_PASS, RunEnd::Verdict), CaseStatus::Pass);
        assert_eq!(status(FAIL, RunEnd::Verdict), CaseStatus::Fail);
        assert_eq!(status(HARDFAULT, RunEnd::Timeout), CaseStatus::Crash);
        assert_eq!(status("Hello\n", RunEnd::Timeout), CaseStatus::Hang);
        assert_eq!(
            status("Hello\n", RunEnd::Exited { code: 0 }),
            CaseStatus::Missing
        );
        let r = parse(&s, "Hello\n", RunEnd::Timeout);
        assert_eq!(r.cases.len(), 1);
        assert_eq!(r.cases[0].name, "console");
        assert_eq!(
            r.cases[0].message.as_deref(),
            Some("no line matched `tick [0-9]+` before the test timeout")
        );
        assert_eq!(r.verdict, Verdict::Fail);
        let r = parse(&s, "Hello\n", RunEnd::Exited { code: 0 });
        assert_eq!(r.verdict, Verdict::Fail);
        assert!(notes(&r).contains("no line matched `tick [0-9]+`"));
    }

    #[test]
    fn hang_before_every_pattern_matched() {
        let r = parse(&multi(true), "Hello World!\n", RunEnd::Timeout);
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(
            statuses(&r),
            vec![
                ("Hello", CaseStatus::Pass),
                ("tick [0-9]+", CaseStatus::Missing),
                ("console", CaseStatus::Hang),
            ]
        );
        assert!(notes(&r).contains("the image hung"));
    }

    #[test]
    fn silence_exit_codes_and_the_runner() {
        let s = multi(false);
        let r = parse(&s, "", RunEnd::Exited { code: 0 });
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("printed nothing on its console"));

        let r = parse(&s, BOOT_PASS, RunEnd::Exited { code: 3 });
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("every pattern matched but the image exited with code 3"));

        let r = parse(
            &s,
            BOOT_PASS,
            RunEnd::RunnerDied {
                signal: Some(9),
                code: None,
            },
        );
        assert_eq!(r.verdict, Verdict::EnvError);
        let r = parse(&s, BOOT_PASS, RunEnd::Cancelled);
        assert_eq!(r.verdict, Verdict::Inconclusive);

        let mut c = capture(BOOT_PASS, RunEnd::Verdict);
        c.truncated = true;
        let r = RegexParser::new(s).parse(&c, &ParseContext::default());
        assert!(notes(&r).contains("truncated"));
    }

    #[test]
    fn nonce_and_host_lines_are_not_matched() {
        let s = spec(RegexMode::OneLine, true, &["nonce"]);
        let mut c = capture("fwfix-nonce: 1234\nboot\n", RunEnd::Exited { code: 0 });
        c.lines.push(ConsoleLine {
            t_ms: 9,
            stream: Stream::Host,
            text: "nonce from the host".to_string(),
        });
        let r = RegexParser::new(s).parse(&c, &ParseContext::default());
        assert_eq!(r.cases[0].status, CaseStatus::Missing);
    }

    #[test]
    fn ordered_matching_takes_one_pattern_per_line() {
        let s = spec(RegexMode::MultiLine, true, &["a", "b"]);
        let r = parse(&s, "ab\n", RunEnd::Exited { code: 0 });
        assert_eq!(r.cases[1].status, CaseStatus::Missing);
        let r = parse(&s, "ab\nb\n", RunEnd::Exited { code: 0 });
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        let s = spec(RegexMode::MultiLine, false, &["a", "b"]);
        assert_eq!(fires(&s, "ab\n"), vec![1]);
    }

    proptest! {
        /// The backend stops reading where the detector fires: the results of what it kept are the
        /// results of the whole console.
        #[test]
        fn results_are_decided_where_the_detector_fires(
            picks in proptest::collection::vec(0usize..8, 0..14)
        ) {
            let pool = [
                "boot", "status: OK ticks=1", "status: ERROR x ticks=1", "PANIC: y", "Hello",
                "tick 3", "Error: z", "HardFault!",
            ];
            let text: String = picks.iter().map(|&i| format!("{}\n", pool[i])).collect();
            for s in [status_lines(), multi(true), multi(false)] {
                if let Some(&n) = fires(&s, &text).first() {
                    let kept: String = text.lines().take(n).map(|l| format!("{l}\n")).collect();
                    let whole = parse(&s, &text, RunEnd::Verdict);
                    let stopped = parse(&s, &kept, RunEnd::Verdict);
                    prop_assert_eq!(&whole.cases, &stopped.cases);
                    prop_assert_eq!(whole.verdict, stopped.verdict);
                }
            }
        }

        #[test]
        fn arbitrary_text_never_panics(text in "\\PC*") {
            for s in [multi(true), multi(false), spec(RegexMode::OneLine, true, &["x"])] {
                let _ = parse(&s, &text, RunEnd::Timeout);
                let mut d = RegexParser::new(s).stream();
                let _ = d.read_line(&text).verdict;
            }
        }
    }

    /// More lines that patterns match than a capture keeps in memory: a heartbeat printed from
    /// boot matches ahead of its turn until the self-test passes in the middle of the console.
    /// The streamed parse reads that line; the kept lines alone had lost it.
    #[test]
    fn a_match_in_the_middle_of_a_console_longer_than_the_capture_is_read() {
        const N: usize = 150_000;
        let s = spec(
            RegexMode::MultiLine,
            true,
            &["^self-test passed$", "^heartbeat [0-9]+$"],
        );
        let lines = (0..2 * N).map(|i| match i {
            N => "self-test passed".to_string(),
            i => format!("heartbeat {i}"),
        });
        let (r, kept) = test_support::stream(&RegexParser::new(s.clone()), lines, RunEnd::Verdict);
        assert!(kept.truncated);
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("^self-test passed$", CaseStatus::Pass),
                ("^heartbeat [0-9]+$", CaseStatus::Pass),
                ("console", CaseStatus::Pass),
            ]
        );
        let from_kept = RegexParser::new(s).parse(&kept, &ParseContext::default());
        assert_eq!(from_kept.verdict, Verdict::Fail, "{}", notes(&from_kept));
    }
}
