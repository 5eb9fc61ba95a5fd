//! Which test a crash or a hang belongs to, for every harness: the test the harness itself said
//! was running (ztest's `START -`), else a test function at the crash site, else nobody (the
//! `(run)` case). Also the MISSING cases for the expected tests a stopped run never reached.
//!
//! The expected tests come from the image's `test_*` functions, whose addresses say nothing of the
//! order the tests run in (`-Os` lays them out in reverse): when several were never reported, the
//! stop is placed after the last test that reported, never on a guessed one, and the unreported
//! ones are listed by name.
//!
//! Pure: it reads the [`ParseContext`] and what the parser found, and must not look at console
//! text itself (each harness knows its own format) or decide verdicts.

use std::collections::HashSet;

use super::crash_dump::Dump;
use super::{CaseStatus, ParseContext, TestCase, Verdict};
use crate::capture::RunEnd;

/// The case that takes a crash or hang nobody else can be blamed for.
pub(super) const RUN_CASE: &str = "(run)";

/// How a run stopped short of its harness's final word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    Crashed,
    Hung,
}

impl Stop {
    /// From how the attempt ended, and whether the harness took a fault dump in the console as the
    /// end of the run (a board that prints a dump and spins looks like a hang from outside).
    pub(super) fn of(end: RunEnd, console_crash: bool) -> Option<Stop> {
        match end {
            RunEnd::RunnerDied { .. } | RunEnd::PortLost | RunEnd::Cancelled => None,
            RunEnd::Crashed => Some(Stop::Crashed),
            _ if console_crash => Some(Stop::Crashed),
            RunEnd::Timeout => Some(Stop::Hung),
            RunEnd::Verdict | RunEnd::Exited { .. } => None,
        }
    }

    pub(super) fn status(self) -> CaseStatus {
        match self {
            Stop::Crashed => CaseStatus::Crash,
            Stop::Hung => CaseStatus::Hang,
        }
    }

