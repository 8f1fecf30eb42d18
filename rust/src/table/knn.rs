//! Exact (brute-force) k-nearest-neighbour search over a vector column.
//!
//! A search reads only the vector column (and the row addresses) of the fragments asked for,
//! task by task in parallel on the CPU pool; each task scores its rows against the query and
//! keeps its own best `k`, so memory is bounded by one decoded batch per thread plus `k`
//! candidates per task, whatever the dataset's size. The winners are merged at the end; the
//! caller then takes the other columns for those `k` rows only.
//!
//! Distances follow pylance's definitions, so results compare exactly:
//! * `L2`: the *squared* Euclidean distance, `Σ (xᵢ − qᵢ)²`;
//! * `Cosine`: `1 − (x·q) / (‖x‖ ‖q‖)`;
//! * `Dot`: one minus the inner product, `1 − x·q` (smaller is nearer).
//!
//! Rows whose vector is null (or whose distance is NaN) are never returned. Ties are broken by
//! row address, smaller first, as pylance breaks them by row id.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, Float64Type};
use arrow_array::{Array, ArrowPrimitiveType, FixedSizeListArray, UInt64Array};
use arrow_schema::DataType;

use super::scan::{ScanOptions, TableSnapshot};
use crate::error::{Error, Result};

/// Physical rows per scan task of a search: large enough that per-task overhead vanishes,
/// small enough that a decoded batch of 1,024-d float32 vectors stays near 256 MiB.
const SEARCH_BATCH_ROWS: u64 = 65_536;

/// How a distance between two vectors is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Squared Euclidean distance.
    L2,
    /// One minus the cosine similarity.
    Cosine,
    /// One minus the inner product.
    Dot,
}

impl Metric {
    /// Parses pylance's metric names (case-insensitive; `euclidean` is `l2`).
    pub fn parse(name: &str) -> Result<Metric> {
        match name.to_ascii_lowercase().as_str() {
            "l2" | "euclidean" => Ok(Metric::L2),
            "cosine" => Ok(Metric::Cosine),
            "dot" => Ok(Metric::Dot),
            "hamming" => Err(Error::NotSupported("the hamming metric (for uint8 vectors)".into())),
            other => Err(Error::InvalidInput(format!("unknown distance metric {other:?}: use \"l2\", \"cosine\" or \"dot\""))),
        }
    }
}

/// One search result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbor {
    /// The row's distance to the query.
    pub distance: f32,
    /// The row's address (`fragment id << 32 | offset`).
    pub address: u64,
}

impl Neighbor {
    fn cmp_key(&self, other: &Self) -> Ordering {
        self.distance.total_cmp(&other.distance).then(self.address.cmp(&other.address))
    }
}

/// Max-heap entry: the worst of the current best `k` sits on top.
#[derive(Debug, Clone, Copy)]
struct Worst(Neighbor);

impl PartialEq for Worst {
    fn eq(&self, other: &Self) -> bool {
        self.0.cmp_key(&other.0) == Ordering::Equal
    }
}
impl Eq for Worst {}
impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Worst {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.cmp_key(&other.0)
    }
}

/// Keeps the `k` nearest of everything offered.
struct TopK {
    k: usize,
    heap: BinaryHeap<Worst>,
}

impl TopK {
    fn new(k: usize) -> Self {
        TopK { k, heap: BinaryHeap::with_capacity(k.min(1 << 16) + 1) }
    }

    /// The distance a candidate must beat (or tie, with a smaller address) to get in.
    fn bound(&self) -> f32 {
        if self.heap.len() < self.k {
            f32::INFINITY
        } else {
            self.heap.peek().map_or(f32::INFINITY, |w| w.0.distance)
        }
    }

    fn offer(&mut self, n: Neighbor) {
        if self.k == 0 || n.distance.is_nan() {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(Worst(n));
        } else if let Some(top) = self.heap.peek() {
            if n.cmp_key(&top.0) == Ordering::Less {
                self.heap.pop();
                self.heap.push(Worst(n));
            }
        }
    }

    fn into_sorted(self) -> Vec<Neighbor> {
        let mut v: Vec<Neighbor> = self.heap.into_iter().map(|w| w.0).collect();
        v.sort_by(|a, b| a.cmp_key(b));
        v
    }
}

/// Lanes of the distance kernels' accumulators: eight independent sums let the compiler use
/// SIMD registers (floating-point addition is not reassociated on its own).
const LANES: usize = 8;

