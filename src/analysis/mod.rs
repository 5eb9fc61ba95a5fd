//! Log triage, compiler and linker diagnostics, lint findings, and crash (fault) decoding and
//! symbolisation.

pub mod diagnostics;
pub mod evidence;
pub mod fault;
pub mod lint;
pub mod silence;
pub mod symbols;
pub mod triage;

pub use diagnostics::parse_build_log;
pub use fault::crash_report;
pub use symbols::{SymbolError, Symbolizer};

use serde::{Deserialize, Serialize};

/// Severity of a build diagnostic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(schemars::JsonSchema)]
pub enum Severity {
    Error,
    Warning,
    Note,
}

/// One compiler or linker diagnostic, e.g. `src/crc.c:12:5: error: expected ';'`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Diagnostic {
    pub severity: Severity,
    /// `compiler`, `assembler`, `linker`, or `make` (its "no rule to make target").
    pub tool: String,
    /// A short machine-readable kind: `compile`, `undefined_reference`, `region_overflow`,
    /// `multiple_definition`, ...
    pub kind: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub message: String,
    /// 1-based line in build.log where it was found.
    pub log_line: usize,
}

/// A decoded, symbolised crash: what report.json's `crash` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CrashReport {
    /// Hex strings (`0x000001a4`) so they read like a debugger's output.
    pub pc: Option<String>,
    pub lr: Option<String>,
    pub cfsr: Option<String>,
    pub hfsr: Option<String>,
    /// Function, file and line of the fault: PC's, or the caller's when PC is in no function
    /// (a call through a bad pointer), as the summary then says.
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// Function, file and line of LR (the caller).
    pub caller: Option<Location>,
    /// Named fault bits that are set, e.g. `IACCVIOL`, `PRECISERR`, `FORCED`.
    pub fault_bits: Vec<String>,
    /// The faulting data address when BFAR/MMFAR is valid.
    pub fault_address: Option<String>,
    /// Exception name, e.g. `HardFault`.
    pub exception: Option<String>,
    pub lockup: bool,
    /// One line a person reads first.
    pub summary: String,
}

/// The exception handler a hung core was stopped in, above the code it interrupted (the hang
/// site): a periodic interrupt that happened to run at that moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HandlerSite {
    /// The exception's name: `SysTick`, `IRQ0`, ...
    pub exception: String,
    /// Where in the handler the core was.
    pub location: Location,
}

/// A source location of a code address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Location {
    pub address: String,
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}
