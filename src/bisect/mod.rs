//! Culprit finding, the pure part: the binary search over an ordered list of commits (oldest
//! known good … newest known bad) with skipped commits, how the runs of one step become a verdict
//! (by majority, for flaky tests), and how sure the answer is. `fwfix bisect` and the `revert`
//! strategy share it.
//!
//! Nothing here does I/O, reads a clock or knows git: `orchestrator::bisect` checks out and tests
//! commits and feeds what it saw in. A search goes:
//! 1. [`Bisector::new`] over the commits, the first taken as good and the last as bad (the caller
//!    has tested both).
//! 2. [`Bisector::next_probe`] names the commit to test: the one nearest the middle of what is
//!    still unknown, passing over commits that were skipped.
//! 3. The caller tests it, turns the runs into a verdict with [`judge`], and hands it to
//!    [`Bisector::record`]: GOOD and BAD narrow the range, SKIP (does not build, no majority)
//!    takes the commit out of the running, ERROR (the environment failed) leaves it to be tried
//!    again.
//! 4. When nothing is left to probe, [`Bisector::answer`] is the first bad commit, or the range of
//!    candidates the skipped commits leave undecided.
//! 5. [`confidence`] rates the answer from the steps it rests on.

mod search;
mod verdict;

pub use search::{Answer, Bisector, SearchError};
pub use verdict::{
    confidence, judge, BisectStep, Confidence, Judged, StepRole, StepVerdict, Tally,
};
