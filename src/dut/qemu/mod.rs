//! The QEMU backend: runs an image on qemu-system-* with semihosting, captures UART and stderr,
//! stops the core the moment it enters a fault handler and reads the fault state there through
//! QEMU's gdbstub. This file is the `Dut` face of it; `session` runs an attempt, `args` knows
//! QEMU's command line, `gdbstub` watches the core, `fault` reads QEMU's own words (a lockup),
//! `qmp` talks to its monitor (to stop a QEMU a killed fwfix left), `process` owns the process
//! plumbing. No QEMU process outlives the call that started it.

pub mod args;
mod caps;
pub mod fault;
pub mod gdbstub;
pub mod process;
pub mod qmp;
mod session;

use super::session::probe_output;
use super::{Dut, DutError, Image, RunSpec};
use crate::capture::nonce::{Nonce, NonceCheck};
use crate::capture::Capture;
use crate::config::QemuSpec;
use crate::events::EventSink;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

/// How long `-machine help` / `-cpu help` may take before QEMU is considered broken.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// A QEMU machine as a device under test.
#[derive(Debug)]
pub struct QemuDut {
    board: String,
    spec: QemuSpec,
    last_pid: Option<u32>,
    /// Where what the binary supports is cached (None: ask it every time).
    cache_dir: Option<PathBuf>,
    /// The attempts' scratch directory (QMP socket, QEMU's working directory), made by the
    /// first and removed with the DUT.
    scratch: Option<process::ScratchDir>,
    /// A QEMU started ahead of the next attempt ([`Dut::prepare`]).
    warm: Option<session::Warm>,
}

impl QemuDut {
    pub fn new(board: impl Into<String>, spec: QemuSpec) -> Self {
        Self {
            board: board.into(),
            spec,
            last_pid: None,
            cache_dir: None,
            scratch: None,
            warm: None,
        }
    }

    /// Keeps what the binary supports in `cache_dir` between runs.
    pub fn with_cache(mut self, cache_dir: Option<PathBuf>) -> Self {
        self.cache_dir = cache_dir;
        self
    }

    pub fn spec(&self) -> &QemuSpec {
        &self.spec
    }

    /// The process id of the QEMU started by the latest `run`, so callers (and tests) can check
    /// it is gone.
    pub fn last_pid(&self) -> Option<u32> {
        self.last_pid
    }

    /// The names `<binary> <option> help` lists, from the cache when this binary was asked
    /// before.
    async fn names(
        &self,
        option: &str,
        parse: fn(&str) -> Vec<String>,
    ) -> Result<Vec<String>, DutError> {
        let program = self.spec.binary.as_str();
        let dirs = crate::config::host::program_dirs();
        if let Some(cached) = self
            .cache_dir
            .as_deref()
            .and_then(|dir| caps::lookup(dir, program, option, &dirs))
        {
            return Ok(cached);
        }
        let names = parse(&self.list(option).await?);
        if let Some(dir) = &self.cache_dir {
            caps::store(dir, program, option, &dirs, &names);
        }
        Ok(names)
    }

    /// Runs `<binary> <option> help` and returns its stdout.
    async fn list(&self, option: &str) -> Result<String, DutError> {
        let program = self.spec.binary.as_str();
        let mut command = process::command(program);
        command
            .args([option, "help"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let spawned = crate::process::spawn_group(&mut command)
            .map_err(|e| process::spawn_error(program, e))?;
        let invocation = format!("{program} {option} help");
        let output = probe_output(spawned, program, &invocation, LIST_TIMEOUT).await?;
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

#[async_trait::async_trait]
impl Dut for QemuDut {
    fn describe(&self) -> String {
        format!("qemu {}", self.spec.machine)
    }

    /// Handed on the semihosting command line (`-append`); a fresh emulator has no output from an
    /// earlier run, so an image that does not echo it is trusted as before.
    fn nonce_check(&self) -> Option<NonceCheck> {
        Some(NonceCheck::Offered)
    }

    /// The binary runs and knows the machine (and the CPU, when one is set), and the board's
    /// extra arguments leave fwfix the gdbstub.
    async fn check(&mut self) -> Result<(), DutError> {
        let program = self.spec.binary.clone();
        if let Some(error) = args::gdbstub_conflict(&self.spec, &self.board) {
            return Err(error);
        }
        let machines = self.names("-machine", args::parse_machine_list).await?;
        if !machines.contains(&self.spec.machine) {
            return Err(DutError::BadArguments {
                program: program.clone(),
                message: format!(
                    "-M {}: board {} asks for machine '{}', which {program} does not know \
                     (`{program} -machine help` lists {} machines)",
                    self.spec.machine,
                    self.board,
                    self.spec.machine,
                    machines.len()
                ),
            });
        }
        if let Some(cpu) = &self.spec.cpu {
            let cpus = self.names("-cpu", args::parse_cpu_list).await?;
            if !cpus.iter().any(|c| c == cpu) {
                return Err(DutError::BadArguments {
                    program: program.clone(),
                    message: format!(
                        "-cpu {cpu}: board {} asks for CPU '{cpu}', which {program} does not \
                         know (`{program} -cpu help` lists them)",
                        self.board
                    ),
                });
            }
        }
        Ok(())
    }

    /// Starts the next attempt's QEMU (paused, no image) unless one waits already: the image's
    /// first attempt, as it is prepared while the image is built.
    async fn prepare(&mut self, elf: &std::path::Path) {
        if self.warm.is_some() || args::gdbstub_conflict(&self.spec, &self.board).is_some() {
            return;
        }
        let nonce = self.nonce_check().map(Nonce::fresh);
        self.warm = session::Warm::start(&self.spec, elf, nonce, 1, &mut self.scratch).ok();
    }

    fn next_nonce(&mut self) -> Option<Nonce> {
        match &self.warm {
            Some(warm) => warm.nonce.clone(),
            None => self.nonce_check().map(Nonce::fresh),
        }
    }

    async fn run(
        &mut self,
        image: &Image,
        spec: RunSpec,
        events: &dyn EventSink,
    ) -> Result<Capture, DutError> {
        let target = self.describe();
        self.last_pid = None;
        if let Some(error) = args::gdbstub_conflict(&self.spec, &self.board) {
            return Err(error);
        }
        session::run(
            &self.spec,
            &target,
            image,
            spec,
            events,
            &mut self.last_pid,
            &mut self.scratch,
            &mut self.warm,
        )
        .await
    }
}
