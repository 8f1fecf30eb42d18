//! Writing 2.0 pages (the shapes pylance 14 writes).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, ArrayRef};
use arrow_buffer::{Buffer, NullBuffer};
use arrow_schema::DataType;
use prost::Message;

use crate::encodings::block::read_uint;
use crate::encodings::{DataBlock, GeneralScheme};
use crate::error::{Error, Result};
use crate::format::enc20;
use crate::format::enc20::array_encoding::ArrayEncoding as Pb;
use crate::format::enc20::nullable::Nullability;
use crate::format::TYPE_URL_ARRAY_ENCODING;
use crate::schema::FieldHints;
use crate::schema::LanceField;
use crate::schema::LeafKind;
use crate::structural::page::EncodedPage;

use super::*;

pub(super) fn wrap(e: Pb) -> enc20::ArrayEncoding {
    enc20::ArrayEncoding { array_encoding: Some(e) }
}

pub(super) fn nullable(n: Nullability) -> enc20::ArrayEncoding {
    wrap(Pb::Nullable(Box::new(enc20::Nullable { nullability: Some(n) })))
}

/// `nullable{no_nulls{values}}`.
pub(crate) fn no_nulls(values: enc20::ArrayEncoding) -> enc20::ArrayEncoding {
    nullable(Nullability::NoNulls(Box::new(enc20::nullable::NoNull { values: Some(Box::new(values)) })))
}

pub(super) fn all_nulls() -> enc20::ArrayEncoding {
    nullable(Nullability::AllNulls(enc20::nullable::AllNull {}))
}

/// The page buffers being collected, in buffer-index order.
#[derive(Default)]
pub(super) struct PageWriter {
    pub(super) buffers: Vec<Buffer>,
}

impl PageWriter {
    fn flat(&mut self, bits: u64, data: Buffer, compression: Option<enc20::Compression>) -> enc20::ArrayEncoding {
        let buffer_index = self.buffers.len() as u32;
        self.buffers.push(data);
        wrap(Pb::Flat(enc20::Flat {
            bits_per_value: bits,
            buffer: Some(enc20::Buffer { buffer_index, buffer_type: enc20::buffer::BufferType::Page as i32 }),
            compression,
        }))
    }

    /// `nullable{…}` around the values written by `values` (validity bitmap first).
    fn nullable(
        &mut self,
        nulls: Option<&NullBuffer>,
        len: usize,
        values: impl FnOnce(&mut Self) -> Result<enc20::ArrayEncoding>,
    ) -> Result<enc20::ArrayEncoding> {
        if len == 0 {
            // pylance's writer: a page of no values has "all" of them null.
            return Ok(all_nulls());
        }
        match nulls.filter(|n| n.null_count() > 0) {
            Some(n) if n.null_count() == len => Ok(all_nulls()),
            Some(n) => {
                let validity = self.flat(1, n.inner().sliced(), None);
                let values = values(self)?;
                Ok(nullable(Nullability::SomeNulls(Box::new(enc20::nullable::SomeNull {
                    validity: Some(Box::new(validity)),
                    values: Some(Box::new(values)),
                }))))
            }
            None => Ok(no_nulls(values(self)?)),
        }
    }
}

/// Raw little-endian bytes of a fixed-width array's values (offset applied), and their
/// width in bits.
fn fixed_values(array: &ArrayRef) -> Result<(Buffer, u64)> {
    let dt = array.data_type();
    if let DataType::Boolean = dt {
        return Ok((array.as_boolean().values().sliced(), 1));
    }
    let width = match dt {
        DataType::FixedSizeBinary(w) => *w as usize,
        dt => dt.primitive_width().ok_or_else(|| Error::not_supported(format!("writing {dt} to a 2.0 file")))?,
    };
    let data = array.to_data();
    let buf = data.buffers()[0].slice_with_length(data.offset() * width, array.len() * width);
    Ok((buf, width as u64 * 8))
}

