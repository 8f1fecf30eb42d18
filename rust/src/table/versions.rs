//! Finding and opening versions: the manifest of one version (by number, or the latest) and
//! the summary of every version (`versions()`), without turning manifests into JSON.
//!
//! Opening the latest version lists `_versions/` once (names only: no `stat` per entry on a
//! local disk) and reads one manifest. Opening a given version reads its manifest by name,
//! V2 naming first, then V1, without listing. The summaries of all versions read every
//! manifest (in parallel on the I/O pool) but decode only the few fields they report: a
//! manifest holds every fragment of its version, and the file paths and field ids are
//! skipped, not decoded.

use std::sync::Arc;

use bytes::Bytes;
use prost::Message;

use crate::error::{Error, Result};
use crate::format::tablepb;
use crate::io::Store;
use crate::table::manifest::{manifest_message, read_manifest, ManifestFile};
use crate::table::naming::{latest_version, list_versions, ManifestNaming};

/// One version's manifest, decoded, with where it was found.
#[derive(Debug, Clone)]
pub struct OpenedManifest {
    /// The version number.
    pub version: u64,
    /// The manifest's path relative to the dataset root.
    pub path: String,
    /// The naming scheme of the manifest's file name.
    pub naming: ManifestNaming,
    /// The manifest file's size in bytes.
    pub size: u64,
    /// The decoded manifest (shared with the snapshots made from it).
    pub manifest: Arc<tablepb::Manifest>,
    /// Raw `IndexSection` protobuf, if the manifest has one.
    pub index_section: Option<Bytes>,
    /// Raw inline `Transaction` protobuf, if the manifest has one.
    pub transaction: Option<Bytes>,
}

/// Decodes the bytes of version `version`'s manifest file (at `path`, relative to the root of
/// `store`), checking that it is that version's.
pub fn decode_manifest(store: &Store, version: u64, path: String, naming: ManifestNaming, data: Bytes) -> Result<OpenedManifest> {
    let size = data.len() as u64;
    let ManifestFile { manifest, index_section, transaction } = read_manifest(data, &store.child_uri(&path))?;
    let claimed = manifest.version;
    if claimed != version && claimed != 0 {
        return Err(Error::corrupt(format!("{} claims version {claimed}, expected {version}", store.child_uri(&path))));
    }
    Ok(OpenedManifest { version, path, naming, size, manifest: Arc::new(manifest), index_section, transaction })
}

/// The manifest of `version`, or of the latest version when `None`. `Ok(None)` when the
/// dataset has no such version (or no versions at all): the caller lists the versions to say
/// which exist.
pub fn open_manifest(store: &Store, version: Option<u64>) -> Result<Option<OpenedManifest>> {
    match version {
        Some(v) => {
            for naming in [ManifestNaming::V2, ManifestNaming::V1] {
                let path = naming.manifest_path(v);
                match store.read(&path) {
                    Ok(data) => return decode_manifest(store, v, path, naming, data).map(Some),
                    Err(Error::NotFound(_)) => continue,
                    Err(e) => return Err(e),
                }
            }
            Ok(None)
        }
        None => {
            let Some((v, path, naming)) = latest_version(store)? else { return Ok(None) };
            match store.read(&path) {
                Ok(data) => decode_manifest(store, v, path, naming, data).map(Some),
                // Removed between the listing and the read: only a concurrent overwrite of
                // the whole dataset does that; list again.
                Err(Error::NotFound(_)) => open_manifest_relisted(store),
                Err(e) => Err(e),
            }
        }
    }
}

fn open_manifest_relisted(store: &Store) -> Result<Option<OpenedManifest>> {
    let Some((v, path, naming)) = latest_version(store)? else { return Ok(None) };
    let data = store.read(&path)?;
    decode_manifest(store, v, path, naming, data).map(Some)
}

