//! The Unity test harness: its console format, its end-of-run detector, and the cross-checks that
//! decide whether its output can be trusted.
//!
//! Unity prints one line per test (`file:line:name:PASS`, `file:line:name:FAIL: message`,
//! `file:line:name:IGNORE: message`), then a line of 23 dashes, `N Tests N Failures N Ignored`,
//! and `OK` or `FAIL`. A test's own output may precede its result on the same line, because Unity
//! prints the location right after whatever the test printed; the parser therefore takes the last
//! `:PASS`/`:FAIL`/`:IGNORE` on a line whose prefix ends in `path:digits:name`.
//!
//! Unity Fixture (`TEST_GROUP`, `RUN_TEST_CASE`) announces `Unity test run 1 of 1` and names a
//! test `TEST(group, name)`. By default it prints a `.` per test and `!` per `IGNORE_TEST`, and a
//! line only for a test that failed or was ignored from inside (`..path:NN:TEST(g, n):FAIL: msg`,
//! the marks stuck to the path): the passing tests are counted from the marks, unnamed. With
//! `-v` it prints `TEST(g, n) PASS`, `TEST(g, n)path:NN::FAIL: msg` and `IGNORE_TEST(g, n)`. The
//! summary and final word are Unity's. Run with `-r M`, it repeats the whole run M times, each
//! announced (`Unity test run 2 of 3`) and closed by its own summary and word: the run is over
//! at the last one's word. The last run is cross-checked as a single run is; a test that failed
//! in an earlier run fails the result too (a flaky test is a failing test), said in a note.
//!
//! This module only reads UART text and the [`ParseContext`]: it must not symbolise, read files or
//! look at the clock. It never trusts a single source: the case lines, the summary, the final
//! word and the exit code must all agree, or the verdict is INCONCLUSIVE with a note saying what
//! disagreed.
//!
//! Verdicts, in order of precedence:
//! 1. the runner died: ENV_ERROR (not a test result); cancelled: INCONCLUSIVE;
//! 2. the image crashed or hung: FAIL, with the running test marked CRASH or HANG. A fault dump
//!    on the console counts as a crash when no Unity line follows it (a test that prints a
//!    dump-like text and then reports its result did not crash);
//! 3. the output disagrees with itself (counts, `OK`/`FAIL`, exit code, repeated reports):
//!    INCONCLUSIVE;
//! 4. no summary (the output just stops, or the image exits first): FAIL when a case line already
//!    reported a failure — that line is evidence enough — otherwise INCONCLUSIVE;
//! 5. any FAIL, or an expected test that was never reported: FAIL;
//! 6. no test reported at all: INCONCLUSIVE (a run that checked nothing proves nothing);
//! 7. otherwise PASS.

use std::collections::HashSet;

use super::attribution::{self, Stop};
use super::common::{self, Tally};
use super::crash_dump::{self, Dump};
use super::lines::{clean, is_nonce};
use super::{
    CaseStatus, HarnessParser, HarnessStream, ParseContext, Summary, TestCase, TestResults, Verdict,
};
use crate::capture::{Capture, EndDetector, FaultSnapshot, LineRead, RunEnd};

const HARNESS: &str = "unity";

/// Why the first expected test not yet reported is taken to be the one that was running.
const ORDER: &str = "as Unity runs tests in order";

/// Lines from other tasks tolerated between Unity's summary and its `OK` or `FAIL`: a logger
/// that prints after every line adds one, a few tasks a few more.
const INTERLEAVED: usize = 16;

/// Parses Unity's console output.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnityParser;

impl HarnessParser for UnityParser {
    fn name(&self) -> &'static str {
        HARNESS
    }

    fn stream(&self) -> Box<dyn HarnessStream> {
        Box::new(UnityStream::default())
    }
}

/// Unity's parse of one attempt, line by line. Says the run is over when `OK` or `FAIL` follows
/// Unity's summary, after at most [`INTERLEAVED`] lines that are not Unity's (another task's log
/// can come between the two): a bare `OK` printed by a test, or a test named `FAIL`, does not
/// end the run.
#[derive(Debug, Default)]
pub struct UnityStream {
    /// UART lines read so far: the index of the next one.
    index: usize,
    scan: Scan,
    /// A summary was read and only other output since: how many more such lines may still come
    /// before the verdict word.
    after_summary: Option<usize>,
    /// The names in `scan.reported` and in `scan.repeated`.
    names: HashSet<String>,
    repeated: HashSet<String>,
    /// Files results named with nothing printed before them, and the cases whose file may carry
    /// a test's output stuck to its path (indices into `scan.reported`).
    clean_files: HashSet<String>,
    noisy: Vec<usize>,
    dumps: crash_dump::Finder,
}

impl EndDetector for UnityStream {
    /// Kept: a result line, a summary, or a verdict word.
    fn read_line(&mut self, line: &str) -> LineRead {
        let index = self.index;
        self.index += 1;
        let settle = self.dumps.line(line);
        LineRead {
            settle,
            ..self.read(index, clean(line))
        }
    }
}

impl HarnessStream for UnityStream {
    fn fault_dump(&self) -> Option<FaultSnapshot> {
        self.dumps.fault()
    }

    fn finish(&mut self, capture: &Capture, ctx: &ParseContext) -> TestResults {
        let mut scan = std::mem::take(&mut self.scan);
        // Text the test printed just before its result can stick to the path (`42test_crc.c`);
        // when another result names the same file cleanly, use that.
        for &index in &self.noisy {
            let Some(case) = scan.reported.get_mut(index) else {
                continue;
            };
            let Some(file) = case.file.as_deref() else {
                continue;
            };
            let better = self
                .clean_files
                .iter()
                .filter(|clean| file.len() > clean.len() && file.ends_with(clean.as_str()))
                .max_by_key(|clean| clean.len());
            if let Some(better) = better {
                case.file = Some(better.clone());
            }
        }
        let dump = self.dumps.dump();
        results(capture, ctx, &scan, dump)
    }
}

impl UnityStream {
    /// A repeat's next run begins: the run before it is set aside with what failed in it, and
    /// the new one is read afresh (its tests report again, its marks and summary are its own).
    fn next_repeat(&mut self) {
        let scan = &mut self.scan;
        let Some(run) = scan.repeat else {
            return;
        };
        let failed = std::mem::take(&mut scan.reported)
            .into_iter()
            .filter(|c| c.status == CaseStatus::Fail)
            .collect();
        scan.earlier.push(EarlierRun {
            run,
            failed,
            summary: scan.summaries.pop(),
        });
        scan.summaries.clear();
        scan.progress = Progress::default();
        self.after_summary = None;
        self.names.clear();
        self.clean_files.clear();
        self.noisy.clear();
    }

