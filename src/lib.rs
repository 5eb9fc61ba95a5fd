//! fwfix: a firmware fix-and-test orchestrator.
//!
//! The library drives a firmware repository through an explicit state machine: build the image,
//! boot or flash it on a device under test, capture the console, parse the results, and decide
//! what happens next. `fwfix test` runs that path once; `fwfix run` loops it with patches.
//!
//! Dependencies point down. `machine` knows only its own types; `analysis`, `strategy`, `policy`
//! and `governor` see machine types; `repo`, `build`, `dut` and `capture` are adapters to the
//! outside world; `orchestrator` is the only module that sees all of them, and `cli` only calls
//! it. The library never prints: it emits [`events::Event`]s, and `ui` renders them.
//!
//! # Glossary
//! - **DUT**: device under test — a QEMU machine or a real board.
//! - **Image**: the ELF the build produced and the DUT runs.
//! - **Iteration**: one patch tried (iteration 0 is the unpatched baseline).
//! - **Attempt**: one boot of the same image; `--repeat` and flaky re-runs make several.
//! - **Capture**: the console of one attempt: timestamped lines plus how the attempt ended.
//! - **Verdict**: what an attempt's results mean: PASS, FAIL, FLAKY, ENV_ERROR or INCONCLUSIVE.
//! - **Evidence**: files in the run directory (logs, patch, ELF hash) that justify a transition.

pub mod analysis;
pub mod bisect;
pub mod build;
pub mod capture;
pub mod cli;
pub mod config;
pub mod doctor;
pub mod dut;
pub mod events;
pub mod governor;
pub mod input;
pub mod inspect;
pub mod machine;
pub mod mcp;
pub mod orchestrator;
pub mod policy;
pub mod process;
pub mod repo;
pub mod report;
pub mod results;
pub mod rundir;
pub mod schemas;
pub mod strategy;
pub mod ui;
