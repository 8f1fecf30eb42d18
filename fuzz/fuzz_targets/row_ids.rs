//! A serialized `RowIdSequence`: counted, expanded, re-encoded.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| lancepy_fuzz::drive_row_ids(data));
