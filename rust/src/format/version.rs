//! Versions of the Lance file format.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Version of the Lance file format (the encodings a file may use).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileVersion {
    /// The legacy (v1) format: pages located through a page table, one per field and
    /// batch (footer 0.2; pylance names datasets of these files "0.1"). See
    /// [`crate::file::legacy`].
    Legacy,
    /// 2.0: `ArrayEncoding` trees, one column per field (footer says 0.3).
    V2_0,
    /// 2.1: structural layouts (mini-block, full-zip), u16 mini-block chunk words.
    V2_1,
    /// 2.2: as 2.1 with u32 chunk words, constant pages, block compression. pylance's "stable".
    V2_2,
}

impl FileVersion {
    /// The version pylance 14 uses when none is given for a file writer is 2.1; for datasets
    /// pylance defaults to "stable" (2.2). lancepy's file writer defaults to 2.1 as well.
    pub const DEFAULT: FileVersion = FileVersion::V2_1;

    /// `(major, minor)` as written in the file footer.
    pub fn footer_version(self) -> (u16, u16) {
        match self {
            FileVersion::Legacy => (0, 2),
            FileVersion::V2_0 => (0, 3),
            FileVersion::V2_1 => (2, 1),
            FileVersion::V2_2 => (2, 2),
        }
    }

    /// `(major, minor)` as recorded in a dataset manifest's `DataFile`.
    pub fn manifest_version(self) -> (u32, u32) {
        match self {
            FileVersion::Legacy => (0, 2),
            FileVersion::V2_0 => (2, 0),
            FileVersion::V2_1 => (2, 1),
            FileVersion::V2_2 => (2, 2),
        }
    }

    /// The version a footer `(major, minor)` denotes.
    pub fn from_footer(major: u16, minor: u16) -> Result<Self> {
        match (major, minor) {
            (0, 3) | (2, 0) => Ok(FileVersion::V2_0),
            (2, 1) => Ok(FileVersion::V2_1),
            (2, 2) => Ok(FileVersion::V2_2),
            (0, 1) | (0, 2) => Ok(FileVersion::Legacy),
            (major, minor) => {
                Err(Error::not_supported(format!("Lance file version {major}.{minor}; only 2.0, 2.1 and 2.2 are supported")))
            }
        }
    }

    /// The version a manifest `DataFile` records.
    pub fn from_manifest(major: u32, minor: u32) -> Result<Self> {
        match (major, minor) {
            (2, 0) | (0, 3) => Ok(FileVersion::V2_0),
            (2, 1) => Ok(FileVersion::V2_1),
            (2, 2) => Ok(FileVersion::V2_2),
            (0, 0..=2) => Ok(FileVersion::Legacy),
            (major, minor) => {
                Err(Error::not_supported(format!("data file version {major}.{minor}; only 2.0, 2.1 and 2.2 are supported")))
            }
        }
    }

    /// Whether pages use the 2.1+ structural layouts.
    pub fn is_structural(self) -> bool {
        self >= FileVersion::V2_1
    }
}

impl fmt::Display for FileVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileVersion::Legacy => "0.1",
            FileVersion::V2_0 => "2.0",
            FileVersion::V2_1 => "2.1",
            FileVersion::V2_2 => "2.2",
        })
    }
}

impl FromStr for FileVersion {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "2.0" => Ok(FileVersion::V2_0),
            "2.1" => Ok(FileVersion::V2_1),
            "2.2" | "stable" => Ok(FileVersion::V2_2),
            "2.3" | "next" => Err(Error::not_supported(format!(
                "file version {s:?}: 2.3 is unstable and not implemented; use \"2.0\", \"2.1\" or \"2.2\" (\"stable\")"
            ))),
            "legacy" | "0.1" | "0.2" => Ok(FileVersion::Legacy),
            _ => {
                Err(Error::invalid_input(format!("unknown file version {s:?}; expected \"2.0\", \"2.1\", \"2.2\" or \"stable\"")))
            }
        }
    }
}
