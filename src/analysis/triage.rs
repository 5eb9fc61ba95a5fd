//! Log triage: what kind of failure (or success) a build, flash or console log shows.
//!
//! [`classify`] reads a log line by line, lets the rule table in [`rules`] claim each line it
//! recognises, and decides one [`TriageClass`] with the line numbers that decided it. It is pure
//! and streams: nothing is kept per line beyond a bounded number of matches, so a log of any size
//! costs time linear in its length. A prefilter searches whole buffers for the literals the
//! rules need (see [`prefilter`]): only the lines it finds go through the rules, the others are
//! counted and passed by as bytes. The lines of a long piece are matched on every core, and
//! then claimed in log order, so the result is the same as reading them one by one.
//! [`classify_file`] is the only function here that touches the
//! file system, and it only reads. Triage never runs a tool and never decides what happens next
//! in a run: [`Triage::error_class`] tells the orchestrator which error class a failure is, and
//! the machine's recovery rules take it from there.
//!
//! # Precedence
//!
//! When a log holds evidence of several classes, the strongest wins, in this order (strongest
//! first), each above the next because it explains it:
//!
//! 1. `TOOL_MISSING`: a program that is not installed makes every step after it fail; installing
//!    it is the fix, whatever else the log says (make's `Error 127`, gdb refused by an OpenOCD
//!    that never started).
//! 2. `FLASH_ERROR`: the image never reached the board, so whatever the board printed came from
//!    the old firmware, and the GDB or serial errors after a flasher that quit are its echo.
//! 3. `ASSERT`: the firmware's own diagnosis of a broken invariant, with its source line; the
//!    panic, reboot or spin its assert handler does next (Zephyr's `Kernel panic`, ESP-IDF's
//!    `abort()`, FreeRTOS's `for (;;)`) is the consequence, not the cause.
//! 4. `CRASH`: a fault. A board that faults resets, and its USB serial port vanishes with it, so
//!    an environment error after a crash is the crash's doing.
//! 5. `INFRA_ERROR`: the environment broke (disk full, QEMU killed, port gone, GDB server
//!    unreachable): the build failures it causes and any test results around it cannot be
//!    trusted.
//! 6. `BUILD_ERROR`: compiling comes before linking, and a file that did not compile can leave
//!    the linker short of a symbol.
//! 7. `LINK_ERROR`.
//! 8. `HANG`: the run timed out before its verdict; failures seen before it are partial results.
//!    A watchdog that fired is a hang too, whatever its handler printed after: a task watchdog,
//!    an interrupt watchdog (ESP-IDF's `Interrupt wdt timeout`, though it reports a panic), an
//!    ESP8266's `Soft WDT reset` or hardware watchdog reset (`rst cause:4`).
//! 9. `TEST_FAILURE`: a crash after failed tests is still a crash, and a passing verdict with a
//!    crash after it is still a crash, because both rank above.
//! 10. `PASS`: a passing verdict (a runner's summary, Unity's `OK`, ztest's `PROJECT EXECUTION
//!     SUCCESSFUL`), a firmware's own passing status line, or a flasher's or build's own closing
//!     success (`** Verified OK **`, esptool's `Hard resetting...`, `Project build complete.`)
//!     in a log where nothing failed: positive evidence only. A log no rule spoke on, with no
//!     line in failure words, whose last line is a tool's own success (`Chip erase complete`)
//!     is a PASS at low confidence (see [`Triager::success_tail`]).
//! 11. `UNKNOWN`: no evidence either way. An empty log, a binary file (not text), a log no rule
//!     recognises, and passing test lines with no verdict after them (the run may have stopped or
//!     failed where the log does not show) say nothing certain about the firmware, so they are
//!     never a pass.
//!
//! Some lines say only that something failed, not what: a Python traceback, a bare `error:` or
//! `FATAL:` line from a tool no rule knows, a lone `Timeout`. Such a generic line decides only
//! when no specific line explains the log, and then as the step its context lines name (a
//! flasher's banner or frame makes a traceback a FLASH_ERROR, a lab tool's frame an
//! INFRA_ERROR); its reason says the confidence is low. Lines that only echo a failed
//! subcommand (`make: *** Error 1`, `ninja: build stopped`, west's `FATAL ERROR: command exited
//! with status 1`) count only when nothing else is evidence of a failure. See [`rules::Scope`].
//!
//! Four readings refine the order above. A line that only reports how a failure was handled
//! (Zephyr's `ZEPHYR FATAL ERROR`, ESP-IDF's `abort()`) yields to a line of another kind that
//! names its cause (an assert, a task watchdog's frame in the backtrace): the earlier, decisive
//! cause beats its later consequence. A runner's timeout after a test's own failure line is
//! that test failure (the verdict was reached; the timeout cut the rest short), except when
//! fwfix itself stopped a run with no verdict. A serial port that cannot be opened in an
//! uploader's log is the upload port, so the flash failed. A firmware assert or fault that a
//! ztest case then reports as passed was expected by it (error-hook tests raise them on
//! purpose), and is no failure.
//!
//! When no rule spoke at all (the rules say UNKNOWN) and the log has failure-bearing lines
//! (`error`, `failed`, `cannot`, `not found`, `timed out` and the like, on the lines the
//! prefilter already brings to the rules), a learned fallback reads their words: a small naive
//! Bayes model trained on the labelled real logs (see [`fallback`]; its weights are a
//! committed, generated file) names a failure class when it is at least 70% sure and two
//! distinct lines back the class (90% when one line alone does), never PASS, and its reason
//! says the confidence is low and which words decided. When a generic failure line alone
//! decided a log and no context named its step, the model overrules that guess if it is 95%
//! sure of another failure class. It runs once per log,
//! in [`Triager::finish`], on at most [`fallback::MAX_EVIDENCE_LINES`] kept lines.
//!
//! A log with no verdict in it (output that just stops) is `HANG` when the run is known to have
//! timed out ([`TriageContext::timed_out`]), and otherwise the class its content supports; a
//! log that reached its verdict did not hang, whatever stopped the process afterwards.

mod decode;
pub mod fallback;
mod prefilter;
pub mod rules;
mod set_patterns;

use std::borrow::Cow;
use std::fmt;
use std::io::{self, BufRead};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::bytes::Regex;
use serde::{Deserialize, Serialize};

use crate::machine::ErrorClass;
use rules::{Matched, Matcher, Rule, Scope, SetScratch, COMPILED, RULES};

/// What a log shows, strongest first in [`TriageClass::PRECEDENCE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TriageClass {
    /// A program the build, flash or run needs is not installed.
    ToolMissing,
    /// The flasher or debug probe could not put the image on the board.
    FlashError,
    /// The firmware's own assertion failed (not a test harness assertion).
    Assert,
    /// The firmware faulted: HardFault, bus fault, panic, emulator lockup.
    Crash,
    /// The environment failed: host, disk, network, serial port, emulator.
    InfraError,
    /// The code did not compile.
    BuildError,
    /// The code compiled but did not link.
    LinkError,
    /// The run stopped at a timeout before its verdict.
    Hang,
    /// Tests ran to a verdict and some failed.
    TestFailure,
    /// The log shows a passing verdict or passing tests, and nothing failed.
    Pass,
    /// The log shows nothing either way: empty, binary, or no line any rule recognises.
    Unknown,
}

impl TriageClass {
    /// Every class, strongest first: the order [`classify`] decides by (see the module docs).
    pub const PRECEDENCE: [TriageClass; 11] = [
        TriageClass::ToolMissing,
        TriageClass::FlashError,
        TriageClass::Assert,
        TriageClass::Crash,
        TriageClass::InfraError,
        TriageClass::BuildError,
        TriageClass::LinkError,
        TriageClass::Hang,
        TriageClass::TestFailure,
        TriageClass::Pass,
        TriageClass::Unknown,
    ];

    /// Position in [`TriageClass::PRECEDENCE`]: lower is stronger.
    pub fn rank(self) -> u8 {
        match self {
            TriageClass::ToolMissing => 0,
            TriageClass::FlashError => 1,
            TriageClass::Assert => 2,
            TriageClass::Crash => 3,
            TriageClass::InfraError => 4,
            TriageClass::BuildError => 5,
            TriageClass::LinkError => 6,
            TriageClass::Hang => 7,
            TriageClass::TestFailure => 8,
            TriageClass::Pass => 9,
            TriageClass::Unknown => 10,
        }
    }

    /// The name in triage output, e.g. `LINK_ERROR`.
    pub fn name(self) -> &'static str {
        match self {
            TriageClass::ToolMissing => "TOOL_MISSING",
            TriageClass::FlashError => "FLASH_ERROR",
            TriageClass::Assert => "ASSERT",
            TriageClass::Crash => "CRASH",
            TriageClass::InfraError => "INFRA_ERROR",
            TriageClass::BuildError => "BUILD_ERROR",
            TriageClass::LinkError => "LINK_ERROR",
            TriageClass::Hang => "HANG",
            TriageClass::TestFailure => "TEST_FAILURE",
            TriageClass::Pass => "PASS",
            TriageClass::Unknown => "UNKNOWN",
        }
    }

    /// The machine's error class for a failure of this class. Crashes, assertions, hangs, test
    /// failures and passes are test results, not errors: they have none. Neither has UNKNOWN:
    /// triage could not tell, so the step's own outcome stands (a failed build stays a build
    /// failure, never a pass).
    pub fn error_class(self) -> Option<ErrorClass> {
        match self {
            TriageClass::BuildError | TriageClass::LinkError => Some(ErrorClass::BuildFailure),
            TriageClass::ToolMissing => Some(ErrorClass::BuildEnvFailure),
            TriageClass::FlashError => Some(ErrorClass::FlashFailure),
            TriageClass::InfraError => Some(ErrorClass::TestEnvFailure),
            TriageClass::Assert
            | TriageClass::Crash
            | TriageClass::Hang
            | TriageClass::TestFailure
            | TriageClass::Pass
            | TriageClass::Unknown => None,
        }
    }
}

