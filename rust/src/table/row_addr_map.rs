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
}