/// What `versions()` reports of one version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VersionSummary {
    /// The version number.
    pub version: u64,
    /// Commit time: seconds since the Unix epoch.
    pub seconds: i64,
    /// Commit time: nanoseconds within the second.
    pub nanos: i32,
    /// Rows in data files, deleted ones included.
    pub total_data_file_rows: u64,
    /// Data files.
    pub total_data_files: u64,
    /// Rows marked deleted.
    pub total_deletion_file_rows: u64,
    /// Deletion files.
    pub total_deletion_files: u64,
    /// Bytes of data files (as recorded in the manifest).
    pub total_files_size: u64,
    /// Fragments.
    pub total_fragments: u64,
}

// Views of `lance.table.Manifest` with only the fields a summary needs: prost skips the
// others (file paths, field ids, schema, ...) without allocating. Tags are those of
// protos/table.proto.

#[derive(Clone, PartialEq, prost::Message)]
struct SummaryManifest {
    #[prost(message, repeated, tag = "2")]
    fragments: Vec<SummaryFragment>,
    #[prost(uint64, tag = "3")]
    version: u64,
    #[prost(message, optional, tag = "7")]
    timestamp: Option<prost_types::Timestamp>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SummaryFragment {
    #[prost(message, repeated, tag = "2")]
    files: Vec<SummaryDataFile>,
    #[prost(message, optional, tag = "3")]
    deletion_file: Option<SummaryDeletionFile>,
    #[prost(uint64, tag = "4")]
    physical_rows: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SummaryDataFile {
    #[prost(uint64, tag = "6")]
    file_size_bytes: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SummaryDeletionFile {
    #[prost(uint64, tag = "4")]
    num_deleted_rows: u64,
}

/// The summary of one manifest file's bytes.
pub fn summarize_manifest(data: &Bytes, version: u64, path: &str) -> Result<VersionSummary> {
    let body = manifest_message(data, path)?;
    let m = SummaryManifest::decode(body)
        .map_err(|e| Error::corrupt(format!("{path}: the manifest is not a valid protobuf message: {e}")))?;
    if m.version != version && m.version != 0 {
        return Err(Error::corrupt(format!("{path} claims version {}, expected {version}", m.version)));
    }
    let mut s = VersionSummary::start(version, m.timestamp.as_ref());
    for f in &m.fragments {
        s.add_fragment(
            f.physical_rows,
            f.files.iter().map(|d| d.file_size_bytes),
            f.deletion_file.as_ref().map(|d| d.num_deleted_rows),
        );
    }
    Ok(s)
}

impl VersionSummary {
    /// The summary of a version with no fragments yet, committed at `timestamp`.
    fn start(version: u64, timestamp: Option<&prost_types::Timestamp>) -> Self {
        let (seconds, nanos) = timestamp.map_or((0, 0), |t| (t.seconds, t.nanos));
        VersionSummary { version, seconds, nanos, ..Default::default() }
    }

    /// Counts one fragment: its physical rows, its data files' sizes, and its deletion
    /// file's deleted rows if it has one.
    fn add_fragment(&mut self, physical_rows: u64, file_sizes: impl ExactSizeIterator<Item = u64>, deleted: Option<u64>) {
        self.total_fragments += 1;
        self.total_data_file_rows = self.total_data_file_rows.saturating_add(physical_rows);
        self.total_data_files += file_sizes.len() as u64;
        self.total_files_size = file_sizes.fold(self.total_files_size, u64::saturating_add);
        if let Some(n) = deleted {
            self.total_deletion_files += 1;
            self.total_deletion_file_rows = self.total_deletion_file_rows.saturating_add(n);
        }
    }

    /// The summary of a decoded manifest (the same as [`summarize_manifest`] of its bytes).
    pub fn of_manifest(version: u64, m: &tablepb::Manifest) -> Self {
        let mut s = Self::start(version, m.timestamp.as_ref());
        for f in &m.fragments {
            s.add_fragment(
                f.physical_rows,
                f.files.iter().map(|d| d.file_size_bytes),
                f.deletion_file.as_ref().map(|d| d.num_deleted_rows),
            );
        }
        s
    }
}

/// The summary of every version, oldest first. Manifests are read in parallel; one removed
/// since the listing (a concurrent cleanup) is left out.
pub fn version_summaries(store: &Store) -> Result<Vec<VersionSummary>> {
    let (versions, _) = list_versions(store)?;
    let got = crate::parallel::map_io(versions, true, |(v, path)| match store.read(&path) {
        Ok(data) => summarize_manifest(&data, v, &store.child_uri(&path)).map(Some),
        Err(Error::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    });
    got.into_iter().filter_map(Result::transpose).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::manifest::write_manifest;

    fn manifest(version: u64, fragments: Vec<tablepb::DataFragment>) -> Bytes {
        let m = tablepb::Manifest {
            version,
            fragments,
            timestamp: Some(prost_types::Timestamp { seconds: 1_700_000_000 + version as i64, nanos: 5 }),
            ..Default::default()
        };
        Bytes::from(write_manifest(m, None, None).unwrap())
    }

    fn fragment(id: u64, rows: u64, deleted: Option<u64>) -> tablepb::DataFragment {
        tablepb::DataFragment {
            id,
            physical_rows: rows,
            files: vec![tablepb::DataFile {
                path: format!("{id}.lance"),
                file_size_bytes: 100 + id,
                fields: vec![0, 1],
                ..Default::default()
            }],
            deletion_file: deleted.map(|n| tablepb::DeletionFile { num_deleted_rows: n, ..Default::default() }),
            ..Default::default()
        }
    }

    #[test]
    fn summaries_match_the_full_manifest() {
        let data = manifest(3, vec![fragment(0, 10, None), fragment(1, 20, Some(4)), fragment(2, 5, Some(0))]);
        let s = summarize_manifest(&data, 3, "m").unwrap();
        assert_eq!(
            s,
            VersionSummary {
                version: 3,
                seconds: 1_700_000_003,
                nanos: 5,
                total_data_file_rows: 35,
                total_data_files: 3,
                total_deletion_file_rows: 4,
                total_deletion_files: 2,
                total_files_size: 303,
                total_fragments: 3,
            }
        );
        let decoded = read_manifest(data.clone(), "m").unwrap().manifest;
        assert_eq!(VersionSummary::of_manifest(3, &decoded), s, "the decoded manifest's summary is the same");
        assert!(summarize_manifest(&data, 4, "m").is_err(), "a manifest of another version is refused");
        assert!(summarize_manifest(&data.slice(..data.len() - 1), 3, "m").is_err());
    }

    #[test]
    fn versions_open_by_number_and_latest() {
        let store = Store::open(&format!("memory://versions-open-{}", uuid::Uuid::new_v4())).unwrap();
        assert!(open_manifest(&store, None).unwrap().is_none());
        for v in 1..=3u64 {
            store.put(&ManifestNaming::V2.manifest_path(v), manifest(v, vec![fragment(0, v, None)])).unwrap();
        }
        let latest = open_manifest(&store, None).unwrap().unwrap();
        assert_eq!((latest.version, latest.naming), (3, ManifestNaming::V2));
        assert_eq!(open_manifest(&store, Some(2)).unwrap().unwrap().manifest.fragments[0].physical_rows, 2);
        assert!(open_manifest(&store, Some(9)).unwrap().is_none());
        let all = version_summaries(&store).unwrap();
        assert_eq!(all.iter().map(|s| s.version).collect::<Vec<_>>(), vec![1, 2, 3]);
        // A V1-named dataset opens by number too.
        let v1 = Store::open(&format!("memory://versions-open-v1-{}", uuid::Uuid::new_v4())).unwrap();
        v1.put(&ManifestNaming::V1.manifest_path(7), manifest(7, vec![])).unwrap();
        assert_eq!(open_manifest(&v1, Some(7)).unwrap().unwrap().naming, ManifestNaming::V1);
        assert_eq!(open_manifest(&v1, None).unwrap().unwrap().version, 7);
    }
}
