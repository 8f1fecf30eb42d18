//! Row-id sequences (`RowIdSequence`, FORMAT.md §4.3/§4.5) of datasets with stable row ids.
//!
//! A sequence lists the stable row id of every physical row of a fragment, as segments:
//! ranges, ranges with holes or with a bitmap, sorted arrays and plain arrays. Decoding
//! expands it to one `u64` per row; encoding writes ranges where the ids are contiguous and
//! arrays elsewhere.

use prost::Message;

use crate::error::{Error, Result};
use crate::format::tablepb::{self, encoded_u64_array, u64_segment, EncodedU64Array, U64Segment};

fn decode_array(a: &EncodedU64Array, out: &mut Vec<u64>) -> Result<()> {
    // (a base plus an offset past u64::MAX is corrupt, not a wrapped id)
    let add = |base: u64, offset: u64| base.checked_add(offset).ok_or_else(|| Error::corrupt("row-id array overflows u64"));
    match &a.array {
        Some(encoded_u64_array::Array::U16Array(x)) => {
            if x.offsets.len() % 2 != 0 {
                return Err(Error::corrupt("row-id u16 array has an odd number of bytes"));
            }
            for c in x.offsets.chunks_exact(2) {
                out.push(add(x.base, u16::from_le_bytes([c[0], c[1]]) as u64)?);
            }
        }
        Some(encoded_u64_array::Array::U32Array(x)) => {
            if x.offsets.len() % 4 != 0 {
                return Err(Error::corrupt("row-id u32 array length is not a multiple of 4"));
            }
            for c in x.offsets.chunks_exact(4) {
                out.push(add(x.base, u32::from_le_bytes(c.try_into().expect("4")) as u64)?);
            }
        }
        Some(encoded_u64_array::Array::U64Array(x)) => {
            if x.values.len() % 8 != 0 {
                return Err(Error::corrupt("row-id u64 array length is not a multiple of 8"));
            }
            out.extend(x.values.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8"))));
        }
        None => return Err(Error::corrupt("empty row-id array")),
    }
    Ok(())
}

fn check_range(start: u64, end: u64) -> Result<()> {
    if end < start || end - start > (1 << 32) {
        return Err(Error::corrupt(format!("row-id range {start}..{end} is invalid")));
    }
    Ok(())
}

/// Bytes of bitmap needed for the range `start..end` (checked by [`check_range`]).
fn bitmap_bytes(start: u64, end: u64) -> usize {
    ((end - start) as usize).div_ceil(8)
}

/// How many ids a segment holds, computed from its bytes without expanding it.
fn segment_len(seg: &U64Segment) -> Result<u64> {
    Ok(match &seg.segment {
        Some(u64_segment::Segment::Range(r)) => {
            check_range(r.start, r.end)?;
            r.end - r.start
        }
        Some(u64_segment::Segment::RangeWithHoles(r)) => {
            check_range(r.start, r.end)?;
            let mut holes = Vec::new();
            if let Some(h) = &r.holes {
                decode_array(h, &mut holes)?;
            }
            holes.sort_unstable();
            holes.dedup();
            let inside = holes.iter().filter(|&&v| (r.start..r.end).contains(&v)).count() as u64;
            r.end - r.start - inside
        }
        Some(u64_segment::Segment::RangeWithBitmap(r)) => {
            check_range(r.start, r.end)?;
            let need = bitmap_bytes(r.start, r.end);
            if r.bitmap.len() < need {
                return Err(Error::corrupt(format!(
                    "row-id bitmap of {} bytes is too short for the range {}..{}",
                    r.bitmap.len(),
                    r.start,
                    r.end
                )));
            }
            let len = r.end - r.start;
            let full = (len / 8) as usize;
            let mut n: u64 = r.bitmap[..full].iter().map(|b| b.count_ones() as u64).sum();
            if len % 8 != 0 {
                // Bit i of the range is bit i % 8 of byte i / 8, least significant first (as
                // pylance's bitmap): keep the low `len % 8` bits of the last byte.
                n += (r.bitmap[full] & ((1u8 << (len % 8)) - 1)).count_ones() as u64;
            }
            n
        }
        Some(u64_segment::Segment::SortedArray(a)) | Some(u64_segment::Segment::Array(a)) => {
            let (bytes, width) = match &a.array {
                Some(encoded_u64_array::Array::U16Array(x)) => (x.offsets.len(), 2),
                Some(encoded_u64_array::Array::U32Array(x)) => (x.offsets.len(), 4),
                Some(encoded_u64_array::Array::U64Array(x)) => (x.values.len(), 8),
                None => return Err(Error::corrupt("empty row-id array")),
            };
            if bytes % width != 0 {
                return Err(Error::corrupt(format!("row-id array of {bytes} bytes is not a multiple of {width}")));
            }
            (bytes / width) as u64
        }
        None => return Err(Error::corrupt("empty row-id segment")),
    })
}

/// Number of ids in a serialized `RowIdSequence`, without expanding it (ranges need no bytes
/// per id, so a few bytes can describe billions of ids).
pub fn row_id_count(data: &[u8]) -> Result<u64> {
    let seq = tablepb::RowIdSequence::decode(data)?;
    seq.segments.iter().try_fold(0u64, |n, seg| {
        n.checked_add(segment_len(seg)?).ok_or_else(|| Error::corrupt("row-id sequence longer than 2^64 ids"))
    })
}

/// Expands a serialized `RowIdSequence` of a fragment with `num_rows` physical rows into one
/// id per row. The sequence must hold exactly `num_rows` ids: that is checked before any id
/// is expanded, so a corrupt count costs no memory.
pub fn decode_row_ids(data: &[u8], num_rows: u64) -> Result<Vec<u64>> {
    let seq = tablepb::RowIdSequence::decode(data)?;
    let mut total = 0u64;
    for seg in &seq.segments {
        total = total.checked_add(segment_len(seg)?).ok_or_else(|| Error::corrupt("row-id sequence longer than 2^64 ids"))?;
    }
    if total != num_rows {
        return Err(Error::corrupt(format!("row-id sequence has {total} ids for a fragment of {num_rows} rows")));
    }
    let mut out = Vec::with_capacity(num_rows as usize);
    for seg in &seq.segments {
        match &seg.segment {
            Some(u64_segment::Segment::Range(r)) => out.extend(r.start..r.end),
            Some(u64_segment::Segment::RangeWithHoles(r)) => {
                let mut holes = Vec::new();
                if let Some(h) = &r.holes {
                    decode_array(h, &mut holes)?;
                }
                holes.sort_unstable();
                out.extend((r.start..r.end).filter(|v| holes.binary_search(v).is_err()));
            }
            Some(u64_segment::Segment::RangeWithBitmap(r)) => {
                for (i, v) in (r.start..r.end).enumerate() {
                    if r.bitmap[i / 8] & (1 << (i % 8)) != 0 {
                        out.push(v);
                    }
                }
            }
            Some(u64_segment::Segment::SortedArray(a)) | Some(u64_segment::Segment::Array(a)) => decode_array(a, &mut out)?,
            None => return Err(Error::corrupt("empty row-id segment")),
        }
    }
    Ok(out)
}

/// Serializes ids as a `RowIdSequence`: contiguous runs of 8 or more become ranges, the ids
/// in between arrays.
pub fn encode_row_ids(ids: &[u64]) -> Vec<u8> {
    fn flush(pending: &mut Vec<u64>, segments: &mut Vec<U64Segment>) {
        if pending.is_empty() {
            return;
        }
        // Offsets from the smallest id in the narrowest width that holds them (as pylance
        // writes arrays): 2 or 4 bytes an id where the ids are within 2^16 or 2^32 of each
        // other, 8 otherwise.
        let base = *pending.iter().min().expect("not empty");
        let span = pending.iter().max().expect("not empty") - base;
        let array = if span <= u16::MAX as u64 {
            let offsets: Vec<u8> = pending.iter().flat_map(|v| ((v - base) as u16).to_le_bytes()).collect();
            encoded_u64_array::Array::U16Array(encoded_u64_array::U16Array { base, offsets: offsets.into() })
        } else if span <= u32::MAX as u64 {
            let offsets: Vec<u8> = pending.iter().flat_map(|v| ((v - base) as u32).to_le_bytes()).collect();
            encoded_u64_array::Array::U32Array(encoded_u64_array::U32Array { base, offsets: offsets.into() })
        } else {
            let values: Vec<u8> = pending.iter().flat_map(|v| v.to_le_bytes()).collect();
            encoded_u64_array::Array::U64Array(encoded_u64_array::U64Array { values: values.into() })
        };
        let array = EncodedU64Array { array: Some(array) };
        let sorted = pending.windows(2).all(|w| w[0] < w[1]);
        segments.push(U64Segment {
            segment: Some(if sorted { u64_segment::Segment::SortedArray(array) } else { u64_segment::Segment::Array(array) }),
        });
        pending.clear();
    }
    let mut segments = Vec::new();
    let mut pending = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i + 1;
        while j < ids.len() && ids[j - 1].checked_add(1) == Some(ids[j]) {
            j += 1;
        }
        // A range's end is exclusive, so a run ending at u64::MAX is stored as values.
        let end = ids[j - 1].checked_add(1);
        if let (Some(end), true) = (end, j - i >= 8 || (i == 0 && j == ids.len())) {
            flush(&mut pending, &mut segments);
            let range = u64_segment::Range { start: ids[i], end };
            segments.push(U64Segment { segment: Some(u64_segment::Segment::Range(range)) });
        } else {
            pending.extend_from_slice(&ids[i..j]);
        }
        i = j;
    }
    flush(&mut pending, &mut segments);
    tablepb::RowIdSequence { segments }.encode_to_vec()
}

