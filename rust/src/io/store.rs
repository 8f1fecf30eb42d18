//! Whole-object storage primitives for datasets, behind one type for every backend.
//!
//! A dataset needs more than positional reads: it lists `_versions/`, reads small objects
//! whole (manifests, deletion files, transactions), publishes manifests atomically and
//! deletes old files. [`Store`] offers exactly those operations, rooted at a dataset
//! directory, for local paths / `file://` (plain `std::fs`), `memory://` (`object_store`'s
//! `InMemory`) and the cloud stores (`s3://`, `gs://`, `az://`, configured by storage
//! options; see [`super::uri`]).
//!
//! The commit primitive is [`Store::put_if_not_exists`]: on a local file system the bytes go
//! to a unique staging file that is then hard-linked to the final name (`link(2)` fails if
//! the name exists, atomically), so a reader never sees a half-written object and exactly one
//! of several racing writers wins; on object stores it is a conditional PUT
//! (`PutMode::Create`, i.e. `If-None-Match: *` on S3). A store that cannot write
//! conditionally makes the commit fail with [`Error::NotSupported`]: there is no unsafe
//! fallback to a plain PUT, which could silently overwrite a concurrent writer's version.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, PutMode, PutOptions, PutPayload};

use super::objstore::{map_store_error, runtime};
use super::uri::{open_reader_with, open_writer_with, resolve_with, ResolvedUri, StorageOptions, StoreHandle};
use super::{ReaderRef, Writer};
use crate::error::{Error, Result};

/// One object found by a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectInfo {
    /// Path relative to the store's root, with `/` separators.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Last modification, seconds since the Unix epoch.
    pub modified: f64,
}

#[derive(Debug, Clone)]
enum Backend {
    Local(PathBuf),
    Object { store: StoreHandle, root: ObjectPath },
}

/// A dataset directory on some storage.
#[derive(Debug, Clone)]
pub struct Store {
    uri: String,
    backend: Backend,
    options: Arc<StorageOptions>,
    /// Options for files under other roots (pylance's `base_store_params`: per base path,
    /// in place of `options`), longest root first.
    root_options: Arc<Vec<(String, StorageOptions)>>,
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::io(format!("{what} {}", path.display()), e)
}

fn check_relative(rel: &str) -> Result<()> {
    if rel.is_empty() || rel.starts_with('/') || rel.split('/').any(|p| p == ".." || p == ".") {
        return Err(Error::invalid_input(format!("{rel:?} is not a relative path inside the dataset")));
    }
    Ok(())
}

fn unique_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

impl Store {
    /// The store rooted at `uri` (a path, `file://` or `memory://`). Nothing is created.
    pub fn open(uri: &str) -> Result<Self> {
        Self::open_with(uri, &StorageOptions::new())
    }

    /// The store rooted at `uri` (a path or any supported URI), with storage options for
    /// cloud stores. Nothing is created and nothing is requested.
    pub fn open_with(uri: &str, options: &StorageOptions) -> Result<Self> {
        let trimmed = uri.trim_end_matches('/');
        let trimmed = if trimmed.is_empty() { uri } else { trimmed };
        let backend = match resolve_with(trimmed, options)? {
            ResolvedUri::Local(p) => Backend::Local(p),
            ResolvedUri::Object { store, location } => Backend::Object { store, root: location },
        };
        Ok(Self { uri: trimmed.to_string(), backend, options: Arc::new(options.clone()), root_options: Arc::default() })
    }

    /// This store, opening files under each of `roots` (URIs) with that root's options
    /// instead of its own (pylance's `base_store_params`).
    pub fn with_root_options(mut self, roots: impl IntoIterator<Item = (String, StorageOptions)>) -> Self {
        let mut roots: Vec<(String, StorageOptions)> =
            roots.into_iter().map(|(root, options)| (root.trim_end_matches('/').to_string(), options)).collect();
        roots.sort_by_key(|(root, _)| std::cmp::Reverse(root.len()));
        self.root_options = Arc::new(roots);
        self
    }

