//! Takes: rows at logical indices or row addresses, in any order. Fields stored row by row
//! in every fragment involved are gathered by copying bytes straight out of the files
//! ([`DirectColumn`]); small fixed-width columns come from the snapshot's cache of decoded
//! columns; the rest are decoded per fragment and put in request order.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{new_empty_array, Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field};

use super::read::conform;
use super::{Rows, ScanOptions, TableSnapshot};
use crate::error::{Error, Result};
use crate::file::reader::{decoded_batch, fixed_byte_width, DirectRows, Gathered};
use crate::file::FileReader;
use crate::table::file_cache::Admission;

impl TableSnapshot {
    /// Reads the rows at logical `indices` (scan order, deleted rows excluded). The output
    /// follows the input order; repeats are allowed.
    pub fn take(&self, indices: &[u64], projection: &[usize], opts: ScanOptions) -> Result<RecordBatch> {
        self.take_physical(&self.index_requests(indices)?, projection, opts)
    }

    /// Reads the rows at row `addresses` (`fragment_id << 32 | offset`). Deleted rows are
    /// skipped; the output otherwise follows the input order.
    pub fn take_addresses(&self, addresses: &[u64], projection: &[usize], opts: ScanOptions) -> Result<RecordBatch> {
        self.take_physical(&self.address_requests(addresses, opts.include_deleted)?, projection, opts)
    }

    /// Reads `requests` (from [`TableSnapshot::index_requests`] or
    /// [`TableSnapshot::address_requests`]) of the fields `projection`, in request order.
    pub fn take_requests(&self, requests: &[(usize, u64)], projection: &[usize]) -> Result<RecordBatch> {
        self.take_physical(requests, projection, ScanOptions::default())
    }

    /// Gathers the values of fixed-width field `fidx` at `requests` straight into `out`
    /// (exactly `requests.len()` × the value width bytes), when every fragment involved stores
    /// the field row by row in a mapped file; `Ok(false)`, nothing written, otherwise (then
    /// [`TableSnapshot::take`] reads it).
    pub fn take_fixed_into(&self, requests: &[(usize, u64)], fidx: usize, out: &mut [u8]) -> Result<bool> {
        let fragments = fragments_of(requests);
        match self.direct_column(fidx, &fragments)? {
            Some(direct) => direct.gather_into(requests, out),
            None => Ok(false),
        }
    }

    /// Hands each value of binary column `fidx` at `requests` (in order) to `f` as a slice of
    /// the file, if every fragment involved stores it row by row (see
    /// [`TableSnapshot::direct_column`]); `Ok(false)`, and nothing visited, otherwise.
    pub fn visit_binary(&self, requests: &[(usize, u64)], fidx: usize, f: impl FnMut(&[u8]) -> Result<()>) -> Result<bool> {
        if !matches!(self.schema.fields[fidx].to_arrow().data_type(), DataType::Binary | DataType::LargeBinary) {
            return Ok(false);
        }
        let fragments = fragments_of(requests);
        match self.direct_column(fidx, &fragments)? {
            Some(direct) => direct.visit(requests, f).map(|()| true),
            None => Ok(false),
        }
    }

