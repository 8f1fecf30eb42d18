//! Small fixed-width columns of a snapshot, decoded whole and kept for its takes.
//!
//! A random take of a mini-block column (an int64 label next to the vectors of a training
//! set) decodes part of a chunk for each row, on every take; for batches of random rows that
//! cost as much as copying the vectors themselves. A column whose values in one fragment fit
//! in [`MAX_FRAGMENT_BYTES`] is instead decoded whole on the first take that asks for at least
//! [`MIN_TAKE_ROWS`] of its rows, kept on the snapshot (one dataset version: it dies with it),
//! and later takes pick values out of it. The snapshot's kept columns hold at most
//! [`budget`] bytes; past that, takes decode as before. Local datasets only: on object
//! storage a whole column costs requests that a take of a few rows would not make.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

use super::scan::{ScanOptions, TableSnapshot};
use crate::error::{Error, Result};
use crate::file::reader::fixed_byte_width;

/// Largest decoded column of one fragment that is kept.
pub const MAX_FRAGMENT_BYTES: u64 = 8 << 20;
/// Fewest rows a take must ask for before it decodes columns whole (single-row lookups
/// stay as cheap as they were).
pub const MIN_TAKE_ROWS: usize = 64;
/// Widest value kept (wider values, vectors, are copied straight out of the file instead).
const MAX_VALUE_BYTES: usize = 16;

/// Bytes of kept columns a snapshot may hold: `LANCEPY_SMALL_COLUMN_CACHE_BYTES`, default
/// 64 MiB (columns decoded at the same moment may pass it by a few columns).
pub fn budget() -> u64 {
    static BUDGET: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *BUDGET.get_or_init(|| {
        std::env::var("LANCEPY_SMALL_COLUMN_CACHE_BYTES").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(64 << 20)
    })
}

/// The kept columns of one snapshot: (field index, fragment index) → the column's values for
/// every physical row, or `None` where it does not qualify.
#[derive(Debug, Default)]
pub struct SmallColumns {
    columns: Mutex<HashMap<(usize, usize), Option<ArrayRef>>>,
    bytes: AtomicU64,
}

impl TableSnapshot {
    /// The values of field `fidx` for `requests` ((fragment index, physical offset), in
    /// order) picked out of kept whole columns, or `None` when the field or a fragment does
    /// not qualify (the caller decodes them as usual).
    pub(super) fn take_small_column(
        &self,
        fidx: usize,
        requests: &[(usize, u64)],
        fragments: &[usize],
    ) -> Result<Option<ArrayRef>> {
        if !self.small_column_qualifies(fidx, requests) {
            return Ok(None);
        }
        let field = self.schema().fields[fidx].output_arrow();
        // Fragments not decided yet are decoded together: a cold take waits on the disk for
        // each, so they go to the I/O pool, all in flight at once.
        let undecided: Vec<usize> = {
            let kept = self.small_columns().columns.lock().unwrap_or_else(|p| p.into_inner());
            fragments.iter().copied().filter(|fi| !kept.contains_key(&(fidx, *fi))).collect()
        };
        if undecided.len() > 1 {
            crate::parallel::map_io(undecided, true, |fi| self.small_column(fidx, fi, field.data_type()))
                .into_iter()
                .collect::<Result<Vec<_>>>()?;
        }
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(fragments.len());
        for &fi in fragments {
            match self.small_column(fidx, fi, field.data_type())? {
                Some(c) => columns.push(c),
                None => return Ok(None),
            }
        }
        let index: Vec<(usize, usize)> = requests
            .iter()
            .map(|&(fi, off)| {
                let c = fragments.binary_search(&fi).map_err(|_| Error::Internal(format!("fragment {fi} was not planned")))?;
                let row = usize::try_from(off).ok().filter(|&r| r < columns[c].len()).ok_or_else(|| {
                    Error::IndexOutOfRange(format!("row {off} is past the end of fragment {}", self.fragment_id(fi)))
                })?;
                Ok((c, row))
            })
            .collect::<Result<_>>()?;
        let refs: Vec<&dyn Array> = columns.iter().map(|c| c.as_ref()).collect();
        Ok(Some(arrow_select::interleave::interleave(&refs, &index)?))
    }

    /// Whether [`TableSnapshot::take_small_column`] would read field `fidx` of some of
    /// `fragments` whole now (the first take of them in this snapshot).
    pub(super) fn small_column_pending(&self, fidx: usize, requests: &[(usize, u64)], fragments: &[usize]) -> bool {
        if !self.small_column_qualifies(fidx, requests) {
            return false;
        }
        let kept = self.small_columns().columns.lock().unwrap_or_else(|p| p.into_inner());
        fragments.iter().any(|fi| !kept.contains_key(&(fidx, *fi)))
    }

    /// Whether field `fidx` may be kept whole for a take of `requests`.
    fn small_column_qualifies(&self, fidx: usize, requests: &[(usize, u64)]) -> bool {
        if requests.len() < MIN_TAKE_ROWS || self.is_remote() {
            return false;
        }
        let field = self.schema().fields[fidx].output_arrow();
        matches!(fixed_byte_width(field.data_type()), Some(w) if w <= MAX_VALUE_BYTES)
            && !matches!(field.data_type(), DataType::FixedSizeList(..) | DataType::FixedSizeBinary(_))
    }

    /// Field `fidx` of fragment `fi`, decoded whole (every physical row) and kept, if it fits.
    fn small_column(&self, fidx: usize, fi: usize, data_type: &DataType) -> Result<Option<ArrayRef>> {
        let kept = self.small_columns();
        if let Some(c) = kept.columns.lock().unwrap_or_else(|p| p.into_inner()).get(&(fidx, fi)) {
            return Ok(c.clone());
        }
        let width = fixed_byte_width(data_type).unwrap_or(usize::MAX) as u64;
        let rows = self.physical_rows(fi)?;
        let bytes = rows.saturating_mul(width);
        let fits = bytes <= MAX_FRAGMENT_BYTES && kept.bytes.load(Ordering::Relaxed).saturating_add(bytes) <= budget();
        let column = if fits {
            let opts = ScanOptions { include_deleted: true, ..Default::default() };
            let batch = self.read_fragment_range(fi, &[fidx], 0..rows, opts)?;
            Some(batch.column(0).clone())
        } else {
            None
        };
        let mut map = kept.columns.lock().unwrap_or_else(|p| p.into_inner());
        let entry = map.entry((fidx, fi)).or_insert_with(|| {
            if column.is_some() {
                kept.bytes.fetch_add(bytes, Ordering::Relaxed);
            }
            column
        });
        Ok(entry.clone())
    }
}
