//! The integration tests: one binary, one module per area.

mod contracts;
mod mcp;
mod numbers;
mod render_props;
mod upstream;
