//! The binary search itself: which commit to test next, what a verdict rules out, when to stop,
//! and the answer. Indices are positions in the caller's list, 0 the known-good commit and
//! `len - 1` the known-bad one; the search never probes either. Pure; no I/O.

use super::StepVerdict;

/// What is known about one commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Unknown,
    Good,
    Bad,
    Skip,
}

/// The end of a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The first bad commit: it is BAD and the commit before it GOOD.
    Culprit(usize),
    /// Skipped commits hide the culprit: it is one of `first..=last`, where every commit but
    /// `last` (which is BAD) was skipped, and the commit before `first` is GOOD.
    Ambiguous { first: usize, last: usize },
}

/// A verdict the search cannot accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    #[error("a bisect needs a good and a bad commit; got {len} commit(s)")]
    TooShort { len: usize },
    #[error("commit #{index} is outside the {len} commits searched")]
    OutOfRange { index: usize, len: usize },
    /// GOOD after a BAD commit, or BAD before a GOOD one: the history is not one good stretch
    /// followed by one bad stretch, or a step's majority was wrong.
    #[error("commit #{index} is {verdict}, but commit #{other} before it is BAD or after it GOOD")]
    Contradiction {
        index: usize,
        verdict: StepVerdict,
        other: usize,
    },
    #[error("commit #{index} already has a verdict; it cannot be skipped")]
    AlreadyDecided { index: usize },
}

/// A search over `len` commits in history order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bisector {
    marks: Vec<Mark>,
}

impl Bisector {
    /// Starts a search with commit 0 taken as GOOD and commit `len - 1` as BAD.
    pub fn new(len: usize) -> Result<Bisector, SearchError> {
        if len < 2 {
            return Err(SearchError::TooShort { len });
        }
        let mut marks = vec![Mark::Unknown; len];
        marks[0] = Mark::Good;
        marks[len - 1] = Mark::Bad;
        Ok(Bisector { marks })
    }

    pub fn len(&self) -> usize {
        self.marks.len()
    }