/// The step of a run whose log is triaged: the same class of log means a different error class
/// depending on what can be retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Building the image (build.log).
    Build,
    /// Flashing or booting the image and running it (flash.log, console.log).
    Test,
}

impl TriageClass {
    /// The machine's error class for a failed step whose log shows this class: the same as
    /// [`TriageClass::error_class`], except that whatever breaks the environment is retried as
    /// the step it broke. A build that died of a full disk is retried as a build
    /// (BUILD_ENV_FAILURE), and a flash or run that lacks a tool is the test environment's failure
    /// (TEST_ENV_FAILURE), not the build's.
    pub fn error_class_in(self, stage: Stage) -> Option<ErrorClass> {
        match (stage, self) {
            (Stage::Build, TriageClass::InfraError | TriageClass::FlashError) => {
                Some(ErrorClass::BuildEnvFailure)
            }
            (
                Stage::Test,
                TriageClass::ToolMissing | TriageClass::BuildError | TriageClass::LinkError,
            ) => Some(ErrorClass::TestEnvFailure),
            (
                Stage::Build,
                TriageClass::ToolMissing
                | TriageClass::BuildError
                | TriageClass::LinkError
                | TriageClass::Assert
                | TriageClass::Crash
                | TriageClass::Hang
                | TriageClass::TestFailure
                | TriageClass::Pass
                | TriageClass::Unknown,
            )
            | (
                Stage::Test,
                TriageClass::FlashError
                | TriageClass::InfraError
                | TriageClass::Assert
                | TriageClass::Crash
                | TriageClass::Hang
                | TriageClass::TestFailure
                | TriageClass::Pass
                | TriageClass::Unknown,
            ) => self.error_class(),
        }
    }
}

impl fmt::Display for TriageClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the caller knows about the log beyond its text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TriageContext {
    /// The run that wrote the log was stopped at its timeout.
    pub timed_out: bool,
}

/// One line a rule claimed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleMatch {
    /// The rule's id, e.g. `ld.undefined_reference`; `timeout.no_verdict` for the hang that
    /// [`TriageContext::timed_out`] implies.
    pub rule_id: String,
    /// The class the rule is evidence of.
    pub class: TriageClass,
    /// 1-based line in the log.
    pub line: usize,
    /// The line as the rule saw it (colour codes and console.log stamps removed), shortened to
    /// [`MAX_QUOTE_CHARS`].
    pub text: String,
}

/// A log's class and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Triage {
    pub class: TriageClass,
    /// 1-based lines that decided the class, ascending; empty when nothing matched.
    pub lines: Vec<usize>,
    /// One sentence a person reads first: the deciding line's message.
    pub reason: String,
    /// Every line a rule claimed, in log order (at most [`MAX_MATCHES_PER_RULE`] per rule).
    pub matches: Vec<RuleMatch>,
}

impl Triage {
    /// The machine's error class for this log, or None when it shows a test result.
    pub fn error_class(&self) -> Option<ErrorClass> {
        self.class.error_class()
    }

    /// The class and the line that decided it, for a trace reason: `TOOL_MISSING at
    /// build.log:3: sh: 1: arm-none-eabi-gcc: not found`.
    pub fn verdict_in(&self, log_name: &str) -> String {
        let at = match self.lines.first() {
            Some(line) => format!("{log_name}:{line}"),
            None => log_name.to_string(),
        };
        format!("{} at {at}: {}", self.class, self.reason)
    }
}

/// One log's triage as analysis.json lists it, and as `fwfix triage --json` starts its lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogTriage {
    /// The log, relative to the run directory.
    pub file: String,
    pub class: TriageClass,
    pub lines: Vec<usize>,
    pub reason: String,
}

impl LogTriage {
    pub fn new(file: impl Into<String>, triage: &Triage) -> LogTriage {
        LogTriage {
            file: file.into(),
            class: triage.class,
            lines: triage.lines.clone(),
            reason: triage.reason.clone(),
        }
    }
}

/// Matches kept per rule: the first ones. A log with a million passing tests keeps sixteen of
/// them, so memory stays bounded whatever the log's size.
pub const MAX_MATCHES_PER_RULE: usize = 16;

/// Longest line text kept in a [`RuleMatch`], in characters.
pub const MAX_QUOTE_CHARS: usize = 240;

/// Longest line read, in bytes; the rest of a longer line (binary junk, a log without line
/// breaks) is skipped.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Most bytes of one log read: what follows is not read, and the reason says so. A log that
/// never ends (a pipe, a character device) still gets a triage.
pub const MAX_LOG_BYTES: u64 = 4 << 30;

/// Bytes read before triage may decide that the input is binary and stop: enough for a serial
/// console's line noise (a wrong baud rate, a reset) before the firmware's own text.
pub const BINARY_SNIFF_BYTES: u64 = 1 << 20;

/// Share of bytes that are not text above which an input is binary, in percent. Random bytes
/// have about 17% (control bytes and bytes UTF-8 never uses), a log with some line noise far
/// less.
pub const BINARY_PERCENT: u64 = 10;

/// A line this long or longer that is binary by [`BINARY_PERCENT`] is noise and not read.
const NOISE_LINE_MIN_BYTES: usize = 16;

/// NUL bytes, in all and in percent of the bytes looked at, that make a binary input an image or
/// a data file (see [`Triager::is_image`]).
const IMAGE_MIN_NULS: u64 = 64;
const IMAGE_NUL_PERCENT: u64 = 1;

const TIMEOUT_RULE: &str = "timeout.no_verdict";

/// Most bytes [`Triager::push_lines`] looks at in one go (its pieces end at a line break).
const PUSH_PIECE_BYTES: usize = 1 << 20;

/// The buffer [`classify_file`] reads through: several pieces of [`PUSH_PIECE_BYTES`] at a
/// time, so the threads that match a piece's lines have enough to share, and this thread claims
/// one piece while they match the next (see [`Triager::push_lines`]).
const READ_BUFFER_BYTES: usize = 8 * PUSH_PIECE_BYTES;

/// Classifies a whole log held in memory.
pub fn classify(text: &str, ctx: &TriageContext) -> Triage {
    let mut triager = Triager::new(*ctx);
    let bytes = text.as_bytes();
    triager.push_text(bytes.strip_prefix(decode::UTF8_BOM).unwrap_or(bytes));
    triager.finish()
}

/// Classifies a log read from `reader`, one line at a time, reading at most [`MAX_LOG_BYTES`]
/// and stopping early when the input is binary. Invalid UTF-8 is read, not refused: logs of
/// serial consoles hold line noise. A UTF-8 byte-order mark is skipped, and UTF-16 (with or
/// without one) is read as the text it holds (see [`decode`]).
pub fn classify_reader<R: BufRead>(mut reader: R, ctx: &TriageContext) -> io::Result<Triage> {
    let head = loop {
        match reader.fill_buf() {
            Ok(bytes) => break bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    };
    match decode::sniff(head) {
        decode::Encoding::Utf8 { skip } => {
            reader.consume(skip);
            let mut triager = Triager::new(*ctx);
            triager.bytes = skip as u64;
            read_into(reader, triager)
        }
        decode::Encoding::Utf16 { endian, skip } => {
            reader.consume(skip);
            let text = decode::Utf16::new(reader, endian);
            read_into(
                io::BufReader::with_capacity(READ_BUFFER_BYTES, text),
                Triager::new(*ctx),
            )
        }
    }
}

/// Feeds `triager` what [`classify_reader`] reads, and decides.
fn read_into<R: BufRead>(mut reader: R, mut triager: Triager) -> io::Result<Triage> {
    let mut buf = Vec::new();
    // In the middle of a line longer than a piece the slow way hands over: the rest of it is
    // skipped, and counted as part of that line, not as lines of its own.
    let mut mid_line = false;
    while !triager.stopped() {
        // The whole lines in the reader's buffer at once; a line the buffer does not hold
        // whole (or one that would cross the cap) the slow way below.
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if mid_line {
            let budget = usize::try_from(MAX_LOG_BYTES - triager.bytes).unwrap_or(usize::MAX);
            let (len, ends) = match memchr::memchr(b'\n', available) {
                Some(at) if at < budget => (at + 1, true),
                _ => (available.len().min(budget), false),
            };
            if len == 0 {
                break;
            }
            triager.skip_tail(len as u64);
            reader.consume(len);
            mid_line = !ends;
            continue;
        }
        let whole = memchr::memrchr(b'\n', available).map_or(0, |at| at + 1);
        if whole > 0 && triager.bytes + (whole as u64) < MAX_LOG_BYTES {
            triager.push_lines(&available[..whole]);
            reader.consume(whole);
            continue;
        }
        let budget = (MAX_LOG_BYTES - triager.bytes).min(BINARY_SNIFF_BYTES);
        let Some(consumed) = read_line_capped(&mut reader, &mut buf, MAX_LINE_BYTES, budget)?
        else {
            break;
        };
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        } else {
            // Not the end of the input unless the next read says so.
            mid_line = consumed >= budget;
        }
        triager.push_bytes(&buf, consumed);
    }
    Ok(triager.finish())
}

