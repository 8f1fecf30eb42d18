//! A Lance file (any version): footer, metadata, schema, column metadata, every page layout,
//! full reads, ranges and takes at the page edges.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| lancepy_fuzz::drive_file(data));
