//! kb-context's search service, mapped to profile items: a Datasette table
//! with full-text search (the one file `tests/it/any_api.rs` changes in a
//! generated `ecp new` extension). The runtime keeps every rule around it.
//!
//! `GET {base}/kb/docs.json?_search=<query>&_shape=objects&_size=5` answers
//! `{"rows": [{"id": 1, "title", "body", "url", "updated"}], ...}`: the
//! integer primary key is the id, `body` the content.

use ecp_runtime::{
    Provider, ProviderError, ProviderItem,
    http::{ConfigError, Credential, Upstream, string},
    serde_json::Value,
};

/// The search service, as the environment configures it.
pub struct SearchProvider {
    pub upstream: Upstream,
}

impl SearchProvider {
    /// Reads the base URL from the environment: this Datasette serves
    /// without authentication (`ecp new --auth none`).
    pub fn from_env(base_url_var: &str) -> Result<SearchProvider, ConfigError> {
        let upstream = Upstream::from_env(base_url_var, Credential::None)?;
        Ok(SearchProvider { upstream })
    }
}

impl Provider for SearchProvider {
    async fn search(&self, query: &str, limit: usize) -> Result<Vec<ProviderItem>, ProviderError> {
        // Datasette searches words split as Python splits them (U+0085
        // too): a query without one finds nothing, and it answers it 400.
        if query.split(char::is_whitespace).all(str::is_empty) {
            return Ok(Vec::new());
        }
        // The request: Datasette's table API, full-text searched.
        let answer = self
            .upstream
            .get("kb/docs.json")
            .query("_search", query)
            .query("_shape", "objects")
            .query("_size", limit)
            .send()
            .await?;
        // The mapping: each row to a profile item.
        let rows = answer.get("rows").and_then(Value::as_array);
        let rows = rows.ok_or(ProviderError::Malformed)?;
        Ok(rows.iter().map(item).collect())
    }
}

/// One row as a profile item; an integer id is written as a string.
pub fn item(row: &Value) -> ProviderItem {
    let id = match row.get("id") {
        Some(Value::Number(number)) => number.to_string(),
        _ => string(row, "id").unwrap_or_default(),
    };
    ProviderItem {
        id,
        content: string(row, "body").unwrap_or_default(),
        title: string(row, "title"),
        uri: string(row, "url"),
        score: None,
        updated_at: string(row, "updated"),
    }
}
