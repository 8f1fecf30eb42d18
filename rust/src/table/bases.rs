//! Base paths: where a manifest's data and deletion files live when they are not under the
//! dataset root (FORMAT.md, "Base Path System"; shallow clones, multi-bucket datasets).
//!
//! A file entry without `base_id` lives under the dataset root (`data/`, `_deletions/`).
//! With `base_id = n` it lives under the manifest's `BasePath` number `n`:
//!
//! * `is_dataset_root = true` — the base is another dataset's root and keeps the standard
//!   layout: `{path}/data/{file}`, `{path}/_deletions/{file}`;
//! * `is_dataset_root = false` — the base is a plain directory of files: `{path}/{file}`.
//!
//! A `base_id` the manifest does not register is a corrupt manifest, reported when the
//! snapshot is built, before any read. A missing file under a base whose root is gone is
//! reported as [`Error::BasePathNotFound`] naming the base, so that a clone whose source was
//! deleted says so instead of "file not found".

use std::collections::BTreeMap;

use super::deletion;
use super::naming::DATA_DIR;
use crate::error::{Error, Result};
use crate::format::tablepb;
use crate::io::{StorageOptions, Store};

/// Where the files of one manifest live.
#[derive(Debug, Clone)]
pub struct BasePaths {
    root: String,
    bases: BTreeMap<u32, tablepb::BasePath>,
}

impl BasePaths {
    /// The base paths of a manifest for the dataset rooted at `root` (a URI or path).
    /// Two bases with the same id, or a base with an empty path, make the manifest corrupt.
    pub fn new(root: &str, bases: &[tablepb::BasePath]) -> Result<Self> {
        let mut map = BTreeMap::new();
        for b in bases {
            if b.path.trim_end_matches('/').is_empty() {
                return Err(Error::corrupt(format!("{root}: base path {} has an empty path", b.id)));
            }
            if map.insert(b.id, b.clone()).is_some() {
                return Err(Error::corrupt(format!("{root}: two base paths have id {}", b.id)));
            }
        }
        Ok(Self { root: root.trim_end_matches('/').to_string(), bases: map })
    }

    /// The registered base `id`.
    pub fn get(&self, id: u32) -> Result<&tablepb::BasePath> {
        self.bases.get(&id).ok_or_else(|| {
            let known: Vec<u32> = self.bases.keys().copied().collect();
            Error::corrupt(format!(
                "{}: a file refers to base path {id}, but the manifest registers only base paths {known:?}",
                self.root
            ))
        })
    }

    /// Whether the manifest registers any base path.
    pub fn is_empty(&self) -> bool {
        self.bases.is_empty()
    }

    /// The directory holding files of kind `subdir` (`data`, `_deletions`) for `base_id`.
    fn dir(&self, base_id: Option<u32>, subdir: &str) -> Result<String> {
        match base_id {
            None => Ok(format!("{}/{subdir}", self.root)),
            Some(id) => {
                let base = self.get(id)?;
                let path = base.path.trim_end_matches('/');
                Ok(if base.is_dataset_root { format!("{path}/{subdir}") } else { path.to_string() })
            }
        }
    }

    /// The full URI of a data file.
    pub fn data_file_uri(&self, file: &tablepb::DataFile) -> Result<String> {
        Ok(format!("{}/{}", self.dir(file.base_id, DATA_DIR)?, file.path))
    }

    /// The full URI of a fragment's deletion file.
    pub fn deletion_file_uri(&self, fragment_id: u64, file: &tablepb::DeletionFile) -> Result<String> {
        let rel = deletion::path_of(fragment_id, file);
        let name = rel.rsplit('/').next().unwrap_or(&rel);
        Ok(format!("{}/{name}", self.dir(file.base_id, deletion::DELETIONS_DIR)?))
    }

    /// Checks that every data and deletion file of `fragments` refers to a registered base.
    pub fn validate(&self, fragments: &[tablepb::DataFragment]) -> Result<()> {
        for f in fragments {
            let ids = f.files.iter().map(|d| d.base_id).chain(f.deletion_file.as_ref().map(|d| d.base_id));
            for id in ids.flatten() {
                self.get(id).map_err(|e| match e {
                    Error::Corrupt(m) => Error::Corrupt(format!("fragment {}: {m}", f.id)),
                    other => other,
                })?;
            }
        }
        Ok(())
    }

    /// Turns "not found" for a file under base `base_id` into [`Error::BasePathNotFound`]
    /// when the base's root itself is missing (checked only on this error path).
    pub fn explain_missing(&self, base_id: Option<u32>, options: &StorageOptions, err: Error) -> Error {
        let (Error::NotFound(msg), Some(id)) = (&err, base_id) else { return err };
        let Ok(base) = self.get(id) else { return err };
        let gone = Store::open_with(&base.path, options).and_then(|s| s.root_exists()).map(|exists| !exists);
        if matches!(gone, Ok(true)) {
            let name = base.name.as_deref().map(|n| format!(" ({n:?})")).unwrap_or_default();
            return Error::BasePathNotFound(format!(
                "{}: base path {id}{name} at {} does not exist (moved or deleted?); {msg}",
                self.root, base.path
            ));
        }
        err
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(id: u32, path: &str, root: bool) -> tablepb::BasePath {
        tablepb::BasePath { id, name: None, is_dataset_root: root, path: path.into() }
    }

    #[test]
    fn resolves_files_by_base() {
        let b = BasePaths::new("/ds/", &[base(0, "s3://hot/src/", true), base(3, "/cold/files", false)]).unwrap();
        let df = |base_id| tablepb::DataFile { path: "a.lance".into(), base_id, ..Default::default() };
        assert_eq!(b.data_file_uri(&df(None)).unwrap(), "/ds/data/a.lance");
        assert_eq!(b.data_file_uri(&df(Some(0))).unwrap(), "s3://hot/src/data/a.lance");
        assert_eq!(b.data_file_uri(&df(Some(3))).unwrap(), "/cold/files/a.lance");
        assert!(matches!(b.data_file_uri(&df(Some(7))), Err(Error::Corrupt(_))));
        let del = |base_id| tablepb::DeletionFile { read_version: 2, id: 9, base_id, ..Default::default() };
        assert_eq!(b.deletion_file_uri(4, &del(None)).unwrap(), "/ds/_deletions/4-2-9.arrow");
        assert_eq!(b.deletion_file_uri(4, &del(Some(0))).unwrap(), "s3://hot/src/_deletions/4-2-9.arrow");
        assert_eq!(b.deletion_file_uri(4, &del(Some(3))).unwrap(), "/cold/files/4-2-9.arrow");
    }

    #[test]
    fn rejects_bad_registrations_and_references() {
        assert!(matches!(BasePaths::new("/ds", &[base(1, "/a", true), base(1, "/b", true)]), Err(Error::Corrupt(_))));
        assert!(matches!(BasePaths::new("/ds", &[base(1, "/", true)]), Err(Error::Corrupt(_))));
        let b = BasePaths::new("/ds", &[base(1, "/a", true)]).unwrap();
        let frag = tablepb::DataFragment {
            id: 5,
            files: vec![tablepb::DataFile { path: "x".into(), base_id: Some(2), ..Default::default() }],
            ..Default::default()
        };
        let err = b.validate(&[frag]).unwrap_err().to_string();
        assert!(err.contains("fragment 5") && err.contains("base path 2") && err.contains("[1]"), "{err}");
    }
}
