//! The manifest file envelope (FORMAT.md §4.2) and transaction files.
//!
//! ```text
//! [optional IndexSection]        u32 LE length + IndexSection   (position = Manifest.index_section)
//! [optional inline Transaction]  u32 LE length + Transaction    (position = Manifest field 23)
//! [Manifest]                     u32 LE length + Manifest
//! [i64 LE position of the Manifest's length prefix][u16 0][u16 2]["LANC"]
//! ```
//!
//! The index section and the inline transaction are kept as raw bytes: lancepy does not
//! interpret indices, it only carries them from one version to the next.

use bytes::Bytes;
use prost::Message;

use crate::error::{Error, Result};
use crate::format::tablepb;

/// Magic bytes at the very end of a manifest.
pub const MANIFEST_MAGIC: &[u8; 4] = b"LANC";
/// Footer: i64 position, u16 major, u16 minor, magic.
const FOOTER_LEN: usize = 16;
/// Version numbers written in the footer (what pylance 14 writes).
const FOOTER_MAJOR: u16 = 0;
const FOOTER_MINOR: u16 = 2;

/// A decoded manifest file.
#[derive(Debug, Clone)]
pub struct ManifestFile {
    /// The manifest.
    pub manifest: tablepb::Manifest,
    /// Raw `IndexSection` protobuf, if the manifest has one.
    pub index_section: Option<Bytes>,
    /// Raw inline `Transaction` protobuf, if the manifest has one.
    pub transaction: Option<Bytes>,
}

/// Reads the length-prefixed message at `pos`, which must end before `limit`.
fn prefixed(data: &Bytes, pos: u64, limit: usize, what: &str) -> Result<Bytes> {
    let pos = usize::try_from(pos).map_err(|_| Error::corrupt(format!("manifest: {what} position {pos} is too large")))?;
    if pos.checked_add(4).is_none_or(|e| e > limit) {
        return Err(Error::corrupt(format!("manifest: {what} position {pos} is outside the file ({limit} bytes of messages)")));
    }
    let len = u32::from_le_bytes(data[pos..pos + 4].try_into().expect("4 bytes")) as usize;
    let end = pos + 4 + len;
    if end > limit {
        return Err(Error::corrupt(format!(
            "manifest: {what} at {pos} claims {len} bytes, past the end of the messages ({limit})"
        )));
    }
    Ok(data.slice(pos + 4..end))
}

/// The encoded `Manifest` message of a manifest file (checked against the file's bounds),
/// for readers that decode only some of its fields.
pub fn manifest_message(data: &Bytes, path: &str) -> Result<Bytes> {
    let ctx = |msg: String| Error::Corrupt(format!("{path}: {msg}"));
    if data.len() < FOOTER_LEN + 4 {
        return Err(ctx(format!("{} bytes is too short to be a manifest", data.len())));
    }
    let footer = &data[data.len() - FOOTER_LEN..];
    if &footer[12..16] != MANIFEST_MAGIC {
        return Err(ctx("the file does not end with the manifest magic \"LANC\"".into()));
    }
    let limit = data.len() - FOOTER_LEN;
    let pos = i64::from_le_bytes(footer[..8].try_into().expect("8 bytes"));
    let pos = u64::try_from(pos).map_err(|_| ctx(format!("negative manifest position {pos}")))?;
    prefixed(data, pos, limit, "manifest").map_err(|e| ctx(e.to_string()))
}

/// Decodes a manifest file.
pub fn read_manifest(data: Bytes, path: &str) -> Result<ManifestFile> {
    let ctx = |msg: String| Error::Corrupt(format!("{path}: {msg}"));
    let body = manifest_message(&data, path)?;
    let limit = data.len() - FOOTER_LEN;
    let manifest =
        tablepb::Manifest::decode(body).map_err(|e| ctx(format!("the manifest is not a valid protobuf message: {e}")))?;
    let index_section = match manifest.index_section {
        Some(p) => Some(prefixed(&data, p, limit, "index section").map_err(|e| ctx(e.to_string()))?),
        None => None,
    };
    let transaction = match manifest.inline_transaction_position.or(manifest.transaction_section) {
        Some(p) => Some(prefixed(&data, p, limit, "inline transaction").map_err(|e| ctx(e.to_string()))?),
        None => None,
    };
    Ok(ManifestFile { manifest, index_section, transaction })
}

