//! Watching a QEMU core for faults through its gdbstub, at a cost that does not grow with the
//! interrupt rate: QEMU starts paused (`-S`), fwfix reads the vector table the core will use
//! (VTOR, then its first 16 entries), puts a breakpoint on each fault handler's first instruction
//! (NMI, HardFault, MemManage, BusFault, UsageFault, SecureFault; a handler shared by several
//! vectors once) and lets the core run. Interrupts, context switches and semihosting calls cost
//! nothing; the first fault stops the core on its handler's entry, where LR still holds the
//! EXC_RETURN the core wrote and the frame sits exactly at the SP it names, whatever the handler
//! would have pushed. There the watcher reads the registers, the PSP when the frame is on it, the
//! 8 frame words (exactly those: a stack at the end of RAM has nothing above it), and the SCB
//! fault registers, then checks whether the handler only spins (`b .`): if so nothing more can
//! come and the run can end at once; otherwise the core runs on (the handler may print a dump or
//! exit by semihosting) and is sampled every few ms until it settles in a loop.
//!
//! Firmware may move its vector table after reset: an RTOS kernel or an application started by a
//! bootloader copies it to RAM, installs handlers of its own there and writes VTOR. A write
//! watchpoint on VTOR (a store to the System Control Space, so it costs nothing while the image
//! runs) stops the core at such a store; the watcher steps over it, reads the new table and moves
//! its breakpoints to the handlers it names. Measured on QEMU 7.2: the stop comes before the store
//! is done, with the PC on it, and continuing from there stops again at once: the watchpoint is
//! lifted for the step over the store and set again after it.
//!
//! A table in RAM can also change under the core after VTOR names it: startup code that writes
//! VTOR first and copies the table afterwards (at the VTOR store it names no handler at all), or
//! an RTOS that installs a HardFault handler later with one store (CMSIS' `NVIC_SetVector`,
//! dynamic vectors). While the table lies in RAM (`cortex_m::writable_table`: at or above
//! 0x20000000; the image's own table in the Code region, flash on both machines, is taken as
//! fixed), a second write watchpoint covers its watched vectors (entries 2-7, 24 bytes), and each
//! store to them is stepped over the same way; the watcher then re-reads the table and moves the
//! breakpoints. The watchpoint stays for as long as the table is in RAM rather than being lifted
//! once every vector holds a plausible handler: lifting would miss exactly the handler installed
//! after a complete copy, and what it costs does not call for that. QEMU takes a slow path for
//! every access to the watched page (TLB_WATCHPOINT), and the fixture's RAM table shares its page
//! with the task stacks; measured on QEMU 7.2, the loaded 2-core machine, 5 s runs of the RTOS
//! fixture's scheduler (1 kHz tick, 5 tasks) interleaved with and without the watchpoint, medians
//! of 9: QEMU used 0.368 s of CPU with it and 0.379 s without on mps2-an385, 0.319 s and 0.368 s
//! on lm3s6965evb, no difference above the noise. The worst case, the idle task replaced by a
//! loop that loads and stores a word on that page without pause, ran 6.17 M rounds per second
//! of QEMU's CPU with it and 6.95 M without on mps2-an385, 6.20 M and 6.92 M on lm3s6965evb
//! (medians of 9, 6 s runs): 10-11% slower, and only for code that does nothing but touch the
//! table's page.
//!
//! The image's own table at address 0 is watched the same way on a machine with RAM there
//! (QEMU's MPS2 boards: `args::code_region_is_ram`), where a store through a null pointer to a
//! struct field 8 to 28 bytes in rewrites a fault vector and nothing faults until the next fault
//! goes through it. On a store to the watched vectors the watcher reads the store's PC and the
//! words before and after it, and says which vectors changed, from what to what, by which
//! instruction: the crash that follows names the store, not only the fault. On lm3s6965evb the
//! low table is flash, which QEMU models as ROM: the same store is ignored without a word (no
//! guest error, no fault), and the table needs no watching. Its cost, measured on QEMU 7.2 on
//! the loaded 2-core machine: 5 s of the RTOS fixture's `ok` image on mps2-an385 under gdb, with
//! and without a write watchpoint on 0x8-0x1f (whose page also holds the first functions' code
//! and literal pools), used 0.44 s of QEMU's CPU either way (medians of 5).
//!
//! A fault vector that names no handler (0, no Thumb bit, outside executable memory) locks the
//! core up at the first instruction it would run there, and QEMU aborts with the frame unread.
//! The watcher puts a breakpoint where such a vector sends the core all the same: the stop comes
//! after the exception entry (frame stacked, LR the EXC_RETURN) and before that instruction, so
//! the fault is read as at any handler's entry, and the reading says that no handler ran and what
//! the table lacked. Nothing can run there, so the PSP is read by running `mrs r0, psp` in place
//! of the reset handler's first instruction, in Thumb state, and everything is put back.
//!
//! Before the core runs, the watcher also checks that the initial stack pointer lies in memory
//! the machine has: an image linked for another board faults on its first push with a frame no one
//! can read, and the crash should say why.
//!
//! Arming is three round trips, each a batch of requests sent in one write (QEMU answers them in
//! order): VTOR with the table at 0 (where the core boots from unless VTOR says otherwise); the
//! stack check, the breakpoints and the VTOR watchpoint; then `c`. A QEMU started before the image
//! was built gets it in the same trips: its segments written (`M`) ahead of the first batch, and
//! the registers a reset would have loaded from the table (SP, PC, the T bit; `G`, which QEMU 7.2
//! takes without a target description) ahead of the second. fwfix listens on the gdbstub's
//! socket before QEMU starts and QEMU connects to it as it starts, so nothing polls for a socket
//! to appear. The target description
//! (which register number is xPSR, PSP) is read at the first stop, which a passing run never has:
//! QEMU 7.2 answers `p` and `P` only once it was read. QEMU 7.2 has no `QStartNoAckMode`.
//!
//! QEMU 7.2 describes no M-profile system registers to gdb: the PSP is read by executing one
//! `mrs r0, psp` in place of the handler's first instruction (single-stepped with interrupts
//! masked, then the instruction, r0 and PC are put back). A QEMU whose target description names
//! `psp` is asked for it directly.
//!
//! Measured on QEMU 7.2, a debug build of fwfix, 2 shared cores (medians of 21 runs): launch to
//! verdict of the passing fwtests math image 40 ms (a bare `qemu-system-arm -kernel` run of it
//! 60 ms in the same session); launch to a read crash of a `for(;;)` HardFault (test_sensor)
//! 55 ms on mps2-an385, 58 ms on lm3s6965evb (fwfix measured about 500 ms before: monitor reads
//! plus a 300 ms grace). A 10 s run of a scheduler image with SysTick at 10 kHz and three tasks
//! on the PSP: fwfix itself used 0.05 s of CPU and console.log held 5.8 KB, all UART; the same
//! image under `-d int` writes 92,000 lines (4 MB) a second for fwfix to read.
//!
//! The watcher is a task that owns the connection: it sends [`Report`]s and takes [`Command`]s.
//! It does not decide how an attempt ends; the session does.