/// A log that could not be read, or a file that is no log.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {}: {source}", file.display())]
    Io {
        file: PathBuf,
        #[source]
        source: io::Error,
    },
    /// An ELF image (the firmware, a tool) given where its build, flash or console log was meant:
    /// classifying its bytes as text would quote binary garbage as the deciding lines.
    #[error(
        "{} is an ELF image, not a log: give the build, flash or console output instead",
        file.display()
    )]
    ElfImage { file: PathBuf },
}

const ELF_MAGIC: &[u8] = b"\x7fELF";

/// Classifies the log in `file`, streaming it: a file, or a pipe, FIFO or device (`/dev/stdin`),
/// read only as far as the reader's caps allow.
/// `-` is standard input, as for grep.
pub fn classify_file(file: &Path, ctx: &TriageContext) -> Result<Triage, ReadError> {
    let read_error = |source| ReadError::Io {
        file: file.to_path_buf(),
        source,
    };
    let opened = if file == Path::new(STDIN) {
        crate::input::stdin_stream()
    } else {
        crate::input::open_stream(file)
    };
    let handle = opened.map_err(|e| match e {
        crate::input::InputError::Io { source, .. } => read_error(source),
        other => read_error(io::Error::other(other.to_string())),
    })?;
    let fifo = handle
        .metadata()
        .is_ok_and(|meta| std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()));
    let mut reader = io::BufReader::with_capacity(READ_BUFFER_BYTES, handle);
    let head = reader.fill_buf().map_err(read_error)?;
    if head.starts_with(ELF_MAGIC) {
        return Err(ReadError::ElfImage {
            file: file.to_path_buf(),
        });
    }
    // A FIFO is opened without waiting for a writer (see `crate::input::open_stream`), so one
    // nobody had open for writing reads as nothing at all: say so rather than "empty".
    if head.is_empty() && fifo && file != Path::new(STDIN) {
        return Ok(Triage {
            class: TriageClass::Unknown,
            lines: Vec::new(),
            reason: "nothing was read: no program had this FIFO open for writing when triage \
                     opened it (start the writer first, or pipe the log into `fwfix triage -`)"
                .to_string(),
            matches: Vec::new(),
        });
    }
    classify_reader(reader, ctx).map_err(read_error)
}

/// The file name that means standard input.
pub const STDIN: &str = "-";

/// Reads one line (with its `\n`) into `buf`, keeping at most `cap` bytes of it and consuming
/// at most `budget` bytes (a line without end, from a device of zeros, is handed over in pieces
/// of `budget` bytes). The bytes consumed, or None at the end of input.
fn read_line_capped<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
    budget: u64,
) -> io::Result<Option<u64>> {
    buf.clear();
    let mut consumed: u64 = 0;
    loop {
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok((consumed > 0).then_some(consumed));
        }
        let room_in_budget = usize::try_from(budget - consumed).unwrap_or(usize::MAX);
        let available = &available[..available.len().min(room_in_budget)];
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (&available[..=at], true),
            None => (available, false),
        };
        let room = cap.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if done && chunk.len() > room {
            // The kept part lost its line break; put it back so the caller sees a whole line.
            buf.push(b'\n');
        }
        let used = chunk.len();
        reader.consume(used);
        consumed += used as u64;
        if done || consumed >= budget {
            return Ok(Some(consumed));
        }
    }
}

/// Why a [`Triager`] stopped reading before the end of its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// More than [`BINARY_PERCENT`] of the first [`BINARY_SNIFF_BYTES`] are not text.
    Binary,
    /// [`MAX_LOG_BYTES`] were read.
    Cap,
}

/// Classifies a log fed one line at a time, for callers that already hold a line source.
#[derive(Debug)]
pub struct Triager {
    ctx: TriageContext,
    line: usize,
    matches: Vec<Kept>,
    per_rule: Vec<usize>,
    saw_verdict: bool,
    /// The line of the first verdict: a hang shown after it happened once the run had finished.
    verdict_line: Option<usize>,
    /// The last rule with a class that claimed a line: what `follows` looks at.
    last_evidence: Option<usize>,
    /// The last line that started a later step (a serial monitor, an upload): a success
    /// before it was an earlier step's (see [`Rule::starts_step`]).
    step_started: Option<(usize, String)>,
    /// The last non-blank line: where a timed-out log stopped.
    last_line: Option<(usize, String)>,
    /// The first failure-bearing segments the rules saw: what the learned fallback reads.
    failing: Vec<(usize, String)>,
    /// Some line bore failure words (see [`fallback::Evidence`]): a success on the last line
    /// is then no evidence of a pass.
    failure_words: bool,
    /// Bytes read, line breaks and the skipped tails of overlong lines included.
    bytes: u64,
    /// Bytes of lines looked at (overlong lines cut at [`MAX_LINE_BYTES`]).
    seen_bytes: u64,
    /// Bytes looked at that no text holds (see [`is_binary_byte`]).
    binary_bytes: u64,
    /// NUL bytes among them: what tells an image or a data file from a console's line noise
    /// (see [`Triager::is_image`]).
    nul_bytes: u64,
    stop: Option<Stop>,
    /// Lines go through the rules only where the prefilter finds a literal of theirs (always,
    /// except in the tests that check the prefilter changes nothing).
    prefiltered: bool,
    /// Scratch: the rules a segment matches.
    matching: Vec<usize>,
    /// Scratch: the rule set's search caches, one per worker (this thread's first).
    scratch: Scratches,
    /// How many threads match the lines of a long piece (see [`Triager::push_piece`]).
    workers: usize,
    /// The shortest part of a piece given to a thread of its own.
    min_part_bytes: usize,
    /// Most bytes of a piece ([`PUSH_PIECE_BYTES`]; less in tests, to claim one piece while
    /// matching the next as often as a long log does).
    piece_bytes: usize,
}

/// What the rules found in a part of a piece of whole lines, before the triager claims it: the
/// matching is pure, so parts are matched on threads of their own, and the triager then claims
/// their lines in log order, exactly as if it had read them one by one.
#[derive(Debug, Default)]
struct Found {
    /// Lines in the part.
    lines: usize,
    /// Bytes of those lines looked at (see [`Triager::seen_bytes`]).
    seen_bytes: u64,
    /// The segments some rule matched, in order.
    hits: Vec<Hit>,
    /// The rules each hit matched, one after the other (see [`Hit::rules`]).
    rules: Vec<usize>,
    /// The first segments with a failure word: 1-based line in the part, and the segment.
    failing: Vec<(usize, Range<usize>)>,
}

/// A piece whose lines were matched, its hits not yet claimed.
#[derive(Debug)]
struct MatchedPiece<'a> {
    piece: &'a [u8],
    /// The parts it was matched in, each with its [`Found`].
    parts: Vec<&'a [u8]>,
    found: Vec<Found>,
}

/// A segment some rule matched, or a line to read on the triager's own thread.
#[derive(Debug)]
struct Hit {
    /// 1-based line in the part.
    line: usize,
    at: HitAt,
    /// Its [`matching_rules`] in [`Found::rules`].
    rules: Range<usize>,
}

#[derive(Debug)]
enum HitAt {
    /// A segment of the line, in the part's bytes.
    Segment(Range<usize>),
    /// A raw line with an escape byte: cleaning it makes new bytes, so the triager cleans and
    /// reads it itself.
    Line(Range<usize>),
}

impl Found {
    /// Matches the lines of `part` (whole lines, each ending with `\n`) the prefilter finds a
    /// literal in.
    fn in_part(part: &[u8], scratch: &mut SetScratch) -> Found {
        let prefilter = &COMPILED.prefilter;
        let mut found = Found::default();
        let mut hits = Vec::new();
        prefilter.hits(part, &mut hits);
        let mut start = 0;
        for at in hits {
            // The lines before the hit's hold no literal: only counted.
            let line = memchr::memrchr(b'\n', &part[start..at]).map_or(start, |nl| start + nl + 1);
            found.pass_by(&part[start..line]);
            let end = memchr::memchr(b'\n', &part[at..]).map_or(part.len(), |nl| at + nl);
            let raw = without_cr(&part[line..end]);
            let raw = &raw[..raw.len().min(MAX_LINE_BYTES)];
            found.lines += 1;
            found.seen_bytes += raw.len() as u64;
            found.match_line(part, raw, line, scratch);
            start = (end + 1).min(part.len());
        }
        found.pass_by(&part[start..]);
        found
    }

    /// Counts `lines` (whole lines, each ending with `\n`), which no rule reads: their breaks
    /// and carriage returns counted in vector lanes rather than each line found in turn.
    fn pass_by(&mut self, mut lines: &[u8]) {
        while !lines.is_empty() {
            // Up to a capped line's length at a time, so no line in it is cut.
            let most = lines.len().min(MAX_LINE_BYTES + 1);
            let cut = match memchr::memrchr(b'\n', &lines[..most]) {
                Some(nl) => nl + 1,
                // A line longer than the cap.
                None => memchr::memchr(b'\n', lines).map_or(lines.len(), |nl| nl + 1),
            };
            let (chunk, rest) = lines.split_at(cut);
            let breaks = memchr::memchr_iter(b'\n', chunk).count();
            let crs = memchr::memchr_iter(b'\r', chunk)
                .filter(|&at| chunk.get(at + 1) == Some(&b'\n'))
                .count();
            let text = chunk.len() - breaks - crs;
            self.lines += breaks;
            self.seen_bytes += if breaks == 1 {
                text.min(MAX_LINE_BYTES)
            } else {
                text
            } as u64;
            lines = rest;
        }
    }

