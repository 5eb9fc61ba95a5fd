//! Flaky as a statistic: a test's pass rate over repeated runs of one image, with its Wilson 95%
//! confidence interval, the flaky call, and the sequential rule that stops re-running an image
//! once its verdict is decided. Pure arithmetic, no I/O.
//!
//! What the interval can and cannot say. Wilson's interval excludes 0 exactly when the test
//! passed at least once, and excludes 1 exactly when it failed at least once, at any number of
//! runs (its lower bound is `p̂(1 + z²/n) > 0` over a positive denominator whenever `p̂ > 0`, and
//! symmetrically). So the call "flaky when the interval excludes both 0 and 1" needs 2 runs and
//! both outcomes — 1 failure in 20 is flaky, `0.95 [0.76, 0.99]` — and no number of runs makes a
//! test that never failed flaky. What more runs buy is how sure the rate is: a test that passed
//! all of `n` runs has a failure rate below `z²/(n + z²)` with 95% confidence — 16% after 20
//! runs, 10% after 35, 1% after 381 — which is why the reports show the interval, not just
//! PASS.
//!
//! The sequential rule ([`sequential`]): an image whose runs disagree is re-run until the
//! interval of its pass rate lies wholly above or wholly below a threshold (it passes more often
//! than not, or fails more often than not), or a maximum number of runs is reached — so a clear
//! case stops early and an unclear one costs at most the maximum.

use serde::{Deserialize, Serialize};

/// The normal quantile of a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// A confidence interval of a proportion, both ends in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

/// The Wilson score interval of `passed` successes in `runs` trials at quantile `z`; None for no
/// runs (nothing is known).
pub fn wilson(passed: u32, runs: u32, z: f64) -> Option<Interval> {
    if runs == 0 {
        return None;
    }
    let n = f64::from(runs);
    let p = f64::from(passed.min(runs)) / n;
    let z2 = z * z;
    let centre = p + z2 / (2.0 * n);
    let spread = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    let denominator = 1.0 + z2 / n;
    // The exact ends at 0 and at n, where rounding would otherwise leave 1e-17 or 0.9999….
    let low = if passed == 0 {
        0.0
    } else {
        ((centre - spread) / denominator).clamp(0.0, 1.0)
    };
    let high = if passed >= runs {
        1.0
    } else {
        ((centre + spread) / denominator).clamp(0.0, 1.0)
    };
    Some(Interval { low, high })
}

/// What repeated runs say about one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(schemars::JsonSchema)]
pub enum Call {
    /// Passed every run.
    Pass,
    /// Failed every run.
    Fail,
    /// The interval excludes both 0 and 1: both outcomes are really there.
    Flaky,
}

/// The call on a test that passed `passed` of `runs` times (None for no runs).
pub fn call(passed: u32, runs: u32) -> Option<Call> {
    let interval = wilson(passed, runs, Z95)?;
    Some(if interval.low > 0.0 && interval.high < 1.0 {
        Call::Flaky
    } else if interval.low > 0.0 {
        Call::Pass
    } else {
        Call::Fail
    })
}

/// The sequential rule's answer after some runs of one image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sequential {
    /// Still undecided and runs are left: run it again.
    Continue,
    /// The whole interval is above the threshold: it passes more often than not.
    Above,
    /// The whole interval is below the threshold: it fails more often than not.
    Below,
    /// The maximum was reached undecided.
    Undecided,
}

/// Decides whether to run an image again: stop once the Wilson 95% interval of `passed` of
/// `runs` excludes `threshold`, or when `runs` reaches `max_runs`.
pub fn sequential(passed: u32, runs: u32, threshold: f64, max_runs: u32) -> Sequential {
    match wilson(passed, runs, Z95) {
        Some(i) if i.low > threshold => Sequential::Above,
        Some(i) if i.high < threshold => Sequential::Below,
        Some(_) | None if runs < max_runs => Sequential::Continue,
        Some(_) | None => Sequential::Undecided,
    }
}

