//! Test-output parsers (one per harness), the result model, and verdicts.
//!
//! A parser turns one attempt's console into [`TestResults`]: the cases the harness reported, its
//! summary, and a verdict with the reasons for it. It streams: a [`HarnessStream`] reads the live
//! UART lines one by one as the backend captures them (it is the attempt's end detector too), so
//! however long the console, every line the harness needs is read while memory stays bounded;
//! when the attempt is over it is finished with how the run ended. Parsers are pure: they read
//! lines, the run's end and the [`ParseContext`] the orchestrator hands them, and must not touch
//! files, the clock or the DUT. Symbolising a crash is the caller's job; a parser only needs the function names at the
//! crash site to say which test was running. [`crash_dump`] reads a fault dump the firmware
//! printed into the same snapshot a backend would have read, for the caller to symbolise.
//!
//! Harnesses: [`unity`], [`ztest`] (Zephyr, as Twister reads it) and [`regex_harness`]
//! (patterns from the profile, like Twister's console harness). What they share lives in
//! `lines` (cleaning a console line), `attribution` (which test a crash or hang belongs to) and
//! `common` (the notes and verdict steps of the counting harnesses).

mod attribution;
mod common;
pub mod crash_dump;
mod lines;
pub mod model;
pub mod regex_harness;
#[cfg(test)]
mod test_support;
pub mod unity;
pub mod ztest;

pub use model::{CaseStatus, Summary, TestCase, TestResults, Verdict, RUN_CASE};
pub use regex_harness::{RegexParser, RegexStream};
pub use unity::{UnityParser, UnityStream};
pub use ztest::{ZtestParser, ZtestStream};

use crate::capture::nonce::{Nonce, NonceCheck};
use crate::capture::{Capture, EndDetector, FaultSnapshot, LineRead};
use crate::config::{Harness, RegexSpec};
use std::sync::{Arc, Mutex, PoisonError};

/// One harness's console format: how to read an attempt's console, line by line, into results.
pub trait HarnessParser: Send + Sync {
    /// The harness name as it appears in results and reports, e.g. `unity`.
    fn name(&self) -> &'static str;
    /// A fresh parse for one attempt, to be fed its live UART lines as they arrive.
    fn stream(&self) -> Box<dyn HarnessStream>;
    /// Parses a whole capture: its live UART lines fed in order, then finished. A capture keeps
    /// only a bounded part of a long console, so a live attempt is parsed with [`LiveParse`]
    /// instead; this reads what a capture kept (a resumed run, an interrupted attempt, tests).
    fn parse(&self, capture: &Capture, ctx: &ParseContext) -> TestResults {
        let mut stream = self.stream();
        for line in capture.uart_lines() {
            stream.read_line(line);
        }
        stream.finish(capture, ctx)
    }
}

/// One attempt's parse as its console arrives. It is the attempt's [`EndDetector`] too: it reads
/// every live UART line in order (also those after the final verdict, until the attempt ends)
/// and says when the harness has printed its final word. Its memory is bounded by what the
/// harness must remember (the cases so far, the running test, summaries, the first fault dump),
/// never by the length of the console.
pub trait HarnessStream: EndDetector {
    /// The first fault dump the console showed so far, for a caller to symbolise when the
    /// backend could not read the core.
    fn fault_dump(&self) -> Option<FaultSnapshot>;
    /// The results of the lines read, given how the attempt ended: of `capture` only its end and
    /// whether it was truncated are read, never its lines. The stream is spent afterwards.
    fn finish(&mut self, capture: &Capture, ctx: &ParseContext) -> TestResults;
}

/// A harness's parse shared between the backend that feeds it (as the attempt's end detector)
/// and the orchestrator that finishes it when the attempt is over.
#[derive(Clone)]
pub struct LiveParse(Arc<Mutex<Live>>);

struct Live {
    stream: Box<dyn HarnessStream>,
    /// A required nonce whose line has not come yet: the backend holds back every line before it
    /// as stale, and its own line is not output either ([`Capture::uart`] starts after it), so
    /// the parse counts lines from the same place as when it reads the capture.
    nonce: Option<Nonce>,
}

impl LiveParse {
    /// A parse of the attempt that hands out `nonce`.
    pub fn new(stream: Box<dyn HarnessStream>, nonce: Option<&Nonce>) -> LiveParse {
        let nonce = nonce.filter(|n| n.check == NonceCheck::Required).cloned();
        LiveParse(Arc::new(Mutex::new(Live { stream, nonce })))
    }

    /// The end detector to hand the backend: it feeds this parse.
    pub fn detector(&self) -> Box<dyn EndDetector> {
        Box::new(self.clone())
    }

