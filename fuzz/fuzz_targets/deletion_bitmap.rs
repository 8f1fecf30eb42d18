//! A roaring-bitmap deletion file (`_deletions/*.bin`); a decoded vector re-encodes to itself.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| lancepy_fuzz::drive_deletion_bitmap(data));
