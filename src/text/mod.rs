//! Text ecp did not write, below every command: how it is shown and what
//! in it is a secret. Imports nothing of ecp but the ground.
//!
//! - [`outside`]: text from outside (stderr, manifest and statement values)
//!   as a terminal or a report may show it: masked, escaped, bounded;
//! - [`secrets`]: what in a string or a file name is a credential, as a
//!   [`secrets::SecretKind`] that `ecp lint` maps to its rules.

pub mod outside;
pub mod secrets;
