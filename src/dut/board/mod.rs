//! The board backend: a real target, reached through a flasher (`[flash] method = "gdb"` with a
//! GDB server such as OpenOCD, J-Link's or pyOCD's, or a `command`) and a console (`[serial]`: a
//! serial device, or `socket://HOST:PORT`). This file is the `Dut` face of it: opening, the
//! environment check, power cycling. `session` runs an attempt, `serial` owns the console, `gdb`
//! writes gdb's command file and reads its answers, `flash` prepares a flash command, `image`
//! reads the ELF. `[flash] method = "probe-rs"` runs the attempt through `dut::probe` instead,
//! with RTT or `[serial]` as the console. Nothing this backend starts outlives the call that
//! started it.

pub mod flash;
pub mod gdb;
pub mod image;
pub mod serial;
mod session;

use super::power::Power;
use super::probe::real::RealDriver;
use super::probe::session::{self as probe_session, ProbeConsole, ProbeTarget};
use super::probe::{AttachRequest, ProbeDriver};
use super::session::probe_output;
use super::{Dut, DutError, Image, RunSpec};
use crate::capture::nonce::NonceCheck;
use crate::capture::Capture;
use crate::config::{Board, ConsoleSpec, FlashSpec, HardwareSpec, SerialPort};
use crate::events::EventSink;
use crate::process::spawn_group;
use serial::PortSpec;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::process::Command;

/// How long `gdb --version` may take before gdb is considered broken.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the GDB server may take to accept a connection in `check`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// A real board as a device under test.
#[derive(Debug)]
pub struct BoardDut {
    board: String,
    spec: HardwareSpec,
    power: Option<Power>,
    /// The `[serial]` console; None when the console is RTT.
    port: Option<PortSpec>,
    reconnect: u32,
    /// `[serial] nonce` or `[probe] nonce`: the image reads its nonce from the console.
    nonce: bool,
    /// `[probe] rtt_channels` of an RTT console (None: all).
    rtt_channels: Option<Vec<usize>>,
    probes: Probes,
}

/// The debug probe driver, for `[flash] method = "probe-rs"`.
#[derive(Clone)]
struct Probes(Arc<dyn ProbeDriver>);

impl std::fmt::Debug for Probes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProbeDriver")
    }
}

impl BoardDut {
    /// The backend for `board`, whose backend is `spec`, reaching probes through probe-rs.
    pub fn new(board: &Board, spec: HardwareSpec) -> Result<Self, DutError> {
        Self::with_probes(board, spec, Arc::new(RealDriver))
    }

    /// The backend with another probe driver (tests: the fake one).
    pub fn with_probes(
        board: &Board,
        spec: HardwareSpec,
        probes: Arc<dyn ProbeDriver>,
    ) -> Result<Self, DutError> {
        let (port, reconnect, nonce, rtt_channels) = match &spec.console {
            ConsoleSpec::Serial {
                port,
                baud,
                line,
                reset,
                reconnect,
                nonce,
            } => (
                Some(PortSpec {
                    port: port.clone(),
                    baud: *baud,
                    line: *line,
                    reset: *reset,
                }),
                *reconnect,
                *nonce,
                None,
            ),
            ConsoleSpec::Rtt { channels, nonce } if matches!(spec.flash, FlashSpec::ProbeRs(_)) => {
                (None, 0, *nonce, channels.clone())
            }
            ConsoleSpec::Rtt { .. } => {
                return Err(DutError::Unsupported {
                    board: board.name.clone(),
                    backend: "board (an RTT console needs [flash] method = \"probe-rs\")".into(),
                })
            }
        };
        Ok(Self {
            board: board.name.clone(),
            power: board.power.clone().map(|p| Power::new(&board.name, p)),
            spec,
            port,
            reconnect,
            nonce,
            rtt_channels,
            probes: Probes(probes),
        })
    }

    fn console_name(&self) -> String {
        match &self.port {
            Some(port) => port.port.to_string(),
            None => "RTT".to_string(),
        }
    }
}

#[async_trait::async_trait]
impl Dut for BoardDut {
    fn describe(&self) -> String {
        let flash = match &self.spec.flash {
            FlashSpec::Gdb(gdb) => format!("gdb {}", gdb.remote),
            FlashSpec::Command { .. } => "flash command".to_string(),
            FlashSpec::ProbeRs(probe) => format!("probe-rs {}", probe.chip),
        };
        format!(
            "board {} ({flash}, console {})",
            self.board,
            self.console_name()
        )
    }

