//! General-purpose compression (LZ4, zstd) of whole buffers or single values.
//!
//! Framing (as pylance writes it): **LZ4** = `u32 LE uncompressed length` + a raw LZ4 block;
//! **zstd** = `u64 LE uncompressed length` + a standard zstd frame. A bare zstd frame (magic
//! `0xFD2FB528` with the frame-header reserved bit clear) is accepted on read too.
//!
//! Where it applies: in a mini-block chunk only the first value buffer is compressed; in
//! full-zip every value is compressed on its own; in block context the whole buffer is.

use crate::error::{Error, Result};
use crate::format::enc21;

/// Largest uncompressed size we agree to allocate for one buffer (guards hostile files; a
/// writer cuts pages at a few MiB, so no real buffer comes close). 1 GiB.
const MAX_UNCOMPRESSED: u64 = 1 << 30;

/// LZ4 cannot expand data by more than this factor: every literal costs a byte and a match
/// needs a length byte per 255 bytes it copies, so a claimed size above it is a lie.
const LZ4_MAX_RATIO: u64 = 255;

/// A general compression scheme and level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeneralScheme {
    /// LZ4 block compression.
    Lz4,
    /// Zstandard with the given level (0 = library default).
    Zstd(i32),
}

impl GeneralScheme {
    /// Parses a `BufferCompression` message.
    pub fn from_pb(c: &enc21::BufferCompression) -> Result<Self> {
        match enc21::CompressionScheme::try_from(c.scheme) {
            Ok(enc21::CompressionScheme::CompressionAlgorithmLz4) => Ok(GeneralScheme::Lz4),
            Ok(enc21::CompressionScheme::CompressionAlgorithmZstd) => Ok(GeneralScheme::Zstd(c.level.unwrap_or(0))),
            _ => Err(Error::not_supported(format!("general compression scheme {}", c.scheme))),
        }
    }

    /// The `BufferCompression` message.
    pub fn to_pb(self) -> enc21::BufferCompression {
        match self {
            GeneralScheme::Lz4 => {
                enc21::BufferCompression { scheme: enc21::CompressionScheme::CompressionAlgorithmLz4 as i32, level: None }
            }
            GeneralScheme::Zstd(level) => {
                enc21::BufferCompression { scheme: enc21::CompressionScheme::CompressionAlgorithmZstd as i32, level: Some(level) }
            }
        }
    }

    /// Parses the user-facing name (`lance-encoding:compression` metadata).
    pub fn from_name(name: &str, level: Option<i32>) -> Result<Option<Self>> {
        match name.to_ascii_lowercase().as_str() {
            "zstd" => Ok(Some(GeneralScheme::Zstd(level.unwrap_or(3)))),
            "lz4" => Ok(Some(GeneralScheme::Lz4)),
            "none" | "" => Ok(None),
            other => Err(Error::invalid_input(format!(
                "unknown compression {other:?} in lance-encoding:compression; expected zstd, lz4 or none"
            ))),
        }
    }

    /// Appends the framed compression of `data` to `out`.
    pub fn compress_into(self, data: &[u8], out: &mut Vec<u8>) -> Result<()> {
        match self {
            GeneralScheme::Lz4 => {
                out.extend_from_slice(&(data.len() as u32).to_le_bytes());
                let start = out.len();
                out.resize(start + lz4_flex::block::get_maximum_output_size(data.len()), 0);
                let n = lz4_flex::block::compress_into(data, &mut out[start..])
                    .map_err(|e| Error::invalid_input(format!("lz4 compression failed: {e}")))?;
                out.truncate(start + n);
            }
            GeneralScheme::Zstd(level) => {
                out.extend_from_slice(&(data.len() as u64).to_le_bytes());
                let compressed = zstd::bulk::compress(data, level)
                    .map_err(|e| Error::invalid_input(format!("zstd compression failed: {e}")))?;
                out.extend_from_slice(&compressed);
            }
        }
        Ok(())
    }

