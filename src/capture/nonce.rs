//! The run nonce: a fresh random value handed to the image for each attempt (QEMU's semihosting
//! command line, a line written to a board's console after reset), which the image prints first
//! as `fwfix-nonce: <value>`. It owns making the value, recognising its line, and the gate that
//! tells this attempt's console lines from output left over from an earlier run.
//!
//! Two strengths. [`NonceCheck::Required`]: the board keeps its console between runs (a serial
//! adapter, a terminal server), so every UART line before the nonce line is stale — kept in
//! console.log, marked, and never read by a parser or the end detector — and an attempt that never
//! shows the nonce cannot be trusted. [`NonceCheck::Offered`]: the backend starts from nothing
//! (a fresh emulator), so no line can be stale; the nonce is recorded when the image echoes it,
//! and an image that does not is trusted as before.
//!
//! Pure: no I/O; what an untrusted attempt means for the run is the orchestrator's call.

use super::{ConsoleLine, Stream};
use serde::{Deserialize, Serialize};
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// What the image prints first when it got a nonce: `fwfix-nonce: <value>`.
pub const LINE_PREFIX: &str = "fwfix-nonce: ";
/// What fwfix hands the image: `fwfix-nonce=<value>`.
pub const ARG_PREFIX: &str = "fwfix-nonce=";

/// How much an attempt relies on its nonce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(schemars::JsonSchema)]
pub enum NonceCheck {
    /// Handed to the image and recorded if echoed; nothing before it is stale.
    Offered,
    /// Lines before it are stale, and an attempt without it is not trusted.
    Required,
}

/// The nonce of one attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nonce {
    /// 16 lower-case hex digits.
    pub value: String,
    pub check: NonceCheck,
}

impl Nonce {
    /// A fresh nonce: random per process (std's hasher keys) and distinct per call (a counter),
    /// mixed with the time and the process id.
    pub fn fresh(check: NonceCheck) -> Nonce {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let mut h = RandomState::new().build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_u32(std::process::id());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        h.write_u128(now);
        Nonce {
            value: format!("{:016x}", h.finish()),
            check,
        }
    }

    /// `fwfix-nonce=<value>`: the token handed to the image.
    pub fn arg(&self) -> String {
        format!("{ARG_PREFIX}{}", self.value)
    }

    /// The line written to a board's console (serial or RTT) for the image to read after reset:
    /// `fwfix-nonce=<value>` and a newline.
    pub fn console_line(&self) -> String {
        format!("{}\n", self.arg())
    }

    /// Whether a console line is this nonce's line (line endings and reset noise aside).
    pub fn is_its_line(&self, text: &str) -> bool {
        text.trim_matches(|c: char| c.is_whitespace() || c.is_control())
            .strip_prefix(LINE_PREFIX)
            .is_some_and(|rest| rest.trim() == self.value)
    }
}

/// What became of an attempt's nonce, kept with its capture and in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NonceRecord {
    pub value: String,
    pub check: NonceCheck,
    /// The image printed it.
    pub seen: bool,
    /// UART lines that came before it and were ignored (always 0 when only offered).
    pub stale_lines: u64,
}

impl NonceRecord {
    /// The attempt's output cannot be trusted: the nonce was required and never came.
    pub fn untrusted(&self) -> bool {
        self.check == NonceCheck::Required && !self.seen
    }
}

/// Sorts an attempt's console lines into live and stale as they arrive.
#[derive(Debug)]
pub struct NonceGate {
    nonce: Option<Nonce>,
    seen: bool,
    stale: u64,
}

impl NonceGate {
    pub fn new(nonce: Option<Nonce>) -> NonceGate {
        NonceGate {
            nonce,
            seen: false,
            stale: 0,
        }
    }

    /// Whether `line` is this attempt's output (true) or left from an earlier run (false). Host
    /// lines (fwfix's and the tools' own) are always live; the nonce line itself is live.
    pub fn admit(&mut self, line: &ConsoleLine) -> bool {
        let Some(nonce) = &self.nonce else {
            return true;
        };
        if line.stream != Stream::Uart || self.seen {
            return true;
        }
        if nonce.is_its_line(&line.text) {
            self.seen = true;
            return true;
        }
        match nonce.check {
            NonceCheck::Offered => true,
            NonceCheck::Required => {
                self.stale += 1;
                false
            }
        }
    }

    /// The record of the attempt, None when it had no nonce.
    pub fn finish(self) -> Option<NonceRecord> {
        self.nonce.map(|n| NonceRecord {
            value: n.value,
            check: n.check,
            seen: self.seen,
            stale_lines: self.stale,
        })
    }
}

/// Where the live UART output starts in `lines`: after the nonce line when the nonce was
/// required (everything, when it never came), from the start otherwise.
pub fn live_from(lines: &[ConsoleLine], record: Option<&NonceRecord>) -> usize {
    let Some(record) = record.filter(|r| r.check == NonceCheck::Required) else {
        return 0;
    };
    let nonce = Nonce {
        value: record.value.clone(),
        check: record.check,
    };
    lines
        .iter()
        .position(|l| l.stream == Stream::Uart && nonce.is_its_line(&l.text))
        .map_or(lines.len(), |at| at + 1)
}

/// What fwfix hands the image beside the nonce: `fwfix-attempt=<n>`, the attempt's number (1 for
/// the first run of an image, 2 for its first repeat, ...). Unlike the nonce it is the same on
/// every run, so an image (or a test fixture) can key something on it deterministically: a
/// seed, a test filter, a different crash site per attempt.
pub const ATTEMPT_PREFIX: &str = "fwfix-attempt=";

