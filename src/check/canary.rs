//! The canaries a check plants: the query, the credential and an upstream
//! body carry them, and none may appear in any result or on stderr.

/// Planted in a query.
pub const QUERY_CANARY: &str = "ecpQueryCanary7f3a";
/// The credential the target is given.
pub const TOKEN_CANARY: &str = "ecp-token-canary-51c9e2";
/// Planted in an upstream answer.
pub const BODY_CANARY: &str = "ecpBodyCanary0d4b";
