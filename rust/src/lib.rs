//! lancepy's core: an independent implementation of the Lance columnar format.
//!
//! Layers, bottom to top: [`kernels`] (bit-packing, FSST) → [`encodings`] (compressive
//! encodings, bytes ⇄ data blocks) → [`schema`] (fields and their leaf shapes) → [`structural`] (page layouts, levels, Arrow assembly) →
//! [`file`] (the file container, reader and writer) → [`table`] (datasets). I/O sits behind
//! [`io::Reader`] / [`io::Writer`]; [`jsonb`] holds JSON values as Lance stores them; Python bindings live in `python/` behind the `python`
//! feature, so `cargo test` runs without Python.

#![warn(missing_docs)]

pub mod encodings;
pub mod error;
pub mod file;
pub mod format;
pub mod interrupt;
pub mod io;
pub mod jsonb;
pub mod kernels;
pub mod parallel;
pub mod schema;
pub mod structural;
pub mod table;
#[cfg(test)]
pub(crate) mod test_bytes;

// The integration suites in `rust/tests/` build into the unit-test binary, so that `cargo
// test` compiles the crate once, not twice (once with `cfg(test)`, once more as the library
// they link). They still reach the crate only through its public API, by its own name.
#[cfg(test)]
extern crate self as _lancepy;
#[cfg(test)]
#[path = "../tests/corrupt_inputs.rs"]
mod corrupt_inputs;
#[cfg(test)]
#[path = "../tests/roundtrip.rs"]
mod roundtrip;

#[cfg(feature = "python")]
mod python;

pub use error::{Error, Result};