use super::super::rsp::{self, Client, RspError, StopReply};
use crate::capture::VectorStore;
use crate::dut::board::image::Segment;
use crate::dut::cortex_m::unwind::{self, StackWords};
use crate::dut::cortex_m::{
    self, fault_handlers, is_exc_return, spins_at, watched_words, writable_table, CoreRegs,
    EntryReading, FaultHandlers, StopReading, SCB_CFSR, SYSTEM_VECTORS, WATCHED_VECTORS,
};
use crate::process::AbortOnDrop;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Duration;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{sleep_until, Instant};

/// The limit on each request to the gdbstub.
const STEP: Duration = Duration::from_millis(500);
/// How often a core that left its fault handler's entry running is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(10);
/// Entries of a non-fault exception into a shared fault handler before its breakpoint is given up.
const OTHER_ENTRIES_MAX: u32 = 64;
/// The vector table offset register.
const VTOR: u32 = 0xE000_ED08;
/// `mrs r0, psp` (Thumb-2, as little-endian halfwords).
const MRS_R0_PSP: [u8; 4] = [0xef, 0xf3, 0x09, 0x80];
/// Register numbers when the target description does not say: Arm's r0-r15, xPSR 25.
const DEFAULT_XPSR: u32 = 25;
const PC: u32 = 15;
/// xPSR's T bit: the core runs Thumb code (the only kind a Cortex-M runs).
const XPSR_THUMB: u32 = 1 << 24;
/// Words read at SP when a stopped core is not at a fault handler's entry (a hang, or a fault the
/// breakpoints did not see): enough to find a frame above a handler's pushes.
const STACK_WORDS_STOPPED: [usize; 3] = [cortex_m::STACK_WORDS_MORE, 16, 8];

/// What the watcher tells the session.
#[derive(Debug)]
pub enum Report {
    /// Breakpoints are set and the core runs.
    Armed(FaultHandlers),
    /// The firmware wrote VTOR: the breakpoints now sit on the handlers of the table at `table`.
    Moved { table: u32, handlers: FaultHandlers },
    /// The firmware stored to the watched vectors of its RAM table (a copy after the VTOR write,
    /// a handler installed later, a stray store through a null pointer into the low table of a
    /// machine with RAM at 0): what changed, by which instruction, and the handlers the table
    /// names now, where the breakpoints now sit.
    Rewritten {
        stores: Vec<VectorStore>,
        handlers: FaultHandlers,
    },
    /// The core entered a fault handler and was read at its first instruction. `spinning`: the
    /// handler is a `b .` loop, so the core stays stopped and nothing more will come.
    Fault {
        reading: Box<EntryReading>,
        spinning: bool,
    },
    /// After a fault, the handler settled into a loop it never leaves; the core is stopped.
    Settled,
    /// The image exited (semihosting) with this status.
    Exited(u8),
    /// Something a person should know that does not stop the watch.
    Note(String),
    /// The image does not fit the machine (its initial stack is in memory the machine lacks): any
    /// crash that follows is likely that, not a bug in the code.
    Misfit(String),
    /// The gdbstub could not be reached or stopped answering: no more reports.
    Lost(String),
}

/// What the session asks of the watcher.
#[derive(Debug)]
pub enum Command {
    /// Stop the core (if it runs) and read where it is.
    Halt(oneshot::Sender<Result<StopReading, String>>),
}

/// A running watcher; dropping it ends the task (QEMU is killed by the session anyway).
pub struct Watch {
    pub reports: mpsc::Receiver<Report>,
    pub commands: mpsc::Sender<Command>,
    _task: AbortOnDrop<()>,
}

