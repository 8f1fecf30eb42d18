//! What both page encoders (2.0 in [`super::v2_0`], 2.1+ in [`super::strategy`]) share: the
//! encoded page handed to the file writer, and an Arrow array's values as a [`DataBlock`].

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::{Buffer, MutableBuffer, NullBuffer};
use arrow_data::ArrayData;

use crate::encodings::{DataBlock, FixedSizeListBlock, FixedWidthBlock, VariableWidthBlock};
use crate::error::{Error, Result};
use crate::schema::LeafKind;

/// An encoded page ready to be written.
pub struct EncodedPage {
    /// The page buffers.
    pub buffers: Vec<Buffer>,
    /// `Any.type_url` of the encoding message.
    pub type_url: String,
    /// The serialized encoding message.
    pub encoding: Vec<u8>,
    /// Rows in the page.
    pub num_rows: u64,
}

/// The rows of a packed struct with variable-width children: per row, each child's bytes
/// in order (a variable child as a little-endian length, then its bytes); a null row is
/// empty.
fn packed_rows(
    st: &arrow_array::StructArray,
    fields: &[crate::encodings::PackedField],
    nulls: Option<&NullBuffer>,
) -> Result<DataBlock> {
    use crate::encodings::PackedField;
    let n = st.len();
    let mut data: Vec<u8> = Vec::new();
    let mut offsets: Vec<u64> = Vec::with_capacity(n + 1);
    offsets.push(0);
    let columns: Vec<ArrayData> = st.columns().iter().map(|c| c.to_data()).collect();
    for c in st.columns() {
        if let Some(cn) = c.logical_nulls() {
            if (0..n).any(|r| cn.is_null(r) && nulls.is_none_or(|nb| nb.is_valid(r))) {
                return Err(Error::invalid_input(
                    "a packed struct (lance-encoding:packed) cannot hold null children; only the struct itself may be null",
                ));
            }
        }
    }
    for r in 0..n {
        if nulls.is_none_or(|nb| nb.is_valid(r)) {
            for (d, f) in columns.iter().zip(fields) {
                match f {
                    PackedField::Fixed { bits } => {
                        let w = (*bits / 8) as usize;
                        let at = (d.offset() + r) * w;
                        data.extend_from_slice(&d.buffers()[0].as_slice()[at..at + w]);
                    }
                    PackedField::Variable { length_bits } => {
                        let (s, e) = if *length_bits == 64 {
                            let o: &[i64] = d.buffer::<i64>(0);
                            (o[d.offset() + r] as usize, o[d.offset() + r + 1] as usize)
                        } else {
                            let o: &[i32] = d.buffer::<i32>(0);
                            (o[d.offset() + r] as usize, o[d.offset() + r + 1] as usize)
                        };
                        let len = (e - s) as u64;
                        data.extend_from_slice(&len.to_le_bytes()[..(*length_bits / 8) as usize]);
                        data.extend_from_slice(&d.buffers()[1].as_slice()[s..e]);
                    }
                }
            }
        }
        offsets.push(data.len() as u64);
    }
    let block = if data.len() <= u32::MAX as usize {
        VariableWidthBlock::from_u32(offsets.into_iter().map(|o| o as u32).collect(), data)
    } else {
        VariableWidthBlock::from_u64(offsets, data)
    };
    Ok(DataBlock::Variable(block))
}

