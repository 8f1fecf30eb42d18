//! JSONB against what pylance 14.0.2 stores and prints: each row is JSON text written into a
//! `pa.json_()` column with pylance, the JSONB bytes pylance stored for it (read raw), and
//! the text pylance's reads return for it.

use super::*;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// (text written, JSONB pylance stored, text pylance reads back)
const PYLANCE: &[(&str, &str, &str)] = &[
    ("{\"a\":1,\"b\":[1,2]}", "40000002100000011000000120000002500000106162500180000002200000022000000250015002", "{\"a\":1,\"b\":[1,2]}"),
    ("{\"b\":1,\"a\":2}", "4000000210000001100000012000000220000002616250025001", "{\"a\":2,\"b\":1}"),
    ("[]", "80000000", "[]"),
    ("{}", "40000000", "{}"),
    ("\"\"", "2000000010000000", "\"\""),
    ("0", "200000002000000100", "0"),
    ("-0", "200000002000000100", "0"),
    ("1", "20000000200000025001", "1"),
    ("-1", "200000002000000240ff", "-1"),
    ("255", "200000002000000250ff", "255"),
    ("256", "2000000020000003500100", "256"),
    ("-128", "20000000200000024080", "-128"),
    ("-129", "200000002000000340ff7f", "-129"),
    ("65535", "200000002000000350ffff", "65535"),
    ("65536", "20000000200000055000010000", "65536"),
    ("4294967295", "200000002000000550ffffffff", "4294967295"),
    ("4294967296", "2000000020000009500000000100000000", "4294967296"),
    ("18446744073709551615", "200000002000000950ffffffffffffffff", "18446744073709551615"),
    ("18446744073709551616", "20000000200000096043f0000000000000", "1.8446744073709552e+19"),
    ("-9223372036854775808", "2000000020000009408000000000000000", "-9223372036854775808"),
    ("-9223372036854775809", "200000002000000960c3e0000000000000", "-9.223372036854776e+18"),
    ("1.0", "2000000020000009603ff0000000000000", "1.0"),
    ("1.", "20000000200000025001", "1"),
    (".5", "2000000020000009603fe0000000000000", "0.5"),
    ("0.0", "2000000020000009600000000000000000", "0.0"),
    ("-0.0", "2000000020000009608000000000000000", "-0.0"),
    ("1e5", "20000000200000096040f86a0000000000", "100000.0"),
    ("1E-7", "2000000020000009603e7ad7f29abcaf48", "1e-7"),
    ("1.5e300", "2000000020000009607e41eb2d66005835", "1.5e+300"),
    ("123456789012345678901234567890", "20000000200000096045f8ee90ff6c373e", "1.2345678901234568e+29"),
    ("+7", "20000000200000025007", "7"),
    ("007", "20000000200000025007", "7"),
    ("0x1F", "2000000020000002501f", "31"),
    ("-0x10", "200000002000000240f0", "-16"),
    ("0x1.8", "2000000020000009603ff8000000000000", "1.5"),
    ("NaN", "200000002000000110", "null"),
    ("Infinity", "200000002000000120", "null"),
    ("-Infinity", "200000002000000130", "null"),
    ("true", "2000000040000000", "true"),
    ("TRUE", "2000000040000000", "true"),
    ("False", "2000000030000000", "false"),
    ("null", "2000000000000000", "null"),
    ("NULL", "2000000000000000", "null"),
    ("", "2000000000000000", "null"),
    ("  ", "2000000000000000", "null"),
    ("'single'", "200000001000000673696e676c65", "\"single\""),
    ("{a: 1, $b_2: [1,,3]}", "400000021000000410000001500000142000000224625f326180000003200000020000000020000002500150035001", "{\"$b_2\":[1,null,3],\"a\":1}"),
    ("[1,]", "8000000220000002000000005001", "[1,null]"),
    ("[,]", "800000020000000000000000", "[null,null]"),
    ("\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\u{0041} \\ud834\\udd1e \\ud800 \\udc00x \\ud800\\u0041\"", "20000000100000396573632022205c202f2008200c200a200d200920c3a9204120f09d849e205c7564383030205c756463303078205c75643830305c7530303431", "\"esc \\\" \\\\ / \\b \\f \\n \\r \\t é A 𝄞 \\\\ud800 \\\\udc00x \\\\ud800\\\\u0041\""),
    ("\"ctl \u{1} \u{7f} é 中\"", "200000001000000e63746c2001207f20c3a920e4b8ad", "\"ctl \\u0001 \u{7f} é 中\""),
    ("{\"z\":{\"y\":[{\"x\":null}]},\"a\":\"A\"}", "4000000210000001100000011000000150000022617a4140000001100000015000001579800000015000000d40000001100000010000000078", "{\"a\":\"A\",\"z\":{\"y\":[{\"x\":null}]}}"),
    ("0.1", "2000000020000009603fb999999999999a", "0.1"),
    ("1e20", "2000000020000009604415af1d78b58c40", "1e+20"),
    ("1e21", "200000002000000960444b1ae4d6e2ef50", "1e+21"),
    ("1e-5", "2000000020000009603ee4f8b588e368f1", "0.00001"),
    ("1e-6", "2000000020000009603eb0c6f7a0b5ed8d", "1e-6"),
    ("123.456e10", "2000000020000009604271f7182a000000", "1234560000000.0"),
    ("3.141592653589793", "200000002000000960400921fb54442d18", "3.141592653589793"),
    ("5e-324", "2000000020000009600000000000000001", "5e-324"),
    ("1.7976931348623157e308", "2000000020000009607fefffffffffffff", "1.7976931348623157e+308"),
    ("[1, 2.5, \"x\", true, null, {\"k\": []}]", "800000062000000220000009100000014000000000000000500000115001604004000000000000784000000110000001500000046b80000000", "[1,2.5,\"x\",true,null,{\"k\":[]}]"),
    ("\\n{\"a\":1}\\t", "400000011000000120000002615001", "{\"a\":1}"),
    ("{\"é\":1,\"a\":2,\"B\":3}", "400000031000000110000001100000022000000220000002200000024261c3a9500350025001", "{\"B\":3,\"a\":2,\"é\":1}"),
];

