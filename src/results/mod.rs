//! Test-output parsers (one per harness), the result model, and verdicts.

pub mod model;

pub use model::{CaseStatus, Summary, TestCase, TestResults, Verdict};
