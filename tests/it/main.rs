//! The integration tests: one binary, one module per area.

mod any_api;
mod auto_recall;
mod channels;
mod check;
mod ci_tools;
mod cli;
mod config_file;
mod conformance_shim;
mod contracts;
mod deploy;
mod docs_claims;
mod doctor;
mod first_hour;
mod fuzz_seeds;
mod generated_readme;
mod hostile;
mod hostile_tools;
mod http_protocol;
#[path = "../support/jwt.rs"]
mod jwt;
mod lint;
mod local_ts;
mod managed;
mod mapping_examples;
mod mcp;
mod mem0_lint;
mod new;
#[path = "../support/nginx.rs"]
mod nginx;
mod npm;
mod numbers;
mod package;
mod provenance;
mod proxy;
mod release;
#[path = "../support/remote.rs"]
mod remote;
mod render_props;
mod runtime;
mod runtime_api;
mod second_hour;
mod serve_http;
mod serve_remote;
mod serve_stdio;
#[path = "../support/services.rs"]
mod services;
mod tools_lock;
mod try_it;
mod upgrade;
mod workflows;
mod zod_schemas;