#[test]
fn text_is_stored_and_read_as_pylance_does() {
    for &(text, stored, read) in PYLANCE {
        let jsonb = encode(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(hex(&jsonb), stored, "stored bytes of {text:?}");
        assert_eq!(to_text(&unhex(stored)), read, "text of {text:?}");
        // What a read returns is stored again as the same bytes (but NaN and ±∞, which read
        // as null).
        if !text.to_ascii_lowercase().contains("nan") && !text.to_ascii_lowercase().contains("infinity") {
            assert_eq!(encode(read).unwrap(), jsonb, "{read:?} stored again");
        }
    }
}

#[test]
fn text_pylance_refuses_is_refused() {
    for text in [
        "{",
        "[1 2]",
        "{\"a\":1,\"a\":2}",
        "{1:2}",
        "\"abc",
        "\"\\q\"",
        "\"\\u12\"",
        "-NaN",
        "1.2.3",
        "1e",
        "0x",
        "0x1.",
        "nul",
        "{\"a\" 1}",
        "{\"a\":}",
        "[1]x",
        "\"\\u{0041\"",
        "--1",
        ".",
        "'a\\'b'",
    ] {
        assert!(encode(text).is_err(), "{text:?} was accepted");
    }
}

#[test]
fn nesting_is_bounded() {
    let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
    assert!(encode(&deep).is_err());
    let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
    assert_eq!(to_text(&encode(&ok).unwrap()), ok);
}

#[test]
fn hostile_bytes_read_as_text_without_panicking() {
    // Invalid JSONB reads as its bytes (lossy UTF-8), as pylance reads it; empty as null.
    assert_eq!(to_text(&[]), "null");
    assert_eq!(to_text(&[1, 2, 3, 4]), "\u{1}\u{2}\u{3}\u{4}");
    // Every truncation and every single-byte change of valid values: no panic, no
    // allocation from a hostile count.
    let valid = encode(r#"{"a":[1,2.5,"x",{"k":null}],"b":true,"c":-70000}"#).unwrap();
    for cut in 0..valid.len() {
        let _ = to_text(&valid[..cut]);
    }
    for i in 0..valid.len() {
        for b in [0x00, 0x1f, 0x20, 0x5f, 0x7f, 0x80, 0xff] {
            let mut v = valid.clone();
            v[i] = b;
            let _ = to_text(&v);
        }
    }
    // A header counting 2^29 − 1 entries in 8 bytes.
    let _ = to_text(&[0x9f, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
}

#[test]
fn paths_select_as_pylance_does() {
    use super::path::JsonPath;
    let doc = encode(r#"{"a":[1,{"b":2},[3]],"c":{"d":"x"},"e":5}"#).unwrap();
    let texts = |path: &str| -> Vec<String> {
        JsonPath::parse(path).unwrap().select(Raw(&doc)).unwrap().into_iter().map(|i| item_text(i).unwrap()).collect()
    };
    assert_eq!(texts("$.a[1].b"), ["2"]);
    assert_eq!(texts("a[last][0]"), ["3"]);
    assert_eq!(texts(r#"$["c"].d"#), [r#""x""#]);
    assert_eq!(texts("$.e[*]"), ["5"]); // lax: a non-array passes [*]
    assert_eq!(texts("$.e[0]"), Vec::<String>::new());
    assert_eq!(texts("$.*").len(), 3);
    assert_eq!(texts("$.a[0 to 1]"), ["1", r#"{"b":2}"#]);
    assert_eq!(texts("$.a.**{1}"), ["1", r#"{"b":2}"#, "[3]"]);
    assert!(matches!(JsonPath::parse("$.a[?(@ > 1)]"), Err(crate::Error::NotSupported(_))));
    assert!(matches!(JsonPath::parse("$.a["), Err(crate::Error::InvalidInput(_))));
    // A slice of an empty array selects nothing (pylance 14 aborts on it).
    assert!(JsonPath::parse("$[0 to last]").unwrap().select(Raw(&encode("[]").unwrap())).unwrap().is_empty());
}

#[test]
fn functions_take_text_or_jsonb() {
    use arrow_array::{Array, Int64Array, LargeBinaryArray, StringArray};
    let text = StringArray::from(vec![Some(r#"{"k":"7","l":[1,2]}"#), None, Some("[1]")]);
    let ints = super::path::evaluate("json_get_int", &text, &["k"]).unwrap();
    assert_eq!(ints.as_any().downcast_ref::<Int64Array>().unwrap(), &Int64Array::from(vec![Some(7), None, None]));
    let jsonb = LargeBinaryArray::from(vec![Some(encode(r#"{"l":[1,2]}"#).unwrap().as_slice())]);
    let len = super::path::evaluate("json_array_length", &jsonb, &["$.l"]).unwrap();
    assert_eq!(len.as_any().downcast_ref::<Int64Array>().unwrap().value(0), 2);
    // A value of the wrong kind fails the call, as in pylance.
    assert!(super::path::evaluate("json_get_int", &StringArray::from(vec![r#"{"k":[1]}"#]), &["k"]).is_err());
}
