//! Tests of `fts_topk`.

use super::*;
use crate::table::fts_score::{score_docs, ScoredList};

fn b32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn sorted(mut docs: Vec<u32>, mut scores: Vec<f32>, rows: &[u64]) -> Vec<(u32, u32)> {
    let mut v: Vec<(f32, u64, u32)> = docs.drain(..).zip(scores.drain(..)).map(|(d, s)| (s, rows[d as usize], d)).collect();
    v.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    v.into_iter().map(|(s, _, d)| (d, s.to_bits())).collect()
}

/// A posting list's bytes: `(doc ids, frequencies, block bounds, idf, times)`.
type OwnedList = (Vec<u8>, Vec<u8>, Vec<u8>, f32, u32);

/// A partition's documents as the scorers take them.
struct Partition<'a> {
    num_tokens: &'a [u8],
    norms: &'a [u8],
    row_ids: &'a [u8],
    avgdl: f32,
    rows: &'a [u64],
}

/// Documents with their scores' bits, best first.
type Ranked = Vec<(u32, u32)>;

/// [`top_k`]'s answer and the exhaustive scorer's, each as `(doc, score bits)` best first.
fn top_k_and_exhaustive(
    owned: &[OwnedList],
    p: &Partition<'_>,
    need: usize,
    allowed: Option<&[u8]>,
    k: usize,
) -> (Ranked, Ranked) {
    let bl: Vec<BoundedList<'_>> =
        owned.iter().map(|(d, f, b, idf, t)| BoundedList { docs: d, freqs: f, bounds: b, idf: *idf, times: *t }).collect();
    let sl: Vec<ScoredList<'_>> =
        owned.iter().map(|(d, f, _, idf, t)| ScoredList { docs: d, freqs: f, idf: *idf, times: *t }).collect();
    let (d1, s1) = top_k(&bl, p.norms, p.row_ids, need, allowed, k).unwrap();
    let (d2, s2) = score_docs(&sl, p.num_tokens, p.row_ids, p.avgdl, need, allowed, Some(k)).unwrap();
    (sorted(d1, s1, p.rows), sorted(d2, s2, p.rows))
}

#[test]
fn top_k_equals_exhaustive() {
    // (seeded random partitions and queries, ties included: scores and row ids must be
    // exactly those of the exhaustive scorer)
    for seed in 1..60u64 {
        let mut rng = Rng(seed * 7919);
        let n = 1 + rng.below(2000) as usize;
        let lens: Vec<u32> = (0..n).map(|_| 1 + rng.below(if seed % 3 == 0 { 3 } else { 200 }) as u32).collect();
        let rows: Vec<u64> = {
            let mut r: Vec<u64> = (0..n as u64).map(|i| (i % 7) << 32 | i).collect();
            for i in (1..n).rev() {
                r.swap(i, rng.below(i as u64 + 1) as usize);
            }
            r
        };
        let avgdl = lens.iter().map(|&l| l as f32).sum::<f32>() / n as f32;
        let num_tokens = b32(&lens);
        let norms = f32s(&doc_norms(&num_tokens, avgdl).unwrap());
        let row_ids: Vec<u8> = rows.iter().flat_map(|r| r.to_le_bytes()).collect();
        let m = 1 + rng.below(4) as usize;
        let mut owned = Vec::new();
        for _ in 0..m {
            let density = 1 + rng.below(100);
            let docs: Vec<u32> = (0..n as u32).filter(|_| rng.below(100) < density).collect();
            let freqs: Vec<u32> = docs.iter().map(|_| 1 + rng.below(if seed % 2 == 0 { 2 } else { 9 }) as u32).collect();
            let (db, fb) = (b32(&docs), b32(&freqs));
            let bounds: Vec<u8> =
                block_bounds(&db, &fb, &num_tokens, avgdl).unwrap().iter().flat_map(|x| x.to_le_bytes()).collect();
            owned.push((db, fb, bounds, 0.1 + rng.below(50) as f32 / 10.0, 1 + rng.below(2) as u32));
        }
        let mask: Vec<u8> = (0..n).map(|_| u8::from(rng.below(10) > 2)).collect();
        for need in [1, m] {
            for allowed in [None, Some(mask.as_slice())] {
                for k in [1usize, 3, 10, 50] {
                    let p = Partition { num_tokens: &num_tokens, norms: &norms, row_ids: &row_ids, avgdl, rows: &rows };
                    let (got, want) = top_k_and_exhaustive(&owned, &p, need, allowed, k);
                    assert_eq!(got, want, "seed {seed} need {need} k {k}");
                }
            }
        }
    }
}