    fn with<T>(&self, f: impl FnOnce(&mut Live) -> T) -> T {
        // A panic elsewhere while the lock was held leaves the parse as it was: still readable.
        let mut live = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut live)
    }

    /// See [`HarnessStream::fault_dump`].
    pub fn fault_dump(&self) -> Option<FaultSnapshot> {
        self.with(|l| l.stream.fault_dump())
    }

    /// See [`HarnessStream::finish`].
    pub fn finish(&self, capture: &Capture, ctx: &ParseContext) -> TestResults {
        self.with(|l| l.stream.finish(capture, ctx))
    }
}

impl EndDetector for LiveParse {
    fn read_line(&mut self, line: &str) -> LineRead {
        self.with(|l| {
            if l.nonce.as_ref().is_some_and(|n| n.is_its_line(line)) {
                l.nonce = None;
                return LineRead::default();
            }
            l.stream.read_line(line)
        })
    }
}

/// What the orchestrator knows about an attempt beyond its console text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParseContext {
    /// Test names expected, in run order (from the ELF or the baseline run).
    pub expected: Vec<String>,
    /// Names of the functions at the crash or hang site, innermost first.
    pub site_functions: Vec<String>,
}

/// The parser for a profile's `[test] harness`. Every harness a profile can name has one, and a
/// regex harness's patterns were compiled when the profile was loaded, so this cannot fail.
pub fn parser_for(harness: &Harness) -> Box<dyn HarnessParser> {
    match harness {
        Harness::Unity => Box::new(UnityParser),
        Harness::Ztest => Box::new(ZtestParser),
        Harness::Regex(spec) => Box::new(RegexParser::new(RegexSpec::clone(spec))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::settle::Settle;
    use crate::capture::RunEnd;
    use crate::config::{Pattern, RegexMode};
    use std::time::Duration;

    /// The parse a backend feeds through its end detector is the one the orchestrator finishes:
    /// it ends the run at Unity's final word, reads the lines after it, and gives what parsing
    /// the whole capture gives.
    #[test]
    fn a_live_parse_fed_as_the_end_detector_gives_the_capture_s_results() {
        let text = "t.c:1:test_a:PASS\nt.c:2:test_b:FAIL: no\n\
                    -----------------------\n2 Tests 1 Failures 0 Ignored\nFAIL\nt.c:3:test_c:PASS\n";
        let capture = test_support::capture(text, RunEnd::Verdict);
        let live = LiveParse::new(UnityParser.stream(), None);
        let mut detector = live.detector();
        let read: Vec<LineRead> = capture
            .uart_lines()
            .map(|line| detector.read_line(line))
            .collect();
        let fired: Vec<bool> = read.iter().map(|r| r.verdict).collect();
        assert_eq!(fired, [false, false, false, false, true, false]);
        // Every line but the separator is Unity's, the last one after the final word too.
        let kept: Vec<bool> = read.iter().map(|r| r.keep).collect();
        assert_eq!(kept, [true, true, false, true, true, true]);
        drop(detector);
        let ctx = ParseContext::default();
        let streamed = live.finish(&capture, &ctx);
        assert_eq!(streamed, UnityParser.parse(&capture, &ctx));
        // The result printed after the final word is read: Unity counted two tests, three came.
        assert_eq!(streamed.cases.len(), 3);
        assert_eq!(streamed.verdict, Verdict::Inconclusive);
    }

    /// A required nonce's own line is not output: the live parse counts lines from after it, as
    /// a parse of the capture does.
    #[test]
    fn a_live_parse_counts_lines_from_after_a_required_nonce() {
        let nonce = Nonce::fresh(NonceCheck::Required);
        let text = format!("fwfix-nonce: {}\nboot\nASSERT failed\n", nonce.value);
        let mut capture = test_support::capture(&text, RunEnd::Verdict);
        capture.nonce = Some(crate::capture::nonce::NonceRecord {
            value: nonce.value.clone(),
            check: NonceCheck::Required,
            seen: true,
            stale_lines: 0,
        });
        let spec = RegexSpec {
            mode: RegexMode::OneLine,
            ordered: true,
            patterns: vec![Pattern::new("Hello").unwrap()],
            fail_patterns: vec![Pattern::new("ASSERT").unwrap()],
            crash_patterns: Vec::new(),
            case_name: "console".to_string(),
        };
        let parser = RegexParser::new(spec);
        let live = LiveParse::new(parser.stream(), Some(&nonce));
        let mut detector = live.detector();
        // The backend feeds the nonce line (it is live), never a stale line before it.
        let fired: Vec<bool> = text
            .lines()
            .map(|l| detector.read_line(l).verdict)
            .collect();
        assert_eq!(fired, [false, false, true]);
        let ctx = ParseContext::default();
        let streamed = live.finish(&capture, &ctx);
        assert_eq!(streamed, parser.parse(&capture, &ctx));
        assert!(
            streamed
                .notes
                .iter()
                .any(|n| n.contains("matched line 2: ASSERT")),
            "{:?}",
            streamed.notes
        );
    }

    /// Feeds `lines` (each with its arrival time in ms) through `parser`'s stream and a settle
    /// window, as a backend does: the time the window ended the attempt, if it did before the
    /// last line, and whether the harness gave its final word.
    fn settle_over(parser: &dyn HarnessParser, lines: &[(u64, &str)]) -> (Option<u64>, bool) {
        let mut stream = parser.stream();
        let mut settle = Settle::default();
        let mut verdict = false;
        for &(t, line) in lines {
            let at = Duration::from_millis(t);
            if let Some(end) = settle.deadline().filter(|d| *d <= at) {
                return (Some(end.as_millis() as u64), verdict);
            }
            let read = stream.read_line(line);
            verdict |= read.verdict;
            settle.line(read, at);
        }
        (settle.deadline().map(|d| d.as_millis() as u64), verdict)
    }

    /// ztest's expected assertion (the error hook catches it): the framework prints on, over a
    /// pause shorter than the quiet period and for longer than the window's cap, and reaches its
    /// final word.
    #[test]
    fn a_ztest_run_that_survives_an_assertion_is_not_cut_short() {
        let lines = [
            (0, "Running TESTSUITE error_hook"),
            (10, "START - test_catch_assert_fail"),
            (
                20,
                "ASSERTION FAIL [0] @ WEST_TOPDIR/zephyr/tests/ztest/error_hook/src/main.c:100",
            ),
            (21, "\tintended assert"),
            (400, "Caught assert failed"),
            (410, "Assert error expected as part of test case."),
            (420, " PASS - test_catch_assert_fail in 0.400 seconds"),
            (1500, "START - test_slow"),
            (3900, " PASS - test_slow in 2.400 seconds"),
            (3910, "TESTSUITE error_hook succeeded"),
            (3920, "PROJECT EXECUTION SUCCESSFUL"),
        ];
        let (ended, verdict) = settle_over(&ZtestParser, &lines);
        assert_eq!(ended, None);
        assert!(verdict);
    }

    /// Unity reading a test that checks its firmware's assert hook: the hook prints newlib's
    /// line and returns, and Unity goes on.
    #[test]
    fn a_unity_run_that_prints_an_assertion_and_goes_on_is_not_cut_short() {
        let lines = [
            (0, "test/t.c:3:test_a:PASS"),
            (
                100,
                "assertion \"n > 0\" failed: file \"src/queue.c\", line 12",
            ),
            (450, "test/t.c:9:test_assert_hook:PASS"),
            (3000, "test/t.c:14:test_slow:PASS"),
            (3010, "-----------------------"),
            (3020, "3 Tests 0 Failures 0 Ignored "),
            (3030, "OK"),
        ];
        let (ended, verdict) = settle_over(&UnityParser, &lines);
        assert_eq!(ended, None);
        assert!(verdict);
    }

    /// The same assertion with nothing after it: the window ends the attempt half a second on.
    #[test]
    fn an_assertion_and_then_silence_settles() {
        let lines = [
            (0, "START - test_catch_assert_fail"),
            (
                20,
                "ASSERTION FAIL [0] @ WEST_TOPDIR/zephyr/kernel/sem.c:100",
            ),
            (30, "\tintended assert"),
            (60_000, "never read"),
        ];
        assert_eq!(settle_over(&ZtestParser, &lines), (Some(530), false));
        let lines = [
            (0, "rtos: booted"),
            (1000, "ASSERT! Line 97, file src/main.c"),
            (60_000, "never read"),
        ];
        let spec = RegexSpec {
            mode: RegexMode::OneLine,
            ordered: true,
            patterns: vec![Pattern::new("^status: OK ").unwrap()],
            fail_patterns: Vec::new(),
            crash_patterns: Vec::new(),
            case_name: "self_check".to_string(),
        };
        assert_eq!(
            settle_over(&RegexParser::new(spec), &lines),
            (Some(1500), false)
        );
    }

    #[test]
    fn every_harness_has_its_parser() {
        let spec = RegexSpec {
            mode: RegexMode::OneLine,
            ordered: true,
            patterns: vec![Pattern::new("Hello").unwrap()],
            fail_patterns: Vec::new(),
            crash_patterns: Vec::new(),
            case_name: "console".to_string(),
        };
        for (harness, name) in [
            (Harness::Unity, "unity"),
            (Harness::Ztest, "ztest"),
            (Harness::Regex(Box::new(spec)), "regex"),
        ] {
            let parser = parser_for(&harness);
            assert_eq!(parser.name(), name);
            assert_eq!(harness.name(), name);
        }
    }
}
