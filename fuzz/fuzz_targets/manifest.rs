//! A dataset manifest file (envelope, Manifest, index section, inline transaction, the
//! fragments' inline row-id sequences, the JSON form).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| lancepy_fuzz::drive_manifest(data));