    /// Reads one cleaned line, the `index`th: final when it is Unity's final word, kept when it
    /// is a result, a summary or a verdict word.
    fn read(&mut self, index: usize, line: &str) -> LineRead {
        let scan = &mut self.scan;
        if line.is_empty() || is_nonce(line) {
            return LineRead::default();
        }
        scan.saw_output = true;
        if let Some(run) = fixture_start(line) {
            scan.fixture = true;
            if run.0 > 1
                && scan
                    .repeat
                    .is_some_and(|(k, m)| k + 1 == run.0 && m == run.1)
            {
                self.next_repeat();
            }
            self.scan.repeat = Some(run);
            return LineRead {
                verdict: false,
                keep: true,
                settle: false,
            };
        }
        if scan.fixture && scan.summaries.is_empty() && scan.progress.read(line) {
            scan.last_unity_line = Some(index);
            return LineRead {
                verdict: false,
                keep: true,
                settle: false,
            };
        }
        let word = verdict_word(line);
        if let Some(left) = self.after_summary.take() {
            if let (Some(ok), Some(summary)) = (word, scan.summaries.last_mut()) {
                summary.ok = Some(ok);
                scan.last_unity_line = Some(index);
                // Only the last run of a repeat says the last word.
                let last_run = scan.repeat.is_none_or(|(k, m)| k >= m);
                return LineRead {
                    verdict: last_run,
                    keep: true,
                    settle: false,
                };
            }
            self.after_summary = left.checked_sub(1);
        }
        let kind = classify(line);
        if kind != UnityLine::Other {
            // Unity printing on means the summary was not its last word.
            self.after_summary = None;
        }
        let read = LineRead {
            verdict: false,
            keep: word.is_some() || kind != UnityLine::Other,
            settle: false,
        };
        match kind {
            UnityLine::Summary(summary) => {
                scan.summaries.push(summary);
                scan.last_unity_line = Some(index);
                self.after_summary = Some(INTERLEAVED);
            }
            UnityLine::Result(mut result) => {
                scan.last_unity_line = Some(index);
                if scan.fixture && result.name.starts_with("TEST(") {
                    // Progress marks of the tests before this one stick to its path.
                    let marks =
                        result.file.len() - result.file.trim_start_matches(['.', '!']).len();
                    if marks > 0 && !result.file[marks..].starts_with('/') {
                        scan.progress.read(&result.file[..marks]);
                        scan.progress.named += 1;
                        result.file = &result.file[marks..];
                        result.clean_start = true;
                    }
                }
                if self.names.contains(result.name) {
                    if self.repeated.insert(result.name.to_string()) {
                        scan.repeated.push(result.name.to_string());
                    }
                    return read;
                }
                self.names.insert(result.name.to_string());
                if result.clean_start {
                    if !result.file.is_empty() && !self.clean_files.contains(result.file) {
                        self.clean_files.insert(result.file.to_string());
                    }
                } else {
                    self.noisy.push(scan.reported.len());
                }
                scan.reported.push(TestCase {
                    name: result.name.to_string(),
                    status: result.status,
                    message: result.message.map(str::to_string),
                    // Unity Fixture's `-v` names no location for a passing or ignored test.
                    file: (!result.file.is_empty()).then(|| result.file.to_string()),
                    line: (!result.file.is_empty()).then_some(result.line),
                });
            }
            UnityLine::Other => {}
        }
        read
    }
}

/// One `file:line:name:STATUS[: message]` line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ResultLine<'a> {
    file: &'a str,
    line: u32,
    name: &'a str,
    status: CaseStatus,
    message: Option<&'a str>,
    /// Nothing the test printed precedes the location on this line.
    clean_start: bool,
}

/// What one console line is, as far as Unity is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
enum UnityLine<'a> {
    Result(ResultLine<'a>),
    Summary(Summary),
    Other,
}

fn classify(line: &str) -> UnityLine<'_> {
    if let Some(summary) = parse_summary(line) {
        UnityLine::Summary(summary)
    } else if let Some(result) = parse_result(line).or_else(|| parse_fixture_verbose(line)) {
        UnityLine::Result(result)
    } else {
        UnityLine::Other
    }
}

/// Unity Fixture's `Unity test run N of M`: (N, M).
fn fixture_start(line: &str) -> Option<(u32, u32)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["Unity", "test", "run", n, "of", m] => Some((n.parse().ok()?, m.parse().ok()?)),
        _ => None,
    }
}

/// Unity Fixture's progress marks, `.` per test run and `!` per `IGNORE_TEST`.
#[derive(Debug, Default, Clone, Copy)]
struct Progress {
    ran: usize,
    ignored: usize,
    /// Tests among `ran` that also printed a line (a failure, an ignore from inside).
    named: usize,
}

impl Progress {
    /// Tests that ran and passed, known only by their marks.
    fn unnamed_passes(self) -> usize {
        self.ran.saturating_sub(self.named)
    }
}

impl Progress {
    /// Counts `text` when it is only marks; says whether it was.
    fn read(&mut self, text: &str) -> bool {
        if text.is_empty() || !text.chars().all(|c| c == '.' || c == '!') {
            return false;
        }
        self.ran += text.matches('.').count();
        self.ignored += text.matches('!').count();
        true
    }
}

/// A Unity Fixture `-v` line: `TEST(g, n) PASS`, `TEST(g, n)path:NN::FAIL: msg` (or `::IGNORE`),
/// or `IGNORE_TEST(g, n)`. The case is named `TEST(g, n)` as the default output names it.
fn parse_fixture_verbose(line: &str) -> Option<ResultLine<'_>> {
    let (ignore_test, from) = if line.starts_with("IGNORE_TEST(") {
        (true, "IGNORE_".len())
    } else if line.starts_with("TEST(") {
        (false, 0)
    } else {
        return None;
    };
    let close = from + line[from..].find(')')?;
    let name = &line[from..=close];
    if !name.contains(',') {
        return None;
    }
    let rest = &line[close + 1..];
    let bare = |status| ResultLine {
        file: "",
        line: 0,
        name,
        status,
        message: None,
        clean_start: true,
    };
    // `-v` may add the run time: `TEST(g, n) PASS (3 ms)`.
    let word = rest.split_whitespace().next();
    if ignore_test {
        return rest.trim().is_empty().then(|| bare(CaseStatus::Ignore));
    }
    if word == Some("PASS") && rest.starts_with(' ') {
        return Some(bare(CaseStatus::Pass));
    }
    const KEYWORDS: [(&str, CaseStatus); 2] = [
        ("::FAIL", CaseStatus::Fail),
        ("::IGNORE", CaseStatus::Ignore),
    ];
    let (at, keyword, status) = KEYWORDS
        .iter()
        .filter_map(|&(k, s)| rest.rfind(k).map(|at| (at, k, s)))
        .max_by_key(|c| c.0)?;
    let after = &rest[at + keyword.len()..];
    let message = match after.trim() {
        "" => None,
        _ => Some(after.strip_prefix(':')?.trim()).filter(|m| !m.is_empty()),
    };
    let (path_part, digits) = rest[..at].rsplit_once(':')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let start = path_start(path_part);
    let file = &path_part[start..];
    (!file.is_empty()).then_some(ResultLine {
        file,
        line: digits.parse().ok()?,
        name,
        status,
        message,
        clean_start: start == 0,
    })
}

/// `N Tests N Failures N Ignored`, with nothing else on the line.
fn parse_summary(line: &str) -> Option<Summary> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        [tests, "Tests", failures, "Failures", ignored, "Ignored"] => Some(Summary {
            tests: tests.parse().ok()?,
            failures: failures.parse().ok()?,
            ignored: ignored.parse().ok()?,
            ok: None,
        }),
        _ => None,
    }
}

/// Unity's last word: `OK` is true, `FAIL` is false.
fn verdict_word(line: &str) -> Option<bool> {
    match line {
        "OK" => Some(true),
        "FAIL" => Some(false),
        _ => None,
    }
}

fn parse_result(line: &str) -> Option<ResultLine<'_>> {
    const KEYWORDS: [(&str, CaseStatus); 3] = [
        (":PASS", CaseStatus::Pass),
        (":FAIL", CaseStatus::Fail),
        (":IGNORE", CaseStatus::Ignore),
    ];
    let mut candidates: Vec<(usize, &str, CaseStatus)> = KEYWORDS
        .iter()
        .flat_map(|&(keyword, status)| {
            line.match_indices(keyword)
                .map(move |(at, _)| (at, keyword, status))
        })
        .collect();
    // The last match wins: what the test printed comes first on the line.
    candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
    candidates.into_iter().find_map(|(at, keyword, status)| {
        let rest = &line[at + keyword.len()..];
        let message = if rest.trim().is_empty() {
            None
        } else {
            let text = rest.strip_prefix(':')?.trim();
            (!text.is_empty()).then_some(text)
        };
        let (start, file, line_no, name) = split_location(&line[..at])?;
        Some(ResultLine {
            file,
            line: line_no,
            name,
            status,
            message,
            clean_start: start == 0,
        })
    })
}

/// Splits the `path:digits:name` that ends `prefix`; returns where the path starts.
fn split_location(prefix: &str) -> Option<(usize, &str, u32, &str)> {
    let (before_name, name) = prefix.rsplit_once(':')?;
    if name.is_empty() || name.starts_with(char::is_whitespace) {
        return None;
    }
    let (path_part, digits) = before_name.rsplit_once(':')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let line_no = digits.parse().ok()?;
    let start = path_start(path_part);
    let file = &path_part[start..];
    if file.is_empty() {
        return None;
    }
    Some((start, file, line_no, name))
}

