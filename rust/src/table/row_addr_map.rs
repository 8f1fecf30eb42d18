//! Row-address sets in lance's `RowAddrTreeMap` serialization, the form a BITMAP or
//! LABEL_LIST scalar index stores each key's rows in.
//!
//! ```text
//! u32  number of fragments
//! per fragment, ascending:
//!   u32 fragment id
//!   u32 byte length of its bitmap (0 = every row of the fragment)
//!   the 32-bit portable roaring bitmap of its row offsets (as the `roaring` crate writes it)
//! ```
//!
//! All integers little-endian. A row address is `fragment id << 32 | row offset`.

use roaring::RoaringBitmap;

use crate::error::{Error, Result};

/// The serialization of the set of the sorted, distinct row `addresses`.
pub fn serialize(addresses: &[u64]) -> Vec<u8> {
    let mut groups: Vec<(u32, RoaringBitmap)> = Vec::new();
    for &a in addresses {
        let (frag, offset) = ((a >> 32) as u32, a as u32);
        match groups.last_mut() {
            Some((f, bm)) if *f == frag => {
                bm.insert(offset);
            }
            _ => {
                let mut bm = RoaringBitmap::new();
                bm.insert(offset);
                groups.push((frag, bm));
            }
        }
    }
    let mut out = Vec::new();
    out.extend_from_slice(&(groups.len() as u32).to_le_bytes());
    for (frag, bm) in &groups {
        out.extend_from_slice(&frag.to_le_bytes());
        out.extend_from_slice(&(bm.serialized_size() as u32).to_le_bytes());
        bm.serialize_into(&mut out).expect("writing to a Vec cannot fail");
    }
    out
}

/// A deserialized set: its row addresses (ascending) and the fragments it holds whole.
pub struct Decoded {
    /// The row addresses of the partly held fragments, ascending.
    pub addresses: Vec<u64>,
    /// Fragments held whole (serialized with a zero-length bitmap).
    pub full_fragments: Vec<u32>,
}

fn read_u32(data: &[u8], pos: &mut usize) -> Result<u32> {
    let bytes = data.get(*pos..*pos + 4).ok_or_else(|| Error::corrupt(format!("row address map: truncated at byte {}", *pos)))?;
    *pos += 4;
    Ok(u32::from_le_bytes(bytes.try_into().expect("four bytes")))
}

/// Reads one serialized set.
pub fn deserialize(data: &[u8]) -> Result<Decoded> {
    let mut pos = 0usize;
    let n = read_u32(data, &mut pos)?;
    let mut out = Decoded { addresses: Vec::new(), full_fragments: Vec::new() };
    for _ in 0..n {
        let frag = read_u32(data, &mut pos)?;
        let size = read_u32(data, &mut pos)? as usize;
        if size == 0 {
            out.full_fragments.push(frag);
            continue;
        }
        let bytes = data
            .get(pos..pos + size)
            .ok_or_else(|| Error::corrupt(format!("row address map: fragment {frag}'s bitmap is truncated")))?;
        pos += size;
        let bm = RoaringBitmap::deserialize_from(bytes)
            .map_err(|e| Error::corrupt(format!("row address map: fragment {frag}: not a roaring bitmap: {e}")))?;
        let high = u64::from(frag) << 32;
        out.addresses.extend(bm.iter().map(|o| high | u64::from(o)));
    }
    if pos != data.len() {
        return Err(Error::corrupt(format!("row address map: {} trailing bytes", data.len() - pos)));
    }
    Ok(out)
}

/// One fragment's part of a serialized set: its id and its bitmap's bytes (`None`: the
/// fragment held whole).
type Part<'a> = (u32, Option<&'a [u8]>);

/// The fragments' parts of one serialized set, as they are (not decoded).
fn parts(data: &[u8]) -> Result<Vec<Part<'_>>> {
    let mut pos = 0usize;
    let n = read_u32(data, &mut pos)? as usize;
    // (each part takes 8 bytes at least: a count the data cannot hold is corrupt, not allocated)
    if n > (data.len() - pos) / 8 {
        return Err(Error::corrupt(format!("row address map: {n} fragments in {} bytes", data.len())));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let frag = read_u32(data, &mut pos)?;
        let size = read_u32(data, &mut pos)? as usize;
        if size == 0 {
            out.push((frag, None));
            continue;
        }
        let bytes = data
            .get(pos..pos + size)
            .ok_or_else(|| Error::corrupt(format!("row address map: fragment {frag}'s bitmap is truncated")))?;
        pos += size;
        out.push((frag, Some(bytes)));
    }
    if pos != data.len() {
        return Err(Error::corrupt(format!("row address map: {} trailing bytes", data.len() - pos)));
    }
    Ok(out)
}

