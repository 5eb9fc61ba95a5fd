//! Sample reports for the renderers' unit tests (markdown, html, junit, the terminal summary):
//! the scaffolding they share, so each test states only the facts its assertions are about.

use super::{Command, Report, Status};
use crate::machine::State;
use crate::results::{CaseStatus, TestCase};
use chrono::{Duration, TimeZone, Utc};

/// A report that started at 2024-05-01 12:00:00 UTC and took `seconds`.
pub(crate) fn report(
    run_id: &str,
    command: Command,
    status: Status,
    state: State,
    seconds: i64,
) -> Report {
    let started = Utc
        .with_ymd_and_hms(2024, 5, 1, 12, 0, 0)
        .single()
        .unwrap_or_default();
    Report::new(
        run_id,
        command,
        status,
        state,
        started,
        started + Duration::seconds(seconds),
    )
}

/// A case in `test/test_crc.c` when it has a line, with no file otherwise.
pub(crate) fn case(
    name: &str,
    status: CaseStatus,
    message: Option<&str>,
    line: Option<u32>,
) -> TestCase {
    TestCase {
        name: name.into(),
        status,
        message: message.map(String::from),
        file: line.map(|_| "test/test_crc.c".to_string()),
        line,
    }
}
