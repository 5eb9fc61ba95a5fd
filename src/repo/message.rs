//! The fix commit's message, and what git makes of a message a `commit-msg` hook has edited.
//!
//! Pure. The message says what was fixed, for the reviewer who reads `git log` and never opens
//! the run directory: a subject naming the failing tests that now pass, a body with the evidence
//! fwfix started from (the crash, the failing lines), where the candidate came from, and trailers
//! (`Fwfix-Run: <run-id>`) that tie the commit back to its run.

use std::fmt::Write as _;

/// The subject line's length limit, as `git log --oneline` readers expect.
const SUBJECT_MAX: usize = 72;
/// At most this many failing lines in the body; the rest are counted.
const EVIDENCE_MAX: usize = 8;
/// A line of evidence is cut at this many characters.
const LINE_MAX: usize = 200;

/// A test that failed before the fix, where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailingCase {
    pub name: String,
    /// `FAIL`, `CRASH`, `HANG`, ...
    pub status: String,
    /// `file:line`, when known.
    pub location: Option<String>,
    pub message: String,
}

/// What the message is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixMessage<'a> {
    pub run_id: &'a str,
    /// The iteration whose candidate is the fix.
    pub iteration: u32,
    /// The target tests that now pass; empty when the fix repaired the build.
    pub fixed: &'a [String],
    /// The tests that failed before the fix (the baseline's evidence).
    pub failing: &'a [FailingCase],
    /// The crash before the fix, in one line, when there was one.
    pub crash: Option<&'a str>,
    /// The build's errors before the fix (`src/crc.c:12: expected ';'`), when it did not build.
    pub build_errors: &'a [String],
    /// Where the candidate came from: a model, a patch file, a revert of a commit, an agent.
    pub origin: &'a str,
    /// The convergence verdict, e.g. `fixed test_a and nothing regressed on 2 consecutive runs`.
    pub verdict: &'a str,
    /// The patch applied only on top of the owner's uncommitted changes: the files it touches
    /// are committed with those changes in them.
    pub on_uncommitted: bool,
}

/// The whole message, ending with a newline.
pub fn build(m: &FixMessage<'_>) -> String {
    let mut out = subject(m.fixed);
    out.push_str("\n\n");
    let _ = writeln!(out, "{}.", one_line(&capitalised(m.verdict)));
    let mut evidence = Vec::new();
    if let Some(crash) = m.crash {
        evidence.push(format!("crash: {}", one_line(crash)));
    }
    for error in m.build_errors.iter().take(EVIDENCE_MAX) {
        evidence.push(format!("build error: {}", one_line(error)));
    }
    for case in m.failing.iter().take(EVIDENCE_MAX) {
        let at = case
            .location
            .as_deref()
            .map(|l| format!(" at {}", one_line(l)))
            .unwrap_or_default();
        let why = if case.message.trim().is_empty() {
            String::new()
        } else {
            format!(": {}", one_line(&case.message))
        };
        evidence.push(format!(
            "{} {}{at}{why}",
            one_line(&case.name),
            one_line(&case.status)
        ));
    }
    if m.failing.len() > EVIDENCE_MAX {
        evidence.push(format!("and {} more", m.failing.len() - EVIDENCE_MAX));
    }
    if !evidence.is_empty() {
        out.push_str("\nBefore the fix:\n");
        for line in evidence {
            let _ = writeln!(out, "  {}", cut(&line));
        }
    }
    if m.on_uncommitted {
        out.push_str(
            "\nThe patch applied only on top of uncommitted changes, so the files it touches\n\
             are committed with those changes in them.\n",
        );
    }
    let _ = writeln!(
        out,
        "\nCandidate: {}, tried in iteration {} and confirmed by fwfix's test runs.",
        one_line(m.origin),
        m.iteration
    );
    let _ = writeln!(out, "\nFwfix-Run: {}", one_line(m.run_id));
    let _ = writeln!(out, "Fwfix-Iteration: {}", m.iteration);
    out
}

/// `fwfix: make test_a pass`, `fwfix: make test_a and test_b pass`, `... and 3 more pass`, kept
/// within [`SUBJECT_MAX`]; `fwfix: fix the build` when no test was named.
pub fn subject(fixed: &[String]) -> String {
    let names: Vec<String> = fixed.iter().map(|n| one_line(n)).collect();
    let Some(first) = names.first() else {
        return "fwfix: fix the build".to_string();
    };
    let said = |shown: &[String], rest: usize| {
        let list = match (shown, rest) {
            ([one], 0) => one.clone(),
            ([init @ .., last], 0) => format!("{} and {last}", init.join(", ")),
            (shown, rest) => format!("{} and {rest} more", shown.join(", ")),
        };
        format!("fwfix: make {list} pass")
    };
    for shown in (1..=names.len()).rev() {
        let line = said(&names[..shown], names.len() - shown);
        if line.chars().count() <= SUBJECT_MAX {
            return line;
        }
    }
    cut_to(
        &said(std::slice::from_ref(first), names.len() - 1),
        SUBJECT_MAX,
    )
}