    /// Decompresses one framed buffer.
    pub fn decompress(self, data: &[u8]) -> Result<Vec<u8>> {
        match self {
            GeneralScheme::Lz4 => {
                if data.len() < 4 {
                    return Err(Error::corrupt("lz4 buffer shorter than its 4-byte length prefix"));
                }
                let len = u32::from_le_bytes(data[..4].try_into().unwrap()) as u64;
                // The output is allocated at the claimed size before decoding: check it first.
                let most = ((data.len() - 4) as u64 * LZ4_MAX_RATIO + 16).min(MAX_UNCOMPRESSED);
                if len > most {
                    return Err(Error::corrupt(format!(
                        "lz4 buffer of {} bytes claims {len} uncompressed bytes",
                        data.len() - 4
                    )));
                }
                lz4_flex::block::decompress(&data[4..], len as usize)
                    .map_err(|e| Error::corrupt(format!("invalid lz4 data: {e}")))
            }
            GeneralScheme::Zstd(_) => {
                let is_bare_frame = data.len() >= 5 && data[..4] == [0x28, 0xB5, 0x2F, 0xFD] && data[4] & 0x08 == 0;
                let (len, frame) = if is_bare_frame {
                    let len = zstd::zstd_safe::get_frame_content_size(data)
                        .ok()
                        .flatten()
                        .ok_or_else(|| Error::corrupt("zstd frame without a content size"))?;
                    (len, data)
                } else {
                    if data.len() < 8 {
                        return Err(Error::corrupt("zstd buffer shorter than its 8-byte length prefix"));
                    }
                    (u64::from_le_bytes(data[..8].try_into().unwrap()), &data[8..])
                };
                if len > MAX_UNCOMPRESSED {
                    return Err(Error::corrupt(format!("zstd buffer claims {len} uncompressed bytes")));
                }
                let out =
                    zstd::bulk::decompress(frame, len as usize).map_err(|e| Error::corrupt(format!("invalid zstd data: {e}")))?;
                if out.len() as u64 != len {
                    return Err(Error::corrupt(format!("zstd buffer decompressed to {} bytes, header says {len}", out.len())));
                }
                Ok(out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        for s in [GeneralScheme::Lz4, GeneralScheme::Zstd(0), GeneralScheme::Zstd(9)] {
            let mut out = Vec::new();
            s.compress_into(&data, &mut out).unwrap();
            assert!(out.len() < data.len() / 4);
            assert_eq!(s.decompress(&out).unwrap(), data);
            // Hostile: truncated input must error, not panic.
            assert!(s.decompress(&out[..out.len() / 2]).is_err());
        }
    }

    /// Found by the `file_ops` fuzz target: an LZ4 buffer whose 4-byte prefix claims
    /// 4 GiB made the decoder allocate 4 GiB before reading a byte.
    #[test]
    fn hostile_lz4_length_is_refused_before_allocating() {
        let mut framed = u32::MAX.to_le_bytes().to_vec();
        framed.extend_from_slice(&[0x10, b'a', 0, 0]);
        assert!(matches!(GeneralScheme::Lz4.decompress(&framed), Err(Error::Corrupt(_))));
        // 2.85 GB claimed by 60 bytes (the fuzzer's case).
        let mut framed = 2_852_148_736u32.to_le_bytes().to_vec();
        framed.extend_from_slice(&[0xFF; 60]);
        assert!(matches!(GeneralScheme::Lz4.decompress(&framed), Err(Error::Corrupt(_))));
        let mut framed = Vec::new();
        GeneralScheme::Lz4.compress_into(&[7u8; 255 * 100], &mut framed).unwrap();
        assert_eq!(GeneralScheme::Lz4.decompress(&framed).unwrap(), vec![7u8; 255 * 100]);
    }

    #[test]
    fn bare_zstd_frame() {
        let data = b"hello hello hello hello".repeat(10);
        let frame = zstd::bulk::compress(&data, 3).unwrap();
        assert_eq!(GeneralScheme::Zstd(0).decompress(&frame).unwrap(), data);
    }
}
