//! Lance data files: container, schema, reader and writer.

pub mod container;
pub mod legacy;
pub mod reader;
pub mod writer;

pub use crate::schema::{LanceField, LanceSchema};
pub use container::FileVersion;
pub use reader::FileReader;
pub use writer::{FileWriter, WriterOptions};
