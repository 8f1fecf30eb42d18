//! File names of a dataset: manifests (V1 and V2 schemes), data files, deletion files and
//! transaction files (FORMAT.md §4.1).

use crate::error::{Error, Result};

/// Directory of the manifests.
pub const VERSIONS_DIR: &str = "_versions";
/// Directory of the data files.
pub const DATA_DIR: &str = "data";
/// Directory of the deletion files.
pub const DELETIONS_DIR: &str = "_deletions";
/// Directory of the transaction files.
pub const TRANSACTIONS_DIR: &str = "_transactions";

/// How manifest files are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManifestNaming {
    /// `{version}.manifest` (legacy).
    V1,
    /// `{u64::MAX - version:020}.manifest`: the newest version sorts first.
    V2,
}

impl ManifestNaming {
    /// The manifest's path relative to the dataset root.
    pub fn manifest_path(self, version: u64) -> String {
        match self {
            ManifestNaming::V1 => format!("{VERSIONS_DIR}/{version}.manifest"),
            ManifestNaming::V2 => format!("{VERSIONS_DIR}/{:020}.manifest", u64::MAX - version),
        }
    }

    /// `"v1"` or `"v2"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ManifestNaming::V1 => "v1",
            ManifestNaming::V2 => "v2",
        }
    }
}

/// Parses a file name in `_versions/` into (version, scheme). Anything that is not a
/// committed manifest (staging files, detached `d{n}.manifest`, the hint file) is `None`.
pub fn parse_manifest_name(name: &str) -> Option<(u64, ManifestNaming)> {
    let stem = name.strip_suffix(".manifest")?;
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = stem.parse().ok()?;
    if stem.len() == 20 {
        Some((u64::MAX - n, ManifestNaming::V2))
    } else {
        Some((n, ManifestNaming::V1))
    }
}

/// A new data file name: 16 random bytes, the first 3 as 24 binary digits and the other 13
/// as 26 hex digits, plus `.lance` (relative to `data/`).
pub fn new_data_file_name() -> String {
    let bytes = *uuid::Uuid::new_v4().as_bytes();
    let mut s = String::with_capacity(56);
    for b in &bytes[..3] {
        s.push_str(&format!("{b:08b}"));
    }
    for b in &bytes[3..] {
        s.push_str(&format!("{b:02x}"));
    }
    s.push_str(".lance");
    s
}

/// A new data file name that carries `tag` (`{random}_{tag}.lance`): a distributed writer
/// tags every file of one job so that the files of a failed or discarded task attempt can be
/// found by listing `data/`, even when the task died before reporting them. The tag may hold
/// ASCII letters, digits, `-` and `_` (1 to 64 of them).
pub fn new_tagged_data_file_name(tag: &str) -> Result<String> {
    if tag.is_empty() || tag.len() > 64 || !tag.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(Error::invalid_input(format!("data file tag {tag:?} must be 1 to 64 ASCII letters, digits, '-' or '_'")));
    }
    let mut s = new_data_file_name();
    s.truncate(s.len() - ".lance".len());
    s.push('_');
    s.push_str(tag);
    s.push_str(".lance");
    Ok(s)
}

/// Path (relative to the root) of a deletion file.
pub fn deletion_file_path(fragment_id: u64, read_version: u64, id: u64, bitmap: bool) -> String {
    let ext = if bitmap { "bin" } else { "arrow" };
    format!("{DELETIONS_DIR}/{fragment_id}-{read_version}-{id}.{ext}")
}

/// A new transaction file name (relative to `_transactions/`).
pub fn new_transaction_file_name(read_version: u64) -> String {
    format!("{read_version}-{}.txn", uuid::Uuid::new_v4().hyphenated())
}

/// The naming scheme used by the manifests listed, or an error if they mix schemes.
pub fn detect_naming(names: impl IntoIterator<Item = ManifestNaming>) -> Result<Option<ManifestNaming>> {
    let mut found = None;
    for n in names {
        match found {
            None => found = Some(n),
            Some(f) if f != n => {
                return Err(Error::corrupt("the dataset mixes V1 and V2 manifest names in _versions/"));
            }
            _ => {}
        }
    }
    Ok(found)
}

/// Every committed version of the dataset at `store` with its manifest path (relative to the
/// root), sorted by version, and the naming scheme in use. Found by listing `_versions/`;
/// the hint file is never consulted.
pub fn list_versions(store: &crate::io::Store) -> Result<(Vec<(u64, String)>, Option<ManifestNaming>)> {
    let mut versions = Vec::new();
    let mut schemes = Vec::new();
    for name in store.list_names(VERSIONS_DIR)? {
        if let Some((version, naming)) = parse_manifest_name(&name) {
            versions.push((version, format!("{VERSIONS_DIR}/{name}")));
            schemes.push(naming);
        }
    }
    versions.sort_unstable();
    Ok((versions, detect_naming(schemes)?))
}

