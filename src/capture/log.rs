//! console.log: the one writer of an attempt's timestamped console file. Lines go to a blocking
//! writer task through a bounded channel and are flushed whenever the writer catches up, so the
//! file holds everything captured so far even if fwfix itself dies. It does not decide what a line
//! means and keeps nothing in memory beyond the channel.

use super::{ConsoleLine, Stream};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Lines in flight between the capture loop and the writer; a full channel slows the capture (and
/// so the emulator's pipe) rather than growing memory.
const CHANNEL_LINES: usize = 1024;

/// Formats one line as console.log shows it: `[    0.035] uart  text`.
pub fn format_line(line: &ConsoleLine) -> String {
    let stream = match line.stream {
        Stream::Uart => "uart",
        Stream::Host => "host",
    };
    stamp(line, stream)
}

/// A UART line left over from an earlier run (see `nonce`), as console.log keeps it for a
/// person: `[    0.035] stale text`. No parser reads it.
pub fn format_stale(line: &ConsoleLine) -> String {
    stamp(line, "stale")
}

fn stamp(line: &ConsoleLine, stream: &str) -> String {
    format!(
        "[{:5}.{:03}] {:<5} {}",
        line.t_ms / 1000,
        line.t_ms % 1000,
        stream,
        line.text
    )
}

/// An open console.log. Dropping it without [`ConsoleLog::finish`] still flushes what was sent.
pub struct ConsoleLog {
    path: PathBuf,
    tx: Option<mpsc::Sender<String>>,
    writer: JoinHandle<io::Result<()>>,
}

impl ConsoleLog {
    /// Creates (or truncates) the file and starts its writer. The file is created in place: one
    /// system call, where a trip to the blocking pool (a thread to start, in a fresh process)
    /// would delay the attempt's launch.
    pub async fn create(path: &Path) -> io::Result<Self> {
        let file = File::create(path)?;
        let (tx, rx) = mpsc::channel(CHANNEL_LINES);
        let writer = tokio::task::spawn_blocking(move || write_all(file, rx));
        Ok(Self {
            path: path.to_path_buf(),
            tx: Some(tx),
            writer,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues one line. A writer that already failed is reported by [`ConsoleLog::finish`].
    pub async fn write(&self, line: &ConsoleLine) {
        self.send(format_line(line)).await;
    }

    /// Queues a line of `console.log` marked stale, or as usual when `live`.
    pub async fn write_as(&self, line: &ConsoleLine, live: bool) {
        self.send(if live {
            format_line(line)
        } else {
            format_stale(line)
        })
        .await;
    }

    async fn send(&self, text: String) {
        if let Some(tx) = &self.tx {
            // A send error means the writer stopped on an I/O error, which finish() returns.
            let _ = tx.send(text).await;
        }
    }

    /// Flushes and closes the file, returning the first write error if there was one.
    pub async fn finish(self) -> io::Result<()> {
        let Self { tx, writer, .. } = self;
        drop(tx);
        writer.await.map_err(io::Error::other)?
    }
}

fn write_all(file: File, mut rx: mpsc::Receiver<String>) -> io::Result<()> {
    let mut out = BufWriter::new(file);
    while let Some(line) = rx.blocking_recv() {
        writeln!(out, "{line}")?;
        // Drain what is already queued, then flush once: cheap under a flood, and nothing sits
        // in the buffer while the console is quiet.
        while let Ok(line) = rx.try_recv() {
            writeln!(out, "{line}")?;
        }
        out.flush()?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_pads_seconds_and_milliseconds() {
        let l = ConsoleLine {
            t_ms: 35,
            stream: Stream::Uart,
            text: "hello".into(),
        };
        assert_eq!(format_line(&l), "[    0.035] uart  hello");
        let l = ConsoleLine {
            t_ms: 123_456,
            stream: Stream::Host,
            text: String::new(),
        };
        assert_eq!(format_line(&l), "[  123.456] host  ");
        assert_eq!(format_stale(&l), "[  123.456] stale ");
    }

    #[tokio::test]
    async fn writes_every_line_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("console.log");
        let log = ConsoleLog::create(&path).await.unwrap();
        for i in 0..3000u64 {
            log.write(&ConsoleLine {
                t_ms: i,
                stream: Stream::Uart,
                text: format!("n{i}"),
            })
            .await;
        }
        log.finish().await.unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3000);
        assert_eq!(lines[0], "[    0.000] uart  n0");
        assert_eq!(lines[2999], "[    2.999] uart  n2999");
    }

    #[tokio::test]
    async fn lines_are_on_disk_before_finish() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("console.log");
        let log = ConsoleLog::create(&path).await.unwrap();
        log.write(&ConsoleLine {
            t_ms: 1,
            stream: Stream::Host,
            text: "early".into(),
        })
        .await;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let text = std::fs::read_to_string(&path).unwrap();
            if text.contains("early") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "line never flushed");
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        log.finish().await.unwrap();
    }

    #[tokio::test]
    async fn create_in_a_missing_directory_fails() {
        let dir = tempfile::tempdir().unwrap();
        let err = ConsoleLog::create(&dir.path().join("no/such/console.log")).await;
        assert!(err.is_err());
    }
}