/// The socket a QEMU's gdbstub connects to (`-chardev socket,path=...`, QEMU the client); its file
/// is removed once the connection is accepted, or when it is dropped.
#[derive(Debug)]
pub struct Listener {
    listener: UnixListener,
    path: std::path::PathBuf,
}

impl Listener {
    /// Listens on `path` (which must not exist).
    pub fn bind(path: &std::path::Path) -> std::io::Result<Listener> {
        Ok(Listener {
            listener: UnixListener::bind(path)?,
            path: path.to_path_buf(),
        })
    }

    /// The first connection, within `patience`.
    async fn accept(self, patience: Duration) -> Result<UnixStream, String> {
        match tokio::time::timeout(patience, self.listener.accept()).await {
            Ok(Ok((stream, _))) => Ok(stream),
            Ok(Err(e)) => Err(format!("accepting QEMU's gdbstub connection: {e}")),
            Err(_) => Err(format!(
                "QEMU's gdbstub did not connect within {} s",
                patience.as_secs()
            )),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Starts watching the QEMU whose gdbstub connects to `listener`; the connection and then its
/// first answer may each take `patience` (QEMU connects as it starts, and reads the socket once it
/// has started). `load`: the image's segments, for a QEMU started without it, written before
/// anything else.
/// `code_ram`: the machine has RAM at address 0, so the image's own vector table there can be
/// rewritten and is watched like a RAM table.
pub fn spawn(
    listener: Listener,
    patience: Duration,
    load: Option<Vec<Segment>>,
    code_ram: bool,
) -> Watch {
    let (report_tx, reports) = mpsc::channel(16);
    let (commands, command_rx) = mpsc::channel(4);
    let task = tokio::spawn(async move {
        let stream = match listener.accept(patience).await {
            Ok(stream) => stream,
            Err(why) => {
                let _ = report_tx.send(Report::Lost(why)).await;
                return;
            }
        };
        let mut watcher = Watcher {
            client: Client::new(stream, STEP),
            load,
            reports: report_tx,
            described: false,
            xpsr: DEFAULT_XPSR,
            psp: None,
            handlers: FaultHandlers::default(),
            stack_top: None,
            table: 0,
            code_ram,
            vectors_watch: None,
            state: State::Halted,
            faulted: false,
            settled: false,
            others: HashMap::new(),
            sample_at: None,
        };
        if let Err(why) = watcher.watch(command_rx, patience).await {
            let _ = watcher.reports.send(Report::Lost(why)).await;
        }
    });
    Watch {
        reports,
        commands,
        _task: AbortOnDrop(task),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    /// Interrupted to sample the core; its stop reply is awaited.
    Sampling,
    Halted,
}

struct Watcher {
    client: Client<UnixStream>,
    /// The image to write before the core runs, when QEMU was started without it.
    load: Option<Vec<Segment>>,
    reports: mpsc::Sender<Report>,
    /// The target description was asked for (once, at the first stop: a passing run never
    /// needs it).
    described: bool,
    xpsr: u32,
    psp: Option<u32>,
    handlers: FaultHandlers,
    /// The image's initial stack pointer (its vector table's first word): the main stack's top,
    /// usually the end of RAM. Nothing above it is read from a stopped core's main stack: a read
    /// past the end of RAM fails whole, and QEMU logs each word it refused as a guest error.
    stack_top: Option<u32>,
    /// Where the vector table the breakpoints come from starts (VTOR when it was last read).
    table: u32,
    /// The machine has RAM at address 0 (`cortex_m::writable_table`).
    code_ram: bool,
    /// Where the write watchpoint on the watched vectors of a RAM table starts, when one is set.
    vectors_watch: Option<u32>,
    state: State,
    /// The first fault was reported: later entries are let through.
    faulted: bool,
    /// The handler was found spinning: the core stays stopped.
    settled: bool,
    /// Entries of non-fault exceptions into a shared handler, by address.
    others: HashMap<u32, u32>,
    sample_at: Option<Instant>,
}

/// What a Cortex-M reset leaves in the registers, as `G` takes them without a target description
/// (r0-r15, eight 12-byte FPA registers and their status word, which QEMU ignores, then xPSR):
/// SP and PC from the vector table, LR 0xffffffff, the T bit from the reset vector's bit 0 (clear,
/// the core faults on its first instruction, as after a real reset).
fn reset_registers(sp: u32, pc: u32) -> Vec<u8> {
    let mut words = [0u32; 16];
    words[13] = sp & !3;
    words[14] = u32::MAX;
    words[PC as usize] = pc & !1;
    let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    bytes.extend([0u8; 8 * 12 + 4]);
    let xpsr = if pc & 1 == 1 { XPSR_THUMB } else { 0 };
    bytes.extend(xpsr.to_le_bytes());
    bytes
}

fn text(e: RspError) -> String {
    e.to_string()
}

impl Watcher {
    async fn report(&self, report: Report) {
        let _ = self.reports.send(report).await;
    }

    /// Arms the breakpoints, runs the core, and serves stops and commands until the image exits,
    /// the connection fails or the session goes away.
    async fn watch(
        &mut self,
        mut commands: mpsc::Receiver<Command>,
        patience: Duration,
    ) -> Result<(), String> {
        self.arm(patience).await?;
        loop {
            let waiting = matches!(self.state, State::Running | State::Sampling);
            let sample_at = self.sample_at.filter(|_| self.state == State::Running);
            tokio::select! {
                command = commands.recv() => match command {
                    None => return Ok(()),
                    Some(Command::Halt(reply)) => {
                        let reading = self.halt().await;
                        let _ = reply.send(reading);
                    }
                },
                packet = self.client.next_packet("c"), if waiting => {
                    let packet = packet.map_err(text)?;
                    if !self.on_stop(&packet).await? {
                        return Ok(());
                    }
                }
                () = sleep_until(sample_at.unwrap_or_else(Instant::now)), if sample_at.is_some() => {
                    self.sample_at = None;
                    self.client.interrupt().await.map_err(text)?;
                    self.state = State::Sampling;
                }
            }
        }
    }

    /// Reads the vector table, sets the breakpoints and the VTOR watchpoint, and lets the core
    /// run: three round trips, each a batch of requests. `patience` bounds the wait for QEMU's
    /// first answer.
    async fn arm(&mut self, patience: Duration) -> Result<(), String> {
        // VTOR, and the table at 0, where the core boots from unless VTOR says otherwise.
        // A QEMU started before the image was built gets it first, in the same batch.
        let writes: Vec<String> = self
            .load
            .iter()
            .flatten()
            .flat_map(|segment| rsp::write_memory_requests(segment.addr, &segment.data))
            .collect();
        let vtor_request = rsp::read_memory_request(VTOR, 4);
        let reset_table = rsp::read_memory_request(0, SYSTEM_VECTORS * 4);
        let mut first = writes.clone();
        first.extend([vtor_request.clone(), reset_table.clone()]);
        let replies = self.client.requests(&first, patience).await.map_err(text)?;
        let mut replies = replies.into_iter();
        for (request, reply) in writes.iter().zip(replies.by_ref()) {
            reply
                .and_then(|r| rsp::ok_reply(request, &r))
                .map_err(|e| format!("the image could not be written into the machine ({e})"))?;
        }
        let vtor = replies
            .next()
            .and_then(Result::ok)
            .and_then(|r| rsp::words_reply(&vtor_request, &r, 1).ok())
            .and_then(|w| w.first().copied())
            .unwrap_or(0);
        self.table = vtor;
        let table = match (vtor, replies.next()) {
            (0, Some(reply)) => {
                reply.and_then(|r| rsp::words_reply(&reset_table, &r, SYSTEM_VECTORS))
            }
            _ => self.client.read_words(vtor, SYSTEM_VECTORS).await,
        };
        self.handlers = handlers_of(vtor, &table);
        // The initial stack's top word (a misfit check), the breakpoints and the watchpoint.
        let sp = table.as_ref().ok().and_then(|w| w.first().copied());
        self.stack_top = sp;
        let top = sp.and_then(|sp| sp.checked_sub(4));
        // A loaded image: the core starts as a reset would have started it, from the table.
        let reset = match (&self.load, table.as_deref()) {
            (Some(_), Ok([sp, pc, ..])) => {
                Some(rsp::write_registers_request(&reset_registers(*sp, *pc)))
            }
            _ => None,
        };
        let mut batch: Vec<String> = reset.iter().cloned().collect();
        batch.extend(top.map(|top| rsp::read_memory_request(top, 4)));
        let breakpoints: Vec<String> = self
            .handlers
            .entries
            .iter()
            .map(|(addr, _)| rsp::set_breakpoint_request(*addr))
            .collect();
        batch.extend(breakpoints.iter().cloned());
        batch.push(rsp::set_write_watchpoint_request(VTOR, 4));
        let mut replies = self
            .client
            .requests(&batch, STEP)
            .await
            .map_err(text)?
            .into_iter();
        if let Some(request) = &reset {
            replies
                .next()
                .unwrap_or_else(|| Ok(Vec::new()))
                .and_then(|r| rsp::ok_reply(request, &r))
                .map_err(|e| format!("the core's registers could not be set ({e})"))?;
        }
        let stack = if top.is_some() { replies.next() } else { None };
        if let (Some(sp), Some(top), Some(Err(e))) = (sp, top, stack) {
            self.report(Report::Misfit(misfit(sp, top, &e))).await;
        }
        for request in &breakpoints {
            let reply = replies.next().unwrap_or_else(|| Ok(Vec::new()));
            reply
                .and_then(|r| rsp::ok_reply(request, &r))
                .map_err(text)?;
        }
        let watch = batch.last().map(String::as_str).unwrap_or_default();
        let watched = replies
            .next()
            .unwrap_or_else(|| Ok(Vec::new()))
            .and_then(|r| rsp::ok_reply(watch, &r));
        if let Err(e) = watched {
            self.handlers.notes.push(format!(
                "fwfix could not watch VTOR ({e}): if the firmware moves its vector table, \
                 faults through the handlers of the new table are only found at the timeout"
            ));
        }
        // Only a table in RAM (never the image's own in flash) costs a round trip more.
        self.watch_vectors().await.map_err(text)?;
        self.report(Report::Armed(self.handlers.clone())).await;
        self.client.send("c").await.map_err(text)?;
        self.state = State::Running;
        Ok(())
    }

    /// Which register is which, from the target description, asked for once, at the first stop
    /// (a passing run never stops): a server without a description keeps Arm's numbering. QEMU
    /// answers `p` and `P` only once its description was read, so every stop asks this first.
    async fn describe(&mut self) {
        if self.described {
            return;
        }
        self.described = true;
        if let Ok(map) = self.client.register_map().await {
            self.xpsr = map.get("xpsr").copied().unwrap_or(DEFAULT_XPSR);
            self.psp = map.get("psp").copied();
        }
    }

    /// The fault handlers the vector table at `table` names; a table that cannot be read leaves
    /// nothing watched, and the notes say so.
    async fn handlers_at(&mut self, table: u32) -> FaultHandlers {
        let words = self.client.read_words(table, SYSTEM_VECTORS).await;
        handlers_of(table, &words)
    }

    /// The write watchpoint `(addr, len)` stopped the core at a store to VTOR or to the watched
    /// vectors of a RAM table: step over the store with the watchpoint lifted (QEMU stops before
    /// the store is done, and would stop again at once), set it again, then follow the table.
    async fn on_watched_store(&mut self, addr: u32, len: u32) -> Result<bool, String> {
        // A store to the vectors: which instruction, and what the words held before it.
        let before = if addr == VTOR {
            None
        } else {
            let pc = self.client.read_register(PC).await.map_err(text)?;
            let words = self.client.read_words(addr, len as usize / 4).await;
            Some((pc, words.map_err(text)?))
        };
        self.client
            .clear_write_watchpoint(addr, len)
            .await
            .map_err(text)?;
        self.client.send("s").await.map_err(text)?;
        let reply = self.client.reply("s", STEP).await.map_err(text)?;
        if let Some(StopReply::Exited(code)) = rsp::parse_stop(&reply) {
            self.report(Report::Exited(code)).await;
            return Ok(false);
        }
        self.client
            .set_write_watchpoint(addr, len)
            .await
            .map_err(text)?;
        let mut stores = Vec::new();
        if let Some((store_pc, old)) = before {
            let new = self
                .client
                .read_words(addr, old.len())
                .await
                .map_err(text)?;
            let first = *WATCHED_VECTORS.start();
            stores = (first..)
                .zip(old.iter().zip(&new))
                .filter(|(_, (old, new))| old != new)
                .map(|(vector, (old, new))| VectorStore {
                    pc: store_pc,
                    table: self.table,
                    vector,
                    old: *old,
                    new: *new,
                })
                .collect();
        }
        let pc = self.client.read_register(PC).await.map_err(text)?;
        self.follow_table(stores).await?;
        self.resume(pc).await
    }

    /// Reads VTOR and the table it names; when the table moved or its watched vectors changed,
    /// moves the breakpoints to the handlers it names now (those both share stay), says so, and
    /// keeps the watchpoint on the vectors of a RAM table.
    async fn follow_table(&mut self, stores: Vec<VectorStore>) -> Result<(), String> {
        let vtor = self
            .client
            .read_words(VTOR, 1)
            .await
            .map_err(text)?
            .first()
            .copied()
            .ok_or("VTOR read came back empty")?;
        let now = self.handlers_at(vtor).await;
        let moved = vtor != self.table;
        if moved || now != self.handlers || !stores.is_empty() {
            for (addr, _) in &self.handlers.entries {
                if now.vectors_at(*addr).is_none() {
                    self.client.clear_breakpoint(*addr).await.map_err(text)?;
                }
            }
            for (addr, _) in &now.entries {
                if self.handlers.vectors_at(*addr).is_none() {
                    self.client.set_breakpoint(*addr).await.map_err(text)?;
                }
            }
            self.table = vtor;
            self.handlers = now;
            self.others.clear();
            self.watch_vectors().await.map_err(text)?;
            let handlers = self.handlers.clone();
            self.report(if moved {
                Report::Moved {
                    table: vtor,
                    handlers,
                }
            } else {
                Report::Rewritten { stores, handlers }
            })
            .await;
        }
        Ok(())
    }

    /// Puts the write watchpoint on the watched vectors of the current table when it lies in
    /// RAM, and takes it off a table fwfix no longer follows. A watchpoint QEMU refuses leaves a
    /// note: the breakpoints then stay on what the table named when it was last read.
    async fn watch_vectors(&mut self) -> Result<(), RspError> {
        let (offset, len) = watched_words();
        let wanted =
            writable_table(self.table, self.code_ram).then(|| self.table.wrapping_add(offset));
        if wanted == self.vectors_watch {
            return Ok(());
        }
        if let Some(old) = self.vectors_watch.take() {
            self.client.clear_write_watchpoint(old, len).await?;
        }
        if let Some(at) = wanted {
            match self.client.set_write_watchpoint(at, len).await {
                Ok(()) => self.vectors_watch = Some(at),
                Err(e) => self.handlers.notes.push(format!(
                    "fwfix could not watch the fault vectors of the RAM table at 0x{:08x} ({e}): \
                     a handler the firmware installs there later is not stopped at",
                    self.table
                )),
            }
        }
        Ok(())
    }

    /// A stop reply arrived. False when the watch is over (the image exited).
    async fn on_stop(&mut self, packet: &[u8]) -> Result<bool, String> {
        match rsp::parse_stop(packet) {
            Some(StopReply::Exited(code)) => {
                self.report(Report::Exited(code)).await;
                return Ok(false);
            }
            Some(StopReply::Terminated(signal)) => {
                return Err(format!("the gdbstub says QEMU ended on signal {signal}"));
            }
            Some(StopReply::Signal(_)) => {}
            // Console output (`O...`) and anything else that is no stop: keep waiting.
            None => return Ok(true),
        }
        let sampling = self.state == State::Sampling;
        self.state = State::Halted;
        self.describe().await;
        match rsp::watch_hit(packet) {
            Some(VTOR) => return self.on_watched_store(VTOR, 4).await,
            Some(hit) => {
                let (_, len) = watched_words();
                if let Some(at) = self
                    .vectors_watch
                    .filter(|at| (*at..at.wrapping_add(len)).contains(&hit))
                {
                    return self.on_watched_store(at, len).await;
                }
            }
            None => {}
        }
        let regs = self.core_registers().await?;
        let (Some(pc), Some(exception)) = (regs.pc(), regs.exception()) else {
            return Err("the stopped core's PC or xPSR could not be read".into());
        };
        let watched = WATCHED_VECTORS.contains(&exception);
        if sampling {
            if watched && self.spins(pc).await {
                self.settled = true;
                self.report(Report::Settled).await;
                return Ok(true);
            }
            return self.resume(pc).await;
        }
        let at_handler = self
            .handlers
            .vectors_at(pc)
            .is_some_and(|v| v.contains(&exception));
        if !at_handler {
            return self.other_entry(pc).await;
        }
        if self.faulted {
            return self.resume(pc).await;
        }
        // A fault that lands in the reset handler restarts the image, one through a vector that
        // names no handler locks the core up at its next instruction: nothing more will come.
        let dead_end = self.handlers.dead_ends.contains(&exception);
        let spinning = dead_end || self.handlers.reset == Some(pc) || self.spins(pc).await;
        // An NMI whose handler returns is the firmware's business, not a crash.
        if exception == 2 && !spinning {
            return self.resume(pc).await;
        }
        let mut reading = self.read_entry(regs, dead_end).await;
        if dead_end {
            reading.dead_end = Some(self.handlers.notes.clone());
        }
        self.faulted = true;
        self.report(Report::Fault {
            reading: Box::new(reading),
            spinning,
        })
        .await;
        if spinning {
            self.settled = true;
            Ok(true)
        } else {
            self.resume(pc).await
        }
    }

    /// A non-fault exception (or thread-mode code) reached a watched address: let it through; a
    /// handler it spins in, or one entered again and again, loses its breakpoint.
    async fn other_entry(&mut self, pc: u32) -> Result<bool, String> {
        if self.handlers.vectors_at(pc).is_some() {
            let count = self.others.entry(pc).or_insert(0);
            *count += 1;
            let count = *count;
            if count >= OTHER_ENTRIES_MAX || self.spins(pc).await {
                self.client.clear_breakpoint(pc).await.map_err(text)?;
                self.handlers.entries.retain(|(a, _)| *a != pc);
                self.report(Report::Note(format!(
                    "the fault handler at 0x{pc:08x} also runs for other exceptions ({count} \
                     entries so far): faults through it are no longer stopped at its entry"
                )))
                .await;
            }
        }
        self.resume(pc).await
    }

    /// Lets the core go on from a stop at `pc`: one step first (QEMU would stop again at a
    /// breakpoint on the instruction it resumes at), then continue. False when the image exited
    /// during the step.
    async fn resume(&mut self, pc: u32) -> Result<bool, String> {
        if self.handlers.vectors_at(pc).is_some() {
            self.client.send("s").await.map_err(text)?;
            let reply = self.client.reply("s", STEP).await.map_err(text)?;
            if let Some(StopReply::Exited(code)) = rsp::parse_stop(&reply) {
                self.report(Report::Exited(code)).await;
                return Ok(false);
            }
        }
        self.client.send("c").await.map_err(text)?;
        self.state = State::Running;
        if self.faulted && !self.settled {
            self.sample_at = Some(Instant::now() + SAMPLE_EVERY);
        }
        Ok(true)
    }

    /// Whether the code at `pc` is a loop the core never leaves.
    async fn spins(&mut self, pc: u32) -> bool {
        let from = pc.saturating_sub(2);
        match self.client.read_memory(from, 6).await {
            Ok(code) if from == pc => spins_at(&[&[0, 0][..], &code[..4]].concat()),
            Ok(code) => spins_at(&code),
            Err(_) => false,
        }
    }

    /// r0-r15 from `g`, xPSR by number.
    async fn core_registers(&mut self) -> Result<CoreRegs, String> {
        let words = self.client.read_registers().await.map_err(text)?;
        let mut regs = CoreRegs::default();
        for (i, w) in words.iter().take(16).enumerate() {
            regs.r[i] = Some(*w);
        }
        regs.xpsr = Some(self.client.read_register(self.xpsr).await.map_err(text)?);
        Ok(regs)
    }

    /// Everything a crash report needs, read at the handler's first instruction (at a dead end,
    /// where the core landed through a vector that names no handler).
    async fn read_entry(&mut self, regs: CoreRegs, dead_end: bool) -> EntryReading {
        let mut raw = String::from("-- registers at the handler's entry --\n");
        raw.push_str(&dump(&regs));
        let exc_return = regs.lr().filter(|&lr| is_exc_return(lr));
        let frame_sp = match exc_return {
            None => Err("LR holds no EXC_RETURN".to_string()),
            Some(exc) if exc & 0x4 != 0 => match self.read_psp(&regs, dead_end).await {
                Ok((psp, how)) => {
                    let _ = writeln!(raw, "PSP=0x{psp:08x} ({how})");
                    Ok(psp)
                }
                Err(why) => Err(format!("the PSP could not be read: {why}")),
            },
            Some(_) => regs.sp().ok_or_else(|| "SP was not read".to_string()),
        };
        let frame = match &frame_sp {
            Ok(sp) => match self.client.read_words(*sp, 8).await {
                Ok(w) => {
                    let _ = writeln!(raw, "-- frame at 0x{sp:08x} --\n{}", words_text(&w));
                    w.try_into()
                        .map_err(|_| "the frame read came back short".to_string())
                }
                Err(e) => Err(e.to_string()),
            },
            Err(why) => Err(why.clone()),
        };
        let scb = match self.client.read_words(SCB_CFSR, 5).await {
            Ok(w) => {
                let _ = writeln!(
                    raw,
                    "-- SCB (CFSR HFSR DFSR MMFAR BFAR) --\n{}",
                    words_text(&w)
                );
                w
            }
            Err(e) => {
                let _ = writeln!(raw, "the SCB could not be read: {e}");
                Vec::new()
            }
        };
        EntryReading {
            regs,
            frame_sp,
            frame,
            scb,
            raw,
            dead_end: None,
        }
    }

    /// The PSP: by number when the target describes it, else by running `mrs r0, psp` in place
    /// of the instruction at PC and putting everything back. At a dead end the core cannot run
    /// anything at PC (no Thumb state, or no code there): the instruction is run in place of the
    /// reset handler's first one instead (Thumb code the core booted through), in Thumb state.
    async fn read_psp(
        &mut self,
        regs: &CoreRegs,
        dead_end: bool,
    ) -> Result<(u32, &'static str), String> {
        if let Some(n) = self.psp {
            let psp = self.client.read_register(n).await.map_err(text)?;
            return Ok((psp, "read as a register"));
        }
        let (Some(pc), Some(r0), Some(xpsr)) = (regs.pc(), regs.r[0], regs.xpsr) else {
            return Err("PC, r0 or xPSR was not read".into());
        };
        let (at, how) = if dead_end {
            let reset = self
                .handlers
                .reset
                .filter(|&r| cortex_m::executable(r))
                .ok_or("no fault handler ran and the reset vector names no code to read it with")?;
            (
                reset,
                "read by executing mrs r0, psp in place of the reset handler's first instruction",
            )
        } else {
            (pc, "read by executing mrs r0, psp at the handler's entry")
        };
        let saved = self.client.read_memory(at, 4).await.map_err(text)?;
        let breakpoint = self.handlers.vectors_at(at).is_some();
        if breakpoint {
            self.client.clear_breakpoint(at).await.map_err(text)?;
        }
        let mut moved = Ok(());
        if at != pc {
            moved = self.client.write_register(PC, at).await.map_err(text);
            if moved.is_ok() {
                moved = self
                    .client
                    .write_register(self.xpsr, xpsr | XPSR_THUMB)
                    .await
                    .map_err(text);
            }
        }
        let stepped = match moved {
            Ok(()) => self.step_mrs(at).await,
            Err(e) => Err(e),
        };
        // Put back the instruction, r0, PC, xPSR and the breakpoint whatever the step did.
        let mut restored = self.client.write_memory(at, &saved).await.map_err(text);
        let moved_back = (at != pc).then_some((self.xpsr, xpsr));
        for (n, v) in [(0, r0), (PC, pc)].into_iter().chain(moved_back) {
            if restored.is_ok() {
                restored = self.client.write_register(n, v).await.map_err(text);
            }
        }
        if breakpoint && restored.is_ok() {
            restored = self.client.set_breakpoint(at).await.map_err(text);
        }
        let psp = stepped?;
        restored.map_err(|e| format!("the core could not be restored after reading PSP: {e}"))?;
        Ok((psp, how))
    }

    async fn step_mrs(&mut self, pc: u32) -> Result<u32, String> {
        self.client
            .write_memory(pc, &MRS_R0_PSP)
            .await
            .map_err(text)?;
        self.client.send("s").await.map_err(text)?;
        let reply = self.client.reply("s", STEP).await.map_err(text)?;
        if !matches!(rsp::parse_stop(&reply), Some(StopReply::Signal(_))) {
            return Err(format!(
                "the step ended with {:?}",
                String::from_utf8_lossy(&reply)
            ));
        }
        self.client.read_register(0).await.map_err(text)
    }

    /// Stops a running core and reads where it is: registers, the stack at SP (as much as can
    /// be read, most first), the SCB fault registers.
    async fn halt(&mut self) -> Result<StopReading, String> {
        if self.state == State::Running {
            self.client.interrupt().await.map_err(text)?;
            self.state = State::Sampling;
        }
        if self.state == State::Sampling {
            self.client.reply("interrupt", STEP).await.map_err(text)?;
            self.state = State::Halted;
        }
        self.describe().await;
        let regs = self.core_registers().await?;
        let mut raw = String::from("-- registers of the stopped core --\n");
        raw.push_str(&dump(&regs));
        let in_handler = regs.exception().is_some_and(|n| n != 0);
        let mut stack = Vec::new();
        if let Some(sp) = regs.sp() {
            // In a handler the frame of the code it interrupted may lie under several nested
            // handlers' pushes: read more of the MSP, as much as is there.
            let tries: Vec<usize> = if in_handler {
                unwind::msp_reads(sp).into_iter().chain([8]).collect()
            } else {
                STACK_WORDS_STOPPED.to_vec()
            };
            // Below the main stack's top, read no further than it.
            let room = self
                .stack_top
                .filter(|&top| top > sp)
                .map_or(usize::MAX, |top| ((top - sp) / 4) as usize);
            let mut tries: Vec<usize> = tries.into_iter().map(|w| w.min(room)).collect();
            tries.dedup();
            tries.retain(|&w| w > 0);
            for words in tries {
                if let Ok(w) = self.client.read_words(sp, words).await {
                    let _ = writeln!(raw, "-- stack at 0x{sp:08x} --\n{}", words_text(&w));
                    stack = w;
                    break;
                }
            }
        }
        let psp = if in_handler {
            self.process_stack(&regs, &mut raw).await
        } else {
            None
        };
        let scb = self
            .client
            .read_words(SCB_CFSR, 5)
            .await
            .unwrap_or_default();
        Ok(StopReading {
            regs,
            scb,
            stack,
            psp,
            raw,
        })
    }

    /// The PSP and the frame-sized words above it, for a core stopped in a handler; None (said in
    /// `raw`) when either could not be read.
    async fn process_stack(&mut self, regs: &CoreRegs, raw: &mut String) -> Option<StackWords> {
        let sp = match self.read_psp(regs, false).await {
            Ok((sp, _)) => sp,
            Err(why) => {
                let _ = writeln!(raw, "the PSP could not be read: {why}");
                return None;
            }
        };
        for words in [unwind::PSP_WORDS, 8] {
            if let Ok(w) = self.client.read_words(sp, words).await {
                let _ = writeln!(
                    raw,
                    "-- process stack at PSP=0x{sp:08x} --\n{}",
                    words_text(&w)
                );
                return Some(StackWords { sp, words: w });
            }
        }
        let _ = writeln!(raw, "PSP=0x{sp:08x}, where nothing could be read");
        Some(StackWords {
            sp,
            words: Vec::new(),
        })
    }
}

/// The fault handlers a vector table read at `table` names; a table that could not be read leaves
/// nothing watched, and the notes say so.
fn handlers_of(table: u32, words: &Result<Vec<u32>, RspError>) -> FaultHandlers {
    match words {
        Ok(words) => fault_handlers(words),
        Err(e) => FaultHandlers {
            entries: Vec::new(),
            dead_ends: Vec::new(),
            reset: None,
            notes: vec![format!(
                "the vector table at 0x{table:08x} could not be read ({e}): faults are not \
                 watched"
            )],
        },
    }
}

/// Why an image whose initial stack pointer `sp` (its vector table's first word) points past the
/// machine's memory does not fit it: reading the stack's top word at `top` failed with `error`.
/// An image linked for another board (more RAM) faults on its first push, with a frame nobody can
/// read.
fn misfit(sp: u32, top: u32, error: &RspError) -> String {
    format!(
        "the image's initial stack pointer 0x{sp:08x} (its vector table's first word) is \
         outside this machine's memory (reading 0x{top:08x}: {error}): the image looks built \
         for another board or machine (its linker script's RAM)"
    )
}

/// `r0=0x... r1=0x...` four to a line, then xPSR.
fn dump(regs: &CoreRegs) -> String {
    let mut out = String::new();
    for (i, r) in regs.r.iter().enumerate() {
        let value = r.map_or("????????".to_string(), |v| format!("{v:08x}"));
        let _ = write!(out, "r{i}=0x{value}{}", if i % 4 == 3 { "\n" } else { " " });
    }
    if let Some(x) = regs.xpsr {
        let _ = writeln!(out, "xpsr=0x{x:08x}");
    }
    out
}

fn words_text(words: &[u32]) -> String {
    words
        .chunks(4)
        .map(|c| {
            c.iter()
                .map(|w| format!("0x{w:08x}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    // QEMU connects as it starts: the watcher takes that connection, and the socket's file goes
    // once it is taken (or once nobody connected in time).
    #[tokio::test]
    async fn the_gdbstub_socket_takes_one_connection_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gdb-0.sock");
        let listener = Listener::bind(&path).unwrap();
        let mut qemu = std::os::unix::net::UnixStream::connect(&path).unwrap();
        let mut ours = listener.accept(Duration::from_secs(5)).await.unwrap();
        assert!(!path.exists());
        std::io::Write::write_all(&mut qemu, b"+").unwrap();
        let mut byte = [0u8; 1];
        tokio::io::AsyncReadExt::read_exact(&mut ours, &mut byte)
            .await
            .unwrap();
        assert_eq!(&byte, b"+");

        let lonely = dir.path().join("gdb-1.sock");
        let err = Listener::bind(&lonely)
            .unwrap()
            .accept(Duration::from_millis(20))
            .await
            .unwrap_err();
        assert!(err.contains("did not connect"), "{err}");
        assert!(!lonely.exists());
    }

    #[test]
    fn dumps_read_like_a_debugger() {
        let mut regs = CoreRegs::default();
        regs.r[0] = Some(1);
        regs.xpsr = Some(0x6100_0003);
        let text = dump(&regs);
        assert!(text.starts_with("r0=0x00000001 r1=0x????????"), "{text}");
        assert!(text.ends_with("xpsr=0x61000003\n"), "{text}");
        assert_eq!(
            words_text(&[1, 2, 3, 4, 5]),
            "0x00000001 0x00000002 0x00000003 0x00000004\n0x00000005"
        );
    }
}
