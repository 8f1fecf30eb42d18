//! Manifest and transaction bindings: manifest files and `Transaction` messages decoded to
//! and encoded from JSON, and the index section helpers a commit uses (prune, filter and
//! rebase the indices it carries over).

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::errors::{run, IntoPyResult};
use crate::error::Result;
use crate::format::tablepb;
use crate::table::json::{from_json, to_json};
use crate::table::manifest;

/// Decodes a manifest file: `(manifest JSON, index section bytes, inline transaction bytes)`.
#[pyfunction]
pub fn read_manifest<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    path: &str,
) -> PyResult<(String, Option<Bound<'py, PyBytes>>, Option<Bound<'py, PyBytes>>)> {
    let data = super::errors::bytes_arg(data)?;
    let (json, index, txn) = run(py, || -> Result<_> {
        let m = manifest::read_manifest(data, path)?;
        Ok((to_json(&m.manifest)?, m.index_section, m.transaction))
    })?;
    Ok((json, index.map(|b| PyBytes::new(py, &b)), txn.map(|b| PyBytes::new(py, &b))))
}

/// Encodes a manifest file from its JSON, the raw transaction and the raw index section.
/// With the dataset's `store`, a legacy (v1) dataset's dictionary values are read from its
/// data files and written into the manifest (where pylance looks for them).
///
/// With `base` (a decoded manifest), the new manifest's fragments are `base`'s less those
/// whose ids are in `removed`, each replaced by the fragment of its id in `replaced` (a JSON
/// list) where there is one, followed by `appended` (a JSON list), ordered by id (a stable
/// sort); `manifest_json`'s own fragments must then be empty. A commit that changes a few
/// fragments never turns the others into JSON and back. With `project` (field ids), every
/// fragment is then projected onto those fields (`table::manifest::project_fragment`): a
/// `Project` commit, which changes every fragment, done without their JSON.
#[pyfunction]
#[pyo3(signature = (manifest_json, transaction=None, index_section=None, store=None, *, base=None, appended=None,
                    removed=Vec::new(), replaced=None, project=None))]
#[allow(clippy::too_many_arguments)]
pub fn write_manifest<'py>(
    py: Python<'py>,
    manifest_json: &str,
    transaction: Option<Vec<u8>>,
    index_section: Option<Vec<u8>>,
    store: Option<PyRef<'py, super::dataset::PyStore>>,
    base: Option<PyRef<'py, super::manifest::PyManifest>>,
    appended: Option<&str>,
    removed: Vec<u64>,
    replaced: Option<&str>,
    project: Option<Vec<i32>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut m: tablepb::Manifest = from_json(manifest_json, "manifest").py()?;
    let list = |text: Option<&str>| -> PyResult<Vec<tablepb::DataFragment>> {
        text.map(|t| from_json(t, "fragments").py()).transpose().map(Option::unwrap_or_default)
    };
    if let Some(base) = &base {
        if !m.fragments.is_empty() {
            return Err(super::errors::to_pyerr(crate::error::Error::invalid_input(
                "write_manifest: fragments given both in the JSON and as a base",
            )));
        }
        let removed: std::collections::HashSet<u64> = removed.into_iter().collect();
        let mut replaced: std::collections::HashMap<u64, tablepb::DataFragment> =
            list(replaced)?.into_iter().map(|f| (f.id, f)).collect();
        let added = list(appended)?;
        let kept = &base.inner.manifest.fragments;
        let mut fragments = Vec::with_capacity(kept.len() + added.len());
        for f in kept.iter().filter(|f| !removed.contains(&f.id)) {
            fragments.push(replaced.remove(&f.id).unwrap_or_else(|| f.clone()));
        }
        fragments.extend(added);
        fragments.sort_by_key(|f| f.id);
        m.fragments = fragments;
    } else if appended.is_some() || replaced.is_some() || !removed.is_empty() {
        return Err(super::errors::to_pyerr(crate::error::Error::invalid_input(
            "write_manifest: fragment changes need a base manifest",
        )));
    }
    if let Some(kept) = project {
        let kept: std::collections::HashSet<i32> = kept.into_iter().collect();
        m.fragments.iter_mut().for_each(|f| manifest::project_fragment(f, &kept));
    }
    let store = store.map(|s| s.inner.clone());
    let out = run(py, move || {
        let dictionaries = match &store {
            Some(s) => manifest::legacy_dictionaries(s, &m)?,
            None => Vec::new(),
        };
        manifest::write_manifest_with_dictionaries(m, transaction.as_deref(), index_section.as_deref(), &dictionaries)
    })?;
    Ok(PyBytes::new(py, &out))
}

