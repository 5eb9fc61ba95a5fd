//! What a console that gave no verdict before the test timeout says, in words a firmware engineer
//! can act on: an image that printed nothing at all (a console on a UART the board does not read,
//! an image that never started, a fault or a wait before its console came up), one that printed
//! and then went quiet (how long ago, and its last line), and one still printing when the time ran
//! out (no line decided). Whether the backend watched the core for faults turns "it may have
//! faulted" into "it did not fault". An image that exited without one line on its console printed
//! where the board does not read; the emulator's own lines (an access to memory the machine does
//! not map) say why. Pure: the caller hands in the attempt's UART and host lines, the timeout and
//! where the core was; nothing here reads a clock or a file.

use crate::capture::{is_guest_error, ConsoleLine, RunEnd};

/// A line older than this before the timeout, and more than twice the longest gap between the
/// lines before it, means the console went quiet rather than just had nothing decisive to say.
const QUIET_MIN_MS: u64 = 1_000;
/// The last line is quoted up to this many characters.
const QUOTE_MAX: usize = 120;

/// What the attempt's console did before the timeout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Silence {
    /// A short phrase for the hung case's message: `the firmware printed nothing on its console`.
    pub headline: String,
    /// The full statement, with what it suggests: for the report and the terminal summary.
    pub statement: String,
    /// Lines kept coming up to the timeout: where the core was then is a sample of a running
    /// image, not where it was stuck.
    pub still_printing: bool,
}

/// What is known of the attempt besides its console.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The test timeout the attempt ran into.
    pub timeout_ms: u64,
    /// The backend watched the core for faults (and saw none, or the attempt would have crashed).
    pub faults_watched: bool,
    /// Where the core was when it was stopped at the timeout, already described
    /// (`idle_entry (src/kernel.c:100) at 0x00000356`), when it could be read.
    pub core_at: Option<&'a str>,
    /// The emulator's or flasher's own lines of the attempt (QEMU's guest errors, its
    /// warnings): all a console may hold when the firmware printed nothing.
    pub host: &'a [&'a ConsoleLine],
}

/// Reads the console of an attempt that timed out. `uart` are its live UART lines in order.
pub fn console_silence<'a>(
    uart: impl IntoIterator<Item = &'a ConsoleLine>,
    facts: Facts<'_>,
) -> Silence {
    let uart: Vec<&ConsoleLine> = uart.into_iter().collect();
    let timeout = seconds(facts.timeout_ms);
    let core = facts
        .core_at
        .map(|at| format!("at the timeout the core was running in {at}"));
    let Some(last) = uart.last() else {
        let mut silence = nothing_printed(&timeout, core, facts.faults_watched);
        silence.statement.push_str(&host_note(facts.host));
        return silence;
    };
    let since = facts.timeout_ms.saturating_sub(last.t_ms);
    let widest_gap = uart
        .windows(2)
        .map(|w| w[1].t_ms.saturating_sub(w[0].t_ms))
        .max()
        .unwrap_or(0);
    let quoted = quote(&last.text);
    let fault = if facts.faults_watched {
        "; it did not fault (fwfix's breakpoints on its fault handlers never fired)"
    } else {
        ""
    };
    let core = core.map(|c| format!("; {c}")).unwrap_or_default();
    if since >= QUIET_MIN_MS && since > 2 * widest_gap {
        Silence {
            headline: format!(
                "the console went quiet {} before the timeout, after {quoted}",
                seconds(since)
            ),
            statement: format!(
                "the console went quiet: its last line came at {}, {} before the {timeout} \
                 timeout, and nothing followed ({} in all; the last was {quoted}){fault}{core}",
                seconds(last.t_ms),
                seconds(since),
                lines(uart.len()),
            ),
            still_printing: false,
        }
    } else {
        Silence {
            headline: format!(
                "the console was still printing ({}, the last {} before the timeout), but no line \
                 gave a verdict",
                lines(uart.len()),
                seconds(since)
            ),
            statement: format!(
                "the console was still printing when the {timeout} timeout came ({}, the last \
                 {} before it: {quoted}) but no line gave a verdict: check the profile's patterns \
                 against console.log, or give the test a longer timeout{fault}{core}",
                lines(uart.len()),
                seconds(since)
            ),
            still_printing: true,
        }
    }
}

/// What an attempt that exited without one line on its console says: it ran to its end, so its
/// output went somewhere this board does not read. `host` are the emulator's or flasher's own
/// lines of the attempt; `None` when the console had a line, or the attempt ended another way
/// (a crash or a timeout explains itself, a runner that died or a lost port is not the image's).
pub fn exited_without_output(
    uart_lines: usize,
    end: RunEnd,
    host: &[&ConsoleLine],
) -> Option<String> {
    let RunEnd::Exited { code } = end else {
        return None;
    };
    if uart_lines > 0 {
        return None;
    }
    Some(format!(
        "nothing came on the console at all, yet the image ran to its exit (code {code}): it \
         prints where this board does not read (a UART at another address or another serial \
         port, as an image built for another board does), or never brings its console up{}",
        host_note(host)
    ))
}

