//! Board and profile files (and `fwfix matrix`'s manifest, `manifest`): raw TOML types, loading, validation with file:line:col errors, and
//! name resolution (the repository's `boards/` and `profiles/`, then the ones shipped with fwfix).
//!
//! The pipeline for one file, each step in its own module:
//! 1. `lookup`: find the file (a path, a repository name, or a shipped name) and read it;
//! 2. `parse`: TOML syntax, then the key schema of `raw`, then serde into the `Raw*` types;
//! 3. `resolve`: defaults, cross-field rules, ranges, paths and placeholders, into `model`.
//!
//! `llm` merges `[strategy.llm]` with the `FWFIX_LLM_*` environment, and `host` reads what the
//! host's environment says beyond the profile (state directory, editor, `PATH`): the places fwfix
//! reads the environment for what a run depends on (`ui/` reads `NO_COLOR`, and the system's
//! temporary directory comes from `TMPDIR` through the standard library).
//!
//! This module must not run anything (no build, no QEMU, no probe): `fwfix validate` relies on
//! loading being free of side effects.

mod error;
pub mod host;
pub mod llm;
mod lookup;
mod manifest;
pub mod model;
mod names;
mod parse;
pub mod placeholder;
pub mod raw;
mod resolve;
mod shipped;
#[cfg(test)]
mod tests;

pub use error::{ConfigError, ConfigKind, KeyPath, Location};
pub use llm::{llm_settings, llm_settings_from_env, ApiKey, LlmSettings};
pub use lookup::{
    list_boards, list_profiles, list_shipped_boards, list_shipped_profiles, load_board,
    load_manifest, load_profile, parse_board, parse_profile, resolve_board, resolve_profile,
    validate_file, Listed, Origin, Validated,
};
pub use manifest::{parse_manifest, Exclusion, Manifest, ManifestEntry};
pub use model::*;
pub use shipped::{shipped_files, ShippedFile};