#[test]
fn top_k_with_a_rare_token_equals_exhaustive() {
    // (a rare token beside common ones, Zipf-like: the rare list is scored first and the walk
    // passes over its documents; larger partitions, so whole blocks are skipped)
    for seed in 1..25u64 {
        let mut rng = Rng(seed * 104_729);
        let n = 5_000 + rng.below(30_000) as usize;
        let lens: Vec<u32> = (0..n).map(|_| 5 + rng.below(200) as u32).collect();
        let rows: Vec<u64> = (0..n as u64).map(|i| i ^ (seed << 20)).collect();
        let avgdl = lens.iter().map(|&l| l as f32).sum::<f32>() / n as f32;
        let num_tokens = b32(&lens);
        let norms = f32s(&doc_norms(&num_tokens, avgdl).unwrap());
        let row_ids: Vec<u8> = rows.iter().flat_map(|r| r.to_le_bytes()).collect();
        let m = 2 + rng.below(3) as usize;
        let mut owned = Vec::new();
        for i in 0..m {
            // (per mille: the first list rare, the others common)
            let density = if i == 0 { 1 + rng.below(30) } else { 150 + rng.below(800) };
            let docs: Vec<u32> = (0..n as u32).filter(|_| rng.below(1000) < density).collect();
            let freqs: Vec<u32> = docs.iter().map(|_| 1 + (rng.below(16) as u32).saturating_sub(12)).collect();
            let (db, fb) = (b32(&docs), b32(&freqs));
            let bounds = f32s(&block_bounds(&db, &fb, &num_tokens, avgdl).unwrap());
            let nf = docs.len() as f32;
            let idf = (1.0 + (n as f32 - nf + 0.5) / (nf + 0.5)).ln();
            owned.push((db, fb, bounds, idf, 1 + u32::from(rng.below(8) == 0)));
        }
        let mask: Vec<u8> = (0..n).map(|_| u8::from(rng.below(10) > 1)).collect();
        for allowed in [None, Some(mask.as_slice())] {
            for k in [1usize, 10, 100] {
                let p = Partition { num_tokens: &num_tokens, norms: &norms, row_ids: &row_ids, avgdl, rows: &rows };
                let (got, want) = top_k_and_exhaustive(&owned, &p, 1, allowed, k);
                assert_eq!(got, want, "seed {seed} k {k}");
            }
        }
    }
}

