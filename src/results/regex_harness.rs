//! The regex harness, like Twister's console harness: the profile lists regular expressions the
//! console must show (`[test.regex] patterns`), and optionally lines that mean a failure
//! (`fail_patterns`) or a crash (`crash_patterns`). For firmware that prints no test framework's
//! format at all: a boot banner, a sample's output, a self-test line.
//!
//! Cases:
//! - `one_line`: one case, named `case_name`: PASS when the pattern matched, FAIL or CRASH when a
//!   fail or crash line came, HANG when the timeout came first, MISSING when the run ended without
//!   it.
//! - `multi_line`: one case per pattern, named by the pattern: PASS when it matched (in order,
//!   when `ordered`), FAIL when it matched only before its turn, MISSING when it never matched;
//!   plus the run's own case, named `case_name`, that carries what happened to the run as a
//!   whole: PASS, or the FAIL line, the CRASH, the HANG. (It is always there, so a run that stops
//!   crashing has a case that now passes.)
//!
//! Matching, line by line, on the line without its line ending: with `ordered` only the pattern
//! whose turn it is can match a line (Twister's rule); otherwise every pattern not yet matched is
//! tried. A line any required pattern matches is never a failure or crash line (so `Error count:
//! 0` can be required while `Error` fails the run). A fault dump on the console (see
//! [`super::crash_dump`]) is a crash unless a required pattern matched after it.
//!
//! The detector ends the run as soon as every pattern has matched, or a fail or crash line came.
//! Pure: it reads UART text only, and must not touch files, the clock or the DUT.

use super::attribution::{self, Stop};
use super::common;
use super::crash_dump;
use super::lines::{clean, is_nonce};
use super::{CaseStatus, HarnessParser, ParseContext, TestCase, TestResults, Verdict};
use crate::capture::{Capture, EndDetector, RunEnd};
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

    fn detector(&self) -> Box<dyn EndDetector> {
        Box::new(RegexDetector {
            matcher: Matcher::new(&self.spec),
            lines: 0,
        })
    }

    fn parse(&self, capture: &Capture, _ctx: &ParseContext) -> TestResults {
        parse_capture(&self.spec, capture)
    }
}

/// True once every pattern has matched, or a fail or crash line came.
#[derive(Debug, Clone)]
pub struct RegexDetector {
    matcher: Matcher,
    lines: usize,
}

impl EndDetector for RegexDetector {
    fn is_final(&mut self, line: &str) -> bool {
        self.matcher.feed(self.lines, line);
        self.lines += 1;
        self.matcher.decided()
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

/// The matching state of one attempt, shared by the detector and the parser so they agree.
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
            saw_output: false,
        }
    }

    fn feed(&mut self, index: usize, raw: &str) {
        let line = clean(raw);
        if line.is_empty() || is_nonce(line) {
            return;
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
            return;
        }
        if self.crashed.is_none() {
            if let Some(k) = self.crash_patterns.iter().position(|p| p.is_match(line)) {
                self.crashed = Some((hit(), k));
            }
        }
        if self.failed.is_none() {
            if let Some(k) = self.fail_patterns.iter().position(|p| p.is_match(line)) {
                self.failed = Some((hit(), k));
            }
        }
    }

    fn complete(&self) -> bool {
        self.seen.iter().all(Option::is_some)
    }

    fn decided(&self) -> bool {
        self.complete() || self.failed.is_some() || self.crashed.is_some()
    }
}

/// What happened to the run as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Crashed(String),
    Failed(String),
    Hung(String),
    Finished,
}

fn quoted(pattern: &Pattern) -> String {
    format!("`{pattern}`")
}

