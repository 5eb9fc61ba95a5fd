//! Bounded in-memory keeping of console lines: the first lines and the last lines of an attempt,
//! each part capped by a line count and a byte count, so a firmware that floods its console cannot
//! exhaust memory. The full text always goes to console.log; this module does no I/O.

use super::ConsoleLine;
use std::collections::VecDeque;

/// How much of a console is kept in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    pub head_lines: usize,
    pub head_bytes: usize,
    pub tail_lines: usize,
    pub tail_bytes: usize,
}

impl Default for StoreLimits {
    /// The first and the last 20,000 lines, at most 4 MiB each: the boot and the verdict both
    /// survive a flood in between.
    fn default() -> Self {
        Self {
            head_lines: 20_000,
            head_bytes: 4 << 20,
            tail_lines: 20_000,
            tail_bytes: 4 << 20,
        }
    }
}

/// Keeps the head of a console whole and a rolling window of its tail.
#[derive(Debug)]
pub struct LineStore {
    limits: StoreLimits,
    head: Vec<ConsoleLine>,
    head_bytes: usize,
    head_full: bool,
    tail: VecDeque<ConsoleLine>,
    tail_bytes: usize,
    dropped: u64,
}

impl LineStore {
    pub fn new(limits: StoreLimits) -> Self {
        Self {
            limits,
            head: Vec::new(),
            head_bytes: 0,
            head_full: false,
            tail: VecDeque::new(),
            tail_bytes: 0,
            dropped: 0,
        }
    }

    pub fn push(&mut self, line: ConsoleLine) {
        let size = line.text.len();
        if !self.head_full {
            if self.head.len() < self.limits.head_lines
                && self.head_bytes + size <= self.limits.head_bytes
            {
                self.head_bytes += size;
                self.head.push(line);
                return;
            }
            // Once the head is closed it stays closed, so the kept lines stay in order.
            self.head_full = true;
        }
        self.tail_bytes += size;
        self.tail.push_back(line);
        while self.tail.len() > self.limits.tail_lines || self.tail_bytes > self.limits.tail_bytes {
            match self.tail.pop_front() {
                Some(old) => {
                    self.tail_bytes -= old.text.len();
                    self.dropped += 1;
                }
                None => break,
            }
        }
    }

    /// Lines dropped from the middle so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The kept lines in order, and whether any were dropped.
    pub fn into_lines(self) -> (Vec<ConsoleLine>, bool) {
        let truncated = self.dropped > 0;
        let mut lines = self.head;
        lines.extend(self.tail);
        (lines, truncated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Stream;

    fn line(i: usize) -> ConsoleLine {
        ConsoleLine {
            t_ms: i as u64,
            stream: Stream::Uart,
            text: format!("line {i:04}"),
        }
    }

    fn limits(head_lines: usize, tail_lines: usize) -> StoreLimits {
        StoreLimits {
            head_lines,
            head_bytes: usize::MAX,
            tail_lines,
            tail_bytes: usize::MAX,
        }
    }

    #[test]
    fn keeps_everything_under_the_limits() {
        let mut s = LineStore::new(limits(5, 5));
        (0..8).for_each(|i| s.push(line(i)));
        let (lines, truncated) = s.into_lines();
        assert!(!truncated);
        assert_eq!(lines, (0..8).map(line).collect::<Vec<_>>());
    }

    #[test]
    fn keeps_head_and_tail_of_a_flood() {
        let mut s = LineStore::new(limits(3, 2));
        (0..100).for_each(|i| s.push(line(i)));
        assert_eq!(s.dropped(), 95);
        let (lines, truncated) = s.into_lines();
        assert!(truncated);
        let times: Vec<u64> = lines.iter().map(|l| l.t_ms).collect();
        assert_eq!(times, vec![0, 1, 2, 98, 99]);
    }

    #[test]
    fn byte_caps_bound_memory() {
        let mut s = LineStore::new(StoreLimits {
            head_lines: 1000,
            head_bytes: 20,
            tail_lines: 1000,
            tail_bytes: 20,
        });
        (0..50).for_each(|i| s.push(line(i)));
        let (lines, truncated) = s.into_lines();
        assert!(truncated);
        // Each line is 9 bytes: two fit in each 20-byte part.
        let times: Vec<u64> = lines.iter().map(|l| l.t_ms).collect();
        assert_eq!(times, vec![0, 1, 48, 49]);
    }

    #[test]
    fn order_is_kept_after_the_head_closes() {
        let mut s = LineStore::new(StoreLimits {
            head_lines: 10,
            head_bytes: 12,
            tail_lines: 10,
            tail_bytes: 1000,
        });
        s.push(line(0));
        s.push(line(1)); // does not fit the head: the head is closed
        s.push(ConsoleLine {
            t_ms: 2,
            stream: Stream::Uart,
            text: "x".into(),
        });
        let (lines, _) = s.into_lines();
        let times: Vec<u64> = lines.iter().map(|l| l.t_ms).collect();
        assert_eq!(times, vec![0, 1, 2]);
    }
}
