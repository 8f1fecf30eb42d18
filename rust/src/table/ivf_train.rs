//! Training and encoding for IVF vector indices: k-means (the IVF centroids, and each
//! sub-space of a product quantizer), nearest-centroid assignment and PQ encoding.
//!
//! Everything works on row-major `f32` matrices (`rows × dim`) and runs on the CPU pool, row
//! chunks in parallel. Results are deterministic for a given seed: chunks are reduced in a
//! fixed order, whatever the number of threads.
//!
//! * **k-means** starts from k-means++ seeds and runs Lloyd iterations until the loss (the
//!   sum of each row's distance to its centroid) improves by less than [`TOLERANCE`] or
//!   `max_iters` is reached. An emptied cluster takes half of the largest one (its centroid
//!   is split in two, nudged apart), so every partition ends up used. Under [`Metric::Dot`]
//!   a row joins the centroid of largest inner product; otherwise the nearest by squared
//!   Euclidean distance (a cosine index trains on normalized rows, so L2 there too).
//! * **PQ** splits each row into `m` sub-vectors and trains 256 codewords per sub-space with
//!   k-means under L2; a row's code is the nearest codeword's number in each sub-space.

use crate::error::{Error, Result};

use super::knn::{dot, l2_squared, Metric};

/// Relative loss improvement under which k-means stops early.
pub const TOLERANCE: f64 = 1e-4;

/// Codewords per PQ sub-space (8-bit codes).
pub const PQ_CODEWORDS: usize = 256;

/// k-means++ seeds come from at most this many rows per centroid.
const SEED_ROWS_PER_CENTROID: usize = 64;

/// Rows per parallel task of an assignment or k-means pass.
const CHUNK_ROWS: usize = 2048;

/// A trained k-means model.
#[derive(Debug, Clone)]
pub struct KMeans {
    /// `k × dim` centroids, row-major.
    pub centroids: Vec<f32>,
    /// Sum over the training rows of the distance to their centroid, after the last pass.
    pub loss: f64,
    /// Lloyd iterations run.
    pub iterations: usize,
}

/// A small deterministic generator (SplitMix64): training must not depend on global state.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn below(&mut self, n: usize) -> usize {
        (self.unit() * n as f64) as usize % n.max(1)
    }
}

fn check_matrix(what: &str, data: &[f32], dim: usize) -> Result<usize> {
    if dim == 0 || data.len() % dim != 0 {
        return Err(Error::InvalidInput(format!("{what}: {} values are not rows of {dim}", data.len())));
    }
    Ok(data.len() / dim)
}

/// Centroids laid out for the assignment kernel: tiles of [`TILE`] centroids, each stored
/// dimension-major (`tile × dim × TILE` values, the last tile padded with zeros), so that a
/// tile's distances to a few rows accumulate in registers while its values stream in order.
struct Tiles {
    k: usize,
    dim: usize,
    values: Vec<f32>,
}

/// Centroids per tile: two AVX registers (four SSE registers) of accumulators per row.
const TILE: usize = 16;
/// Rows scored together against one tile.
const ROWS: usize = 4;

impl Tiles {
    fn new(centroids: &[f32], dim: usize) -> Tiles {
        let k = centroids.len() / dim;
        let tiles = k.div_ceil(TILE);
        let mut values = vec![0f32; tiles * dim * TILE];
        for (c, row) in centroids.chunks_exact(dim).enumerate() {
            let (t, l) = (c / TILE, c % TILE);
            for (d, &v) in row.iter().enumerate() {
                values[t * dim * TILE + d * TILE + l] = v;
            }
        }
        Tiles { k, dim, values }
    }
}