/// Where the path that ends `path_part` starts: after the last `:` or blank, keeping a Windows
/// drive letter.
fn path_start(path_part: &str) -> usize {
    let mut start = path_part
        .char_indices()
        .rev()
        .find(|&(_, c)| c == ':' || c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    // A Windows drive letter (`C:\` or `C:/`) belongs to the path.
    let tail = &path_part[start..];
    if tail.starts_with('\\') || tail.starts_with('/') {
        if let [.., letter, b':'] = path_part.as_bytes()[..start] {
            if letter.is_ascii_alphabetic() {
                start -= 2;
            }
        }
    }
    start
}

/// Everything read from the console, before any cross-check.
#[derive(Debug, Default)]
struct Scan {
    reported: Vec<TestCase>,
    /// Names reported more than once (the image restarted, or two runs interleaved).
    repeated: Vec<String>,
    summaries: Vec<Summary>,
    saw_output: bool,
    /// Unity Fixture announced its run.
    fixture: bool,
    /// Unity Fixture's `-r M` repeats: the run announced last (`Unity test run k of M`).
    repeat: Option<(u32, u32)>,
    /// The runs of a repeat before the current one: what failed in each, and its summary.
    earlier: Vec<EarlierRun>,
    progress: Progress,
    /// Index (among the UART lines) of the last line Unity printed: a result, a summary or its
    /// final word.
    last_unity_line: Option<usize>,
}

/// One finished run of a Unity Fixture repeat (`-r M`), before the last.
#[derive(Debug)]
struct EarlierRun {
    /// `k of M`.
    run: (u32, u32),
    failed: Vec<TestCase>,
    summary: Option<Summary>,
}

/// A case for each test Unity Fixture showed only as a progress mark, numbered in run order
/// among the unnamed ones.
fn unnamed_cases(progress: Progress) -> Vec<TestCase> {
    let case = |what: &str, k: usize, status| TestCase {
        name: format!("(unnamed {what} {k})"),
        status,
        message: Some(
            "shown by Unity Fixture only as a progress mark (its -v option names it)".to_string(),
        ),
        file: None,
        line: None,
    };
    let passes = (1..=progress.unnamed_passes()).map(|k| case("pass", k, CaseStatus::Pass));
    let ignores = (1..=progress.ignored).map(|k| case("ignore", k, CaseStatus::Ignore));
    passes.chain(ignores).collect()
}

impl Scan {
    /// The tests reported: by a line, or (Unity Fixture) only by a progress mark.
    fn counted(&self) -> usize {
        self.reported.len() + self.progress.unnamed_passes() + self.progress.ignored
    }
}

/// The results of what `scan` read, with the first fault dump `dump`.
fn results(capture: &Capture, ctx: &ParseContext, scan: &Scan, dump: Option<Dump>) -> TestResults {
    let mut notes = Vec::new();
    common::truncation_note(capture, &mut notes);
    let dump = dump.filter(|dump| scan.last_unity_line.is_none_or(|last| last < dump.first));
    if let Some(dump) = &dump {
        notes.push(attribution::dump_note(dump));
    }
    let stop = Stop::of(capture.end, dump.is_some());

    let reported_names: HashSet<&str> = scan.reported.iter().map(|c| c.name.as_str()).collect();
    let mut unreported: Vec<&str> = Vec::new();
    for name in &ctx.expected {
        if !reported_names.contains(name.as_str()) && !unreported.contains(&name.as_str()) {
            unreported.push(name);
        }
    }
    // A `test_*` function is only a guess at a test (a FreeRTOS `test_task` is not one); when
    // Unity's own summary counts no more tests than reported, the guess that disagrees is wrong.
    let summary = scan.summaries.last().copied();
    let counted = summary
        .is_some_and(|s| usize::try_from(s.tests).is_ok_and(|tests| tests <= scan.counted()));
    if counted && !unreported.is_empty() {
        notes.push(format!(
            "not taken as tests, as Unity's summary counts none beyond those reported: {}",
            unreported.join(", ")
        ));
        unreported.clear();
    }

    let mut cases = scan.reported.clone();
    cases.extend(unnamed_cases(scan.progress));
    let mut stopped_in = None;
    if let Some(stop) = stop {
        let blame = attribution::running_test(ctx, None, &reported_names, &unreported);
        let (mut case, note) = attribution::stopped_case(&blame, stop, ORDER);
        attribution::at_assertion(&mut case, dump.as_ref());
        notes.push(note);
        unreported.retain(|n| *n != blame.name);
        cases.push(case);
        stopped_in = Some(blame.name);
    }
    cases.extend(attribution::missing_cases(
        &unreported,
        stopped_in.as_deref(),
    ));

    let verdict = decide(
        capture.end,
        stop.is_some(),
        scan,
        &cases,
        summary,
        &mut notes,
    );
    let verdict = with_earlier_runs(&scan.earlier, &mut cases, verdict, &mut notes);
    TestResults {
        harness: HARNESS.to_string(),
        cases,
        summary,
        verdict,
        notes,
    }
}

/// Folds the earlier runs of a Unity Fixture repeat into the last run's result: a test that
/// failed in any run fails, with the run named in its message, and a passing result becomes a
/// failure. A test the last run passed is flaky, and the note says so.
fn with_earlier_runs(
    earlier: &[EarlierRun],
    cases: &mut Vec<TestCase>,
    verdict: Verdict,
    notes: &mut Vec<String>,
) -> Verdict {
    let Some(first) = earlier.first() else {
        return verdict;
    };
    let runs = first.run.1;
    notes.push(format!(
        "Unity Fixture repeated the run {runs} times (-r {runs}): the last run is checked as a \
         single run, and a test that failed in any run fails"
    ));
    let mut failed_earlier = false;
    for run in earlier {
        let (k, m) = run.run;
        let counted_failures = run
            .summary
            .is_some_and(|s| s.failures > 0 || s.ok == Some(false));
        if run.failed.is_empty() && !counted_failures {
            continue;
        }
        failed_earlier = true;
        if run.failed.is_empty() {
            notes.push(format!(
                "run {k} of {m} counted failures its lines did not name (its -v option names them)"
            ));
        }
        for failure in &run.failed {
            let message = format!(
                "run {k} of {m}: {}",
                failure.message.as_deref().unwrap_or("failed")
            );
            match cases.iter_mut().find(|c| c.name == failure.name) {
                Some(case) if case.status == CaseStatus::Fail => {}
                Some(case) => {
                    notes.push(format!(
                        "{} failed in run {k} of {m} and passed in the last: flaky",
                        failure.name
                    ));
                    case.status = CaseStatus::Fail;
                    case.message = Some(message);
                    case.file = failure.file.clone().or(case.file.take());
                    case.line = failure.line.or(case.line);
                }
                None => {
                    notes.push(format!(
                        "{} failed in run {k} of {m}; the last run showed it only as a passing \
                         mark: flaky",
                        failure.name
                    ));
                    // It passed unnamed in the last run: it is this case now, not a mark.
                    if let Some(at) = cases
                        .iter()
                        .rposition(|c| c.name.starts_with("(unnamed pass "))
                    {
                        cases.remove(at);
                    }
                    cases.push(TestCase {
                        message: Some(message),
                        ..failure.clone()
                    });
                }
            }
        }
    }
    if failed_earlier {
        let failed: Vec<&str> = cases
            .iter()
            .filter(|c| c.status == CaseStatus::Fail)
            .map(|c| c.name.as_str())
            .collect();
        notes.push(format!(
            "over all {runs} runs, {} of {} tests failed: {}",
            failed.len(),
            cases.len(),
            failed.join(", ")
        ));
    }
    match verdict {
        Verdict::Pass if failed_earlier => Verdict::Fail,
        other => other,
    }
}

fn decide(
    end: RunEnd,
    stopped: bool,
    scan: &Scan,
    cases: &[TestCase],
    summary: Option<Summary>,
    notes: &mut Vec<String>,
) -> Verdict {
    let tally = Tally::of(cases, scan.counted());
    if let Some(verdict) = attribution::environment_end(end, notes) {
        return verdict;
    }
    if stopped {
        tally.failure_notes(notes);
        return Verdict::Fail;
    }

    let mut consistent = true;
    if !scan.repeated.is_empty() {
        notes.push(format!(
            "tests reported more than once (did the image restart?): {}",
            scan.repeated.join(", ")
        ));
        consistent = false;
    }
    if scan.summaries.len() > 1 {
        notes.push(format!(
            "Unity printed {} summaries (did the image restart?); the last one is used",
            scan.summaries.len()
        ));
        consistent = false;
    }

    let Some(summary) = summary else {
        return tally.unfinished("Unity", "its summary", scan.saw_output, end, notes);
    };

    let reported = scan.counted();
    let unnamed_ignores = scan.progress.ignored;
    if scan.progress.ran + unnamed_ignores > 0 {
        notes.push(format!(
            "Unity Fixture showed {} passing and {unnamed_ignores} ignored tests only as progress \
             marks, without names (its -v option names them)",
            scan.progress.unnamed_passes()
        ));
    }
    let mut check = |what: &str, summary_says: u32, lines_say: usize| {
        if usize::try_from(summary_says).ok() != Some(lines_say) {
            notes.push(format!(
                "the summary counts {summary_says} {what} but the case lines show {lines_say}"
            ));
            consistent = false;
        }
    };
    check("tests", summary.tests, reported);
    check("failures", summary.failures, tally.failed.len());
    check("ignored", summary.ignored, tally.ignored.len());
    match summary.ok {
        None => {
            notes.push("Unity printed no OK or FAIL after its summary".to_string());
            consistent = false;
        }
        Some(ok) if ok != (summary.failures == 0) => {
            notes.push(format!(
                "Unity printed {} but its summary counts {} failures",
                if ok { "OK" } else { "FAIL" },
                summary.failures
            ));
            consistent = false;
        }
        Some(_) => {}
    }
    if let RunEnd::Exited { code } = end {
        // An exit status carries 8 bits: past 255 failures a fixture clamps the count to 255 (or
        // lets it wrap), so either is taken as agreeing.
        let failures = i64::from(summary.failures);
        let agrees = match i64::from(code) {
            code if failures <= 255 => code == failures,
            code => code == 255 || code == failures % 256,
        };
        if !agrees {
            notes.push(format!(
                "the image exited with code {code} but Unity counted {} failures (Unity \
                 fixtures exit with the failure count)",
                summary.failures
            ));
            consistent = false;
        }
    }

    if !consistent {
        return Verdict::Inconclusive;
    }
    tally.finished(reported, "ignored", notes)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{self, capture, notes, statuses};
    use super::*;
    use crate::capture::{ConsoleLine, Stream};
    use proptest::prelude::*;

    fn parse_with(text: &str, end: RunEnd, expected: &[&str], site: &[&str]) -> TestResults {
        test_support::parse_with(&UnityParser, text, end, expected, site)
    }

    fn parse(text: &str, end: RunEnd) -> TestResults {
        UnityParser.parse(&capture(text, end), &ParseContext::default())
    }

    const PASSING: &str = "\
test/test_crc.c:12:test_crc_empty:PASS
test/test_crc.c:18:test_crc_known_vector:PASS
test/test_crc.c:25:test_crc_error_counter:PASS

-----------------------
3 Tests 0 Failures 0 Ignored 
OK
";

    const FAILING: &str = "\
test/test_crc.c:12:test_crc_empty:PASS
test/test_crc.c:21:test_crc_known_vector:FAIL: Expected 0xCBF43926 Was 0xCBF43927
test/test_crc.c:30:test_crc_later:IGNORE: not on this board

-----------------------
3 Tests 1 Failures 1 Ignored 
FAIL
";

    #[test]
    fn passing_run_is_pass() {
        let r = parse(PASSING, RunEnd::Verdict);
        assert_eq!(r.harness, "unity");
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("test_crc_empty", CaseStatus::Pass),
                ("test_crc_known_vector", CaseStatus::Pass),
                ("test_crc_error_counter", CaseStatus::Pass),
            ]
        );
        assert_eq!(
            r.summary,
            Some(Summary {
                tests: 3,
                failures: 0,
                ignored: 0,
                ok: Some(true)
            })
        );
        assert_eq!(r.cases[1].file.as_deref(), Some("test/test_crc.c"));
        assert_eq!(r.cases[1].line, Some(18));
        assert_eq!(r.cases[1].message, None);
        assert_eq!(notes(&r), "all 3 tests passed");
    }

    #[test]
    fn failing_run_is_fail_with_messages() {
        let r = parse(FAILING, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("test_crc_empty", CaseStatus::Pass),
                ("test_crc_known_vector", CaseStatus::Fail),
                ("test_crc_later", CaseStatus::Ignore),
            ]
        );
        assert_eq!(
            r.cases[1].message.as_deref(),
            Some("Expected 0xCBF43926 Was 0xCBF43927")
        );
        assert_eq!(r.cases[2].message.as_deref(), Some("not on this board"));
        assert!(notes(&r).contains("1 of 3 reported tests failed: test_crc_known_vector"));
    }

    #[test]
    fn fail_and_ignore_without_message() {
        let text = "t.c:3:test_a:FAIL\nt.c:4:test_b:IGNORE\n\
                    -----------------------\n2 Tests 1 Failures 1 Ignored\nFAIL\n";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(
            statuses(&r),
            vec![("test_a", CaseStatus::Fail), ("test_b", CaseStatus::Ignore)]
        );
        assert_eq!(r.cases[0].message, None);
        assert_eq!(r.cases[1].message, None);
        assert_eq!(r.verdict, Verdict::Fail);
    }

    #[test]
    fn pass_with_message_and_ignored_tests_still_pass() {
        let text = "t.c:3:test_a:PASS: checked 12 vectors\nt.c:9:test_b:IGNORE: later\n\
                    -----------------------\n2 Tests 0 Failures 1 Ignored\nOK\n";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(r.cases[0].message.as_deref(), Some("checked 12 vectors"));
        assert!(notes(&r).contains("1 ignored: test_b"));
    }

    #[test]
    fn crlf_line_endings() {
        let r = parse(&FAILING.replace('\n', "\r\n"), RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        assert_eq!(
            r.cases[1].message.as_deref(),
            Some("Expected 0xCBF43926 Was 0xCBF43927")
        );
        assert_eq!(r.summary.and_then(|s| s.ok), Some(false));
    }

    #[test]
    fn test_output_before_the_result_on_the_same_line() {
        let text = "\
t.c:3:test_a:PASS
sensor says 42t.c:7:test_b:PASS
value=1:2:3 done t.c:11:test_c:FAIL: Expected 1 Was 2
x:PASS:FAILt.c:15:test_d:IGNORE
-----------------------
4 Tests 1 Failures 1 Ignored
FAIL
";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(
            statuses(&r),
            vec![
                ("test_a", CaseStatus::Pass),
                ("test_b", CaseStatus::Pass),
                ("test_c", CaseStatus::Fail),
                ("test_d", CaseStatus::Ignore),
            ]
        );
        // `42t.c` is repaired from the clean `t.c` of test_a.
        assert!(r.cases.iter().all(|c| c.file.as_deref() == Some("t.c")));
        assert_eq!(r.cases[2].message.as_deref(), Some("Expected 1 Was 2"));
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
    }

    #[test]
    fn messages_that_contain_status_words() {
        let line = "t.c:9:test_x:FAIL: status:FAIL: bad";
        let r = parse_result(line).unwrap();
        assert_eq!(r.name, "test_x");
        assert_eq!(r.status, CaseStatus::Fail);
        assert_eq!(r.message, Some("status:FAIL: bad"));

        let line = "t.c:9:test_y:FAIL: Expected \"a:PASS\" Was \"b\"";
        let r = parse_result(line).unwrap();
        assert_eq!(r.name, "test_y");
        assert_eq!(r.message, Some("Expected \"a:PASS\" Was \"b\""));
    }

    #[test]
    fn names_with_error_or_fail_are_judged_by_their_status() {
        let text = "t.c:1:test_error_counter:PASS\nt.c:2:test_fail_safe:PASS\n\
                    t.c:3:test_FAIL:PASS\nt.c:4:test_no_errors:FAIL: Expected 0 Was 1\n\
                    -----------------------\n4 Tests 1 Failures 0 Ignored\nFAIL\n";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(
            statuses(&r),
            vec![
                ("test_error_counter", CaseStatus::Pass),
                ("test_fail_safe", CaseStatus::Pass),
                ("test_FAIL", CaseStatus::Pass),
                ("test_no_errors", CaseStatus::Fail),
            ]
        );
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
    }

    #[test]
    fn windows_paths_keep_their_drive_letter() {
        let r = parse_result(r"C:\fw\test\test_crc.c:12:test_crc:FAIL: boom").unwrap();
        assert_eq!(r.file, r"C:\fw\test\test_crc.c");
        assert_eq!(r.line, 12);
        assert_eq!(r.name, "test_crc");
        assert!(r.clean_start);

        let r = parse_result("noise D:/fw/t.c:3:test_a:PASS").unwrap();
        assert_eq!(r.file, "D:/fw/t.c");
        assert!(!r.clean_start);
    }

    #[test]
    fn lines_that_are_not_results() {
        for line in [
            "",
            "PASS",
            "t.c:test_a:PASS",
            "t.c:12:test_a:PASSED",
            "t.c:x12:test_a:PASS",
            ":12:test_a:PASS",
            "t.c:12::PASS",
            "t.c:12: test_a:PASS",
            "t.c:12:test_a:FAILURE",
            "3 Tests 0 Failures 0 Ignored",
        ] {
            assert_eq!(parse_result(line), None, "{line:?}");
        }
    }

    #[test]
    fn nonce_and_host_lines_are_ignored() {
        let mut c = capture(&format!("fwfix-nonce: 8f3a\n{PASSING}"), RunEnd::Verdict);
        c.lines.insert(
            1,
            ConsoleLine {
                t_ms: 0,
                stream: Stream::Host,
                text: "t.c:1:test_host:FAIL: not firmware output".to_string(),
            },
        );
        let r = UnityParser.parse(&c, &ParseContext::default());
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(r.cases.len(), 3);
    }

    #[test]
    fn summary_test_count_disagreeing_is_inconclusive() {
        let text = "t.c:1:test_a:PASS\n-----------------------\n2 Tests 0 Failures 0 Ignored\nOK\n";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(
            notes(&r).contains("the summary counts 2 tests but the case lines show 1"),
            "{}",
            notes(&r)
        );
    }

    #[test]
    fn summary_failure_count_disagreeing_is_inconclusive() {
        let text = "t.c:1:test_a:FAIL: x\nt.c:2:test_b:PASS\n2 Tests 0 Failures 0 Ignored\nOK\n";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("the summary counts 0 failures but the case lines show 1"));
    }

    #[test]
    fn summary_ignored_count_disagreeing_is_inconclusive() {
        let text = "t.c:1:test_a:PASS\nt.c:2:test_b:PASS\n2 Tests 0 Failures 1 Ignored\nOK\n";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("the summary counts 1 ignored but the case lines show 0"));
    }

    #[test]
    fn ok_with_failures_is_inconclusive() {
        let text = "t.c:1:test_a:FAIL: x\n1 Tests 1 Failures 0 Ignored\nOK\n";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("Unity printed OK but its summary counts 1 failures"));
    }

    #[test]
    fn fail_without_failures_is_inconclusive() {
        let text = "t.c:1:test_a:PASS\n1 Tests 0 Failures 0 Ignored\nFAIL\n";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("Unity printed FAIL but its summary counts 0 failures"));
    }

    #[test]
    fn summary_without_final_word_is_inconclusive() {
        let text = "t.c:1:test_a:PASS\n1 Tests 0 Failures 0 Ignored\n";
        let r = parse(text, RunEnd::Exited { code: 0 });
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("no OK or FAIL after its summary"));
    }

    #[test]
    fn exit_code_must_match_the_failure_count() {
        let r = parse(FAILING, RunEnd::Exited { code: 1 });
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));

        let r = parse(PASSING, RunEnd::Exited { code: 0 });
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));

        let r = parse(FAILING, RunEnd::Exited { code: 0 });
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(
            notes(&r).contains("exited with code 0 but Unity counted 1 failures"),
            "{}",
            notes(&r)
        );

        let r = parse(PASSING, RunEnd::Exited { code: 3 });
        assert_eq!(r.verdict, Verdict::Inconclusive);
    }

    #[test]
    fn exit_code_past_255_failures_may_clamp_or_wrap() {
        let mut text: String = (0..300)
            .map(|i| format!("t.c:{i}:test_{i}:FAIL: x\n"))
            .collect();
        text.push_str("300 Tests 300 Failures 0 Ignored\nFAIL\n");
        for (code, verdict) in [
            (255, Verdict::Fail),
            (44, Verdict::Fail),
            (0, Verdict::Inconclusive),
        ] {
            let r = parse(&text, RunEnd::Exited { code });
            assert_eq!(r.verdict, verdict, "code {code}: {}", notes(&r));
        }
    }

    #[test]
    fn crash_is_blamed_on_the_test_at_the_crash_site() {
        let text = "t.c:1:test_a:PASS\nt.c:2:test_b:PASS\n";
        let r = parse_with(
            text,
            RunEnd::Crashed,
            &["test_a", "test_b", "test_c", "test_d", "test_e"],
            &["sensor_read", "test_d", "UnityDefaultTestRun", "main"],
        );
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(
            statuses(&r),
            vec![
                ("test_a", CaseStatus::Pass),
                ("test_b", CaseStatus::Pass),
                ("test_d", CaseStatus::Crash),
                ("test_c", CaseStatus::Missing),
                ("test_e", CaseStatus::Missing),
            ]
        );
        assert_eq!(
            r.cases[2].message.as_deref(),
            Some("no verdict: the image crashed while this test was running")
        );
        assert_eq!(
            r.cases[4].message.as_deref(),
            Some("never reported: the run stopped in test_d")
        );
        assert!(notes(&r).contains("the image crashed while test_d was running"));
    }

    #[test]
    fn crash_site_prefers_expected_tests_over_test_like_helpers() {
        let r = parse_with(
            "",
            RunEnd::Crashed,
            &["test_a", "test_b"],
            &["test_util_fill", "test_b", "main"],
        );
        assert_eq!(r.cases[0].name, "test_b");
        assert_eq!(r.cases[0].status, CaseStatus::Crash);
    }

    #[test]
    fn crash_site_without_expected_tests_uses_the_naming_convention() {
        let r = parse_with(
            "t.c:1:test_a:PASS\n",
            RunEnd::Crashed,
            &[],
            &["sensor_read", "test_sensor", "main"],
        );
        assert_eq!(
            statuses(&r),
            vec![
                ("test_a", CaseStatus::Pass),
                ("test_sensor", CaseStatus::Crash)
            ]
        );
    }

    #[test]
    fn crash_without_site_is_blamed_on_the_first_unreported_test() {
        let r = parse_with(
            "t.c:1:test_a:PASS\n",
            RunEnd::Crashed,
            &["test_a", "test_b", "test_c"],
            &["memcpy", "test_a"],
        );
        assert_eq!(
            statuses(&r),
            vec![
                ("test_a", CaseStatus::Pass),
                ("test_b", CaseStatus::Crash),
                ("test_c", CaseStatus::Missing),
            ]
        );
        assert!(r.cases[1]
            .message
            .as_deref()
            .unwrap()
            .contains("assumed: the first expected test not yet reported"));
    }

    #[test]
    fn crash_with_nothing_to_blame_is_a_run_case() {
        let r = parse_with(
            "t.c:1:test_a:PASS\n",
            RunEnd::Crashed,
            &["test_a"],
            &["main"],
        );
        assert_eq!(
            statuses(&r),
            vec![("test_a", CaseStatus::Pass), ("(run)", CaseStatus::Crash)]
        );
        assert_eq!(
            r.cases[1].message.as_deref(),
            Some("no verdict: the image crashed outside any known test")
        );
        assert_eq!(r.verdict, Verdict::Fail);
    }

    #[test]
    fn a_fault_dump_after_the_last_result_is_a_crash_not_a_hang() {
        // A board's fault handler printed its registers and spun: from outside, a timeout.
        let text =
            "t.c:1:test_a:PASS\nHardFault!\nPC: 0x00000238 LR: 0x00000211\nCFSR: 0x00000100\n";
        let r = parse_with(text, RunEnd::Timeout, &["test_a", "test_b", "test_c"], &[]);
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(
            statuses(&r),
            vec![
                ("test_a", CaseStatus::Pass),
                ("test_b", CaseStatus::Crash),
                ("test_c", CaseStatus::Missing),
            ]
        );
        assert!(notes(&r).contains("the console shows a fault dump from line 2: HardFault!"));

        // The same text from a test that then reports its result is just output.
        let text = format!("{text}t.c:2:test_b:PASS\n");
        let r = parse_with(&text, RunEnd::Timeout, &["test_a", "test_b", "test_c"], &[]);
        assert_eq!(r.cases[2].status, CaseStatus::Hang);
        assert!(!notes(&r).contains("fault dump"));
    }

    #[test]
    fn hang_marks_the_running_test_and_the_rest_missing() {
        let r = parse_with(
            "fwfix-nonce: 1\r\nt.c:1:test_a:FAIL: Expected 1 Was 2\r\nprogress...",
            RunEnd::Timeout,
            &["test_a", "test_b", "test_c"],
            &[],
        );
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(
            statuses(&r),
            vec![
                ("test_a", CaseStatus::Fail),
                ("test_b", CaseStatus::Hang),
                ("test_c", CaseStatus::Missing),
            ]
        );
        assert!(r.cases[1].message.as_deref().unwrap().contains("hung"));
        assert!(notes(&r).contains("1 of 1 reported tests failed: test_a"));
    }

    #[test]
    fn output_that_stops_without_a_summary() {
        let r = parse_with(
            "t.c:1:test_a:PASS\n",
            RunEnd::Exited { code: 0 },
            &["test_a", "test_b"],
            &[],
        );
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert_eq!(r.cases[1].status, CaseStatus::Missing);
        assert!(notes(&r).contains("exited with code 0 before Unity printed its summary"));

        let r = parse("t.c:1:test_a:PASS\n", RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("stopped before Unity printed its summary"));

        // A failure line is evidence enough even when the summary never came.
        let r = parse("t.c:1:test_a:FAIL: x\n", RunEnd::Exited { code: 1 });
        assert_eq!(r.verdict, Verdict::Fail);
    }

    #[test]
    fn no_output_at_all_is_inconclusive() {
        let r = parse("", RunEnd::Exited { code: 0 });
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("printed no Unity output"));
    }

    #[test]
    fn zero_tests_is_inconclusive() {
        let r = parse("0 Tests 0 Failures 0 Ignored\nOK\n", RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("reported no tests"));
    }

    /// A `test_*` function is a guess at a test; Unity's summary is its own count. A FreeRTOS
    /// `test_task` that never reported does not fail a run whose summary adds up.
    #[test]
    fn unreported_test_functions_beyond_unity_s_count_are_not_missing() {
        let r = parse_with(
            PASSING,
            RunEnd::Verdict,
            &["test_task", "test_crc_empty"],
            &[],
        );
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(r.cases.len(), 3);
        assert!(notes(&r).contains("not taken as tests"), "{}", notes(&r));
        assert!(notes(&r).contains("test_task"));
    }

    /// When Unity counts more tests than reported, the unreported functions are the likely
    /// gap: they are listed as MISSING, and the disagreement leaves the run inconclusive.
    #[test]
    fn expected_tests_fill_a_summary_that_counts_more_than_reported() {
        let text = PASSING.replace("3 Tests", "4 Tests");
        let r = parse_with(
            &text,
            RunEnd::Verdict,
            &["test_crc_empty", "test_gone"],
            &[],
        );
        assert_eq!(r.cases[3].name, "test_gone");
        assert_eq!(r.cases[3].status, CaseStatus::Missing);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("the summary counts 4 tests but the case lines show 3"));
    }

    #[test]
    fn runner_death_is_an_environment_error() {
        let r = parse_with(
            "t.c:1:test_a:PASS\n",
            RunEnd::RunnerDied {
                signal: Some(9),
                code: None,
            },
            &["test_a", "test_b"],
            &[],
        );
        assert_eq!(r.verdict, Verdict::EnvError);
        assert_eq!(r.cases[1].status, CaseStatus::Missing);
        assert!(notes(&r).contains("killed by signal 9"));
    }

    #[test]
    fn cancelled_is_inconclusive() {
        let r = parse(PASSING, RunEnd::Cancelled);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("cancelled"));
    }

    #[test]
    fn repeated_output_after_a_restart_is_inconclusive() {
        let text = format!("t.c:1:test_crc_empty:PASS\n{PASSING}");
        let r = parse(&text, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("reported more than once"));
        assert_eq!(r.cases.len(), 3);

        let r = parse(&format!("{PASSING}{PASSING}"), RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert!(notes(&r).contains("2 summaries"));
    }

    #[test]
    fn truncated_capture_is_noted() {
        let mut c = capture(PASSING, RunEnd::Verdict);
        c.truncated = true;
        let r = UnityParser.parse(&c, &ParseContext::default());
        assert!(notes(&r).contains("truncated"));
    }

    /// Recorded from the fwtests fixture's test_crc image on QEMU mps2-an385; it exited with 1.
    const FWTESTS_CRC: &str = "\
fwfix-nonce: abc123
tests/test_crc.c:11:test_crc8_known_vector:PASS
tests/test_crc.c:16:test_crc8_empty_input_is_zero:PASS
tests/test_crc.c:23:test_crc16_known_vector:FAIL: Expected 0x29B1 Was 0x31C3
tests/test_crc.c:26:test_crc32_known_vector:PASS
tests/test_crc.c:31:test_crc32_single_byte:PASS
tests/test_crc.c:40:test_crc16_xmodem_variant:IGNORE: CRC-16/XMODEM is not provided yet

-----------------------
6 Tests 1 Failures 1 Ignored 
FAIL
";

    #[test]
    fn recorded_fixture_failure() {
        let r = parse(FWTESTS_CRC, RunEnd::Exited { code: 1 });
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        assert_eq!(r.cases.len(), 6);
        assert_eq!(r.cases[2].name, "test_crc16_known_vector");
        assert_eq!(r.cases[2].file.as_deref(), Some("tests/test_crc.c"));
        assert_eq!(r.cases[2].line, Some(23));
        assert_eq!(
            r.cases[2].message.as_deref(),
            Some("Expected 0x29B1 Was 0x31C3")
        );
        assert_eq!(r.cases[5].status, CaseStatus::Ignore);
        assert_eq!(
            r.summary,
            Some(Summary {
                tests: 6,
                failures: 1,
                ignored: 1,
                ok: Some(false)
            })
        );
        let fired = feed(&mut UnityStream::default(), FWTESTS_CRC);
        assert_eq!(fired.iter().filter(|f| **f).count(), 1);
        assert_eq!(fired.last(), Some(&true));
    }

    #[test]
    fn recorded_fixture_crash() {
        // test_sensor calls through a bad function pointer inside an inlined helper; the stacked
        // PC is 0xfffffffe and LR points into calibrate, inlined in sensor_sample. No test is on
        // that list, so the first expected test not yet reported is blamed.
        let text = "fwfix-nonce: abc123\n\
                    tests/test_sensor.c:58:test_sensor_converts_raw_reading:PASS\n\
                    tests/test_sensor.c:70:test_sensor_applies_calibration:PASS\n";
        let r = parse_with(
            text,
            RunEnd::Crashed,
            &[
                "test_sensor_converts_raw_reading",
                "test_sensor_applies_calibration",
                "test_sensor_uncalibrated_unit_uses_raw_reading",
                "test_sensor_reports_bus_error",
            ],
            &["calibrate", "sensor_sample"],
        );
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(
            statuses(&r),
            vec![
                ("test_sensor_converts_raw_reading", CaseStatus::Pass),
                ("test_sensor_applies_calibration", CaseStatus::Pass),
                (
                    "test_sensor_uncalibrated_unit_uses_raw_reading",
                    CaseStatus::Crash
                ),
                ("test_sensor_reports_bus_error", CaseStatus::Missing),
            ]
        );
    }

    /// Unity Fixture's default output: a mark per test, a line only for a failure, the marks of
    /// the tests before it stuck to its path.
    const FIXTURE_DOTS_FAIL: &str = "\
Unity test run 1 of 1
...tests/test_fixture.c:20:TEST(fletcher, broken):FAIL: Expected 1 Was 0


-----------------------
3 Tests 1 Failures 0 Ignored 
FAIL
";

    /// The same run with `-v`.
    const FIXTURE_VERBOSE_FAIL: &str = "\
Unity test run 1 of 1
TEST(fletcher, abcde) PASS
TEST(fletcher, abcdef) PASS
TEST(fletcher, broken)tests/test_fixture.c:20::FAIL: Expected 1 Was 0

-----------------------
3 Tests 1 Failures 0 Ignored 
FAIL
";

    /// A FreeRTOS `configASSERT` in the running test: its handler prints the site and spins, so
    /// the run times out, or ends once the console settles after it; either way the test crashed
    /// at the assertion, not hung.
    #[test]
    fn a_firmware_assertion_stops_the_running_test_at_its_site() {
        for end in [RunEnd::Timeout, RunEnd::Stopped { quiet_ms: 500 }] {
            firmware_assertion_stops_the_running_test_at_its_site(end);
        }
    }

    fn firmware_assertion_stops_the_running_test_at_its_site(end: RunEnd) {
        let text = "test/t.c:3:test_a:PASS\nheartbeat 1\nASSERT! Line 97, file tests/test_main.c\n";
        let r = parse_with(text, end, &["test_a", "test_b"], &[]);
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        let b = r
            .cases
            .iter()
            .find(|c| c.name == "test_b")
            .cloned()
            .unwrap();
        assert_eq!(b.status, CaseStatus::Crash);
        assert_eq!(
            (b.file.as_deref(), b.line),
            (Some("tests/test_main.c"), Some(97))
        );
        assert!(b
            .message
            .as_deref()
            .unwrap_or_default()
            .starts_with("ASSERT! Line 97, file tests/test_main.c ("));
        assert!(notes(&r).contains("the firmware's own assertion failing at line 3"));
        // A test that reports its result after printing assertion-like text did not stop there.
        let text = "ASSERT! Line 5, file t.c\ntest/t.c:3:test_a:PASS\n\n-----------------------\n\
                    1 Tests 0 Failures 0 Ignored \nOK\n";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
    }

    /// Unity Fixture's `-r 3 -v`: each run announced and closed on its own; the second run's
    /// `broken` failed where the others passed it.
    const FIXTURE_REPEAT_FLAKY: &str = "\
Unity test run 1 of 3
TEST(fletcher, abcde) PASS
TEST(fletcher, broken) PASS

-----------------------
2 Tests 0 Failures 0 Ignored 
OK
Unity test run 2 of 3
TEST(fletcher, abcde) PASS
TEST(fletcher, broken)tests/test_fixture.c:20::FAIL: Expected 1 Was 0

-----------------------
2 Tests 1 Failures 0 Ignored 
FAIL
Unity test run 3 of 3
TEST(fletcher, abcde) PASS
TEST(fletcher, broken) PASS

-----------------------
2 Tests 0 Failures 0 Ignored 
OK
";

    #[test]
    fn a_repeated_fixture_run_ends_at_its_last_word_and_counts_each_test_once() {
        let fired = feed(&mut UnityStream::default(), FIXTURE_REPEAT_FLAKY);
        assert_eq!(fired.iter().filter(|f| **f).count(), 1);
        assert_eq!(fired.last(), Some(&true));

        let passing = FIXTURE_REPEAT_FLAKY
            .replace(
                "TEST(fletcher, broken)tests/test_fixture.c:20::FAIL: Expected 1 Was 0",
                "TEST(fletcher, broken) PASS",
            )
            .replace(
                "2 Tests 1 Failures 0 Ignored \nFAIL",
                "2 Tests 0 Failures 0 Ignored \nOK",
            );
        let r = parse(&passing, RunEnd::Exited { code: 0 });
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("TEST(fletcher, abcde)", CaseStatus::Pass),
                ("TEST(fletcher, broken)", CaseStatus::Pass),
            ]
        );
    }

    #[test]
    fn a_test_that_failed_in_one_run_of_a_repeat_fails_and_is_called_flaky() {
        // The exit code is the last run's failure count: 0.
        let r = parse(FIXTURE_REPEAT_FLAKY, RunEnd::Exited { code: 0 });
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        let broken = r.cases.iter().find(|c| c.name == "TEST(fletcher, broken)");
        let broken = broken
            .cloned()
            .map(|c| (c.status, c.message, c.file, c.line));
        assert_eq!(
            broken,
            Some((
                CaseStatus::Fail,
                Some("run 2 of 3: Expected 1 Was 0".to_string()),
                Some("tests/test_fixture.c".to_string()),
                Some(20)
            ))
        );
        assert_eq!(r.cases.len(), 2);
        assert!(notes(&r).contains("failed in run 2 of 3 and passed in the last: flaky"));

        // Default output: the last run shows the test only as a mark.
        let dots =
            "Unity test run 1 of 2\n.tests/t.c:9:TEST(ring, full):FAIL: Expected 4 Was 3\n\n\
                    -----------------------\n2 Tests 1 Failures 0 Ignored \nFAIL\n\
                    Unity test run 2 of 2\n..\n\n-----------------------\n\
                    2 Tests 0 Failures 0 Ignored \nOK\n";
        let r = parse(dots, RunEnd::Exited { code: 0 });
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("(unnamed pass 1)", CaseStatus::Pass),
                ("TEST(ring, full)", CaseStatus::Fail),
            ]
        );
    }

    #[test]
    fn a_restarted_fixture_run_is_still_a_restart() {
        let once = "Unity test run 1 of 1\nTEST(a, b) PASS\n\n-----------------------\n\
                    1 Tests 0 Failures 0 Ignored \nOK\n";
        let r = parse(&format!("{once}{once}"), RunEnd::Exited { code: 0 });
        assert_eq!(r.verdict, Verdict::Inconclusive, "{}", notes(&r));
    }

    #[test]
    fn unity_fixture_marks_count_the_unnamed_passes() {
        let r = parse(
            "Unity test run 1 of 1\n.!.\n\n-----------------------\n\
             3 Tests 0 Failures 1 Ignored \nOK\n",
            RunEnd::Verdict,
        );
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("(unnamed pass 1)", CaseStatus::Pass),
                ("(unnamed pass 2)", CaseStatus::Pass),
                ("(unnamed ignore 1)", CaseStatus::Ignore),
            ]
        );
        assert!(notes(&r).contains("2 passing and 1 ignored tests only as progress marks"));

        let r = parse(FIXTURE_DOTS_FAIL, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("TEST(fletcher, broken)", CaseStatus::Fail),
                ("(unnamed pass 1)", CaseStatus::Pass),
                ("(unnamed pass 2)", CaseStatus::Pass),
            ]
        );
        assert_eq!(r.cases[0].file.as_deref(), Some("tests/test_fixture.c"));
        assert_eq!(r.cases[0].line, Some(20));
        assert_eq!(r.cases[0].message.as_deref(), Some("Expected 1 Was 0"));
        assert!(notes(&r).contains("1 of 3 reported tests failed: TEST(fletcher, broken)"));
    }

    #[test]
    fn unity_fixture_verbose_lines_name_every_test() {
        let r = parse(FIXTURE_VERBOSE_FAIL, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Fail, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("TEST(fletcher, abcde)", CaseStatus::Pass),
                ("TEST(fletcher, abcdef)", CaseStatus::Pass),
                ("TEST(fletcher, broken)", CaseStatus::Fail),
            ]
        );
        assert_eq!(r.cases[2].file.as_deref(), Some("tests/test_fixture.c"));
        assert_eq!(r.cases[2].message.as_deref(), Some("Expected 1 Was 0"));
        assert_eq!((r.cases[0].file.as_deref(), r.cases[0].line), (None, None));
        assert!(!notes(&r).contains("progress marks"));

        let text = "Unity test run 1 of 1\nTEST(ring, fifo) PASS (2 ms)\n\
                    IGNORE_TEST(ring, later)\n\
                    TEST(ring, full)tests/test_ring.c:31::IGNORE: not yet\n\n\
                    -----------------------\n3 Tests 0 Failures 2 Ignored \nOK\n";
        let r = parse(text, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(
            statuses(&r),
            vec![
                ("TEST(ring, fifo)", CaseStatus::Pass),
                ("TEST(ring, later)", CaseStatus::Ignore),
                ("TEST(ring, full)", CaseStatus::Ignore),
            ]
        );
        assert_eq!(r.cases[2].message.as_deref(), Some("not yet"));
    }

    /// Marks count only after Unity Fixture announced its run; `TEST(` text that is not a
    /// result is output.
    #[test]
    fn fixture_shapes_outside_a_fixture_run_are_output() {
        let r = parse(
            "...\n-----------------------\n3 Tests 0 Failures 0 Ignored\nOK\n",
            RunEnd::Verdict,
        );
        assert_eq!(r.verdict, Verdict::Inconclusive);
        for line in [
            "TEST(a b) PASS",
            "TEST(a, b)",
            "TEST(a, b)PASS",
            "IGNORE_TEST(a, b) x",
        ] {
            assert_eq!(parse_fixture_verbose(line), None, "{line}");
        }
    }

    fn feed(detector: &mut dyn EndDetector, text: &str) -> Vec<bool> {
        text.lines()
            .map(|l| detector.read_line(l).verdict)
            .collect()
    }

    #[test]
    fn detector_fires_on_ok_or_fail_after_the_summary() {
        let fired = feed(&mut UnityStream::default(), PASSING);
        assert_eq!(fired.iter().filter(|f| **f).count(), 1);
        assert_eq!(fired.last(), Some(&true));

        let fired = feed(&mut UnityStream::default(), &FAILING.replace('\n', "\r\n"));
        assert_eq!(fired.last(), Some(&true));
    }

    #[test]
    fn the_lines_unity_reads_are_kept() {
        let mut d = UnityStream::default();
        assert!(d.read_line("test/t.c:3:test_a:PASS\r").keep);
        assert!(d.read_line("t.c:4:test_b:FAIL: Expected 1 Was 2").keep);
        assert!(d.read_line("3 Tests 0 Failures 0 Ignored").keep);
        assert!(d.read_line("OK").keep);
        assert!(!d.read_line("sensor: 17").keep);
        assert!(!d.read_line("").keep);
    }

    #[test]
    fn detector_ignores_ok_and_fail_elsewhere() {
        let parser = UnityParser;
        let mut d = parser.stream();
        assert!(!d.read_line("OK").verdict);
        assert!(!d.read_line("FAIL").verdict);
        assert!(!d.read_line("t.c:3:FAIL:PASS").verdict);
        assert!(!d.read_line("t.c:4:OK:PASS").verdict);
        assert!(!d.read_line("3 Tests 0 Failures 0 Ignored").verdict);
        assert!(!d.read_line("").verdict);
        assert!(d.read_line("OK\r").verdict);
    }

    /// Another task's log may come between the summary and the verdict word, a bounded number
    /// of lines; a Unity line in between means the summary was not the last one.
    #[test]
    fn detector_takes_the_verdict_after_a_few_interleaved_lines() {
        let mut d = UnityStream::default();
        assert!(!d.read_line("1 Tests 0 Failures 0 Ignored").verdict);
        assert!(!d.read_line("[net] link up").verdict);
        assert!(d.read_line("OK").verdict);

        let mut d = UnityStream::default();
        assert!(!d.read_line("1 Tests 0 Failures 0 Ignored").verdict);
        assert!(!d.read_line("t.c:1:test_a:PASS").verdict);
        assert!(!d.read_line("OK").verdict);
        assert!(!d.read_line("2 Tests 1 Failures 0 Ignored ").verdict);
        assert!(d.read_line("FAIL").verdict);

        let mut d = UnityStream::default();
        assert!(!d.read_line("1 Tests 0 Failures 0 Ignored").verdict);
        for _ in 0..INTERLEAVED {
            assert!(!d.read_line("heartbeat").verdict);
        }
        assert!(d.read_line("OK").verdict);

        let mut d = UnityStream::default();
        assert!(!d.read_line("1 Tests 0 Failures 0 Ignored").verdict);
        for _ in 0..=INTERLEAVED {
            assert!(!d.read_line("heartbeat").verdict);
        }
        assert!(!d.read_line("OK").verdict);
    }

    /// A logger that prints after every line (`[net] link up`) does not hide Unity's verdict.
    #[test]
    fn a_log_line_between_summary_and_verdict_still_passes() {
        let text = PASSING
            .lines()
            .flat_map(|line| [line, "[net] link up"])
            .map(|line| format!("{line}\n"))
            .collect::<String>();
        let r = parse(&text, RunEnd::Verdict);
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(r.summary.and_then(|s| s.ok), Some(true));
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC*") {
            let _ = parse(&text, RunEnd::Verdict);
            let mut d = UnityStream::default();
            let _ = d.read_line(&text).verdict;
        }

        #[test]
        fn printed_results_parse_back(
            noise in "[ -~]{0,20}",
            file in "[a-z_/]{1,12}\\.c",
            line in 1u32..100_000,
            name in "test_[a-z_0-9]{1,20}",
            status in prop_oneof![
                Just(CaseStatus::Pass), Just(CaseStatus::Fail), Just(CaseStatus::Ignore)
            ],
            message in "[ -9;-~]{0,30}",
        ) {
            let word = match status {
                CaseStatus::Pass => "PASS",
                CaseStatus::Fail => "FAIL",
                _ => "IGNORE",
            };
            let text = format!("{noise}{file}:{line}:{name}:{word}: {message}");
            let r = parse_result(&text).unwrap();
            prop_assert_eq!(r.name, name.as_str());
            prop_assert_eq!(r.status, status);
            prop_assert_eq!(r.line, line);
            prop_assert!(r.file.ends_with(file.as_str()));
            let message = message.trim();
            prop_assert_eq!(r.message, (!message.is_empty()).then_some(message));
        }
    }

    /// More results than a capture keeps in memory: the streamed parse still has every case,
    /// where the kept lines alone would have lost most of them.
    #[test]
    fn every_case_of_a_console_longer_than_the_capture_is_read() {
        const N: usize = 300_000;
        let lines = (0..N)
            .map(|i| format!("test/test_many.c:{}:test_{i:06}:PASS", i + 1))
            .chain(
                [
                    "-----------------------",
                    &format!("{N} Tests 0 Failures 0 Ignored"),
                    "OK",
                ]
                .map(str::to_string),
            );
        let (r, kept) = test_support::stream(&UnityParser, lines, RunEnd::Verdict);
        assert!(kept.truncated);
        assert_eq!(r.verdict, Verdict::Pass, "{}", notes(&r));
        assert_eq!(r.cases.len(), N);
        assert!(r.cases.iter().all(|c| c.status == CaseStatus::Pass));
        assert_eq!(r.cases[N - 1].name, format!("test_{:06}", N - 1));
        assert_eq!(r.summary.map(|s| s.tests), Some(N as u32));
        let from_kept = UnityParser.parse(&kept, &ParseContext::default());
        assert!(from_kept.cases.len() < N, "{}", from_kept.cases.len());
    }
}