/// The values of `array` as a block, with null slots zeroed (fixed width) or emptied
/// (variable width).
pub fn block_from_array(array: &ArrayRef, kind: &LeafKind, nulls: Option<&NullBuffer>) -> Result<DataBlock> {
    let n = array.len();
    let data = array.to_data();
    let nulls = nulls.filter(|nb| nb.null_count() > 0);
    Ok(match kind {
        LeafKind::Null => DataBlock::Empty { num_values: n as u64 },
        LeafKind::Bool => {
            let b = array.as_boolean();
            let mut values = b.values().clone();
            if let Some(nb) = nulls {
                values = &values & nb.inner();
            }
            DataBlock::Fixed(FixedWidthBlock { data: values.sliced(), bits_per_value: 1, num_values: n as u64 })
        }
        LeafKind::VarPacked { fields } => packed_rows(array.as_struct(), fields, nulls)?,
        LeafKind::Packed { widths } => {
            let st = array.as_struct();
            let total: usize = widths.iter().sum();
            let mut rows = vec![0u8; n * total];
            let mut at = 0usize;
            for (c, &w) in st.columns().iter().zip(widths) {
                let child_nulls = c.logical_nulls();
                let bad =
                    child_nulls.as_ref().is_some_and(|cn| (0..n).any(|r| cn.is_null(r) && nulls.is_none_or(|nb| nb.is_valid(r))));
                if bad {
                    return Err(Error::invalid_input(
                        "a packed struct (lance-encoding:packed) cannot hold null children; only the struct itself may be null",
                    ));
                }
                let d = c.to_data();
                let src = &d.buffers()[0].as_slice()[d.offset() * w..(d.offset() + n) * w];
                for r in 0..n {
                    if nulls.is_none_or(|nb| nb.is_valid(r)) {
                        rows[r * total + at..r * total + at + w].copy_from_slice(&src[r * w..(r + 1) * w]);
                    }
                }
                at += w;
            }
            DataBlock::Fixed(FixedWidthBlock {
                data: Buffer::from_vec(rows),
                bits_per_value: total as u64 * 8,
                num_values: n as u64,
            })
        }
        LeafKind::Fixed { bytes } => {
            let w = *bytes;
            let raw = data.buffers()[0].slice_with_length(data.offset() * w, n * w);
            let raw = match nulls {
                Some(nb) => {
                    let mut m = MutableBuffer::from(raw.as_slice().to_vec());
                    let s = m.as_slice_mut();
                    for i in 0..n {
                        if nb.is_null(i) {
                            s[i * w..(i + 1) * w].fill(0);
                        }
                    }
                    m.into()
                }
                None => raw,
            };
            DataBlock::Fixed(FixedWidthBlock { data: raw, bits_per_value: w as u64 * 8, num_values: n as u64 })
        }
        LeafKind::Variable { large } => {
            let (offsets, bits) = if *large {
                (data.buffers()[0].slice_with_length(data.offset() * 8, (n + 1) * 8), 64u8)
            } else {
                (data.buffers()[0].slice_with_length(data.offset() * 4, (n + 1) * 4), 32u8)
            };
            let block =
                VariableWidthBlock { offsets, data: data.buffers()[1].clone(), bits_per_offset: bits, num_values: n as u64 };
            match nulls {
                Some(nb) if (0..n).any(|i| nb.is_null(i) && block.offset(i + 1) != block.offset(i)) => {
                    // Null slots with bytes: rebuild without them.
                    let mut offs: Vec<u64> = Vec::with_capacity(n + 1);
                    let mut bytes = Vec::new();
                    offs.push(0);
                    for i in 0..n {
                        if nb.is_valid(i) {
                            bytes.extend_from_slice(block.value(i));
                        }
                        offs.push(bytes.len() as u64);
                    }
                    if *large {
                        DataBlock::Variable(VariableWidthBlock::from_u64(offs, bytes))
                    } else {
                        DataBlock::Variable(VariableWidthBlock::from_u32(offs.iter().map(|&o| o as u32).collect(), bytes))
                    }
                }
                _ => DataBlock::Variable(block),
            }
        }
        LeafKind::Fsl { dim, item } => {
            let fsl = array.as_fixed_size_list();
            let child = fsl.values().slice(fsl.offset() * dim, n * dim);
            // Items of null lists are zeroed so they compress well and never leak.
            let child_nulls = child.logical_nulls();
            let mut child_block = block_from_array(&child, item, None)?;
            if let (Some(nb), DataBlock::Fixed(f)) = (nulls, &mut child_block) {
                if f.bits_per_value % 8 == 0 {
                    let w = (f.bits_per_value / 8) as usize;
                    let mut m = MutableBuffer::from(f.data.as_slice().to_vec());
                    let s = m.as_slice_mut();
                    for i in 0..n {
                        if nb.is_null(i) {
                            s[i * dim * w..(i + 1) * dim * w].fill(0);
                        }
                    }
                    f.data = m.into();
                }
            }
            let item_validity = child_nulls.filter(|c| c.null_count() > 0).map(|c| c.inner().sliced());
            DataBlock::FixedSizeList(FixedSizeListBlock { child: Box::new(child_block), dimension: *dim as u64, item_validity })
        }
    })
}
