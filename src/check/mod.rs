//! `ecp check`: a conformance runner that speaks MCP to any implementation
//! and proves every promise of profile-v1, faults included.

pub mod upstream;