/// The command line handed to an emulator (or a probe's semihosting): the nonce token first, the
/// attempt's number next, then any text of the caller's, separated by spaces.
pub fn command_line(
    nonce: Option<&Nonce>,
    attempt: Option<u32>,
    append: Option<&str>,
) -> Option<String> {
    let words: Vec<String> = [
        nonce.map(Nonce::arg),
        attempt.map(|n| format!("{ATTEMPT_PREFIX}{n}")),
        append.map(str::to_string),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uart(text: &str) -> ConsoleLine {
        ConsoleLine {
            t_ms: 0,
            stream: Stream::Uart,
            text: text.into(),
        }
    }

    fn host(text: &str) -> ConsoleLine {
        ConsoleLine {
            t_ms: 0,
            stream: Stream::Host,
            text: text.into(),
        }
    }

    fn nonce(check: NonceCheck) -> Nonce {
        Nonce {
            value: "00c0ffee12345678".into(),
            check,
        }
    }

    #[test]
    fn fresh_nonces_are_hex_and_differ() {
        let a = Nonce::fresh(NonceCheck::Required);
        let b = Nonce::fresh(NonceCheck::Required);
        assert_eq!(a.value.len(), 16);
        assert!(a.value.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.value, b.value);
        assert_eq!(a.arg(), format!("fwfix-nonce={}", a.value));
        assert_eq!(a.console_line(), format!("fwfix-nonce={}\n", a.value));
    }

    #[test]
    fn only_this_attempts_nonce_line_counts() {
        let n = nonce(NonceCheck::Required);
        assert!(n.is_its_line("fwfix-nonce: 00c0ffee12345678\r"));
        assert!(n.is_its_line("\u{0}fwfix-nonce: 00c0ffee12345678"));
        assert!(!n.is_its_line("fwfix-nonce: 0123456789abcdef"));
        assert!(!n.is_its_line("fwfix-nonce: 00c0ffee1234567"));
        assert!(!n.is_its_line("nonce 00c0ffee12345678"));
    }

    #[test]
    fn a_required_nonce_makes_everything_before_it_stale() {
        let mut gate = NonceGate::new(Some(nonce(NonceCheck::Required)));
        let lines = [
            uart("tests/t.c:1:test_a:PASS"),
            uart("fwfix-nonce: 0123456789abcdef"),
            uart("OK"),
            host("fwfix: console open"),
            uart("fwfix-nonce: 00c0ffee12345678"),
            uart("tests/t.c:1:test_a:FAIL: x"),
            uart("FAIL"),
        ];
        let live: Vec<bool> = lines.iter().map(|l| gate.admit(l)).collect();
        assert_eq!(live, [false, false, false, true, true, true, true]);
        let record = gate.finish().unwrap();
        assert!(record.seen && !record.untrusted());
        assert_eq!(record.stale_lines, 3);
        assert_eq!(live_from(&lines, Some(&record)), 5);
    }

    #[test]
    fn a_required_nonce_that_never_came_leaves_nothing_live() {
        let mut gate = NonceGate::new(Some(nonce(NonceCheck::Required)));
        let lines = [uart("tests/t.c:1:test_a:PASS"), uart("OK")];
        assert!(lines.iter().all(|l| !gate.admit(l)));
        let record = gate.finish().unwrap();
        assert!(record.untrusted());
        assert_eq!(live_from(&lines, Some(&record)), 2);
    }

    #[test]
    fn an_offered_nonce_is_recorded_and_stales_nothing() {
        let lines = [
            uart("boot"),
            uart("fwfix-nonce: 00c0ffee12345678"),
            uart("OK"),
        ];
        let mut gate = NonceGate::new(Some(nonce(NonceCheck::Offered)));
        assert!(lines.iter().all(|l| gate.admit(l)));
        let record = gate.finish().unwrap();
        assert!(record.seen && !record.untrusted());
        assert_eq!(record.stale_lines, 0);
        assert_eq!(live_from(&lines, Some(&record)), 0);

        let mut silent = NonceGate::new(Some(nonce(NonceCheck::Offered)));
        assert!(silent.admit(&uart("OK")));
        assert!(!silent.finish().unwrap().untrusted());
    }

    #[test]
    fn without_a_nonce_every_line_is_live() {
        let mut gate = NonceGate::new(None);
        assert!(gate.admit(&uart("OK")));
        assert_eq!(gate.finish(), None);
        assert_eq!(live_from(&[uart("OK")], None), 0);
    }

    #[test]
    fn the_nonce_goes_first_on_the_command_line() {
        let n = nonce(NonceCheck::Offered);
        assert_eq!(
            command_line(Some(&n), None, Some("seed=7")).as_deref(),
            Some("fwfix-nonce=00c0ffee12345678 seed=7")
        );
        assert_eq!(
            command_line(Some(&n), None, None).as_deref(),
            Some("fwfix-nonce=00c0ffee12345678")
        );
        assert_eq!(command_line(None, None, Some("x")).as_deref(), Some("x"));
        assert_eq!(command_line(None, None, None), None);
        assert_eq!(
            command_line(Some(&n), Some(3), Some("seed=7")).as_deref(),
            Some("fwfix-nonce=00c0ffee12345678 fwfix-attempt=3 seed=7")
        );
        assert_eq!(
            command_line(None, Some(1), None).as_deref(),
            Some("fwfix-attempt=1")
        );
    }
}
