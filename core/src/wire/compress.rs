//! Body codecs: lz4 raw block (the default everywhere), zstd single frame, zlib ("deflate")
//! and identity (docs/protocol.md §7).
//!
//! Decoding is always given the `x-log-bodyrawsize` the sender declared and refuses any
//! mismatch, as the service does; it never allocates more than that size (capped by
//! [`MAX_RAW_BODY_BYTES`]), so a lying header cannot make the decoder balloon. Pure functions,
//! any thread.

use std::io::Read;

use crate::wire::limits::MAX_RAW_BODY_BYTES;

/// How a request body is compressed; the wire value is the `x-log-compresstype` header.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// No header; the body is the raw protobuf.
    None,
    /// `lz4`: one raw LZ4 block, without frame or size prefix.
    #[default]
    Lz4,
    /// `zstd`: one zstd frame.
    Zstd,
    /// `deflate`: a zlib stream (RFC 1950).
    Deflate,
}

/// zstd level used for request bodies: level 1, as every SDK that speaks zstd uses.
pub const ZSTD_LEVEL: i32 = 1;
/// zlib level used for request bodies (PHP and Java SDKs use 6; 1 is much faster for logs).
pub const DEFLATE_LEVEL: u32 = 1;

/// A body could not be encoded or decoded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum CodecError {
    /// The `x-log-compresstype` value is not one the service knows.
    #[error("unknown compression type {0:?} (expected lz4, zstd or deflate)")]
    UnknownType(String),
    /// The declared raw size is above the service's limit.
    #[error("x-log-bodyrawsize {declared} exceeds the limit of {limit} bytes")]
    RawSizeTooLarge {
        /// The size the sender declared.
        declared: usize,
        /// The service's limit.
        limit: usize,
    },
    /// The body is not valid data for its codec.
    #[error("{codec} body does not decode: {reason}")]
    Corrupt {
        /// The codec's wire name.
        codec: &'static str,
        /// What the decoder reported.
        reason: String,
    },
    /// The body decodes, but not to the declared number of bytes.
    #[error("{codec} body decodes to {actual} bytes but x-log-bodyrawsize says {declared}")]
    SizeMismatch {
        /// The codec's wire name.
        codec: &'static str,
        /// The size the sender declared.
        declared: usize,
        /// The size it decoded to (or a lower bound when it overflowed).
        actual: usize,
    },
    /// The encoder failed (only zstd and zlib can, on allocation failure).
    #[error("{codec} encoder failed: {reason}")]
    Encode {
        /// The codec's wire name.
        codec: &'static str,
        /// What the encoder reported.
        reason: String,
    },
}

impl Compression {
    /// The `x-log-compresstype` value, or `None` when the header is omitted.
    pub fn header_value(self) -> Option<&'static str> {
        match self {
            Compression::None => None,
            Compression::Lz4 => Some("lz4"),
            Compression::Zstd => Some("zstd"),
            Compression::Deflate => Some("deflate"),
        }
    }

    /// A short name for reports and errors (`none` for identity).
    pub fn name(self) -> &'static str {
        self.header_value().unwrap_or("none")
    }

    /// Parses an `x-log-compresstype` header (absent or empty means none).
    pub fn from_header(value: Option<&str>) -> Result<Self, CodecError> {
        match value.map(str::trim) {
            None | Some("") => Ok(Compression::None),
            Some(v) if v.eq_ignore_ascii_case("lz4") => Ok(Compression::Lz4),
            Some(v) if v.eq_ignore_ascii_case("zstd") => Ok(Compression::Zstd),
            Some(v) if v.eq_ignore_ascii_case("deflate") => Ok(Compression::Deflate),
            Some(v) => Err(CodecError::UnknownType(v.to_owned())),
        }
    }

    /// Parses a user-facing name: `none`, `lz4`, `zstd` or `deflate`.
    pub fn from_name(name: &str) -> Result<Self, CodecError> {
        if name.eq_ignore_ascii_case("none") {
            return Ok(Compression::None);
        }
        match Compression::from_header(Some(name))? {
            Compression::None => Err(CodecError::UnknownType(name.to_owned())),
            other => Ok(other),
        }
    }
}