    /// Matches the segments of `raw`, the line found at `offset` in `part`.
    fn match_line(&mut self, part: &[u8], raw: &[u8], offset: usize, scratch: &mut SetScratch) {
        if memchr::memchr(0x1b, raw).is_some() {
            self.hits.push(Hit {
                line: self.lines,
                at: HitAt::Line(offset..offset + raw.len()),
                rules: 0..0,
            });
            return;
        }
        // Without escapes, cleaning only cuts a stamp off the front.
        let cleaned = without_stamp(raw);
        let offset = offset + raw.len() - cleaned.len();
        for range in segments(cleaned) {
            let at = offset + range.start..offset + range.end;
            let segment = &part[at.clone()];
            self.record(self.lines, at, |rules| {
                matching_rules(segment, scratch, rules)
            });
        }
    }

    /// Records what `matcher` finds of a segment's rules (the segment at `range` of line `line`
    /// of the part), pushed onto [`Found::rules`]; returns whether it holds a failure word.
    fn record(
        &mut self,
        line: usize,
        range: Range<usize>,
        matcher: impl FnOnce(&mut Vec<usize>) -> bool,
    ) -> bool {
        let first = self.rules.len();
        let failing = matcher(&mut self.rules);
        if failing && self.failing.len() < fallback::MAX_EVIDENCE_LINES {
            self.failing.push((line, range.clone()));
        }
        if self.rules.len() > first {
            self.hits.push(Hit {
                line,
                at: HitAt::Segment(range),
                rules: first..self.rules.len(),
            });
        }
        failing
    }
}

/// Splits `piece` (whole lines) into at most `parts` parts of whole lines, none shorter than
/// `min_bytes` but the last.
fn split_lines(piece: &[u8], parts: usize, min_bytes: usize) -> Vec<&[u8]> {
    let size = (piece.len() / parts.max(1)).max(min_bytes).max(1);
    let mut out = Vec::with_capacity(parts);
    let mut rest = piece;
    while !rest.is_empty() {
        let cut = if out.len() + 1 >= parts || rest.len() <= size {
            rest.len()
        } else {
            memchr::memchr(b'\n', &rest[size - 1..]).map_or(rest.len(), |at| size + at)
        };
        let (part, tail) = rest.split_at(cut);
        out.push(part);
        rest = tail;
    }
    out
}

/// Threads that match the lines of a long piece: the machine's cores, up to a few.
static WORKERS: LazyLock<usize> =
    LazyLock::new(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_WORKERS)));

/// Most threads [`WORKERS`] uses: past a few, reading the input bounds the speed anyway.
const MAX_WORKERS: usize = 4;

/// The shortest part of a piece worth a thread of its own.
const MIN_PART_BYTES: usize = 128 << 10;

/// A triager's [`SetScratch`]es, given back warm when it is done.
#[derive(Debug)]
struct Scratches(Vec<SetScratch>);

impl Drop for Scratches {
    fn drop(&mut self) {
        for scratch in self.0.drain(..) {
            scratch.give_back();
        }
    }
}

/// A match with its rule, before it becomes a [`RuleMatch`].
#[derive(Debug)]
struct Kept {
    rule: usize,
    line: usize,
    text: String,
    message: String,
}

/// A byte no text log holds: a control byte other than tab, line breaks, form feed and escape,
/// DEL, or a byte UTF-8 never uses. Written without branches so [`count_binary`] vectorises.
fn is_binary_byte(b: u8) -> bool {
    let control =
        (b < 0x20) & (b != b'\t') & (b != b'\n') & (b != 0x0c) & (b != b'\r') & (b != 0x1b);
    control | (b == 0x7f) | (b == 0xc0) | (b == 0xc1) | (b >= 0xf5)
}

impl Triager {
    pub fn new(ctx: TriageContext) -> Triager {
        Triager {
            ctx,
            line: 0,
            matches: Vec::new(),
            per_rule: vec![0; RULES.len()],
            saw_verdict: false,
            verdict_line: None,
            step_started: None,
            last_evidence: None,
            last_line: None,
            failing: Vec::new(),
            failure_words: false,
            bytes: 0,
            seen_bytes: 0,
            binary_bytes: 0,
            nul_bytes: 0,
            stop: None,
            prefiltered: true,
            matching: Vec::new(),
            scratch: Scratches(vec![SetScratch::take()]),
            workers: *WORKERS,
            min_part_bytes: MIN_PART_BYTES,
            piece_bytes: PUSH_PIECE_BYTES,
        }
    }

    /// A triager that puts every line through the rules: what the prefilter must not change.
    #[cfg(test)]
    fn without_prefilter(ctx: TriageContext) -> Triager {
        Triager {
            prefiltered: false,
            ..Triager::new(ctx)
        }
    }

    /// A triager that splits every piece among `workers` threads, however short the parts, and
    /// reads pieces of at most `piece_bytes`.
    #[cfg(test)]
    fn with_workers(ctx: TriageContext, workers: usize, piece_bytes: usize) -> Triager {
        Triager {
            workers,
            min_part_bytes: 1,
            piece_bytes,
            ..Triager::new(ctx)
        }
    }

    /// Whether reading should stop here (the input is binary, or the cap is reached).
    pub fn stopped(&self) -> bool {
        self.stop.is_some()
    }

    /// Feeds the next line (without its line break), which took `consumed` bytes of the input.
    /// Bytes that are not UTF-8 are read as line noise.
    pub fn push_bytes(&mut self, raw: &[u8], consumed: u64) {
        let raw = &raw[..raw.len().min(MAX_LINE_BYTES)];
        self.line += 1;
        self.bytes += consumed;
        let raw = &raw[uart_break(raw)..];
        self.seen_bytes += raw.len() as u64;
        let binary = count_binary(raw);
        self.binary_bytes += binary;
        if binary > 0 {
            self.nul_bytes += raw.iter().filter(|&&b| b == 0).count() as u64;
        }
        self.check_stop();
        // A line that is mostly noise names nothing, and random bytes make the rule set's
        // lazy DFA build states without end (1 MB/s on random input): it is counted, not read.
        if raw.len() >= NOISE_LINE_MIN_BYTES && binary * 100 > raw.len() as u64 * BINARY_PERCENT {
            return;
        }
        let found = COMPILED.prefilter.is_candidate(raw);
        let cleaned = clean(raw);
        if found || !self.prefiltered {
            // The fallback reads only lines the prefilter finds, with it or without.
            self.scan_line(&cleaned, found);
        }
        if has_text(&cleaned) {
            self.last_line = Some((self.line, self.quote_last(&cleaned)));
        }
    }

    /// Counts `len` bytes of the rest of a line too long to read (see [`MAX_LINE_BYTES`]): they
    /// are not looked at, and the line is the one fed last.
    fn skip_tail(&mut self, len: u64) {
        self.bytes += len;
        self.check_stop();
    }

    /// Stops the reading at the cap, or once the first [`BINARY_SNIFF_BYTES`] say the input is
    /// binary.
    fn check_stop(&mut self) {
        if self.bytes >= MAX_LOG_BYTES {
            self.stop = Some(Stop::Cap);
        } else if self.bytes >= BINARY_SNIFF_BYTES && self.is_binary() {
            self.stop = Some(Stop::Binary);
        }
    }

    /// Feeds a whole log: [`Triager::push_lines`] for its lines, [`Triager::push_bytes`] for a
    /// last line without a line break.
    pub fn push_text(&mut self, text: &[u8]) {
        let whole = memchr::memrchr(b'\n', text).map_or(0, |at| at + 1);
        self.push_lines(&text[..whole]);
        let tail = &text[whole..];
        if !tail.is_empty() && !self.stopped() {
            self.push_bytes(without_cr(tail), tail.len() as u64);
        }
    }

    /// Feeds whole lines, each ending in `\n` (`region` ends with one): the same as feeding
    /// each to [`Triager::push_bytes`], but a line the prefilter finds nothing in costs only its
    /// count. Reads a piece of [`PUSH_PIECE_BYTES`] at a time, so that a stretch of binary noise
    /// slows down only its own piece. While worker threads match a piece's lines, this thread
    /// claims the hits of the piece before (claiming is in log order, and the triager's state
    /// is this thread's alone), so the two overlap.
    pub fn push_lines(&mut self, region: &[u8]) {
        let mut start = 0;
        let mut matched: Option<MatchedPiece<'_>> = None;
        while start < region.len() && !self.stopped() {
            let rest = &region[start..];
            let fed = self.bytes + matched.as_ref().map_or(0, |m| m.piece.len() as u64);
            // The log's first piece is one part long, read on this thread alone: the workers
            // then start from a copy of the DFA states it built rather than each building them.
            let most = if fed == 0 {
                self.min_part_bytes.min(self.piece_bytes)
            } else {
                self.piece_bytes
            };
            let piece = match memchr::memrchr(b'\n', &rest[..rest.len().min(most)]) {
                Some(at) => at + 1,
                None => memchr::memchr(b'\n', rest).map_or(rest.len(), |at| at + 1),
            };
            matched = self.push_piece(&rest[..piece], fed, matched.take());
            start += piece;
        }
        if let Some(last) = matched {
            self.claim_piece(last);
        }
    }