fn push_prefixed(out: &mut Vec<u8>, msg: &[u8]) -> Result<u64> {
    let pos = out.len() as u64;
    let len = u32::try_from(msg.len()).map_err(|_| Error::invalid_input("manifest message larger than 4 GiB"))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(msg);
    Ok(pos)
}

/// Encodes a manifest file. The positions of the index section and of the inline
/// transaction are filled in; `manifest.transaction_section` is cleared.
pub fn write_manifest(manifest: tablepb::Manifest, transaction: Option<&[u8]>, index_section: Option<&[u8]>) -> Result<Vec<u8>> {
    write_manifest_with_dictionaries(manifest, transaction, index_section, &[])
}

/// The dictionaries a legacy (v1) dataset's manifest must hold: per dictionary field, the
/// values stored in the first of its data files (under the dataset root) that has it.
/// Empty for other datasets.
pub fn legacy_dictionaries(store: &crate::io::Store, manifest: &tablepb::Manifest) -> Result<Vec<(i32, arrow_array::ArrayRef)>> {
    let legacy = manifest.data_format.as_ref().is_some_and(|f| f.version == "0.1");
    let ids: Vec<i32> = manifest.fields.iter().filter(|f| f.logical_type.starts_with("dict:")).map(|f| f.id).collect();
    let mut out = Vec::new();
    if !legacy {
        return Ok(out);
    }
    for id in ids {
        let files = manifest.fragments.iter().flat_map(|f| &f.files);
        for file in files.filter(|d| d.base_id.is_none() && d.fields.contains(&id)) {
            let uri = store.child_uri(&format!("{}/{}", super::naming::DATA_DIR, file.path));
            let reader = super::file_cache::open_data_file(store, &uri)?;
            if let Some(values) = reader.legacy().and_then(|l| l.dictionary(id)) {
                out.push((id, values.clone()));
                break;
            }
        }
    }
    Ok(out)
}

/// [`write_manifest`] for a legacy (v1) dataset with dictionary fields: their values go
/// into the manifest file (first), located by each field's `dictionary`, as pylance keeps
/// them. Dictionary fields without values in `dictionaries` lose their (stale) location.
pub fn write_manifest_with_dictionaries(
    mut manifest: tablepb::Manifest,
    transaction: Option<&[u8]>,
    index_section: Option<&[u8]>,
    dictionaries: &[(i32, arrow_array::ArrayRef)],
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for f in manifest.fields.iter_mut() {
        if f.logical_type.starts_with("dict:") {
            f.dictionary = None;
        }
    }
    for (id, values) in dictionaries {
        let pos = crate::file::legacy::encode_dictionary_values(values.as_ref(), 0, &mut out)?;
        if let Some(f) = manifest.fields.iter_mut().find(|f| f.id == *id) {
            f.dictionary = Some(crate::format::filepb::Dictionary { offset: pos as i64, length: values.len() as i64 });
        }
    }
    manifest.index_section = match index_section {
        Some(s) => Some(push_prefixed(&mut out, s)?),
        None => None,
    };
    manifest.transaction_section = None;
    manifest.inline_transaction_position = match transaction {
        Some(t) => Some(push_prefixed(&mut out, t)?),
        None => None,
    };
    let pos = push_prefixed(&mut out, &manifest.encode_to_vec())?;
    out.extend_from_slice(&(pos as i64).to_le_bytes());
    out.extend_from_slice(&FOOTER_MAJOR.to_le_bytes());
    out.extend_from_slice(&FOOTER_MINOR.to_le_bytes());
    out.extend_from_slice(MANIFEST_MAGIC);
    Ok(out)
}

/// Decodes a transaction file (a raw `Transaction` message, no framing).
pub fn read_transaction(data: &[u8], path: &str) -> Result<tablepb::Transaction> {
    tablepb::Transaction::decode(data).map_err(|e| Error::Corrupt(format!("{path}: not a valid transaction: {e}")))
}

