//! The labgrid backend: a board on a labgrid place, reached through the place's coordinator
//! (labgrid 26). The run's command acquires the place before its first step (`place`: by name
//! or by tags through a reservation, waiting up to `--lock-timeout`, a record of it in the
//! state directory, released and cancelled when the command ends however it ends); this file is
//! the `Dut` face of a place this process holds; `session` runs an attempt (flash with the
//! place's resource values, power through the place, the NetworkSerialPort console);
//! `resources` reads `labgrid-client env`'s YAML; `client` runs `labgrid-client`.
//!
//! Why `labgrid-client` and not gRPC: the coordinator speaks gRPC with labgrid's own protobuf
//! schema, and a direct client would mean carrying (or regenerating) that schema and a gRPC stack
//! in fwfix and following it across labgrid releases; the client program is labgrid's stable
//! interface, already installed wherever labgrid is. The price is Python's start-up: measured
//! with labgrid 26.0.1 on loopback, one call takes ~0.6 s (`acquire`, `env`, `power on`), so an
//! attempt spends ~1.5 s on the place (power off, power on, and power off at the end) and a
//! run ~1.5 s more (acquire, env, release) — small beside a flash and a test. Every call is a
//! child like any other, through `process::spawn_group`.
//!
//! Consoles: raw TCP NetworkSerialPorts, and RFC 2217 ones (ser2net's telnet mode, as labgrid
//! exports USB serial adapters) to the extent `rfc2217` states: the line is set, the target's
//! output read.

pub mod client;
pub mod place;
pub mod resources;
pub mod rfc2217;
mod session;

use super::{Dut, DutError, Image, RunSpec};
use crate::capture::Capture;
use crate::config::{Board, LabgridSpec};
use crate::events::EventSink;
use place::Acquired;
use std::sync::Arc;

/// What an attempt on a place may spend besides its flash and its test, for the orchestrator's
/// watchdog: three power calls (off, on, and off at the end) and the wait for the console.
pub const ATTEMPT_OVERHEAD: std::time::Duration = std::time::Duration::from_secs(
    3 * client::CALL_LIMIT.as_secs() + session::CONSOLE_WINDOW.as_secs(),
);

/// A labgrid place as a device under test.
#[derive(Debug)]
pub struct LabgridDut {
    board: String,
    spec: LabgridSpec,
    place: Arc<Acquired>,
}

impl LabgridDut {
    /// The backend for `board` on the place this process acquired for it.
    pub fn new(board: &Board, spec: LabgridSpec) -> Result<Self, DutError> {
        let place = place::held(&board.name).ok_or_else(|| {
            DutError::Other(format!(
                "board {}: no labgrid place is acquired for it (only fwfix test, run, bisect \
                 and boards check acquire one)",
                board.name
            ))
        })?;
        Ok(Self {
            board: board.name.clone(),
            spec,
            place,
        })
    }
}

#[async_trait::async_trait]
impl Dut for LabgridDut {
    fn describe(&self) -> String {
        format!(
            "board {} (labgrid place {})",
            self.board,
            self.place.place()
        )
    }

    /// The place has a console fwfix can read.
    async fn check(&mut self) -> Result<(), DutError> {
        self.place
            .resources()
            .serial()
            .map(|_| ())
            .map_err(DutError::Other)
    }

    async fn run(
        &mut self,
        image: &Image,
        spec: RunSpec,
        events: &dyn EventSink,
    ) -> Result<Capture, DutError> {
        session::run(&self.place, self.spec.flash.as_ref(), image, spec, events).await
    }
}