/// Decodes a `Transaction` message to JSON.
#[pyfunction]
pub fn decode_transaction(data: &Bound<'_, PyAny>, path: &str) -> PyResult<String> {
    let data = super::errors::bytes_arg(data)?;
    to_json(&manifest::read_transaction(&data, path).py()?).py()
}

/// Encodes a `Transaction` message from JSON.
#[pyfunction]
pub fn encode_transaction<'py>(py: Python<'py>, json: &str) -> PyResult<Bound<'py, PyBytes>> {
    use prost::Message;
    let t: tablepb::Transaction = from_json(json, "transaction").py()?;
    Ok(PyBytes::new(py, &t.encode_to_vec()))
}

/// Decodes a raw `IndexSection` to JSON (`{"indices": [IndexMetadata...]}`, the form
/// transactions carry index entries in).
#[pyfunction]
pub fn index_section_to_json(section: Vec<u8>) -> PyResult<String> {
    use prost::Message;
    let s = tablepb::IndexSection::decode(&section[..])
        .map_err(|e| crate::error::Error::corrupt(format!("index section: {e}")))
        .py()?;
    to_json(&s).py()
}

/// Encodes a raw `IndexSection` from its JSON form.
#[pyfunction]
pub fn index_section_from_json<'py>(py: Python<'py>, json: &str) -> PyResult<Bound<'py, PyBytes>> {
    use prost::Message;
    let s: tablepb::IndexSection = from_json(json, "index section").py()?;
    Ok(PyBytes::new(py, &s.encode_to_vec()))
}

/// Removes fragment ids from every index's fragment bitmap in a raw `IndexSection`.
#[pyfunction]
pub fn prune_index_section<'py>(py: Python<'py>, section: Vec<u8>, fragment_ids: Vec<u64>) -> PyResult<Bound<'py, PyBytes>> {
    let out = manifest::prune_index_section(&section, &fragment_ids).py()?;
    Ok(PyBytes::new(py, &out))
}

/// Keeps only indices whose fields are all in `field_ids`.
#[pyfunction]
pub fn filter_index_section<'py>(py: Python<'py>, section: Vec<u8>, field_ids: Vec<i32>) -> PyResult<Bound<'py, PyBytes>> {
    let out = manifest::filter_index_section(&section, |f| field_ids.contains(&f)).py()?;
    Ok(PyBytes::new(py, &out))
}

/// Points the indices of a raw `IndexSection` that have no base path at base `base_id`.
#[pyfunction]
pub fn rebase_index_section<'py>(py: Python<'py>, section: Vec<u8>, base_id: u32) -> PyResult<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(py, &manifest::rebase_index_section(&section, base_id).py()?))
}

/// `(name, field ids)` of each index in a raw `IndexSection`.
#[pyfunction]
pub fn describe_index_section(section: Vec<u8>) -> PyResult<Vec<(String, Vec<i32>)>> {
    manifest::describe_index_section(&section).py()
}

/// Each index of a raw `IndexSection` as a dict: `name`, `fields`, `uuid`,
/// `dataset_version`, `fragment_ids`, `details_type`, `index_version`, `base_id`,
/// `details_value` (the details message's bytes), `created_at` (ms since the epoch, or None),
/// `covering_fields`, `files_size` (the listed files' total size; None when none are listed).
#[pyfunction]
pub fn index_section_entries<'py>(py: Python<'py>, section: Vec<u8>) -> PyResult<Vec<Bound<'py, pyo3::types::PyDict>>> {
    use pyo3::types::PyDictMethods;
    manifest::index_entries(&section)
        .py()?
        .into_iter()
        .map(|e| {
            let d = pyo3::types::PyDict::new(py);
            d.set_item("name", e.name)?;
            d.set_item("fields", e.fields)?;
            d.set_item("uuid", e.uuid)?;
            d.set_item("dataset_version", e.dataset_version)?;
            d.set_item("fragment_ids", e.fragment_ids)?;
            d.set_item("details_type", e.details_type)?;
            d.set_item("index_version", e.index_version)?;
            d.set_item("base_id", e.base_id)?;
            d.set_item("details_value", pyo3::types::PyBytes::new(py, &e.details_value))?;
            d.set_item("created_at", e.created_at)?;
            d.set_item("covering_fields", e.covering_fields)?;
            d.set_item("files_size", e.files_size)?;
            Ok(d)
        })
        .collect()
}
