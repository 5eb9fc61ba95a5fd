//! A small client of the GDB remote serial protocol (RSP), the language of QEMU's gdbstub and of
//! every GDB server (OpenOCD, J-Link, pyOCD): packet framing with checksums, escapes and
//! run-length decoding, acknowledgements, the interrupt byte, stop replies, register and memory
//! access, breakpoints, and the target description (`qXfer:features:read`) that says which
//! register number is which. The framing and the parsing are pure functions; [`Client`] does the
//! I/O over any byte stream, every request under a time limit so a wedged server cannot hang
//! fwfix. It knows nothing of faults or of QEMU.

use regex::Regex;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::timeout;

/// The longest packet accepted: a register file or a memory read of a few hundred bytes, or a
/// chunk of a target description.
const MAX_PACKET: usize = 64 << 10;
/// Target description files followed through `xi:include`, at most.
const MAX_XML_FILES: usize = 16;
/// Bytes asked for per `qXfer` chunk.
const XFER_CHUNK: usize = 0xffb;

#[derive(Debug, thiserror::Error)]
pub enum RspError {
    #[error("gdbstub {step}: no answer within {timeout_ms} ms")]
    Timeout { step: String, timeout_ms: u64 },
    #[error("gdbstub {step}: the connection was closed")]
    Closed { step: String },
    #[error("gdbstub {step}: {source}")]
    Io {
        step: String,
        #[source]
        source: std::io::Error,
    },
    #[error("gdbstub {step}: unexpected reply {reply:?}")]
    Protocol { step: String, reply: String },
    /// The server answered `Enn`.
    #[error("gdbstub {step}: error {code}")]
    Refused { step: String, code: String },
}

/// The RSP checksum: the sum of the payload bytes modulo 256.
pub fn checksum(payload: &[u8]) -> u8 {
    payload.iter().fold(0u8, |sum, b| sum.wrapping_add(*b))
}

/// `$payload#cs`, with `$`, `#`, `}` and `*` escaped (`}` then the byte XOR 0x20).
pub fn frame(payload: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(payload.len() + 4);
    for &b in payload {
        if matches!(b, b'$' | b'#' | b'}' | b'*') {
            body.push(b'}');
            body.push(b ^ 0x20);
        } else {
            body.push(b);
        }
    }
    let mut out = Vec::with_capacity(body.len() + 4);
    out.push(b'$');
    out.extend_from_slice(&body);
    out.push(b'#');
    out.extend_from_slice(format!("{:02x}", checksum(&body)).as_bytes());
    out
}

/// What arrived on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Ack,
    Nack,
    /// A packet whose checksum matched, unescaped and run-length expanded.
    Packet(Vec<u8>),
    /// A packet whose checksum did not match: to be answered with `-`.
    Corrupt,
}

/// Splits the incoming bytes into acks and packets. Bytes between packets that are neither an
/// ack nor a packet start are line noise and are skipped.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
}

impl Decoder {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete item, if one has arrived.
    pub fn next_item(&mut self) -> Option<Item> {
        loop {
            let first = *self.buf.first()?;
            match first {
                b'+' => {
                    self.buf.remove(0);
                    return Some(Item::Ack);
                }
                b'-' => {
                    self.buf.remove(0);
                    return Some(Item::Nack);
                }
                b'$' => {
                    let hash = self.buf.iter().position(|&b| b == b'#')?;
                    if self.buf.len() < hash + 3 {
                        return None;
                    }
                    let body = self.buf[1..hash].to_vec();
                    let sum = std::str::from_utf8(&self.buf[hash + 1..hash + 3])
                        .ok()
                        .and_then(|s| u8::from_str_radix(s, 16).ok());
                    self.buf.drain(..hash + 3);
                    return Some(if sum == Some(checksum(&body)) {
                        Item::Packet(unescape(&body))
                    } else {
                        Item::Corrupt
                    });
                }
                _ => {
                    self.buf.remove(0);
                }
            }
        }
    }

    fn len(&self) -> usize {
        self.buf.len()
    }
}

