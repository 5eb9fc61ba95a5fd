//! CONVERGENCE_CHECK's rules: given the verdicts so far, stop, run again, or go round again.
//!
//! Pure. `fwfix test` has no patches to try: it runs the image `repeat` times and succeeds only
//! when every attempt passed.

use super::recovery::Decision;
use super::transition::Outcome;

/// A verdict as convergence sees it (the result model's verdict, without depending on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptVerdict {
    Pass,
    Fail,
    Inconclusive,
    EnvError,
}

/// `fwfix test`: run `repeat` attempts of the same image, then pass only if all passed.
pub fn test_mode(verdicts: &[AttemptVerdict], repeat: u32) -> Decision {
    let done = verdicts.len();
    let want = repeat.max(1) as usize;
    if done < want {
        return Decision {
            outcome: Outcome::Rerun,
            reason: format!("attempt {} of {want}", done + 1),
        };
    }
    let passed = verdicts
        .iter()
        .filter(|v| **v == AttemptVerdict::Pass)
        .count();
    if passed == done {
        let reason = if done == 1 {
            "every test passed".to_string()
        } else {
            format!("every test passed on all {done} attempts")
        };
        return Decision {
            outcome: Outcome::Converged,
            reason,
        };
    }
    let reason = if done == 1 {
        match verdicts[0] {
            AttemptVerdict::Inconclusive => "the results are inconclusive".to_string(),
            AttemptVerdict::EnvError => "the environment failed the attempt".to_string(),
            AttemptVerdict::Fail | AttemptVerdict::Pass => "tests failed".to_string(),
        }
    } else if passed > 0 {
        format!("flaky: passed on {passed} of {done} attempts")
    } else {
        format!("tests failed on all {done} attempts")
    };
    Decision {
        outcome: Outcome::GiveUp,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AttemptVerdict::*;

    #[test]
    fn runs_until_repeat_attempts_are_done() {
        assert_eq!(test_mode(&[], 1).outcome, Outcome::Rerun);
        assert_eq!(test_mode(&[Pass], 3).outcome, Outcome::Rerun);
        assert_eq!(test_mode(&[Pass, Fail], 3).reason, "attempt 3 of 3");
    }

    #[test]
    fn passes_only_when_every_attempt_passed() {
        assert_eq!(test_mode(&[Pass], 1).outcome, Outcome::Converged);
        assert_eq!(
            test_mode(&[Pass, Pass, Pass], 3).outcome,
            Outcome::Converged
        );
        let d = test_mode(&[Pass, Fail, Pass], 3);
        assert_eq!(d.outcome, Outcome::GiveUp);
        assert_eq!(d.reason, "flaky: passed on 2 of 3 attempts");
        assert_eq!(test_mode(&[Fail], 1).reason, "tests failed");
        assert_eq!(
            test_mode(&[Inconclusive], 1).reason,
            "the results are inconclusive"
        );
    }
}
