//! Bounded in-memory keeping of console lines: the first lines and the last lines of an attempt's
//! UART, each part capped by a line count and a byte count, so a firmware that floods its console
//! cannot exhaust memory. From the middle only the lines the harness reads survive (its results,
//! summaries and pattern matches, as its [`LineRead::keep`] says), under caps of their own,
//! as evidence for the report and for a run resumed before its analysis. The results do not
//! depend on what is kept: the harness parses every live UART line as it arrives (the end
//! detector is its streaming parse), so a run with more results than these caps keep still has
//! them all. Host lines (the emulator's or flasher's own) have a budget of their own and never
//! count against the UART's: however much the host logs, no UART line is dropped for it. The
//! full text always goes to console.log; this module does no I/O.

#[cfg(doc)]
use super::EndDetector;
use super::{ConsoleLine, Stream};
use std::collections::VecDeque;

/// How much of a console is kept in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// Host lines kept at most (the first ones); the rest are only in console.log.
    pub host_lines: usize,
    pub head_lines: usize,
    pub head_bytes: usize,
    pub tail_lines: usize,
    pub tail_bytes: usize,
    /// Lines the harness reads, kept from between the head and the tail.
    pub middle_lines: usize,
    pub middle_bytes: usize,
}

impl Default for StoreLimits {
    /// The first and the last 20,000 lines, at most 4 MiB each: the boot and the verdict both
    /// survive a flood in between.
    fn default() -> Self {
        Self {
            host_lines: 2_000,
            head_lines: 20_000,
            head_bytes: 4 << 20,
            tail_lines: 20_000,
            tail_bytes: 4 << 20,
            middle_lines: 100_000,
            middle_bytes: 16 << 20,
        }
    }
}

/// Keeps the head of a console whole and a rolling window of its tail.
#[derive(Debug)]
pub struct LineStore {
    limits: StoreLimits,
    head: Vec<ConsoleLine>,
    head_bytes: usize,
    /// UART lines in the head and the tail (host lines ride along uncounted).
    head_lines: usize,
    head_full: bool,
    /// Each with whether the harness reads it.
    tail: VecDeque<(ConsoleLine, bool)>,
    tail_bytes: usize,
    tail_lines: usize,
    middle: Vec<ConsoleLine>,
    middle_bytes: usize,
    dropped: u64,
    host_kept: usize,
    host_dropped: u64,
}

impl LineStore {
    pub fn new(limits: StoreLimits) -> Self {
        Self {
            limits,
            head: Vec::new(),
            head_bytes: 0,
            head_lines: 0,
            head_full: false,
            tail: VecDeque::new(),
            tail_bytes: 0,
            tail_lines: 0,
            middle: Vec::new(),
            middle_bytes: 0,
            dropped: 0,
            host_kept: 0,
            host_dropped: 0,
        }
    }

    /// The bytes a line counts against the UART limits: a host line counts nothing.
    fn weight(line: &ConsoleLine) -> usize {
        match line.stream {
            Stream::Uart => line.text.len(),
            Stream::Host => 0,
        }
    }

    fn is_uart(line: &ConsoleLine) -> bool {
        line.stream == Stream::Uart
    }

    /// Keeps a line the harness does not read (a host line, or one the harness has no use for)
    /// while it is in the head or the tail.
    pub fn push(&mut self, line: ConsoleLine) {
        self.push_read(line, false);
    }