    /// Completes "the image ...".
    pub(super) fn how(self) -> &'static str {
        match self {
            Stop::Crashed => "crashed",
            Stop::Hung => "hung (nothing final before the test timeout)",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Attribution {
    /// The harness announced the test and never reported its end.
    Announced,
    /// A function at the crash site is the test.
    Site,
    /// One of the expected tests not yet reported was running; which one is not known.
    Unreported,
    /// No test can be blamed.
    Run,
}

/// The test a stopped run is blamed on, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Blame {
    pub name: String,
    pub attribution: Attribution,
    /// The last test that reported before the stop, if any did.
    pub after: Option<String>,
    /// How many expected tests never reported (one of them may have been running).
    pub unreported: usize,
}

/// Which test was running when the image crashed or hung. `announced` is the test the harness
/// said had started; `reported` the names already reported, `last` the last of them;
/// `unreported` the expected tests not yet reported, in no known order.
pub(super) fn running_test(
    ctx: &ParseContext,
    announced: Option<&str>,
    reported: &HashSet<&str>,
    last: Option<&str>,
    unreported: &[&str],
) -> Blame {
    let blame = |name: &str, attribution| Blame {
        name: name.to_string(),
        attribution,
        after: last.map(str::to_string),
        unreported: unreported.len(),
    };
    if let Some(name) = announced {
        return blame(name, Attribution::Announced);
    }
    let is_candidate = |name: &&String| !reported.contains(name.as_str());
    let by_site = ctx
        .site_functions
        .iter()
        .filter(is_candidate)
        .find(|name| ctx.expected.contains(name))
        // Without a list of expected tests, the `test` naming convention is the best hint.
        .or_else(|| {
            ctx.site_functions
                .iter()
                .filter(is_candidate)
                .find(|name| name.starts_with("test"))
        });
    if let Some(name) = by_site {
        return blame(name, Attribution::Site);
    }
    if unreported.is_empty() {
        blame(RUN_CASE, Attribution::Run)
    } else {
        blame(RUN_CASE, Attribution::Unreported)
    }
}

/// The case for the test the run stopped in, and the note that says so.
pub(super) fn stopped_case(blame: &Blame, stop: Stop) -> (TestCase, String) {
    let how = stop.how();
    let after = match &blame.after {
        Some(last) => format!("after {last} reported"),
        None => "before any test reported".to_string(),
    };
    let message = match blame.attribution {
        Attribution::Announced | Attribution::Site => {
            format!("no verdict: the image {how} while this test was running")
        }
        Attribution::Unreported => format!(
            "no verdict: the image {how} {after}, in one of the {} expected tests that never \
             reported (which one is not known)",
            blame.unreported
        ),
        Attribution::Run => format!("no verdict: the image {how} outside any known test"),
    };
    let note = match blame.attribution {
        Attribution::Run => format!("the image {how} outside any known test"),
        Attribution::Unreported => format!(
            "the image {how} {after}; which of the {} tests that never reported was running is \
             not known",
            blame.unreported
        ),
        Attribution::Announced | Attribution::Site => {
            format!("the image {how} while {} was running", blame.name)
        }
    };
    let case = TestCase {
        name: blame.name.clone(),
        status: stop.status(),
        message: Some(message),
        file: None,
        line: None,
    };
    (case, note)
}

/// The expected tests never reported, as MISSING cases listed by name (their run order is not
/// known); `stopped` is what the run was blamed on, if it stopped.
pub(super) fn missing_cases(unreported: &[&str], stopped: Option<&Blame>) -> Vec<TestCase> {
    let message = match stopped {
        Some(blame) if blame.attribution == Attribution::Unreported => match &blame.after {
            Some(last) => format!("never reported: the run stopped after {last}"),
            None => "never reported: the run stopped before any test reported".to_string(),
        },
        Some(blame) => format!("never reported: the run stopped in {}", blame.name),
        None => "expected but never reported".to_string(),
    };
    let mut names = unreported.to_vec();
    names.sort_unstable();
    names
        .iter()
        .map(|name| TestCase {
            name: name.to_string(),
            status: CaseStatus::Missing,
            message: Some(message.clone()),
            file: None,
            line: None,
        })
        .collect()
}

/// The note for a fault dump the console showed.
pub(super) fn dump_note(dump: &Dump) -> String {
    let first = dump.snapshot.raw.lines().next().unwrap_or_default();
    match &dump.fatal_error {
        Some(reason) => format!(
            "the console shows a Zephyr fatal error from line {} ({reason})",
            dump.first + 1
        ),
        None => format!(
            "the console shows a fault dump from line {}: {first}",
            dump.first + 1
        ),
    }
}

/// The verdict of an attempt the environment ended (the runner died, the console port was lost,
/// or it was cancelled), with the note saying so; None when the firmware's own output decides.
pub(super) fn environment_end(end: RunEnd, notes: &mut Vec<String>) -> Option<Verdict> {
    match end {
        RunEnd::RunnerDied { signal, code } => {
            let how = match (signal, code) {
                (Some(signal), _) => format!("was killed by signal {signal}"),
                (None, Some(code)) => format!("exited with status {code}"),
                (None, None) => "died".to_string(),
            };
            notes.push(format!(
                "the runner {how} before the run finished: an environment failure, not a test result"
            ));
            Some(Verdict::EnvError)
        }
        RunEnd::PortLost => {
            notes.push(
                "the console port was lost before the run finished: an environment failure, not a \
                 test result"
                    .to_string(),
            );
            Some(Verdict::EnvError)
        }
        RunEnd::Cancelled => {
            notes.push("the attempt was cancelled before the run finished".to_string());
            Some(Verdict::Inconclusive)
        }
        RunEnd::Crashed | RunEnd::Timeout | RunEnd::Verdict | RunEnd::Exited { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(expected: &[&str], site: &[&str]) -> ParseContext {
        ParseContext {
            expected: expected.iter().map(|s| s.to_string()).collect(),
            site_functions: site.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn stops_from_run_ends() {
        assert_eq!(Stop::of(RunEnd::Crashed, false), Some(Stop::Crashed));
        assert_eq!(Stop::of(RunEnd::Timeout, false), Some(Stop::Hung));
        assert_eq!(Stop::of(RunEnd::Timeout, true), Some(Stop::Crashed));
        assert_eq!(Stop::of(RunEnd::Verdict, true), Some(Stop::Crashed));
        assert_eq!(Stop::of(RunEnd::Exited { code: 0 }, false), None);
        assert_eq!(Stop::of(RunEnd::Cancelled, true), None);
        assert_eq!(
            Stop::of(
                RunEnd::RunnerDied {
                    signal: Some(9),
                    code: None
                },
                true
            ),
            None
        );
    }

    #[test]
    fn an_announced_test_beats_every_guess() {
        let blame = running_test(
            &ctx(&["test_a", "test_b"], &["test_b"]),
            Some("test_c"),
            &HashSet::new(),
            None,
            &["test_a"],
        );
        assert_eq!(blame.name, "test_c");
        assert_eq!(blame.attribution, Attribution::Announced);
        let (case, note) = stopped_case(&blame, Stop::Hung);
        assert_eq!(case.status, CaseStatus::Hang);
        assert_eq!(
            case.message.as_deref(),
            Some("no verdict: the image hung (nothing final before the test timeout) while this test was running")
        );
        assert!(note.contains("while test_c was running"));
    }

    #[test]
    fn site_then_after_the_last_report_then_nobody() {
        let reported: HashSet<&str> = ["test_a"].into_iter().collect();
        let c = ctx(
            &["test_a", "test_b", "test_c"],
            &["helper", "test_a", "test_c"],
        );
        let blame = running_test(&c, None, &reported, Some("test_a"), &["test_b", "test_c"]);
        assert_eq!(
            (blame.name.as_str(), blame.attribution),
            ("test_c", Attribution::Site)
        );

        let c = ctx(&["test_a", "test_b"], &["memcpy"]);
        let blame = running_test(&c, None, &reported, Some("test_a"), &["test_c", "test_b"]);
        assert_eq!(
            (blame.name.as_str(), blame.attribution),
            (RUN_CASE, Attribution::Unreported)
        );
        let (case, note) = stopped_case(&blame, Stop::Crashed);
        assert_eq!(
            case.message.as_deref(),
            Some(
                "no verdict: the image crashed after test_a reported, in one of the 2 expected \
                 tests that never reported (which one is not known)"
            )
        );
        assert_eq!(
            note,
            "the image crashed after test_a reported; which of the 2 tests that never reported \
             was running is not known"
        );
        let blame = running_test(&c, None, &HashSet::new(), None, &["test_b"]);
        let (_, note) = stopped_case(&blame, Stop::Hung);
        assert!(note.contains("hung (nothing final before the test timeout) before any test"));

        let blame = running_test(&c, None, &reported, Some("test_a"), &[]);
        assert_eq!(
            (blame.name.as_str(), blame.attribution),
            (RUN_CASE, Attribution::Run)
        );
        let (case, note) = stopped_case(&blame, Stop::Crashed);
        assert_eq!(
            case.message.as_deref(),
            Some("no verdict: the image crashed outside any known test")
        );
        assert_eq!(note, "the image crashed outside any known test");
    }

    #[test]
    fn missing_cases_say_where_the_run_stopped() {
        let c = ctx(&[], &["test_c"]);
        let blame = running_test(&c, None, &HashSet::new(), None, &["test_e", "test_d"]);
        let cases = missing_cases(&["test_e", "test_d"], Some(&blame));
        assert_eq!(cases.len(), 2);
        assert!(cases.iter().all(|c| c.status == CaseStatus::Missing));
        // By name: the order the image holds them in is not the order they run in.
        assert_eq!(cases[0].name, "test_d");
        assert_eq!(
            cases[0].message.as_deref(),
            Some("never reported: the run stopped in test_c")
        );
        let blame = running_test(
            &ctx(&[], &[]),
            None,
            &HashSet::new(),
            Some("test_b"),
            &["x"],
        );
        let cases = missing_cases(&["x"], Some(&blame));
        assert_eq!(
            cases[0].message.as_deref(),
            Some("never reported: the run stopped after test_b")
        );
        let cases = missing_cases(&["test_d"], None);
        assert_eq!(
            cases[0].message.as_deref(),
            Some("expected but never reported")
        );
    }
}
