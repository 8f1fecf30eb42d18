//! An Arrow IPC deletion file (`_deletions/*.arrow`); a decoded vector re-encodes to itself.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| lancepy_fuzz::drive_deletion_arrow(data));