/// Encodes `raw` into a fresh buffer.
pub fn compress(codec: Compression, raw: &[u8]) -> Result<Vec<u8>, CodecError> {
    match codec {
        Compression::None => Ok(raw.to_vec()),
        Compression::Lz4 => Ok(lz4_flex::block::compress(raw)),
        Compression::Zstd => {
            zstd::bulk::compress(raw, ZSTD_LEVEL).map_err(|e| CodecError::Encode {
                codec: "zstd",
                reason: e.to_string(),
            })
        }
        Compression::Deflate => {
            let mut encoder =
                flate2::read::ZlibEncoder::new(raw, flate2::Compression::new(DEFLATE_LEVEL));
            let mut out = Vec::with_capacity(raw.len() / 2 + 64);
            encoder
                .read_to_end(&mut out)
                .map_err(|e| CodecError::Encode {
                    codec: "deflate",
                    reason: e.to_string(),
                })?;
            Ok(out)
        }
    }
}

/// A reusable working area for compressing bodies: anonymous memory, mapped on first use and
/// remapped larger when a bigger body needs it. Its pages start as the kernel's shared zero page,
/// so only the pages a body actually fills become resident: a batch of logs that compresses to
/// a hundredth of its size keeps a hundredth of the codec's output bound in memory, however
/// large the bound. (A heap buffer would have to be zero-filled to the whole bound first.)
#[derive(Default)]
pub struct CompressArea {
    map: Option<memmap2::MmapMut>,
}

impl CompressArea {
    /// An empty area; nothing is mapped until the first body.
    pub const fn new() -> Self {
        CompressArea { map: None }
    }

    /// At least `len` writable bytes.
    fn slice(&mut self, len: usize) -> Result<&mut [u8], CodecError> {
        let map = match self.map.take() {
            Some(map) if map.len() >= len => self.map.insert(map),
            _ => {
                // Whole MiBs, so slightly larger batches do not remap every time.
                let size = len.max(1).div_ceil(1 << 20) << 20;
                let map = memmap2::MmapMut::map_anon(size).map_err(|e| CodecError::Encode {
                    codec: "working area",
                    reason: e.to_string(),
                })?;
                self.map.insert(map)
            }
        };
        Ok(&mut map[..len])
    }
}

/// Encodes `raw` into an exact-size buffer, using `area` as the working area (the producer
/// keeps one per I/O thread), so a steady stream of batches makes no large allocation.
pub fn compress_with_area(
    codec: Compression,
    raw: &[u8],
    area: &mut CompressArea,
) -> Result<Vec<u8>, CodecError> {
    match codec {
        Compression::Lz4 => {
            let out = area.slice(lz4_flex::block::get_maximum_output_size(raw.len()))?;
            let n = lz4_flex::block::compress_into(raw, out).map_err(|e| CodecError::Encode {
                codec: "lz4",
                reason: e.to_string(),
            })?;
            Ok(out[..n].to_vec())
        }
        Compression::Zstd => {
            let out = area.slice(zstd::zstd_safe::compress_bound(raw.len()))?;
            let n = zstd::bulk::compress_to_buffer(raw, out, ZSTD_LEVEL).map_err(|e| {
                CodecError::Encode {
                    codec: "zstd",
                    reason: e.to_string(),
                }
            })?;
            Ok(out[..n].to_vec())
        }
        other => compress(other, raw),
    }
}

/// Decodes `body` into exactly `raw_size` bytes, or fails.
pub fn decompress(codec: Compression, body: &[u8], raw_size: usize) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::new();
    let n = decompress_into(codec, body, raw_size, &mut out)?.len();
    out.truncate(n);
    Ok(out)
}

