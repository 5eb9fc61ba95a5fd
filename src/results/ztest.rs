//! Zephyr's ztest harness as Twister reads it: its console format (Zephyr 2.x and 3.x), its
//! end-of-run detector, and the cross-checks that decide whether its output can be trusted.
//!
//! What ztest prints (`subsys/testsuite/ztest/src/ztest.c`, `tc_util.h`):
//! - `*** Booting Zephyr OS build v3.5.0 ***`, then per suite `Running TESTSUITE s` (2.x:
//!   `Running test suite s`) and a line of `=`;
//! - per test `START - test_x` (old 2.x: `starting test - test_x`), then ` PASS - test_x in 0.001
//!   seconds` (2.x: ` PASS - test_x` or `PASS - test_x`), `FAIL` or `SKIP` likewise; a failed
//!   assertion first prints `    Assertion failed at file:line: func: (cond) is false` and the
//!   test's own message on the next line; a failed assumption (`Assumption failed at`) skips;
//! - `TESTSUITE s succeeded` / `TESTSUITE s failed.` (2.x: `Test suite s ...`);
//! - 3.x: a summary, one `SUITE PASS - 100.00% [s]: pass = 3, fail = 0, skip = 0, total = 3
//!   duration = 0.003 seconds` per suite, optionally ` - PASS - [s.test_x] duration = ...` per
//!   test; then `PROJECT EXECUTION SUCCESSFUL` or `PROJECT EXECUTION FAILED`, the final word.
//!
//! Case names are `suite.test` when the suite is known (as the summary writes them), else the
//! bare test name; an expected name matches either form.
//!
//! This module only reads UART text and the [`ParseContext`]: it must not symbolise, read files
//! or look at the clock. It never trusts one source: case lines, suite results, suite summaries,
//! the final word and the exit code must agree, or the verdict is INCONCLUSIVE with a note.
//!
//! Verdicts, in order of precedence:
//! 1. the runner died: ENV_ERROR; cancelled: INCONCLUSIVE;
//! 2. the image crashed or hung: FAIL. ztest announces each test, so the test between its
//!    `START` and its missing result takes the CRASH or HANG. A Zephyr fatal error on the console
//!    is a crash even when ztest went on (as Twister judges it); another fault dump is one when no
//!    ztest line follows it;
//! 3. the output disagrees with itself: INCONCLUSIVE;
//! 4. no `PROJECT EXECUTION` line: FAIL when a case already failed, otherwise INCONCLUSIVE;
//! 5. any FAIL (or `PROJECT EXECUTION FAILED` explained by ztest's own `ERROR:` lines): FAIL;
//! 6. no test reported: INCONCLUSIVE;
//! 7. otherwise PASS.
//!
//! Expected names from the context mark tests MISSING only when the run stopped early: a
//! complete run's own accounting (every suite's counts) is taken over symbols in the ELF, whose
//! `test_*` functions are not ztest's case names in Zephyr 3.x.

use std::collections::{HashMap, HashSet};

use super::attribution::{self, Stop};
use super::common::{self, names, Tally};
use super::crash_dump::{self, Dump};
use super::lines::{clean, is_nonce, strip_log_prefix};
use super::{
    CaseStatus, HarnessParser, HarnessStream, ParseContext, Summary, TestCase, TestResults,
    Verdict, RUN_CASE,
};
use crate::capture::{Capture, EndDetector, FaultSnapshot, LineRead, RunEnd};

const HARNESS: &str = "ztest";

/// Why the first expected test not yet reported is taken to be the one that was running.
const ORDER: &str = "as ztest runs tests in order";

/// Parses ztest's console output.
#[derive(Debug, Clone, Copy, Default)]
pub struct ZtestParser;

impl HarnessParser for ZtestParser {
    fn name(&self) -> &'static str {
        HARNESS
    }

    fn stream(&self) -> Box<dyn HarnessStream> {
        Box::new(ZtestStream::default())
    }
}

/// ztest's parse of one attempt, line by line. Says the run is over at `PROJECT EXECUTION
/// SUCCESSFUL` or `FAILED`, or at `Halting system` after a Zephyr fatal error: Zephyr has stopped
/// the CPU and nothing more will come.
#[derive(Debug, Default)]
pub struct ZtestStream {
    /// UART lines read so far: the index of the next one.
    index: usize,
    scan: Scan,
    /// The suite running, the test running (its index in `scan.starts`), the assertions it made
    /// so far, and the assertion whose message the next line may be.
    suite: Option<String>,
    open: Option<usize>,
    assertions: Vec<(bool, String, u32, Option<String>)>,
    message_for: Option<usize>,
    /// A Zephyr fatal error came: `Halting system` ends the run.
    fatal: bool,
    dumps: crash_dump::Finder,
}

impl EndDetector for ZtestStream {
    /// Kept: every line ztest's scan classifies, and a fatal error's.
    fn read_line(&mut self, line: &str) -> LineRead {
        let index = self.index;
        self.index += 1;
        let settle = self.dumps.line(line);
        let line = strip_log_prefix(clean(line));
        let classified = self.read(index, line);
        let fatal = line.contains(FATAL_ERROR);
        let halting = line.starts_with("Halting system");
        let verdict = if project_result(line).is_some() {
            true
        } else if fatal {
            self.fatal = true;
            false
        } else {
            self.fatal && halting
        };
        LineRead {
            verdict,
            keep: classified || fatal || halting,
            settle,
        }
    }
}

impl HarnessStream for ZtestStream {
    fn fault_dump(&self) -> Option<FaultSnapshot> {
        self.dumps.fault()
    }

    fn finish(&mut self, capture: &Capture, ctx: &ParseContext) -> TestResults {
        let scan = std::mem::take(&mut self.scan);
        results(capture, ctx, &scan, self.dumps.dump(), self.index)
    }
}

const FATAL_ERROR: &str = "ZEPHYR FATAL ERROR";

/// The status word of a suite summary or a per-test summary line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Word {
    Pass,
    Fail,
    Skip,
    /// Per-test summary only: passed on some runs and failed on others (`CONFIG_ZTEST_REPEAT`).
    Flaky,
}

impl Word {
    fn parse(word: &str) -> Option<Word> {
        match word {
            "PASS" => Some(Word::Pass),
            "FAIL" => Some(Word::Fail),
            "SKIP" => Some(Word::Skip),
            "FLAKY" => Some(Word::Flaky),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Word::Pass => "PASS",
            Word::Fail => "FAIL",
            Word::Skip => "SKIP",
            Word::Flaky => "FLAKY",
        }
    }
}

/// `SUITE PASS - 100.00% [s]: pass = 3, fail = 0, skip = 0, total = 3 duration = ...`
#[derive(Debug, Clone, PartialEq, Eq)]
struct SuiteSummary<'a> {
    word: Word,
    suite: &'a str,
    pass: u32,
    fail: u32,
    skip: u32,
    total: u32,
}

/// `Assertion failed at file:line: func: message` (or an expectation or assumption).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Assertion<'a> {
    /// An assumption: the test is skipped, not failed.
    skips: bool,
    file: &'a str,
    line: u32,
    message: Option<&'a str>,
}