/// Removes `fragment_ids` from the fragment bitmaps of every index in an `IndexSection`,
/// so that indices stop claiming rows whose addresses changed (compaction, overwrite of
/// fragments). Indices covering no fragment are kept: pylance handles those.
pub fn prune_index_section(section: &[u8], fragment_ids: &[u64]) -> Result<Vec<u8>> {
    let mut s = tablepb::IndexSection::decode(section)?;
    for idx in &mut s.indices {
        if idx.fragment_bitmap.is_empty() {
            continue;
        }
        let bm = roaring::RoaringBitmap::deserialize_from(&idx.fragment_bitmap[..])
            .map_err(|e| Error::corrupt(format!("index {:?}: invalid fragment bitmap: {e}", idx.name)))?;
        let mut bm = super::deletion::normalize_bitmap(bm);
        for &f in fragment_ids {
            if let Ok(f) = u32::try_from(f) {
                bm.remove(f);
            }
        }
        let mut out = Vec::with_capacity(bm.serialized_size());
        bm.serialize_into(&mut out).map_err(|e| Error::invalid_input(format!("serializing a bitmap: {e}")))?;
        idx.fragment_bitmap = out.into();
    }
    Ok(s.encode_to_vec())
}

/// Points every index of an `IndexSection` that lives under the dataset root (no `base_id`)
/// at base path `base_id` instead: a shallow clone's indices stay in the source dataset.
pub fn rebase_index_section(section: &[u8], base_id: u32) -> Result<Vec<u8>> {
    let mut s = tablepb::IndexSection::decode(section)?;
    for idx in &mut s.indices {
        idx.base_id.get_or_insert(base_id);
    }
    Ok(s.encode_to_vec())
}

/// Names and covered field ids of the indices in an `IndexSection`.
pub fn describe_index_section(section: &[u8]) -> Result<Vec<(String, Vec<i32>)>> {
    let s = tablepb::IndexSection::decode(section)?;
    Ok(s.indices.into_iter().map(|i| (i.name, i.fields)).collect())
}

/// One index of an `IndexSection`, as needed to open and use it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexEntry {
    /// The index's name (e.g. `emb_idx`).
    pub name: String,
    /// Ids of the fields it indexes.
    pub fields: Vec<i32>,
    /// Hyphenated lowercase uuid: the index files live under `_indices/<uuid>/`.
    pub uuid: String,
    /// The dataset version the index was built at.
    pub dataset_version: u64,
    /// Fragments whose rows the index covers (empty if the manifest records none).
    pub fragment_ids: Vec<u32>,
    /// `index_details` type url (e.g. `/lance.index.pb.VectorIndexDetails`), empty if absent.
    pub details_type: String,
    /// The index format version, if recorded.
    pub index_version: Option<i32>,
    /// The base path (see `base_paths`) holding the index files, if not the dataset's own.
    pub base_id: Option<u32>,
    /// `index_details` value bytes (empty if absent).
    pub details_value: Vec<u8>,
    /// When the index was created, milliseconds since the Unix epoch, if recorded.
    pub created_at: Option<u64>,
    /// `covering_fields` as stored.
    pub covering_fields: Vec<i32>,
    /// Total size of the files the entry lists (`None` when it lists none).
    pub files_size: Option<u64>,
}

/// Every index of an `IndexSection`, with its uuid and fragment bitmap decoded.
pub fn index_entries(section: &[u8]) -> Result<Vec<IndexEntry>> {
    let s = tablepb::IndexSection::decode(section)?;
    s.indices
        .into_iter()
        .map(|i| {
            let raw = i.uuid.as_ref().map(|u| &u.uuid[..]).unwrap_or(&[]);
            let uuid = uuid::Uuid::from_slice(raw)
                .map_err(|_| Error::corrupt(format!("index {:?}: its uuid has {} bytes, not 16", i.name, raw.len())))?;
            let fragment_ids = if i.fragment_bitmap.is_empty() {
                Vec::new()
            } else {
                let bm = roaring::RoaringBitmap::deserialize_from(&i.fragment_bitmap[..])
                    .map_err(|e| Error::corrupt(format!("index {:?}: invalid fragment bitmap: {e}", i.name)))?;
                bm.iter().collect()
            };
            Ok(IndexEntry {
                name: i.name,
                fields: i.fields,
                uuid: uuid.hyphenated().to_string(),
                dataset_version: i.dataset_version,
                fragment_ids,
                files_size: if i.files.is_empty() { None } else { Some(i.files.iter().map(|f| f.size_bytes).sum()) },
                details_value: i.index_details.as_ref().map(|d| d.value.to_vec()).unwrap_or_default(),
                details_type: i.index_details.map(|d| d.type_url).unwrap_or_default(),
                index_version: i.index_version,
                base_id: i.base_id,
                created_at: i.created_at,
                covering_fields: i.covering_fields,
            })
        })
        .collect()
}

