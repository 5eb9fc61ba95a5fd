//! A scripted OpenAI-compatible chat-completions server on 127.0.0.1: replies in the order a
//! test scripts them and records every request. The stand-in for a model endpoint in the llm
//! strategy's and the fix loop's tests.

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One canned reply. `{auth}` in the body is replaced by the request's Authorization header, so
/// a hostile server can echo the key back.
#[derive(Clone)]
pub struct Step {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Before anything is sent back.
    pub delay: Duration,
    /// After the headers and half the body, before the rest.
    pub stall: Duration,
}

impl Step {
    pub fn json(status: u16, body: Value) -> Step {
        Step {
            status,
            headers: Vec::new(),
            body: body.to_string(),
            delay: Duration::ZERO,
            stall: Duration::ZERO,
        }
    }

    pub fn ok(body: Value) -> Step {
        Step::json(200, body)
    }

    pub fn header(mut self, name: &str, value: &str) -> Step {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn delay(mut self, d: Duration) -> Step {
        self.delay = d;
        self
    }

    pub fn stall(mut self, d: Duration) -> Step {
        self.stall = d;
        self
    }
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub at: Instant,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
pub struct ServerState {
    pub script: Mutex<VecDeque<Step>>,
    pub requests: Mutex<Vec<Recorded>>,
    pub active: AtomicUsize,
    pub max_active: AtomicUsize,
}

pub struct Server {
    pub base_url: String,
    pub state: Arc<ServerState>,
}

impl Server {
    pub async fn start(script: Vec<Step>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(ServerState {
            script: Mutex::new(script.into()),
            ..ServerState::default()
        });
        let shared = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, Arc::clone(&shared)));
            }
        });
        Server {
            base_url: format!("http://{addr}/v1"),
            state,
        }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    pub fn max_active(&self) -> usize {
        self.state.max_active.load(Ordering::SeqCst)
    }
}

pub async fn serve(mut stream: TcpStream, state: Arc<ServerState>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let path = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or_default()
        .to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let body = serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null);
    let recorded = Recorded {
        path,
        headers,
        body,
        at: Instant::now(),
    };
    let auth = recorded.header("authorization").unwrap_or("").to_string();
    state.requests.lock().unwrap().push(recorded);
    let now = state.active.fetch_add(1, Ordering::SeqCst) + 1;
    state.max_active.fetch_max(now, Ordering::SeqCst);

    let step = state.script.lock().unwrap().pop_front().unwrap_or_else(|| {
        Step::json(
            500,
            json!({"error": {"message": "the test server's script ran out"}}),
        )
    });
    tokio::time::sleep(step.delay).await;
    let body = step.body.replace("{auth}", &auth);
    let mut head = format!(
        "HTTP/1.1 {} Scripted\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        step.status,
        body.len()
    );
    for (name, value) in &step.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let (first, rest) = body.as_bytes().split_at(body.len() / 2);
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(first).await;
    let _ = stream.flush().await;
    tokio::time::sleep(step.stall).await;
    let _ = stream.write_all(rest).await;
    let _ = stream.shutdown().await;
    state.active.fetch_sub(1, Ordering::SeqCst);
}

pub fn tool_answer(diff: &str) -> Value {
    let arguments = json!({
        "diff": diff,
        "explanation": "CRC-16/CCITT-FALSE starts from 0xFFFF, not 0x0000."
    });
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "test-model",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "propose_patch", "arguments": arguments.to_string()}
                }]
            },
            "finish_reason": "tool_calls"
        }],
        "usage": {"prompt_tokens": 812, "completion_tokens": 64, "total_tokens": 876}
    })
}

pub fn text_answer(content: &str) -> Value {
    json!({
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 700, "completion_tokens": 90, "total_tokens": 790}
    })
}
