//! fwfix's integration tests: one test binary (as cargo's own `tests/testsuite`) so the suite links
//! once. Each module covers one command or backend and drives the real thing — the `fwfix`
//! binary, git repositories built in temp dirs, arm-none-eabi-gcc, QEMU, gdb-multiarch, ptys,
//! sockets and a model server on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)] // panics are how tests fail

mod common;

mod analysis_fixture_crash;
mod analysis_symbols;
mod bisect_cmd;
mod board_backend;
mod boards_cmd;
mod build_diagnostics;
mod child_processes;
mod cli_misc;
mod commit_hooks;
mod governor;
mod harness_cmd;
mod hostile_input;
mod inspect;
mod labgrid_backend;
mod lint;
mod long_console;
mod matrix_cmd;
mod mcp_server;
mod parse_recorded_logs;
mod policy_approval;
mod power_nonce;
mod probe_hw;
mod qemu_backend;
mod repo_safety;
mod report_html;
mod resume_cmd;
mod rtos_crash;
mod rtos_fixture;
mod run_cmd;
mod run_command;
mod run_llm;
mod runs_prune;
mod schemas;
mod strategy_llm;
mod structure;
mod test_cmd;
mod triage;