/// What one console line is, as far as ztest is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ZLine<'a> {
    Boot,
    SuiteStart(&'a str),
    SuiteEnd {
        suite: &'a str,
        ok: bool,
    },
    CaseStart(&'a str),
    CaseEnd {
        status: CaseStatus,
        name: &'a str,
    },
    Assertion(Assertion<'a>),
    SuiteSummary(SuiteSummary<'a>),
    CaseSummary {
        word: Word,
        suite: &'a str,
        name: &'a str,
    },
    Project(bool),
    /// ztest's own complaint (`ERROR: Test suite 's' did not run.`, `Bad stats for ...`).
    Error(&'a str),
    Other,
}

/// `line` must already be cleaned and stripped of a logging prefix.
fn classify(line: &str) -> ZLine<'_> {
    if let Some(ok) = project_result(line) {
        return ZLine::Project(ok);
    }
    if line.contains("Booting Zephyr OS") {
        return ZLine::Boot;
    }
    if let Some(summary) = suite_summary(line) {
        return ZLine::SuiteSummary(summary);
    }
    if let Some((word, suite, name)) = case_summary(line) {
        return ZLine::CaseSummary { word, suite, name };
    }
    if let Some(suite) = after_marker(line, &["Running TESTSUITE ", "Running test suite "]) {
        return ZLine::SuiteStart(suite);
    }
    if let Some((suite, ok)) = suite_end(line) {
        return ZLine::SuiteEnd { suite, ok };
    }
    if let Some(name) = after_marker(line, &["START - "]) {
        return ZLine::CaseStart(name);
    }
    if let Some(name) = line.strip_prefix("starting test - ").and_then(single_word) {
        return ZLine::CaseStart(name);
    }
    if let Some(assertion) = assertion(line) {
        return ZLine::Assertion(assertion);
    }
    if let Some((status, name)) = case_end(line) {
        return ZLine::CaseEnd { status, name };
    }
    if line.starts_with("ERROR: ")
        || line.starts_with("Bad stats for ")
        || line.contains("TESTSUITE crashed")
        || line.contains("Test suite crashed")
    {
        return ZLine::Error(line);
    }
    ZLine::Other
}

fn project_result(line: &str) -> Option<bool> {
    if line.contains("PROJECT EXECUTION SUCCESSFUL") {
        Some(true)
    } else if line.contains("PROJECT EXECUTION FAILED") {
        Some(false)
    } else {
        None
    }
}

/// The text is one word with nothing after it.
fn single_word(text: &str) -> Option<&str> {
    let text = text.trim();
    (!text.is_empty() && !text.contains(char::is_whitespace)).then_some(text)
}

/// The single word after one of `markers`, wherever the marker is on the line (some platforms
/// prefix every console line).
fn after_marker<'a>(line: &'a str, markers: &[&str]) -> Option<&'a str> {
    markers.iter().find_map(|marker| {
        let at = line.find(marker)?;
        let before = &line[..at];
        if !(before.is_empty() || before.ends_with(char::is_whitespace)) {
            return None;
        }
        single_word(&line[at + marker.len()..])
    })
}

/// `TESTSUITE s succeeded`, `TESTSUITE s failed.`, `Test suite s ...`.
fn suite_end(line: &str) -> Option<(&str, bool)> {
    let rest = line
        .strip_prefix("TESTSUITE ")
        .or_else(|| line.strip_prefix("Test suite "))?;
    let (suite, word) = rest.trim().split_once(char::is_whitespace)?;
    let ok = match word.trim() {
        "succeeded" => true,
        "failed." | "failed" => false,
        _ => return None,
    };
    Some((suite, ok))
}

/// ` PASS - test_x in 0.001 seconds` (anywhere on the line), or 2.x's `PASS - test_x` (the whole
/// line).
fn case_end(line: &str) -> Option<(CaseStatus, &str)> {
    const WORDS: [(&str, CaseStatus); 3] = [
        ("PASS - ", CaseStatus::Pass),
        ("FAIL - ", CaseStatus::Fail),
        ("SKIP - ", CaseStatus::Ignore),
    ];
    let mut found: Vec<(usize, &str, CaseStatus)> = WORDS
        .iter()
        .flat_map(|&(word, status)| {
            line.match_indices(word)
                .map(move |(at, _)| (at, word, status))
        })
        .filter(|(at, _, _)| line[..*at].is_empty() || line[..*at].ends_with(char::is_whitespace))
        .collect();
    // The last one wins: what the test printed comes first on the line.
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found.into_iter().find_map(|(at, word, status)| {
        let words: Vec<&str> = line[at + word.len()..].split_whitespace().collect();
        match words.as_slice() {
            [name] if at == 0 => Some((status, *name)),
            [name, "in", duration, "seconds"] if is_duration(duration) => Some((status, *name)),
            _ => None,
        }
    })
}

fn is_duration(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b',')
}

/// `Assertion failed at ../src/main.c:42: test_x: (a == b) is false`.
fn assertion(line: &str) -> Option<Assertion<'_>> {
    const MARKS: [(&str, bool); 3] = [
        ("Assertion failed at ", false),
        ("Expectation failed at ", false),
        ("Assumption failed at ", true),
    ];
    let (rest, skips) = MARKS.iter().find_map(|&(mark, skips)| {
        let at = line.find(mark)?;
        Some((&line[at + mark.len()..], skips))
    })?;
    // The file may hold `:` (a drive letter); the line number is the first `:digits` followed by
    // `:` or the end.
    let mut search = 0;
    while let Some(colon) = rest[search..].find(':').map(|i| i + search) {
        let after = &rest[colon + 1..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let tail = &after[digits..];
        if digits > 0 && (tail.is_empty() || tail.starts_with(':')) {
            let file = &rest[..colon];
            let line_no = after[..digits].parse().ok()?;
            // After the location: ` func: message` in every verbose mode.
            let message = tail
                .strip_prefix(':')
                .map(str::trim)
                .map(|text| text.split_once(": ").map_or(text, |(_, message)| message))
                .map(str::trim)
                .filter(|m| !m.is_empty());
            return (!file.is_empty()).then_some(Assertion {
                skips,
                file,
                line: line_no,
                message,
            });
        }
        search = colon + 1;
    }
    None
}