/// What the emulator's own lines add when the firmware printed nothing: an access to memory the
/// machine does not map says the image was built for another one.
fn host_note(host: &[&ConsoleLine]) -> String {
    let Some(first) = host.first() else {
        return String::new();
    };
    let unmapped = host.iter().find(|l| is_guest_error(&l.text));
    match unmapped {
        Some(line) => format!(
            "; the host side (emulator or flasher) logged {} of its own, among them {}: the image \
             reads or writes memory this machine does not map, as one built for another board or machine does",
            lines(host.len()),
            quote(&line.text)
        ),
        None => format!(
            "; the host side (emulator or flasher) logged {} of its own (the first: {})",
            lines(host.len()),
            quote(&first.text)
        ),
    }
}

fn nothing_printed(timeout: &str, core: Option<String>, faults_watched: bool) -> Silence {
    let headline = "the firmware printed nothing on its console".to_string();
    let statement = match (faults_watched, core) {
        (true, Some(core)) => format!(
            "{headline} in {timeout}, and it did not fault (fwfix's breakpoints on its fault handlers never \
             fired); {core}. It runs, so its output goes where this board does not read: check \
             which UART the firmware prints on and the board's machine (or serial port and baud \
             rate), or whether it waits for something before it brings its console up; or the \
             task that prints never got to run, starved by a higher-priority loop (look at \
             where the core was)"
        ),
        (true, None) => format!(
            "{headline} in {timeout}, and it did not fault (fwfix's breakpoints on its fault handlers never \
             fired); where the core was could not be read. The image may not have started (a \
             wrong load address or entry point, an image for another machine), may print on a \
             UART this board does not read, or may wait for something before its console comes up"
        ),
        (false, core) => format!(
            "{headline} in {timeout}{}. Nothing watched its fault handlers here, so a fault before the \
             console came up is possible; otherwise it prints on a UART this board does not read \
             (another UART or serial port, a wrong baud rate, an image for another machine), or it \
             never started",
            core.map(|c| format!("; {c}")).unwrap_or_default()
        ),
    };
    Silence {
        headline,
        statement,
        still_printing: false,
    }
}

fn seconds(ms: u64) -> String {
    format!("{}.{} s", ms / 1_000, (ms % 1_000) / 100)
}

fn lines(n: usize) -> String {
    if n == 1 {
        "1 line".to_string()
    } else {
        format!("{n} lines")
    }
}

