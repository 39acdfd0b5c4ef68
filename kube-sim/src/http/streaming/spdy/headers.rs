//! SPDY/3 header blocks: name/value pairs compressed by one zlib stream per direction and connection, both
//! primed with the protocol's dictionary.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::dictionary::header_dictionary;

/// Why a header block could not be read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HeaderError {
    /// The zlib stream is corrupt or uses another dictionary.
    #[error("SPDY header block: {0}")]
    Zlib(String),
    /// The decompressed block is not a well-formed list of pairs.
    #[error("SPDY header block is malformed")]
    Malformed,
}

/// Decompressed header pairs, names lowercased as SPDY/3 requires.
pub(super) type Headers = Vec<(String, String)>;

/// The value of header `name` (case-insensitive).
pub(super) fn get<'h>(headers: &'h Headers, name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The header compression state of one connection.
pub(super) struct HeaderCodec {
    inflate: Decompress,
    deflate: Compress,
}

impl std::fmt::Debug for HeaderCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeaderCodec").finish_non_exhaustive()
    }
}

impl HeaderCodec {
    /// A codec for a new connection.
    pub(super) fn new() -> Result<Self, HeaderError> {
        let mut deflate = Compress::new(Compression::default(), true);
        deflate
            .set_dictionary(header_dictionary())
            .map_err(|e| HeaderError::Zlib(e.to_string()))?;
        Ok(Self {
            inflate: Decompress::new(true),
            deflate,
        })
    }

    /// Decompresses and parses one header block received from the peer.
    pub(super) fn decode(&mut self, block: &[u8]) -> Result<Headers, HeaderError> {
        let plain = self.inflate_block(block)?;
        parse_pairs(&plain).ok_or(HeaderError::Malformed)
    }

    /// Serializes and compresses `headers` into a header block for the peer.
    pub(super) fn encode(&mut self, headers: &[(&str, &str)]) -> Result<Vec<u8>, HeaderError> {
        let plain = serialize_pairs(headers);
        let mut out = Vec::with_capacity(plain.len() + 128);
        let start = self.deflate.total_in();
        loop {
            let rest = plain.get(offset(start, self.deflate.total_in())..).unwrap_or_default();
            self.deflate
                .compress_vec(rest, &mut out, FlushCompress::Sync)
                .map_err(|e| HeaderError::Zlib(e.to_string()))?;
            // With a sync flush, spare room left in the output means the block is complete.
            if out.len() < out.capacity() {
                return Ok(out);
            }
            out.reserve(out.capacity());
        }
    }

    fn inflate_block(&mut self, block: &[u8]) -> Result<Vec<u8>, HeaderError> {
        let mut out = Vec::with_capacity(block.len() * 4 + 256);
        let start = self.inflate.total_in();
        loop {
            let consumed = offset(start, self.inflate.total_in());
            let rest = block.get(consumed..).unwrap_or_default();
            let produced = out.len();
            match self.inflate.decompress_vec(rest, &mut out, FlushDecompress::Sync) {
                Ok(Status::StreamEnd) => return Ok(out),
                Ok(_) => {}
                Err(e) if e.needs_dictionary().is_some() => {
                    self.inflate
                        .set_dictionary(header_dictionary())
                        .map_err(|e| HeaderError::Zlib(e.to_string()))?;
                    continue;
                }
                Err(e) => return Err(HeaderError::Zlib(e.to_string())),
            }
            let now_consumed = offset(start, self.inflate.total_in());
            if out.len() == out.capacity() {
                out.reserve(out.capacity());
            } else if now_consumed >= block.len() {
                return Ok(out);
            } else if now_consumed == consumed && out.len() == produced {
                return Err(HeaderError::Zlib("truncated header block".into()));
            }
        }
    }
}

/// Bytes consumed since `start` (totals of one zlib stream).
fn offset(start: u64, now: u64) -> usize {
    usize::try_from(now.saturating_sub(start)).unwrap_or(usize::MAX)
}

/// `count`, then `len name len value` per pair, all lengths 32-bit big-endian.
fn serialize_pairs(headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    let len = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_be_bytes();
    out.extend_from_slice(&len(headers.len()));
    for (name, value) in headers {
        out.extend_from_slice(&len(name.len()));
        out.extend_from_slice(name.to_ascii_lowercase().as_bytes());
        out.extend_from_slice(&len(value.len()));
        out.extend_from_slice(value.as_bytes());
    }
    out
}

fn parse_pairs(mut block: &[u8]) -> Option<Headers> {
    fn take<'a>(block: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (block.get(..n)?, block.get(n..)?);
        *block = rest;
        Some(head)
    }
    fn take_len(block: &mut &[u8]) -> Option<usize> {
        let b: [u8; 4] = take(block, 4)?.try_into().ok()?;
        usize::try_from(u32::from_be_bytes(b)).ok()
    }
    let count = take_len(&mut block)?;
    let mut out = Vec::with_capacity(count.min(64));
    for _ in 0..count {
        let n = take_len(&mut block)?;
        let name = String::from_utf8_lossy(take(&mut block, n)?).to_ascii_lowercase();
        let n = take_len(&mut block)?;
        let value = String::from_utf8_lossy(take(&mut block, n)?).into_owned();
        out.push((name, value));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_round_trip_through_one_stream_per_direction() {
        let mut client = HeaderCodec::new().unwrap();
        let mut server = HeaderCodec::new().unwrap();
        let first = client
            .encode(&[("streamType", "error"), ("port", "8265"), ("requestID", "0")])
            .unwrap();
        let second = client.encode(&[("streamType", "data"), ("port", "8265")]).unwrap();
        assert_eq!(
            server.decode(&first).unwrap(),
            vec![
                ("streamtype".to_string(), "error".to_string()),
                ("port".to_string(), "8265".to_string()),
                ("requestid".to_string(), "0".to_string())
            ]
        );
        let second = server.decode(&second).unwrap();
        assert_eq!(get(&second, "streamType"), Some("data"));
        let empty = server.encode(&[]).unwrap();
        assert_eq!(client.decode(&empty).unwrap(), Vec::new());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut codec = HeaderCodec::new().unwrap();
        assert!(codec.decode(b"\x78\x9c\xff\xff\xff\xff").is_err());
        assert!(parse_pairs(&[0, 0, 0, 2, 0, 0, 0, 9]).is_none());
    }
}