/// `SUITE PASS - 100.00% [s]: pass = 3, fail = 0, skip = 0, total = 3 duration = 0.003 seconds`.
fn suite_summary(line: &str) -> Option<SuiteSummary<'_>> {
    let at = line.find("SUITE ")?;
    if !(line[..at].is_empty() || line[..at].ends_with(char::is_whitespace)) {
        return None;
    }
    let rest = &line[at + "SUITE ".len()..];
    let (word, rest) = rest.split_once(" - ")?;
    let word = Word::parse(word)?;
    let open = rest.find('[')?;
    let close = rest[open..].find("]: ")? + open;
    let suite = &rest[open + 1..close];
    let counts = &rest[close + 3..];
    let field = |key: &str| -> Option<u32> {
        let at = counts.find(&format!("{key} = "))?;
        let digits: String = counts[at + key.len() + 3..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    Some(SuiteSummary {
        word,
        suite,
        pass: field("pass")?,
        fail: field("fail")?,
        skip: field("skip")?,
        total: field("total")?,
    })
}

/// ` - PASS - [s.test_x] duration = 0.001 seconds`, or ` - FLAKY - [s.test_x] - (Failed ...`.
fn case_summary(line: &str) -> Option<(Word, &str, &str)> {
    let rest = line.trim().strip_prefix("- ")?;
    let (word, rest) = rest.split_once(" - [")?;
    let word = Word::parse(word)?;
    let (id, _) = rest.split_once(']')?;
    let (suite, name) = id.split_once('.')?;
    (!suite.is_empty() && !name.is_empty()).then_some((word, suite, name))
}

/// One test's result, merged over its runs (a repeat mode runs a test more than once).
#[derive(Debug, Clone)]
struct Reported {
    suite: Option<String>,
    name: String,
    status: CaseStatus,
    file: Option<String>,
    line: Option<u32>,
    message: Option<String>,
    runs: u32,
    passes: u32,
    failures: u32,
}

impl Reported {
    fn full_name(&self) -> String {
        full_name(self.suite.as_deref(), &self.name)
    }

    fn to_case(&self) -> TestCase {
        let message = if self.runs > 1 && self.failures > 0 {
            let counts = format!("failed {} of {} runs", self.failures, self.runs);
            Some(match &self.message {
                Some(message) => format!("{message} ({counts})"),
                None => counts,
            })
        } else {
            self.message.clone()
        };
        TestCase {
            name: self.full_name(),
            status: self.status,
            message,
            file: self.file.clone(),
            line: self.line,
        }
    }
}

fn full_name(suite: Option<&str>, name: &str) -> String {
    match suite {
        Some(suite) => format!("{suite}.{name}"),
        None => name.to_string(),
    }
}

/// A `START` line and whether its test ever reported a result.
#[derive(Debug, Clone)]
struct Started {
    index: usize,
    full_name: String,
    ended_at: Option<usize>,
}

/// Everything read from the console, before any cross-check.
#[derive(Debug, Default)]
struct Scan {
    reported: Vec<Reported>,
    /// Where each test is in `reported`, by suite and name, and by full name (the first).
    by_case: HashMap<(Option<String>, String), usize>,
    by_full_name: HashMap<String, usize>,
    starts: Vec<Started>,
    started_suites: Vec<String>,
    suite_ends: Vec<(String, bool)>,
    summaries: Vec<(Word, String, [u32; 4])>,
    case_summaries: Vec<(Word, String, String)>,
    /// `PROJECT EXECUTION` lines: true for SUCCESSFUL.
    projects: Vec<bool>,
    boots: usize,
    errors: Vec<String>,
    saw_output: bool,
    /// Index (among the UART lines) of the last line ztest printed.
    last_ztest_line: Option<usize>,
}

impl Scan {
    /// The test whose `START` came before line `at` and whose result had not come by then.
    fn open_at(&self, at: usize) -> Option<&Started> {
        self.starts
            .iter()
            .rev()
            .find(|s| s.index < at)
            .filter(|s| s.ended_at.is_none_or(|end| end > at))
    }
}

impl ZtestStream {
    /// Reads one line without its log prefix, the `index`th.
    /// Reads one cleaned line into the scan; true when it is one of ztest's (not `Other`).
    fn read(&mut self, index: usize, line: &str) -> bool {
        let (scan, suite, open, assertions) = (
            &mut self.scan,
            &mut self.suite,
            &mut self.open,
            &mut self.assertions,
        );
        if line.is_empty() || is_nonce(line) {
            return false;
        }
        scan.saw_output = true;
        let kind = classify(line);
        let classified = kind != ZLine::Other;
        if kind != ZLine::Other {
            scan.last_ztest_line = Some(index);
        }
        // The test's own message follows an assertion line.
        let expects_message = self.message_for.take();
        match kind {
            ZLine::Boot => scan.boots += 1,
            ZLine::SuiteStart(name) => {
                if !scan.started_suites.iter().any(|s| s == name) {
                    scan.started_suites.push(name.to_string());
                }
                *suite = Some(name.to_string());
            }
            ZLine::SuiteEnd { suite: name, ok } => {
                scan.suite_ends.push((name.to_string(), ok));
                *suite = None;
            }
            ZLine::CaseStart(name) => {
                *open = Some(scan.starts.len());
                scan.starts.push(Started {
                    index,
                    full_name: full_name(suite.as_deref(), name),
                    ended_at: None,
                });
                assertions.clear();
            }
            ZLine::Assertion(a) => {
                assertions.push((
                    a.skips,
                    a.file.to_string(),
                    a.line,
                    a.message.map(str::to_string),
                ));
                self.message_for = Some(assertions.len() - 1);
            }
            ZLine::CaseEnd { status, name } => {
                if let Some(start) = open.take().and_then(|i| scan.starts.get_mut(i)) {
                    start.ended_at = Some(index);
                }
                let wants_skip = status == CaseStatus::Ignore;
                let why = match status {
                    CaseStatus::Fail | CaseStatus::Ignore => assertions
                        .iter()
                        .find(|(skips, ..)| *skips == wants_skip)
                        .cloned(),
                    _ => None,
                };
                assertions.clear();
                scan.record(suite.as_deref(), name, status, why);
            }
            ZLine::SuiteSummary(s) => scan.summaries.push((
                s.word,
                s.suite.to_string(),
                [s.pass, s.fail, s.skip, s.total],
            )),
            ZLine::CaseSummary { word, suite, name } => {
                scan.case_summaries
                    .push((word, suite.to_string(), name.to_string()))
            }
            ZLine::Project(ok) => scan.projects.push(ok),
            ZLine::Error(text) => scan.errors.push(text.trim().to_string()),
            ZLine::Other => {
                if let Some((_, _, _, message)) =
                    expects_message.and_then(|i| assertions.get_mut(i))
                {
                    let text = line.trim();
                    *message = Some(match message.take() {
                        Some(default) => format!("{default}: {text}"),
                        None => text.to_string(),
                    });
                }
            }
        }
        classified
    }
}

impl Scan {
    /// Adds one result line, merging a test reported again in the same boot (a repeat mode).
    fn record(
        &mut self,
        suite: Option<&str>,
        name: &str,
        status: CaseStatus,
        why: Option<(bool, String, u32, Option<String>)>,
    ) {
        let (file, line, message) = match why {
            Some((_, file, line, message)) => (Some(file), Some(line), message),
            None => (None, None, None),
        };
        let key = (suite.map(str::to_string), name.to_string());
        let at = match self.by_case.get(&key) {
            Some(&at) => at,
            None => {
                let at = self.reported.len();
                let reported = Reported {
                    suite: key.0.clone(),
                    name: key.1.clone(),
                    status,
                    file: None,
                    line: None,
                    message: None,
                    runs: 0,
                    passes: 0,
                    failures: 0,
                };
                self.by_full_name.entry(reported.full_name()).or_insert(at);
                self.reported.push(reported);
                self.by_case.insert(key, at);
                at
            }
        };
        let Some(entry) = self.reported.get_mut(at) else {
            return;
        };
        entry.runs += 1;
        match status {
            CaseStatus::Pass => entry.passes += 1,
            CaseStatus::Fail => entry.failures += 1,
            _ => {}
        }
        // The first failure's location is the one to fix; a skip's reason matters only if
        // nothing failed.
        if entry.file.is_none() && (status == CaseStatus::Fail || entry.failures == 0) {
            entry.file = file;
            entry.line = line;
            if message.is_some() {
                entry.message = message;
            }
        }
        entry.status = if entry.failures > 0 {
            CaseStatus::Fail
        } else if entry.passes > 0 {
            CaseStatus::Pass
        } else {
            CaseStatus::Ignore
        };
    }

    /// The first test reported under the full name `full`.
    fn reported_as(&self, full: &str) -> Option<&Reported> {
        self.by_full_name
            .get(full)
            .and_then(|&at| self.reported.get(at))
    }
}

/// The results of what `scan` read from `lines` UART lines, with the first fault dump `dump`.
fn results(
    capture: &Capture,
    ctx: &ParseContext,
    scan: &Scan,
    dump: Option<Dump>,
    lines: usize,
) -> TestResults {
    let mut notes = Vec::new();
    common::truncation_note(capture, &mut notes);

    let mut cases: Vec<TestCase> = scan.reported.iter().map(Reported::to_case).collect();

    let dump = dump.filter(|dump| {
        dump.fatal_error.is_some() || scan.last_ztest_line.is_none_or(|last| last < dump.first)
    });
    if let Some(dump) = &dump {
        notes.push(attribution::dump_note(dump));
    }
    let stop = Stop::of(capture.end, dump.is_some());
    let complete = !scan.projects.is_empty();

    let matches = |expected: &str, case: &TestCase| {
        case.name == expected
            || case
                .name
                .rsplit_once('.')
                .is_some_and(|(_, bare)| bare == expected)
    };
    let mut unreported: Vec<&str> = Vec::new();
    if !complete {
        for name in &ctx.expected {
            if !cases.iter().any(|c| matches(name, c)) && !unreported.contains(&name.as_str()) {
                unreported.push(name);
            }
        }
    }

    let mut stopped_in = None;
    if let Some(stop) = stop {
        let at = match (&dump, stop) {
            (Some(dump), Stop::Crashed) => dump.first,
            _ => lines,
        };
        let open = scan.open_at(at);
        let went_on = open.and_then(|s| s.ended_at.map(|_| s.full_name.clone()));
        match went_on.and_then(|name| cases.iter_mut().find(|c| c.name == name)) {
            Some(case) => {
                // ztest caught the fault and carried on; the fault still fails the test.
                let reported = status_word(case.status);
                case.status = CaseStatus::Crash;
                case.message = Some(format!(
                    "Zephyr reported a fatal error while this test was running (ztest then \
                     reported {reported})"
                ));
                notes.push(format!(
                    "the image crashed while {} was running; ztest went on",
                    case.name
                ));
            }
            None => {
                let reported: HashSet<&str> = cases.iter().map(|c| c.name.as_str()).collect();
                let announced = open.map(|s| s.full_name.as_str());
                let blame = attribution::running_test(ctx, announced, &reported, &unreported);
                let (mut case, note) = attribution::stopped_case(&blame, stop, ORDER);
                attribution::at_assertion(&mut case, dump.as_ref());
                notes.push(note);
                unreported.retain(|n| *n != blame.name && !matches(n, &case));
                cases.push(case);
                stopped_in = Some(blame.name);
            }
        }
    }
    cases.extend(attribution::missing_cases(
        &unreported,
        stopped_in.as_deref(),
    ));

    let mut consistent = true;
    if stop.is_none() {
        let disagreements = cross_check(scan, capture.end, &mut cases, &mut notes);
        consistent = disagreements.is_empty();
        notes.extend(disagreements);
    }
    let summary = summary(scan, &cases);
    let verdict = decide(
        capture.end,
        stop.is_some(),
        consistent,
        scan,
        &cases,
        &mut notes,
    );
    TestResults {
        harness: HARNESS.to_string(),
        cases,
        summary,
        verdict,
        notes,
    }
}

fn status_word(status: CaseStatus) -> &'static str {
    match status {
        CaseStatus::Pass => "PASS",
        CaseStatus::Fail => "FAIL",
        CaseStatus::Ignore => "SKIP",
        CaseStatus::Crash => "CRASH",
        CaseStatus::Hang => "HANG",
        CaseStatus::Missing => "MISSING",
    }
}

