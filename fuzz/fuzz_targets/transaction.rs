//! A transaction file (`_transactions/*.txn`) and its JSON form.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| lancepy_fuzz::drive_transaction(data));
