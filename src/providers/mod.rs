//! Search backends of `ecp serve`: the Generic HTTP Search V1 binding (the
//! runtime crate's, which `ecp new` also copies into extensions as their
//! `src/provider.rs`) and the fixture corpus of `--fixture`.

pub mod fixture;
pub use crate::runtime::binding as http;