    /// Matches `piece`, whose first byte is the `fed`th of the input, while claiming `before`
    /// (the piece matched last, not yet claimed): returns `piece` matched, for the caller to
    /// claim next, or None when it was read line by line here.
    fn push_piece<'a>(
        &mut self,
        piece: &'a [u8],
        fed: u64,
        before: Option<MatchedPiece<'a>>,
    ) -> Option<MatchedPiece<'a>> {
        // A piece can be passed by only if neither the binary test nor the cap can stop the
        // reading inside it: text only, in a log that is not binary so far, below the cap. (A
        // piece matched and not yet claimed is text: claiming it cannot make the log binary.)
        let fast = self.prefiltered
            && !self.is_binary()
            && count_binary(piece) == 0
            && fed + (piece.len() as u64) < MAX_LOG_BYTES;
        if !fast {
            if let Some(before) = before {
                self.claim_piece(before);
            }
            let mut start = 0;
            for end in memchr::memchr_iter(b'\n', piece) {
                if self.stopped() {
                    return None;
                }
                self.push_bytes(without_cr(&piece[start..end]), (end + 1 - start) as u64);
                start = end + 1;
            }
            return None;
        }
        let parts = split_lines(piece, self.workers, self.min_part_bytes);
        // The workers' scratches come after this thread's own, which claiming uses.
        let wanted = if parts.len() > 1 { parts.len() + 1 } else { 1 };
        if let Some(own) = self.scratch.0.first() {
            if self.scratch.0.len() < wanted {
                let warm = own.clone();
                self.scratch.0.resize(wanted, warm);
            }
        }
        let found: Vec<Found> = if parts.len() > 1 && self.scratch.0.len() > parts.len() {
            let mut others = self.scratch.0.split_off(1);
            let found = std::thread::scope(|scope| {
                let workers: Vec<_> = parts
                    .iter()
                    .zip(others.iter_mut())
                    .map(|(part, scratch)| scope.spawn(move || Found::in_part(part, scratch)))
                    .collect();
                if let Some(before) = before {
                    self.claim_piece(before);
                }
                // A worker that panicked did so on a bug, not on the input: its lines are
                // matched again here rather than lost.
                parts
                    .iter()
                    .zip(workers)
                    .map(|(part, worker)| {
                        worker
                            .join()
                            .unwrap_or_else(|_| Found::in_part(part, &mut SetScratch::take()))
                    })
                    .collect()
            });
            self.scratch.0.append(&mut others);
            found
        } else {
            if let Some(before) = before {
                self.claim_piece(before);
            }
            vec![Found::in_part(piece, &mut self.scratch.0[0])]
        };
        Some(MatchedPiece {
            piece,
            parts: if found.len() == 1 { vec![piece] } else { parts },
            found,
        })
    }

    /// Claims the hits of a matched piece, in log order.
    fn claim_piece(&mut self, matched: MatchedPiece<'_>) {
        let MatchedPiece {
            piece,
            parts,
            found,
        } = matched;
        for (part, found) in parts.iter().zip(&found) {
            let first_line = self.line;
            // Failure lines are kept in log order: a line with escapes is matched only here,
            // so the part's other failure lines after it must wait for it.
            let mut failing = found.failing.iter().peekable();
            for hit in &found.hits {
                while let Some((line, range)) = failing.next_if(|(line, _)| *line <= hit.line) {
                    self.keep_failing(first_line + line, &part[range.clone()]);
                }
                self.line = first_line + hit.line;
                match hit.at {
                    HitAt::Segment(ref range) => {
                        self.claim_segment(&part[range.clone()], &found.rules[hit.rules.clone()]);
                    }
                    HitAt::Line(ref range) => self.scan_line(&clean(&part[range.clone()]), true),
                }
            }
            for (line, range) in failing {
                self.keep_failing(first_line + line, &part[range.clone()]);
            }
            self.line = first_line + found.lines;
            self.seen_bytes += found.seen_bytes;
        }
        self.bytes += piece.len() as u64;
        self.find_last_line(piece);
    }

    /// Sets where the text stops to the last line of `piece` (just fed) that has any, if one
    /// does: usually its very last line, so looking back costs next to nothing.
    fn find_last_line(&mut self, piece: &[u8]) {
        let Some(mut end) = piece.len().checked_sub(1) else {
            return;
        };
        let mut line = self.line;
        loop {
            let start = memchr::memrchr(b'\n', &piece[..end]).map_or(0, |at| at + 1);
            let raw = without_cr(&piece[start..end]);
            let cleaned = clean(&raw[..raw.len().min(MAX_LINE_BYTES)]);
            if has_text(&cleaned) {
                self.last_line = Some((line, self.quote_last(&cleaned)));
                return;
            }
            if start == 0 {
                return;
            }
            end = start - 1;
            line -= 1;
        }
    }

    /// Puts a cleaned line through the rules, one [`segments`] part at a time; `evidence`: the
    /// prefilter found the line, so its failure words are kept for the fallback.
    fn scan_line(&mut self, cleaned: &[u8], evidence: bool) {
        for range in segments(cleaned) {
            self.scan(&cleaned[range], evidence);
        }
    }

    /// The text of the last line with text: where a timed-out log stopped, or the success a
    /// tool closed its log with (see [`success_tail`]).
    fn quote_last(&self, cleaned: &[u8]) -> String {
        let joined: Vec<u8> = cleaned
            .iter()
            .map(|&b| if b == b'\r' { b' ' } else { b })
            .collect();
        quote(&String::from_utf8_lossy(trim(&joined)))
    }

    fn is_binary(&self) -> bool {
        self.binary_bytes * 100 > self.seen_bytes * BINARY_PERCENT
    }

    /// A binary input rich in NUL bytes is a firmware image or a data file, not a console: the
    /// strings in it (a `printf` format such as `Stack overflow in %s`) are not lines anything
    /// printed, so nothing in it is evidence. A console's noise (a wrong baud rate, a reset)
    /// holds few NULs, and text after it is still read.
    fn is_image(&self) -> bool {
        self.is_binary()
            && self.nul_bytes >= IMAGE_MIN_NULS
            && self.nul_bytes * 100 > self.seen_bytes * IMAGE_NUL_PERCENT
    }

    /// A PASS for a log no rule spoke on, no line of which bore failure words, and whose last
    /// line is a tool's own closing success (`Chip erase complete`, `program Finished
    /// Successfully`, `Done flashing file`): the shape of a flasher's or runner's success that no
    /// rule knows yet. Its reason says the confidence is low. Measured on the tuning set (round
    /// 11): of the logs the rules left UNKNOWN, 7 more passes are read, and no log labelled
    /// otherwise becomes a pass.
    fn success_tail(&self) -> Option<Triage> {
        let (line, text) = self.last_line.as_ref()?;
        // A line a rule claimed is what that rule says it is: a CI job's `Job succeeded` is
        // known, and known to be no verdict on the firmware.
        let claimed = self.matches.iter().any(|kept| kept.line == *line);
        if claimed || self.failure_words || self.binary_bytes > 0 && self.is_binary() {
            return None;
        }
        let (success, against) = &*SUCCESS_TAIL;
        if !success.is_match(text.as_bytes()) || against.is_match(text.as_bytes()) {
            return None;
        }
        Some(Triage {
            class: TriageClass::Pass,
            lines: vec![*line],
            reason: format!(
                "{text} (low confidence: the log ends in this success line and no line in it \
                 shows a failure; no rule knows the tool)"
            ),
            matches: vec![RuleMatch {
                rule_id: SUCCESS_TAIL_RULE.to_string(),
                class: TriageClass::Pass,
                line: *line,
                text: text.clone(),
            }],
        })
    }

    /// Why a binary input says nothing.
    fn binary_reason(&self) -> String {
        format!(
            "the input is binary, not a log: {}% of the {} bytes looked at are not text",
            self.binary_bytes * 100 / self.seen_bytes.max(1),
            self.seen_bytes
        )
    }

    /// Puts one segment of a line through the rules.
    fn scan(&mut self, segment: &[u8], evidence: bool) {
        let mut matching = std::mem::take(&mut self.matching);
        matching.clear();
        if matching_rules(segment, &mut self.scratch.0[0], &mut matching) && evidence {
            self.keep_failing(self.line, segment);
        }
        self.claim_segment(segment, &matching);
        self.matching = matching;
    }

    /// Keeps a failure-bearing segment for the fallback, while there is room.
    fn keep_failing(&mut self, line: usize, segment: &[u8]) {
        if self.failing.len() < fallback::MAX_EVIDENCE_LINES {
            self.failing
                .push((line, quote(&String::from_utf8_lossy(segment))));
        }
    }

    /// Gives the segment to the first of the rules that match it (see [`matching_rules`]) whose
    /// `follows` holds, and keeps the match with its message if the rule still keeps matches.
    fn claim_segment(&mut self, segment: &[u8], matching: &[usize]) {
        for &index in matching {
            let rule = &RULES[index];
            if !self.follows_ok(rule) {
                continue;
            }
            if rule.starts_step {
                self.step_started = Some((self.line, quote(&String::from_utf8_lossy(segment))));
            }
            if self.claim(index, rule) {
                // Only kept matches pay for their message (a capture is the costly part).
                let message = match rule.matcher {
                    Matcher::Regex(_) => regex_message(COMPILED.regex(index), segment),
                    Matcher::Diagnostic { .. } => {
                        let text = String::from_utf8_lossy(segment);
                        first_error(&text)
                            .as_ref()
                            .map_or_else(|| text.to_string(), diagnostic_message)
                    }
                };
                self.matches.push(Kept {
                    rule: index,
                    line: self.line,
                    text: quote(&String::from_utf8_lossy(segment)),
                    message: quote(&message),
                });
            }
            return;
        }
    }

    fn follows_ok(&self, rule: &Rule) -> bool {
        rule.follows.is_empty()
            || self
                .last_evidence
                .is_some_and(|last| rule.follows.contains(&RULES[last].id))
    }

    /// Records that `rule` claimed the current line; true when the match is to be kept.
    fn claim(&mut self, index: usize, rule: &Rule) -> bool {
        if rule.class.is_none() {
            return false;
        }
        self.last_evidence = Some(index);
        self.saw_verdict |= rule.verdict;
        if rule.verdict && self.verdict_line.is_none() {
            self.verdict_line = Some(self.line);
        }
        if self.per_rule[index] >= MAX_MATCHES_PER_RULE {
            return false;
        }
        self.per_rule[index] += 1;
        true
    }

    /// Decides the class (see the module docs for the precedence), the built-in fallback
    /// deciding when no rule did, or overruling a generic line's guess.
    pub fn finish(self) -> Triage {
        let (triage, evidence) = self.finish_rules();
        fallback::apply(triage, &evidence, &fallback::BUILT_IN)
    }

    /// The rules' decision alone, and the failure-bearing lines the fallback would read (none
    /// for a binary input, which stays UNKNOWN).
    pub fn finish_rules(mut self) -> (Triage, fallback::Evidence) {
        let binary = self.stop == Some(Stop::Binary) || (self.is_binary() && self.bytes > 0);
        let rules_spoke = self
            .matches
            .iter()
            .any(|k| RULES[k.rule].scope == Scope::Specific && RULES[k.rule].class.is_some());
        self.failure_words = !self.failing.is_empty();
        let lines = if binary {
            Vec::new()
        } else {
            std::mem::take(&mut self.failing)
        };
        let (triage, guess) = self.decide();
        let evidence = fallback::Evidence {
            lines,
            rules_spoke,
            guess,
        };
        (triage, evidence)
    }

    /// The rules' triage, and whether its class is only a generic failure line's guess (no
    /// line names what failed, nor the step it failed in): see [`fallback::Evidence::guess`].
    fn decide(self) -> (Triage, bool) {
        let ctx = self.ctx;
        let saw_verdict = self.saw_verdict;
        let verdict_line = self.verdict_line;
        let expected = expected_faults(&self.matches);
        let effective = |kept: &Kept| -> Option<TriageClass> {
            if expected.contains(&kept.line) {
                return None;
            }
            let rule = &RULES[kept.rule];
            let class = if rule.timeout_explains && ctx.timed_out {
                Some(TriageClass::Hang)
            } else {
                rule.class
            };
            // A log that reached its verdict did not hang, whatever stopped it afterwards; a
            // timeout the runner reports before its verdict is why that verdict failed.
            let after_verdict = verdict_line.is_some_and(|v| kept.line > v);
            class.filter(|c| !(after_verdict && *c == TriageClass::Hang))
        };

        let mut candidates: Vec<Candidate<'_>> = self
            .matches
            .iter()
            .filter_map(|k| {
                effective(k).map(|class| Candidate {
                    class,
                    weight: RULES[k.rule].weight,
                    line: k.line,
                    message: k.message.as_str(),
                    scope: RULES[k.rule].scope,
                    yields: RULES[k.rule].yields_to_context,
                    consequence: RULES[k.rule].consequence,
                    from_context: false,
                })
            })
            .collect();
        settle_scopes(&mut candidates);
        let timeout_reason = self.timeout_reason();
        if ctx.timed_out && !saw_verdict {
            let line = self.last_line.as_ref().map_or(0, |(n, _)| *n);
            candidates.push(Candidate {
                class: TriageClass::Hang,
                weight: 3,
                line,
                message: timeout_reason.as_str(),
                scope: Scope::Specific,
                yields: false,
                consequence: false,
                from_context: false,
            });
        }

        let mut matches: Vec<RuleMatch> = self
            .matches
            .iter()
            .filter_map(|k| {
                RULES[k.rule].class.map(|class| RuleMatch {
                    rule_id: RULES[k.rule].id.to_string(),
                    class,
                    line: k.line,
                    text: k.text.clone(),
                })
            })
            .collect();
        if ctx.timed_out && !saw_verdict {
            if let Some((line, text)) = &self.last_line {
                matches.push(RuleMatch {
                    rule_id: TIMEOUT_RULE.to_string(),
                    class: TriageClass::Hang,
                    line: *line,
                    text: text.clone(),
                });
            }
        }

        if self.is_image() {
            let reason = format!(
                "{} ({} NUL bytes: an image or a data file, whose strings were never printed)",
                self.binary_reason(),
                self.nul_bytes
            );
            return self.undecided(Vec::new(), reason, Vec::new());
        }
        let Some(mut class) = candidates.iter().map(|c| c.class).min_by_key(|c| c.rank()) else {
            let reason = if self.stop == Some(Stop::Binary) || (self.is_binary() && self.bytes > 0)
            {
                self.binary_reason()
            } else if self.last_line.is_none() {
                "the log is empty".to_string()
            } else if let Some(pass) = self.success_tail() {
                return (pass, false);
            } else {
                "no rule matched: nothing in the log shows a verdict or a failure".to_string()
            };
            return self.undecided(Vec::new(), reason, matches);
        };
        // fwfix's own timeout over a log with no verdict is a hang whatever failed before it.
        let stopped_by_us = ctx.timed_out && !saw_verdict;
        if class == TriageClass::Hang && !stopped_by_us && failed_before_timeout(&candidates) {
            class = TriageClass::TestFailure;
        }
        let weight = candidates
            .iter()
            .filter(|c| c.class == class)
            .map(|c| c.weight)
            .max()
            .unwrap_or(0);
        let deciding: Vec<_> = candidates
            .iter()
            .filter(|c| c.class == class && c.weight == weight)
            .collect();
        let mut lines: Vec<usize> = deciding.iter().map(|c| c.line).filter(|&l| l > 0).collect();
        lines.sort_unstable();
        lines.dedup();
        let mut reason = deciding
            .iter()
            .min_by_key(|c| c.line)
            .map_or_else(String::new, |c| c.message.to_string());
        if class == TriageClass::Pass && !saw_verdict && weight < 2 {
            // Tests that passed so far are no passing verdict: the run may have stopped, or
            // failed later, where the log does not show.
            let reason = format!(
                "{} passing test line(s) but no final verdict, e.g. line {}: {reason}",
                deciding.len(),
                lines.first().copied().unwrap_or(0)
            );
            return self.undecided(lines, reason, matches);
        }
        if let Some((step_line, step)) = self.step_started.as_ref().filter(|(step_line, _)| {
            class == TriageClass::Pass
                && lines.last() < Some(step_line)
                && !candidates
                    .iter()
                    .any(|c| c.class == TriageClass::Pass && c.line > *step_line)
        }) {
            // The success was an earlier step's (the flash, the build); the log stops before the
            // step it started next says anything.
            let reason = format!(
                "{reason} (line {}) ended an earlier step; line {step_line} started another, \
                 `{step}`, and the log ends before its outcome",
                lines.last().copied().unwrap_or(0)
            );
            return self.undecided(lines, reason, matches);
        }
        if matches!(class, TriageClass::Pass | TriageClass::TestFailure) && !saw_verdict {
            reason.push_str(" (no final verdict in the log)");
        }
        let generic = deciding.iter().all(|c| c.scope != Scope::Specific);
        let in_context = deciding.iter().any(|c| c.from_context);
        if generic {
            reason.push_str(if in_context {
                " (low confidence: a generic failure line, its step named by the log's context)"
            } else {
                " (low confidence: a generic failure line; no line names what failed)"
            });
        }
        let guess = generic && !in_context && class != TriageClass::Pass;
        let triage = Triage {
            class,
            lines,
            reason: self.with_cap_note(reason),
            matches,
        };
        (triage, guess)
    }

    /// An UNKNOWN decision (no generic line's guess), its reason saying so when the log was
    /// longer than triage reads.
    fn undecided(
        &self,
        lines: Vec<usize>,
        reason: String,
        matches: Vec<RuleMatch>,
    ) -> (Triage, bool) {
        let triage = Triage {
            class: TriageClass::Unknown,
            lines,
            reason: self.with_cap_note(reason),
            matches,
        };
        (triage, false)
    }

    /// The reason, saying so when the log was longer than triage reads.
    fn with_cap_note(&self, mut reason: String) -> String {
        if self.stop == Some(Stop::Cap) {
            reason.push_str(&format!(
                " (only the first {} MiB were read)",
                MAX_LOG_BYTES >> 20
            ));
        }
        reason
    }

    fn timeout_reason(&self) -> String {
        match &self.last_line {
            Some((line, _)) => {
                format!("the run timed out with no verdict; the output stops at line {line}")
            }
            None => "the run timed out with no output at all".to_string(),
        }
    }
}