/// The serialized union of the serialized sets `sets`, without the fragments not in `live`
/// (ascending; `None`: every fragment). A fragment that only one set holds keeps its bitmap's
/// bytes as they are (nothing decoded: merging segments that cover other fragments is a
/// copy); one that several hold is decoded and its bitmaps joined; a fragment held whole by
/// any set is held whole.
pub fn union(sets: &[&[u8]], live: Option<&[u32]>) -> Result<Vec<u8>> {
    let mut all: Vec<Part<'_>> = Vec::new();
    for data in sets {
        all.extend(parts(data)?.into_iter().filter(|(f, _)| live.is_none_or(|l| l.binary_search(f).is_ok())));
    }
    all.sort_by_key(|(f, _)| *f); // (stable: sets' parts are each ascending already)
    let mut out = Vec::with_capacity(4 + all.iter().map(|(_, b)| 8 + b.map_or(0, <[u8]>::len)).sum::<usize>());
    out.extend_from_slice(&[0u8; 4]);
    let mut count = 0u32;
    let mut i = 0;
    while i < all.len() {
        let frag = all[i].0;
        let j = i + all[i..].iter().take_while(|(f, _)| *f == frag).count();
        let same = &all[i..j];
        out.extend_from_slice(&frag.to_le_bytes());
        if same.iter().any(|(_, b)| b.is_none()) {
            out.extend_from_slice(&0u32.to_le_bytes());
        } else if let [(_, Some(bytes))] = same {
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(bytes);
        } else {
            let mut joined = RoaringBitmap::new();
            for (_, bytes) in same {
                let bytes = bytes.expect("parts held whole were handled above");
                joined |= RoaringBitmap::deserialize_from(bytes)
                    .map_err(|e| Error::corrupt(format!("row address map: fragment {frag}: not a roaring bitmap: {e}")))?;
            }
            out.extend_from_slice(&(joined.serialized_size() as u32).to_le_bytes());
            joined.serialize_into(&mut out).expect("writing to a Vec cannot fail");
        }
        count += 1;
        i = j;
    }
    out[..4].copy_from_slice(&count.to_le_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let cases: Vec<Vec<u64>> = vec![
            vec![],
            vec![5],
            (0..10_000u64).collect(),
            [(0..100u64).collect::<Vec<_>>(), ((3u64 << 32)..(3u64 << 32) + 70_000).step_by(3).collect()].concat(),
        ];
        for addrs in cases {
            let back = deserialize(&serialize(&addrs)).unwrap();
            assert_eq!(back.addresses, addrs);
            assert!(back.full_fragments.is_empty());
        }
    }

    #[test]
    fn full_fragments_and_bad_input() {
        let mut data = 1u32.to_le_bytes().to_vec();
        data.extend_from_slice(&7u32.to_le_bytes());
        data.extend_from_slice(&0u32.to_le_bytes());
        let d = deserialize(&data).unwrap();
        assert_eq!(d.full_fragments, vec![7]);
        assert!(deserialize(&data[..6]).is_err());
        assert!(deserialize(&[1, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 1, 2]).is_err());
    }

    #[test]
    fn union_copies_joins_and_drops_fragments() {
        let a: Vec<u64> = [(0..50u64).collect::<Vec<_>>(), ((2u64 << 32)..(2u64 << 32) + 9).collect()].concat();
        let b: Vec<u64> =
            [((2u64 << 32) + 5..(2u64 << 32) + 20).collect::<Vec<_>>(), ((7u64 << 32)..(7u64 << 32) + 3).collect()].concat();
        let (sa, sb) = (serialize(&a), serialize(&b));
        let mut want: Vec<u64> = a.iter().chain(b.iter()).copied().collect();
        want.sort_unstable();
        want.dedup();
        assert_eq!(union(&[&sa, &sb], None).unwrap(), serialize(&want));
        let live: Vec<u64> = want.iter().copied().filter(|x| x >> 32 != 2).collect();
        assert_eq!(union(&[&sa, &sb], Some(&[0, 7])).unwrap(), serialize(&live));
        assert_eq!(union(&[&sa], None).unwrap(), sa);
        assert_eq!(union(&[], None).unwrap(), serialize(&[]));
        // a fragment held whole stays whole
        let mut whole = 1u32.to_le_bytes().to_vec();
        whole.extend_from_slice(&2u32.to_le_bytes());
        whole.extend_from_slice(&0u32.to_le_bytes());
        let d = deserialize(&union(&[&sa, &whole], None).unwrap()).unwrap();
        assert_eq!(d.full_fragments, vec![2]);
        assert_eq!(d.addresses, (0..50u64).collect::<Vec<_>>());
        // hostile counts and truncations are errors, not allocations or panics
        assert!(union(&[&[255, 255, 255, 255]], None).is_err());
        assert!(union(&[&sa[..sa.len() - 1]], None).is_err());
    }
}
