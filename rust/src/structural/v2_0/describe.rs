//! One-line descriptions of `ArrayEncoding` trees.

use crate::format::enc20;
use crate::format::enc20::array_encoding::ArrayEncoding as Pb;
use crate::format::enc20::nullable::Nullability;

pub(super) fn pb_name(e: &Pb) -> &'static str {
    match e {
        Pb::Flat(_) => "flat",
        Pb::Nullable(_) => "nullable",
        Pb::FixedSizeList(_) => "fixed_size_list",
        Pb::List(_) => "list",
        Pb::Struct(_) => "struct",
        Pb::Binary(_) => "binary",
        Pb::Dictionary(_) => "dictionary",
        Pb::Fsst(_) => "fsst",
        Pb::PackedStruct(_) => "packed_struct",
        Pb::Bitpacked(_) => "bitpacked",
        Pb::FixedSizeBinary(_) => "fixed_size_binary",
        Pb::BitpackedForNonNeg(_) => "bitpacked_for_non_neg",
        Pb::Constant(_) => "constant",
        Pb::InlineBitpacking(_) => "inline_bitpacking",
        Pb::OutOfLineBitpacking(_) => "out_of_line_bitpacking",
        Pb::Variable(_) => "variable",
        Pb::PackedStructFixedWidthMiniBlock(_) => "packed_struct_fixed_width_mini_block",
        Pb::Block(_) => "block",
        Pb::Rle(_) => "rle",
        Pb::GeneralMiniBlock(_) => "general_mini_block",
        Pb::ByteStreamSplit(_) => "byte_stream_split",
    }
}

fn describe_child(c: &Option<Box<enc20::ArrayEncoding>>) -> String {
    c.as_deref().map(describe).unwrap_or_else(|| "?".into())
}

/// A one-line description of a 2.0 encoding tree, e.g. `nullable(some_nulls, flat(32))`.
pub fn describe(enc: &enc20::ArrayEncoding) -> String {
    let Some(e) = enc.array_encoding.as_ref() else { return "empty".into() };
    match e {
        Pb::Flat(f) => match f.compression.as_ref().filter(|c| !c.scheme.is_empty() && c.scheme != "none") {
            Some(c) => format!("flat({}, {})", f.bits_per_value, c.scheme),
            None => format!("flat({})", f.bits_per_value),
        },
        Pb::Nullable(n) => match n.nullability.as_ref() {
            Some(Nullability::NoNulls(v)) => format!("nullable(no_nulls, {})", describe_child(&v.values)),
            Some(Nullability::SomeNulls(s)) => format!("nullable(some_nulls, {})", describe_child(&s.values)),
            Some(Nullability::AllNulls(_)) => "nullable(all_nulls)".into(),
            None => "nullable(?)".into(),
        },
        Pb::FixedSizeList(f) => format!("fixed_size_list({}, {})", f.dimension, describe_child(&f.items)),
        Pb::Binary(b) => format!("binary(indices={}, bytes={})", describe_child(&b.indices), describe_child(&b.bytes)),
        Pb::Dictionary(d) => format!(
            "dictionary({} items={}, indices={})",
            d.num_dictionary_items,
            describe_child(&d.items),
            describe_child(&d.indices)
        ),
        Pb::Fsst(f) => format!("fsst({})", describe_child(&f.binary)),
        Pb::FixedSizeBinary(f) => format!("fixed_size_binary({}, {})", f.byte_width, describe_child(&f.bytes)),
        Pb::Bitpacked(b) => format!(
            "bitpacked({}->{}{})",
            b.uncompressed_bits_per_value,
            b.compressed_bits_per_value,
            if b.signed { ", signed" } else { "" }
        ),
        Pb::BitpackedForNonNeg(b) => {
            format!("bitpacked_for_non_neg({}->{})", b.uncompressed_bits_per_value, b.compressed_bits_per_value)
        }
        Pb::Constant(c) => format!("constant({} bytes)", c.value.len()),
        Pb::List(l) => format!("list(offsets={})", describe_child(&l.offsets)),
        Pb::PackedStruct(p) => format!("packed_struct({})", p.inner.iter().map(describe).collect::<Vec<_>>().join(", ")),
        other => pb_name(other).into(),
    }
}
