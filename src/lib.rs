//! ecp: build, lint, package, serve and check External Context Provider
//! extensions for Qwen Code.
//!
//! - [`profile`]: the v1 contract as pure functions (copied into extensions).
//! - [`runtime`]: the MCP stdio server around a [`runtime::Provider`] (copied).
//! - [`providers`]: the Generic HTTP Search V1 binding (copied) and the
//!   fixture corpus behind `ecp serve --fixture`.
//! - [`contracts`]: the canonical schemas of `contracts/v1`.
//! - [`lint`]: the pre-publish checks of manifests, folders and archives.
//! - [`scaffold`]: `ecp new`, the templates and the verbatim copies.
//! - [`package`]: `ecp package`, reproducible release archives.
//! - [`input`]: one wording for a missing path or manifest, in every command.
//! - [`name`]: the extension name rules shared by `ecp new` and `ecp lint`.
//! - [`cli`]: the command line, a thin shell over the library.

pub mod check;
pub mod cli;
pub mod contracts;
pub mod input;
pub mod lint;
pub mod name;
pub mod package;
pub mod profile;
pub mod providers;
pub mod runtime;
pub mod scaffold;