    /// gdb runs and its server accepts a connection, or the debug probe is connected; the
    /// console device exists (a socket console is not connected to here: a terminal server may
    /// take one client only).
    async fn check(&mut self) -> Result<(), DutError> {
        if let FlashSpec::ProbeRs(probe) = &self.spec.flash {
            let driver = self.probes.0.clone();
            let connected = tokio::task::spawn_blocking(move || driver.list())
                .await
                .map_err(|e| DutError::Other(format!("listing debug probes: {e}")))?;
            crate::dut::probe::select(&connected, probe.selector.as_deref())?;
        }
        if let FlashSpec::Gdb(gdb) = &self.spec.flash {
            check_gdb(&gdb.gdb).await?;
            check_gdb_server(&gdb.remote).await?;
        }
        if let Some(PortSpec {
            port: SerialPort::Device(path),
            ..
        }) = &self.port
        {
            if let Err(e) = std::fs::metadata(path) {
                return Err(DutError::NoSuchPort {
                    port: serial::describe(&SerialPort::Device(path.clone())),
                    detail: e.to_string(),
                });
            }
        }
        Ok(())
    }

    async fn run(
        &mut self,
        image: &Image,
        spec: RunSpec,
        events: &dyn EventSink,
    ) -> Result<Capture, DutError> {
        let describe = self.describe();
        if let FlashSpec::ProbeRs(probe) = &self.spec.flash {
            let console = match &self.port {
                Some(port) => ProbeConsole::Serial {
                    port: port.clone(),
                    reconnect: self.reconnect,
                },
                None => ProbeConsole::Rtt {
                    channels: self.rtt_channels.clone(),
                },
            };
            let target = ProbeTarget {
                describe,
                request: AttachRequest {
                    chip: probe.chip.clone(),
                    selector: probe.selector.clone(),
                    protocol: probe.protocol.clone(),
                    speed_khz: probe.speed_khz,
                    under_reset: probe.connect_under_reset,
                },
                console,
                send_nonce: self.nonce,
            };
            return probe_session::run(self.probes.0.clone(), target, image, spec, events).await;
        }
        let Some(port) = self.port.clone() else {
            return Err(DutError::Unsupported {
                board: self.board.clone(),
                backend: "board (an RTT console needs [flash] method = \"probe-rs\")".into(),
            });
        };
        let target = session::Target {
            describe: &describe,
            spec: &self.spec,
            port,
            reconnect: self.reconnect,
        };
        session::run(target, image, spec, events).await
    }

    fn power(&self) -> Option<&Power> {
        self.power.as_ref()
    }

    /// The console survives from one run to the next, so output left on it is stale: a board
    /// whose image reads its nonce from the console (`[serial] nonce`, or `[probe] nonce` on RTT)
    /// relies on it. Through probe-rs the image may otherwise ask for its semihosting command
    /// line, as on QEMU: the nonce is offered there.
    fn nonce_check(&self) -> Option<NonceCheck> {
        if self.nonce {
            Some(NonceCheck::Required)
        } else if matches!(self.spec.flash, FlashSpec::ProbeRs(_)) {
            Some(NonceCheck::Offered)
        } else {
            None
        }
    }
}

async fn check_gdb(program: &str) -> Result<(), DutError> {
    let mut command = Command::new(program);
    command
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let spawned = spawn_group(&mut command).map_err(|e| session::spawn_error(program, e))?;
    let invocation = format!("{program} --version");
    probe_output(spawned, program, &invocation, VERSION_TIMEOUT).await?;
    Ok(())
}