    /// The options for a file at `uri`: those of the longest root (see
    /// [`Store::with_root_options`]) it lies under, else the store's.
    pub fn options_for(&self, uri: &str) -> &StorageOptions {
        self.root_options
            .iter()
            .find(|(root, _)| uri.strip_prefix(root.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')))
            .map_or(&self.options, |(_, o)| o)
    }

    /// Whether the dataset is on object storage reached over the network (reads then wait
    /// on round trips rather than on the disk).
    pub fn is_remote(&self) -> bool {
        matches!(&self.backend, Backend::Object { store, .. } if store.is_remote())
    }

    /// The root URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The storage options the store was opened with (also used for files it names).
    pub fn options(&self) -> &StorageOptions {
        &self.options
    }

    /// Opens any file URI (this store's or another root's, e.g. a base path) for reads,
    /// with this store's options.
    pub fn reader_for_uri(&self, uri: &str) -> Result<ReaderRef> {
        open_reader_with(uri, self.options_for(uri))
    }

    /// Resolves a file's URI with the options that apply to it (see [`Store::options_for`]).
    pub fn resolve_uri(&self, uri: &str) -> Result<ResolvedUri> {
        resolve_with(uri, self.options_for(uri))
    }

    /// Creates a new file at any URI with this store's options.
    pub fn writer_for_uri(&self, uri: &str) -> Result<Box<dyn Writer>> {
        open_writer_with(uri, self.options_for(uri))
    }

    /// The URI of `rel` (for the file reader and writer).
    pub fn child_uri(&self, rel: &str) -> String {
        format!("{}/{}", self.uri, rel)
    }

    fn local(&self, root: &Path, rel: &str) -> Result<PathBuf> {
        check_relative(rel)?;
        Ok(root.join(rel))
    }

    fn object(&self, root: &ObjectPath, rel: &str) -> Result<ObjectPath> {
        check_relative(rel)?;
        let mut p = root.clone();
        for part in rel.split('/').filter(|s| !s.is_empty()) {
            p = p.child(part);
        }
        Ok(p)
    }

    fn map_os(&self, rel: &str, e: object_store::Error) -> Error {
        map_store_error(&self.child_uri(rel), e)
    }

    /// Reads a whole object.
    pub fn read(&self, rel: &str) -> Result<Bytes> {
        match &self.backend {
            Backend::Local(root) => {
                let p = self.local(root, rel)?;
                let data = std::fs::read(&p).map(Bytes::from).map_err(|e| io_err("reading", &p, e))?;
                super::count_reads(1, data.len() as u64);
                Ok(data)
            }
            Backend::Object { store, root } => {
                let p = self.object(root, rel)?;
                let store = store.get()?;
                let data = runtime().block_on(async { store.get(&p).await?.bytes().await }).map_err(|e| self.map_os(rel, e))?;
                super::count_reads(1, data.len() as u64);
                Ok(data)
            }
        }
    }

    /// Whether an object exists.
    pub fn exists(&self, rel: &str) -> Result<bool> {
        match &self.backend {
            Backend::Local(root) => Ok(self.local(root, rel)?.is_file()),
            Backend::Object { store, root } => {
                let p = self.object(root, rel)?;
                match runtime().block_on(store.get()?.head(&p)) {
                    Ok(_) => Ok(true),
                    Err(object_store::Error::NotFound { .. }) => Ok(false),
                    Err(e) => Err(self.map_os(rel, e)),
                }
            }
        }
    }

    /// Writes an object, replacing any existing one. Readers see the old or the new bytes,
    /// never a mixture (local files are written to a staging name and renamed).
    pub fn put(&self, rel: &str, data: Bytes) -> Result<()> {
        super::count_writes(1, data.len() as u64);
        match &self.backend {
            Backend::Local(root) => {
                let p = self.local(root, rel)?;
                let staging = write_staging(&p, &data)?;
                std::fs::rename(&staging, &p).map_err(|e| {
                    let _ = std::fs::remove_file(&staging);
                    io_err("renaming into", &p, e)
                })
            }
            Backend::Object { store, root } => {
                let p = self.object(root, rel)?;
                runtime().block_on(store.get()?.put(&p, PutPayload::from(data))).map_err(|e| self.map_os(rel, e))?;
                Ok(())
            }
        }
    }

    /// Writes an object only if none exists under that name; returns `false` (and writes
    /// nothing) if one does. Atomic: of several racing writers exactly one gets `true`.
    pub fn put_if_not_exists(&self, rel: &str, data: Bytes) -> Result<bool> {
        super::count_writes(1, data.len() as u64);
        match &self.backend {
            Backend::Local(root) => {
                let p = self.local(root, rel)?;
                let staging = write_staging(&p, &data)?;
                let linked = std::fs::hard_link(&staging, &p);
                let _ = std::fs::remove_file(&staging);
                match linked {
                    Ok(()) => Ok(true),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
                    Err(e) => Err(io_err("publishing", &p, e)),
                }
            }
            Backend::Object { store, root } => {
                let p = self.object(root, rel)?;
                let opts = PutOptions { mode: PutMode::Create, ..Default::default() };
                match runtime().block_on(store.get()?.put_opts(&p, PutPayload::from(data), opts)) {
                    Ok(_) => Ok(true),
                    Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
                    // Some stores answer a lost race with 412 rather than "already exists".
                    Err(object_store::Error::Precondition { .. }) => Ok(false),
                    Err(object_store::Error::NotImplemented) => Err(Error::not_supported(format!(
                        "{}: the object store cannot write conditionally (put-if-not-exists, If-None-Match: *), \
                         so commits would not be safe against concurrent writers; use a store that supports it \
                         (S3, MinIO, R2, GCS, Azure) and do not set aws_conditional_put=disabled",
                        self.child_uri(rel)
                    ))),
                    Err(e) => Err(self.map_os(rel, e)),
                }
            }
        }
    }

    /// Deletes an object; deleting a missing object is not an error.
    pub fn delete(&self, rel: &str) -> Result<()> {
        match &self.backend {
            Backend::Local(root) => {
                let p = self.local(root, rel)?;
                match std::fs::remove_file(&p) {
                    Ok(()) => Ok(()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    Err(e) => Err(io_err("deleting", &p, e)),
                }
            }
            Backend::Object { store, root } => {
                let p = self.object(root, rel)?;
                match runtime().block_on(store.get()?.delete(&p)) {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                    Err(e) => Err(self.map_os(rel, e)),
                }
            }
        }
    }

    /// Every object under directory `prefix` (recursively), paths relative to the root.
    /// A missing directory lists as empty.
    pub fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let prefix = prefix.trim_end_matches('/');
        match &self.backend {
            Backend::Local(root) => {
                let dir = if prefix.is_empty() { root.clone() } else { self.local(root, prefix)? };
                let mut out = Vec::new();
                list_local(&dir, prefix, &mut out)?;
                out.sort_by(|a, b| a.path.cmp(&b.path));
                Ok(out)
            }
            Backend::Object { store, root } => {
                let p = if prefix.is_empty() { root.clone() } else { self.object(root, prefix)? };
                let client = store.get()?;
                let metas: Vec<object_store::ObjectMeta> =
                    runtime().block_on(client.list(Some(&p)).try_collect()).map_err(|e| self.map_os(prefix, e))?;
                let root_parts = root.parts().count();
                let mut out: Vec<ObjectInfo> = metas
                    .into_iter()
                    .map(|m| ObjectInfo {
                        path: m.location.parts().skip(root_parts).map(|s| s.as_ref().to_string()).collect::<Vec<_>>().join("/"),
                        size: m.size,
                        modified: m.last_modified.timestamp_millis() as f64 / 1000.0,
                    })
                    .collect();
                out.sort_by(|a, b| a.path.cmp(&b.path));
                Ok(out)
            }
        }
    }

    /// The names of the objects directly under `prefix` (not of sub-directories, not
    /// recursive), unsorted. Cheaper than [`Store::list`] where a listing needs no sizes:
    /// a local directory is read without a `stat` per entry.
    pub fn list_names(&self, prefix: &str) -> Result<Vec<String>> {
        let prefix = prefix.trim_end_matches('/');
        match &self.backend {
            Backend::Local(root) => {
                let dir = if prefix.is_empty() { root.clone() } else { self.local(root, prefix)? };
                let entries = match std::fs::read_dir(&dir) {
                    Ok(e) => e,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                    Err(e) => return Err(io_err("listing", &dir, e)),
                };
                let mut out = Vec::new();
                for entry in entries {
                    let entry = entry.map_err(|e| io_err("listing", &dir, e))?;
                    // The file type comes with the directory entry on Linux (no stat).
                    match entry.file_type() {
                        Ok(t) if t.is_dir() => continue,
                        Ok(_) => out.push(entry.file_name().to_string_lossy().into_owned()),
                        // Deleted between the listing and the type check.
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                        Err(e) => return Err(io_err("stat", &entry.path(), e)),
                    }
                }
                Ok(out)
            }
            Backend::Object { store, root } => {
                let p = if prefix.is_empty() { root.clone() } else { self.object(root, prefix)? };
                let client = store.get()?;
                let listed = runtime().block_on(client.list_with_delimiter(Some(&p))).map_err(|e| self.map_os(prefix, e))?;
                Ok(listed.objects.into_iter().filter_map(|m| m.location.filename().map(str::to_string)).collect())
            }
        }
    }

    /// Whether anything at all exists under the root.
    pub fn root_exists(&self) -> Result<bool> {
        match &self.backend {
            Backend::Local(root) => Ok(root.is_dir()),
            Backend::Object { .. } => Ok(!self.list("")?.is_empty()),
        }
    }
}

/// Writes `data` to a unique staging file next to `p` (creating parent directories).
fn write_staging(p: &Path, data: &[u8]) -> Result<PathBuf> {
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_err("creating directory", parent, e))?;
    }
    let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let staging = p.with_file_name(format!(".{name}.{}.tmp", unique_suffix()));
    std::fs::write(&staging, data).map_err(|e| {
        let _ = std::fs::remove_file(&staging);
        io_err("writing", &staging, e)
    })?;
    Ok(staging)
}