/// Scores a block of up to [`ROWS`] rows (`rows`, row-major) against every centroid and
/// writes each row's best `(centroid, distance)`; ties go to the lower centroid. Under
/// `DOT` the score is `1 − x·c`, else `Σ (x − c)²`.
#[inline(always)]
fn nearest_block_impl<const DOT: bool>(rows: &[f32], tiles: &Tiles, xs: &mut [[f32; ROWS]], out: &mut [(u32, f32); ROWS]) {
    let dim = tiles.dim;
    let n = rows.len() / dim;
    for i in 0..n {
        for d in 0..dim {
            xs[d][i] = rows[i * dim + d];
        }
    }
    // Each lane keeps its best distance and tile so far (branch-free, so it vectorizes);
    // the lanes are reduced once at the end.
    let mut best_d = [[f32::INFINITY; TILE]; ROWS];
    let mut best_t = [[0u32; TILE]; ROWS];
    for (t, tile) in tiles.values.chunks_exact(dim * TILE).enumerate() {
        let mut acc = [[0f32; TILE]; ROWS];
        for (col, x) in tile.chunks_exact(TILE).zip(xs.iter()) {
            for i in 0..ROWS {
                for l in 0..TILE {
                    if DOT {
                        acc[i][l] += x[i] * col[l];
                    } else {
                        let v = x[i] - col[l];
                        acc[i][l] += v * v;
                    }
                }
            }
        }
        // (the last tile's padding lanes are no centroids: left out)
        let lanes = TILE.min(tiles.k - t * TILE);
        for i in 0..ROWS {
            for l in 0..lanes {
                let d = if DOT { 1.0 - acc[i][l] } else { acc[i][l] };
                let better = d < best_d[i][l];
                best_d[i][l] = if better { d } else { best_d[i][l] };
                best_t[i][l] = if better { t as u32 } else { best_t[i][l] };
            }
        }
    }
    *out = [(0, f32::INFINITY); ROWS];
    for i in 0..n {
        for l in 0..TILE {
            let (d, c) = (best_d[i][l], best_t[i][l] * TILE as u32 + l as u32);
            if d < out[i].1 || (d == out[i].1 && c < out[i].0) {
                out[i] = (c, d);
            }
        }
    }
}

/// [`nearest_block_impl`] compiled for AVX2 + FMA.
///
/// # Safety
/// The CPU must support AVX2 and FMA (checked by the caller).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn nearest_block_avx2<const DOT: bool>(rows: &[f32], tiles: &Tiles, xs: &mut [[f32; ROWS]], out: &mut [(u32, f32); ROWS]) {
    nearest_block_impl::<DOT>(rows, tiles, xs, out)
}

fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static AVX2: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AVX2.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The nearest centroid of every row of `data` (`(centroid, distance)` per row; a row
/// whose distances are all NaN gets `(0, inf)`).
fn nearest_all(data: &[f32], tiles: &Tiles, metric: Metric) -> Vec<(u32, f32)> {
    let dim = tiles.dim;
    let dot = metric == Metric::Dot;
    let avx2 = has_avx2();
    let mut out = Vec::with_capacity(data.len() / dim);
    let mut best = [(0u32, f32::INFINITY); ROWS];
    // The block's rows, dimension-major (a partial last block keeps stale values, unused).
    let mut xs = vec![[0f32; ROWS]; dim];
    for block in data.chunks(ROWS * dim) {
        match (avx2, dot) {
            // SAFETY: `has_avx2()` checked that the CPU has AVX2 and FMA.
            #[cfg(target_arch = "x86_64")]
            (true, true) => unsafe { nearest_block_avx2::<true>(block, tiles, &mut xs, &mut best) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            (true, false) => unsafe { nearest_block_avx2::<false>(block, tiles, &mut xs, &mut best) },
            (_, true) => nearest_block_impl::<true>(block, tiles, &mut xs, &mut best),
            (_, false) => nearest_block_impl::<false>(block, tiles, &mut xs, &mut best),
        }
        out.extend_from_slice(&best[..block.len() / dim]);
    }
    out
}

/// For every row of `data`, its nearest centroid and the distance to it (rows whose
/// distances are all NaN go to centroid 0 with distance NaN).
pub fn assign(data: &[f32], dim: usize, centroids: &[f32], metric: Metric) -> Result<(Vec<u32>, Vec<f32>)> {
    let rows = check_matrix("assign: data", data, dim)?;
    let k = check_matrix("assign: centroids", centroids, dim)?;
    if k == 0 {
        return Err(Error::InvalidInput("assign: no centroids".into()));
    }
    let tiles = Tiles::new(centroids, dim);
    let chunks: Vec<&[f32]> = data.chunks(CHUNK_ROWS * dim).collect();
    let parts = crate::parallel::map(chunks, rows * k * dim >= 1 << 22, |chunk| nearest_all(chunk, &tiles, metric));
    let mut ids = Vec::with_capacity(rows);
    let mut dists = Vec::with_capacity(rows);
    for p in parts {
        for (i, d) in p {
            ids.push(i);
            dists.push(if d.is_finite() { d } else { f32::NAN });
        }
    }
    Ok((ids, dists))
}

/// k-means++ seeding: the first centroid uniformly at random, each next one drawn with
/// probability proportional to a row's distance to its nearest chosen centroid.
fn plus_plus(data: &[f32], dim: usize, k: usize, metric: Metric, rng: &mut SplitMix) -> Vec<f32> {
    let rows = data.len() / dim;
    let mut centroids = Vec::with_capacity(k * dim);
    let first = rng.below(rows);
    centroids.extend_from_slice(&data[first * dim..(first + 1) * dim]);
    // Distance of each row to its nearest chosen centroid (dot: shifted to be non-negative).
    let mut best = vec![f32::INFINITY; rows];
    let parallel = rows * dim >= 1 << 18;
    for _ in 1..k {
        let c = &centroids[centroids.len() - dim..];
        let chunks: Vec<(&[f32], &mut [f32])> = data.chunks(CHUNK_ROWS * dim).zip(best.chunks_mut(CHUNK_ROWS)).collect();
        let sums = crate::parallel::map(chunks, parallel, |(rows, best)| {
            let mut sum = 0f64;
            for (x, b) in rows.chunks_exact(dim).zip(best.iter_mut()) {
                let d = match metric {
                    Metric::Dot => (1.0 - dot(x, c)).max(0.0),
                    _ => l2_squared(x, c),
                };
                if d < *b {
                    *b = d;
                }
                if b.is_finite() {
                    sum += *b as f64;
                }
            }
            sum
        });
        let total: f64 = sums.iter().sum();
        let pick = if total > 0.0 && total.is_finite() {
            let mut target = rng.unit() * total;
            let mut pick = rows - 1;
            for (i, &b) in best.iter().enumerate() {
                if b.is_finite() {
                    target -= b as f64;
                    if target < 0.0 {
                        pick = i;
                        break;
                    }
                }
            }
            pick
        } else {
            rng.below(rows) // every row sits on a centroid already: any row will do
        };
        centroids.extend_from_slice(&data[pick * dim..(pick + 1) * dim]);
    }
    centroids
}

/// One Lloyd pass: assigns every row, returns `(per-centroid sums, counts, loss)`.
fn lloyd_pass(data: &[f32], dim: usize, centroids: &[f32], metric: Metric) -> (Vec<f64>, Vec<u64>, f64) {
    let k = centroids.len() / dim;
    let rows = data.len() / dim;
    let tiles = Tiles::new(centroids, dim);
    let chunks: Vec<&[f32]> = data.chunks(CHUNK_ROWS * dim).collect();
    let partials = crate::parallel::map(chunks, rows * k * dim >= 1 << 20, |chunk| {
        let mut sums = vec![0f64; k * dim];
        let mut counts = vec![0u64; k];
        let mut loss = 0f64;
        for (x, (i, d)) in chunk.chunks_exact(dim).zip(nearest_all(chunk, &tiles, metric)) {
            if !d.is_finite() {
                continue; // a NaN row trains nothing
            }
            let i = i as usize;
            counts[i] += 1;
            loss += d as f64;
            for (s, v) in sums[i * dim..(i + 1) * dim].iter_mut().zip(x) {
                *s += *v as f64;
            }
        }
        (sums, counts, loss)
    });
    let mut sums = vec![0f64; k * dim];
    let mut counts = vec![0u64; k];
    let mut loss = 0f64;
    for (s, c, l) in partials {
        for (a, b) in sums.iter_mut().zip(&s) {
            *a += b;
        }
        for (a, b) in counts.iter_mut().zip(&c) {
            *a += b;
        }
        loss += l;
    }
    (sums, counts, loss)
}

/// Trains `k` centroids on the rows of `data`. Needs at least `k` rows.
pub fn train_kmeans(data: &[f32], dim: usize, k: usize, max_iters: usize, metric: Metric, seed: u64) -> Result<KMeans> {
    let rows = check_matrix("k-means: data", data, dim)?;
    if k == 0 {
        return Err(Error::InvalidInput("k-means: k must be at least 1".into()));
    }
    if rows < k {
        return Err(Error::InvalidInput(format!("k-means: {rows} rows cannot train {k} centroids")));
    }
    let metric = if metric == Metric::Cosine { Metric::L2 } else { metric };
    let mut rng = SplitMix(seed ^ 0x6C61_6E63_6570_79);
    // Seeds are drawn from at most SEED_ROWS_PER_CENTROID × k rows (a random subset): the
    // seeding's k passes would otherwise cost as much as several Lloyd iterations.
    let seed_rows = rows.min(SEED_ROWS_PER_CENTROID * k);
    let mut centroids = if seed_rows < rows {
        let mut picked: Vec<usize> = (0..rows).collect();
        for i in 0..seed_rows {
            let j = i + rng.below(rows - i);
            picked.swap(i, j);
        }
        picked.truncate(seed_rows);
        picked.sort_unstable();
        let subset: Vec<f32> = picked.iter().flat_map(|&r| data[r * dim..(r + 1) * dim].iter().copied()).collect();
        plus_plus(&subset, dim, k, metric, &mut rng)
    } else {
        plus_plus(data, dim, k, metric, &mut rng)
    };
    let mut prev = f64::INFINITY;
    let mut loss = f64::INFINITY;
    let mut iterations = 0;
    for _ in 0..max_iters.max(1) {
        iterations += 1;
        let (sums, counts, l) = lloyd_pass(data, dim, &centroids, metric);
        loss = l;
        for i in 0..k {
            if counts[i] > 0 {
                let n = counts[i] as f64;
                for (c, s) in centroids[i * dim..(i + 1) * dim].iter_mut().zip(&sums[i * dim..(i + 1) * dim]) {
                    *c = (*s / n) as f32;
                }
            }
        }
        // Empty clusters: split the largest cluster's centroid in two.
        let mut counts = counts;
        for i in 0..k {
            if counts[i] == 0 {
                let big = (0..k).max_by_key(|&j| (counts[j], std::cmp::Reverse(j))).unwrap_or(0);
                if counts[big] < 2 {
                    continue;
                }
                for d in 0..dim {
                    let v = centroids[big * dim + d];
                    let eps = if v == 0.0 { 1e-6 } else { v.abs() * 1e-4 };
                    centroids[i * dim + d] = v + eps;
                    centroids[big * dim + d] = v - eps;
                }
                counts[i] = counts[big] / 2;
                counts[big] -= counts[i];
            }
        }
        if prev.is_finite() && (prev - loss).abs() <= TOLERANCE * prev.abs().max(f64::MIN_POSITIVE) {
            break;
        }
        prev = loss;
    }
    Ok(KMeans { centroids, loss, iterations })
}

/// `data − centroids[parts]`, row by row.
pub fn residuals(data: &[f32], dim: usize, centroids: &[f32], parts: &[u32]) -> Result<Vec<f32>> {
    let rows = check_matrix("residuals: data", data, dim)?;
    let k = check_matrix("residuals: centroids", centroids, dim)?;
    if parts.len() != rows || parts.iter().any(|&p| p as usize >= k) {
        return Err(Error::InvalidInput(format!("residuals: {} partitions for {rows} rows of {k} centroids", parts.len())));
    }
    let mut out = Vec::with_capacity(data.len());
    for (x, &p) in data.chunks_exact(dim).zip(parts) {
        let c = &centroids[p as usize * dim..(p as usize + 1) * dim];
        out.extend(x.iter().zip(c).map(|(a, b)| a - b));
    }
    Ok(out)
}

/// Trains a product quantizer: `m` sub-spaces of `dim / m` values, [`PQ_CODEWORDS`] codewords
/// each, by k-means under L2. Returns the codebook, `m × 256 × (dim / m)` values.
pub fn train_pq(data: &[f32], dim: usize, m: usize, max_iters: usize, seed: u64) -> Result<Vec<f32>> {
    let rows = check_matrix("PQ training: data", data, dim)?;
    if m == 0 || dim % m != 0 {
        return Err(Error::InvalidInput(format!("PQ training: {m} sub-vectors do not divide dimension {dim}")));
    }
    if rows < PQ_CODEWORDS {
        return Err(Error::InvalidInput(format!("PQ training needs at least {PQ_CODEWORDS} rows, {rows} were given")));
    }
    let sub = dim / m;
    let books = crate::parallel::map((0..m).collect(), true, |j| {
        let slice: Vec<f32> = data.chunks_exact(dim).flat_map(|x| x[j * sub..(j + 1) * sub].iter().copied()).collect();
        train_kmeans(&slice, sub, PQ_CODEWORDS, max_iters, Metric::L2, seed.wrapping_add(j as u64)).map(|km| km.centroids)
    });
    let mut codebook = Vec::with_capacity(m * PQ_CODEWORDS * sub);
    for b in books {
        codebook.extend_from_slice(&b?);
    }
    Ok(codebook)
}

/// PQ codes of the rows of `data` (`rows × m` bytes, row-major): in each sub-space, the number
/// of the nearest codeword under L2.
pub fn pq_encode(data: &[f32], dim: usize, codebook: &[f32], m: usize) -> Result<Vec<u8>> {
    let rows = check_matrix("PQ encoding: data", data, dim)?;
    if m == 0 || dim % m != 0 || codebook.len() != m * PQ_CODEWORDS * (dim / m) {
        return Err(Error::InvalidInput(format!(
            "PQ encoding: a codebook of {} values does not fit {m} sub-vectors of dimension {dim}",
            codebook.len()
        )));
    }
    let sub = dim / m;
    let tiles: Vec<Tiles> = codebook.chunks_exact(PQ_CODEWORDS * sub).map(|w| Tiles::new(w, sub)).collect();
    let chunks: Vec<&[f32]> = data.chunks(CHUNK_ROWS * dim).collect();
    let parts = crate::parallel::map(chunks, rows * dim * PQ_CODEWORDS >= 1 << 22, |chunk| {
        let n = chunk.len() / dim;
        let mut out = vec![0u8; n * m];
        let mut slice = Vec::with_capacity(n * sub);
        for (j, t) in tiles.iter().enumerate() {
            slice.clear();
            slice.extend(chunk.chunks_exact(dim).flat_map(|x| x[j * sub..(j + 1) * sub].iter().copied()));
            for (r, (c, _)) in nearest_all(&slice, t, Metric::L2).into_iter().enumerate() {
                out[r * m + j] = c as u8;
            }
        }
        out
    });
    let mut out = Vec::with_capacity(rows * m);
    for p in parts {
        out.extend_from_slice(&p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three well-separated blobs in 4-d.
    fn blobs(per: usize) -> (Vec<f32>, Vec<[f32; 4]>) {
        let centers = vec![[0.0, 0.0, 0.0, 0.0], [10.0, 10.0, 0.0, 0.0], [0.0, 0.0, 10.0, 10.0]];
        let mut rng = SplitMix(7);
        let mut data = Vec::new();
        for i in 0..per * 3 {
            let c = centers[i % 3];
            for v in c {
                data.push(v + (rng.unit() as f32 - 0.5));
            }
        }
        (data, centers)
    }

    #[test]
    fn kmeans_finds_separated_clusters() {
        let (data, centers) = blobs(200);
        let km = train_kmeans(&data, 4, 3, 50, Metric::L2, 1).unwrap();
        for c in &centers {
            let (i, d) = nearest_all(c, &Tiles::new(&km.centroids, 4), Metric::L2)[0];
            assert!(d < 0.1, "center {c:?} is {d} from centroid {i}");
        }
        let (ids, _) = assign(&data, 4, &km.centroids, Metric::L2).unwrap();
        for r in 0..ids.len() {
            assert_eq!(ids[r], ids[r % 3], "rows of one blob share a partition");
        }
        // deterministic
        assert_eq!(km.centroids, train_kmeans(&data, 4, 3, 50, Metric::L2, 1).unwrap().centroids);
    }

    #[test]
    fn kmeans_uses_every_centroid_and_rejects_too_few_rows() {
        let (data, _) = blobs(100);
        let km = train_kmeans(&data, 4, 16, 20, Metric::L2, 3).unwrap();
        let (ids, _) = assign(&data, 4, &km.centroids, Metric::L2).unwrap();
        let mut used = [false; 16];
        for i in ids {
            used[i as usize] = true;
        }
        assert!(used.iter().filter(|u| **u).count() >= 12, "{used:?}");
        assert!(train_kmeans(&data[..8], 4, 3, 5, Metric::L2, 0).is_err());
        assert!(train_kmeans(&data[..7], 4, 1, 5, Metric::L2, 0).is_err());
    }

    #[test]
    fn pq_round_trip_is_close() {
        let (data, _) = blobs(200);
        let cb = train_pq(&data, 4, 2, 25, 5).unwrap();
        assert_eq!(cb.len(), 2 * 256 * 2);
        let codes = pq_encode(&data, 4, &cb, 2).unwrap();
        assert_eq!(codes.len(), 600 * 2);
        let mut err = 0f32;
        for (x, c) in data.chunks_exact(4).zip(codes.chunks_exact(2)) {
            for j in 0..2 {
                let w = &cb[(j * 256 + c[j] as usize) * 2..(j * 256 + c[j] as usize) * 2 + 2];
                err += l2_squared(&x[j * 2..j * 2 + 2], w);
            }
        }
        assert!(err / 600.0 < 0.05, "mean squared PQ error {}", err / 600.0);
        assert!(train_pq(&data[..400], 4, 2, 5, 0).is_err(), "fewer than 256 rows");
        assert!(pq_encode(&data, 4, &cb[1..], 2).is_err());
    }

    #[test]
    fn residuals_check_partitions() {
        let r = residuals(&[1.0, 2.0, 3.0, 4.0], 2, &[1.0, 1.0, 0.0, 0.0], &[0, 1]).unwrap();
        assert_eq!(r, vec![0.0, 1.0, 3.0, 4.0]);
        assert!(residuals(&[1.0, 2.0], 2, &[1.0, 1.0], &[1]).is_err());
    }

    #[test]
    fn dot_assignment_takes_the_largest_inner_product() {
        let centroids = [1.0, 0.0, 0.0, 2.0];
        let (ids, d) = assign(&[3.0, 1.0, 0.0, 1.0], 2, &centroids, Metric::Dot).unwrap();
        assert_eq!(ids, vec![0, 1]);
        assert_eq!(d, vec![1.0 - 3.0, 1.0 - 2.0]);
    }
}