    /// Never true: a search holds at least its good and its bad commit.
    pub fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }

    /// The last GOOD commit and the first BAD one: the culprit is after the one, at or before
    /// the other.
    fn bounds(&self) -> (usize, usize) {
        let lo = self
            .marks
            .iter()
            .rposition(|m| *m == Mark::Good)
            .unwrap_or(0);
        let hi = self
            .marks
            .iter()
            .position(|m| *m == Mark::Bad)
            .unwrap_or(self.marks.len() - 1);
        (lo, hi)
    }

    /// The commit to test next, or None when the search is over: of the commits between the last
    /// GOOD and the first BAD that are neither tested nor skipped, the one nearest the middle
    /// (the older on a tie).
    pub fn next_probe(&self) -> Option<usize> {
        let (lo, hi) = self.bounds();
        let mid = lo + (hi - lo) / 2;
        (lo + 1..hi)
            .filter(|i| self.marks[*i] == Mark::Unknown)
            .min_by_key(|i| (i.abs_diff(mid), *i))
    }

    /// Records what testing commit `index` showed. ERROR records nothing, so the same commit is
    /// proposed again: the caller decides how often to retry before giving up.
    pub fn record(&mut self, index: usize, verdict: StepVerdict) -> Result<(), SearchError> {
        let len = self.marks.len();
        if index >= len {
            return Err(SearchError::OutOfRange { index, len });
        }
        let (lo, hi) = self.bounds();
        let mark = match verdict {
            StepVerdict::Error => return Ok(()),
            StepVerdict::Good if index >= hi => {
                return Err(SearchError::Contradiction {
                    index,
                    verdict,
                    other: hi,
                })
            }
            StepVerdict::Bad if index <= lo => {
                return Err(SearchError::Contradiction {
                    index,
                    verdict,
                    other: lo,
                })
            }
            StepVerdict::Skip if matches!(self.marks[index], Mark::Good | Mark::Bad) => {
                return Err(SearchError::AlreadyDecided { index })
            }
            StepVerdict::Good => Mark::Good,
            StepVerdict::Bad => Mark::Bad,
            StepVerdict::Skip => Mark::Skip,
        };
        self.marks[index] = mark;
        Ok(())
    }

    /// What is recorded for commit `index` (None: not tested yet).
    pub fn verdict(&self, index: usize) -> Option<StepVerdict> {
        match self.marks.get(index)? {
            Mark::Unknown => None,
            Mark::Good => Some(StepVerdict::Good),
            Mark::Bad => Some(StepVerdict::Bad),
            Mark::Skip => Some(StepVerdict::Skip),
        }
    }

    /// The answer once [`Bisector::next_probe`] has nothing left; None while it has.
    pub fn answer(&self) -> Option<Answer> {
        if self.next_probe().is_some() {
            return None;
        }
        let (lo, hi) = self.bounds();
        Some(if hi == lo + 1 {
            Answer::Culprit(hi)
        } else {
            Answer::Ambiguous {
                first: lo + 1,
                last: hi,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;
    use StepVerdict::*;

    /// Runs a whole search against a history whose first bad commit is `culprit`.
    fn search(len: usize, culprit: usize, skips: &BTreeSet<usize>) -> (Answer, Vec<usize>) {
        let mut b = Bisector::new(len).unwrap();
        let mut probes = Vec::new();
        while let Some(i) = b.next_probe() {
            probes.push(i);
            let v = if skips.contains(&i) {
                Skip
            } else if i >= culprit {
                Bad
            } else {
                Good
            };
            b.record(i, v).unwrap();
        }
        (b.answer().unwrap(), probes)
    }

    #[test]
    fn two_commits_need_no_probe() {
        let b = Bisector::new(2).unwrap();
        assert_eq!(b.next_probe(), None);
        assert_eq!(b.answer(), Some(Answer::Culprit(1)));
        assert_eq!(Bisector::new(1), Err(SearchError::TooShort { len: 1 }));
    }

    #[test]
    fn probes_the_middle_and_halves() {
        let mut b = Bisector::new(9).unwrap();
        assert_eq!(b.next_probe(), Some(4));
        b.record(4, Good).unwrap();
        assert_eq!(b.next_probe(), Some(6));
        b.record(6, Bad).unwrap();
        assert_eq!(b.next_probe(), Some(5));
        assert_eq!(b.answer(), None);
        b.record(5, Good).unwrap();
        assert_eq!(b.answer(), Some(Answer::Culprit(6)));
        assert_eq!(b.verdict(5), Some(Good));
        assert_eq!(b.verdict(7), None);
    }

    #[test]
    fn a_skipped_commit_sends_the_search_to_its_nearest_neighbour() {
        let mut b = Bisector::new(11).unwrap();
        assert_eq!(b.next_probe(), Some(5));
        b.record(5, Skip).unwrap();
        assert_eq!(b.next_probe(), Some(4));
        b.record(4, Skip).unwrap();
        assert_eq!(b.next_probe(), Some(6));
    }

    #[test]
    fn an_error_leaves_the_commit_to_be_tried_again() {
        let mut b = Bisector::new(5).unwrap();
        let first = b.next_probe().unwrap();
        b.record(first, Error).unwrap();
        assert_eq!(b.next_probe(), Some(first));
        assert_eq!(b.verdict(first), None);
    }

    #[test]
    fn skips_around_the_culprit_leave_a_range() {
        let skips: BTreeSet<usize> = [4, 5].into();
        let (answer, _) = search(10, 5, &skips);
        assert_eq!(answer, Answer::Ambiguous { first: 4, last: 6 });
        let (answer, _) = search(10, 6, &[5].into());
        assert_eq!(answer, Answer::Ambiguous { first: 5, last: 6 });
        let (answer, _) = search(10, 7, &[5].into());
        assert_eq!(answer, Answer::Culprit(7));
    }

    #[test]
    fn contradictions_and_bad_indices_are_refused() {
        let mut b = Bisector::new(10).unwrap();
        b.record(5, Bad).unwrap();
        assert!(matches!(
            b.record(7, Good),
            Err(SearchError::Contradiction { index: 7, .. })
        ));
        b.record(2, Good).unwrap();
        assert!(matches!(
            b.record(1, Bad),
            Err(SearchError::Contradiction { index: 1, .. })
        ));
        assert_eq!(
            b.record(2, Skip),
            Err(SearchError::AlreadyDecided { index: 2 })
        );
        assert_eq!(
            b.record(10, Good),
            Err(SearchError::OutOfRange { index: 10, len: 10 })
        );
        // Re-stating what is known is fine.
        b.record(1, Good).unwrap();
        b.record(8, Bad).unwrap();
    }

    fn log2_ceil(n: usize) -> usize {
        (usize::BITS - (n.max(1) - 1).leading_zeros()) as usize
    }

    /// A history with its culprit, the commits that do not build, and how many runs of each
    /// probe flip (always fewer than half).
    fn history() -> impl Strategy<Value = (usize, usize, BTreeSet<usize>, u32, Vec<u32>)> {
        (2usize..300).prop_flat_map(|len| {
            (
                Just(len),
                1..len,
                proptest::collection::btree_set(0..len, 0..len.min(12)),
                prop_oneof![Just(1u32), Just(3), Just(5)],
                proptest::collection::vec(0u32..100, 64),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn finds_the_culprit_unless_a_skip_hides_it_within_log2_plus_skips_probes(
            (len, culprit, skips, runs, flips) in history()
        ) {
            // The good and bad ends were tested by the caller: never skipped.
            let skips: BTreeSet<usize> = skips.into_iter().filter(|i| *i > 0 && *i < len - 1).collect();
            let mut b = Bisector::new(len).unwrap();
            let mut probes = 0usize;
            let mut skipped = 0usize;
            while let Some(i) = b.next_probe() {
                prop_assert!(i > 0 && i < len - 1, "probed an end: {i}");
                probes += 1;
                let verdict = if skips.contains(&i) {
                    skipped += 1;
                    Skip
                } else {
                    // Flaky runs: fewer than half of them show the wrong result.
                    let wrong = flips[probes % flips.len()] % runs.div_ceil(2);
                    let right = runs - wrong;
                    let (passed, failed) = if i >= culprit { (wrong, right) } else { (right, wrong) };
                    super::super::judge(super::super::Tally { passed, failed, undecided: 0 }, runs).verdict
                };
                b.record(i, verdict).unwrap();
                prop_assert!(probes <= len, "the search does not end");
            }
            prop_assert!(probes <= log2_ceil(len) + skipped + 1,
                "{probes} probes for {len} commits and {skipped} skips");
            let hidden = skips.contains(&culprit) || skips.contains(&(culprit - 1));
            match b.answer().unwrap() {
                Answer::Culprit(c) => {
                    prop_assert!(!hidden);
                    prop_assert_eq!(c, culprit);
                }
                Answer::Ambiguous { first, last } => {
                    prop_assert!(hidden, "ambiguous without a skip hiding culprit {culprit}");
                    prop_assert!(first <= culprit && culprit <= last);
                    prop_assert!((first..last).all(|i| skips.contains(&i)));
                    prop_assert_eq!(b.verdict(first - 1), Some(Good));
                    prop_assert_eq!(b.verdict(last), Some(Bad));
                }
            }
        }
    }
}