/// Keeps only the indices whose fields all satisfy `keep_field`.
pub fn filter_index_section(section: &[u8], keep_field: impl Fn(i32) -> bool) -> Result<Vec<u8>> {
    let mut s = tablepb::IndexSection::decode(section)?;
    s.indices.retain(|i| i.fields.iter().all(|&f| keep_field(f)));
    Ok(s.encode_to_vec())
}

/// A fragment's data files after a projection onto the field ids `kept` (a `Project`
/// commit, as pylance's drop_columns leaves them): every other field id of a file becomes a
/// tombstone (-2), except in legacy-format files, whose page tables are indexed by their
/// field ids; a file left with no live field is dropped, unless no file has one (then the
/// first stays, for the fragment's row count).
pub fn project_fragment(fragment: &mut tablepb::DataFragment, kept: &std::collections::HashSet<i32>) {
    const TOMBSTONE: i32 = -2;
    for file in &mut fragment.files {
        let legacy = file.file_major_version == 0 && file.file_minor_version != 3;
        if !legacy {
            for field in &mut file.fields {
                if !kept.contains(field) {
                    *field = TOMBSTONE;
                }
            }
        }
    }
    let live = |f: &tablepb::DataFile| f.fields.iter().any(|&i| i != TOMBSTONE);
    if fragment.files.iter().any(live) {
        fragment.files.retain(live);
    } else {
        fragment.files.truncate(1);
    }
}

/// Finds a manifest's fragments by id: a binary search where the fragments are in
/// increasing id order (as writers keep them; checked once), else a map built once. Where two
/// fragments share an id (lance 0.16 wrote such manifests), the first is found, and
/// [`FragmentPositions::find`] says the id is shared.
#[derive(Debug)]
pub struct FragmentPositions(Option<std::collections::HashMap<u64, (usize, bool)>>);

impl FragmentPositions {
    /// The index of `fragments`.
    pub fn new(fragments: &[tablepb::DataFragment]) -> Self {
        if fragments.windows(2).all(|w| w[0].id < w[1].id) {
            return Self(None);
        }
        let mut map = std::collections::HashMap::with_capacity(fragments.len());
        for (i, f) in fragments.iter().enumerate() {
            map.entry(f.id).and_modify(|(_, shared)| *shared = true).or_insert((i, false));
        }
        Self(Some(map))
    }

    /// The position in `fragments` (those the index was made of) of the fragment `id`.
    pub fn get(&self, fragments: &[tablepb::DataFragment], id: u64) -> Option<usize> {
        self.find(fragments, id).map(|(i, _)| i)
    }