/// A line's evidence as [`Triager::finish`] weighs it.
struct Candidate<'a> {
    class: TriageClass,
    weight: u8,
    line: usize,
    message: &'a str,
    scope: Scope,
    /// See [`Rule::yields_to_context`].
    yields: bool,
    /// See [`Rule::consequence`].
    consequence: bool,
    /// The class is the log's context's, not the rule's own.
    from_context: bool,
}

/// Applies [`Scope`]: generic failures count only when no specific failure explains the log,
/// echoes only when nothing else does, and then as the class its context lines name; context
/// lines never count by themselves. A line that yields to the context takes its class too.
fn settle_scopes(candidates: &mut Vec<Candidate<'_>>) {
    settle_consequences(candidates);
    // A flash's generic failure line (`Error: Failed to download data!`) and, after it, a
    // closing success: the flasher retried and got there.
    if let Some(success) = candidates
        .iter()
        .filter(|c| c.class == TriageClass::Pass && c.scope == Scope::Specific && c.weight >= 2)
        .map(|c| c.line)
        .max()
    {
        candidates.retain(|c| {
            c.class != TriageClass::FlashError
                || matches!(c.scope, Scope::Specific | Scope::Context)
                || c.line > success
        });
    }
    let specific_failure = candidates
        .iter()
        .any(|c| c.scope == Scope::Specific && c.class != TriageClass::Pass);
    let context = candidates
        .iter()
        .filter(|c| c.scope == Scope::Context)
        .map(|c| c.class)
        .min_by_key(|c| c.rank());
    let generic_failure = !specific_failure
        && candidates.iter().any(|c| match c.scope {
            Scope::Generic => true,
            Scope::GenericInContext => context.is_some(),
            Scope::Specific | Scope::Echo | Scope::Context => false,
        });
    candidates.retain(|c| match c.scope {
        Scope::Specific => true,
        Scope::Context => false,
        Scope::Generic => !specific_failure,
        Scope::GenericInContext => !specific_failure && context.is_some(),
        Scope::Echo => !specific_failure && !generic_failure,
    });
    if let Some(context) = context {
        for c in candidates
            .iter_mut()
            .filter(|c| c.scope != Scope::Specific || c.yields)
        {
            c.class = context;
            c.from_context = true;
        }
    }
}

