//! The pump: reads any byte stream (a pipe, a serial port, a socket) to its end and turns it into
//! timestamped console lines on a channel. It owns reading and framing, nothing else: what ends
//! the stream, and what the lines mean, are the backend's business.

use super::framing::LineSplitter;
use super::{ConsoleLine, Stream};
use std::io;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Reads a pipe to its end, sending each line stamped with the milliseconds since `launch`. The
/// last line is sent even without a newline. Stops early, without error, if nobody listens.
pub async fn pump<R: AsyncRead + Unpin>(
    mut source: R,
    stream: Stream,
    launch: Instant,
    lines: mpsc::Sender<ConsoleLine>,
) -> io::Result<()> {
    let mut splitter = LineSplitter::default();
    let mut buf = vec![0u8; 8192];
    let stamp = |text: String| ConsoleLine {
        t_ms: launch.elapsed().as_millis() as u64,
        stream,
        text,
    };
    let result = loop {
        match source.read(&mut buf).await {
            Ok(0) => break Ok(()),
            Ok(n) => {
                for text in splitter.push(&buf[..n]) {
                    if lines.send(stamp(text)).await.is_err() {
                        return Ok(());
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => break Err(e),
        }
    };
    if let Some(text) = splitter.finish() {
        let _ = lines.send(stamp(text)).await;
    }
    result
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
}
