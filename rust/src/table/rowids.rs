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
    match &a.array {
        Some(encoded_u64_array::Array::U16Array(x)) => {
            if x.offsets.len() % 2 != 0 {
                return Err(Error::corrupt("row-id u16 array has an odd number of bytes"));
            }
            out.extend(x.offsets.chunks_exact(2).map(|c| x.base + u16::from_le_bytes([c[0], c[1]]) as u64));
        }
        Some(encoded_u64_array::Array::U32Array(x)) => {
            if x.offsets.len() % 4 != 0 {
                return Err(Error::corrupt("row-id u32 array length is not a multiple of 4"));
            }
            out.extend(x.offsets.chunks_exact(4).map(|c| x.base + u32::from_le_bytes(c.try_into().expect("4")) as u64));
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

/// Expands a serialized `RowIdSequence` into one id per row.
pub fn decode_row_ids(data: &[u8]) -> Result<Vec<u64>> {
    let seq = tablepb::RowIdSequence::decode(data)?;
    let mut out = Vec::new();
    for seg in &seq.segments {
        match &seg.segment {
            Some(u64_segment::Segment::Range(r)) => {
                check_range(r.start, r.end)?;
                out.extend(r.start..r.end);
            }
            Some(u64_segment::Segment::RangeWithHoles(r)) => {
                check_range(r.start, r.end)?;
                let mut holes = Vec::new();
                if let Some(h) = &r.holes {
                    decode_array(h, &mut holes)?;
                }
                holes.sort_unstable();
                out.extend((r.start..r.end).filter(|v| holes.binary_search(v).is_err()));
            }
            Some(u64_segment::Segment::RangeWithBitmap(r)) => {
                check_range(r.start, r.end)?;
                for (i, v) in (r.start..r.end).enumerate() {
                    let byte = r.bitmap.get(i / 8).ok_or_else(|| Error::corrupt("row-id bitmap is too short"))?;
                    if byte & (0x80 >> (i % 8)) != 0 {
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
        let values: Vec<u8> = pending.iter().flat_map(|v| v.to_le_bytes()).collect();
        let array = EncodedU64Array {
            array: Some(encoded_u64_array::Array::U64Array(encoded_u64_array::U64Array { values: values.into() })),
        };
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
        while j < ids.len() && ids[j] == ids[j - 1].wrapping_add(1) {
            j += 1;
        }
        if j - i >= 8 || (i == 0 && j == ids.len()) {
            flush(&mut pending, &mut segments);
            let range = u64_segment::Range { start: ids[i], end: ids[j - 1] + 1 };
            segments.push(U64Segment { segment: Some(u64_segment::Segment::Range(range)) });
        } else {
            pending.extend_from_slice(&ids[i..j]);
        }
        i = j;
    }
    flush(&mut pending, &mut segments);
    tablepb::RowIdSequence { segments }.encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pylance_inline_range() {
        assert_eq!(decode_row_ids(&[0x0a, 0x04, 0x0a, 0x02, 0x10, 0x64]).unwrap(), (0..100).collect::<Vec<u64>>());
    }

    #[test]
    fn round_trip() {
        for ids in [
            vec![],
            vec![5u64],
            (0..100).collect(),
            vec![1, 5, 9, 2],
            (0..20).chain([40, 41, 77]).chain(100..130).collect::<Vec<u64>>(),
        ] {
            assert_eq!(decode_row_ids(&encode_row_ids(&ids)).unwrap(), ids);
        }
    }
}