/// What git keeps of a message with `--cleanup=whitespace` (a commit made without an editor):
/// trailing whitespace stripped from every line, runs of blank lines made one, leading and
/// trailing blank lines dropped, one final newline. Empty when nothing is left.
pub fn cleanup(message: &str) -> String {
    let mut out = String::new();
    let mut blank_run = false;
    for line in message.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank_run = !out.is_empty();
            continue;
        }
        if blank_run {
            out.push('\n');
            blank_run = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// One line: control characters (newlines included) become spaces, runs of spaces one.
fn one_line(text: &str) -> String {
    let spaced: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    spaced.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn cut(line: &str) -> String {
    cut_to(line, LINE_MAX)
}

fn cut_to(line: &str, max: usize) -> String {
    if line.chars().count() <= max {
        return line.to_string();
    }
    let kept: String = line.chars().take(max.saturating_sub(3)).collect();
    format!("{kept}...")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    fn message<'a>(fixed: &'a [String], failing: &'a [FailingCase]) -> FixMessage<'a> {
        FixMessage {
            run_id: "20260101-000000-abcd",
            iteration: 2,
            fixed,
            failing,
            crash: None,
            build_errors: &[],
            origin: "04-fixes-crc16.diff",
            on_uncommitted: false,
            verdict: "fixed test_crc16_known_vector and nothing regressed",
        }
    }

    #[test]
    fn the_subject_names_the_tests_now_passing_within_72_characters() {
        assert_eq!(subject(&names(&["test_a"])), "fwfix: make test_a pass");
        assert_eq!(
            subject(&names(&["test_a", "test_b", "test_c"])),
            "fwfix: make test_a, test_b and test_c pass"
        );
        let long = names(&[
            "test_crc16_known_vector",
            "test_crc32_known_vector",
            "test_ringbuf_wraps_around",
            "test_ringbuf_full",
        ]);
        assert_eq!(
            subject(&long),
            "fwfix: make test_crc16_known_vector and 3 more pass"
        );
        let huge = names(&[&"t".repeat(100)]);
        assert_eq!(subject(&huge).chars().count(), SUBJECT_MAX);
        assert_eq!(subject(&[]), "fwfix: fix the build");
    }

    #[test]
    fn the_body_has_the_evidence_the_origin_and_the_trailers() {
        let fixed = names(&["test_crc16_known_vector"]);
        let failing = [FailingCase {
            name: "test_crc16_known_vector".into(),
            status: "FAIL".into(),
            location: Some("test/test_crc.c:31".into()),
            message: "Expected 0x29B1\nWas 0x0000".into(),
        }];
        let mut m = message(&fixed, &failing);
        m.crash = Some("HardFault (precise bus fault) in crc16 at src/crc.c:12");
        assert_eq!(
            build(&m),
            "fwfix: make test_crc16_known_vector pass\n\
             \n\
             Fixed test_crc16_known_vector and nothing regressed.\n\
             \n\
             Before the fix:\n  \
             crash: HardFault (precise bus fault) in crc16 at src/crc.c:12\n  \
             test_crc16_known_vector FAIL at test/test_crc.c:31: Expected 0x29B1 Was 0x0000\n\
             \n\
             Candidate: 04-fixes-crc16.diff, tried in iteration 2 and confirmed by fwfix's test runs.\n\
             \n\
             Fwfix-Run: 20260101-000000-abcd\n\
             Fwfix-Iteration: 2\n"
        );
        // What git would keep of it is the message itself: fwfix writes it clean.
        assert_eq!(cleanup(&build(&m)), build(&m));
    }

    #[test]
    fn a_broken_build_is_the_thing_fixed_and_its_errors_are_the_evidence() {
        let errors = ["src/crc.c:12: expected ';' before '}' token".to_string()];
        let mut m = message(&[], &[]);
        m.build_errors = &errors;
        let text = build(&m);
        assert!(text.starts_with("fwfix: fix the build\n\n"), "{text}");
        assert!(
            text.contains(
                "\nBefore the fix:\n  build error: src/crc.c:12: expected ';' before '}' token\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn evidence_is_capped_and_every_line_stays_one_line() {
        let failing: Vec<FailingCase> = (0..12)
            .map(|i| FailingCase {
                name: format!("test_{i}"),
                status: "FAIL".into(),
                location: None,
                message: "x".repeat(500),
            })
            .collect();
        let fixed = names(&["test_0"]);
        let mut m = message(&fixed, &failing);
        m.origin = "model\nInjected-Trailer: yes";
        let text = build(&m);
        assert!(text.contains("  and 4 more\n"), "{text}");
        assert!(!text.contains("test_8 "), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= LINE_MAX + 2));
        assert!(!text.lines().any(|l| l.starts_with("Injected-Trailer")));
        assert!(text.ends_with("Fwfix-Iteration: 2\n"));
    }

    #[test]
    fn cleanup_is_gits_whitespace_mode() {
        assert_eq!(
            cleanup("\n\n  subject  \n\n\n\nbody \t\nmore\n\n\n"),
            "  subject\n\nbody\nmore\n"
        );
        assert_eq!(
            cleanup("# kept, not a comment\n"),
            "# kept, not a comment\n"
        );
        assert_eq!(cleanup(" \n\t\n"), "");
        assert_eq!(cleanup("no newline"), "no newline\n");
    }
}
