//! Page layouts and the structure of columns.
//!
//! * 2.1 / 2.2 layouts: [`miniblock`], [`fullzip`], [`constant`], [`blob`], each read
//!   through the [`layout::PageLayout`] trait (metadata buffers → state → plan byte ranges
//!   → decode, no I/O) into levels + values;
//! * [`repdef`]: repetition/definition levels and layers;
//! * [`builder`]: turns decoded values and levels into Arrow arrays;
//! * [`v2_0`]: the 2.0 `ArrayEncoding` trees; [`v2_0_nested`]: 2.0 struct and list columns;
//! * [`strategy`]: choosing a 2.1+ page's layout and encodings (the 2.0 encoder is in
//!   [`v2_0`]); [`page`]: what both encoders share.
//!
//! This layer sits below [`crate::file`] and never uses it (a test checks the sources).

pub mod assemble;
pub mod blob;
pub mod builder;
pub mod constant;
pub mod fullzip;
pub mod layout;
pub mod miniblock;
pub mod page;
pub mod repdef;
pub mod shred;
pub mod strategy;
pub mod v2_0;
pub mod v2_0_nested;

use crate::encodings::hash::FastHashMap;
use std::sync::Arc;

use arrow_array::{make_array, Array, ArrayRef};
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;

use crate::error::{Error, Result};

pub use crate::schema::LeafKind;

/// Dictionary-encodes `plain` with keys of type `key` (values keep first-seen order).
pub fn dictionary_encode(plain: &ArrayRef, key: &DataType) -> Result<ArrayRef> {
    let data = plain.to_data();
    let n = plain.len();
    // Each value as a byte range of one backing buffer.
    let off = data.offset();
    let (bytes, ranges): (&[u8], Vec<(usize, usize)>) = match plain.data_type() {
        DataType::Utf8 | DataType::Binary => {
            let o = &data.buffers()[0].typed_data::<i32>()[off..off + n + 1];
            (data.buffers()[1].as_slice(), o.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect())
        }
        DataType::LargeUtf8 | DataType::LargeBinary => {
            let o = &data.buffers()[0].typed_data::<i64>()[off..off + n + 1];
            (data.buffers()[1].as_slice(), o.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect())
        }
        dt => {
            let w = dt.primitive_width().ok_or_else(|| Error::not_supported(format!("dictionaries of {dt}")))?;
            (data.buffers()[0].as_slice(), (0..n).map(|i| ((off + i) * w, (off + i + 1) * w)).collect())
        }
    };
    let value_at = |i: usize| &bytes[ranges[i].0..ranges[i].1];
    let mut map: FastHashMap<&[u8], u64> = FastHashMap::default();
    let mut firsts: Vec<u32> = Vec::new();
    let mut keys: Vec<u64> = Vec::with_capacity(n);
    for i in 0..n {
        if plain.is_null(i) {
            keys.push(0);
            continue;
        }
        let next = map.len() as u64;
        let k = *map.entry(value_at(i)).or_insert_with(|| {
            firsts.push(i as u32);
            next
        });
        keys.push(k);
    }
    let max_key: u64 = match key {
        DataType::Int8 => i8::MAX as u64,
        DataType::Int16 => i16::MAX as u64,
        DataType::Int32 => i32::MAX as u64,
        DataType::Int64 => i64::MAX as u64,
        DataType::UInt8 => u8::MAX as u64,
        DataType::UInt16 => u16::MAX as u64,
        DataType::UInt32 => u32::MAX as u64,
        DataType::UInt64 => u64::MAX,
        other => return Err(Error::not_supported(format!("dictionary keys of type {other}"))),
    };
    if map.len() as u64 > max_key.saturating_add(1) {
        return Err(Error::invalid_input(format!("{} distinct values do not fit dictionary keys of type {key}", map.len())));
    }
    let width = key.primitive_width().unwrap();
    let mut kb = MutableBuffer::new(n * width);
    for k in keys {
        kb.extend_from_slice(&k.to_le_bytes()[..width]);
    }
    let idx = arrow_array::UInt32Array::from(firsts);
    let values = arrow_select::take::take(plain.as_ref(), &idx, None)?;
    let values = arrow_array::make_array(values.to_data().into_builder().nulls(None).build()?);
    let out = ArrayDataBuilder::new(DataType::Dictionary(Box::new(key.clone()), Box::new(plain.data_type().clone())))
        .len(n)
        .add_buffer(Buffer::from(kb))
        .add_child_data(values.to_data())
        .nulls(plain.nulls().cloned())
        .build()?;
    Ok(make_array(out))
}

/// Shared, immutable page buffers.
pub type PageBuffers = Arc<Vec<Buffer>>;

#[cfg(test)]
mod layering_tests {
    use std::path::{Path, PathBuf};

    /// The non-test code of `dir`'s `.rs` files (everything before a file's first
    /// `#[cfg(test)]`; a `tests.rs` is a test module, all test code), without comment lines,
    /// as `(path, line number, line)`.
    fn code_lines(dir: &Path) -> Vec<(PathBuf, usize, String)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).expect("read source dir") {
                let path = entry.expect("dir entry").path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") && path.file_name().is_some_and(|n| n != "tests.rs") {
                    let text = std::fs::read_to_string(&path).expect("read source");
                    for (i, line) in text.lines().enumerate() {
                        if line.trim_start().starts_with("#[cfg(test)]") {
                            break;
                        }
                        if !line.trim_start().starts_with("//") {
                            out.push((path.clone(), i + 1, line.to_string()));
                        }
                    }
                }
            }
        }
        assert!(!out.is_empty(), "no sources found under {}", dir.display());
        out
    }

    /// Page layouts and encoders sit below the file container: nothing under `structural/`
    /// (nor the schema module it builds on) may reach up into `crate::file` or `crate::table`.
    #[test]
    fn structural_never_uses_the_file_layer() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("rust/src");
        let mut lines = code_lines(&src.join("structural"));
        let schema = src.join("schema.rs");
        let text = std::fs::read_to_string(&schema).expect("read schema.rs");
        lines.extend(
            text.lines()
                .enumerate()
                .take_while(|(_, l)| !l.trim_start().starts_with("#[cfg(test)]"))
                .map(|(i, l)| (schema.clone(), i + 1, l.to_string())),
        );
        let bad: Vec<String> = lines
            .iter()
            .filter(|(_, _, l)| ["crate::file", "crate::table", "super::super::file"].iter().any(|p| l.contains(p)))
            .map(|(p, i, l)| format!("{}:{i}: {}", p.display(), l.trim()))
            .collect();
        assert!(bad.is_empty(), "structural code uses upper layers:\n{}", bad.join("\n"));
    }
}
