//! Opening versions natively: a decoded manifest (`Manifest`) that Python reads through typed
//! getters, turned into JSON only when Python asks for the whole message, and the summaries
//! behind `LanceDataset.versions()`.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::dataset::PyStore;
use super::errors::{run, to_pyerr};
use crate::error::Error;
use crate::table::bases::BasePaths;
use crate::table::deletion;
use crate::table::json::to_json;
use crate::table::manifest::FragmentPositions;
use crate::table::naming::{ManifestNaming, DATA_DIR};
use crate::table::versions::{self, OpenedManifest};

/// One version's decoded manifest (from [`open_manifest`]).
#[pyclass(name = "Manifest", module = "lancepy._lancepy", frozen)]
pub struct PyManifest {
    pub(crate) inner: Arc<OpenedManifest>,
    /// Fragment position by id.
    by_id: FragmentPositions,
}

impl PyManifest {
    /// Made right after decoding, while the fragments are still in the CPU's caches: whether
    /// their ids increase is then a quick pass (~10 µs at 10,000 fragments), where a first
    /// lookup later paid ~100 µs reading them from memory again.
    pub(crate) fn new(opened: OpenedManifest) -> Self {
        let by_id = FragmentPositions::new(&opened.manifest.fragments);
        Self { inner: Arc::new(opened), by_id }
    }

    /// The position of the fragment with id `id` (the first, should two share it).
    fn position(&self, id: u64) -> Option<usize> {
        self.by_id.get(&self.inner.manifest.fragments, id)
    }
}

#[pymethods]
impl PyManifest {
    /// Decodes the bytes of version `version`'s manifest file, found at `path` (relative to
    /// the root of `store`) under naming `naming` (`"v1"` or `"v2"`).
    #[staticmethod]
    fn decode(
        py: Python<'_>,
        store: &PyStore,
        data: &Bound<'_, PyAny>,
        version: u64,
        path: String,
        naming: &str,
    ) -> PyResult<Self> {
        let data = super::errors::bytes_arg(data)?;
        let naming = parse_naming(naming)?;
        let opened = run(py, || versions::decode_manifest(&store.inner, version, path, naming, data))?;
        Ok(Self::new(opened))
    }

    /// The version number.
    #[getter]
    fn version(&self) -> u64 {
        self.inner.version
    }

    /// The manifest's path relative to the dataset root.
    #[getter]
    fn path(&self) -> &str {
        &self.inner.path
    }