/// The earlier, decisive cause beats its later consequence: a line that only reports how a
/// failure was handled (a fatal-error handler's banner, an `abort()`) drops out when another
/// specific line names a cause of another kind such handlers report (an assert, a hang).
fn settle_consequences(candidates: &mut Vec<Candidate<'_>>) {
    let causes: Vec<TriageClass> = candidates
        .iter()
        .filter(|c| {
            !c.consequence
                && c.scope == Scope::Specific
                && matches!(
                    c.class,
                    TriageClass::Assert | TriageClass::Crash | TriageClass::Hang
                )
        })
        .map(|c| c.class)
        .collect();
    if !causes.is_empty() {
        // A consequence of the cause's own class still shows it (a fault, then its fatal error).
        candidates.retain(|c| !c.consequence || causes.contains(&c.class));
    }
}

/// Lines of the firmware's asserts and faults that a test case then passed over: the test
/// expected them (ztest's error-hook tests raise them on purpose and catch them), so they are
/// no failure. A case ends at its pass or failure line, so only the lines since the last one
/// count.
fn expected_faults(matches: &[Kept]) -> Vec<usize> {
    let mut expected = Vec::new();
    let mut pending = Vec::new();
    for kept in matches {
        let rule = &RULES[kept.rule];
        match rule.class {
            Some(TriageClass::Assert | TriageClass::Crash) => pending.push(kept.line),
            Some(TriageClass::TestFailure) => pending.clear(),
            _ if rule.passes_test_case => expected.append(&mut pending),
            _ => {}
        }
    }
    expected
}

/// Whether a runner's timeout came after a test had already failed by a line that decides it
/// (a test's own failure, not a running count that may hold earlier timeouts): the run's
/// verdict was a failure by then, and the timeout only cut short the tests after it.
fn failed_before_timeout(candidates: &[Candidate<'_>]) -> bool {
    let first = |class: TriageClass, weight: u8| {
        candidates
            .iter()
            .filter(|c| c.class == class && c.weight >= weight && c.line > 0)
            .map(|c| c.line)
            .min()
    };
    match (
        first(TriageClass::TestFailure, 3),
        first(TriageClass::Hang, 1),
    ) {
        (Some(failed), Some(hang)) => failed < hang,
        _ => false,
    }
}

/// Pushes onto `out` the rules that match `segment`, in table order, up to the first that
/// applies whatever came before it (no `follows`): the segment belongs to the first of them
/// whose `follows` holds, which only the triager's state can tell. Pure, so the lines of a
/// piece can be matched on other threads. True when the segment holds a failure word, for
/// [`fallback`] (found by the same search), unless a known harmless line's rule (no class)
/// claims it whatever came before: a line the rules know to be harmless is no evidence to the
/// fallback either. A segment the scratch's memo holds is looked up rather than searched.
fn matching_rules(segment: &[u8], scratch: &mut SetScratch, out: &mut Vec<usize>) -> bool {
    if let Some(known) = scratch.memo.get(segment) {
        out.extend_from_slice(&known.rules);
        return known.failing;
    }
    let first = out.len();
    let failing = rules_of_hits(segment, scratch.matches(segment), out);
    scratch.memo.remember(segment, &out[first..], failing);
    failing
}

/// [`matching_rules`] given the patterns of the set that match `segment`.
fn rules_of_hits(segment: &[u8], hits: &Matched, out: &mut Vec<usize>) -> bool {
    let compiled = &*COMPILED;
    let failing = hits.contains(compiled.failure);
    if hits.len() == usize::from(failing) {
        return failing;
    }
    // Only the rules whose pattern matched, merged with the diagnostic rules when the hint did:
    // walking the whole table for each line was 9% of triage's time.
    let hint = hits.contains(compiled.hint);
    let mut regexes = hits
        .iter()
        .filter_map(|p| compiled.pattern_rule.get(p).copied())
        .peekable();
    let diagnostics: &[usize] = if hint {
        &compiled.diagnostic_rules
    } else {
        &[]
    };
    let mut diagnostics = diagnostics.iter().copied().peekable();
    let mut diagnostic = None;
    loop {
        let from_regex = match (regexes.peek(), diagnostics.peek()) {
            (Some(r), Some(d)) => r < d,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return failing,
        };
        let next = if from_regex {
            regexes.next()
        } else {
            diagnostics.next()
        };
        let Some(index) = next else {
            return failing;
        };
        let hit = match RULES[index].matcher {
            Matcher::Regex(_) => RULES[index].check.holds(segment),
            Matcher::Diagnostic { .. } => diagnostic
                .get_or_insert_with(|| first_error(&String::from_utf8_lossy(segment)))
                .as_ref()
                .is_some_and(|d| RULES[index].accepts(d)),
        };
        if hit {
            out.push(index);
            if RULES[index].follows.is_empty() {
                return failing && RULES[index].class.is_some();
            }
        }
    }
}

/// The first error-severity diagnostic on a line.
fn first_error(segment: &str) -> Option<crate::analysis::Diagnostic> {
    crate::analysis::parse_build_log(segment)
        .into_iter()
        .find(|d| d.severity == crate::analysis::Severity::Error)
}

fn diagnostic_message(d: &crate::analysis::Diagnostic) -> String {
    match (&d.file, d.line, d.column) {
        (Some(file), Some(line), Some(col)) => format!("{file}:{line}:{col}: {}", d.message),
        (Some(file), Some(line), None) => format!("{file}:{line}: {}", d.message),
        _ => d.message.clone(),
    }
}

fn regex_message(regex: Option<&Regex>, segment: &[u8]) -> String {
    let message = regex
        .and_then(|r| r.captures(segment))
        .and_then(|c| c.name("msg"))
        .map_or(segment, |m| m.as_bytes());
    String::from_utf8_lossy(message).trim().to_string()
}

/// Rule id of a PASS read from a log's last line (see [`Triager::success_tail`]).
pub const SUCCESS_TAIL_RULE: &str = "tail.success";

/// A line saying a step succeeded, and what makes such a line no verdict: a failure word or a
/// negation (`Nothing to be done`), a CI job's trailer (`Job succeeded`, `Finished: SUCCESS`:
/// the job's, not the firmware's), a test case's own line (passing cases without a summary are
/// no verdict), a build step's counter (`[4/5] Completed 'bootloader'`), a step before the
/// writing (`Finished erasing`), one segment's hash, a non-zero exit code, a boot step's
/// (`MemoryInit Done`), a check just starting (st-flash's `Starting verification of write
/// complete`).
static SUCCESS_TAIL: LazyLock<(Regex, Regex)> = LazyLock::new(|| {
    let compile = |p: &str| built_in(regex::bytes::RegexBuilder::new(p).case_insensitive(true));
    (
        compile(
            r"\b(?:success(?:ful(?:ly)?)?|succeeded|completed?|concluded|done|finished|verified|pass(?:ed)?)\b",
        ),
        compile(
            r"\b(?:fail\w*|error\w*|not|unsuccessful\w*|abort\w*|timeout|timed out|nothing|erasing|starting verification|test\w*|exit code [1-9]|job|pipeline|workflow|finished: success)\b|\b0 passed|\[\d+/\d+\]|hash of data verified|init(?:iali[sz](?:ation|ed))?\b",
        ),
    )
});

/// Colour and hyperlink escapes, and the stamps fwfix and test runners put before each line.
static NOISE: LazyLock<(Regex, Regex)> = LazyLock::new(|| {
    let compile = |p: &str| built_in(regex::bytes::RegexBuilder::new(p).unicode(false));
    (
        compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"),
        // fwfix's console.log stamp, then the prefixes test runners put before the device's
        // own lines: twister's `DEBUG - DEVICE: `, pyterm's `... - INFO # `, mbedhtrun's
        // `[...][CONN][RXD] `, a serial terminal's `[2019-09-04 17:37:27.873] ` or `[03:02:52.411]`, Python
        // logging's `2024-01-22 17:23:26,864:ERROR:` (a flashing GUI's log), a GUI tool's or a
        // CI's clock (`11:21:53:481 : `, `21:42:25: `, `09:23:14 `), J-Link RTT Viewer's terminal
        // number (`0> `), a CI runner's raw log (GitHub Actions', Azure Pipelines'
        // `2024-01-19T11:58:23.5778720Z `, indented when pasted into an issue), the Arduino
        // IDE's serial monitor's (`22:58:57.694 -> `), Meshtastic's level and clock (`DEBUG |
        // ??:??:?? 0 `, the clock unset), a phpBB forum's code box's `Code: Select all`, copied
        // with the first line, and VS Code's CMake Tools' channel (`[build] `, `[cmake] `).
        compile(
            r"^(?:Code: Select all|\[(?:build|cmake|main|proc|driver|kit|ctest)\] +|\s*\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z |\d\d:\d\d:\d\d\.\d{3} -> |(?:DEBUG|INFO|WARN|ERROR|TRACE|CRIT)\s*\| (?:\d\d|\?\?):(?:\d\d|\?\?):(?:\d\d|\?\?) \d+ |\d\d:\d\d:\d\d(?:[:.,]\d{1,6})? ?: |\d\d:\d\d:\d\d |\d> |\[\s*\d+\.\d{3}\] (?:uart|host)  |(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} - twister - )?(?:DEBUG|INFO)\s+- (?:DEVICE|QEMU \(\d+\)): |\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?:- INFO )?# |\[\d+\.\d+\]\[CONN\]\[RXD\] |\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] |\[\d\d:\d\d:\d\d\.\d{3}\] ?|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):)",
        ),
    )
});

/// Builds one of triage's own constant patterns.
fn built_in(builder: &mut regex::bytes::RegexBuilder) -> Regex {
    #[expect(
        clippy::expect_used,
        reason = "constant patterns, exercised by the unit tests"
    )]
    builder.build().expect("built-in triage pattern compiles")
}

