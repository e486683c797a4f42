//! The Generic HTTP Search V1 binding of runtime 0.2 and 0.3: what `ecp
//! serve --base-url` runs, and what code an earlier ecp generated names at
//! the deprecated paths of [`crate::old_paths`]. A current extension maps
//! its API with [`crate::http::Upstream`] in its own `src/provider.rs`.

pub mod binding;
pub mod search_response;