/// `Σ term(xᵢ, qᵢ)` over [`LANES`] independent accumulators, then the tail.
#[inline(always)]
fn lane_sum(x: &[f32], q: &[f32], term: impl Fn(f32, f32) -> f32) -> f32 {
    debug_assert_eq!(x.len(), q.len());
    let mut acc = [0f32; LANES];
    let (xc, xr) = x.split_at(x.len() - x.len() % LANES);
    let (qc, qr) = q.split_at(xc.len());
    for (a, b) in xc.chunks_exact(LANES).zip(qc.chunks_exact(LANES)) {
        for l in 0..LANES {
            acc[l] += term(a[l], b[l]);
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for (a, b) in xr.iter().zip(qr) {
        sum += term(*a, *b);
    }
    sum
}

/// `Σ (xᵢ − qᵢ)²`.
pub fn l2_squared(x: &[f32], q: &[f32]) -> f32 {
    lane_sum(x, q, |a, b| (a - b) * (a - b))
}

/// `Σ xᵢ qᵢ`.
pub fn dot(x: &[f32], q: &[f32]) -> f32 {
    lane_sum(x, q, |a, b| a * b)
}

/// Distances from `q` to every row of the `spans` (`(first row, rows)`) of a row-major
/// matrix of `dim`-wide vectors, span after span: an IVF partition scan. `L2` is the squared
/// Euclidean distance; `Cosine` and `Dot` are one minus the inner product (an IVF index
/// stores cosine vectors normalized, and the caller normalizes the query). Spans are scored
/// in parallel when there are many rows.
pub fn span_distances(vectors: &[f32], dim: usize, spans: &[(usize, usize)], q: &[f32], metric: Metric) -> Result<Vec<f32>> {
    if dim == 0 || q.len() != dim || vectors.len() % dim != 0 {
        return Err(Error::InvalidInput(format!(
            "span distances: {} values are not rows of {dim}, or the query has {} values",
            vectors.len(),
            q.len()
        )));
    }
    let rows = vectors.len() / dim;
    let mut total = 0usize;
    for &(first, n) in spans {
        if first.checked_add(n).is_none_or(|end| end > rows) {
            return Err(Error::InvalidInput(format!("span {first}+{n} is outside {rows} rows")));
        }
        total += n;
    }
    let score = |row: &[f32]| match metric {
        Metric::L2 => l2_squared(row, q),
        Metric::Cosine | Metric::Dot => 1.0 - dot(row, q),
    };
    let parallel = total * dim >= 1 << 20;
    let parts = crate::parallel::map(spans.to_vec(), parallel, |(first, n)| {
        vectors[first * dim..(first + n) * dim].chunks_exact(dim).map(score).collect::<Vec<f32>>()
    });
    let mut out = Vec::with_capacity(total);
    for p in parts {
        out.extend_from_slice(&p);
    }
    Ok(out)
}

/// Product-quantization distances of the rows of `spans` (`(first row, rows)`): `codes` are
/// the `m` sub-vector codes of `rows` rows stored sub-vector by sub-vector (`codes[j * rows +
/// r]`), and span `i` is scored with lookup table `tables[table_of[i]]` (`m × 256` partial
/// distances, sub-vector major): the distance of a row is `Σⱼ table[j][code_j]`.
pub fn pq_span_distances(
    codes: &[u8],
    rows: usize,
    m: usize,
    spans: &[(usize, usize)],
    tables: &[f32],
    table_of: &[usize],
) -> Result<Vec<f32>> {
    let table_len = m * 256;
    if m == 0 || codes.len() != rows * m || table_len == 0 || tables.len() % table_len != 0 || table_of.len() != spans.len() {
        return Err(Error::InvalidInput(format!(
            "pq distances: {} codes for {rows} rows of {m} sub-vectors, {} table values, {} tables for {} spans",
            codes.len(),
            tables.len(),
            table_of.len(),
            spans.len()
        )));
    }
    let num_tables = tables.len() / table_len;
    let mut total = 0usize;
    for (&(first, n), &t) in spans.iter().zip(table_of) {
        if first.checked_add(n).is_none_or(|end| end > rows) || t >= num_tables {
            return Err(Error::InvalidInput(format!(
                "span {first}+{n} (table {t}) is outside {rows} rows / {num_tables} tables"
            )));
        }
        total += n;
    }
    let work: Vec<((usize, usize), usize)> = spans.iter().copied().zip(table_of.iter().copied()).collect();
    let parts = crate::parallel::map(work, total * m >= 1 << 20, |((first, n), t)| {
        let table = &tables[t * table_len..(t + 1) * table_len];
        let mut out = vec![0f32; n];
        for j in 0..m {
            let sub = &table[j * 256..(j + 1) * 256];
            let col = &codes[j * rows + first..j * rows + first + n];
            for (o, &c) in out.iter_mut().zip(col) {
                *o += sub[c as usize];
            }
        }
        out
    });
    let mut out = Vec::with_capacity(total);
    for p in parts {
        out.extend_from_slice(&p);
    }
    Ok(out)
}

/// Lookup tables for IVF_PQ search under L2 on residual codes: for each of the `centroids`
/// (rows of `dim`), sub-vector `j` and codeword `c`, the squared distance from the query's
/// residual (`q − centroid`) to codeword `codebook[j][c]` (`m × 256 × dim / m` values).
/// Returns `centroids × m × 256` values, one table per centroid.
pub fn pq_l2_tables(q: &[f32], centroids: &[f32], codebook: &[f32], m: usize) -> Result<Vec<f32>> {
    let dim = q.len();
    if m == 0 || dim == 0 || dim % m != 0 || centroids.len() % dim != 0 || codebook.len() != 256 * dim {
        return Err(Error::InvalidInput(format!(
            "pq tables: query of {dim}, {} centroid values, {} codebook values, {m} sub-vectors",
            centroids.len(),
            codebook.len()
        )));
    }
    let sub = dim / m;
    let parts: Vec<&[f32]> = centroids.chunks_exact(dim).collect();
    let tables = crate::parallel::map(parts, centroids.len() / dim > 4, |c| {
        let residual: Vec<f32> = q.iter().zip(c).map(|(a, b)| a - b).collect();
        let mut t = Vec::with_capacity(m * 256);
        for j in 0..m {
            let r = &residual[j * sub..(j + 1) * sub];
            let words = &codebook[j * 256 * sub..(j + 1) * 256 * sub];
            t.extend(words.chunks_exact(sub).map(|w| l2_squared(w, r)));
        }
        t
    });
    Ok(tables.concat())
}

/// Scores vectors against one query under one metric.
///
/// As pylance does, the query is first converted to the column's element type: rounded to
/// half precision for `float16` columns (then scored in `f32`), widened to `f64` for `float64`
/// columns (scored in `f64`, the distance then narrowed to `f32`).
struct Scorer<'a> {
    query: &'a [f32],
    query64: Vec<f64>,
    metric: Metric,
    query_norm: f32,
}

impl<'a> Scorer<'a> {
    fn new(query: &'a [f32], metric: Metric) -> Self {
        Scorer { query, query64: query.iter().map(|&v| v as f64).collect(), metric, query_norm: dot(query, query).sqrt() }
    }

    fn distance64(&self, x: &[f64]) -> f32 {
        let q = &self.query64;
        let d = match self.metric {
            Metric::L2 => x.iter().zip(q).map(|(a, b)| (a - b) * (a - b)).sum::<f64>(),
            Metric::Dot => 1.0 - x.iter().zip(q).map(|(a, b)| a * b).sum::<f64>(),
            Metric::Cosine => {
                let xy: f64 = x.iter().zip(q).map(|(a, b)| a * b).sum();
                let xx: f64 = x.iter().map(|a| a * a).sum();
                let qq: f64 = q.iter().map(|a| a * a).sum();
                1.0 - xy / (xx.sqrt() * qq.sqrt())
            }
        };
        d as f32
    }

    fn distance(&self, x: &[f32]) -> f32 {
        match self.metric {
            Metric::L2 => l2_squared(x, self.query),
            Metric::Dot => 1.0 - dot(x, self.query),
            Metric::Cosine => {
                let xy = dot(x, self.query);
                let xx = dot(x, x);
                1.0 - xy / (xx.sqrt() * self.query_norm)
            }
        }
    }
}

/// Distances a result may have: `lower <= d < upper`, either bound optional.
#[derive(Debug, Clone, Copy, Default)]
pub struct DistanceRange {
    /// Inclusive lower bound.
    pub lower: Option<f32>,
    /// Exclusive upper bound.
    pub upper: Option<f32>,
}

impl DistanceRange {
    fn contains(&self, d: f32) -> bool {
        self.lower.is_none_or(|lo| d >= lo) && self.upper.is_none_or(|hi| d < hi)
    }
}

/// Row addresses that may be returned (a prefilter's result), sorted ascending.
#[derive(Debug, Clone, Copy)]
pub struct Allowed<'a>(&'a [u64]);

