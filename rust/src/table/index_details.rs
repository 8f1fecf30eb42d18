//! The `index_details` of a manifest's index entries (`IndexMetadata.index_details`, a
//! protobuf `Any`): the type URL names the message (`/lance.table.BTreeIndexDetails`,
//! `/lance.table.InvertedIndexDetails`, `/lance.index.pb.VectorIndexDetails`, ...) and the
//! value is its bytes (`protos/index_details.proto`, `protos/index.proto`).
//!
//! [`decode_index_details`] reads the messages lancepy knows; damaged bytes give
//! [`Error::Corrupt`], an unknown type URL [`Error::NotSupported`].
//! [`encode_inverted_index_details`] writes the full-text one as pylance 14 does (the
//! language as a JSON string, zero values left out).

use prost::Message;

use crate::error::{Error, Result};
use crate::format::indexpb;
use crate::format::pb::lance::table as tablepb;

pub use tablepb::{CodeAnalyzerConfig, InvertedIndexDetails};

/// A decoded `index_details` message.
#[derive(Debug, Clone, PartialEq)]
pub enum IndexDetails {
    /// A message without fields (`BTreeIndexDetails`, `BitmapIndexDetails`,
    /// `LabelListIndexDetails`, `NGramIndexDetails`, `ZoneMapIndexDetails`, and
    /// `lance.index.pb.BloomFilterIndexDetails` as pylance 14 writes it): its name.
    Empty(&'static str),
    /// A full-text index's tokenizer and storage settings; `language` already unquoted.
    Inverted(InvertedIndexDetails),
    /// A vector index's parameters.
    Vector(indexpb::VectorIndexDetails),
    /// A scalar index over one JSON path: the path and the target index's details.
    Json(indexpb::JsonIndexDetails),
}

const EMPTY: [&str; 5] =
    ["BTreeIndexDetails", "BitmapIndexDetails", "LabelListIndexDetails", "NGramIndexDetails", "ZoneMapIndexDetails"];

/// The message name of a type URL: what follows its last `/`, without the package
/// (`"/lance.table.BTreeIndexDetails"` -> `"BTreeIndexDetails"`), and the package.
fn split_type_url(type_url: &str) -> (&str, &str) {
    let full = type_url.rsplit('/').next().unwrap_or(type_url);
    match full.rfind('.') {
        Some(i) => (&full[..i], &full[i + 1..]),
        None => ("", full),
    }
}

/// Decodes the `index_details` `value` of type `type_url`.
pub fn decode_index_details(type_url: &str, value: &[u8]) -> Result<IndexDetails> {
    let (package, name) = split_type_url(type_url);
    match (package, name) {
        ("lance.table", n) if EMPTY.contains(&n) => {
            // (an empty message still has to be well-formed: unknown fields are skipped)
            let _ = tablepb::BTreeIndexDetails::decode(value)?;
            Ok(IndexDetails::Empty(EMPTY.iter().find(|e| **e == n).expect("listed")))
        }
        ("lance.table", "InvertedIndexDetails") => {
            let mut m = InvertedIndexDetails::decode(value)?;
            if !m.language.is_empty() {
                m.language = serde_json::from_str::<String>(&m.language).map_err(|_| {
                    Error::corrupt(format!("InvertedIndexDetails: language {:?} is not a JSON string", m.language))
                })?;
            }
            Ok(IndexDetails::Inverted(m))
        }
        ("lance.index.pb", "VectorIndexDetails") => Ok(IndexDetails::Vector(indexpb::VectorIndexDetails::decode(value)?)),
        ("lance.index.pb", "JsonIndexDetails") => {
            let m = indexpb::JsonIndexDetails::decode(value)?;
            if m.target_details.is_none() {
                return Err(Error::corrupt("JsonIndexDetails without target_details"));
            }
            Ok(IndexDetails::Json(m))
        }
        ("lance.index.pb", "BloomFilterIndexDetails") => {
            // (pylance 14 writes it empty; a well-formed message is all that is checked)
            let _ = tablepb::BTreeIndexDetails::decode(value)?;
            Ok(IndexDetails::Empty("BloomFilterIndexDetails"))
        }
        _ => Err(Error::not_supported(format!("index details of type {type_url:?} are not read by lancepy"))),
    }
}

/// Encodes `InvertedIndexDetails`; `details.language` is the plain language name ("English"),
/// stored as a JSON string.
pub fn encode_inverted_index_details(details: &InvertedIndexDetails) -> Vec<u8> {
    let mut m = details.clone();
    m.language = serde_json::to_string(&details.language).expect("a string serializes");
    m.encode_to_vec()
}

/// Encodes `JsonIndexDetails` as pylance 14 writes them: the path, the target index's
/// details (`target_type_url`, `target_value`) and `target_data_type` (0, unspecified, as
/// pylance 14.0.2 writes it; a rewrite passes on what it read).
pub fn encode_json_index_details(path: &str, target_type_url: &str, target_value: &[u8], target_data_type: i32) -> Vec<u8> {
    indexpb::JsonIndexDetails {
        path: path.to_string(),
        target_details: Some(prost_types::Any { type_url: target_type_url.to_string(), value: target_value.to_vec() }),
        target_data_type,
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pylance_fts() -> InvertedIndexDetails {
        InvertedIndexDetails {
            base_tokenizer: Some("whitespace".into()),
            language: "English".into(),
            with_position: true,
            max_token_length: Some(40),
            min_ngram_length: 3,
            max_ngram_length: 3,
            block_size: 128,
            format_version: 2,
            ..Default::default()
        }
    }

    // What pylance 14.0.2 commits for `create_scalar_index("t", "INVERTED", with_position=True,
    // base_tokenizer="whitespace", max_token_length=40, stem=False, remove_stop_words=False,
    // ascii_folding=False, lower_case=False)`.
    const PYLANCE: &[u8] = &[
        10, 10, 119, 104, 105, 116, 101, 115, 112, 97, 99, 101, 18, 9, 34, 69, 110, 103, 108, 105, 115, 104, 34, 24, 1, 32, 40,
        72, 3, 80, 3, 96, 128, 1, 120, 2,
    ];

    #[test]
    fn inverted_bytes_and_round_trip() {
        assert_eq!(encode_inverted_index_details(&pylance_fts()), PYLANCE);
        let got = decode_index_details("/lance.table.InvertedIndexDetails", PYLANCE).unwrap();
        assert_eq!(got, IndexDetails::Inverted(pylance_fts()));
    }

    #[test]
    fn code_analyzer_and_document_granularity() {
        // pylance 14 keeps the "code" analyzer's flags in field 13 (a message) and
        // `document_granularity` in field 14 (1: list_element)
        let mut m = pylance_fts();
        m.code_analyzer = Some(tablepb::CodeAnalyzerConfig {
            split_identifiers: true,
            split_on_numerics: Some(true),
            preserve_original: Some(false),
            index_operators: false,
        });
        m.document_granularity = 1;
        let bytes = encode_inverted_index_details(&m);
        // (a false `preserve_original` is written: it is `optional`)
        assert!(bytes.windows(8).any(|w| w == [0x6a, 6, 8, 1, 16, 1, 24, 0]));
        assert!(bytes.windows(2).any(|w| w == [0x70, 1]));
        assert_eq!(decode_index_details("/lance.table.InvertedIndexDetails", &bytes).unwrap(), IndexDetails::Inverted(m));
    }

    #[test]
    fn empty_and_vector_details() {
        assert_eq!(
            decode_index_details("/lance.table.BTreeIndexDetails", &[]).unwrap(),
            IndexDetails::Empty("BTreeIndexDetails")
        );
        // an unknown field is skipped, a broken one is not
        assert!(decode_index_details("/lance.table.BitmapIndexDetails", &[0x08, 0x01]).is_ok());
        assert!(matches!(decode_index_details("/lance.table.BitmapIndexDetails", &[0x0a, 0x05]), Err(Error::Corrupt(_))));
        let IndexDetails::Vector(v) = decode_index_details("/lance.index.pb.VectorIndexDetails", &[0x08, 0x02]).unwrap() else {
            panic!()
        };
        assert_eq!(v.metric_type, 2);
        assert!(matches!(decode_index_details("/lance.table.FooIndexDetails", &[]), Err(Error::NotSupported(_))));
        assert_eq!(
            decode_index_details("/lance.index.pb.BloomFilterIndexDetails", &[]).unwrap(),
            IndexDetails::Empty("BloomFilterIndexDetails")
        );
        assert!(matches!(decode_index_details("BTreeIndexDetails", &[]), Err(Error::NotSupported(_))));
    }

    #[test]
    fn json_details_as_pylance_writes_them() {
        // pylance 14.0.2's bytes for a BTREE over path "x" (target_data_type unspecified)
        let mut want = vec![0x0a, 0x01, b'x', 0x12, 0x20, 0x0a, 0x1e];
        want.extend_from_slice(b"/lance.table.BTreeIndexDetails");
        let bytes = encode_json_index_details("x", "/lance.table.BTreeIndexDetails", &[], 0);
        assert_eq!(bytes, want);
        let IndexDetails::Json(m) = decode_index_details("/lance.index.pb.JsonIndexDetails", &bytes).unwrap() else { panic!() };
        assert_eq!((m.path.as_str(), m.target_data_type), ("x", 0));
        assert_eq!(m.target_details.unwrap().type_url, "/lance.table.BTreeIndexDetails");
        // a recorded type, even one lancepy does not know, is kept
        let bytes = encode_json_index_details("$.a", "/lance.table.BitmapIndexDetails", &[], 9);
        let IndexDetails::Json(m) = decode_index_details("/lance.index.pb.JsonIndexDetails", &bytes).unwrap() else { panic!() };
        assert_eq!(m.target_data_type, 9);
        // no target: damaged
        assert!(matches!(decode_index_details("/lance.index.pb.JsonIndexDetails", &[0x0a, 0x01, b'x']), Err(Error::Corrupt(_))));
    }

    #[test]
    fn bad_language_truncated_and_garbage_are_errors() {
        let m = InvertedIndexDetails { language: "English".into(), ..Default::default() }.encode_to_vec();
        assert!(matches!(decode_index_details("/lance.table.InvertedIndexDetails", &m), Err(Error::Corrupt(_))));
        for n in 0..PYLANCE.len() {
            let _ = decode_index_details("/lance.table.InvertedIndexDetails", &PYLANCE[..n]);
        }
        assert!(decode_index_details("/lance.table.InvertedIndexDetails", &PYLANCE[..5]).is_err());
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for len in 0..300 {
            let garbage = crate::test_bytes::garbage(&mut state, len);
            for url in
                ["/lance.table.InvertedIndexDetails", "/lance.index.pb.VectorIndexDetails", "/lance.table.BTreeIndexDetails"]
            {
                let _ = decode_index_details(url, &garbage);
            }
        }
    }
}