/// The line in backquotes, cut at [`QUOTE_MAX`] characters.
fn quote(text: &str) -> String {
    let text = text.trim_end();
    match text.char_indices().nth(QUOTE_MAX) {
        Some((at, _)) => format!("`{}…`", &text[..at]),
        None => format!("`{text}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Stream;

    fn uart(lines: &[(u64, &str)]) -> Vec<ConsoleLine> {
        lines
            .iter()
            .map(|(t_ms, text)| ConsoleLine {
                t_ms: *t_ms,
                stream: Stream::Uart,
                text: (*text).to_string(),
            })
            .collect()
    }

    const IDLE: &str = "idle_entry (src/kernel.c:100) at 0x00000356";

    #[test]
    fn nothing_printed_on_a_watched_core_that_runs_points_at_the_console() {
        let s = console_silence(
            &[],
            Facts {
                timeout_ms: 15_000,
                faults_watched: true,
                core_at: Some(IDLE),
                host: &[],
            },
        );
        assert_eq!(s.headline, "the firmware printed nothing on its console");
        assert!(
            s.statement
                .starts_with("the firmware printed nothing on its console in 15.0 s, and"),
            "{}",
            s.statement
        );
        assert!(s.statement.contains("it did not fault"), "{}", s.statement);
        assert!(
            s.statement
                .contains("at the timeout the core was running in idle_entry (src/kernel.c:100)"),
            "{}",
            s.statement
        );
        assert!(s.statement.contains("which UART"), "{}", s.statement);
        assert!(
            s.statement.contains("starved by a higher-priority loop"),
            "{}",
            s.statement
        );
        assert!(!s.still_printing);
    }

    #[test]
    fn nothing_printed_and_nothing_read_names_every_likely_cause() {
        let s = console_silence(
            &[],
            Facts {
                timeout_ms: 4_000,
                faults_watched: true,
                core_at: None,
                host: &[],
            },
        );
        assert!(
            s.statement.contains("may not have started"),
            "{}",
            s.statement
        );
        // Without a watch, a fault is not ruled out.
        let s = console_silence(
            &[],
            Facts {
                timeout_ms: 4_000,
                faults_watched: false,
                core_at: None,
                host: &[],
            },
        );
        assert!(!s.statement.contains("did not fault"), "{}", s.statement);
        assert!(
            s.statement
                .contains("a fault before the console came up is possible"),
            "{}",
            s.statement
        );
    }

    #[test]
    fn a_console_that_went_quiet_says_since_when_and_its_last_line() {
        let lines = uart(&[(40, "rtos: mps2-an385, variant ok"), (900, "init: sensors")]);
        let s = console_silence(
            &lines,
            Facts {
                timeout_ms: 5_000,
                faults_watched: true,
                core_at: Some(IDLE),
                host: &[],
            },
        );
        assert_eq!(
            s.headline,
            "the console went quiet 4.1 s before the timeout, after `init: sensors`"
        );
        assert!(
            s.statement.starts_with(
                "the console went quiet: its last line came at 0.9 s, 4.1 s before the 5.0 s \
                 timeout, and nothing followed (2 lines in all; the last was `init: sensors`)"
            ),
            "{}",
            s.statement
        );
        assert!(s.statement.contains("did not fault"), "{}", s.statement);
    }

    #[test]
    fn a_console_still_printing_at_its_own_pace_did_not_go_quiet() {
        // A status line every 5 s and a 15 s timeout: 4.9 s since the last is its usual pace.
        let lines = uart(&[(100, "PASS : 5000"), (5_100, "PASS : 10000")]);
        let s = console_silence(
            &lines,
            Facts {
                timeout_ms: 10_000,
                faults_watched: false,
                core_at: None,
                host: &[],
            },
        );
        assert!(
            s.headline
                .starts_with("the console was still printing (2 lines"),
            "{}",
            s.headline
        );
        assert!(s.statement.contains("check the profile's patterns"));
        assert!(s.still_printing);
        assert!(!s.statement.contains("did not fault"));
    }

    #[test]
    fn a_long_last_line_is_cut() {
        let long = "x".repeat(500);
        let lines = uart(&[(0, long.as_str())]);
        let s = console_silence(
            &lines,
            Facts {
                timeout_ms: 10_000,
                faults_watched: false,
                core_at: None,
                host: &[],
            },
        );
        assert!(s.headline.len() < 220, "{}", s.headline);
        assert!(s.headline.ends_with("…`"), "{}", s.headline);
    }

    fn host(lines: &[&str]) -> Vec<ConsoleLine> {
        lines
            .iter()
            .map(|text| ConsoleLine {
                t_ms: 5,
                stream: Stream::Host,
                text: (*text).to_string(),
            })
            .collect()
    }

    #[test]
    fn an_image_that_exited_without_a_line_printed_where_the_board_does_not_read() {
        let s = exited_without_output(0, RunEnd::Exited { code: 0 }, &[]).unwrap();
        assert!(
            s.starts_with(
                "nothing came on the console at all, yet the image ran to its exit (code 0)"
            ),
            "{s}"
        );
        assert!(s.contains("built for another board"), "{s}");
        // A line on the console, a crash or a timeout: said elsewhere.
        assert_eq!(
            exited_without_output(1, RunEnd::Exited { code: 0 }, &[]),
            None
        );
        assert_eq!(exited_without_output(0, RunEnd::Crashed, &[]), None);
        assert_eq!(exited_without_output(0, RunEnd::Timeout, &[]), None);
    }

    #[test]
    fn a_console_of_host_lines_only_quotes_them_and_reads_an_unmapped_access() {
        let noise = host(&[
            "Timer with period zero, disabling",
            "Invalid write at addr 0x203FFFF8, size 4, region '(null)', reason: rejected",
        ]);
        let noise: Vec<&ConsoleLine> = noise.iter().collect();
        let s = exited_without_output(0, RunEnd::Exited { code: 1 }, &noise).unwrap();
        assert!(
            s.contains(
                "the host side (emulator or flasher) logged 2 lines of its own, among them `Invalid write at addr \
                 0x203FFFF8, size 4, region '(null)', reason: rejected`: the image reads or \
                 writes memory this machine does not map"
            ),
            "{s}"
        );
        let warning = host(&["Timer with period zero, disabling"]);
        let warning: Vec<&ConsoleLine> = warning.iter().collect();
        let s = console_silence(
            &[],
            Facts {
                timeout_ms: 3_000,
                faults_watched: true,
                core_at: None,
                host: &warning,
            },
        );
        assert!(
            s.statement.ends_with(
                "; the host side (emulator or flasher) logged 1 line of its own (the first: `Timer with period zero, \
                 disabling`)"
            ),
            "{}",
            s.statement
        );
    }
}