    /// [`FragmentPositions::get`], and whether another fragment has the id too.
    pub fn find(&self, fragments: &[tablepb::DataFragment], id: u64) -> Option<(usize, bool)> {
        match &self.0 {
            None => fragments.binary_search_by_key(&id, |f| f.id).ok().map(|i| (i, false)),
            Some(map) => map.get(&id).copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_round_trip() {
        let m = tablepb::Manifest { version: 4, max_fragment_id: Some(0), ..Default::default() };
        let txn = tablepb::Transaction { read_version: 3, uuid: "u".into(), ..Default::default() }.encode_to_vec();
        let bytes = write_manifest(m.clone(), Some(&txn), None).unwrap();
        let back = read_manifest(Bytes::from(bytes.clone()), "x").unwrap();
        assert_eq!(back.manifest.version, 4);
        assert_eq!(back.manifest.inline_transaction_position, Some(0));
        assert_eq!(back.transaction.as_deref(), Some(&txn[..]));
        assert!(back.index_section.is_none());
        // Damage: truncation, bad magic, bad position.
        assert!(read_manifest(Bytes::from(bytes[..bytes.len() - 1].to_vec()), "x").is_err());
        let mut bad = bytes.clone();
        let n = bad.len();
        bad[n - 16] = 0xff;
        assert!(matches!(read_manifest(Bytes::from(bad), "x"), Err(Error::Corrupt(_))));
        assert!(read_manifest(Bytes::from_static(b"garbage garbage garbage"), "x").is_err());
    }

    #[test]
    fn a_projection_tombstones_dropped_fields_and_drops_dead_files() {
        let file = |fields: Vec<i32>, major| tablepb::DataFile { fields, file_major_version: major, ..Default::default() };
        let kept: std::collections::HashSet<i32> = [0, 3].into_iter().collect();
        let mut f = tablepb::DataFragment {
            files: vec![file(vec![0, 1], 2), file(vec![2], 2), file(vec![3, -2], 2)],
            ..Default::default()
        };
        project_fragment(&mut f, &kept);
        assert_eq!(f.files.iter().map(|d| d.fields.clone()).collect::<Vec<_>>(), vec![vec![0, -2], vec![3, -2]]);
        // Nothing live: the first file stays; a legacy file keeps its ids (and stays live).
        let mut dead = tablepb::DataFragment { files: vec![file(vec![1], 2), file(vec![2], 2)], ..Default::default() };
        project_fragment(&mut dead, &kept);
        assert_eq!(dead.files.iter().map(|d| d.fields.clone()).collect::<Vec<_>>(), vec![vec![-2]]);
        let mut legacy = tablepb::DataFragment { files: vec![file(vec![1, 2], 0)], ..Default::default() };
        project_fragment(&mut legacy, &kept);
        assert_eq!(legacy.files[0].fields, vec![1, 2]);
    }

    #[test]
    fn rebasing_indices_keeps_existing_bases() {
        let idx = |name: &str, base_id| tablepb::IndexMetadata { name: name.into(), base_id, ..Default::default() };
        let section = tablepb::IndexSection { indices: vec![idx("own", None), idx("elsewhere", Some(4))] }.encode_to_vec();
        let out = tablepb::IndexSection::decode(&rebase_index_section(&section, 2).unwrap()[..]).unwrap();
        assert_eq!(out.indices.iter().map(|i| i.base_id).collect::<Vec<_>>(), vec![Some(2), Some(4)]);
    }

    #[test]
    fn index_entries_decode_uuid_and_fragments() {
        let mut bm = roaring::RoaringBitmap::new();
        bm.insert(0);
        bm.insert(7);
        let mut bitmap = Vec::new();
        bm.serialize_into(&mut bitmap).unwrap();
        let id = uuid::Uuid::from_u128(0x0011_2233_4455_6677_8899_aabb_ccdd_eeff);
        let good = tablepb::IndexMetadata {
            name: "emb_idx".into(),
            fields: vec![1],
            uuid: Some(tablepb::Uuid { uuid: id.as_bytes().to_vec().into() }),
            fragment_bitmap: bitmap.into(),
            ..Default::default()
        };
        let section = tablepb::IndexSection { indices: vec![good.clone()] }.encode_to_vec();
        let e = &index_entries(&section).unwrap()[0];
        assert_eq!(e.uuid, "00112233-4455-6677-8899-aabbccddeeff");
        assert_eq!(e.fragment_ids, vec![0, 7]);
        assert_eq!((e.name.as_str(), &e.fields[..]), ("emb_idx", &[1][..]));
        // A short uuid or a damaged bitmap is an error, not a panic.
        let short = tablepb::IndexMetadata { uuid: Some(tablepb::Uuid { uuid: vec![1, 2].into() }), ..good.clone() };
        assert!(index_entries(&tablepb::IndexSection { indices: vec![short] }.encode_to_vec()).is_err());
        let damaged = tablepb::IndexMetadata { fragment_bitmap: vec![1, 2, 3].into(), ..good };
        assert!(index_entries(&tablepb::IndexSection { indices: vec![damaged] }.encode_to_vec()).is_err());
    }

    #[test]
    fn fragments_are_found_by_id_in_any_order() {
        let frags = |ids: &[u64]| ids.iter().map(|&id| tablepb::DataFragment { id, ..Default::default() }).collect::<Vec<_>>();
        for ids in [vec![], vec![3], vec![0, 1, 5, 9], vec![7, 2, 9, 0], vec![4, 4, 1]] {
            let fragments = frags(&ids);
            let index = FragmentPositions::new(&fragments);
            for id in 0..12u64 {
                assert_eq!(index.get(&fragments, id), ids.iter().position(|&x| x == id), "{ids:?} {id}");
            }
        }
    }
}
