//! SPDY/3.1 framing: the 8-byte frame header, the control frames a port-forward server reads and writes, and
//! data frames. Header blocks are handled by [`super::headers`].

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The protocol version in every control frame.
const VERSION: u16 = 3;
/// Control frame types.
pub(super) const SYN_STREAM: u16 = 1;
/// Answer to a `SYN_STREAM`.
pub(super) const SYN_REPLY: u16 = 2;
/// Abort of one stream.
pub(super) const RST_STREAM: u16 = 3;
/// Liveness probe, echoed back.
pub(super) const PING: u16 = 6;
/// End of the session.
pub(super) const GOAWAY: u16 = 7;
/// `FLAG_FIN`: the sender's last frame on the stream.
pub(super) const FLAG_FIN: u8 = 0x01;
/// `RST_STREAM` status `CANCEL`.
pub(super) const STATUS_CANCEL: u32 = 5;
/// Largest frame payload accepted from a peer (the length field is 24 bits; header blocks of a port-forward
/// stream are tiny, data frames are at most 16 MiB by construction).
const MAX_PAYLOAD: usize = (1 << 24) - 1;

/// One frame as read from the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Frame {
    /// A control frame: its type, flags and payload.
    Control {
        /// Frame type (`SYN_STREAM`, `PING`, ...).
        kind: u16,
        /// Flags byte.
        flags: u8,
        /// Payload after the 8-byte header.
        payload: Bytes,
    },
    /// A data frame of a stream.
    Data {
        /// The stream id.
        stream: u32,
        /// Flags byte (`FLAG_FIN`).
        flags: u8,
        /// The bytes carried.
        payload: Bytes,
    },
}

/// Reads the next frame; `Ok(None)` at a clean end of the connection.
pub(super) async fn read<R: AsyncRead + Unpin>(io: &mut R) -> std::io::Result<Option<Frame>> {
    let mut head = [0u8; 8];
    match io.read_exact(&mut head).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let flags = head[4];
    let len = usize::from(head[5]) << 16 | usize::from(head[6]) << 8 | usize::from(head[7]);
    if len > MAX_PAYLOAD {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "SPDY frame too large",
        ));
    }
    let mut payload = vec![0u8; len];
    io.read_exact(&mut payload).await?;
    let payload = Bytes::from(payload);
    if head[0] & 0x80 != 0 {
        let version = u16::from_be_bytes([head[0] & 0x7f, head[1]]);
        if version != VERSION {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("unsupported SPDY version {version}"),
            ));
        }
        Ok(Some(Frame::Control {
            kind: u16::from_be_bytes([head[2], head[3]]),
            flags,
            payload,
        }))
    } else {
        let stream = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) & 0x7fff_ffff;
        Ok(Some(Frame::Data { stream, flags, payload }))
    }
}

/// The 24-bit length field; payloads are built here and never exceed it.
fn length_bytes(len: usize) -> [u8; 3] {
    let len = u32::try_from(len.min(MAX_PAYLOAD)).unwrap_or(0);
    let b = len.to_be_bytes();
    [b[1], b[2], b[3]]
}

/// Encodes a control frame.
pub(super) fn control(kind: u16, flags: u8, payload: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(8 + payload.len());
    out.put_u16(0x8000 | VERSION);
    out.put_u16(kind);
    out.put_u8(flags);
    out.put_slice(&length_bytes(payload.len()));
    out.put_slice(payload);
    out.freeze()
}

/// Encodes a data frame.
pub(super) fn data(stream: u32, flags: u8, payload: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(8 + payload.len());
    out.put_u32(stream & 0x7fff_ffff);
    out.put_u8(flags);
    out.put_slice(&length_bytes(payload.len()));
    out.put_slice(payload);
    out.freeze()
}

/// A `SYN_REPLY` accepting `stream` with an already compressed header block.
pub(super) fn syn_reply(stream: u32, header_block: &[u8]) -> Bytes {
    let mut payload = Vec::with_capacity(4 + header_block.len());
    payload.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    payload.extend_from_slice(header_block);
    control(SYN_REPLY, 0, &payload)
}

/// A `RST_STREAM` for `stream` with `status`.
pub(super) fn rst_stream(stream: u32, status: u32) -> Bytes {
    let mut payload = [0u8; 8];
    payload[..4].copy_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    payload[4..].copy_from_slice(&status.to_be_bytes());
    control(RST_STREAM, 0, &payload)
}

/// The first 31-bit stream id of a control payload (`SYN_STREAM`, `RST_STREAM`).
pub(super) fn stream_id(payload: &[u8]) -> Option<u32> {
    let b: [u8; 4] = payload.get(..4)?.try_into().ok()?;
    Some(u32::from_be_bytes(b) & 0x7fff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip() {
        let mut wire = Vec::new();
        wire.extend_from_slice(&control(PING, 0, &7u32.to_be_bytes()));
        wire.extend_from_slice(&data(5, FLAG_FIN, b"hello"));
        let mut io = wire.as_slice();
        assert_eq!(
            read(&mut io).await.unwrap(),
            Some(Frame::Control {
                kind: PING,
                flags: 0,
                payload: Bytes::from_static(&[0, 0, 0, 7])
            })
        );
        assert_eq!(
            read(&mut io).await.unwrap(),
            Some(Frame::Data {
                stream: 5,
                flags: FLAG_FIN,
                payload: Bytes::from_static(b"hello")
            })
        );
        assert_eq!(read(&mut io).await.unwrap(), None);
    }

    #[tokio::test]
    async fn other_versions_are_refused() {
        let mut frame = control(PING, 0, &[0, 0, 0, 1]).to_vec();
        frame[1] = 2;
        assert!(read(&mut frame.as_slice()).await.is_err());
    }

    #[test]
    fn rst_stream_names_stream_and_status() {
        let f = rst_stream(9, STATUS_CANCEL);
        assert_eq!(&f[..8], &[0x80, 3, 0, 3, 0, 0, 0, 8]);
        assert_eq!(stream_id(&f[8..]), Some(9));
        assert_eq!(&f[12..], &STATUS_CANCEL.to_be_bytes());
    }
}