    /// Keeps a line; `read`: the harness reads it, so it survives in the middle too.
    pub fn push_read(&mut self, line: ConsoleLine, read: bool) {
        if line.stream == Stream::Host {
            if self.host_kept >= self.limits.host_lines {
                self.host_dropped += 1;
                return;
            }
            self.host_kept += 1;
        }
        let size = Self::weight(&line);
        let uart = usize::from(Self::is_uart(&line));
        if !self.head_full {
            if self.head_lines + uart <= self.limits.head_lines
                && self.head_bytes + size <= self.limits.head_bytes
            {
                self.head_bytes += size;
                self.head_lines += uart;
                self.head.push(line);
                return;
            }
            // Once the head is closed it stays closed, so the kept lines stay in order.
            self.head_full = true;
        }
        self.tail_bytes += size;
        self.tail_lines += uart;
        self.tail.push_back((line, read));
        while self.tail_lines > self.limits.tail_lines || self.tail_bytes > self.limits.tail_bytes {
            match self.tail.pop_front() {
                Some((old, read)) => {
                    let size = Self::weight(&old);
                    self.tail_bytes -= size;
                    if Self::is_uart(&old) {
                        self.tail_lines -= 1;
                        if read
                            && self.middle.len() < self.limits.middle_lines
                            && self.middle_bytes + size <= self.limits.middle_bytes
                        {
                            self.middle_bytes += size;
                            self.middle.push(old);
                        } else {
                            self.dropped += 1;
                        }
                    }
                }
                None => break,
            }
        }
    }

    /// Host lines not kept in memory (they are in console.log, as far as its noise filter let
    /// them).
    pub fn host_dropped(&self) -> u64 {
        self.host_dropped
    }

    /// UART lines dropped from the middle so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The kept lines in order, and whether any were dropped.
    pub fn into_lines(self) -> (Vec<ConsoleLine>, bool) {
        let truncated = self.dropped > 0;
        let mut lines = self.head;
        lines.extend(self.middle);
        lines.extend(self.tail.into_iter().map(|(line, _)| line));
        (lines, truncated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(i: usize) -> ConsoleLine {
        ConsoleLine {
            t_ms: i as u64,
            stream: Stream::Uart,
            text: format!("line {i:04}"),
        }
    }

    fn limits(head_lines: usize, tail_lines: usize) -> StoreLimits {
        StoreLimits {
            host_lines: 10,
            head_lines,
            head_bytes: usize::MAX,
            tail_lines,
            tail_bytes: usize::MAX,
            middle_lines: 2,
            middle_bytes: usize::MAX,
        }
    }

    #[test]
    fn lines_the_harness_reads_survive_the_middle_of_a_flood() {
        let mut s = LineStore::new(limits(3, 2));
        // Lines 10, 50 and 70 are results; the middle keeps two of them, then drops.
        (0..100).for_each(|i| s.push_read(line(i), [10, 50, 70].contains(&i)));
        assert_eq!(s.dropped(), 93);
        let (lines, truncated) = s.into_lines();
        assert!(truncated);
        let times: Vec<u64> = lines.iter().map(|l| l.t_ms).collect();
        assert_eq!(times, vec![0, 1, 2, 10, 50, 98, 99]);
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
            host_lines: 10,
            head_lines: 1000,
            head_bytes: 20,
            tail_lines: 1000,
            tail_bytes: 20,
            middle_lines: 0,
            middle_bytes: 0,
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
            host_lines: 10,
            head_lines: 10,
            head_bytes: 12,
            tail_lines: 10,
            tail_bytes: 1000,
            middle_lines: 0,
            middle_bytes: 0,
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

    #[test]
    fn host_floods_never_push_out_uart_lines() {
        let mut s = LineStore::new(limits(3, 3));
        let host = |i: u64| ConsoleLine {
            t_ms: i,
            stream: Stream::Host,
            text: format!("Taking exception {i}"),
        };
        s.push(line(0));
        for i in 0..100_000 {
            s.push(host(i));
        }
        s.push(line(1));
        s.push(line(2));
        assert_eq!(s.host_dropped(), 100_000 - 10);
        let (lines, truncated) = s.into_lines();
        assert!(!truncated);
        let uart: Vec<&str> = lines
            .iter()
            .filter(|l| l.stream == Stream::Uart)
            .map(|l| l.text.as_str())
            .collect();
        assert_eq!(uart, vec!["line 0000", "line 0001", "line 0002"]);
        assert_eq!(lines.len(), 13);
    }
}