/// The harness's own counts: the suites' summary lines added up (3.x), or, when only the final
/// word came (2.x prints no counts), the case lines'.
fn summary(scan: &Scan, cases: &[TestCase]) -> Option<Summary> {
    let ok = scan.projects.last().copied();
    if !scan.summaries.is_empty() {
        let sum = |i: usize| scan.summaries.iter().map(|(_, _, c)| c[i]).sum::<u32>();
        return Some(Summary {
            tests: sum(3),
            failures: sum(1),
            ignored: sum(2),
            ok,
        });
    }
    ok?;
    let count = |status| {
        let n = cases.iter().filter(|c| c.status == status).count();
        u32::try_from(n).unwrap_or(u32::MAX)
    };
    Some(Summary {
        tests: u32::try_from(cases.len()).unwrap_or(u32::MAX),
        failures: count(CaseStatus::Fail),
        ignored: count(CaseStatus::Ignore),
        ok,
    })
}

/// Every check of the output against itself: returns what disagrees. Adds the tests the summary
/// lists as skipped that never printed a result, and the `(run)` failure ztest's own errors
/// explain.
fn cross_check(
    scan: &Scan,
    end: RunEnd,
    cases: &mut Vec<TestCase>,
    notes: &mut Vec<String>,
) -> Vec<String> {
    let mut disagreements = Vec::new();
    let mut disagree = |note: String| disagreements.push(note);
    if scan.boots > 1 {
        disagree(format!(
            "Zephyr booted {} times during the run (did the image restart?)",
            scan.boots
        ));
    }
    if scan.projects.len() > 1 {
        disagree(format!(
            "ztest printed PROJECT EXECUTION {} times (did the image restart?); the last one is \
             used",
            scan.projects.len()
        ));
    }

    let in_suite = |cases: &[TestCase], suite: &str, status: CaseStatus| {
        let prefix = format!("{suite}.");
        cases
            .iter()
            .filter(|c| c.status == status && c.name.starts_with(&prefix))
            .count()
    };
    let as_u32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);

    // Per-test summary lines against the case lines; the skipped ones never printed a result.
    let mut unrun: Vec<TestCase> = Vec::new();
    let mut unrun_names: HashSet<String> = HashSet::new();
    for (word, suite, name) in &scan.case_summaries {
        let full = format!("{suite}.{name}");
        let Some(reported) = scan.reported_as(&full) else {
            if *word == Word::Skip {
                if unrun_names.insert(full.clone()) {
                    unrun.push(TestCase {
                        name: full,
                        status: CaseStatus::Ignore,
                        message: Some(
                            "skipped: ztest never ran it (filtered out, or its suite stopped \
                             early)"
                                .to_string(),
                        ),
                        file: None,
                        line: None,
                    });
                }
            } else {
                disagree(format!(
                    "the summary lists {full} as {} but no result line reported it",
                    word.as_str()
                ));
            }
            continue;
        };
        let agrees = match word {
            Word::Pass => reported.status == CaseStatus::Pass,
            Word::Fail => reported.status == CaseStatus::Fail && reported.passes == 0,
            Word::Skip => reported.status == CaseStatus::Ignore,
            Word::Flaky => reported.failures > 0 && reported.passes > 0,
        };
        if !agrees {
            disagree(format!(
                "the summary lists {full} as {} but its result line says {}",
                word.as_str(),
                status_word(reported.status)
            ));
        }
    }

    let mut summarized: Vec<&str> = Vec::new();
    for (word, suite, [pass, fail, skip, total]) in &scan.summaries {
        if summarized.contains(&suite.as_str()) {
            disagree(format!(
                "suite {suite} was summarized more than once (did the image restart?)"
            ));
            continue;
        }
        summarized.push(suite);
        let passed = as_u32(in_suite(cases, suite, CaseStatus::Pass));
        let failed = as_u32(in_suite(cases, suite, CaseStatus::Fail));
        let skipped = as_u32(in_suite(cases, suite, CaseStatus::Ignore));
        if pass + fail + skip != *total {
            disagree(format!(
                "suite {suite}: the summary's counts ({pass} passed, {fail} failed, {skip} \
                 skipped) do not add up to its total of {total}"
            ));
        }
        if *pass != passed {
            disagree(format!(
                "suite {suite}: the summary counts {pass} passed but the result lines show \
                 {passed}"
            ));
        }
        if *fail != failed {
            disagree(format!(
                "suite {suite}: the summary counts {fail} failed but the result lines show \
                 {failed}"
            ));
        }
        let named = as_u32(
            unrun
                .iter()
                .filter(|c| c.name.starts_with(&format!("{suite}.")))
                .count(),
        );
        if *skip < skipped + named {
            disagree(format!(
                "suite {suite}: the summary counts {skip} skipped but the result lines show {}",
                skipped + named
            ));
        } else if *skip > skipped + named {
            notes.push(format!(
                "suite {suite}: {} tests counted as skipped printed no result (filtered out, or \
                 the suite stopped early)",
                skip - skipped - named
            ));
        }
        let expected_word = if skip == total {
            Word::Skip
        } else if *fail > 0 {
            Word::Fail
        } else {
            Word::Pass
        };
        if *word != expected_word {
            disagree(format!(
                "suite {suite}: the summary says {} but its counts make it {}",
                word.as_str(),
                expected_word.as_str()
            ));
        }
    }
    if !scan.summaries.is_empty() {
        for suite in &scan.started_suites {
            if !summarized.contains(&suite.as_str()) {
                disagree(format!(
                    "suite {suite} ran but has no summary line while other suites do"
                ));
            }
        }
    }
    cases.extend(unrun);

    for (suite, ok) in &scan.suite_ends {
        let failed = in_suite(cases, suite, CaseStatus::Fail);
        if *ok && failed > 0 {
            disagree(format!(
                "TESTSUITE {suite} succeeded, but {failed} of its tests failed"
            ));
        }
        if !*ok && failed == 0 {
            disagree(format!(
                "TESTSUITE {suite} failed, but none of its tests reported a failure"
            ));
        }
    }

    let Some(&success) = scan.projects.last() else {
        return disagreements;
    };
    let failed: Vec<&TestCase> = cases
        .iter()
        .filter(|c| c.status == CaseStatus::Fail)
        .collect();
    if success && !failed.is_empty() {
        disagree(format!(
            "ztest printed PROJECT EXECUTION SUCCESSFUL but {} tests failed: {}",
            failed.len(),
            names(&failed)
        ));
    }
    if !success && failed.is_empty() {
        if scan.errors.is_empty() {
            disagree(
                "ztest printed PROJECT EXECUTION FAILED but no test failed and ztest gave no \
                 reason"
                    .to_string(),
            );
        } else {
            cases.push(TestCase {
                name: RUN_CASE.to_string(),
                status: CaseStatus::Fail,
                message: Some(scan.errors.join("; ")),
                file: None,
                line: None,
            });
            notes.push(format!(
                "ztest printed PROJECT EXECUTION FAILED because of its own errors: {}",
                scan.errors.join("; ")
            ));
        }
    }
    if let RunEnd::Exited { code } = end {
        // On native_sim a ztest image exits with its result: 0 when successful.
        if (code == 0) != success {
            disagree(format!(
                "the image exited with code {code} but ztest printed PROJECT EXECUTION {}",
                if success { "SUCCESSFUL" } else { "FAILED" }
            ));
        }
    }
    disagreements
}

