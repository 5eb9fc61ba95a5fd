//! The RFC 2217 console of a place whose NetworkSerialPort says `protocol: rfc2217` (ser2net's
//! `telnet(rfc2217)` accepter, what labgrid's exporter serves USB serial adapters with): what
//! fwfix needs to read it, and no more.
//!
//! Supported: on connecting, fwfix offers BINARY both ways, asks the server to suppress go-ahead,
//! takes on COM-PORT-OPTION and sets the line (the place's `speed`, 8 data bits, no parity, 1 stop
//! bit, no flow control); the server's output then has its telnet commands removed (`IAC IAC` is
//! a 0xFF byte; option requests fwfix did not make are refused; subnegotiations, such as the
//! server's answers and line/modem state notifications, are read past). Not supported: modem
//! lines (DTR/RTS), breaks, flow-control suspend, and writing to the target (nothing fwfix sends
//! on a labgrid console).

use crate::dut::DutError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const IAC: u8 = 255;
const DONT: u8 = 254;
const DO: u8 = 253;
const WONT: u8 = 252;
const WILL: u8 = 251;
const SB: u8 = 250;
const SE: u8 = 240;
const BINARY: u8 = 0;
const SGA: u8 = 3;
const COM_PORT: u8 = 44;

/// COM-PORT-OPTION client commands (RFC 2217, section 3).
const SET_BAUDRATE: u8 = 1;
const SET_DATASIZE: u8 = 2;
const SET_PARITY: u8 = 3;
const SET_STOPSIZE: u8 = 4;
const SET_CONTROL: u8 = 5;

/// What the client sends first: the options it wants, then the line settings for `baud` 8N1
/// without flow control.
pub fn opening(baud: u32) -> Vec<u8> {
    let mut out = vec![
        IAC, WILL, BINARY, IAC, DO, BINARY, IAC, DO, SGA, IAC, WILL, COM_PORT,
    ];
    let mut sub = |command: u8, value: &[u8]| {
        out.extend([IAC, SB, COM_PORT, command]);
        for &b in value {
            out.push(b);
            if b == IAC {
                out.push(IAC);
            }
        }
        out.extend([IAC, SE]);
    };
    sub(SET_BAUDRATE, &baud.to_be_bytes());
    sub(SET_DATASIZE, &[8]);
    sub(SET_PARITY, &[1]);
    sub(SET_STOPSIZE, &[1]);
    sub(SET_CONTROL, &[1]);
    out
}

/// Where the telnet reader is between two bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Data,
    Iac,
    /// After WILL, WONT, DO or DONT: the option byte comes next.
    Option(u8),
    Sub,
    SubIac,
}

/// Separates a server's data from its telnet commands, across reads.
#[derive(Debug, Default)]
pub struct Filter {
    state: State,
}

impl Filter {
    /// Appends the data bytes of `input` to `data` and the answers fwfix owes the server to
    /// `reply`.
    pub fn feed(&mut self, input: &[u8], data: &mut Vec<u8>, reply: &mut Vec<u8>) {
        for &b in input {
            self.state = match (self.state, b) {
                (State::Data, IAC) => State::Iac,
                (State::Data, b) => {
                    data.push(b);
                    State::Data
                }
                (State::Iac, IAC) => {
                    data.push(IAC);
                    State::Data
                }
                (State::Iac, SB) => State::Sub,
                (State::Iac, c @ (WILL | WONT | DO | DONT)) => State::Option(c),
                // NOP, GA, and the other two-byte commands carry nothing for a reader.
                (State::Iac, _) => State::Data,
                (State::Option(command), option) => {
                    match command {
                        DO if !matches!(option, BINARY | COM_PORT) => {
                            reply.extend([IAC, WONT, option])
                        }
                        WILL if !matches!(option, BINARY | SGA | COM_PORT) => {
                            reply.extend([IAC, DONT, option])
                        }
                        _ => {}
                    }
                    State::Data
                }
                (State::Sub, IAC) => State::SubIac,
                (State::Sub, _) => State::Sub,
                (State::SubIac, SE) => State::Data,
                (State::SubIac, _) => State::Sub,
            };
        }
    }
}

/// Opens `host:port` as an RFC 2217 console at `baud`: the negotiation is sent, and the returned
/// reader yields the target's bytes only (a task filters the stream into it, and ends with it).
pub async fn open(
    stream: TcpStream,
    baud: u32,
    shown: &str,
) -> Result<Box<dyn tokio::io::AsyncRead + Send + Unpin>, DutError> {
    let (mut from_server, mut to_server) = stream.into_split();
    to_server
        .write_all(&opening(baud))
        .await
        .map_err(|source| DutError::Io {
            doing: format!("negotiating RFC 2217 with {shown}"),
            source,
        })?;
    let (reader, mut pipe) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let mut filter = Filter::default();
        let mut buf = vec![0u8; 4096];
        loop {
            let n = match from_server.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let (mut data, mut reply) = (Vec::new(), Vec::new());
            filter.feed(&buf[..n], &mut data, &mut reply);
            if !reply.is_empty() && to_server.write_all(&reply).await.is_err() {
                return;
            }
            if pipe.write_all(&data).await.is_err() {
                return;
            }
        }
    });
    Ok(Box::new(reader))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_opening_sets_the_line_and_escapes_0xff_in_values() {
        let o = opening(115_200);
        assert_eq!(
            &o[..12],
            &[IAC, WILL, BINARY, IAC, DO, BINARY, IAC, DO, SGA, IAC, WILL, COM_PORT]
        );
        let baud = [IAC, SB, COM_PORT, SET_BAUDRATE, 0, 1, 0xC2, 0, IAC, SE];
        assert_eq!(&o[12..22], &baud);
        assert!(o.ends_with(&[IAC, SB, COM_PORT, SET_CONTROL, 1, IAC, SE]));
        // 0x0000FFFF: both 0xFF bytes doubled inside the subnegotiation.
        let odd = opening(0xFFFF);
        assert_eq!(
            &odd[12..24],
            &[
                IAC,
                SB,
                COM_PORT,
                SET_BAUDRATE,
                0,
                0,
                IAC,
                IAC,
                IAC,
                IAC,
                IAC,
                SE
            ]
        );
    }

    #[test]
    fn data_comes_out_without_commands_even_split_across_reads() {
        let stream = [
            b"boot".as_slice(),
            &[IAC, DO, COM_PORT, IAC, WILL, SGA, IAC, DO, 24],
            &[IAC, SB, COM_PORT, 101, 0, 1, 0xC2],
            &[0, IAC, SE, b'!', IAC, IAC, b'\r', b'\n', IAC, 241],
            b"ok\r\n",
        ]
        .concat();
        for split in 0..stream.len() {
            let mut f = Filter::default();
            let (mut data, mut reply) = (Vec::new(), Vec::new());
            f.feed(&stream[..split], &mut data, &mut reply);
            f.feed(&stream[split..], &mut data, &mut reply);
            assert_eq!(data, b"boot!\xff\r\nok\r\n", "split at {split}");
            // Only the terminal-type request (24) fwfix did not ask for is refused.
            assert_eq!(reply, vec![IAC, WONT, 24], "split at {split}");
        }
    }
}
