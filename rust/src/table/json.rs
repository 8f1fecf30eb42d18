//! Table-format messages as JSON, the form in which they cross to Python.
//!
//! The prost types of `lance.table` derive serde (see `rust/build.rs`); this module holds the
//! two conversions serde cannot derive (`google.protobuf.Timestamp` and `Any`) and the typed
//! entry points. Field names are the protobuf names; `bytes` fields are arrays of integers
//! (a fragment's inline row ids and row versions: hex strings, see [`hex_bytes`]);
//! `oneof`s are objects with one key named after the variant (e.g. `{"Append": {...}}`).

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};

/// Serializes a message to JSON.
pub fn to_json<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::invalid_input(format!("encoding JSON: {e}")))
}

/// Parses a message from JSON; `what` names it in error messages.
pub fn from_json<T: DeserializeOwned>(json: &str, what: &str) -> Result<T> {
    serde_json::from_str(json).map_err(|e| Error::invalid_input(format!("invalid {what} JSON: {e}")))
}

/// `Option<Timestamp>` as `{"seconds": s, "nanos": n}` or `null`.
pub mod timestamp {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Ts {
        #[serde(default)]
        seconds: i64,
        #[serde(default)]
        nanos: i32,
    }

    /// Serializes.
    pub fn serialize<S: Serializer>(v: &Option<prost_types::Timestamp>, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref().map(|t| Ts { seconds: t.seconds, nanos: t.nanos }).serialize(s)
    }

    /// Deserializes.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<prost_types::Timestamp>, D::Error> {
        Ok(Option::<Ts>::deserialize(d)?.map(|t| prost_types::Timestamp { seconds: t.seconds, nanos: t.nanos }))
    }
}

/// `Option<Any>` as `{"type_url": ..., "value": [bytes]}` or `null`.
pub mod any {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct AnyJson {
        #[serde(default)]
        type_url: String,
        #[serde(default)]
        value: Vec<u8>,
    }

    /// Serializes.
    pub fn serialize<S: Serializer>(v: &Option<prost_types::Any>, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref().map(|a| AnyJson { type_url: a.type_url.clone(), value: a.value.clone() }).serialize(s)
    }

    /// Deserializes.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<prost_types::Any>, D::Error> {
        Ok(Option::<AnyJson>::deserialize(d)?.map(|a| prost_types::Any { type_url: a.type_url, value: a.value }))
    }
}

/// A large `bytes` field (a fragment's inline row ids and row version sequences) as a
/// lowercase hex string, parsed from hex text or from an array of integers: a string is one
/// token to scan where an array is a number per byte (a million rows' ids are ~4 MB).
pub mod hex_bytes {
    use std::fmt;

    use bytes::Bytes;
    use serde::de::{SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};

    /// Serializes.
    pub fn serialize<S: Serializer>(v: &Bytes, s: S) -> Result<S::Ok, S::Error> {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(v.len() * 2);
        for &b in v.iter() {
            out.push(DIGITS[(b >> 4) as usize] as char);
            out.push(DIGITS[(b & 15) as usize] as char);
        }
        s.serialize_str(&out)
    }

    /// Deserializes.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        d.deserialize_any(HexOrInts)
    }

    struct HexOrInts;

    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }

    impl<'de> Visitor<'de> for HexOrInts {
        type Value = Bytes;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a hex string or an array of bytes")
        }

        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Bytes, E> {
            let raw = v.as_bytes();
            if raw.len() % 2 != 0 {
                return Err(E::custom("hex bytes of odd length"));
            }
            let mut out = Vec::with_capacity(raw.len() / 2);
            for pair in raw.chunks_exact(2) {
                match (nibble(pair[0]), nibble(pair[1])) {
                    (Some(hi), Some(lo)) => out.push(hi << 4 | lo),
                    _ => return Err(E::custom("invalid hex digit in bytes")),
                }
            }
            Ok(out.into())
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Bytes, A::Error> {
            // (at most 1 MiB reserved up front: the hint comes from the input)
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
            while let Some(b) = seq.next_element::<u8>()? {
                out.push(b);
            }
            Ok(out.into())
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Bytes, E> {
            Err(E::custom("bytes cannot be null"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::tablepb;

    #[test]
    fn manifest_round_trips_through_json() {
        let m = tablepb::Manifest {
            version: 3,
            timestamp: Some(prost_types::Timestamp { seconds: 10, nanos: 5 }),
            fragments: vec![tablepb::DataFragment {
                id: 7,
                physical_rows: 100,
                files: vec![tablepb::DataFile {
                    path: "a.lance".into(),
                    fields: vec![0, 1],
                    column_indices: vec![0, 1],
                    ..Default::default()
                }],
                row_id_sequence: Some(tablepb::data_fragment::RowIdSequence::InlineRowIds(vec![1u8, 2, 3].into())),
                ..Default::default()
            }],
            max_fragment_id: Some(7),
            ..Default::default()
        };
        let json = to_json(&m).unwrap();
        let back: tablepb::Manifest = from_json(&json, "manifest").unwrap();
        assert_eq!(back, m);
        // Missing keys take their protobuf defaults.
        let sparse: tablepb::Manifest = from_json(r#"{"version": 2}"#, "manifest").unwrap();
        assert_eq!(sparse.version, 2);
        assert!(from_json::<tablepb::Manifest>("[1]", "manifest").is_err());
    }

    #[test]
    fn inline_sequences_cross_as_hex_and_are_read_from_hex_or_integers() {
        let f = tablepb::DataFragment {
            row_id_sequence: Some(tablepb::data_fragment::RowIdSequence::InlineRowIds(vec![0u8, 171, 255].into())),
            ..Default::default()
        };
        let json = to_json(&f).unwrap();
        assert!(json.contains(r#""InlineRowIds":"00abff""#), "{json}");
        for text in
            [r#"{"row_id_sequence": {"InlineRowIds": "00ABff"}}"#, r#"{"row_id_sequence": {"InlineRowIds": [0, 171, 255]}}"#]
        {
            assert_eq!(from_json::<tablepb::DataFragment>(text, "fragment").unwrap(), f);
        }
        for bad in [r#""0""#, r#""zz""#, "null", "[256]"] {
            let text = format!(r#"{{"row_id_sequence": {{"InlineRowIds": {bad}}}}}"#);
            assert!(from_json::<tablepb::DataFragment>(&text, "fragment").is_err(), "{bad}");
        }
    }
}