    fn take_physical(&self, requests: &[(usize, u64)], projection: &[usize], opts: ScanOptions) -> Result<RecordBatch> {
        let schema = self.output_schema(projection, opts);
        // Vectors, images and other values stored row by row: each row's bytes are copied
        // straight into its place in the output, across fragments, in request order.
        let fragments = fragments_of(requests);
        let direct = projection.iter().map(|&f| self.direct_column(f, &fragments)).collect::<Result<Vec<_>>>()?;
        // Small columns (a label next to vectors) picked out of columns decoded whole.
        let small_columns = || -> Result<Vec<Option<ArrayRef>>> {
            projection
                .iter()
                .zip(&direct)
                .map(|(&f, d)| if d.is_none() { self.take_small_column(f, requests, &fragments) } else { Ok(None) })
                .collect()
        };
        // The direct columns' reads start now (when not cached), and go on while other
        // columns decode. Asking the kernel for many cold rows blocks while it queues them;
        // when a small column is still to be read whole (the first take of a version), it is
        // read meanwhile on this thread, so both columns' reads are in flight together
        // instead of the small column's waiting behind every row of the vectors.
        let prefetch = || {
            for d in direct.iter().flatten() {
                d.prefetch(requests);
            }
        };
        let reading_small = direct.iter().any(Option::is_some)
            && projection.iter().zip(&direct).any(|(&f, d)| d.is_none() && self.small_column_pending(f, requests, &fragments));
        let small = if reading_small {
            let trackers = crate::io::scopes();
            std::thread::scope(|s| {
                let prefetching = s.spawn(|| crate::io::with_scopes(&trackers, prefetch));
                let small = small_columns();
                prefetching.join().map_err(|_| Error::Internal("the prefetch of a take panicked".into()))?;
                small
            })?
        } else {
            prefetch();
            small_columns()?
        };
        let rest: Vec<usize> = projection
            .iter()
            .zip(direct.iter().zip(&small))
            .filter(|(_, (d, s))| d.is_none() && s.is_none())
            .map(|(&f, _)| f)
            .collect();
        let mut decoded = if rest.is_empty() && !opts.with_row_id && !opts.with_row_address {
            Vec::new()
        } else {
            self.take_decoded(requests, &rest, opts)?
        }
        .into_iter();
        let mut arrays = Vec::with_capacity(schema.fields().len());
        for ((plan, kept), field) in direct.iter().zip(small).zip(schema.fields()) {
            arrays.push(match (plan, kept) {
                (Some(plan), _) => plan.gather(requests, field.data_type())?,
                (None, Some(kept)) => conform(kept, field)?,
                (None, None) => decoded.next().ok_or_else(|| Error::Internal("a decoded column is missing".into()))?,
            });
        }
        arrays.extend(decoded); // _rowid, _rowaddr
        decoded_batch(schema, arrays, requests.len(), "a take across fragments")
    }

    /// How to gather field `fidx` from `fragments` (sorted indices) by copying bytes, if each of
    /// them stores it row by row, alike (see [`FileReader::direct_rows`]).
    pub(in crate::table) fn direct_column(&self, fidx: usize, fragments: &[usize]) -> Result<Option<DirectColumn>> {
        let field = self.schema.fields[fidx].output_arrow();
        let width = fixed_byte_width(field.data_type());
        if width.is_none() && !matches!(field.data_type(), DataType::Binary | DataType::LargeBinary) {
            return Ok(None);
        }
        let mut plans = Vec::with_capacity(fragments.len());
        for &fi in fragments {
            let cached = self.direct_plans.lock().unwrap_or_else(|p| p.into_inner()).get(&(fidx, fi)).cloned();
            let plan = match cached {
                Some(plan) => plan,
                None => {
                    let plan = self.direct_plan(fidx, fi, &field)?.filter(|(_, rows)| rows.width == width).map(Arc::new);
                    self.direct_plans.lock().unwrap_or_else(|p| p.into_inner()).insert((fidx, fi), plan.clone());
                    plan
                }
            };
            match plan {
                Some(plan) => plans.push(plan),
                None => return Ok(None),
            }
        }
        Ok(Some(DirectColumn { fragments: fragments.to_vec(), plans }))
    }

    /// Whether fragment `fi` stores field `fidx` row by row, and where.
    fn direct_plan(&self, fidx: usize, fi: usize, field: &Field) -> Result<Option<(Arc<FileReader>, DirectRows)>> {
        let frag = self.fragment_meta(fi);
        // Anything unusual (a column missing from a fragment, files shorter than the fragment)
        // is left to the decoding path, which fills or reports it.
        let Some((file_idx, col, id)) = self.locate(frag, &self.schema.fields[fidx]) else { return Ok(None) };
        let reader = self.open_file_at(fi, file_idx, Admission::Always)?;
        let Some(ff) = col.and_then(|c| reader.field_starting_at_column(c)).or_else(|| reader.field_with_id(id)) else {
            return Ok(None);
        };
        let file_type = reader.schema().field(ff).data_type().clone();
        let alike = match field.data_type() {
            DataType::Binary | DataType::LargeBinary => matches!(file_type, DataType::Binary | DataType::LargeBinary),
            ours => super::read::same_layout(&file_type, ours),
        };
        if reader.num_rows() < self.physical_rows(fi)? || !alike {
            return Ok(None);
        }
        Ok(reader.direct_rows(ff)?.map(|rows| (reader, rows)))
    }

