//! Board and profile files: raw TOML types, loading, validation with file:line:col errors, and
//! name resolution (the repository's `boards/` and `profiles/`, then the ones shipped with fwfix).

pub mod model;

pub use model::*;