/// Undoes `}` escapes and expands `X*n` run-length encoding (X repeated n - 29 more times).
fn unescape(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'}' if i + 1 < body.len() => {
                out.push(body[i + 1] ^ 0x20);
                i += 2;
            }
            b'*' if i + 1 < body.len() && !out.is_empty() => {
                let repeat = usize::from(body[i + 1].saturating_sub(29));
                let last = out[out.len() - 1];
                out.extend(std::iter::repeat_n(last, repeat));
                i += 2;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

pub fn encode_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn decode_hex(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|s| u8::from_str_radix(s, 16).ok())
        })
        .collect()
}

/// Little-endian 32-bit words from target-order hex (`g`, `p`, `m` replies of an Arm target).
pub fn words_le(text: &[u8]) -> Option<Vec<u32>> {
    let bytes = decode_hex(text)?;
    Some(
        bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

/// Why the target stopped, from a stop reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReply {
    /// `Snn` / `Tnn...`: stopped with signal nn (5 = a breakpoint or a step, 2 = interrupted).
    Signal(u8),
    /// `Wnn`: the program exited with status nn.
    Exited(u8),
    /// `Xnn`: the program was terminated by signal nn.
    Terminated(u8),
}

pub fn parse_stop(packet: &[u8]) -> Option<StopReply> {
    let kind = *packet.first()?;
    let code = packet.get(1..3)?;
    let code = u8::from_str_radix(std::str::from_utf8(code).ok()?, 16).ok()?;
    match kind {
        b'S' | b'T' => Some(StopReply::Signal(code)),
        b'W' => Some(StopReply::Exited(code)),
        b'X' => Some(StopReply::Terminated(code)),
        _ => None,
    }
}

/// The data address a `T` stop reply names as a watchpoint's (`watch:`, `rwatch:` or `awatch:`),
/// when the stop was one.
pub fn watch_hit(packet: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(packet.strip_prefix(b"T")?.get(2..)?).ok()?;
    text.split(';').find_map(|field| {
        let (key, value) = field.split_once(':')?;
        matches!(key, "watch" | "rwatch" | "awatch")
            .then(|| u32::from_str_radix(value, 16).ok())
            .flatten()
    })
}

/// Register numbers by name, from a target description: a register's `regnum` when it has one,
/// else one more than the register before it (the first one is 0).
pub fn register_numbers<'a>(documents: impl IntoIterator<Item = &'a str>) -> HashMap<String, u32> {
    static REG: OnceLock<Option<Regex>> = OnceLock::new();
    static NAME: OnceLock<Option<Regex>> = OnceLock::new();
    static NUM: OnceLock<Option<Regex>> = OnceLock::new();
    let mut out = HashMap::new();
    let (Some(reg), Some(name_re), Some(num_re)) = (
        re(&REG, r"<reg\b[^>]*>"),
        re(&NAME, r#"\bname\s*=\s*"([^"]+)""#),
        re(&NUM, r#"\bregnum\s*=\s*"(\d+)""#),
    ) else {
        return out;
    };
    let mut next = 0u32;
    for doc in documents {
        for tag in reg.find_iter(doc) {
            let tag = tag.as_str();
            let number = num_re
                .captures(tag)
                .and_then(|c| c[1].parse::<u32>().ok())
                .unwrap_or(next);
            if let Some(name) = name_re.captures(tag) {
                out.insert(name[1].to_ascii_lowercase(), number);
            }
            next = number + 1;
        }
    }
    out
}

/// The files a target description includes (`<xi:include href="..."/>`), in order.
pub fn includes(document: &str) -> Vec<String> {
    static INCLUDE: OnceLock<Option<Regex>> = OnceLock::new();
    re(&INCLUDE, r#"<xi:include\s+href\s*=\s*"([^"]+)""#)
        .map(|r| {
            r.captures_iter(document)
                .map(|c| c[1].to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn re(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref()
}

/// A connection to a GDB server, acknowledging every packet.
pub struct Client<S> {
    stream: S,
    decoder: Decoder,
    step_timeout: Duration,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Client<S> {
    pub fn new(stream: S, step_timeout: Duration) -> Self {
        Self {
            stream,
            decoder: Decoder::default(),
            step_timeout,
        }
    }

    /// Sends one request and returns the reply's payload; `Enn` replies are [`RspError::Refused`].
    pub async fn request(&mut self, payload: &str) -> Result<Vec<u8>, RspError> {
        self.send(payload).await?;
        let reply = self.reply(payload, self.step_timeout).await?;
        refused(payload, reply)
    }

    /// Sends every request of `payloads` in one write and returns their replies in order, each
    /// as [`Client::request`] gives it (an `Enn` reply is that request's
    /// [`RspError::Refused`]): a round trip for the lot. `limit` bounds the wait for each reply;
    /// a timeout or a closed connection fails the whole batch.
    pub async fn requests(
        &mut self,
        payloads: &[String],
        limit: Duration,
    ) -> Result<Vec<Result<Vec<u8>, RspError>>, RspError> {
        let Some(first) = payloads.first() else {
            return Ok(Vec::new());
        };
        let bytes: Vec<u8> = payloads.iter().flat_map(|p| frame(p.as_bytes())).collect();
        self.write(&bytes, first).await?;
        let mut replies = Vec::with_capacity(payloads.len());
        for payload in payloads {
            let reply = self.reply(payload, limit).await?;
            replies.push(refused(payload, reply));
        }
        Ok(replies)
    }

    /// A request the server must answer `OK`.
    pub async fn request_ok(&mut self, payload: &str) -> Result<(), RspError> {
        let reply = self.request(payload).await?;
        ok_reply(payload, &reply)
    }

    /// Sends a packet (and waits for nothing): `c` and `s` are answered by a stop reply later.
    pub async fn send(&mut self, payload: &str) -> Result<(), RspError> {
        let bytes = frame(payload.as_bytes());
        self.write(&bytes, payload).await
    }

    /// The interrupt byte: a running target stops and sends a stop reply.
    pub async fn interrupt(&mut self) -> Result<(), RspError> {
        self.write(&[0x03], "interrupt").await
    }

    async fn write(&mut self, bytes: &[u8], step: &str) -> Result<(), RspError> {
        let limit = self.step_timeout;
        timeout(limit, self.stream.write_all(bytes))
            .await
            .map_err(|_| timed_out(step, limit))?
            .map_err(|source| RspError::Io {
                step: step_name(step),
                source,
            })
    }

    /// The next packet, acknowledged, within `limit`; acks on the way are skipped and a corrupt
    /// packet is asked for again.
    pub async fn reply(&mut self, step: &str, limit: Duration) -> Result<Vec<u8>, RspError> {
        timeout(limit, self.next_packet(step))
            .await
            .map_err(|_| timed_out(step, limit))?
    }

    /// Waits without a limit for the next packet (a stop reply while the target runs);
    /// cancel-safe, so it can sit in a `select!` beside other work.
    pub async fn next_packet(&mut self, step: &str) -> Result<Vec<u8>, RspError> {
        let mut buf = [0u8; 4096];
        loop {
            while let Some(item) = self.decoder.next_item() {
                match item {
                    Item::Ack | Item::Nack => {}
                    Item::Corrupt => self.ack(b"-", step).await?,
                    Item::Packet(p) => {
                        self.ack(b"+", step).await?;
                        return Ok(p);
                    }
                }
            }
            if self.decoder.len() > MAX_PACKET {
                return Err(RspError::Protocol {
                    step: step_name(step),
                    reply: format!("a packet longer than {MAX_PACKET} bytes"),
                });
            }
            let n = self
                .stream
                .read(&mut buf)
                .await
                .map_err(|source| RspError::Io {
                    step: step_name(step),
                    source,
                })?;
            if n == 0 {
                return Err(RspError::Closed {
                    step: step_name(step),
                });
            }
            self.decoder.push(&buf[..n]);
        }
    }

    async fn ack(&mut self, byte: &[u8], step: &str) -> Result<(), RspError> {
        self.stream
            .write_all(byte)
            .await
            .map_err(|source| RspError::Io {
                step: step_name(step),
                source,
            })
    }

    /// Reads `len` bytes of target memory at `addr`.
    pub async fn read_memory(&mut self, addr: u32, len: usize) -> Result<Vec<u8>, RspError> {
        let request = read_memory_request(addr, len);
        let reply = self.request(&request).await?;
        memory_reply(&request, &reply, len)
    }

    /// Reads `count` little-endian words at `addr`.
    pub async fn read_words(&mut self, addr: u32, count: usize) -> Result<Vec<u32>, RspError> {
        let request = read_memory_request(addr, count * 4);
        let reply = self.request(&request).await?;
        words_reply(&request, &reply, count)
    }

    pub async fn write_memory(&mut self, addr: u32, bytes: &[u8]) -> Result<(), RspError> {
        let request = format!("M{addr:x},{:x}:{}", bytes.len(), encode_hex(bytes));
        self.request_ok(&request).await
    }

    /// One 32-bit register by number (`p`).
    pub async fn read_register(&mut self, number: u32) -> Result<u32, RspError> {
        let request = format!("p{number:x}");
        let reply = self.request(&request).await?;
        match words_le(&reply).as_deref() {
            Some([value, ..]) => Ok(*value),
            _ => Err(RspError::Protocol {
                step: request,
                reply: String::from_utf8_lossy(&reply).into_owned(),
            }),
        }
    }

    pub async fn write_register(&mut self, number: u32, value: u32) -> Result<(), RspError> {
        let request = format!("P{number:x}={}", encode_hex(&value.to_le_bytes()));
        self.request_ok(&request).await
    }

    /// The general registers (`g`) as little-endian words, in the server's order.
    pub async fn read_registers(&mut self) -> Result<Vec<u32>, RspError> {
        let reply = self.request("g").await?;
        words_le(&reply).ok_or_else(|| RspError::Protocol {
            step: "g".into(),
            reply: String::from_utf8_lossy(&reply).into_owned(),
        })
    }

    /// A breakpoint (`Z0`, kind 2: a Thumb instruction) at `addr`.
    pub async fn set_breakpoint(&mut self, addr: u32) -> Result<(), RspError> {
        self.request_ok(&set_breakpoint_request(addr)).await
    }

    pub async fn clear_breakpoint(&mut self, addr: u32) -> Result<(), RspError> {
        self.request_ok(&format!("z0,{addr:x},2")).await
    }

    /// A write watchpoint (`Z2`) on the `len` bytes at `addr`: the target stops after a store
    /// there, with a `watch:` stop reply.
    pub async fn set_write_watchpoint(&mut self, addr: u32, len: u32) -> Result<(), RspError> {
        self.request_ok(&set_write_watchpoint_request(addr, len))
            .await
    }

    pub async fn clear_write_watchpoint(&mut self, addr: u32, len: u32) -> Result<(), RspError> {
        self.request_ok(&format!("z2,{addr:x},{len:x}")).await
    }

    /// One `qXfer:features:read` object, all its chunks.
    pub async fn read_feature(&mut self, annex: &str) -> Result<String, RspError> {
        let mut text = Vec::new();
        loop {
            let request = format!(
                "qXfer:features:read:{annex}:{:x},{XFER_CHUNK:x}",
                text.len()
            );
            let reply = self.request(&request).await?;
            let Some((&kind, data)) = reply.split_first() else {
                return Err(RspError::Protocol {
                    step: request,
                    reply: String::new(),
                });
            };
            text.extend_from_slice(data);
            match kind {
                b'l' => break,
                b'm' if !data.is_empty() && text.len() < MAX_PACKET => {}
                _ => {
                    return Err(RspError::Protocol {
                        step: request,
                        reply: String::from_utf8_lossy(&reply).into_owned(),
                    })
                }
            }
        }
        Ok(String::from_utf8_lossy(&text).into_owned())
    }

    /// The register numbers of the target description (`target.xml` and what it includes);
    /// empty when the server has no description.
    pub async fn register_map(&mut self) -> Result<HashMap<String, u32>, RspError> {
        let mut documents = Vec::new();
        let mut pending = vec!["target.xml".to_string()];
        while let Some(annex) = pending.pop() {
            if documents.len() >= MAX_XML_FILES {
                break;
            }
            let doc = self.read_feature(&annex).await?;
            // Included files are read in document order, before anything after them.
            pending.extend(includes(&doc).into_iter().rev());
            documents.push(doc);
        }
        Ok(register_numbers(documents.iter().map(String::as_str)))
    }
}

/// `m`: `len` bytes at `addr`.
pub fn read_memory_request(addr: u32, len: usize) -> String {
    format!("m{addr:x},{len:x}")
}

/// The bytes of one `M` request: QEMU's gdbstub takes packets of up to 4096 bytes, two hex digits
/// a byte.
const WRITE_CHUNK: usize = 1536;

/// `M`: `bytes` written at `addr`, in as many requests as the packet size needs.
pub fn write_memory_requests(addr: u32, bytes: &[u8]) -> Vec<String> {
    bytes
        .chunks(WRITE_CHUNK)
        .enumerate()
        .map(|(i, chunk)| {
            let at = addr.wrapping_add((i * WRITE_CHUNK) as u32);
            format!("M{at:x},{:x}:{}", chunk.len(), encode_hex(chunk))
        })
        .collect()
}

/// `G`: every general register at once, as little-endian words (with no target description read,
/// QEMU's gdbstub takes `G` where it refuses `P`).
pub fn write_registers_request(bytes: &[u8]) -> String {
    format!("G{}", encode_hex(bytes))
}

/// `Z0`: a breakpoint on the Thumb instruction at `addr`.
pub fn set_breakpoint_request(addr: u32) -> String {
    format!("Z0,{addr:x},2")
}

/// `Z2`: a write watchpoint on the `len` bytes at `addr`.
pub fn set_write_watchpoint_request(addr: u32, len: u32) -> String {
    format!("Z2,{addr:x},{len:x}")
}

/// The bytes of an `m` reply, which must hold exactly `len`.
pub fn memory_reply(request: &str, reply: &[u8], len: usize) -> Result<Vec<u8>, RspError> {
    match decode_hex(reply) {
        Some(bytes) if bytes.len() == len => Ok(bytes),
        _ => Err(RspError::Protocol {
            step: request.to_string(),
            reply: String::from_utf8_lossy(reply).into_owned(),
        }),
    }
}

/// The `count` little-endian words of an `m` reply.
pub fn words_reply(request: &str, reply: &[u8], count: usize) -> Result<Vec<u32>, RspError> {
    let bytes = memory_reply(request, reply, count * 4)?;
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// A reply that must be `OK`.
pub fn ok_reply(request: &str, reply: &[u8]) -> Result<(), RspError> {
    if reply == b"OK" {
        return Ok(());
    }
    Err(RspError::Protocol {
        step: step_name(request),
        reply: String::from_utf8_lossy(reply).into_owned(),
    })
}

/// An `Enn` reply as the server's refusal of `payload`; any other reply as it is.
fn refused(payload: &str, reply: Vec<u8>) -> Result<Vec<u8>, RspError> {
    if reply.len() == 3 && reply[0] == b'E' {
        return Err(RspError::Refused {
            step: step_name(payload),
            code: String::from_utf8_lossy(&reply[1..]).into_owned(),
        });
    }
    Ok(reply)
}

/// A request's name for messages: its command, not its hex arguments.
fn step_name(payload: &str) -> String {
    payload
        .split([':', ','])
        .next()
        .unwrap_or(payload)
        .chars()
        .take(32)
        .collect()
}

fn timed_out(step: &str, limit: Duration) -> RspError {
    RspError::Timeout {
        step: step_name(step),
        timeout_ms: limit.as_millis() as u64,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn memory_writes_are_cut_to_the_packet_size() {
        let bytes: Vec<u8> = (0..4000u32).map(|i| i as u8).collect();
        let requests = super::write_memory_requests(0x100, &bytes);
        assert_eq!(requests.len(), 3);
        assert!(requests[0].starts_with("M100,600:000102"));
        assert!(requests[1].starts_with("M700,600:"));
        assert!(requests[2].starts_with("Md00,3a0:"));
        assert!(requests.iter().all(|r| r.len() < 4096));
        assert_eq!(
            super::write_registers_request(&[1, 0, 0, 0xff]),
            "G010000ff"
        );
    }

    use super::*;
    use tokio::io::duplex;

    #[test]
    fn checksums_and_frames() {
        assert_eq!(checksum(b""), 0);
        assert_eq!(checksum(b"g"), 0x67);
        assert_eq!(frame(b"g"), b"$g#67");
        assert_eq!(frame(b"qSupported"), b"$qSupported#37");
        // `$ # } *` are escaped and the checksum covers the escaped bytes.
        assert_eq!(frame(b"a#b"), b"$a}\x03b#43");
        assert_eq!(frame(b"M0,1:7d"), b"$M0,1:7d#af".to_vec());
    }

    #[test]
    fn decoder_splits_acks_packets_and_noise() {
        let mut d = Decoder::default();
        d.push(b"+$OK#9a");
        assert_eq!(d.next_item(), Some(Item::Ack));
        assert_eq!(d.next_item(), Some(Item::Packet(b"OK".to_vec())));
        assert_eq!(d.next_item(), None);
        // A packet arriving in pieces, after noise.
        d.push(b"xx$T05thre");
        assert_eq!(d.next_item(), None);
        d.push(b"ad:01;#");
        assert_eq!(d.next_item(), None);
        d.push(b"07-");
        assert_eq!(d.next_item(), Some(Item::Packet(b"T05thread:01;".to_vec())));
        assert_eq!(d.next_item(), Some(Item::Nack));
        d.push(b"$OK#00");
        assert_eq!(d.next_item(), Some(Item::Corrupt));
    }

    #[test]
    fn escapes_and_run_lengths_are_undone() {
        let framed = frame(b"a}b$c");
        let mut d = Decoder::default();
        d.push(&framed);
        assert_eq!(d.next_item(), Some(Item::Packet(b"a}b$c".to_vec())));
        // "0* " is 0 followed by 3 more (b' ' = 32, 32 - 29 = 3).
        let body = b"0* 1";
        let mut packet = vec![b'$'];
        packet.extend_from_slice(body);
        packet.extend_from_slice(format!("#{:02x}", checksum(body)).as_bytes());
        d.push(&packet);
        assert_eq!(d.next_item(), Some(Item::Packet(b"00001".to_vec())));
    }

    #[test]
    fn hex_words_and_stop_replies() {
        assert_eq!(encode_hex(&[0xef, 0xf3, 0x09, 0x80]), "eff30980");
        assert_eq!(decode_hex(b"eff3"), Some(vec![0xef, 0xf3]));
        assert_eq!(decode_hex(b"ef3"), None);
        assert_eq!(decode_hex(b"zz"), None);
        assert_eq!(
            words_le(b"78563412fdffffff"),
            Some(vec![0x1234_5678, 0xffff_fffd])
        );
        assert_eq!(parse_stop(b"T05thread:p01.01;"), Some(StopReply::Signal(5)));
        assert_eq!(parse_stop(b"S02"), Some(StopReply::Signal(2)));
        assert_eq!(parse_stop(b"W2a;process:1"), Some(StopReply::Exited(42)));
        assert_eq!(parse_stop(b"X09"), Some(StopReply::Terminated(9)));
        assert_eq!(parse_stop(b"OK"), None);
        assert_eq!(parse_stop(b""), None);
        // QEMU's reply to a store that hit a write watchpoint.
        assert_eq!(
            watch_hit(b"T05watch:e000ed08;thread:p01.01;"),
            Some(0xE000_ED08)
        );
        assert_eq!(watch_hit(b"T05awatch:20000100;"), Some(0x2000_0100));
        assert_eq!(watch_hit(b"T05thread:p01.01;"), None);
        assert_eq!(watch_hit(b"S05"), None);
        assert_eq!(watch_hit(b"T05watch:zz;"), None);
    }

    // QEMU 7.2's description of an M-profile core: the core registers, no system registers.
    const TARGET: &str = r#"<?xml version="1.0"?><!DOCTYPE target SYSTEM "gdb-target.dtd"><target><architecture>arm</architecture><xi:include href="arm-m-profile.xml"/><xi:include href="system-registers.xml"/></target>"#;
    const M_PROFILE: &str = r#"<feature name="org.gnu.gdb.arm.m-profile">
  <reg name="r0" bitsize="32"/>
  <reg name="r1" bitsize="32"/>
  <reg name="sp" bitsize="32" type="data_ptr"/>
  <reg name="lr" bitsize="32"/>
  <reg name="pc" bitsize="32" type="code_ptr"/>
  <reg name="xpsr" bitsize="32" regnum="25"/>
</feature>"#;
    // The shape later QEMUs add for M-profile system registers.
    const M_SYSTEM: &str = r#"<feature name="org.gnu.gdb.arm.m-system"><reg name="msp" bitsize="32" regnum="26"/><reg name="PSP" bitsize="32"/></feature>"#;

    #[test]
    fn register_numbers_follow_regnum_and_order() {
        assert_eq!(
            includes(TARGET),
            vec!["arm-m-profile.xml", "system-registers.xml"]
        );
        let map = register_numbers([TARGET, M_PROFILE]);
        assert_eq!(map["r0"], 0);
        assert_eq!(map["pc"], 4);
        assert_eq!(map["xpsr"], 25);
        assert!(!map.contains_key("psp"));
        let map = register_numbers([M_PROFILE, M_SYSTEM]);
        assert_eq!(map["msp"], 26);
        assert_eq!(map["psp"], 27);
    }

    /// A scripted server on the other end of an in-memory pipe.
    async fn serve(
        mut end: tokio::io::DuplexStream,
        script: Vec<(&'static str, String)>,
    ) -> Vec<String> {
        let mut d = Decoder::default();
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
        let mut script = script.into_iter();
        loop {
            let Some(item) = d.next_item() else {
                let n = end.read(&mut buf).await.unwrap();
                if n == 0 {
                    return seen;
                }
                d.push(&buf[..n]);
                continue;
            };
            if let Item::Packet(p) = item {
                let text = String::from_utf8(p).unwrap();
                let Some((expect, reply)) = script.next() else {
                    return seen;
                };
                assert!(text.starts_with(expect), "{text} vs {expect}");
                seen.push(text);
                end.write_all(b"+").await.unwrap();
                end.write_all(&frame(reply.as_bytes())).await.unwrap();
            }
        }
    }

    #[tokio::test]
    async fn client_reads_registers_memory_and_the_description() {
        let (a, b) = duplex(4096);
        let server = tokio::spawn(serve(
            b,
            vec![
                ("qXfer:features:read:target.xml:0,", format!("l{TARGET}")),
                (
                    "qXfer:features:read:arm-m-profile.xml:0,",
                    "m<feature>".into(),
                ),
                (
                    "qXfer:features:read:arm-m-profile.xml:9,",
                    "l<reg name=\"r0\"/></feature>".into(),
                ),
                (
                    "qXfer:features:read:system-registers.xml:0,",
                    "l<feature/>".into(),
                ),
                ("m20000000,8", "0100000002000000".into()),
                ("m20010000,4", "E14".into()),
                ("p19", "00000061".into()),
                ("Z0,29c,2", "OK".into()),
                ("M0,2:fee7", "OK".into()),
            ],
        ));
        let mut c = Client::new(a, Duration::from_secs(2));
        let map = c.register_map().await.unwrap();
        assert_eq!(map["r0"], 0);
        assert_eq!(c.read_words(0x2000_0000, 2).await.unwrap(), vec![1, 2]);
        let err = c.read_memory(0x2001_0000, 4).await.unwrap_err();
        assert!(
            matches!(err, RspError::Refused { ref code, .. } if code == "14"),
            "{err}"
        );
        assert_eq!(c.read_register(25).await.unwrap(), 0x6100_0000);
        c.set_breakpoint(0x29c).await.unwrap();
        c.write_memory(0, &[0xfe, 0xe7]).await.unwrap();
        drop(c);
        assert_eq!(server.await.unwrap().len(), 9);
    }

    #[tokio::test]
    async fn a_silent_server_times_out() {
        let (a, _b) = duplex(64);
        let mut c = Client::new(a, Duration::from_millis(50));
        let err = c.request("g").await.unwrap_err();
        assert!(matches!(err, RspError::Timeout { .. }), "{err}");
        assert!(err.to_string().contains("g"), "{err}");
    }
}