fn list_local(dir: &Path, rel: &str, out: &mut Vec<ObjectInfo>) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err("listing", dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| io_err("listing", dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let child_rel = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
        let meta = match entry.metadata() {
            Ok(m) => m,
            // Deleted between the listing and the stat (a concurrent cleanup or commit).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_err("stat", &entry.path(), e)),
        };
        if meta.is_dir() {
            list_local(&entry.path(), &child_rel, out)?;
        } else {
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0);
            out.push(ObjectInfo { path: child_rel, size: meta.len(), modified });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_options_apply_under_their_root_only() {
        let opt = |k: &str| StorageOptions::from([(k.to_string(), "1".to_string())]);
        let store = Store::open("memory://root")
            .unwrap()
            .with_root_options([("s3://b/base".to_string(), opt("short")), ("s3://b/base/deeper/".to_string(), opt("long"))]);
        assert!(store.options_for("s3://b/base/x.lance").contains_key("short"));
        assert!(store.options_for("s3://b/base/deeper/x.lance").contains_key("long"));
        assert!(store.options_for("s3://b/base").contains_key("short"));
        assert!(store.options_for("s3://b/basement/x.lance").is_empty()); // not under "s3://b/base"
        assert!(store.options_for("memory://root/data/x.lance").is_empty());
    }

    fn stores() -> Vec<Store> {
        let dir = std::env::temp_dir().join(format!("lancepy-store-{}", unique_suffix()));
        vec![Store::open(dir.to_str().unwrap()).unwrap(), Store::open(&format!("memory://store-{}", unique_suffix())).unwrap()]
    }

    #[test]
    fn put_if_not_exists_has_one_winner() {
        for s in stores() {
            assert!(!s.root_exists().unwrap());
            assert!(s.put_if_not_exists("_versions/1.manifest", Bytes::from_static(b"a")).unwrap());
            assert!(!s.put_if_not_exists("_versions/1.manifest", Bytes::from_static(b"b")).unwrap());
            assert_eq!(s.read("_versions/1.manifest").unwrap().as_ref(), b"a");
            s.put("x/y.json", Bytes::from_static(b"1")).unwrap();
            s.put("x/y.json", Bytes::from_static(b"2")).unwrap();
            assert_eq!(s.read("x/y.json").unwrap().as_ref(), b"2");
            let names: Vec<String> = s.list("").unwrap().into_iter().map(|o| o.path).collect();
            assert_eq!(names, vec!["_versions/1.manifest".to_string(), "x/y.json".to_string()]);
            assert_eq!(s.list("_versions").unwrap().len(), 1);
            assert!(s.list("nope").unwrap().is_empty());
            s.delete("x/y.json").unwrap();
            s.delete("x/y.json").unwrap();
            assert!(!s.exists("x/y.json").unwrap());
            assert!(matches!(s.read("x/y.json"), Err(Error::NotFound(_))));
            assert!(s.read("../etc/passwd").is_err());
        }
    }
}
