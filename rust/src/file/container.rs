//! The v2 file container: footer, offset tables, alignment, versions.
//!
//! ```text
//! [page / column / extra global buffers, each 64-byte aligned, padded with 0x48]
//! [global buffer 0: FileDescriptor]   (unpadded; everything after it is metadata)
//! [ColumnMetadata 0 .. N-1]           (back to back)
//! [CMO table: N × (u64 pos, u64 len)]
//! [GBO table: G × (u64 pos, u64 len)]
//! [footer: u64 col_meta_start, u64 cmo_pos, u64 gbo_pos, u32 G, u32 N, u16 major, u16 minor, "LANC"]
//! ```

use crate::error::{Error, Result};
pub use crate::format::FileVersion;

/// Size of the fixed footer at the end of every file.
pub const FOOTER_LEN: usize = 40;
/// The magic bytes that end every Lance file and manifest.
pub const MAGIC: &[u8; 4] = b"LANC";
/// Alignment of every data buffer in a file.
pub const BUFFER_ALIGNMENT: u64 = 64;
/// Filler byte between buffers (readers ignore its value).
pub const PAD_BYTE: u8 = 0x48;

/// The 40-byte footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// Position of the first ColumnMetadata.
    pub column_meta_start: u64,
    /// Position of the column-metadata offset table.
    pub cmo_table_pos: u64,
    /// Position of the global-buffer offset table.
    pub gbo_table_pos: u64,
    /// Number of global buffers.
    pub num_global_buffers: u32,
    /// Number of columns.
    pub num_columns: u32,
    /// Major version.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
}

impl Footer {
    /// Serialises the footer.
    pub fn to_bytes(&self) -> [u8; FOOTER_LEN] {
        let mut b = [0u8; FOOTER_LEN];
        b[0..8].copy_from_slice(&self.column_meta_start.to_le_bytes());
        b[8..16].copy_from_slice(&self.cmo_table_pos.to_le_bytes());
        b[16..24].copy_from_slice(&self.gbo_table_pos.to_le_bytes());
        b[24..28].copy_from_slice(&self.num_global_buffers.to_le_bytes());
        b[28..32].copy_from_slice(&self.num_columns.to_le_bytes());
        b[32..34].copy_from_slice(&self.major.to_le_bytes());
        b[34..36].copy_from_slice(&self.minor.to_le_bytes());
        b[36..40].copy_from_slice(MAGIC);
        b
    }

    /// Parses and validates the footer of a file of `file_size` bytes.
    pub fn parse(b: &[u8], file_size: u64, path: &str) -> Result<Self> {
        if b.len() != FOOTER_LEN {
            return Err(Error::corrupt(format!("{path}: footer must be {FOOTER_LEN} bytes")));
        }
        if &b[36..40] != MAGIC {
            return Err(Error::corrupt(format!(
                "{path}: not a Lance file (the last 4 bytes are {:?}, expected \"LANC\")",
                String::from_utf8_lossy(&b[36..40])
            )));
        }
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u16_at = |i: usize| u16::from_le_bytes(b[i..i + 2].try_into().unwrap());
        let f = Footer {
            column_meta_start: u64_at(0),
            cmo_table_pos: u64_at(8),
            gbo_table_pos: u64_at(16),
            num_global_buffers: u32_at(24),
            num_columns: u32_at(28),
            major: u16_at(32),
            minor: u16_at(34),
        };
        let footer_pos = file_size - FOOTER_LEN as u64;
        let ok = f.column_meta_start <= f.cmo_table_pos
            && f.cmo_table_pos.checked_add(f.num_columns as u64 * 16) == Some(f.gbo_table_pos)
            && f.gbo_table_pos.checked_add(f.num_global_buffers as u64 * 16) == Some(footer_pos);
        if !ok {
            return Err(Error::corrupt(format!(
                "{path}: footer offsets are inconsistent (column metadata at {}, offset tables at {} and {}, \
                 {} columns, {} global buffers, footer at {footer_pos})",
                f.column_meta_start, f.cmo_table_pos, f.gbo_table_pos, f.num_columns, f.num_global_buffers
            )));
        }
        if f.num_global_buffers == 0 {
            return Err(Error::corrupt(format!("{path}: file has no global buffers (no schema)")));
        }
        Ok(f)
    }
}

/// Parses an offset table of `(u64 position, u64 length)` entries and checks that every
/// entry lies within `[0, limit)`.
pub fn parse_offset_table(b: &[u8], limit: u64, what: &str, path: &str) -> Result<Vec<(u64, u64)>> {
    if b.len() % 16 != 0 {
        return Err(Error::corrupt(format!("{path}: {what} table has a partial entry")));
    }
    b.chunks_exact(16)
        .enumerate()
        .map(|(i, e)| {
            let pos = u64::from_le_bytes(e[0..8].try_into().unwrap());
            let len = u64::from_le_bytes(e[8..16].try_into().unwrap());
            match pos.checked_add(len) {
                Some(end) if end <= limit => Ok((pos, len)),
                _ => Err(Error::corrupt(format!("{path}: {what} {i} spans {pos}..+{len}, outside the file ({limit} bytes)"))),
            }
        })
        .collect()
}

/// Padding needed to bring `pos` to a multiple of `align`.
pub fn pad_len(pos: u64, align: u64) -> u64 {
    (align - pos % align) % align
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!("stable".parse::<FileVersion>().unwrap(), FileVersion::V2_2);
        assert!(matches!("2.3".parse::<FileVersion>(), Err(Error::NotSupported(_))));
        assert!(matches!("next".parse::<FileVersion>(), Err(Error::NotSupported(_))));
        assert_eq!("legacy".parse::<FileVersion>().unwrap(), FileVersion::Legacy);
        assert_eq!(FileVersion::from_footer(0, 2).unwrap(), FileVersion::Legacy);
        assert!(matches!("banana".parse::<FileVersion>(), Err(Error::InvalidInput(_))));
        assert_eq!(FileVersion::V2_0.footer_version(), (0, 3));
    }

    #[test]
    fn footer_round_trip_and_validation() {
        let f = Footer {
            column_meta_start: 100,
            cmo_table_pos: 200,
            gbo_table_pos: 216,
            num_global_buffers: 1,
            num_columns: 1,
            major: 2,
            minor: 1,
        };
        let size = 216 + 16 + 40;
        assert_eq!(Footer::parse(&f.to_bytes(), size, "x").unwrap(), f);
        assert!(Footer::parse(&f.to_bytes(), size + 1, "x").is_err());
        let mut bad = f.to_bytes();
        bad[39] = b'X';
        assert!(matches!(Footer::parse(&bad, size, "x"), Err(Error::Corrupt(_))));
    }
}