    /// `"v1"` or `"v2"`: the naming scheme of the manifest's file name.
    #[getter]
    fn naming(&self) -> &'static str {
        self.inner.naming.as_str()
    }

    /// The manifest file's size in bytes.
    #[getter]
    fn size(&self) -> u64 {
        self.inner.size
    }

    /// `Manifest.reader_feature_flags`.
    #[getter]
    fn reader_feature_flags(&self) -> u64 {
        self.inner.manifest.reader_feature_flags
    }

    /// `Manifest.writer_feature_flags`.
    #[getter]
    fn writer_feature_flags(&self) -> u64 {
        self.inner.manifest.writer_feature_flags
    }

    /// The ids of the fragments, in manifest order.
    #[getter]
    fn fragment_ids(&self) -> Vec<u64> {
        self.inner.manifest.fragments.iter().map(|f| f.id).collect()
    }

    /// The fragments whose ids are in `ids` (all of them when `None`), as a JSON list in the
    /// manifest's order (ids it lacks are left out): what a commit that replaces a few
    /// fragments needs of the base, without turning the others into JSON.
    #[pyo3(signature = (ids=None))]
    fn fragments_json(&self, py: Python<'_>, ids: Option<Vec<u64>>) -> PyResult<String> {
        run(py, || match ids {
            None => to_json(&self.inner.manifest.fragments),
            Some(ids) => {
                let wanted: std::collections::HashSet<u64> = ids.into_iter().collect();
                let picked: Vec<_> = self.inner.manifest.fragments.iter().filter(|f| wanted.contains(&f.id)).collect();
                to_json(&picked)
            }
        })
    }

    /// The fragment with id `id` as JSON (as one entry of `fragments_json`), or `None` if the
    /// version has none: one fragment's metadata without the others' JSON.
    fn fragment_json(&self, py: Python<'_>, id: u64) -> PyResult<Option<String>> {
        match self.position(id) {
            None => Ok(None),
            Some(i) => run(py, || to_json(&self.inner.manifest.fragments[i])).map(Some),
        }
    }

    /// Whether the version has a fragment with id `id`.
    fn has_fragment(&self, id: u64) -> bool {
        self.position(id).is_some()
    }

    /// `(seconds, nanos)` of the commit time (`(0, 0)` if the manifest records none).
    #[getter]
    fn timestamp(&self) -> (i64, i32) {
        self.inner.manifest.timestamp.as_ref().map_or((0, 0), |t| (t.seconds, t.nanos))
    }

    /// `Manifest.transaction_file` (empty if the transaction is inline or absent).
    #[getter]
    fn transaction_file(&self) -> &str {
        &self.inner.manifest.transaction_file
    }

    /// `Manifest.max_fragment_id`, or `None` where the manifest records none.
    #[getter]
    fn max_fragment_id(&self) -> Option<u32> {
        self.inner.manifest.max_fragment_id
    }

    /// The row of [`version_summaries`] for this version, from the decoded manifest.
    fn summary(&self) -> SummaryRow {
        summary_row(versions::VersionSummary::of_manifest(self.inner.version, &self.inner.manifest))
    }

    /// The raw `IndexSection` message, if any.
    #[getter]
    fn index_section<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.inner.index_section.as_ref().map(|b| PyBytes::new(py, b))
    }

    /// The raw inline `Transaction` message, if any.
    #[getter]
    fn transaction<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.inner.transaction.as_ref().map(|b| PyBytes::new(py, b))
    }

    /// `Manifest.data_format.version` (`"2.0"`, `"2.1"`, ...), or `None` where the manifest
    /// records none (older manifests: the version is then inferred from the files).
    #[getter]
    fn data_format_version(&self) -> Option<String> {
        let f = self.inner.manifest.data_format.as_ref()?;
        (!f.version.is_empty()).then(|| f.version.clone())
    }

    /// The largest field id the schema or any data file uses (-1 if none).
    #[getter]
    fn max_field_id(&self) -> i64 {
        let m = &self.inner.manifest;
        let schema = m.fields.iter().map(|f| i64::from(f.id));
        let files = m.fragments.iter().flat_map(|f| f.files.iter()).flat_map(|d| d.fields.iter().map(|&i| i64::from(i)));
        schema.chain(files).max().unwrap_or(-1)
    }

    /// `Manifest.fields` (the schema) as JSON: what `json()` gives under `"fields"`, without
    /// the fragments (whose JSON grows with the dataset).
    fn fields_json(&self, py: Python<'_>) -> PyResult<String> {
        run(py, || to_json(&self.inner.manifest.fields))
    }

    /// `Manifest.schema_metadata` as JSON (as under `"schema_metadata"` in `json()`).
    fn schema_metadata_json(&self, py: Python<'_>) -> PyResult<String> {
        run(py, || to_json(&self.inner.manifest.schema_metadata))
    }

    /// `Manifest.config` as JSON (as under `"config"` in `json()`).
    fn config_json(&self, py: Python<'_>) -> PyResult<String> {
        run(py, || to_json(&self.inner.manifest.config))
    }

    /// `(fragments, has_deletions, data_file_versions)` of the fragments whose ids are not in
    /// `exclude`: how many there are, whether one has a deletion file that deletes rows (or
    /// names a file), and the distinct `(file_major_version, file_minor_version)` pairs of
    /// their data files, sorted. What a commit that keeps most fragments as they are needs
    /// of them.
    #[pyo3(signature = (exclude=Vec::new()))]
    fn fragment_summary(&self, exclude: Vec<u64>) -> (usize, bool, Vec<(u32, u32)>) {
        let exclude: std::collections::HashSet<u64> = exclude.into_iter().collect();
        let (mut count, mut deletions, mut versions) = (0usize, false, Vec::<(u32, u32)>::new());
        for f in self.inner.manifest.fragments.iter().filter(|f| !exclude.contains(&f.id)) {
            count += 1;
            deletions |= f.deletion_file.as_ref().is_some_and(|d| d.num_deleted_rows > 0 || d.id != 0);
            for d in &f.files {
                let v = (d.file_major_version, d.file_minor_version);
                if !versions.contains(&v) {
                    versions.push(v);
                }
            }
        }
        versions.sort_unstable();
        (count, deletions, versions)
    }

    /// The whole message as JSON with no fragments (`"fragments": []`): what a commit that
    /// keeps most fragments as they are changes, without the part that grows with the dataset.
    fn json_without_fragments(&self, py: Python<'_>) -> PyResult<String> {
        run(py, || {
            // (A clone of the fragments costs a few milliseconds at 10,000 fragments; their
            // JSON, and Python's parse of it, many times that.)
            let mut top = self.inner.manifest.as_ref().clone();
            top.fragments = Vec::new();
            to_json(&top)
        })
    }

    /// The data files and deletion files (those that delete rows or name a file) this
    /// version uses, for the dataset rooted at `root`: `(paths, uris)`, the paths (relative
    /// to `root`: `data/...`, `_deletions/...`) of files under the root whose names are plain
    /// (no empty, `.` or `..` parts), and the full URIs of the others (under a registered base
    /// path, or oddly named), for the caller to place. A file naming a base path the manifest
    /// does not register is left out (a corrupt manifest is reported when it is read).
    fn file_paths(&self, py: Python<'_>, root: &str) -> PyResult<(Vec<String>, Vec<String>)> {
        run(py, || {
            let m = &self.inner.manifest;
            let bases = BasePaths::new(root, &m.base_paths)?;
            let plain = |p: &str| p.split('/').all(|part| !part.is_empty() && part != "." && part != "..");
            let (mut paths, mut uris) = (Vec::new(), Vec::new());
            for f in &m.fragments {
                for d in &f.files {
                    match d.base_id {
                        None if plain(&d.path) => paths.push(format!("{DATA_DIR}/{}", d.path)),
                        _ => uris.extend(bases.data_file_uri(d).ok()),
                    }
                }
                let Some(d) = f.deletion_file.as_ref().filter(|d| d.num_deleted_rows > 0 || d.id != 0) else { continue };
                match d.base_id {
                    None => paths.push(deletion::path_of(f.id, d)),
                    Some(_) => uris.extend(bases.deletion_file_uri(f.id, d).ok()),
                }
            }
            Ok((paths, uris))
        })
    }

    /// `Manifest.base_paths` as JSON (as under `"base_paths"` in `json()`).
    fn base_paths_json(&self, py: Python<'_>) -> PyResult<String> {
        run(py, || to_json(&self.inner.manifest.base_paths))
    }

    /// `Manifest.table_metadata` as JSON (as under `"table_metadata"` in `json()`).
    fn table_metadata_json(&self, py: Python<'_>) -> PyResult<String> {
        run(py, || to_json(&self.inner.manifest.table_metadata))
    }

    /// The whole `Manifest` message as JSON (the shape `read_manifest` gives).
    fn json(&self, py: Python<'_>) -> PyResult<String> {
        run(py, || to_json(self.inner.manifest.as_ref()))
    }
}

