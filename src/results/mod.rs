//! Test-output parsers (one per harness), the result model, and verdicts.
//!
//! A parser turns one attempt's [`Capture`] into [`TestResults`]: the cases the harness reported,
//! its summary, and a verdict with the reasons for it. Parsers are pure: they read the capture and
//! the [`ParseContext`] the orchestrator hands them, and must not touch files, the clock or the
//! DUT. Symbolising a crash is the caller's job; a parser only needs the function names at the
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

pub use model::{CaseStatus, Summary, TestCase, TestResults, Verdict};
pub use regex_harness::{RegexDetector, RegexParser};
pub use unity::{UnityDetector, UnityParser};
pub use ztest::{ZtestDetector, ZtestParser};

use crate::capture::{Capture, EndDetector};
use crate::config::{Harness, RegexSpec};

/// One harness's console format: how to tell that the run is over, and what it reported.
pub trait HarnessParser: Send + Sync {
    /// The harness name as it appears in results and reports, e.g. `unity`.
    fn name(&self) -> &'static str;
    /// A fresh detector for one attempt: true once the final verdict line has arrived.
    fn detector(&self) -> Box<dyn EndDetector>;
    /// Parse one attempt's capture into results with a verdict.
    fn parse(&self, capture: &Capture, ctx: &ParseContext) -> TestResults;
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
    use crate::config::{Pattern, RegexMode};

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
