//! A small QMP client over QEMU's unix socket: connect (retrying while QEMU creates the socket),
//! greeting, capabilities negotiation, commands with ids, asynchronous events skipped. Every step
//! has a timeout so a wedged QEMU cannot hang fwfix. It knows nothing of faults or of the run.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;
use tokio::time::{timeout, Instant};

/// The longest QMP message accepted: a monitor dump is a few KiB.
const MAX_MESSAGE: u64 = 1 << 20;
/// Pause between connection attempts while the socket does not exist yet.
const RETRY_EVERY: Duration = Duration::from_millis(10);

#[derive(Debug, thiserror::Error)]
pub enum QmpError {
    #[error("could not connect to QMP socket {path} within {waited_ms} ms: {source}")]
    Connect {
        path: PathBuf,
        waited_ms: u64,
        #[source]
        source: std::io::Error,
    },
    #[error("QMP {step}: no answer within {timeout_ms} ms")]
    Timeout { step: String, timeout_ms: u64 },
    #[error("QMP {step}: QEMU closed the connection")]
    Closed { step: String },
    #[error("QMP {step}: {source}")]
    Io {
        step: String,
        #[source]
        source: std::io::Error,
    },
    #[error("QMP {step}: unexpected message: {message}")]
    Protocol { step: String, message: String },
    #[error("QMP command {command} failed: {class}: {desc}")]
    Command {
        command: String,
        class: String,
        desc: String,
    },
}

/// A negotiated QMP connection (capabilities already sent).
pub struct QmpClient {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    next_id: u64,
    step_timeout: Duration,
}

impl QmpClient {
    /// Connects to `path`, retrying until `patience` runs out (QEMU creates the socket shortly
    /// after it starts), reads the greeting and negotiates capabilities.
    pub async fn connect(
        path: &Path,
        patience: Duration,
        step_timeout: Duration,
    ) -> Result<Self, QmpError> {
        let started = Instant::now();
        let stream = loop {
            match UnixStream::connect(path).await {
                Ok(stream) => break stream,
                Err(_) if started.elapsed() < patience => {
                    tokio::time::sleep(RETRY_EVERY).await;
                }
                Err(source) => {
                    return Err(QmpError::Connect {
                        path: path.to_path_buf(),
                        waited_ms: started.elapsed().as_millis() as u64,
                        source,
                    })
                }
            }
        };
        let (read, writer) = stream.into_split();
        let mut client = Self {
            reader: BufReader::new(read),
            writer,
            next_id: 1,
            step_timeout,
        };
        let greeting = client.read_message("greeting").await?;
        if greeting.get("QMP").is_none() {
            return Err(QmpError::Protocol {
                step: "greeting".into(),
                message: greeting.to_string(),
            });
        }
        client.execute("qmp_capabilities", None).await?;
        Ok(client)
    }

    /// Runs one command and returns its `return` value.
    pub async fn execute(
        &mut self,
        command: &str,
        arguments: Option<Value>,
    ) -> Result<Value, QmpError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut request = json!({ "execute": command, "id": id });
        if let Some(arguments) = arguments {
            request["arguments"] = arguments;
        }
        let mut bytes = request.to_string().into_bytes();
        bytes.push(b'\n');
        let step = command.to_string();
        let limit = self.step_timeout;
        timeout(limit, self.writer.write_all(&bytes))
            .await
            .map_err(|_| timed_out(&step, limit))?
            .map_err(|source| QmpError::Io {
                step: step.clone(),
                source,
            })?;
        loop {
            let message = self.read_message(&step).await?;
            if message.get("event").is_some() {
                continue;
            }
            if message.get("id").and_then(Value::as_u64) != Some(id) {
                continue;
            }
            if let Some(value) = message.get("return") {
                return Ok(value.clone());
            }
            if let Some(error) = message.get("error") {
                let field = |name: &str| {
                    error
                        .get(name)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                return Err(QmpError::Command {
                    command: step,
                    class: field("class"),
                    desc: field("desc"),
                });
            }
            return Err(QmpError::Protocol {
                step,
                message: message.to_string(),
            });
        }
    }

