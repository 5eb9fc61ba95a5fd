//! `--json`: every event as one JSON object on one line of stdout, written whole and flushed at
//! once so a reader never sees half a line. It must never take the run down: when the reader goes
//! away (a closed pipe), it stops writing and the run carries on.

use crate::events::{Event, EventSink};
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Writes events as JSON lines.
pub struct JsonSink {
    out: Mutex<Box<dyn Write + Send>>,
    /// Set after the first failed write: nobody is reading any more.
    stopped: AtomicBool,
}

impl JsonSink {
    /// Writes to stdout.
    pub fn stdout() -> JsonSink {
        JsonSink::new(Box::new(LockedStdout))
    }

    /// Writes to any writer (a file, a pipe, a buffer in tests).
    pub fn new(out: Box<dyn Write + Send>) -> JsonSink {
        JsonSink {
            out: Mutex::new(out),
            stopped: AtomicBool::new(false),
        }
    }

    /// True once a write failed and the sink gave up.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }
}

impl EventSink for JsonSink {
    fn emit(&self, event: &Event) {
        // Events are plain data; if one ever failed to serialise, dropping it beats dropping
        // the run.
        if let Ok(line) = serde_json::to_string(event) {
            self.write_line(line);
        }
    }

    /// The event with a `"job"` field naming the job, so a reader can tell parallel jobs apart.
    fn emit_job(&self, job: &str, event: &Event) {
        let Ok(mut value) = serde_json::to_value(event) else {
            return;
        };
        if let Some(object) = value.as_object_mut() {
            object.insert("job".into(), serde_json::Value::from(job));
        }
        self.write_line(value.to_string());
    }
}

impl JsonSink {
    fn write_line(&self, mut line: String) {
        if self.is_stopped() {
            return;
        }
        line.push('\n');
        let mut out = self
            .out
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if out
            .write_all(line.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            self.stopped.store(true, Ordering::Relaxed);
        }
    }
}

/// Stdout, locked for each write so a line from another thread cannot interleave with ours.
struct LockedStdout;

impl Write for LockedStdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        io::stdout().lock().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let mut stdout = io::stdout().lock();
        stdout.write_all(buf)?;
        stdout.flush()
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stdout().lock().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Stream;
    use crate::machine::{ErrorClass, State};
    use crate::results::CaseStatus;
    use std::io::Read;
    use std::sync::Arc;

    /// A writer tests can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn events() -> Vec<Event> {
        vec![
            Event::Transition {
                seq: 3,
                from: State::BuildRun,
                to: State::TestSetup,
                reason: "image built".into(),
                iteration: 0,
                error_class: None,
            },
            Event::ConsoleLine {
                attempt: 1,
                t_ms: 35,
                stream: Stream::Uart,
                text: "test_crc.c:20:test_bad:FAIL: \"quoted\"\nnext".into(),
            },
            Event::CaseResult {
                attempt: 1,
                name: "test_bad".into(),
                status: CaseStatus::Fail,
            },
            Event::Finished {
                status: "FAILED".into(),
                exit_code: 1,
                run_dir: Some(".fwfix/runs/r1".into()),
                error_class: Some(ErrorClass::Timeout),
                message: None,
            },
        ]
    }

    #[test]
    fn each_event_is_one_json_object_per_line() {
        let buffer = Shared::default();
        let sink = JsonSink::new(Box::new(buffer.clone()));
        for event in events() {
            sink.emit(&event);
        }
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        let values: Vec<serde_json::Value> = lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(values[0]["event"], "transition");
        assert_eq!(values[0]["to"], "TEST_SETUP");
        assert_eq!(
            values[1]["text"],
            "test_crc.c:20:test_bad:FAIL: \"quoted\"\nnext"
        );
        assert_eq!(values[2]["status"], "FAIL");
        let last = &values[3];
        assert_eq!(last["event"], "finished");
        assert_eq!(last["status"], "FAILED");
        assert_eq!(last["run_dir"], ".fwfix/runs/r1");
        assert_eq!(last["error_class"], "TIMEOUT");
        assert_eq!(last["message"], serde_json::Value::Null);
    }

    #[test]
    fn a_closed_pipe_stops_the_sink_without_panicking() {
        let (reader, writer) = io::pipe().unwrap();
        drop(reader);
        let sink = JsonSink::new(Box::new(writer));
        for event in events() {
            sink.emit(&event);
        }
        assert!(sink.is_stopped());
    }

    #[test]
    fn a_live_pipe_gets_whole_lines() {
        let (mut reader, writer) = io::pipe().unwrap();
        let sink = JsonSink::new(Box::new(writer));
        for event in events() {
            sink.emit(&event);
        }
        drop(sink);
        let mut text = String::new();
        reader.read_to_string(&mut text).unwrap();
        assert_eq!(text.lines().count(), 4);
        assert!(text.ends_with("}\n"));
    }

    #[test]
    fn concurrent_emitters_never_interleave_lines() {
        let buffer = Shared::default();
        let sink = Arc::new(JsonSink::new(Box::new(buffer.clone())));
        let threads: Vec<_> = (0..4)
            .map(|n| {
                let sink = Arc::clone(&sink);
                std::thread::spawn(move || {
                    for i in 0..200 {
                        sink.emit(&Event::BuildOutput {
                            line: format!("thread {n} line {i} {}", "x".repeat(100)),
                        });
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 800);
        for line in text.lines() {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(value["event"], "build_output");
        }
    }
}
