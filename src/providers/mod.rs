//! Search backends for the runtime: the Generic HTTP Search V1 binding
//! (copied into generated extensions) and the fixture corpus of
//! `ecp serve --fixture`.

pub mod fixture;
pub mod http;
