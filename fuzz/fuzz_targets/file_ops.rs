//! A Lance file preceded by 16 bytes that choose the field, the range and the rows taken.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| lancepy_fuzz::drive_file_ops(data));