/// Expands a serialized `RowDatasetVersionSequence` (the version each row of a fragment was
/// created or last updated in) into one version per row of a fragment of `num_rows` rows.
///
/// Each run repeats its version over as many rows as its span holds; the span's values (row
/// offsets when written, kept as they were through compaction) do not matter to the reader,
/// only their count. The runs must cover exactly `num_rows` rows: that is checked from the
/// spans' sizes before anything is expanded, so a corrupt sequence costs no memory.
pub fn decode_row_versions(data: &[u8], num_rows: u64) -> Result<Vec<u64>> {
    let seq = tablepb::RowDatasetVersionSequence::decode(data)?;
    let mut lens = Vec::with_capacity(seq.runs.len());
    let mut total = 0u64;
    for run in &seq.runs {
        let span = run.span.as_ref().ok_or_else(|| Error::corrupt("row version run without a span"))?;
        let n = segment_len(span)?;
        total = total.checked_add(n).ok_or_else(|| Error::corrupt("row version sequence longer than 2^64 rows"))?;
        lens.push(n);
    }
    if total != num_rows {
        return Err(Error::corrupt(format!("row version sequence covers {total} rows of a fragment of {num_rows}")));
    }
    let mut out = Vec::with_capacity(num_rows as usize);
    for (run, n) in seq.runs.iter().zip(lens) {
        out.extend(std::iter::repeat_n(run.version, n as usize));
    }
    Ok(out)
}