impl<'a> Allowed<'a> {
    /// Wraps sorted addresses; unsorted input is an error (it would silently drop rows).
    pub fn new(sorted: &'a [u64]) -> Result<Self> {
        if sorted.windows(2).any(|w| w[0] > w[1]) {
            return Err(Error::InvalidInput("allowed row addresses must be sorted ascending".into()));
        }
        Ok(Allowed(sorted))
    }

    fn contains(&self, address: u64) -> bool {
        self.0.binary_search(&address).is_ok()
    }

    /// Whether any allowed address falls in fragment `id`.
    fn touches_fragment(&self, id: u64) -> bool {
        let start = self.0.partition_point(|&a| a < (id << 32));
        start < self.0.len() && (self.0[start] >> 32) == id
    }
}

/// Scores every row of one decoded batch, offering the live, non-null, allowed ones to `top`.
fn score_batch(
    vectors: &FixedSizeListArray,
    addresses: &UInt64Array,
    scorer: &Scorer<'_>,
    allowed: Option<Allowed<'_>>,
    range: DistanceRange,
    top: &mut TopK,
) -> Result<()> {
    let dim = vectors.value_length() as usize;
    if dim != scorer.query.len() {
        return Err(Error::InvalidInput(format!(
            "the query has {} dimensions but the column's vectors have {dim}",
            scorer.query.len()
        )));
    }
    let values = vectors.values();
    // Half-precision rows are widened to f32 one at a time; f32 and f64 rows are scored in place.
    let mut row_buf = vec![0f32; dim];
    let offset = vectors.offset();
    for i in 0..vectors.len() {
        if vectors.is_null(i) {
            continue;
        }
        let address = addresses.value(i);
        if let Some(a) = allowed {
            if !a.contains(address) {
                continue;
            }
        }
        let start = (offset + i) * dim;
        let distance = match values.data_type() {
            DataType::Float32 => scorer.distance(&values.as_primitive::<Float32Type>().values()[start..start + dim]),
            DataType::Float16 => {
                let src = &values.as_primitive::<Float16Type>().values()[start..start + dim];
                for (d, s) in row_buf.iter_mut().zip(src) {
                    *d = s.to_f32();
                }
                scorer.distance(&row_buf)
            }
            DataType::Float64 => scorer.distance64(&values.as_primitive::<Float64Type>().values()[start..start + dim]),
            other => return Err(Error::NotSupported(format!("vector search over {other} values"))),
        };
        if distance <= top.bound() && range.contains(distance) {
            top.offer(Neighbor { distance, address });
        }
    }
    Ok(())
}