/// Per-value byte ranges of a string/binary array (offset applied).
fn value_ranges(array: &ArrayRef) -> Result<(Buffer, Vec<(usize, usize)>)> {
    let n = array.len();
    let data = array.to_data();
    let off = data.offset();
    let ranges = match array.data_type() {
        DataType::Utf8 | DataType::Binary => {
            let o = &data.buffers()[0].typed_data::<i32>()[off..off + n + 1];
            o.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect()
        }
        DataType::LargeUtf8 | DataType::LargeBinary => {
            let o = &data.buffers()[0].typed_data::<i64>()[off..off + n + 1];
            o.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect()
        }
        dt => return Err(Error::internal(format!("{dt} is not a string or binary type"))),
    };
    Ok((data.buffers()[1].clone(), ranges))
}

fn compression_pb(scheme: GeneralScheme) -> enc20::Compression {
    match scheme {
        GeneralScheme::Zstd(level) => enc20::Compression { scheme: "zstd".into(), level: Some(level) },
        GeneralScheme::Lz4 => enc20::Compression { scheme: "lz4".into(), level: None },
    }
}

impl PageWriter {
    /// `binary{indices: nullable{no_nulls{flat(64)}}, bytes: flat(8), null_adjustment}`; the
    /// bytes of null values are left out.
    pub(super) fn binary(&mut self, array: &ArrayRef, compression: Option<GeneralScheme>) -> Result<enc20::ArrayEncoding> {
        let (data, ranges) = value_ranges(array)?;
        let nulls = array.logical_nulls().filter(|n| n.null_count() > 0);
        let n = array.len();
        let mut ends: Vec<u64> = Vec::with_capacity(n);
        let bytes: Buffer = match &nulls {
            None if n > 0 => {
                let base = ranges[0].0;
                ends.extend(ranges.iter().map(|r| (r.1 - base) as u64));
                data.slice_with_length(base, ranges[n - 1].1 - base)
            }
            _ => {
                let mut out = Vec::new();
                for (i, r) in ranges.iter().enumerate() {
                    if nulls.as_ref().is_none_or(|nb| nb.is_valid(i)) {
                        out.extend_from_slice(&data.as_slice()[r.0..r.1]);
                    }
                    ends.push(out.len() as u64);
                }
                Buffer::from_vec(out)
            }
        };
        let total = ends.last().copied().unwrap_or(0);
        // pylance writes 0 for a page without values.
        let null_adjustment = if n == 0 { 0 } else { total + 1 };
        if let Some(nb) = &nulls {
            for (i, e) in ends.iter_mut().enumerate() {
                if nb.is_null(i) {
                    *e += null_adjustment;
                }
            }
        }
        let indices = self.flat(64, Buffer::from_vec(ends), None);
        let (bytes, compression) = match compression {
            Some(scheme) => {
                let mut out = Vec::new();
                scheme.compress_into(bytes.as_slice(), &mut out)?;
                (Buffer::from_vec(out), Some(compression_pb(scheme)))
            }
            None => (bytes, None),
        };
        let bytes = self.flat(8, bytes, compression);
        Ok(wrap(Pb::Binary(Box::new(enc20::Binary {
            indices: Some(Box::new(no_nulls(indices))),
            bytes: Some(Box::new(bytes)),
            null_adjustment,
        }))))
    }

    /// The writer's own dictionary for a low-cardinality utf8 page: 1-based u8 indices
    /// (0 = null) and the distinct values in first-seen order.
    fn auto_dictionary(&mut self, array: &ArrayRef) -> Result<Option<enc20::ArrayEncoding>> {
        if array.data_type() != &DataType::Utf8 || array.len() < AUTO_DICTIONARY_THRESHOLD {
            return Ok(None);
        }
        let strings = array.as_string::<i32>();
        let mut seen: std::collections::HashMap<&str, u8> = std::collections::HashMap::new();
        let mut items: Vec<&str> = Vec::new();
        let mut indices = Vec::with_capacity(array.len());
        for v in strings.iter() {
            match v {
                None => indices.push(0u8),
                Some(s) => {
                    let next = items.len() + 1;
                    if next >= AUTO_DICTIONARY_THRESHOLD && !seen.contains_key(s) {
                        return Ok(None);
                    }
                    let k = *seen.entry(s).or_insert_with(|| {
                        items.push(s);
                        next as u8
                    });
                    indices.push(k);
                }
            }
        }
        let items: ArrayRef = if items.is_empty() {
            // pylance stores one null item when there are no values.
            new_null_array(&DataType::Utf8, 1)
        } else {
            Arc::new(arrow_array::StringArray::from(items))
        };
        let num_items = items.len() as u32;
        let indices = self.flat(8, Buffer::from_vec(indices), None);
        let items = self.binary(&items, None)?;
        Ok(Some(wrap(Pb::Dictionary(Box::new(enc20::Dictionary {
            indices: Some(Box::new(no_nulls(indices))),
            items: Some(Box::new(items)),
            num_dictionary_items: num_items,
        })))))
    }

