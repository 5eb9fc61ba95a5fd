//! Which test a crash or a hang belongs to, for every harness: the test the harness itself said
//! was running (ztest's `START -`), else a test function at the crash site, else the first
//! expected test not yet reported, else nobody (the `(run)` case). Also the MISSING cases for the
//! expected tests a stopped run never reached.
//!
//! Pure: it reads the [`ParseContext`] and what the parser found, and must not look at console
//! text itself (each harness knows its own format) or decide verdicts.

use std::collections::HashSet;

use super::crash_dump::Dump;
use super::{CaseStatus, ParseContext, TestCase, Verdict, RUN_CASE};
use crate::capture::RunEnd;

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
            // The backend ended it after a failed assertion the console then settled on: the
            // firmware stopped at the assertion, whatever else the console shows.
            RunEnd::Crashed | RunEnd::Stopped { .. } => Some(Stop::Crashed),
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
    /// Tests run in order: the first expected test not yet reported was running.
    FirstUnreported,
    /// No test can be blamed.
    Run,
}

/// The test a stopped run is blamed on, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Blame {
    pub name: String,
    pub attribution: Attribution,
}

/// Which test was running when the image crashed or hung. `announced` is the test the harness
/// said had started; `reported` the names already reported; `unreported` the expected tests not
/// yet reported, in run order.
pub(super) fn running_test(
    ctx: &ParseContext,
    announced: Option<&str>,
    reported: &HashSet<&str>,
    unreported: &[&str],
) -> Blame {
    if let Some(name) = announced {
        return Blame {
            name: name.to_string(),
            attribution: Attribution::Announced,
        };
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
        return Blame {
            name: name.clone(),
            attribution: Attribution::Site,
        };
    }
    match unreported.first() {
        Some(name) => Blame {
            name: name.to_string(),
            attribution: Attribution::FirstUnreported,
        },
        None => Blame {
            name: RUN_CASE.to_string(),
            attribution: Attribution::Run,
        },
    }
}

/// The case for the test the run stopped in, and the note that says so. `order` says why the
/// first unreported test is a fair guess, e.g. `as Unity runs tests in order`.
pub(super) fn stopped_case(blame: &Blame, stop: Stop, order: &str) -> (TestCase, String) {
    let how = stop.how();
    let message = match blame.attribution {
        Attribution::Announced | Attribution::Site => {
            format!("no verdict: the image {how} while this test was running")
        }
        Attribution::FirstUnreported => format!(
            "no verdict: the image {how} while this test was running (assumed: the first \
             expected test not yet reported, {order})"
        ),
        Attribution::Run => format!("no verdict: the image {how} outside any known test"),
    };
    let note = match blame.attribution {
        Attribution::Run => format!("the image {how} outside any known test"),
        Attribution::Announced | Attribution::Site | Attribution::FirstUnreported => {
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

/// The expected tests never reported, as MISSING cases; `stopped_in` is the test the run stopped
/// in, if it stopped.
pub(super) fn missing_cases(unreported: &[&str], stopped_in: Option<&str>) -> Vec<TestCase> {
    let message = match stopped_in {
        Some(name) => format!("never reported: the run stopped in {name}"),
        None => "expected but never reported".to_string(),
    };
    unreported
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
    let assertion = dump.assertion.as_ref();
    if let Some(a) = assertion.filter(|_| dump.assertion_alone()) {
        return format!(
            "the console shows the firmware's own assertion failing at line {}: {}",
            a.index + 1,
            a.text
        );
    }
    let note = match &dump.fatal_error {
        Some(reason) => format!(
            "the console shows a Zephyr fatal error from line {} ({reason})",
            dump.first + 1
        ),
        None => format!(
            "the console shows a fault dump from line {}: {first}",
            dump.first + 1
        ),
    };
    match assertion {
        Some(a) => format!(
            "{note}, after the firmware's own assertion failed at line {}: {}",
            a.index + 1,
            a.text
        ),
        None => note,
    }
}

/// A case the run stopped in at the firmware's failed assertion: the assertion's line heads its
/// message, and the assertion's site is its location.
pub(super) fn at_assertion(case: &mut TestCase, dump: Option<&Dump>) {
    let Some(a) = dump.and_then(|d| d.assertion.as_ref()) else {
        return;
    };
    case.message = Some(match case.message.take() {
        Some(message) => format!("{} ({message})", a.text),
        None => a.text.clone(),
    });
    case.file.clone_from(&a.file);
    case.line = a.line;
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
        RunEnd::Crashed
        | RunEnd::Stopped { .. }
        | RunEnd::Timeout
        | RunEnd::Verdict
        | RunEnd::Exited { .. } => None,
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
        assert_eq!(
            Stop::of(RunEnd::Stopped { quiet_ms: 500 }, true),
            Some(Stop::Crashed)
        );
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
            &["test_a"],
        );
        assert_eq!(blame.name, "test_c");
        assert_eq!(blame.attribution, Attribution::Announced);
        let (case, note) = stopped_case(&blame, Stop::Hung, "as tests run in order");
        assert_eq!(case.status, CaseStatus::Hang);
        assert_eq!(
            case.message.as_deref(),
            Some("no verdict: the image hung (nothing final before the test timeout) while this test was running")
        );
        assert!(note.contains("while test_c was running"));
    }

    #[test]
    fn site_then_order_then_nobody() {
        let reported: HashSet<&str> = ["test_a"].into_iter().collect();
        let c = ctx(
            &["test_a", "test_b", "test_c"],
            &["helper", "test_a", "test_c"],
        );
        let blame = running_test(&c, None, &reported, &["test_b", "test_c"]);
        assert_eq!(
            (blame.name.as_str(), blame.attribution),
            ("test_c", Attribution::Site)
        );

        let c = ctx(&["test_a", "test_b"], &["memcpy"]);
        let blame = running_test(&c, None, &reported, &["test_b"]);
        assert_eq!(
            (blame.name.as_str(), blame.attribution),
            ("test_b", Attribution::FirstUnreported)
        );
        let (case, _) = stopped_case(&blame, Stop::Crashed, "as ztest runs tests in order");
        assert!(case.message.as_deref().unwrap().ends_with(
            "(assumed: the first expected test not yet reported, as ztest runs tests in order)"
        ));

        let blame = running_test(&c, None, &reported, &[]);
        assert_eq!(
            (blame.name.as_str(), blame.attribution),
            (RUN_CASE, Attribution::Run)
        );
        let (case, note) = stopped_case(&blame, Stop::Crashed, "");
        assert_eq!(
            case.message.as_deref(),
            Some("no verdict: the image crashed outside any known test")
        );
        assert_eq!(note, "the image crashed outside any known test");
    }

    #[test]
    fn missing_cases_say_where_the_run_stopped() {
        let cases = missing_cases(&["test_d", "test_e"], Some("test_c"));
        assert_eq!(cases.len(), 2);
        assert!(cases.iter().all(|c| c.status == CaseStatus::Missing));
        assert_eq!(
            cases[0].message.as_deref(),
            Some("never reported: the run stopped in test_c")
        );
        let cases = missing_cases(&["test_d"], None);
        assert_eq!(
            cases[0].message.as_deref(),
            Some("expected but never reported")
        );
    }
}