    /// Takes `requests` of the fields `projection` (plus `_rowid` / `_rowaddr` if asked) by
    /// decoding the sorted distinct rows of each fragment, then putting them in request order.
    fn take_decoded(&self, requests: &[(usize, u64)], projection: &[usize], opts: ScanOptions) -> Result<Vec<ArrayRef>> {
        // Requests in (fragment, offset) order, without repeats (an index's answer): each
        // fragment's run is read as it is, and the runs' rows are concatenated.
        let ordered = requests.windows(2).all(|w| w[0] < w[1]);
        // Sorted unique offsets per fragment.
        let groups: Vec<(usize, Vec<u64>)> = if ordered {
            let mut groups: Vec<(usize, Vec<u64>)> = Vec::new();
            for &(fi, off) in requests {
                match groups.last_mut() {
                    Some((f, offs)) if *f == fi => offs.push(off),
                    _ => groups.push((fi, vec![off])),
                }
            }
            groups
        } else {
            let mut per_frag: HashMap<usize, Vec<u64>> = HashMap::new();
            for &(fi, off) in requests {
                per_frag.entry(fi).or_default().push(off);
            }
            let mut groups: Vec<(usize, Vec<u64>)> = per_frag.into_iter().collect();
            groups.sort_unstable_by_key(|(fi, _)| *fi);
            for (_, offs) in &mut groups {
                offs.sort_unstable();
                offs.dedup();
            }
            groups
        };
        let read_opts = ScanOptions { include_deleted: true, ..opts };
        let job = |(fi, offs): &(usize, Vec<u64>)| self.read_fragment(*fi, projection, Rows::Offsets(offs), read_opts);
        let (items, parallel) = (groups.iter().collect(), groups.len() > 1);
        let batches: Vec<RecordBatch> = self.map_files(items, parallel, job).into_iter().collect::<Result<_>>()?;
        let schema = self.output_schema(projection, opts);
        if batches.is_empty() {
            return Ok(schema.fields().iter().map(|f| new_empty_array(f.data_type())).collect());
        }
        if ordered {
            if batches.len() == 1 {
                return Ok(batches[0].columns().to_vec());
            }
            return (0..schema.fields().len())
                .map(|c| {
                    let columns: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
                    arrow_select::concat::concat(&columns).map_err(Error::from)
                })
                .collect();
        }
        // (batch, row in batch) of each request: one copy into place (no concatenation first).
        let index: Vec<(usize, usize)> = requests
            .iter()
            .map(|(fi, off)| {
                let g = groups.binary_search_by_key(fi, |(f, _)| *f).expect("grouped");
                (g, groups[g].1.binary_search(off).expect("requested"))
            })
            .collect();
        if batches.len() == 1 && index.iter().enumerate().all(|(k, &(_, r))| k == r) && index.len() == batches[0].num_rows() {
            return Ok(batches[0].columns().to_vec()); // already in order
        }
        (0..schema.fields().len())
            .map(|c| {
                let columns: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
                arrow_select::interleave::interleave(&columns, &index).map_err(Error::from)
            })
            .collect()
    }
}

/// A column gathered by copying bytes (see [`TableSnapshot::direct_column`]).
pub(in crate::table) struct DirectColumn {
    /// Indices of the fragments involved, sorted.
    fragments: Vec<usize>,
    /// The reader and layout of each of them (all fixed-width of one width, or all variable).
    plans: Vec<Arc<(Arc<FileReader>, DirectRows)>>,
}

