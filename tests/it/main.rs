//! The integration tests: one binary, one module per area.

mod check;
mod cli;
mod contracts;
mod lint;
mod mcp;
mod new;
mod npm;
mod numbers;
mod oauth;
mod package;
mod render_props;
mod runtime;
mod serve_http;
mod serve_remote;
mod serve_stdio;
