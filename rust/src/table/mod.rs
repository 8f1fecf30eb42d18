//! The Lance table (dataset) format: the byte codecs and the data path.
//!
//! Policy lives in Python (`lancepy.dataset`, `lancepy.commit`): which version to open, how
//! to build and commit a transaction, how to resolve conflicts. This module only encodes and
//! decodes bytes and reads/writes data:
//!
//! * [`bases`] — where files under other roots (base paths: shallow clones, multi-base
//!   datasets) are;
//! * [`naming`] — manifest (V1/V2), data, deletion and transaction file names;
//! * [`manifest`] — the manifest envelope (index section, inline transaction, `LANC` tail)
//!   and transaction files;
//! * [`json`] — manifests, fragments and transactions as JSON for the Python side;
//! * [`deletion`] — deletion vectors (`.arrow` IPC and portable-roaring `.bin`);
//! * [`rowids`] — row-id sequences of datasets with stable row ids;
//! * [`scan`] — the data path: scans and takes over many fragments in one call;
//! * [`knn`] — exact nearest-neighbour search over a vector column;
//! * [`index_proto`] — the protobuf messages of IVF vector indices; [`index_legacy`] — the
//!   `Index` message of pylance's legacy vector index file; [`index_details`] — the
//!   manifest's `index_details` messages;
//! * [`write`] — writing new fragments (data files) from Arrow batches.

pub mod bases;
pub mod blob_write;
pub mod deletion;
pub mod file_cache;
pub mod fts;
pub mod fts_build;
pub mod fts_codec;
mod fts_fold;
pub mod fts_json;
pub mod fts_pos;
pub mod fts_score;
pub mod fts_topk;
pub mod index_details;
pub mod index_legacy;
pub mod index_proto;
pub mod ivf_train;
pub mod json;
pub mod knn;
pub mod manifest;
pub mod naming;
pub mod roaring_runs;
pub mod row_addr_map;
pub mod rowids;
pub mod scan;
mod small_columns;
pub mod stream;
pub mod versions;
pub mod write;

pub use deletion::DeletionVector;
pub use manifest::{read_manifest, write_manifest, ManifestFile};
pub use naming::ManifestNaming;
pub use scan::{ScanOptions, TableSnapshot};