/// The manifest of `version` (the latest when `None`), or `None` when the dataset has no
/// such version: listing the versions, to say which exist, is left to the caller.
#[pyfunction]
#[pyo3(signature = (store, version=None))]
pub fn open_manifest(py: Python<'_>, store: &PyStore, version: Option<u64>) -> PyResult<Option<PyManifest>> {
    let opened = run(py, || versions::open_manifest(&store.inner, version))?;
    Ok(opened.map(PyManifest::new))
}

/// The manifests of `versions` (`(version, path)` pairs, the path relative to the root as
/// `list_versions` gives it, named under `naming`), read and decoded in parallel, in the order
/// given; `None` for one removed since it was listed.
#[pyfunction]
pub fn open_manifests(
    py: Python<'_>,
    store: &PyStore,
    versions: Vec<(u64, String)>,
    naming: &str,
) -> PyResult<Vec<Option<PyManifest>>> {
    let naming = parse_naming(naming)?;
    let opened = run(py, || {
        let got = crate::parallel::map_io(versions, true, |(v, path)| match store.inner.read(&path) {
            Ok(data) => versions::decode_manifest(&store.inner, v, path, naming, data).map(Some),
            Err(Error::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        });
        got.into_iter().collect::<crate::error::Result<Vec<_>>>()
    })?;
    Ok(opened.into_iter().map(|m| m.map(PyManifest::new)).collect())
}

fn parse_naming(naming: &str) -> PyResult<ManifestNaming> {
    match naming {
        "v1" => Ok(ManifestNaming::V1),
        "v2" => Ok(ManifestNaming::V2),
        other => Err(to_pyerr(Error::invalid_input(format!("manifest naming must be 'v1' or 'v2', got {other:?}")))),
    }
}

/// One row of [`version_summaries`]: version, commit seconds, commit nanoseconds, then the
/// totals pylance reports as a version's metadata.
type SummaryRow = (u64, i64, i32, u64, u64, u64, u64, u64, u64);

/// `(version, seconds, nanos, total_data_file_rows, total_data_files,
/// total_deletion_file_rows, total_deletion_files, total_files_size, total_fragments)` of
/// every version, oldest first.
#[pyfunction]
pub fn version_summaries(py: Python<'_>, store: &PyStore) -> PyResult<Vec<SummaryRow>> {
    let all = run(py, || versions::version_summaries(&store.inner))?;
    Ok(all.into_iter().map(summary_row).collect())
}

fn summary_row(s: versions::VersionSummary) -> SummaryRow {
    (
        s.version,
        s.seconds,
        s.nanos,
        s.total_data_file_rows,
        s.total_data_files,
        s.total_deletion_file_rows,
        s.total_deletion_files,
        s.total_files_size,
        s.total_fragments,
    )
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyManifest>()?;
    m.add_function(wrap_pyfunction!(open_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(open_manifests, m)?)?;
    m.add_function(wrap_pyfunction!(version_summaries, m)?)?;
    Ok(())
}