    /// Runs a human monitor command (`info registers`, `xp /8wx 0x20000000`) and returns its text.
    pub async fn hmp(&mut self, command_line: &str) -> Result<String, QmpError> {
        let value = self
            .execute(
                "human-monitor-command",
                Some(json!({ "command-line": command_line })),
            )
            .await?;
        value
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| QmpError::Protocol {
                step: command_line.to_string(),
                message: value.to_string(),
            })
    }

    async fn read_message(&mut self, step: &str) -> Result<Value, QmpError> {
        let limit = self.step_timeout;
        let mut line = Vec::new();
        let read = timeout(
            limit,
            (&mut self.reader)
                .take(MAX_MESSAGE)
                .read_until(b'\n', &mut line),
        )
        .await
        .map_err(|_| timed_out(step, limit))?
        .map_err(|source| QmpError::Io {
            step: step.to_string(),
            source,
        })?;
        if read == 0 {
            return Err(QmpError::Closed {
                step: step.to_string(),
            });
        }
        serde_json::from_slice(&line).map_err(|e| QmpError::Protocol {
            step: step.to_string(),
            message: format!("{e}: {}", String::from_utf8_lossy(&line).trim_end()),
        })
    }
}

fn timed_out(step: &str, limit: Duration) -> QmpError {
    QmpError::Timeout {
        step: step.to_string(),
        timeout_ms: limit.as_millis() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::UnixListener;

    /// A scripted QMP server: sends the greeting, then answers each request line with the next
    /// scripted replies (with `{id}` replaced by the request's id).
    async fn serve(listener: UnixListener, replies: Vec<Vec<&'static str>>) {
        let (stream, _) = listener.accept().await.unwrap();
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        write
            .write_all(b"{\"QMP\": {\"version\": {}, \"capabilities\": [\"oob\"]}}\r\n")
            .await
            .unwrap();
        for batch in replies {
            let Some(request) = lines.next_line().await.unwrap() else {
                return;
            };
            let request: Value = serde_json::from_str(&request).unwrap();
            let id = request["id"].to_string();
            for reply in batch {
                let text = reply.replace("{id}", &id);
                write.write_all(text.as_bytes()).await.unwrap();
                write.write_all(b"\r\n").await.unwrap();
            }
        }
        // Keep the connection open until the client goes away.
        while let Ok(Some(_)) = lines.next_line().await {}
    }

    fn socket() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("qmp.sock");
        (dir, path)
    }

    const STEP: Duration = Duration::from_millis(500);

    #[tokio::test]
    async fn negotiates_skips_events_and_matches_ids() {
        let (_dir, path) = socket();
        let listener = UnixListener::bind(&path).unwrap();
        let server = tokio::spawn(serve(
            listener,
            vec![
                vec![r#"{"return": {}, "id": {id}}"#],
                vec![
                    r#"{"timestamp": {"seconds": 1, "microseconds": 2}, "event": "STOP"}"#,
                    r#"{"return": {}, "id": 999}"#,
                    r#"{"return": "R15=00000064\r\n", "id": {id}}"#,
                ],
            ],
        ));
        let mut client = QmpClient::connect(&path, Duration::from_secs(1), STEP)
            .await
            .unwrap();
        let text = client.hmp("info registers").await.unwrap();
        assert_eq!(text, "R15=00000064\r\n");
        drop(client);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn command_errors_are_typed() {
        let (_dir, path) = socket();
        let listener = UnixListener::bind(&path).unwrap();
        tokio::spawn(serve(
            listener,
            vec![
                vec![r#"{"return": {}, "id": {id}}"#],
                vec![r#"{"error": {"class": "GenericError", "desc": "nope"}, "id": {id}}"#],
            ],
        ));
        let mut client = QmpClient::connect(&path, Duration::from_secs(1), STEP)
            .await
            .unwrap();
        let err = client.execute("stop", None).await.unwrap_err();
        assert!(
            matches!(err, QmpError::Command { ref class, ref desc, .. } if class == "GenericError" && desc == "nope"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_silent_server_times_out() {
        let (_dir, path) = socket();
        let listener = UnixListener::bind(&path).unwrap();
        tokio::spawn(serve(
            listener,
            vec![vec![r#"{"return": {}, "id": {id}}"#], vec![]],
        ));
        let mut client = QmpClient::connect(&path, Duration::from_secs(1), STEP)
            .await
            .unwrap();
        let started = Instant::now();
        let err = client.execute("stop", None).await.unwrap_err();
        assert!(matches!(err, QmpError::Timeout { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[tokio::test]
    async fn connect_retries_until_the_socket_appears() {
        let (_dir, path) = socket();
        let later = path.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let listener = UnixListener::bind(&later).unwrap();
            serve(listener, vec![vec![r#"{"return": {}, "id": {id}}"#]]).await;
        });
        QmpClient::connect(&path, Duration::from_secs(2), STEP)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn connect_gives_up() {
        let (_dir, path) = socket();
        let err = QmpClient::connect(&path, Duration::from_millis(50), STEP)
            .await
            .err()
            .unwrap();
        assert!(matches!(err, QmpError::Connect { .. }), "{err}");
    }
}