    /// An Arrow dictionary array: its keys (0-based, null keys pointing at an extra null
    /// item) and its values.
    fn dictionary(&mut self, array: &ArrayRef, key: &DataType) -> Result<enc20::ArrayEncoding> {
        let dict = array.as_any_dictionary();
        let keys = dict.keys();
        let values = dict.values().clone();
        let width = key.primitive_width().ok_or_else(|| Error::not_supported(format!("dictionary keys of type {key}")))?;
        let signed = matches!(key, DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64);
        let max_key: u64 = if signed { (1u64 << (width * 8 - 1)) - 1 } else { u64::MAX >> (64 - width * 8) };
        let has_null_keys = keys.null_count() > 0;
        let null_item = values.len() as u64;
        if has_null_keys && null_item > max_key {
            return Err(Error::invalid_input(format!(
                "a dictionary column with {null_item} values and null keys needs one more entry than {key} keys can address \
                 in file version 2.0; use wider keys"
            )));
        }
        let data = keys.to_data();
        let raw = &data.buffers()[0].as_slice()[data.offset() * width..(data.offset() + data.len()) * width];
        let mut out = Vec::with_capacity(raw.len());
        for (i, c) in raw.chunks_exact(width).enumerate() {
            if keys.is_null(i) {
                out.extend_from_slice(&null_item.to_le_bytes()[..width]);
                continue;
            }
            let k = read_uint(c, 0, width);
            if (signed && c[width - 1] & 0x80 != 0) || k >= null_item {
                return Err(Error::invalid_input(format!("dictionary key at row {i} is out of range for {null_item} values")));
            }
            out.extend_from_slice(c);
        }
        // Null keys point at an extra null item; pylance also stores one when there are no
        // items at all (an empty page).
        let items = if has_null_keys || values.is_empty() {
            let null = new_null_array(values.data_type(), 1);
            arrow_select::concat::concat(&[values.as_ref(), null.as_ref()])?
        } else {
            values
        };
        let num_items = u32::try_from(items.len())
            .map_err(|_| Error::invalid_input(format!("a dictionary of {} values is too large", items.len())))?;
        let indices = self.flat(width as u64 * 8, Buffer::from_vec(out), None);
        let items = self.array(&items, None, false)?;
        Ok(wrap(Pb::Dictionary(Box::new(enc20::Dictionary {
            indices: Some(Box::new(no_nulls(indices))),
            items: Some(Box::new(items)),
            num_dictionary_items: num_items,
        }))))
    }