/// The newest committed version of the dataset at `store` (`None`: no manifest), with its
/// manifest path and the naming scheme: one listing of `_versions/` that keeps only the
/// largest version (what opening the latest version and committing need), as pylance reads a
/// local directory. Mixed schemes are an error, as in [`list_versions`].
pub fn latest_version(store: &crate::io::Store) -> Result<Option<(u64, String, ManifestNaming)>> {
    let mut latest: Option<(u64, ManifestNaming)> = None;
    let mut scheme = None;
    for name in store.list_names(VERSIONS_DIR)? {
        let Some((version, naming)) = parse_manifest_name(&name) else { continue };
        scheme = detect_naming(scheme.into_iter().chain([naming]))?;
        if latest.is_none_or(|(v, _)| version > v) {
            latest = Some((version, naming));
        }
    }
    Ok(latest.map(|(v, naming)| (v, naming.manifest_path(v), naming)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_names_round_trip() {
        assert_eq!(ManifestNaming::V2.manifest_path(1), "_versions/18446744073709551614.manifest");
        assert_eq!(ManifestNaming::V1.manifest_path(12), "_versions/12.manifest");
        assert_eq!(parse_manifest_name("18446744073709551614.manifest"), Some((1, ManifestNaming::V2)));
        assert_eq!(parse_manifest_name("12.manifest"), Some((12, ManifestNaming::V1)));
        assert_eq!(parse_manifest_name("d12.manifest"), None);
        assert_eq!(parse_manifest_name("12.manifest-abc"), None);
        assert_eq!(parse_manifest_name("latest_version_hint.json"), None);
        for v in [0u64, 1, 99, 1 << 40] {
            for s in [ManifestNaming::V1, ManifestNaming::V2] {
                let path = s.manifest_path(v);
                let name = path.rsplit('/').next().unwrap();
                assert_eq!(parse_manifest_name(name), Some((v, s)));
            }
        }
    }

    #[test]
    fn versions_are_found_by_listing() {
        let store = crate::io::Store::open(&format!("memory://naming-{}", uuid::Uuid::new_v4().simple())).unwrap();
        assert_eq!(list_versions(&store).unwrap(), (vec![], None));
        assert_eq!(latest_version(&store).unwrap(), None);
        for v in [1u64, 2, 10] {
            store.put(&ManifestNaming::V2.manifest_path(v), bytes::Bytes::from_static(b"m")).unwrap();
        }
        store.put("_versions/latest_version_hint.json", bytes::Bytes::from_static(b"{}")).unwrap();
        store.put("_versions/.x.manifest.tmp", bytes::Bytes::from_static(b"")).unwrap();
        let (versions, naming) = list_versions(&store).unwrap();
        assert_eq!(versions.iter().map(|v| v.0).collect::<Vec<_>>(), vec![1, 2, 10]);
        assert_eq!(naming, Some(ManifestNaming::V2));
        assert_eq!(latest_version(&store).unwrap(), Some((10, ManifestNaming::V2.manifest_path(10), ManifestNaming::V2)));
        store.put(&ManifestNaming::V1.manifest_path(3), bytes::Bytes::from_static(b"m")).unwrap();
        assert!(matches!(list_versions(&store), Err(Error::Corrupt(_))));
        assert!(matches!(latest_version(&store), Err(Error::Corrupt(_))));
    }

    #[test]
    fn data_file_names_look_like_pylance() {
        let n = new_data_file_name();
        assert_eq!(n.len(), 56);
        assert!(n[..24].bytes().all(|b| b == b'0' || b == b'1'));
        assert!(n[24..50].bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(n.ends_with(".lance"));
    }

    #[test]
    fn tagged_data_file_names_end_with_the_tag() {
        let n = new_tagged_data_file_name("job-1_p2").unwrap();
        assert!(n.ends_with("_job-1_p2.lance"));
        assert!(n[..24].bytes().all(|b| b == b'0' || b == b'1'));
        assert_ne!(n, new_tagged_data_file_name("job-1_p2").unwrap());
        for bad in ["", "a/b", "a.b", "ü", &"x".repeat(65)] {
            assert!(matches!(new_tagged_data_file_name(bad), Err(Error::InvalidInput(_))), "{bad:?}");
        }
    }
}