/// The line without colour codes, console.log's `[    0.035] uart  ` stamp or a test runner's
/// prefix.
fn clean(raw: &[u8]) -> Cow<'_, [u8]> {
    if memchr::memchr(0x1b, raw).is_none() {
        return Cow::Borrowed(without_stamp(raw));
    }
    match NOISE.0.replace_all(raw, &b""[..]) {
        Cow::Borrowed(text) => Cow::Borrowed(without_stamp(text)),
        Cow::Owned(mut text) => {
            let stamp = text.len() - without_stamp(&text).len();
            text.drain(..stamp);
            Cow::Owned(text)
        }
    }
}

/// `text` (without colour codes) without its stamp or prefix, if it has one.
fn without_stamp(text: &[u8]) -> &[u8] {
    // BitBake's task log quotes each line of a failed task after `| `, and so does QMK's error
    // block; a Markdown table's row starts so too, but has more cells.
    if let Some(rest) = quoted_by_bar(text).or_else(|| quoted_by_angle(text)) {
        return rest;
    }
    // Every stamp starts with one of these: most lines need no search.
    if !matches!(
        text.first(),
        Some(b'[' | b'0'..=b'9' | b'D' | b'I' | b'W' | b'E' | b'T' | b'C' | b' ' | b'\t')
    ) {
        return text;
    }
    NOISE.1.find(text).map_or(text, |m| &text[m.end()..])
}

/// The line BitBake or QMK quoted after `| `, if `text` is one: text right after the bar (a
/// compiler's `      |     ^~~` gutter has blanks) and no other bar (a Markdown table's row).
fn quoted_by_bar(text: &[u8]) -> Option<&[u8]> {
    let rest = text.trim_ascii_start().strip_prefix(b"| ")?;
    let starts_with_text = rest.first().is_some_and(|b| !b.is_ascii_whitespace());
    (starts_with_text && memchr::memchr(b'|', rest).is_none()).then_some(rest)
}

/// The line a Markdown quote (`> `), Nix's failed-build tail (`       > `) or a mail's quote
/// without a blank (`>collect2: ld returned 1 exit status`) quoted, if `text` is one. Arrows
/// and prompts (`>>>`, `=>`) are not quotes.
fn quoted_by_angle(text: &[u8]) -> Option<&[u8]> {
    let quoted = text.trim_ascii_start().strip_prefix(b">")?;
    let rest = quoted.strip_prefix(b" ").unwrap_or(quoted);
    rest.first()
        .is_some_and(|b| !b.is_ascii_whitespace() && *b != b'>')
        .then_some(rest)
}

/// Whether a cleaned line holds anything but blanks, control bytes or a Markdown code fence.
fn has_text(cleaned: &[u8]) -> bool {
    cleaned
        .iter()
        .any(|b| !(b.is_ascii_whitespace() || b.is_ascii_control()))
        && !is_fence(cleaned.trim_ascii())
}

/// A Markdown code fence (```` ``` ````, `~~~`, with or without a language): a log pasted from
/// an issue or a chat ends in one, and it is no line the log's tools printed.
fn is_fence(text: &[u8]) -> bool {
    let Some(rest) = text
        .strip_prefix(b"```")
        .or_else(|| text.strip_prefix(b"~~~"))
    else {
        return false;
    };
    let marks = rest.iter().take_while(|&&b| b == b'`' || b == b'~').count();
    rest[marks..]
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || b"+-_".contains(b))
}

/// A line without the carriage return of its `\r\n`.
fn without_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Bytes of `bytes` that no text holds (see [`is_binary_byte`]), counted in byte-wide lanes
/// (at most 255 a chunk, so none overflows): the scalar count was a tenth of triage's time.
fn count_binary(bytes: &[u8]) -> u64 {
    bytes
        .chunks(255)
        .map(|chunk| {
            let n = chunk
                .iter()
                .fold(0u8, |n, &b| n.wrapping_add(u8::from(is_binary_byte(b))));
            u64::from(n)
        })
        .sum()
}

/// Where the text of a line starts after a UART break: a run of NUL bytes (what a receiver
/// reads while the line is held low, as a board resets) followed by text alone. Such a run is
/// line noise, not a sign that the input is binary; NULs alone (`/dev/zero`) or beside other
/// binary bytes (an image's zero padding) are. 0 when there is no such run.
fn uart_break(raw: &[u8]) -> usize {
    let run = raw.iter().take_while(|&&b| b == 0).count();
    if run == 0 || run == raw.len() || count_binary(&raw[run..]) > 0 {
        return 0;
    }
    run
}

/// Blanks and control bytes (a UART's reset noise, NULs) at either end.
fn trim(text: &[u8]) -> &[u8] {
    &text[trim_range(text)]
}

/// Where [`trim`] cuts `text`.
fn trim_range(text: &[u8]) -> Range<usize> {
    let keep = |b: &u8| !(b.is_ascii_whitespace() || b.is_ascii_control());
    let Some(start) = text.iter().position(keep) else {
        return 0..0;
    };
    let end = text.iter().rposition(keep).map_or(start, |e| e + 1);
    start..end
}

/// The parts of a cleaned line the rules read, trimmed, the empty ones left out. A carriage
/// return inside a line redraws it on a terminal (progress bars); each part is read on its own
/// so nothing written before the redraw is lost.
fn segments(cleaned: &[u8]) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut start = 0;
    cleaned.split(|&b| b == b'\r').filter_map(move |part| {
        let at = start;
        start += part.len() + 1;
        let mut kept = trim_range(part);
        kept.end = kept.start + without_shown_breaks(&part[kept.clone()]).len();
        let text = unquoted(&part[kept.clone()]);
        (!text.is_empty()).then(|| at + kept.start + text.start..at + kept.start + text.end)
    })
}

/// `text` without the line breaks a serial terminal shows as text at its end (`<\r><\n>`).
fn without_shown_breaks(mut text: &[u8]) -> &[u8] {
    while let Some(rest) = text
        .strip_suffix(b"<\\r>")
        .or_else(|| text.strip_suffix(b"<\\n>"))
    {
        text = rest.trim_ascii_end();
    }
    text
}

/// Where `text` lies without the Markdown backtick a reporter put around it: a line quoted as
/// inline code (`` `make: *** x.  Stop.` ``), or the first or last line of a quote that spans
/// several. The backtick is taken off when it has no partner in the line, or when the pair
/// wraps the whole line; code fences and a tool's own quoting (`` could not compile `app` ``)
/// keep theirs.
fn unquoted(text: &[u8]) -> Range<usize> {
    let len = text.len();
    let (starts, ends) = (text.first() == Some(&b'`'), text.last() == Some(&b'`'));
    if !(starts || ends) || text.starts_with(b"``") || text.ends_with(b"``") {
        return 0..len;
    }
    let ticks = memchr::memchr_iter(b'`', text).count();
    match (starts, ends) {
        (true, true) if ticks == 2 => 1..len - 1,
        (true, _) if ticks % 2 == 1 => 1..len,
        (_, true) if ticks % 2 == 1 => 0..len - 1,
        _ => 0..len,
    }
}

/// At most [`MAX_QUOTE_CHARS`] characters, with `…` when cut.
fn quote(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests;
