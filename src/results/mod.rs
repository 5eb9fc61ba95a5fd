//! Test-output parsers (one per harness), the result model, and verdicts.
//!
//! A parser turns one attempt's [`Capture`] into [`TestResults`]: the cases the harness reported,
//! its summary, and a verdict with the reasons for it. Parsers are pure: they read the capture and
//! the [`ParseContext`] the orchestrator hands them, and must not touch files, the clock or the
//! DUT. Symbolising a crash is the caller's job; a parser only needs the function names at the
//! crash site to say which test was running. [`crash_dump`] reads a fault dump the firmware
//! printed into the same snapshot a backend would have read, for the caller to symbolise.

mod attribution;
pub mod crash_dump;
mod lines;
pub mod model;
pub mod unity;
pub mod ztest;

pub use model::{CaseStatus, Summary, TestCase, TestResults, Verdict};
pub use unity::{UnityDetector, UnityParser};
pub use ztest::{ZtestDetector, ZtestParser};

use crate::capture::{Capture, EndDetector};
use crate::config::Harness;

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

/// Why no parser could be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The profile names a harness fwfix does not parse yet.
    #[error("test harness `{harness}` is not supported yet (supported: unity, ztest)")]
    UnsupportedHarness { harness: &'static str },
}

/// The parser for a profile's `[test] harness`.
///
/// The regex harness returns [`ParseError::UnsupportedHarness`] so far, so the caller refuses
/// the profile up front instead of running tests whose output nobody can read.
pub fn parser_for(harness: Harness) -> Result<Box<dyn HarnessParser>, ParseError> {
    match harness {
        Harness::Unity => Ok(Box::new(UnityParser)),
        Harness::Ztest => Ok(Box::new(ZtestParser)),
        Harness::Regex => Err(ParseError::UnsupportedHarness { harness: "regex" }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unity_and_ztest_have_parsers() {
        assert_eq!(parser_for(Harness::Unity).unwrap().name(), "unity");
        assert_eq!(parser_for(Harness::Ztest).unwrap().name(), "ztest");
    }

    #[test]
    fn regex_is_refused_by_name() {
        let err = parser_for(Harness::Regex).err().unwrap();
        assert_eq!(err, ParseError::UnsupportedHarness { harness: "regex" });
        assert!(err.to_string().contains("regex"));
    }
}