/// A GDB server on TCP accepts a connection (closed at once); one on a serial device (a Black
/// Magic Probe) exists.
async fn check_gdb_server(remote: &str) -> Result<(), DutError> {
    let unreachable = |message: String| DutError::Unreachable {
        what: "the GDB server".into(),
        address: remote.to_string(),
        message,
        fix: "start it (e.g. `openocd -f interface/stlink.cfg -f target/stm32f4x.cfg`, \
              `JLinkGDBServer`, `pyocd gdbserver`), or fix [gdb] remote in the board file"
            .into(),
    };
    if remote.starts_with('/') {
        return std::fs::metadata(remote)
            .map(|_| ())
            .map_err(|e| unreachable(e.to_string()));
    }
    match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(remote)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(unreachable(e.to_string())),
        Err(_) => Err(unreachable(format!(
            "no connection within {} s",
            CONNECT_TIMEOUT.as_secs()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{
        BoardBackend, GdbSpec, GdbStart, PowerSpec, ProbeSpec, SerialLine, SerialReset,
    };
    use std::path::PathBuf;

    fn board(flash: FlashSpec, console: ConsoleSpec, power: Option<PowerSpec>) -> Board {
        Board {
            name: "bench".into(),
            source: PathBuf::from("boards/bench.toml"),
            backend: BoardBackend::Hardware(HardwareSpec {
                flash,
                flash_timeout: Duration::from_secs(5),
                console,
                reset_command: None,
            }),
            power,
            health: None,
        }
    }

    fn serial(port: SerialPort) -> ConsoleSpec {
        ConsoleSpec::Serial {
            port,
            baud: 115_200,
            line: SerialLine::default(),
            reset: SerialReset::None,
            reconnect: 0,
            nonce: false,
        }
    }

    fn rtt() -> ConsoleSpec {
        ConsoleSpec::Rtt {
            channels: None,
            nonce: false,
        }
    }

    fn gdb(remote: &str) -> FlashSpec {
        FlashSpec::Gdb(GdbSpec {
            remote: remote.into(),
            gdb: "gdb-multiarch".into(),
            init: vec![],
            start: GdbStart::VectorTable,
        })
    }

    fn dut(b: &Board) -> Result<BoardDut, DutError> {
        match &b.backend {
            BoardBackend::Hardware(spec) => BoardDut::new(b, spec.clone()),
            other => panic!("not a board: {other:?}"),
        }
    }

    #[test]
    fn probe_rs_opens_with_either_console_and_rtt_needs_probe_rs() {
        let probe = FlashSpec::ProbeRs(ProbeSpec {
            chip: "nRF52832_xxAA".into(),
            selector: None,
            protocol: None,
            speed_khz: None,
            connect_under_reset: false,
        });
        let on_rtt = dut(&board(probe.clone(), rtt(), None)).unwrap();
        assert_eq!(
            on_rtt.describe(),
            "board bench (probe-rs nRF52832_xxAA, console RTT)"
        );
        // The image may ask for its nonce on its semihosting command line; with
        // `[probe] nonce` it reads it from RTT, and output without it is not trusted.
        assert_eq!(on_rtt.nonce_check(), Some(NonceCheck::Offered));
        let reads_nonce = ConsoleSpec::Rtt {
            channels: None,
            nonce: true,
        };
        let asks = dut(&board(probe.clone(), reads_nonce, None)).unwrap();
        assert_eq!(asks.nonce_check(), Some(NonceCheck::Required));
        let console = serial(SerialPort::Device("/dev/ttyACM0".into()));
        let uart = dut(&board(probe, console, None)).unwrap();
        assert!(uart.describe().ends_with("console /dev/ttyACM0)"));
        let e = dut(&board(gdb("h:1"), rtt(), None)).unwrap_err();
        assert!(matches!(e, DutError::Unsupported { .. }));
        assert!(e.to_string().contains("RTT"), "{e}");
    }

    #[test]
    fn describes_flasher_and_console() {
        let b = board(
            gdb("127.0.0.1:3333"),
            serial(SerialPort::Socket {
                host: "lab".into(),
                port: 4000,
            }),
            None,
        );
        assert_eq!(
            dut(&b).unwrap().describe(),
            "board bench (gdb 127.0.0.1:3333, console socket://lab:4000)"
        );
    }

    #[tokio::test]
    async fn check_names_the_missing_piece() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let mut d = dut(&board(
            gdb(&format!("127.0.0.1:{port}")),
            serial(SerialPort::Device("/dev/ttyNONE".into())),
            None,
        ))
        .unwrap();
        let e = d.check().await.unwrap_err();
        assert!(matches!(e, DutError::Unreachable { .. }), "{e}");
        assert!(e.to_string().contains("openocd"), "{e}");

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let remote = listener.local_addr().unwrap().to_string();
        let mut d = dut(&board(
            gdb(&remote),
            serial(SerialPort::Device("/dev/ttyNONE".into())),
            None,
        ))
        .unwrap();
        let e = d.check().await.unwrap_err();
        assert!(matches!(e, DutError::NoSuchPort { .. }), "{e}");

        let mut d = dut(&board(
            FlashSpec::Gdb(GdbSpec {
                remote,
                gdb: "no-such-gdb-here".into(),
                init: vec![],
                start: GdbStart::VectorTable,
            }),
            serial(SerialPort::Device("/dev/null".into())),
            None,
        ))
        .unwrap();
        let e = d.check().await.unwrap_err();
        assert!(matches!(e, DutError::ToolMissing { .. }), "{e}");
    }

    #[test]
    fn power_and_nonce_come_from_the_board_file() {
        let console = serial(SerialPort::Device("/dev/null".into()));
        let none = dut(&board(gdb("h:1"), console.clone(), None)).unwrap();
        assert!(none.power().is_none());
        assert_eq!(none.nonce_check(), None);
        let spec = PowerSpec {
            on: None,
            off: None,
            cycle: Some("relay {board}".into()),
            off_pause: Duration::from_secs(2),
            timeout: Duration::from_secs(5),
            retry_on_hang: true,
        };
        let with = dut(&board(gdb("h:1"), console, Some(spec))).unwrap();
        let plan = with
            .power()
            .unwrap()
            .plan(super::super::power::PowerAction::Cycle);
        assert_eq!(plan[0].0, "relay bench");
        let asking = ConsoleSpec::Serial {
            port: SerialPort::Device("/dev/null".into()),
            baud: 115_200,
            line: SerialLine::default(),
            reset: SerialReset::None,
            reconnect: 0,
            nonce: true,
        };
        let asks = dut(&board(gdb("h:1"), asking, None)).unwrap();
        assert_eq!(asks.nonce_check(), Some(NonceCheck::Required));
    }
}