    /// Encodes `array`; `compression` applies to string bytes, `auto_dictionary` allows the
    /// writer's own dictionary for low-cardinality utf8.
    fn array(
        &mut self,
        array: &ArrayRef,
        compression: Option<GeneralScheme>,
        auto_dictionary: bool,
    ) -> Result<enc20::ArrayEncoding> {
        let len = array.len();
        match array.data_type() {
            DataType::Null => Ok(all_nulls()),
            DataType::Dictionary(key, _) => self.dictionary(array, key),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
                if auto_dictionary && compression.is_none() {
                    if let Some(enc) = self.auto_dictionary(array)? {
                        return Ok(enc);
                    }
                }
                self.binary(array, compression)
            }
            DataType::FixedSizeList(item, dim) => {
                let fsl = array.as_fixed_size_list();
                let dim = *dim as usize;
                if dim == 0 {
                    return Err(Error::not_supported("fixed-size lists of dimension 0"));
                }
                let child = fsl.values().slice(fsl.value_offset_at(0), len * dim);
                if !(item.data_type().is_primitive()
                    || matches!(item.data_type(), DataType::Boolean | DataType::FixedSizeBinary(_)))
                {
                    return Err(Error::not_supported(format!("writing fixed-size lists of {} to a 2.0 file", item.data_type())));
                }
                let nulls = array.logical_nulls();
                self.nullable(nulls.as_ref(), len, |w| {
                    let child_nulls = child.logical_nulls();
                    let items = w.nullable(child_nulls.as_ref(), child.len(), |w| {
                        let (data, bits) = fixed_values(&child)?;
                        Ok(w.flat(bits, data, None))
                    })?;
                    Ok(wrap(Pb::FixedSizeList(Box::new(enc20::FixedSizeList {
                        dimension: dim as u32,
                        items: Some(Box::new(items)),
                        has_validity: false,
                    }))))
                })
            }
            dt if dt.is_primitive() || matches!(dt, DataType::Boolean | DataType::FixedSizeBinary(_)) => {
                let nulls = array.logical_nulls();
                self.nullable(nulls.as_ref(), len, |w| {
                    let (data, bits) = fixed_values(array)?;
                    Ok(w.flat(bits, data, None))
                })
            }
            dt => Err(Error::not_supported(format!("writing {dt} columns to a 2.0 file"))),
        }
    }
}

impl PageWriter {
    /// `packed_struct{inner: [nullable(no_nulls(flat(bits, buf 0))) per child], buf 0}`: the
    /// rows of a struct of fixed-width children, row-major in one buffer.
    fn packed_struct(&mut self, array: &ArrayRef, field: &LanceField) -> Result<enc20::ArrayEncoding> {
        if array.null_count() > 0 {
            return Err(struct_validity_error(&field.name, array.null_count()));
        }
        let kind = LeafKind::of_field(field)?;
        let LeafKind::Packed { widths } = &kind else {
            return Err(Error::invalid_input(format!(
                "packed struct {:?} has variable-width children, which need file version 2.2 or later",
                field.name
            )));
        };
        let rows = match crate::structural::page::block_from_array(array, &kind, None)? {
            DataBlock::Fixed(f) => f.data,
            other => return Err(Error::internal(format!("packed struct rows became {} values", other.kind()))),
        };
        let buffer_index = self.buffers.len() as u32;
        self.buffers.push(rows);
        let buffer = || Some(enc20::Buffer { buffer_index, buffer_type: enc20::buffer::BufferType::Page as i32 });
        let inner = widths
            .iter()
            .map(|w| no_nulls(wrap(Pb::Flat(enc20::Flat { bits_per_value: *w as u64 * 8, buffer: buffer(), compression: None }))))
            .collect();
        Ok(wrap(Pb::PackedStruct(enc20::PackedStruct { inner, buffer: buffer() })))
    }
}

/// The error for a struct with null rows in a 2.0 file (pylance 14 refuses them too, as
/// invalid input: 2.0 has no way to store struct validity).
pub fn struct_validity_error(name: &str, null_count: usize) -> Error {
    Error::invalid_input(format!(
        "struct field {name:?} contains {null_count} null value(s), but Lance file version 2.0 cannot store struct \
         validity; use file version 2.1 or later, or make the struct non-null"
    ))
}

/// Encodes one 2.0 page holding all of `array`, in the tree shapes pylance 14 writes.
/// `lance-encoding:compression = zstd | lz4` compresses the bytes of string/binary pages
/// (pylance applies it to nothing else in 2.0).
pub fn encode_page(array: &ArrayRef, field: &LanceField) -> Result<EncodedPage> {
    let hints = FieldHints::of(field)?;
    let mut w = PageWriter::default();
    let enc = if field.is_packed_struct() {
        w.packed_struct(array, field)?
    } else {
        w.array(array, hints.compression.flatten(), true)?
    };
    Ok(EncodedPage {
        buffers: w.buffers,
        type_url: TYPE_URL_ARRAY_ENCODING.to_string(),
        encoding: enc.encode_to_vec(),
        num_rows: array.len() as u64,
    })
}
