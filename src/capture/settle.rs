//! The settle window: after a live UART line the harness read as a failed assertion the firmware
//! may not come back from ([`LineRead::settle`]), how long the console must stay quiet before the
//! attempt ends as [`RunEnd::Stopped`] instead of waiting for the test timeout.
//!
//! Pure: it is told when lines arrived and what the harness made of them, and asked whether the
//! window has run out at a given time. Times are durations since the attempt started, so every
//! backend uses it with its own clock (and tests with none). It must not read a clock, wait, or
//! look at line text: the harness decided what a line is.

use std::time::Duration;

use super::{LineRead, RunEnd};

/// Silence after an assertion that ends the attempt. An assert handler prints its line and
/// perhaps a backtrace in one burst (at 115200 baud a 2 KB backtrace takes under 200 ms), and a
/// test framework that survives an assertion (ztest's expected faults) prints its next line at
/// once; half a second of nothing after that is a firmware spinning with interrupts off, and
/// costs little against a test timeout of minutes.
pub const QUIET: Duration = Duration::from_millis(500);

/// The longest an attempt runs on after an assertion while the firmware prints on without the
/// harness reading any of it (a handler dumping registers in a loop, a stream of log lines):
/// still stopped, not a hang at the timeout.
pub const CAP: Duration = Duration::from_secs(2);

/// One attempt's settle window: unarmed until an assertion line, then running until the console
/// has been quiet for [`QUIET`] or [`CAP`] has passed since the assertion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settle {
    window: Option<Window>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Window {
    /// When the first assertion of this window came.
    assertion: Duration,
    /// When the last UART line came.
    last: Duration,
}

impl Settle {
    /// A live UART line arrived at `at`, read as `read`. An assertion arms the window (a second
    /// one while armed keeps the first's cap, so a firmware asserting in a loop still ends); a
    /// line the harness reads as its own (a result, a summary) means the test framework came
    /// back, and disarms it; any other line restarts the quiet period.
    pub fn line(&mut self, read: LineRead, at: Duration) {
        self.window = match self.window {
            _ if read.settle => Some(Window {
                assertion: self.window.map_or(at, |w| w.assertion),
                last: at,
            }),
            _ if read.keep => None,
            Some(w) => Some(Window { last: at, ..w }),
            None => None,
        };
    }

    /// When the window runs out if no line comes first; none while unarmed.
    pub fn deadline(&self) -> Option<Duration> {
        self.window.map(|w| (w.last + QUIET).min(w.assertion + CAP))
    }

    /// How the attempt ends at `now`: stopped once the window has run out, else not yet.
    pub fn end(&self, now: Duration) -> Option<RunEnd> {
        let window = self.window?;
        let deadline = self.deadline()?;
        (now >= deadline).then(|| RunEnd::Stopped {
            quiet_ms: now.saturating_sub(window.last).as_millis() as u64,
        })
    }
}

/// How an attempt whose window ran out ends, given what reading the core then gave (`read`, as
/// at a timeout): its hang is the stop, anything more certain (a fault found, an exit) stands.
pub fn stopped_unless(read: RunEnd, stopped: RunEnd) -> RunEnd {
    match read {
        RunEnd::Timeout => stopped,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASSERTION: LineRead = LineRead {
        verdict: false,
        keep: false,
        settle: true,
    };
    const OTHER: LineRead = LineRead {
        verdict: false,
        keep: false,
        settle: false,
    };
    const HARNESS: LineRead = LineRead {
        verdict: false,
        keep: true,
        settle: false,
    };

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn unarmed_it_never_ends() {
        let mut settle = Settle::default();
        settle.line(OTHER, ms(10));
        settle.line(HARNESS, ms(20));
        assert_eq!(settle.deadline(), None);
        assert_eq!(settle.end(ms(3_600_000)), None);
    }

    #[test]
    fn an_assertion_then_silence_ends_after_the_quiet_period() {
        let mut settle = Settle::default();
        settle.line(ASSERTION, ms(1000));
        assert_eq!(settle.deadline(), Some(ms(1500)));
        assert_eq!(settle.end(ms(1499)), None);
        assert_eq!(
            settle.end(ms(1500)),
            Some(RunEnd::Stopped { quiet_ms: 500 })
        );
        assert_eq!(
            settle.end(ms(1730)),
            Some(RunEnd::Stopped { quiet_ms: 730 })
        );
    }

    #[test]
    fn any_line_restarts_the_quiet_period() {
        let mut settle = Settle::default();
        settle.line(ASSERTION, ms(1000));
        settle.line(OTHER, ms(1400));
        assert_eq!(settle.end(ms(1500)), None);
        assert_eq!(settle.deadline(), Some(ms(1900)));
        assert_eq!(
            settle.end(ms(1900)),
            Some(RunEnd::Stopped { quiet_ms: 500 })
        );
    }

    #[test]
    fn a_firmware_printing_on_after_its_assertion_ends_at_the_cap() {
        let mut settle = Settle::default();
        settle.line(ASSERTION, ms(1000));
        let mut t = 1000;
        while t < 2900 {
            t += 100;
            settle.line(OTHER, ms(t));
        }
        assert_eq!(settle.deadline(), Some(ms(3000)));
        assert_eq!(settle.end(ms(2999)), None);
        assert_eq!(
            settle.end(ms(3000)),
            Some(RunEnd::Stopped { quiet_ms: 100 })
        );
    }

    #[test]
    fn a_second_assertion_keeps_the_first_one_s_cap() {
        let mut settle = Settle::default();
        settle.line(ASSERTION, ms(1000));
        settle.line(ASSERTION, ms(1400));
        settle.line(ASSERTION, ms(1800));
        settle.line(OTHER, ms(2700));
        assert_eq!(settle.deadline(), Some(ms(3000)));
    }

    /// ztest's expected faults: the assertion, then the framework's own lines. It came back.
    #[test]
    fn a_harness_line_after_the_assertion_disarms_the_window() {
        let mut settle = Settle::default();
        settle.line(ASSERTION, ms(1000));
        settle.line(OTHER, ms(1100));
        settle.line(HARNESS, ms(1200));
        assert_eq!(settle.deadline(), None);
        assert_eq!(settle.end(ms(60_000)), None);
        // A later assertion arms it afresh, its cap counted from itself.
        settle.line(ASSERTION, ms(5000));
        assert_eq!(settle.deadline(), Some(ms(5500)));
        settle.line(OTHER, ms(6800));
        assert_eq!(settle.deadline(), Some(ms(7000)));
    }

    #[test]
    fn a_stop_is_a_hang_read_at_the_window_s_end_and_nothing_else() {
        let stopped = RunEnd::Stopped { quiet_ms: 500 };
        assert_eq!(stopped_unless(RunEnd::Timeout, stopped), stopped);
        assert_eq!(stopped_unless(RunEnd::Crashed, stopped), RunEnd::Crashed);
        assert_eq!(
            stopped_unless(RunEnd::Cancelled, stopped),
            RunEnd::Cancelled
        );
    }

    /// An assertion line the harness also reads (ztest records assertions) still arms it.
    #[test]
    fn an_assertion_the_harness_keeps_still_arms_the_window() {
        let mut settle = Settle::default();
        settle.line(
            LineRead {
                keep: true,
                ..ASSERTION
            },
            ms(0),
        );
        assert_eq!(settle.deadline(), Some(QUIET));
    }
}
