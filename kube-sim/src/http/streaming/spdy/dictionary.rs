//! The preset zlib dictionary of SPDY/3 header blocks.
//!
//! Both peers prime their header compressor and decompressor with it, so the decompressor must use exactly
//! these 1423 bytes. The protocol defines it as 4-byte big-endian length-prefixed header names and common
//! values, followed by unprefixed status lines, dates and media types; it is built here in that shape.

use std::sync::OnceLock;

/// The length-prefixed part, in the protocol's order.
const PREFIXED: &[&str] = &[
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
];

/// The unprefixed tail, in the protocol's order.
const TAIL: &[&str] = &[
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505",
    "203 Non-Authoritative Information",
    "204 No Content",
    "301 Moved Permanently",
    "400 Bad Request",
    "401 Unauthorized",
    "403 Forbidden",
    "404 Not Found",
    "500 Internal Server Error",
    "501 Not Implemented",
    "503 Service Unavailable",
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT",
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,",
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.",
];

/// The SPDY/3 header dictionary.
pub(super) fn header_dictionary() -> &'static [u8] {
    static DICTIONARY: OnceLock<Vec<u8>> = OnceLock::new();
    DICTIONARY.get_or_init(|| {
        let mut out = Vec::with_capacity(1423);
        for word in PREFIXED {
            out.extend_from_slice(&u32::try_from(word.len()).unwrap_or_default().to_be_bytes());
            out.extend_from_slice(word.as_bytes());
        }
        for part in TAIL {
            out.extend_from_slice(part.as_bytes());
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Adler-32 as zlib computes it, to compare with the dictionary id peers put in their zlib headers.
    fn adler32(data: &[u8]) -> u32 {
        let (mut a, mut b) = (1u32, 0u32);
        for &byte in data {
            a = (a + u32::from(byte)) % 65521;
            b = (b + a) % 65521;
        }
        (b << 16) | a
    }

    #[test]
    fn dictionary_has_the_protocol_length_and_id() {
        let dict = header_dictionary();
        assert_eq!(dict.len(), 1423);
        assert!(dict.starts_with(b"\x00\x00\x00\x07options\x00\x00\x00\x04head"));
        assert!(dict.ends_with(b"utf-,*,enq=0."));
        // The dictionary id Go's SPDY framer writes in the zlib header of its first header block.
        assert_eq!(adler32(dict), 0xe3c6a7c2);
    }
}