fn parse_capture(spec: &RegexSpec, capture: &Capture) -> TestResults {
    let uart: Vec<&str> = capture.uart_lines().collect();
    let mut m = Matcher::new(spec);
    for (index, line) in uart.iter().enumerate() {
        m.feed(index, line);
    }
    let mut notes = Vec::new();
    common::truncation_note(capture, &mut notes);
    let dump =
        crash_dump::find(&uart).filter(|dump| m.last_required.is_none_or(|last| last < dump.first));
    if let Some(dump) = &dump {
        notes.push(attribution::dump_note(dump));
    }

    let crash_pattern = m.crashed.as_ref().and_then(|(hit, k)| {
        let pattern = spec.crash_patterns.get(*k)?;
        Some(format!("{} matched {}", quoted(pattern), hit.describe()))
    });
    let fail_pattern = m.failed.as_ref().and_then(|(hit, k)| {
        let pattern = spec.fail_patterns.get(*k)?;
        Some(format!("{} matched {}", quoted(pattern), hit.describe()))
    });
    let console_crash = crash_pattern.is_some() || dump.is_some();
    let outcome = match (
        Stop::of(capture.end, console_crash),
        crash_pattern,
        fail_pattern,
    ) {
        (_, Some(line), _) => Outcome::Crashed(line),
        (Some(Stop::Crashed), None, _) => Outcome::Crashed(match &dump {
            Some(dump) => attribution::dump_note(dump),
            None => "the image crashed (the core faulted)".to_string(),
        }),
        (_, None, Some(line)) => Outcome::Failed(line),
        (Some(Stop::Hung), None, None) if !m.complete() => {
            Outcome::Hung("the test timeout came before every pattern had matched".to_string())
        }
        (Some(Stop::Hung) | None, None, None) => Outcome::Finished,
    };

    let mut cases = match spec.mode {
        RegexMode::OneLine => vec![one_line_case(spec, &m, &outcome)],
        RegexMode::MultiLine => multi_line_cases(spec, &m, &outcome),
    };
    if spec.mode == RegexMode::MultiLine {
        cases.push(run_case(&spec.case_name, &outcome));
    }
    let verdict = decide(spec, &m, capture.end, &outcome, &cases, &mut notes);
    TestResults {
        harness: HARNESS.to_string(),
        cases,
        summary: None,
        verdict,
        notes,
    }
}

fn one_line_case(spec: &RegexSpec, m: &Matcher, outcome: &Outcome) -> TestCase {
    let pattern = spec.patterns.first().map(quoted).unwrap_or_default();
    let (status, message) = match (outcome, m.seen.first().and_then(Option::as_ref)) {
        (Outcome::Crashed(why), _) => (CaseStatus::Crash, Some(why.clone())),
        (Outcome::Failed(why), _) => (CaseStatus::Fail, Some(why.clone())),
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
    TestCase {
        name: spec.case_name.clone(),
        status,
        message,
        file: None,
        line: None,
    }
}

fn multi_line_cases(spec: &RegexSpec, m: &Matcher, outcome: &Outcome) -> Vec<TestCase> {
    let stopped = match outcome {
        Outcome::Crashed(_) => " before the image crashed",
        Outcome::Failed(_) => " before the failure line",
        Outcome::Hung(_) => " before the test timeout",
        Outcome::Finished => "",
    };
    spec.patterns
        .iter()
        .enumerate()
        .map(|(k, pattern)| {
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
                name: pattern.as_str().to_string(),
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
        Outcome::Crashed(why) => (CaseStatus::Crash, Some(why.clone())),
        Outcome::Failed(why) => (CaseStatus::Fail, Some(why.clone())),
        Outcome::Hung(why) => (CaseStatus::Hang, Some(why.clone())),
        Outcome::Finished => (CaseStatus::Pass, None),
    };
    TestCase {
        name: name.to_string(),
        status,
        message,
        file: None,
        line: None,
    }
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
        Outcome::Crashed(why) => {
            notes.push(format!("the image crashed: {why}"));
            unmatched_note(notes);
            return Verdict::Fail;
        }
        Outcome::Failed(why) => {
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
    use super::super::test_support::{capture, notes, statuses};
    use super::*;
    use crate::capture::{ConsoleLine, Stream};
    use proptest::prelude::*;

    const BOOT_PASS: &str = include_str!("../../tests/data/console/regex_boot_pass.log");
    const FAIL: &str = include_str!("../../tests/data/console/regex_fail.log");
    const OUT_OF_ORDER: &str = include_str!("../../tests/data/console/regex_out_of_order.log");
    const HARDFAULT: &str = include_str!("../../tests/data/console/regex_hardfault.log");

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
        let mut d = RegexParser::new(spec.clone()).detector();
        text.lines()
            .enumerate()
            .find(|(_, l)| d.is_final(l))
            .map(|(i, _)| i + 1)
            .into_iter()
            .collect()
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
            Some(
                "`ASSERT` matched line 3: ASSERTION FAIL [buf != NULL] @ \
                 WEST_TOPDIR/app/src/main.c:31"
            )
        );
        assert_eq!(
            r.cases[1].message.as_deref(),
            Some("no line matched before the failure line")
        );
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
        assert_eq!(
            r.cases[2].message.as_deref(),
            Some("`HardFault` matched line 3: HardFault!")
        );

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
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC*") {
            for s in [multi(true), multi(false), spec(RegexMode::OneLine, true, &["x"])] {
                let _ = parse(&s, &text, RunEnd::Timeout);
                let mut d = RegexParser::new(s).detector();
                let _ = d.is_final(&text);
            }
        }
    }
}