/// Decodes `body` into exactly `raw_size` bytes at the start of `scratch`, or fails; returns
/// the decoded bytes. The scratch keeps its length between calls (bytes past the returned
/// slice are left over from earlier calls), so a reader that decodes a steady stream of bodies
/// touches no fresh memory and zeroes nothing after the first.
pub fn decompress_into<'s>(
    codec: Compression,
    body: &[u8],
    raw_size: usize,
    scratch: &'s mut Vec<u8>,
) -> Result<&'s [u8], CodecError> {
    if raw_size > MAX_RAW_BODY_BYTES {
        return Err(CodecError::RawSizeTooLarge {
            declared: raw_size,
            limit: MAX_RAW_BODY_BYTES,
        });
    }
    let mismatch = |actual: usize| CodecError::SizeMismatch {
        codec: codec.name(),
        declared: raw_size,
        actual,
    };
    let written = match codec {
        Compression::None => {
            if body.len() != raw_size {
                return Err(mismatch(body.len()));
            }
            scratch.clear();
            scratch.extend_from_slice(body);
            body.len()
        }
        Compression::Lz4 => {
            if scratch.len() < raw_size {
                scratch.resize(raw_size, 0);
            }
            lz4_flex::block::decompress_into(body, &mut scratch[..raw_size]).map_err(
                |e| match e {
                    lz4_flex::block::DecompressError::OutputTooSmall { expected, .. } => {
                        mismatch(expected)
                    }
                    other => CodecError::Corrupt {
                        codec: "lz4",
                        reason: other.to_string(),
                    },
                },
            )?
        }
        Compression::Zstd => {
            // One byte of headroom tells "exactly raw_size" apart from "more than raw_size".
            scratch.clear();
            scratch.reserve(raw_size + 1);
            let mut decoder = zstd::bulk::Decompressor::new().map_err(|e| CodecError::Corrupt {
                codec: "zstd",
                reason: e.to_string(),
            })?;
            decoder
                .decompress_to_buffer(body, scratch)
                .map_err(|e| CodecError::Corrupt {
                    codec: "zstd",
                    reason: e.to_string(),
                })?
        }
        Compression::Deflate => {
            scratch.clear();
            flate2::read::ZlibDecoder::new(body)
                .take(raw_size as u64 + 1)
                .read_to_end(scratch)
                .map_err(|e| CodecError::Corrupt {
                    codec: "deflate",
                    reason: e.to_string(),
                })?
        }
    };
    if written != raw_size {
        return Err(mismatch(written));
    }
    Ok(&scratch[..raw_size])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::proto::{Log, LogContent, LogGroup};
    use prost::Message;

    const ALL: [Compression; 4] = [
        Compression::None,
        Compression::Lz4,
        Compression::Zstd,
        Compression::Deflate,
    ];

    fn round_trip(codec: Compression, raw: &[u8]) {
        let body = compress(codec, raw).expect("encode");
        let back = decompress(codec, &body, raw.len()).expect("decode");
        assert_eq!(back, raw, "{codec:?} round trip of {} bytes", raw.len());
    }

    #[test]
    fn incompressible_data_round_trips_in_every_codec() {
        let mut rng = fastrand::Rng::with_seed(7);
        let raw: Vec<u8> = (0..256 * 1024).map(|_| rng.u8(..)).collect();
        for codec in ALL {
            round_trip(codec, &raw);
        }
    }

    #[test]
    fn area_compression_matches_plain_compression() {
        let mut area = CompressArea::new();
        let small = b"abcabcabc hello hello hello".repeat(100);
        let mut rng = fastrand::Rng::with_seed(3);
        // Incompressible and larger than the first mapping: the area grows.
        let large: Vec<u8> = (0..3 << 20).map(|_| rng.u8(..)).collect();
        for (codec, raw) in ALL
            .iter()
            .flat_map(|&c| [(c, &small), (c, &large), (c, &small)])
        {
            let raw = raw.as_slice();
            let body = compress_with_area(codec, raw, &mut area).unwrap();
            assert_eq!(
                decompress(codec, &body, raw.len()).unwrap(),
                raw,
                "{codec:?}"
            );
            if matches!(codec, Compression::Lz4 | Compression::Zstd) {
                assert_eq!(
                    body.len(),
                    body.capacity(),
                    "exact size, the area keeps the bound"
                );
            }
        }
    }

    #[test]
    fn a_reused_decode_scratch_returns_exactly_each_body() {
        // Large, then small, then a wrong declared size: leftovers never leak into a result.
        let mut scratch = Vec::new();
        let large = b"0123456789abcdef".repeat(4096);
        let small = b"hello".repeat(7);
        for codec in ALL {
            for raw in [&large[..], &small[..], &large[..100]] {
                let body = compress(codec, raw).unwrap();
                let back = decompress_into(codec, &body, raw.len(), &mut scratch).unwrap();
                assert_eq!(back, raw, "{codec:?}");
                for declared in [raw.len() - 1, raw.len() + 1] {
                    assert!(
                        decompress_into(codec, &body, declared, &mut scratch).is_err(),
                        "{codec:?} declared {declared} for {}",
                        raw.len()
                    );
                }
            }
        }
    }

    #[test]
    fn an_empty_group_round_trips_in_every_codec() {
        let raw = LogGroup::default().encode_to_vec();
        assert!(raw.is_empty());
        for codec in ALL {
            round_trip(codec, &raw);
        }
    }

    #[test]
    fn a_maximum_size_group_round_trips_in_every_codec() {
        // Logs of 100 KiB values until the group is within 200 bytes of the 10 MiB raw limit.
        let value: String = "abcdefghijklmnopqrstuvwxyz0123456789"
            .chars()
            .cycle()
            .take(100 * 1024)
            .collect();
        let mut group = LogGroup {
            topic: Some("t".into()),
            source: Some("s".into()),
            ..Default::default()
        };
        while group.encoded_len() + 102_600 < MAX_RAW_BODY_BYTES {
            group.logs.push(Log {
                time: 1_704_067_200,
                contents: vec![LogContent {
                    key: "v".into(),
                    value: value.clone(),
                }],
                time_ns: None,
            });
        }
        let raw = group.encode_to_vec();
        assert!(raw.len() > MAX_RAW_BODY_BYTES - 200 * 1024 && raw.len() <= MAX_RAW_BODY_BYTES);
        for codec in ALL {
            round_trip(codec, &raw);
        }
    }

    #[test]
    fn a_lying_raw_size_is_refused_by_every_codec() {
        let raw = b"hello hello hello hello hello hello".repeat(10);
        for codec in ALL {
            let body = compress(codec, &raw).unwrap();
            for declared in [raw.len() - 1, raw.len() + 1] {
                let err = decompress(codec, &body, declared).unwrap_err();
                assert!(
                    matches!(
                        err,
                        CodecError::SizeMismatch { .. } | CodecError::Corrupt { .. }
                    ),
                    "{codec:?} declared {declared}: {err}"
                );
            }
        }
    }

    #[test]
    fn a_raw_size_above_the_limit_is_refused_before_allocating() {
        let err = decompress(Compression::Lz4, &[0], MAX_RAW_BODY_BYTES + 1).unwrap_err();
        assert_eq!(
            err,
            CodecError::RawSizeTooLarge {
                declared: MAX_RAW_BODY_BYTES + 1,
                limit: MAX_RAW_BODY_BYTES
            }
        );
    }

    #[test]
    fn corrupt_bodies_are_refused() {
        let raw = b"some log text, some log text, some log text".repeat(20);
        for codec in [Compression::Lz4, Compression::Zstd, Compression::Deflate] {
            let mut body = compress(codec, &raw).unwrap();
            body.truncate(body.len() / 2);
            assert!(
                decompress(codec, &body, raw.len()).is_err(),
                "{codec:?} truncated"
            );
        }
        // An LZ4 *frame* (magic 04 22 4D 18) is not a raw block.
        let frame = [0x04, 0x22, 0x4d, 0x18, 0x64, 0x40, 0xa7, 0, 0, 0, 0];
        assert!(decompress(Compression::Lz4, &frame, 100).is_err());
    }

    #[test]
    fn header_values_parse_both_ways() {
        for codec in ALL {
            assert_eq!(
                Compression::from_header(codec.header_value()).unwrap(),
                codec
            );
            assert_eq!(Compression::from_name(codec.name()).unwrap(), codec);
        }
        assert_eq!(
            Compression::from_header(Some("gzip")),
            Err(CodecError::UnknownType("gzip".into()))
        );
        assert!(Compression::from_name("").is_err());
    }

    #[test]
    fn the_literal_only_block_of_protocol_vector_3_2_decodes() {
        // docs/protocol.md §3.2: an 86-byte group sent as token F0, length extension 0x47, literals.
        let raw = hex::decode("0a23088081c8ac06120d0a056c6576656c1204494e464f120c0a036d7367120568656c6c6f1a017422093132372e302e302e3132210a0b5f5f7061636b5f69645f5f1212303132333435363738394142434445462d30").unwrap();
        let mut block = vec![0xf0, 0x47];
        block.extend_from_slice(&raw);
        assert_eq!(decompress(Compression::Lz4, &block, 86).unwrap(), raw);
    }
}