impl DirectColumn {
    /// The values of `requests`, in order, as an array of `data_type`. Call
    /// [`DirectColumn::prefetch`] first (as early as possible).
    pub(in crate::table) fn gather(&self, requests: &[(usize, u64)], data_type: &DataType) -> Result<ArrayRef> {
        let Some(first) = self.plans.first() else {
            return Ok(new_empty_array(data_type));
        };
        let mut out = Gathered::new(&first.1, requests.len());
        if first.1.width.is_some() {
            let files: Vec<(&FileReader, &DirectRows)> = self.plans.iter().map(|p| (p.0.as_ref(), &p.1)).collect();
            let by_file = self.by_file(requests)?;
            if FileReader::gather_fixed_across(&files, &by_file, &mut out)? {
                return out.into_array(data_type);
            }
        }
        self.for_each_run(requests, |reader, layout, offsets| reader.gather_rows(layout, offsets, &mut out))?;
        out.into_array(data_type)
    }

    /// The values of `requests`, in order, copied into `out` (see
    /// [`FileReader::gather_fixed_into`]); `false`, nothing written, when they are not fixed-width
    /// values of mapped files.
    fn gather_into(&self, requests: &[(usize, u64)], out: &mut [u8]) -> Result<bool> {
        if self.plans.first().is_none_or(|p| p.1.width.is_none()) {
            return Ok(false);
        }
        self.prefetch(requests);
        let files: Vec<(&FileReader, &DirectRows)> = self.plans.iter().map(|p| (p.0.as_ref(), &p.1)).collect();
        let by_file = self.by_file(requests)?;
        FileReader::gather_fixed_into(&files, &by_file, out)
    }

    /// (index of the fragment's plan, row) of each request.
    fn by_file(&self, requests: &[(usize, u64)]) -> Result<Vec<(usize, u64)>> {
        requests
            .iter()
            .map(|&(fi, r)| {
                let i = self.fragments.binary_search(&fi);
                i.map(|i| (i, r)).map_err(|_| Error::Internal(format!("fragment {fi} was not planned")))
            })
            .collect()
    }

    /// Hands each (variable-width) value of `requests` to `f`, in order (see
    /// [`FileReader::visit_values`]).
    fn visit(&self, requests: &[(usize, u64)], mut f: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        self.prefetch(requests);
        self.for_each_run(requests, |reader, layout, offsets| reader.visit_values(layout, offsets, &mut f))
    }

    /// Starts the reads of every value of `requests` that is not in memory, all at once, one
    /// call per file (see [`FileReader::prefetch_rows`]): the runs that follow are mostly a
    /// row long when the rows come in random order.
    pub(in crate::table) fn prefetch(&self, requests: &[(usize, u64)]) {
        let mut per_file: Vec<Vec<u64>> = vec![Vec::new(); self.plans.len()];
        for &(fi, offset) in requests {
            if let Ok(i) = self.fragments.binary_search(&fi) {
                per_file[i].push(offset);
            }
        }
        for (plan, rows) in self.plans.iter().zip(&per_file) {
            if !rows.is_empty() {
                plan.0.prefetch_rows(&plan.1, rows);
            }
        }
    }

    /// Calls `f(reader, layout, offsets)` for each run of consecutive requests of one fragment,
    /// in order. (One thread: the copies are memory-bound, and waking the pool cost more than
    /// it saved.)
    fn for_each_run(
        &self,
        requests: &[(usize, u64)],
        mut f: impl FnMut(&FileReader, &DirectRows, &[u64]) -> Result<()>,
    ) -> Result<()> {
        let offsets: Vec<u64> = requests.iter().map(|r| r.1).collect();
        let mut k = 0;
        while k < requests.len() {
            let fi = requests[k].0;
            let mut e = k + 1;
            while e < requests.len() && requests[e].0 == fi {
                e += 1;
            }
            let plan =
                self.fragments.binary_search(&fi).map_err(|_| Error::Internal(format!("fragment {fi} was not planned")))?;
            let (reader, rows) = self.plans[plan].as_ref();
            f(reader, rows, &offsets[k..e])?;
            k = e;
        }
        Ok(())
    }
}

/// The distinct fragments of `requests`, sorted.
pub(super) fn fragments_of(requests: &[(usize, u64)]) -> Vec<usize> {
    let mut fragments: Vec<usize> = requests.iter().map(|r| r.0).collect();
    fragments.sort_unstable();
    fragments.dedup();
    fragments
}
