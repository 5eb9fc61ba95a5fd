//! A labgrid farm on 127.0.0.1 for the tests: a real `labgrid-coordinator` and `labgrid-exporter`
//! (labgrid 26.0.1 from `target/labgrid-venv`, which `scripts/labgrid-venv.sh` installs), one
//! place exporting a NetworkSerialPort (QEMU's `-serial tcp:` server) and a NetworkPowerPort
//! (`model: simplerest`) served by [`PowerSwitch`], a small HTTP switch that starts QEMU on the
//! last flashed image when switched on and stops it when switched off. The flash command copies
//! the ELF to where the switch reads it. Everything started here is killed when the farm drops.

use super::free_port;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The venv's bin directory; fails loudly when labgrid is not installed.
pub fn venv_bin() -> PathBuf {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/labgrid-venv/bin");
    assert!(
        bin.join("labgrid-client").is_file() && bin.join("labgrid-coordinator").is_file(),
        "labgrid is not installed in {}: run scripts/labgrid-venv.sh (scripts/test.sh does)",
        bin.display()
    );
    bin
}

/// PATH with the venv first, for fwfix to find labgrid-client.
pub fn path_with_venv() -> String {
    format!(
        "{}:{}",
        venv_bin().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A child killed (with its waiting) when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The HTTP power switch: `GET /relay/0/1` starts QEMU on `image`, `/relay/0/0` stops it,
/// `/relay/0` answers `1` or `0`.
pub struct PowerSwitch {
    pub port: u16,
    stop: Arc<AtomicBool>,
    qemu: Arc<Mutex<Option<Killed>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PowerSwitch {
    pub fn start(image: PathBuf, serial_port: u16) -> PowerSwitch {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let qemu: Arc<Mutex<Option<Killed>>> = Arc::new(Mutex::new(None));
        let (stop2, qemu2) = (stop.clone(), qemu.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(mut stream) = stream else { continue };
                let mut line = String::new();
                let _ = BufReader::new(&stream).read_line(&mut line);
                let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                let mut running = qemu2.lock().unwrap();
                let body = match path.as_str() {
                    "/relay/0/1" => {
                        if running.is_none() && image.is_file() {
                            // wait=on: the image waits for its console, as a board held in reset
                            // until the console is attached would.
                            let child = Command::new("qemu-system-arm")
                                .args(["-M", "mps2-an385", "-cpu", "cortex-m3"])
                                .args(["-display", "none", "-monitor", "none"])
                                .arg("-serial")
                                .arg(format!("tcp:127.0.0.1:{serial_port},server=on,wait=on"))
                                .args(["-semihosting-config", "enable=on,target=native"])
                                .arg("-kernel")
                                .arg(&image)
                                .stdin(Stdio::null())
                                .stdout(Stdio::null())
                                .stderr(Stdio::null())
                                .spawn()
                                .unwrap();
                            *running = Some(Killed(child));
                        }
                        "ok"
                    }
                    "/relay/0/0" => {
                        *running = None;
                        "ok"
                    }
                    "/relay/0" => {
                        let on = running
                            .as_mut()
                            .is_some_and(|k| k.0.try_wait().ok().flatten().is_none());
                        if on {
                            "1"
                        } else {
                            "0"
                        }
                    }
                    _ => "no such relay",
                };
                drop(running);
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        PowerSwitch {
            port,
            stop,
            qemu,
            thread: Some(thread),
        }
    }
}

impl Drop for PowerSwitch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        *self.qemu.lock().unwrap() = None;
    }
}

/// A coordinator, an exporter and one place `PLACE` tagged `board=sim`.
pub struct Farm {
    pub dir: tempfile::TempDir,
    pub coordinator: String,
    pub place: String,
    pub image: PathBuf,
    coordinator_child: Option<Killed>,
    _exporter: Killed,
    _switch: PowerSwitch,
}

impl Farm {
    pub fn start(place: &str) -> Farm {
        crate::common::require_tools();
        let bin = venv_bin();
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let coordinator = format!("127.0.0.1:{port}");
        let log = |name: &str| std::fs::File::create(dir.path().join(name)).unwrap();
        let coordinator_child = Killed(
            Command::new(bin.join("labgrid-coordinator"))
                .args(["-l", &coordinator])
                // It keeps its places in places.yaml in its working directory.
                .current_dir(dir.path())
                .stdout(log("coordinator.log"))
                .stderr(log("coordinator.err"))
                .spawn()
                .unwrap(),
        );
        wait_for(
            || TcpStream::connect(&coordinator).is_ok(),
            "the coordinator",
            dir.path(),
        );
        let image = dir.path().join("image.elf");
        let serial = free_port();
        let switch = PowerSwitch::start(image.clone(), serial);
        let exporter_yaml = dir.path().join("exporter.yaml");
        std::fs::write(
            &exporter_yaml,
            format!(
                "## the simulated board\nsim:\n  NetworkSerialPort:\n    host: 127.0.0.1\n    \
                 port: {serial}\n    protocol: raw\n    speed: 115200\n  NetworkPowerPort:\n    \
                 model: simplerest\n    host: http://127.0.0.1:{}/relay/{{index}}/{{value}}\n    \
                 index: 0\n",
                switch.port
            ),
        )
        .unwrap();
        let exporter = Killed(
            Command::new(bin.join("labgrid-exporter"))
                .current_dir(dir.path())
                .args(["-c", &coordinator, "-n", "exp", "--hostname", "127.0.0.1"])
                .arg(&exporter_yaml)
                .stdout(log("exporter.log"))
                .stderr(log("exporter.err"))
                .spawn()
                .unwrap(),
        );
        let farm = Farm {
            dir,
            coordinator,
            place: place.to_string(),
            image,
            coordinator_child: Some(coordinator_child),
            _exporter: exporter,
            _switch: switch,
        };
        wait_for(
            || String::from_utf8_lossy(&farm.client(&["resources"]).stdout).contains("exp/sim"),
            "the exporter's resources",
            farm.dir.path(),
        );
        for args in [
            vec!["create"],
            vec!["add-match", "exp/sim/*"],
            vec!["set-tags", "board=sim"],
        ] {
            let out = farm.client_on_place(&args);
            assert!(
                out.status.success(),
                "{args:?}: {}",
                crate::common::text(&out)
            );
        }
        farm
    }

    /// `labgrid-client ARGS` as the test's own identity.
    pub fn client(&self, args: &[&str]) -> Output {
        Command::new(venv_bin().join("labgrid-client"))
            .args(["-x", &self.coordinator])
            .args(args)
            .env("LG_HOSTNAME", "test-host")
            .env("LG_USERNAME", "test-user")
            .env_remove("LG_PLACE")
            .env_remove("LG_TOKEN")
            .output()
            .unwrap()
    }

    pub fn client_on_place(&self, args: &[&str]) -> Output {
        let mut all = vec!["-p", self.place.as_str()];
        all.extend_from_slice(args);
        self.client(&all)
    }

    /// Whether the test's identity can take the place now (and gives it back).
    pub fn place_is_free(&self) -> bool {
        let free = self.client_on_place(&["acquire"]).status.success();
        if free {
            assert!(self.client_on_place(&["release"]).status.success());
        }
        free
    }

    /// A board file for the place, named `mps2-an385` so the fixture profiles build for it.
    pub fn board_file(&self, how: &str) -> PathBuf {
        let path = self.dir.path().join("mps2-an385.toml");
        std::fs::write(
            &path,
            format!(
                "name = \"mps2-an385\"\nbackend = \"labgrid\"\n[labgrid]\n{how}\ncoordinator = \
                 \"{}\"\n[flash]\nmethod = \"command\"\ncommand = \"cp {{elf}} {}\"\n",
                self.coordinator,
                self.image.display()
            ),
        )
        .unwrap();
        path
    }

    /// Kills the coordinator (the farm's hosts stay).
    pub fn kill_coordinator(&mut self) {
        self.coordinator_child = None;
    }
}

/// How long a farm's Python processes get to start. Several labgrid tests start farms at once
/// beside the QEMU tests, and on a loaded 2-core machine an exporter took more than 20 s to
/// register its resources: a start-up bound, not a timing assertion.
const FARM_START: Duration = Duration::from_secs(60);

/// Waits for `ready`; if it never is, fails with the farm's stderr logs in `dir`, which say why.
fn wait_for(mut ready: impl FnMut() -> bool, what: &str, dir: &Path) {
    let until = Instant::now() + FARM_START;
    while !ready() {
        if Instant::now() >= until {
            let mut logs = String::new();
            for name in ["coordinator.err", "exporter.err"] {
                let text = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
                let mut start = text.len().saturating_sub(2000);
                while !text.is_char_boundary(start) {
                    start += 1;
                }
                let tail = &text[start..];
                logs.push_str(&format!("\n--- {name} (its end):\n{tail}"));
            }
            panic!("{what} did not come up in {FARM_START:?}{logs}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