/// Serializes one version per row as a `RowDatasetVersionSequence`: a run per stretch of
/// equal versions, its span the stretch's row offsets as a range (as pylance writes a
/// fragment's sequence; an empty input is an empty sequence).
pub fn encode_row_versions(versions: &[u64]) -> Vec<u8> {
    let mut runs = Vec::new();
    let mut start = 0usize;
    for i in 1..=versions.len() {
        if i == versions.len() || versions[i] != versions[start] {
            let range = u64_segment::Range { start: start as u64, end: i as u64 };
            runs.push(tablepb::RowDatasetVersionRun {
                span: Some(U64Segment { segment: Some(u64_segment::Segment::Range(range)) }),
                version: versions[start],
            });
            start = i;
        }
    }
    tablepb::RowDatasetVersionSequence { runs }.encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pylance_inline_range() {
        assert_eq!(decode_row_ids(&[0x0a, 0x04, 0x0a, 0x02, 0x10, 0x64], 100).unwrap(), (0..100).collect::<Vec<u64>>());
    }

    #[test]
    fn pylance_range_with_bitmap_is_least_significant_bit_first() {
        // A fragment pylance 14 compacted after `delete("a % 3 = 0")`: ids 1..20 without the
        // multiples of 3, as RangeWithBitmap { start: 1, end: 20, bitmap: db b6 05 }.
        let bytes = [0x0a, 0x0b, 0x1a, 0x09, 0x08, 0x01, 0x10, 0x14, 0x1a, 0x03, 0xdb, 0xb6, 0x05];
        let want: Vec<u64> = (1..20).filter(|v| v % 3 != 0).collect();
        assert_eq!(want.len(), 13);
        assert_eq!(decode_row_ids(&bytes, 13).unwrap(), want);
        assert!(decode_row_ids(&bytes, 14).is_err());
    }

    #[test]
    fn round_trip() {
        for ids in [
            vec![],
            vec![5u64],
            (0..100).collect(),
            vec![1, 5, 9, 2],
            (0..20).chain([40, 41, 77]).chain(100..130).collect::<Vec<u64>>(),
            // (found by fuzzing: runs ending at, or wrapping past, u64::MAX)
            (u64::MAX - 9..=u64::MAX).collect(),
            vec![u64::MAX - 1, u64::MAX, 0, 1, 2, 3, 4, 5, 6, 7, 8],
        ] {
            assert_eq!(decode_row_ids(&encode_row_ids(&ids), ids.len() as u64).unwrap(), ids);
        }
    }

    #[test]
    fn pylance_row_versions() {
        // Written by pylance 14: one run of rows 0..6 at version 1.
        assert_eq!(decode_row_versions(&[0x0a, 0x08, 0x0a, 0x04, 0x0a, 0x02, 0x10, 0x06, 0x10, 0x01], 6).unwrap(), vec![1; 6]);
        // After its compaction: runs keep their old spans (a bitmap of rows 0, 3 and 5).
        let compacted = [
            0x0a, 0x0b, 0x0a, 0x07, 0x1a, 0x05, 0x10, 0x06, 0x1a, 0x01, 0x29, 0x10, 0x01, 0x0a, 0x0a, 0x0a, 0x06, 0x0a, 0x04,
            0x08, 0x01, 0x10, 0x02, 0x10, 0x02,
        ];
        assert_eq!(decode_row_versions(&compacted, 4).unwrap(), vec![1, 1, 1, 2]);
        assert!(decode_row_versions(&compacted, 5).is_err());
        assert!(decode_row_versions(&[0x0a, 0x02, 0x10, 0x01], 0).is_err()); // (a run without a span)
                                                                             // A span claiming 2^32 rows for a fragment of 3 is refused before anything is expanded.
        let huge = tablepb::RowDatasetVersionSequence {
            runs: vec![tablepb::RowDatasetVersionRun {
                span: Some(U64Segment {
                    segment: Some(u64_segment::Segment::Range(u64_segment::Range { start: 0, end: 1 << 32 })),
                }),
                version: 7,
            }],
        };
        assert!(decode_row_versions(&huge.encode_to_vec(), 3).is_err());
    }

    #[test]
    fn arrays_take_the_narrowest_width() {
        let narrow = [7u64, 3, 9, 1 << 10, 5];
        let seq = tablepb::RowIdSequence::decode(encode_row_ids(&narrow).as_slice()).unwrap();
        let Some(u64_segment::Segment::Array(a)) = &seq.segments[0].segment else { panic!("an array") };
        assert!(matches!(&a.array, Some(encoded_u64_array::Array::U16Array(x)) if x.base == 3 && x.offsets.len() == 10));
        for ids in [narrow.to_vec(), vec![5, 1 << 20, 2], vec![9, u64::MAX - 3, 0, 1 << 40], vec![u64::MAX, u64::MAX - 70_000]] {
            assert_eq!(decode_row_ids(&encode_row_ids(&ids), ids.len() as u64).unwrap(), ids);
        }
        // An array whose base plus an offset overflows is corrupt, not a wrapped id.
        let hostile = tablepb::RowIdSequence {
            segments: vec![U64Segment {
                segment: Some(u64_segment::Segment::Array(EncodedU64Array {
                    array: Some(encoded_u64_array::Array::U16Array(encoded_u64_array::U16Array {
                        base: u64::MAX - 1,
                        offsets: vec![5, 0].into(),
                    })),
                })),
            }],
        };
        assert!(decode_row_ids(&hostile.encode_to_vec(), 1).is_err());
    }

    #[test]
    fn row_versions_round_trip() {
        for v in [vec![], vec![3u64], vec![1, 1, 1, 2, 2, 5, 1], vec![9; 1000]] {
            assert_eq!(decode_row_versions(&encode_row_versions(&v), v.len() as u64).unwrap(), v);
        }
        assert_eq!(encode_row_versions(&[1; 6]), vec![0x0a, 0x08, 0x0a, 0x04, 0x0a, 0x02, 0x10, 0x06, 0x10, 0x01]);
    }
}