#[test]
fn exact_phrase_equals_phrase_check() {
    let mut rng = Rng(99);
    for _ in 0..3000 {
        let m = 1 + rng.below(4) as usize;
        let pos: Vec<Vec<u32>> = (0..m)
            .map(|_| {
                let mut v: Vec<u32> = (0..rng.below(6)).map(|_| rng.below(12) as u32).collect();
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect();
        let qs: Vec<i32> = (0..m).map(|_| rng.below(4) as i32).collect();
        let bytes: Vec<Vec<u8>> = pos.iter().map(|p| b32(p)).collect();
        let lists: Vec<PhraseList<'_>> =
            qs.iter().map(|&q| PhraseList { docs: &[], starts: &[], positions: &[], query_pos: q }).collect();
        let spans: Vec<&[u8]> = bytes.iter().map(|b| b.as_slice()).collect();
        let mut per: Vec<(&[u32], i32)> = pos.iter().zip(&qs).map(|(p, &q)| (p.as_slice(), q)).collect();
        assert_eq!(exact_phrase(&lists, &spans), phrase_in_doc(&mut per, 0), "{pos:?} {qs:?}");
    }
}

#[test]
fn phrase_walk_equals_all_found() {
    // (seeded random documents of three tokens with positions; the walk's best k are the
    // first k of every document found, ranked)
    for seed in 1..40u64 {
        let mut rng = Rng(seed * 104729);
        let n = 1 + rng.below(1500) as usize;
        let mut lens = vec![0u32; n];
        let mut per_token: Vec<(Vec<u32>, Vec<u32>, Vec<u32>)> = vec![Default::default(); 3];
        for d in 0..n {
            let words: Vec<usize> =
                (0..1 + rng.below(12)).map(|_| rng.below(if seed % 2 == 0 { 3 } else { 5 }) as usize).collect();
            lens[d] = words.len() as u32;
            for (t, (docs, freqs, pos)) in per_token.iter_mut().enumerate() {
                let at: Vec<u32> = (0..words.len()).filter(|&p| words[p] == t).map(|p| p as u32).collect();
                if !at.is_empty() {
                    docs.push(d as u32);
                    freqs.push(at.len() as u32);
                    pos.extend(at);
                }
            }
        }
        let avgdl = lens.iter().sum::<u32>() as f32 / n as f32;
        let num_tokens = b32(&lens);
        let norms = f32s(&doc_norms(&num_tokens, avgdl).unwrap());
        let rows: Vec<u8> = (0..n as u64).map(|i| (i * 7919) % 10007).flat_map(|r| r.to_le_bytes()).collect();
        let owned: Vec<[Vec<u8>; 4]> = per_token
            .iter()
            .map(|(docs, freqs, pos)| {
                let starts: Vec<u32> = std::iter::once(0)
                    .chain(freqs.iter().scan(0, |a, &f| {
                        *a += f;
                        Some(*a)
                    }))
                    .collect();
                let bounds = block_bounds(&b32(docs), &b32(freqs), &num_tokens, avgdl).unwrap();
                [b32(docs), b32(&starts), b32(pos), bounds.iter().flat_map(|v| v.to_le_bytes()).collect()]
            })
            .collect();
        let query: Vec<(usize, i32)> = match seed % 3 {
            0 => vec![(0, 0), (1, 1)],
            1 => vec![(1, 0), (0, 1), (1, 2)],
            _ => vec![(2, 0), (0, 2)],
        };
        let lists: Vec<PhraseList<'_>> = query
            .iter()
            .map(|&(t, q)| PhraseList { docs: &owned[t][0], starts: &owned[t][1], positions: &owned[t][2], query_pos: q })
            .collect();
        let mut uniq: Vec<usize> = Vec::new();
        query.iter().for_each(|&(t, _)| {
            if !uniq.contains(&t) {
                uniq.push(t)
            }
        });
        let terms: Vec<PhraseTerm<'_>> = uniq
            .iter()
            .map(|&t| PhraseTerm {
                list: query.iter().position(|&(x, _)| x == t).unwrap(),
                idf: 0.5 + t as f32,
                times: query.iter().filter(|&&(x, _)| x == t).count() as u32,
                bounds: &owned[t][3],
            })
            .collect();
        let row_of: Vec<u64> = (0..n as u64).map(|i| (i * 7919) % 10007).collect();
        for slop in [0u32, 1, 2] {
            let (d, s) = phrase_top_k(&lists, slop, &terms, &norms, &rows, None, None).unwrap();
            let all = sorted(d, s, &row_of);
            for k in [1usize, 2, 5, 20] {
                let (d, s) = phrase_top_k(&lists, slop, &terms, &norms, &rows, None, Some(k)).unwrap();
                assert_eq!(sorted(d, s, &row_of), all[..k.min(all.len())].to_vec(), "seed {seed} slop {slop} k {k}");
            }
        }
    }
}

#[test]
fn bounds_check_input() {
    let lens = b32(&[3, 3]);
    assert!(block_bounds(&b32(&[1, 0]), &b32(&[1, 1]), &lens, 3.0).is_err());
    assert!(block_bounds(&b32(&[0, 2]), &b32(&[1, 1]), &lens, 3.0).is_err());
    assert_eq!(block_bounds(&b32(&[0, 1]), &b32(&[1, 2]), &lens, 3.0).unwrap().len(), 1);
}

#[test]
fn phrase_top_k_best_first() {
    // doc 0: a@1 b@2; doc 1: a@1 b@3; doc 2: a@0,5 b@1,6 (twice: scores highest)
    let a = [b32(&[0, 1, 2]), b32(&[0, 1, 2, 4]), b32(&[1, 1, 0, 5])];
    let bb = [b32(&[0, 1, 2]), b32(&[0, 1, 2, 4]), b32(&[2, 3, 1, 6])];
    let lists = [
        PhraseList { docs: &a[0], starts: &a[1], positions: &a[2], query_pos: 0 },
        PhraseList { docs: &bb[0], starts: &bb[1], positions: &bb[2], query_pos: 1 },
    ];
    let lens = b32(&[4, 4, 8]);
    let bounds: Vec<Vec<u8>> = [&a, &bb]
        .iter()
        .map(|x| block_bounds(&x[0], &b32(&[1, 1, 2]), &lens, 5.0).unwrap().iter().flat_map(|v| v.to_le_bytes()).collect())
        .collect();
    let terms = [
        PhraseTerm { list: 0, idf: 1.0, times: 1, bounds: &bounds[0] },
        PhraseTerm { list: 1, idf: 1.0, times: 1, bounds: &bounds[1] },
    ];
    let rows: Vec<u8> = [5u64, 6, 7].iter().flat_map(|r| r.to_le_bytes()).collect();
    let norms = f32s(&doc_norms(&lens, 5.0).unwrap());
    let (d, s) = phrase_top_k(&lists, 0, &terms, &norms, &rows, None, None).unwrap();
    assert_eq!(d, vec![0, 2]);
    let (d1, s1) = phrase_top_k(&lists, 0, &terms, &norms, &rows, None, Some(1)).unwrap();
    let best = if s[0] >= s[1] { 0 } else { 1 };
    assert_eq!((d1, s1), (vec![d[best]], vec![s[best]]));
    let (d, _) = phrase_top_k(&lists, 1, &terms, &norms, &rows, Some(&[1, 1, 0]), None).unwrap();
    assert_eq!(d, vec![0, 1]);
}
