//! The notes and verdict steps harness parsers write the same way: the truncated-capture note,
//! the failed/missing/ignored tallies and their notes, the note for a run that never printed its
//! harness's final word, and the closing pass note.
//!
//! Pure: it formats what a parser already found, and must not read console text (each harness
//! knows its own format) or check a harness's counts (each parser does that itself).

use super::{CaseStatus, TestCase, Verdict};
use crate::capture::{Capture, RunEnd};

/// Says so when the capture lost text, so a user knows where the rest is.
pub(super) fn truncation_note(capture: &Capture, notes: &mut Vec<String>) {
    if capture.truncated {
        notes.push(
            "the console capture was truncated to bound memory; console.log has the full text"
                .to_string(),
        );
    }
}

/// The cases' names, comma separated, for a note.
pub(super) fn names(cases: &[&TestCase]) -> String {
    cases
        .iter()
        .map(|c| c.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The cases that decide a counting harness's verdict, sorted by status.
pub(super) struct Tally<'a> {
    pub failed: Vec<&'a TestCase>,
    pub missing: Vec<&'a TestCase>,
    pub ignored: Vec<&'a TestCase>,
    /// How many tests the harness itself reported.
    pub reported: usize,
}

impl<'a> Tally<'a> {
    pub(super) fn of(cases: &'a [TestCase], reported: usize) -> Tally<'a> {
        let with = |status| {
            cases
                .iter()
                .filter(|c| c.status == status)
                .collect::<Vec<_>>()
        };
        Tally {
            failed: with(CaseStatus::Fail),
            missing: with(CaseStatus::Missing),
            ignored: with(CaseStatus::Ignore),
            reported,
        }
    }

    /// Notes naming the failed and the never-reported tests.
    pub(super) fn failure_notes(&self, notes: &mut Vec<String>) {
        if !self.failed.is_empty() {
            notes.push(format!(
                "{} of {} reported tests failed: {}",
                self.failed.len(),
                self.reported,
                names(&self.failed)
            ));
        }
        if !self.missing.is_empty() {
            notes.push(format!(
                "{} expected tests were never reported: {}",
                self.missing.len(),
                names(&self.missing)
            ));
        }
    }

    /// The verdict of a run whose harness never printed its final word (`final_word`, e.g. "its
    /// summary"): a reported failure still fails it, otherwise nothing can be concluded.
    pub(super) fn unfinished(
        &self,
        harness: &str,
        final_word: &str,
        saw_output: bool,
        end: RunEnd,
        notes: &mut Vec<String>,
    ) -> Verdict {
        notes.push(match (saw_output, end) {
            (false, RunEnd::Exited { code }) => {
                format!("the image printed no {harness} output and exited with code {code}")
            }
            (false, _) => format!("the image printed no {harness} output"),
            (true, RunEnd::Exited { code }) => {
                format!("the image exited with code {code} before {harness} printed {final_word}")
            }
            (true, _) => format!("the output stopped before {harness} printed {final_word}"),
        });
        if self.failed.is_empty() {
            return Verdict::Inconclusive;
        }
        self.failure_notes(notes);
        Verdict::Fail
    }

    /// The verdict of a finished, self-consistent run: failed or missing tests fail it, no tests
    /// leave it inconclusive, else it passed. `ran` counts the cases the pass note speaks of;
    /// `not_run` is the harness's word for tests it did not run ("ignored", "skipped").
    pub(super) fn finished(&self, ran: usize, not_run: &str, notes: &mut Vec<String>) -> Verdict {
        if !self.failed.is_empty() || !self.missing.is_empty() {
            self.failure_notes(notes);
            return Verdict::Fail;
        }
        if self.reported == 0 {
            notes.push("the run reported no tests".to_string());
            return Verdict::Inconclusive;
        }
        notes.push(if self.ignored.is_empty() {
            format!("all {ran} tests passed")
        } else {
            format!(
                "all {} tests that ran passed ({} {not_run}: {})",
                ran - self.ignored.len(),
                self.ignored.len(),
                names(&self.ignored)
            )
        });
        Verdict::Pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, status: CaseStatus) -> TestCase {
        TestCase {
            name: name.to_string(),
            status,
            message: None,
            file: None,
            line: None,
        }
    }

    #[test]
    fn a_finished_run_passes_only_without_failed_or_missing_tests() {
        let cases = [case("a", CaseStatus::Pass), case("b", CaseStatus::Ignore)];
        let mut notes = Vec::new();
        assert_eq!(
            Tally::of(&cases, 2).finished(2, "skipped", &mut notes),
            Verdict::Pass
        );
        assert_eq!(notes, ["all 1 tests that ran passed (1 skipped: b)"]);

        let cases = [case("a", CaseStatus::Fail), case("c", CaseStatus::Missing)];
        let mut notes = Vec::new();
        assert_eq!(
            Tally::of(&cases, 1).finished(1, "ignored", &mut notes),
            Verdict::Fail
        );
        assert_eq!(
            notes,
            [
                "1 of 1 reported tests failed: a",
                "1 expected tests were never reported: c"
            ]
        );

        let mut notes = Vec::new();
        assert_eq!(
            Tally::of(&[], 0).finished(0, "ignored", &mut notes),
            Verdict::Inconclusive
        );
        assert_eq!(notes, ["the run reported no tests"]);
    }

    #[test]
    fn an_unfinished_run_fails_only_on_a_reported_failure() {
        let mut notes = Vec::new();
        let verdict = Tally::of(&[], 0).unfinished(
            "Unity",
            "its summary",
            true,
            RunEnd::Exited { code: 3 },
            &mut notes,
        );
        assert_eq!(verdict, Verdict::Inconclusive);
        assert_eq!(
            notes,
            ["the image exited with code 3 before Unity printed its summary"]
        );

        let cases = [case("a", CaseStatus::Fail)];
        let mut notes = Vec::new();
        let verdict = Tally::of(&cases, 1).unfinished(
            "ztest",
            "PROJECT EXECUTION",
            false,
            RunEnd::Timeout,
            &mut notes,
        );
        assert_eq!(verdict, Verdict::Fail);
        assert_eq!(
            notes,
            [
                "the image printed no ztest output",
                "1 of 1 reported tests failed: a"
            ]
        );
    }
}
