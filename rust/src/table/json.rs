//! Table-format messages as JSON, the form in which they cross to Python.
//!
//! The prost types of `lance.table` derive serde (see `rust/build.rs`); this module holds the
//! two conversions serde cannot derive (`google.protobuf.Timestamp` and `Any`) and the typed
//! entry points. Field names are the protobuf names; `bytes` fields are arrays of integers;
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
}