/// `0.95 [0.76, 0.99]`: a rate and its interval for people.
pub fn describe(passed: u32, runs: u32) -> String {
    match wilson(passed, runs, Z95) {
        Some(i) => format!(
            "{:.2} [{:.2}, {:.2}]",
            f64::from(passed) / f64::from(runs),
            i.low,
            i.high
        ),
        None => "no runs".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-4
    }

    #[test]
    fn wilson_matches_published_values() {
        // Newcombe (1998), table I: 81/263 → 0.2553–0.3662; 15/148 → 0.0624–0.1605.
        let i = wilson(81, 263, Z95).unwrap();
        assert!(close(i.low, 0.2553) && close(i.high, 0.3662), "{i:?}");
        let i = wilson(15, 148, Z95).unwrap();
        assert!(close(i.low, 0.0624) && close(i.high, 0.1605), "{i:?}");
        // 0/10 → 0–0.2775 (the rule of three's smoother cousin).
        let i = wilson(0, 10, Z95).unwrap();
        assert_eq!(i.low, 0.0);
        assert!(close(i.high, 0.2775), "{i:?}");
        assert_eq!(wilson(0, 0, Z95), None);
    }

    #[test]
    fn the_flaky_call_needs_both_outcomes_and_no_more() {
        assert_eq!(call(0, 0), None);
        assert_eq!(call(1, 1), Some(Call::Pass));
        assert_eq!(call(0, 3), Some(Call::Fail));
        assert_eq!(call(1, 2), Some(Call::Flaky));
        assert_eq!(call(19, 20), Some(Call::Flaky));
        assert_eq!(call(1000, 1000), Some(Call::Pass));
        assert_eq!(describe(19, 20), "0.95 [0.76, 0.99]");
    }

    #[test]
    fn always_passing_bounds_the_failure_rate_as_documented() {
        for (runs, bound) in [(20, 0.17), (35, 0.10), (381, 0.01)] {
            let i = wilson(runs, runs, Z95).unwrap();
            assert!(1.0 - i.low < bound, "{runs}: {i:?}");
        }
    }

    #[test]
    fn sequential_stops_when_the_interval_leaves_the_threshold() {
        assert_eq!(sequential(1, 2, 0.5, 10), Sequential::Continue);
        // 7 of 8: [0.53, 0.98] is above one half.
        assert_eq!(sequential(7, 8, 0.5, 10), Sequential::Above);
        assert_eq!(sequential(6, 7, 0.5, 10), Sequential::Continue);
        assert_eq!(sequential(1, 8, 0.5, 10), Sequential::Below);
        assert_eq!(sequential(5, 10, 0.5, 10), Sequential::Undecided);
        assert_eq!(sequential(0, 0, 0.5, 0), Sequential::Undecided);
    }

    proptest! {
        #[test]
        fn the_interval_holds_the_rate_and_narrows_with_runs(passed in 0u32..500, extra in 0u32..500) {
            let runs = passed + extra;
            prop_assume!(runs > 0);
            let i = wilson(passed, runs, Z95).unwrap();
            let p = f64::from(passed) / f64::from(runs);
            prop_assert!(0.0 <= i.low && i.low <= p + 1e-12 && p <= i.high + 1e-12 && i.high <= 1.0);
            // The same rate on twice the runs is no wider.
            let twice = wilson(passed * 2, runs * 2, Z95).unwrap();
            prop_assert!(twice.high - twice.low <= i.high - i.low + 1e-12);
            // Flaky exactly when both outcomes were seen.
            prop_assert_eq!(call(passed, runs) == Some(Call::Flaky), passed > 0 && passed < runs);
        }

        #[test]
        fn sequential_never_runs_past_its_maximum(passed in 0u32..40, runs in 0u32..40, max in 0u32..40) {
            let passed = passed.min(runs);
            if runs >= max {
                prop_assert_ne!(sequential(passed, runs, 0.5, max), Sequential::Continue);
            }
        }
    }
}