fn decide(
    end: RunEnd,
    stopped: bool,
    consistent: bool,
    scan: &Scan,
    cases: &[TestCase],
    notes: &mut Vec<String>,
) -> Verdict {
    let tally = Tally::of(cases, scan.reported.len());
    if let Some(verdict) = attribution::environment_end(end, notes) {
        return verdict;
    }
    if stopped {
        tally.failure_notes(notes);
        return Verdict::Fail;
    }
    if !consistent {
        return Verdict::Inconclusive;
    }
    if scan.projects.is_empty() {
        return tally.unfinished("ztest", "PROJECT EXECUTION", scan.saw_output, end, notes);
    }
    tally.finished(cases.len(), "skipped", notes)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{self, capture, notes, statuses};
    use super::*;
    use proptest::prelude::*;

    const V3_PASS: &str = include_str!("../../tests/data/console/ztest_v3_pass.log");
    const V3_FAIL: &str = include_str!("../../tests/data/console/ztest_v3_fail.log");
    const V3_CRASH: &str = include_str!("../../tests/data/console/ztest_v3_crash.log");
    const V3_COUNTS: &str = include_str!("../../tests/data/console/ztest_v3_counts_disagree.log");
    const V3_HANG: &str = include_str!("../../tests/data/console/ztest_v3_hang_truncated.log");
    const V2_PASS: &str = include_str!("../../tests/data/console/ztest_v2_pass.log");
    const V2_FAIL: &str = include_str!("../../tests/data/console/ztest_v2_fail.log");

    fn parse_with(text: &str, end: RunEnd, expected: &[&str], site: &[&str]) -> TestResults {
        test_support::parse_with(&ZtestParser, text, end, expected, site)
    }

    fn parse(text: &str, end: RunEnd) -> TestResults {
        ZtestParser.parse(&capture(text, end), &ParseContext::default())
    }

    fn case<'a>(results: &'a TestResults, name: &str) -> &'a TestCase {
        results
            .cases
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no case {name} in {:#?}", results.cases))
    }

    /// 1-based lines the detector fires on.
    fn fires(text: &str) -> Vec<usize> {
        let mut d = ZtestParser.stream();
        text.lines()
            .enumerate()
            .filter(|(_, l)| d.read_line(l).verdict)
            .map(|(i, _)| i + 1)
            .collect()
    }

    #[test]
    fn v3_passing_run_with_a_skip() {
        let r = parse(V3_PASS, RunEnd::Verdict);
        assert_eq!(r.harness, "ztest");
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("crc.test_crc16_ccitt", CaseStatus::Pass),
                ("crc.test_crc32_ieee", CaseStatus::Pass),
                ("crc.test_crc8_rohc", CaseStatus::Ignore),
                ("ringbuf.test_ringbuf_put_get", CaseStatus::Pass),
            ]
        );
        let skipped = case(&r, "crc.test_crc8_rohc");
        assert_eq!(
            skipped.file.as_deref(),
            Some("WEST_TOPDIR/app/tests/crc/src/main.c")
        );
        assert_eq!(skipped.line, Some(88));
        assert_eq!(
            skipped.message.as_deref(),
            Some("(IS_ENABLED(CONFIG_CRC8_ROHC) is false): CRC-8/ROHC is not built in")
        );
        assert_eq!(
            r.summary,
            Some(Summary {
                tests: 4,
                failures: 0,
                ignored: 1,
                ok: Some(true)
            })
        );
        assert!(notes(&r).contains("all 3 tests that ran passed (1 skipped: crc.test_crc8_rohc)"));
        assert_eq!(fires(V3_PASS), vec![V3_PASS.lines().count()]);
    }

    #[test]
    fn v3_failure_carries_the_assertion_location_and_message() {
        let r = parse(V3_FAIL, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        let failed = case(&r, "crc.test_crc16_ccitt");
        assert_eq!(failed.status, CaseStatus::Fail);
        assert_eq!(
            failed.file.as_deref(),
            Some("WEST_TOPDIR/app/tests/crc/src/main.c")
        );
        assert_eq!(failed.line, Some(42));
        assert_eq!(
            failed.message.as_deref(),
            Some("(crc not equal to 0x29b1): crc16 of \"123456789\" was 0x31c3")
        );
        assert_eq!(case(&r, "crc.test_crc32_ieee").status, CaseStatus::Pass);
        assert_eq!(r.summary.and_then(|s| s.ok), Some(false));
        assert!(notes(&r).contains("1 of 2 reported tests failed: crc.test_crc16_ccitt"));
        assert_eq!(fires(V3_FAIL), vec![V3_FAIL.lines().count()]);
    }

    #[test]
    fn v3_crash_is_blamed_on_the_started_test() {
        // A real board prints the dump, halts, and the detector ends the run at `Halting system`.
        let last = V3_CRASH.lines().count();
        assert_eq!(fires(V3_CRASH), vec![last]);
        for end in [RunEnd::Verdict, RunEnd::Crashed, RunEnd::Timeout] {
            let r = parse_with(
                V3_CRASH,
                end,
                &[
                    "test_sensor_converts_raw_reading",
                    "test_sensor_reports_bus_error",
                ],
                &["sensor_sample"],
            );
            assert_eq!(r.verdict, Verdict::Fail, "{end:?}: {}", notes(&r));
            assert_eq!(
                statuses(&r),
                vec![
                    ("sensor.test_sensor_converts_raw_reading", CaseStatus::Pass),
                    ("sensor.test_sensor_uncalibrated_unit", CaseStatus::Crash),
                    ("test_sensor_reports_bus_error", CaseStatus::Missing),
                ],
                "{end:?}"
            );
            assert_eq!(
                r.cases[1].message.as_deref(),
                Some("no verdict: the image crashed while this test was running")
            );
            assert_eq!(
                r.cases[2].message.as_deref(),
                Some("never reported: the run stopped in sensor.test_sensor_uncalibrated_unit")
            );
            assert!(
                notes(&r).contains("Zephyr fatal error from line 8 (0: CPU exception on CPU 0)"),
                "{}",
                notes(&r)
            );
        }
    }

    #[test]
    fn a_fault_ztest_survived_still_fails_the_test() {
        // With a fatal error hook ztest can go on after a fault; Twister fails such a run.
        let text = "\
Running TESTSUITE hook
START - test_fault
E: >>> ZEPHYR FATAL ERROR 0: CPU exception on CPU 0
E: Current thread: 0x20000278 (test_fault)
Caught system error -- reason 0 1
 PASS - test_fault in 0.001 seconds
START - test_after
 PASS - test_after in 0.001 seconds
TESTSUITE hook succeeded
SUITE PASS - 100.00% [hook]: pass = 2, fail = 0, skip = 0, total = 2 duration = 0.002 seconds
PROJECT EXECUTION SUCCESSFUL
";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("hook.test_fault", CaseStatus::Crash),
                ("hook.test_after", CaseStatus::Pass),
            ]
        );
        assert!(r.cases[0]
            .message
            .as_deref()
            .unwrap()
            .contains("ztest then reported PASS"));
    }

    #[test]
    fn a_dump_printed_by_a_passing_test_is_not_a_crash() {
        let text = "\
Running TESTSUITE log
START - test_fault_log_format
pc: 0x00001000 lr: 0x00001001 cfsr: 0x00000100
 PASS - test_fault_log_format in 0.001 seconds
TESTSUITE log succeeded
PROJECT EXECUTION SUCCESSFUL
";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
    }

    #[test]
    fn hang_marks_the_started_test() {
        let r = parse_with(V3_HANG, RunEnd::Timeout, &[], &[]);
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("event.test_event_post_take", CaseStatus::Pass),
                ("event.test_event_wait_for_tick", CaseStatus::Hang),
            ]
        );
        assert!(fires(V3_HANG).is_empty());
    }

    #[test]
    fn output_that_stops_without_a_final_word() {
        let r = parse(V3_HANG, RunEnd::Exited { code: 0 });
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("exited with code 0 before ztest printed PROJECT EXECUTION"));

        let failing_then_cut = V3_FAIL.lines().take(9).collect::<Vec<_>>().join("\n");
        let r = parse(&failing_then_cut, RunEnd::Exited { code: 1 });
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));

        let r = parse("", RunEnd::Exited { code: 0 });
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("printed no ztest output"));
    }

    #[test]
    fn crash_without_a_started_test_uses_the_shared_attribution() {
        let text = "Running test suite s\n PASS - test_a\n";
        let r = parse_with(
            text,
            RunEnd::Crashed,
            &["test_a", "test_b", "test_c"],
            &["memcpy"],
        );
        assert_eq!(
            statuses(&r),
            vec![
                ("s.test_a", CaseStatus::Pass),
                ("test_b", CaseStatus::Crash),
                ("test_c", CaseStatus::Missing),
            ]
        );
        assert!(r.cases[1]
            .message
            .as_deref()
            .unwrap()
            .contains("as ztest runs tests in order"));

        let r = parse_with(text, RunEnd::Crashed, &[], &["k_sched_lock", "test_b"]);
        assert_eq!(r.cases[1].name, "test_b");

        let r = parse_with(text, RunEnd::Crashed, &[], &[]);
        assert_eq!(r.cases[1].name, "(run)");
        assert_eq!(r.cases[1].status, CaseStatus::Crash);
    }

    #[test]
    fn counts_disagreeing_with_the_case_lines_is_inconclusive() {
        let r = parse(V3_COUNTS, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(
            notes(&r)
                .contains("suite ringbuf: the summary counts 3 passed but the result lines show 2"),
            "{}",
            notes(&r)
        );

        let fail_hidden = V3_FAIL.replace(
            "SUITE FAIL -  50.00% [crc]: pass = 1, fail = 1",
            "SUITE FAIL -  50.00% [crc]: pass = 1, fail = 2",
        );
        let r = parse(&fail_hidden, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("counts 2 failed but the result lines show 1"));
        assert!(notes(&r).contains("do not add up to its total of 2"));
    }

    #[test]
    fn final_word_and_suite_results_must_agree_with_the_cases() {
        let r = parse(
            &V3_FAIL.replace("PROJECT EXECUTION FAILED", "PROJECT EXECUTION SUCCESSFUL"),
            RunEnd::Verdict,
        );
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("PROJECT EXECUTION SUCCESSFUL but 1 tests failed"));

        let r = parse(
            &V3_FAIL.replace("TESTSUITE crc failed.", "TESTSUITE crc succeeded"),
            RunEnd::Verdict,
        );
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("TESTSUITE crc succeeded, but 1 of its tests failed"));

        let r = parse(
            &V3_PASS.replace("PROJECT EXECUTION SUCCESSFUL", "PROJECT EXECUTION FAILED"),
            RunEnd::Verdict,
        );
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("no test failed and ztest gave no reason"));

        let r = parse(
            &V3_PASS.replace(
                "PROJECT EXECUTION SUCCESSFUL",
                "ERROR: Test suite 'power' did not run.\nPROJECT EXECUTION FAILED",
            ),
            RunEnd::Verdict,
        );
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        let run = case(&r, "(run)");
        assert_eq!(run.status, CaseStatus::Fail);
        assert_eq!(
            run.message.as_deref(),
            Some("ERROR: Test suite 'power' did not run.")
        );

        let r = parse(
            &V3_PASS.replace(
                "SUITE PASS - 100.00% [ringbuf]",
                "SUITE FAIL - 100.00% [ringbuf]",
            ),
            RunEnd::Verdict,
        );
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("the summary says FAIL but its counts make it PASS"));
    }

    #[test]
    fn per_test_summary_lines_are_checked_and_name_tests_that_never_ran() {
        let r = parse(
            &V3_PASS.replace(
                " - PASS - [crc.test_crc32_ieee]",
                " - FAIL - [crc.test_crc32_ieee]",
            ),
            RunEnd::Verdict,
        );
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(
            notes(&r).contains("lists crc.test_crc32_ieee as FAIL but its result line says PASS")
        );

        // Fail-fast: two tests never started; the summary counts both and names one.
        let text = "\
Running TESTSUITE s
START - test_a
 FAIL - test_a in 0.001 seconds
TESTSUITE s failed.
SUITE FAIL -   0.00% [s]: pass = 0, fail = 1, skip = 2, total = 3 duration = 0.001 seconds
 - FAIL - [s.test_a] duration = 0.001 seconds
 - SKIP - [s.test_b] duration = 0.000 seconds
PROJECT EXECUTION FAILED
";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("s.test_a", CaseStatus::Fail),
                ("s.test_b", CaseStatus::Ignore)
            ]
        );
        assert!(notes(&r).contains("suite s: 1 tests counted as skipped printed no result"));

        let r = parse(
            &text.replace(" - FAIL - [s.test_a]", " - PASS - [s.test_z]"),
            RunEnd::Verdict,
        );
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("lists s.test_z as PASS but no result line reported it"));
    }

    #[test]
    fn v2_legacy_format_without_durations_or_summaries() {
        let r = parse(V2_PASS, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("ringbuf_api.test_ringbuf_init", CaseStatus::Pass),
                ("ringbuf_api.test_ringbuf_put_get", CaseStatus::Pass),
                ("ringbuf_api.test_ringbuf_item_size", CaseStatus::Ignore),
            ]
        );
        // 2.x prints no counts: the summary comes from the case lines.
        assert_eq!(
            r.summary,
            Some(Summary {
                tests: 3,
                failures: 0,
                ignored: 1,
                ok: Some(true)
            })
        );
        assert_eq!(fires(V2_PASS), vec![V2_PASS.lines().count()]);

        let r = parse(V2_FAIL, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        let failed = case(&r, "crc.test_crc16_ccitt");
        assert_eq!(failed.line, Some(42));
        assert_eq!(failed.message.as_deref(), Some("crc not equal to 0x29b1"));
        assert_eq!(case(&r, "crc.test_crc32_ieee").status, CaseStatus::Pass);

        let r = parse(
            &V2_FAIL.replace("Test suite crc failed.", "Test suite crc succeeded"),
            RunEnd::Verdict,
        );
        assert_eq!(r.verdict, Verdict::Inconclusive);
    }

    #[test]
    fn oldest_format_and_tests_outside_a_suite() {
        let text = "\
***** Booting Zephyr OS build zephyr-v1.14.0 *****
starting test - test_timer
PASS - test_timer
===================================================================
starting test - test_sem
FAIL - test_sem
===================================================================
PROJECT EXECUTION FAILED
";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(
            statuses(&r),
            vec![
                ("test_timer", CaseStatus::Pass),
                ("test_sem", CaseStatus::Fail)
            ]
        );
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
    }

    #[test]
    fn restarts_and_repeated_final_words_are_inconclusive() {
        let r = parse(&format!("{V3_PASS}{V3_PASS}"), RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("Zephyr booted 2 times"));
        assert!(notes(&r).contains("PROJECT EXECUTION 2 times"));
    }

    #[test]
    fn repeated_runs_of_a_test_merge_into_one_case() {
        let text = "\
Running TESTSUITE s
START - test_a
 PASS - test_a in 0.001 seconds
START - test_a

    Assertion failed at src/main.c:9: s_test_a: x is false

 FAIL - test_a in 0.001 seconds
TESTSUITE s failed.
SUITE FAIL -   0.00% [s]: pass = 0, fail = 1, skip = 0, total = 1 duration = 0.001 seconds
 - FLAKY - [s.test_a] - (Failed 1 of 2 attempts) - duration = 0.001 seconds
PROJECT EXECUTION FAILED
";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        assert_eq!(statuses(&r), vec![("s.test_a", CaseStatus::Fail)]);
        assert_eq!(
            r.cases[0].message.as_deref(),
            Some("x is false (failed 1 of 2 runs)")
        );
        assert_eq!(r.cases[0].line, Some(9));
    }

    #[test]
    fn exit_code_must_match_the_final_word() {
        let r = parse(V3_PASS, RunEnd::Exited { code: 0 });
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        let r = parse(V3_FAIL, RunEnd::Exited { code: 1 });
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        let r = parse(V3_PASS, RunEnd::Exited { code: 1 });
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(
            notes(&r).contains("exited with code 1 but ztest printed PROJECT EXECUTION SUCCESSFUL")
        );
    }

    #[test]
    fn runner_death_cancel_and_truncation() {
        let r = parse(
            V3_PASS,
            RunEnd::RunnerDied {
                signal: Some(9),
                code: None,
            },
        );
        assert_eq!(r.verdict, Verdict::EnvError);
        let r = parse(V3_PASS, RunEnd::Cancelled);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        let mut c = capture(V3_PASS, RunEnd::Verdict);
        c.truncated = true;
        let r = ZtestParser.parse(&c, &ParseContext::default());
        assert!(notes(&r).contains("truncated"));
    }

    #[test]
    fn zero_tests_is_inconclusive() {
        let text = "*** Booting Zephyr OS build v3.5.0 ***\n\
                    SUITE SKIP -   0.00% [s]: pass = 0, fail = 0, skip = 0, total = 0 duration = 0.000 seconds\n\
                    PROJECT EXECUTION SUCCESSFUL\n";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Inconclusive, "{}", notes(&r));
        assert!(notes(&r).contains("reported no tests"));
    }

    #[test]
    fn expected_names_do_not_fail_a_complete_run() {
        // Zephyr 3.x ELF symbols are `suite_test_x`; helpers named test_* must not become MISSING.
        let r = parse_with(
            V3_PASS,
            RunEnd::Verdict,
            &["test_helper_fill", "test_crc16_ccitt"],
            &[],
        );
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(r.cases.len(), 4);
    }

    #[test]
    fn prefixed_lines_are_read() {
        let text = "\
[00:00:00.000,000] <inf> app: Running TESTSUITE s
uart0: START - test_a
uart0:  PASS - test_a in 0.001 seconds
TESTSUITE s succeeded
uart0: SUITE PASS - 100.00% [s]: pass = 1, fail = 0, skip = 0, total = 1 duration = 0.001 seconds
uart0: PROJECT EXECUTION SUCCESSFUL
";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(statuses(&r), vec![("s.test_a", CaseStatus::Pass)]);
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
    }

    #[test]
    fn lines_that_are_not_ztest_lines() {
        for line in [
            "",
            "PASS",
            "PASS - ",
            "my PASS - test_a",
            "PASS - test_a in soon seconds",
            "xPASS - test_a in 0.001 seconds",
            "START - ",
            "START - two words",
            "TESTSUITE s exploded",
            "SUITE PASS - 100.00% [s]: pass = x",
            "- PASS - suite.test",
            "Assertion failed at nowhere",
        ] {
            assert_eq!(classify(line), ZLine::Other, "{line:?}");
        }
        assert_eq!(
            classify("sensor says hi PASS - test_a in 0.001 seconds"),
            ZLine::CaseEnd {
                status: CaseStatus::Pass,
                name: "test_a"
            }
        );
        assert_eq!(
            classify("    Assertion failed at C:/fw/main.c:7: f: boom: x"),
            ZLine::Assertion(Assertion {
                skips: false,
                file: "C:/fw/main.c",
                line: 7,
                message: Some("boom: x"),
            })
        );
        assert_eq!(
            classify("    Assertion failed at main.c:7"),
            ZLine::Assertion(Assertion {
                skips: false,
                file: "main.c",
                line: 7,
                message: None,
            })
        );
    }

    #[test]
    fn the_lines_ztest_reads_are_kept() {
        let mut d = ZtestStream::default();
        assert!(d.read_line("START - test_a").keep);
        assert!(d.read_line(" PASS - test_a in 0.001 seconds").keep);
        assert!(
            d.read_line("[00:00:00.010,000] <err> os: >>> ZEPHYR FATAL ERROR 4: Kernel panic")
                .keep
        );
        assert!(d.read_line("PROJECT EXECUTION SUCCESSFUL").keep);
        assert!(!d.read_line("sensor: 17").keep);
    }

    #[test]
    fn detector_ignores_verdict_words_elsewhere() {
        let mut d = ZtestStream::default();
        assert!(!d.read_line("PROJECT EXECUTION").verdict);
        assert!(!d.read_line("Halting system").verdict);
        assert!(!d.read_line(" PASS - test_a in 0.001 seconds").verdict);
        assert!(d.read_line("PROJECT EXECUTION FAILED\r").verdict);
        let mut d = ZtestStream::default();
        assert!(
            !d.read_line("E: >>> ZEPHYR FATAL ERROR 4: Kernel panic on CPU 0")
                .verdict
        );
        assert!(d.read_line("E: Halting system").verdict);
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC*") {
            let _ = parse(&text, RunEnd::Verdict);
            let _ = parse(&text, RunEnd::Crashed);
            let mut d = ZtestStream::default();
            let _ = d.read_line(&text).verdict;
        }

        #[test]
        fn printed_results_parse_back(
            noise in "[ -~]{0,20}",
            name in "test_[a-z_0-9]{1,20}",
            status in prop_oneof![
                Just(CaseStatus::Pass), Just(CaseStatus::Fail), Just(CaseStatus::Ignore)
            ],
            ms in 0u32..100_000,
        ) {
            let word = match status {
                CaseStatus::Pass => "PASS",
                CaseStatus::Fail => "FAIL",
                _ => "SKIP",
            };
            let line = format!("{noise} {word} - {name} in {}.{:03} seconds", ms / 1000, ms % 1000);
            prop_assert_eq!(case_end(line.trim()), Some((status, name.as_str())));
        }
    }

    /// More results than a capture keeps in memory: the streamed parse still has every case and
    /// checks every per-test summary line, where the kept lines alone would have lost most.
    #[test]
    fn every_case_of_a_console_longer_than_the_capture_is_read() {
        const N: usize = 100_000;
        let head = [
            "*** Booting Zephyr OS build v3.5.0 ***",
            "Running TESTSUITE many",
        ]
        .map(str::to_string)
        .into_iter();
        let cases = (0..N).flat_map(|i| {
            [
                format!("START - test_{i:06}"),
                format!(" PASS - test_{i:06} in 0.001 seconds"),
            ]
        });
        let summary = [
            "TESTSUITE many succeeded".to_string(),
            format!(
                "SUITE PASS - 100.00% [many]: pass = {N}, fail = 0, skip = 0, total = {N} \
                 duration = 1.000 seconds"
            ),
        ]
        .into_iter();
        let per_test =
            (0..N).map(|i| format!(" - PASS - [many.test_{i:06}] duration = 0.001 seconds"));
        let end = ["PROJECT EXECUTION SUCCESSFUL".to_string()].into_iter();
        let lines = head.chain(cases).chain(summary).chain(per_test).chain(end);
        let (r, kept) = test_support::stream(&ZtestParser, lines, RunEnd::Verdict);
        assert!(kept.truncated);
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(r.cases.len(), N);
        assert!(r.cases.iter().all(|c| c.status == CaseStatus::Pass));
        assert_eq!(r.cases[N - 1].name, format!("many.test_{:06}", N - 1));
        assert_eq!(r.summary.map(|s| s.tests), Some(N as u32));
        let from_kept = ZtestParser.parse(&kept, &ParseContext::default());
        assert!(from_kept.cases.len() < N, "{}", from_kept.cases.len());
    }
}
