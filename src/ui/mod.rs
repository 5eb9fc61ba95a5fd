//! Renders what the library reports: progress on a terminal ([`TerminalSink`]), one JSON object
//! per line with `--json` ([`JsonSink`]), and the final summary table ([`print_summary`]); and
//! asks a person to approve a patch ([`Console`]). This is
//! one of the two places (with `cli/`) allowed to print. It must not decide anything about a run:
//! it only shows events and reports it is given.
//!
//! Streams: progress, warnings and errors go to stderr; stdout is kept for the summary and the
//! `--json` stream, so scripts can read stdout while a person watches stderr.

mod approve;
mod json;
mod summary;
mod terminal;

pub use approve::{Console, TerminalApprover};
pub use json::JsonSink;
pub use summary::{
    print_pairs_summary, print_summary, render_pairs_summary, render_summary, PairRow, SummaryStyle,
};
pub use terminal::TerminalSink;

use std::io::IsTerminal;

/// Whether to use ANSI colour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when the stream is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    /// Always colour, even into a pipe or with `NO_COLOR` (an explicit flag beats the
    /// environment, as no-color.org asks).
    Always,
    Never,
}

impl ColorChoice {
    /// The decision for one stream, from the facts about it.
    pub fn enabled(self, is_terminal: bool, no_color: bool) -> bool {
        match self {
            ColorChoice::Auto => is_terminal && !no_color,
            ColorChoice::Always => true,
            ColorChoice::Never => false,
        }
    }

    /// Whether to colour stdout.
    pub fn for_stdout(self) -> bool {
        self.enabled(std::io::stdout().is_terminal(), no_color_requested())
    }

    /// Whether to colour stderr.
    pub fn for_stderr(self) -> bool {
        self.enabled(std::io::stderr().is_terminal(), no_color_requested())
    }
}

/// `NO_COLOR` set to anything but the empty string (no-color.org). Read here rather than in
/// `config/` because it is a display convention of the terminal, not a setting of a run.
fn no_color_requested() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty())
}

/// How the terminal UI behaves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UiOptions {
    /// No progress at all: only warnings and errors, as plain lines on stderr.
    pub quiet: bool,
    pub color: ColorChoice,
    /// Show the firmware's console lines as they arrive.
    pub verbose: bool,
}

/// The few colours the UI uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paint {
    Green,
    Red,
    Yellow,
    Dim,
    Bold,
}

/// `text` wrapped in the ANSI codes for `paint`, or unchanged when colour is off.
pub(crate) fn paint(text: &str, paint: Paint, color: bool) -> String {
    if !color {
        return text.to_string();
    }
    let code = match paint {
        Paint::Green => "32",
        Paint::Red => "31",
        Paint::Yellow => "33",
        Paint::Dim => "2",
        Paint::Bold => "1",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// At most `width` characters, with `…` marking a cut, and control characters shown (see
/// [`crate::report::visible`]) rather than sent to the terminal.
fn truncate(text: &str, width: usize) -> String {
    let text = crate::report::visible(text);
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_colours_only_a_terminal_without_no_color() {
        assert!(ColorChoice::Auto.enabled(true, false));
        assert!(!ColorChoice::Auto.enabled(false, false));
        assert!(!ColorChoice::Auto.enabled(true, true));
        assert!(ColorChoice::Always.enabled(false, true));
        assert!(!ColorChoice::Never.enabled(true, false));
    }

    #[test]
    fn paint_is_plain_without_colour() {
        assert_eq!(paint("FAIL", Paint::Red, false), "FAIL");
        assert_eq!(paint("FAIL", Paint::Red, true), "\x1b[31mFAIL\x1b[0m");
    }

    #[test]
    fn truncate_marks_the_cut() {
        assert_eq!(truncate("abcdef", 10), "abcdef");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("äöüäöü", 3), "äö…");
    }
}
