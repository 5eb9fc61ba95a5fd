//! The pump: reads any byte stream (a pipe, a serial port, a socket) to its end and turns it into
//! timestamped console lines on a channel. It owns reading and framing, nothing else: what ends
//! the stream, and what the lines mean, are the backend's business; a backend that knows the
//! writer is done before the stream ends says so ([`pump_until`]).

use super::framing::LineSplitter;
use super::{ConsoleLine, Stream};
use std::io;
use std::os::fd::AsFd;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// Reads a pipe to its end, sending each line stamped with the milliseconds since `launch`. The
/// last line is sent even without a newline. Stops early, without error, if nobody listens.
pub async fn pump<R: AsyncRead + Unpin>(
    mut source: R,
    stream: Stream,
    launch: Instant,
    lines: mpsc::Sender<ConsoleLine>,
) -> io::Result<()> {
    let mut framer = Framer::new(stream, launch, lines);
    let mut buf = vec![0u8; 8192];
    let result = loop {
        match source.read(&mut buf).await {
            Ok(0) => break Ok(()),
            Ok(n) => {
                if !framer.push(&buf[..n]).await {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => break Err(e),
        }
    };
    framer.finish().await;
    result
}

/// [`pump`] for a non-blocking pipe whose writer may hold it open after its last byte (a QEMU
/// that reported its exit and is still tearing down): once `done` fires, what the pipe holds at
/// that moment is read without waiting for its end, and the pump ends as at the end of the
/// stream. A `done` dropped unfired leaves the pump reading to the end.
pub async fn pump_until<R: AsyncRead + AsFd + Unpin>(
    mut source: R,
    stream: Stream,
    launch: Instant,
    lines: mpsc::Sender<ConsoleLine>,
    mut done: oneshot::Receiver<()>,
) -> io::Result<()> {
    let mut framer = Framer::new(stream, launch, lines);
    let mut buf = vec![0u8; 8192];
    let mut waiting = true;
    let result = loop {
        tokio::select! {
            biased;
            read = source.read(&mut buf) => match read {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    if !framer.push(&buf[..n]).await {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            },
            fired = &mut done, if waiting => match fired {
                // Read the descriptor itself: tokio's readiness may not have seen the last
                // write yet, and nothing is waited for any more.
                Ok(()) => break read_now(&source, &mut buf, &mut framer).await,
                Err(_) => waiting = false,
            },
        }
    };
    framer.finish().await;
    result
}

/// Reads a non-blocking descriptor until it would block or ends, framing what it holds.
async fn read_now(source: &impl AsFd, buf: &mut [u8], framer: &mut Framer) -> io::Result<()> {
    loop {
        match nix::unistd::read(source.as_fd(), buf) {
            Ok(0) | Err(nix::errno::Errno::EAGAIN) => return Ok(()),
            Ok(n) => {
                if !framer.push(&buf[..n]).await {
                    return Ok(());
                }
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Bytes to stamped lines on the channel.
struct Framer {
    splitter: LineSplitter,
    stream: Stream,
    launch: Instant,
    lines: mpsc::Sender<ConsoleLine>,
}

impl Framer {
    fn new(stream: Stream, launch: Instant, lines: mpsc::Sender<ConsoleLine>) -> Self {
        Framer {
            splitter: LineSplitter::default(),
            stream,
            launch,
            lines,
        }
    }

    fn stamp(&self, text: String) -> ConsoleLine {
        ConsoleLine {
            t_ms: self.launch.elapsed().as_millis() as u64,
            stream: self.stream,
            text,
        }
    }

    /// Sends the lines `chunk` completes; false when nobody listens any more.
    async fn push(&mut self, chunk: &[u8]) -> bool {
        for text in self.splitter.push(chunk) {
            if self.lines.send(self.stamp(text)).await.is_err() {
                return false;
            }
        }
        true
    }

    /// Sends the last line, unfinished (no newline), if there is one.
    async fn finish(mut self) {
        if let Some(text) = self.splitter.finish() {
            let _ = self.lines.send(self.stamp(text)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn pump_stamps_lines_and_keeps_the_last_one() {
        let (tx, mut rx) = mpsc::channel(16);
        let input: &[u8] = b"one\r\ntwo\nthree";
        pump(input, Stream::Uart, Instant::now(), tx).await.unwrap();
        let mut got = Vec::new();
        while let Some(line) = rx.recv().await {
            assert_eq!(line.stream, Stream::Uart);
            got.push(line.text);
        }
        assert_eq!(got, vec!["one", "two", "three"]);
    }

    #[tokio::test]
    async fn pump_until_reads_what_the_pipe_holds_and_ends_with_the_writer_still_there() {
        use tokio::io::AsyncWriteExt;
        let (mut writer, reader) = tokio::net::unix::pipe::pipe().unwrap();
        let (tx, mut rx) = mpsc::channel(16);
        let (done, fired) = oneshot::channel();
        let task = tokio::spawn(pump_until(reader, Stream::Uart, Instant::now(), tx, fired));
        writer
            .write_all(b"first\nsecond\nunfinished")
            .await
            .unwrap();
        done.send(()).unwrap();
        let mut got = Vec::new();
        while let Some(line) = rx.recv().await {
            got.push(line.text);
        }
        assert_eq!(got, vec!["first", "second", "unfinished"]);
        task.await.unwrap().unwrap();
        // The writer is still open: the pump ended on `done`, not at the end of the pipe.
        drop(writer);
    }

    #[tokio::test]
    async fn pump_until_without_done_reads_to_the_end() {
        use tokio::io::AsyncWriteExt;
        let (mut writer, reader) = tokio::net::unix::pipe::pipe().unwrap();
        let (tx, mut rx) = mpsc::channel(16);
        let (done, fired) = oneshot::channel::<()>();
        drop(done);
        let task = tokio::spawn(pump_until(reader, Stream::Host, Instant::now(), tx, fired));
        writer.write_all(b"a\nb").await.unwrap();
        drop(writer);
        let mut got = Vec::new();
        while let Some(line) = rx.recv().await {
            got.push(line.text);
        }
        assert_eq!(got, vec!["a", "b"]);
        task.await.unwrap().unwrap();
    }
}