impl TableSnapshot {
    /// The `k` rows of `column` nearest to `query` (exact search), nearest first.
    ///
    /// `fragments` limits the search to some fragments (indices in the snapshot); `allowed`,
    /// when given, limits it to those row addresses (a prefilter); only distances in
    /// `range` (lower bound inclusive, upper exclusive) count. Deleted rows are never returned.
    #[allow(clippy::too_many_arguments)]
    pub fn knn(
        &self,
        column: &str,
        query: &[f32],
        k: usize,
        metric: Metric,
        fragments: Option<&[usize]>,
        allowed: Option<Allowed<'_>>,
        range: DistanceRange,
    ) -> Result<Vec<Neighbor>> {
        let projection = self.projection(Some(&[column.to_string()]))?;
        let schema = self.output_schema(&projection, ScanOptions::default());
        match schema.field(0).data_type() {
            DataType::FixedSizeList(item, dim) if item.data_type().is_floating() => {
                if *dim as usize != query.len() {
                    return Err(Error::InvalidInput(format!(
                        "the query has {} dimensions but column {column:?} holds vectors of {dim}",
                        query.len()
                    )));
                }
            }
            other => {
                return Err(Error::InvalidInput(format!(
                    "column {column:?} is not a vector column (a fixed-size list of floats): it is {other}"
                )))
            }
        }
        if query.iter().any(|v| !v.is_finite()) {
            return Err(Error::InvalidInput("the query vector holds NaN or infinite values".into()));
        }
        if k == 0 {
            return Ok(Vec::new());
        }
        let opts = ScanOptions { with_row_address: true, ..ScanOptions::default() };
        let all: Vec<usize> = (0..self.num_fragments()).collect();
        let chosen: Vec<usize> = fragments
            .unwrap_or(&all)
            .iter()
            .copied()
            .filter(|&i| i >= self.num_fragments() || allowed.is_none_or(|a| a.touches_fragment(self.fragment_id(i))))
            .collect();
        let tasks = self.plan_scan(Some(&chosen), 0, None, SEARCH_BATCH_ROWS, opts)?;
        let query: Vec<f32> = match schema.field(0).data_type() {
            DataType::FixedSizeList(item, _) if *item.data_type() == DataType::Float16 => {
                query.iter().map(|&v| <Float16Type as ArrowPrimitiveType>::Native::from_f32(v).to_f32()).collect()
            }
            _ => query.to_vec(),
        };
        let scorer = Scorer::new(&query, metric);
        let data_type = schema.field(0).data_type().clone();
        let partial: Vec<Result<Vec<Neighbor>>> = crate::parallel::map(tasks, true, |task| {
            crate::interrupt::check()?; // Ctrl-C between tasks
            let mut top = TopK::new(k);
            // Vectors stored row by row (full-zip pages without nulls, on local files) are
            // copied straight out of the mapped file, skipping the decoder; anything else is
            // decoded by an ordinary scan task.
            if let Some(direct) = self.direct_column(projection[0], &[task.fragment])? {
                let dv = self.deletions(task.fragment)?;
                let requests: Vec<(usize, u64)> = task
                    .rows
                    .clone()
                    .filter(|&r| dv.as_ref().is_none_or(|d| !d.contains(r as u32)))
                    .map(|r| (task.fragment, r))
                    .collect();
                let id = self.fragment_id(task.fragment);
                direct.prefetch(&requests);
                let vectors = direct.gather(&requests, &data_type)?;
                let addresses: UInt64Array = requests.iter().map(|&(_, r)| (id << 32) | r).collect();
                score_batch(vectors.as_fixed_size_list(), &addresses, &scorer, allowed, range, &mut top)?;
            } else {
                let batch = self.run_task(&task, &projection, opts)?;
                let vectors = batch.column(0).as_fixed_size_list();
                let addresses = batch.column(batch.num_columns() - 1).as_primitive::<arrow_array::types::UInt64Type>();
                score_batch(vectors, addresses, &scorer, allowed, range, &mut top)?;
            }
            Ok(top.into_sorted())
        });
        let mut top = TopK::new(k);
        for p in partial {
            for n in p? {
                top.offer(n);
            }
        }
        Ok(top.into_sorted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_match_naive_sums() {
        for dim in [1usize, 7, 8, 9, 128, 131] {
            let x: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.37).sin()).collect();
            let q: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.11).cos()).collect();
            let naive_l2: f32 = x.iter().zip(&q).map(|(a, b)| (a - b) * (a - b)).sum();
            let naive_dot: f32 = x.iter().zip(&q).map(|(a, b)| a * b).sum();
            assert!((l2_squared(&x, &q) - naive_l2).abs() <= 1e-4 * naive_l2.abs().max(1.0));
            assert!((dot(&x, &q) - naive_dot).abs() <= 1e-4 * naive_dot.abs().max(1.0));
        }
    }

    #[test]
    fn top_k_keeps_the_nearest_and_breaks_ties_by_address() {
        let mut top = TopK::new(3);
        for (d, a) in [(5.0, 1), (1.0, 9), (1.0, 2), (3.0, 4), (f32::NAN, 0), (0.5, 7), (9.0, 3)] {
            top.offer(Neighbor { distance: d, address: a });
        }
        let got: Vec<(f32, u64)> = top.into_sorted().iter().map(|n| (n.distance, n.address)).collect();
        assert_eq!(got, vec![(0.5, 7), (1.0, 2), (1.0, 9)]);
    }

    #[test]
    fn metric_names() {
        assert_eq!(Metric::parse("L2").unwrap(), Metric::L2);
        assert_eq!(Metric::parse("euclidean").unwrap(), Metric::L2);
        assert_eq!(Metric::parse("Cosine").unwrap(), Metric::Cosine);
        assert!(matches!(Metric::parse("hamming"), Err(Error::NotSupported(_))));
        assert!(matches!(Metric::parse("foo"), Err(Error::InvalidInput(_))));
    }

    #[test]
    fn span_distances_score_spans_in_order_and_check_bounds() {
        // Rows: [0,0], [1,0], [0,2], [3,4]; query [1,0].
        let v = [0.0, 0.0, 1.0, 0.0, 0.0, 2.0, 3.0, 4.0];
        let q = [1.0, 0.0];
        let got = span_distances(&v, 2, &[(2, 2), (0, 1)], &q, Metric::L2).unwrap();
        assert_eq!(got, vec![5.0, 20.0, 1.0]);
        let got = span_distances(&v, 2, &[(1, 1), (3, 1)], &q, Metric::Dot).unwrap();
        assert_eq!(got, vec![0.0, -2.0]);
        assert!(span_distances(&v, 2, &[], &q, Metric::L2).unwrap().is_empty());
        assert!(matches!(span_distances(&v, 2, &[(3, 2)], &q, Metric::L2), Err(Error::InvalidInput(_))));
        assert!(matches!(span_distances(&v, 2, &[(usize::MAX, 2)], &q, Metric::L2), Err(Error::InvalidInput(_))));
        assert!(matches!(span_distances(&v, 3, &[(0, 1)], &q, Metric::L2), Err(Error::InvalidInput(_))));
        assert!(matches!(span_distances(&v, 2, &[(0, 1)], &[1.0], Metric::L2), Err(Error::InvalidInput(_))));
    }

    #[test]
    fn pq_span_distances_sum_the_tables() {
        // 3 rows, 2 sub-vectors; codes sub-vector major: sub 0 = [1, 0, 2], sub 1 = [0, 0, 255].
        let codes = [1u8, 0, 2, 0, 0, 255];
        let mut t0 = vec![0f32; 512];
        t0[0] = 1.0;
        t0[1] = 2.0;
        t0[2] = 3.0;
        t0[256] = 10.0;
        t0[256 + 255] = 20.0;
        let mut tables = t0.clone();
        tables.extend(t0.iter().map(|x| x * 100.0));
        let got = pq_span_distances(&codes, 3, 2, &[(1, 2), (0, 1)], &tables, &[0, 1]).unwrap();
        assert_eq!(got, vec![1.0 + 10.0, 3.0 + 20.0, 200.0 + 1000.0]);
        assert!(pq_span_distances(&codes, 3, 2, &[(2, 2)], &tables, &[0]).is_err());
        assert!(pq_span_distances(&codes, 3, 2, &[(0, 1)], &tables, &[2]).is_err());
        assert!(pq_span_distances(&codes, 4, 2, &[(0, 1)], &tables, &[0]).is_err());
        assert!(pq_span_distances(&codes, 3, 2, &[(0, 1)], &tables[..100], &[0]).is_err());
    }

    #[test]
    fn pq_l2_tables_are_residual_distances() {
        // dim 2, m 2 (sub-vectors of 1 value); codeword c of sub-vector j is (j * 1000 + c).
        let codebook: Vec<f32> = (0..2).flat_map(|j| (0..256).map(move |c| (j * 1000 + c) as f32)).collect();
        let t = pq_l2_tables(&[5.0, 1003.0], &[1.0, 1.0, 0.0, 0.0], &codebook, 2).unwrap();
        assert_eq!(t.len(), 2 * 2 * 256);
        assert_eq!(t[4], 0.0); // centroid 0, sub 0: residual 4, codeword 4
        assert_eq!(t[256 + 2], 0.0); // centroid 0, sub 1: residual 1002, codeword 1002
        assert_eq!(t[512 + 5], 0.0); // centroid 1, sub 0: residual 5
        assert_eq!(t[512], 25.0);
        assert!(pq_l2_tables(&[1.0, 2.0], &[0.0], &codebook, 2).is_err());
        assert!(pq_l2_tables(&[1.0, 2.0, 3.0], &[0.0; 3], &codebook, 2).is_err());
    }

    #[test]
    fn allowed_addresses() {
        assert!(Allowed::new(&[3, 1]).is_err());
        let a = Allowed::new(&[(1 << 32) | 5, (3 << 32) | 1]).unwrap();
        assert!(a.touches_fragment(1) && a.touches_fragment(3) && !a.touches_fragment(2) && !a.touches_fragment(0));
        assert!(a.contains((1 << 32) | 5) && !a.contains(5));
    }
}
