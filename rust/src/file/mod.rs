//! Lance data files: container, schema, reader and writer.

pub mod container;
pub mod reader;
pub mod schema;
pub mod strategy;
pub mod writer;

pub use container::FileVersion;
pub use reader::FileReader;
pub use schema::{LanceField, LanceSchema};
pub use writer::{FileWriter, WriterOptions};
