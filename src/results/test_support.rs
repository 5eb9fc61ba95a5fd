//! What the harness parsers' unit tests share: a capture made from console text, a parse context
//! from name lists, a console streamed as a backend streams it, and compact views of the results.

use super::{CaseStatus, HarnessParser, ParseContext, TestResults};
use crate::capture::store::{LineStore, StoreLimits};
use crate::capture::{Capture, ConsoleLine, RunEnd, Stream};

/// A capture of UART lines, split on `\n` only (a `\r` stays, as a serial console delivers it).
pub(super) fn capture(text: &str, end: RunEnd) -> Capture {
    Capture {
        lines: text
            .split_inclusive('\n')
            .enumerate()
            .map(|(i, line)| ConsoleLine {
                t_ms: i as u64,
                stream: Stream::Uart,
                text: line.trim_end_matches('\n').to_string(),
            })
            .collect(),
        end,
        fault: None,
        duration_ms: 10,
        truncated: false,
        exit_code: None,
        stopped_at: None,
        nonce: None,
        faults_watched: false,
    }
}

/// Streams UART `lines` into a fresh parse as a backend does: each line is read by the parse and
/// kept, or not, by a line store with the backends' limits. Returns the streamed results and the
/// capture the store kept.
pub(super) fn stream(
    parser: &dyn HarnessParser,
    lines: impl Iterator<Item = String>,
    end: RunEnd,
) -> (TestResults, Capture) {
    let mut parse = parser.stream();
    let mut store = LineStore::new(StoreLimits::default());
    for (i, text) in lines.enumerate() {
        let read = parse.read_line(&text).keep;
        let line = ConsoleLine {
            t_ms: i as u64,
            stream: Stream::Uart,
            text,
        };
        store.push_read(line, read);
    }
    let (lines, truncated) = store.into_lines();
    let capture = Capture {
        lines,
        truncated,
        ..capture("", end)
    };
    (parse.finish(&capture, &ParseContext::default()), capture)
}

/// Parses `text` with the expected tests and crash-site functions given.
pub(super) fn parse_with(
    parser: &dyn HarnessParser,
    text: &str,
    end: RunEnd,
    expected: &[&str],
    site: &[&str],
) -> TestResults {
    let ctx = ParseContext {
        expected: expected.iter().map(|s| s.to_string()).collect(),
        site_functions: site.iter().map(|s| s.to_string()).collect(),
    };
    parser.parse(&capture(text, end), &ctx)
}

pub(super) fn statuses(results: &TestResults) -> Vec<(&str, CaseStatus)> {
    results
        .cases
        .iter()
        .map(|c| (c.name.as_str(), c.status))
        .collect()
}

pub(super) fn notes(results: &TestResults) -> String {
    results.notes.join("\n")
}
