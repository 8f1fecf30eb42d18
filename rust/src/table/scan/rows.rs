//! Rows of a snapshot: physical and live row counts, deletion vectors, stable row ids, and
//! the translation of logical indices and row addresses into (fragment, physical offset)
//! requests.

use std::sync::Arc;

use super::TableSnapshot;
use crate::error::{Error, Result};
use crate::format::tablepb;
use crate::table::deletion::{self, DeletionVector};
use crate::table::file_cache::Admission;
use crate::table::rowids::decode_row_ids;

impl TableSnapshot {
    /// Physical rows of fragment `i` (deleted rows included).
    pub fn physical_rows(&self, i: usize) -> Result<u64> {
        let f = &self.fragments[i];
        if let Some(n) = f.physical_rows.get() {
            return Ok(*n);
        }
        // Hand-made datasets may omit physical_rows; the first data file knows.
        let n = match (self.fragment_meta(i).physical_rows, self.fragment_meta(i).files.first()) {
            (0, Some(_)) => self.open_file_at(i, 0, Admission::Always)?.num_rows(),
            (n, _) => n,
        };
        Ok(*f.physical_rows.get_or_init(|| n))
    }

    /// The deletion vector of fragment `i`, if it has one.
    pub fn deletions(&self, i: usize) -> Result<Option<Arc<DeletionVector>>> {
        let f = &self.fragments[i];
        if let Some(d) = f.deletions.get() {
            return Ok(d.clone());
        }
        let dv = match &self.fragment_meta(i).deletion_file {
            Some(d) if !(d.id == 0 && d.read_version == 0 && d.num_deleted_rows == 0) => {
                Some(Arc::new(deletion::read(&self.store, &self.bases, self.fragment_meta(i).id, d)?))
            }
            _ => None,
        };
        Ok(f.deletions.get_or_init(|| dv).clone())
    }

    fn deleted_count(&self, i: usize) -> Result<u64> {
        match &self.fragment_meta(i).deletion_file {
            Some(d) if d.num_deleted_rows > 0 => Ok(d.num_deleted_rows),
            Some(_) => Ok(self.deletions(i)?.map(|d| d.len()).unwrap_or(0)),
            None => Ok(0),
        }
    }

    /// Live (not deleted) rows of fragment `i`.
    pub fn live_rows(&self, i: usize) -> Result<u64> {
        Ok(self.physical_rows(i)?.saturating_sub(self.deleted_count(i)?))
    }

    /// Live rows of the whole snapshot.
    pub fn count_rows(&self) -> Result<u64> {
        (0..self.fragments.len()).map(|i| self.live_rows(i)).sum()
    }

    pub(super) fn row_ids(&self, i: usize) -> Result<Arc<Vec<u64>>> {
        let f = &self.fragments[i];
        if let Some(r) = f.row_ids.get() {
            return Ok(r.clone());
        }
        let rows = self.physical_rows(i)?;
        let ids = match &self.fragment_meta(i).row_id_sequence {
            Some(tablepb::data_fragment::RowIdSequence::InlineRowIds(b)) => decode_row_ids(b, rows)?,
            Some(tablepb::data_fragment::RowIdSequence::ExternalRowIds(ext)) => {
                let data = self.store.read(&ext.path)?;
                let end = ext.offset.checked_add(ext.size).filter(|&e| e <= data.len() as u64).ok_or_else(|| {
                    Error::corrupt(format!("row-id sequence {}..+{} lies outside {}", ext.offset, ext.size, ext.path))
                })?;
                decode_row_ids(&data[ext.offset as usize..end as usize], rows)?
            }
            None => {
                return Err(Error::corrupt(format!(
                    "fragment {} has no row-id sequence but the dataset uses stable row ids",
                    self.fragment_meta(i).id
                )))
            }
        };
        if ids.len() as u64 != self.physical_rows(i)? {
            return Err(Error::corrupt(format!(
                "fragment {}: {} row ids for {} rows",
                self.fragment_meta(i).id,
                ids.len(),
                self.physical_rows(i)?
            )));
        }
        Ok(f.row_ids.get_or_init(|| Arc::new(ids)).clone())
    }

    /// Physical offset of live row `k` of fragment `i`.
    pub(super) fn nth_live(&self, i: usize, k: u64, dv: Option<&DeletionVector>) -> Result<u64> {
        let phys = self.physical_rows(i)?;
        let Some(dv) = dv else { return Ok(k) };
        // Smallest p with (p + 1) - rank(p) == k + 1.
        let (mut lo, mut hi) = (k, phys.saturating_sub(1));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let live_through = mid + 1 - dv.rank(mid as u32);
            if live_through > k {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        if lo >= phys || dv.contains(lo as u32) {
            return Err(Error::IndexOutOfRange(format!("live row {k} is past the end of fragment {}", self.fragment_id(i))));
        }
        Ok(lo)
    }

    /// (fragment, physical offset) of each logical row index, in order.
    pub fn index_requests(&self, indices: &[u64]) -> Result<Vec<(usize, u64)>> {
        let mut starts = Vec::with_capacity(self.fragments.len() + 1);
        let mut total = 0u64;
        for i in 0..self.fragments.len() {
            starts.push(total);
            total += self.live_rows(i)?;
        }
        let mut requests: Vec<(usize, u64)> = Vec::with_capacity(indices.len());
        for &idx in indices {
            if idx >= total {
                return Err(Error::IndexOutOfRange(format!("row index {idx} is out of range for a dataset of {total} rows")));
            }
            let fi = starts.partition_point(|&s| s <= idx) - 1;
            let dv = self.deletions(fi)?;
            requests.push((fi, self.nth_live(fi, idx - starts[fi], dv.as_deref())?));
        }
        Ok(requests)
    }

    /// (fragment, physical offset) of each row address, in order; deleted rows are skipped
    /// unless `include_deleted`.
    pub fn address_requests(&self, addresses: &[u64], include_deleted: bool) -> Result<Vec<(usize, u64)>> {
        let mut requests = Vec::with_capacity(addresses.len());
        // The fragment of the previous address, its rows and deletions: addresses mostly
        // come grouped by fragment (an index's answer), so each fragment is looked up once.
        let mut last: Option<(u64, usize, u64, Option<Arc<DeletionVector>>)> = None;
        for &a in addresses {
            let id = a >> 32;
            if last.as_ref().is_none_or(|l| l.0 != id) {
                let fi = self.fragment_index(id)?;
                let deleted = if include_deleted { None } else { self.deletions(fi)? };
                last = Some((id, fi, self.physical_rows(fi)?, deleted));
            }
            let (_, fi, rows, deleted) = last.as_ref().expect("set above");
            let off = a & 0xFFFF_FFFF;
            if off >= *rows {
                return Err(Error::IndexOutOfRange(format!("row address {a}: fragment {id} has no row {off}")));
            }
            if deleted.as_ref().is_some_and(|d| d.contains(off as u32)) {
                continue;
            }
            requests.push((*fi, off));
        }
        Ok(requests)
    }
}
