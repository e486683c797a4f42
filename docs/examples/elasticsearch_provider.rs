//! A search engine that nests its hits (Elasticsearch's `_search`), as a
//! generated extension's `src/provider.rs` (docs/commands.md, "Shapes
//! search engines answer with"; tests/it/mapping_examples.rs compiles it
//! in a generated crate and runs the tests below).
//!
//! `POST {base}/docs/_search` with a `simple_query_string` query, which
//! never fails on the query's syntax (its operators are optional and a
//! malformed one is read as text), answered by `{"hits": {"hits": [{"_id",
//! "_score", "_source": {"title", "body", "url", "updated"}}]}}`.

use ecp_runtime::{
    Provider, ProviderError, ProviderItem,
    http::{ConfigError, Credential, Upstream, string},
    serde_json::{Value, json},
};

pub struct SearchProvider {
    pub upstream: Upstream,
}

impl SearchProvider {
    pub fn from_env(base_url_var: &str, token_var: &str) -> Result<SearchProvider, ConfigError> {
        let upstream = Upstream::from_env(base_url_var, Credential::bearer(token_var))?;
        Ok(SearchProvider { upstream })
    }
}

impl Provider for SearchProvider {
    async fn search(&self, query: &str, limit: usize) -> Result<Vec<ProviderItem>, ProviderError> {
        let body = json!({
            "query": {"simple_query_string": {"query": query, "fields": ["title", "body"]}},
            "size": limit,
        });
        let answer = self.upstream.post("docs/_search").json(&body).send().await?;
        let hits = answer.pointer("/hits/hits").and_then(Value::as_array);
        Ok(hits.ok_or(ProviderError::Malformed)?.iter().map(item).collect())
    }
}

/// One hit: the id and score beside `_source`, the fields inside it.
pub fn item(hit: &Value) -> ProviderItem {
    let source = hit.get("_source").unwrap_or(&Value::Null);
    ProviderItem {
        id: id(hit.get("_id")),
        content: string(source, "body").unwrap_or_default(),
        title: string(source, "title"),
        uri: string(source, "url"),
        score: hit.get("_score").and_then(Value::as_f64),
        updated_at: string(source, "updated"),
    }
}

/// An id as text, whether the engine writes a string or a number: read as
/// a string only, a numeric id drops every item.
pub fn id(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(id)) => id.clone(),
        Some(Value::Number(id)) => id.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nested_hit_with_a_numeric_id_is_an_item() {
        let hit = json!({"_id": 17, "_score": 1.25, "_source": {"title": "T", "body": "B"}});
        let item = item(&hit);
        assert_eq!((item.id.as_str(), item.content.as_str()), ("17", "B"));
        assert_eq!((item.title.as_deref(), item.score), (Some("T"), Some(1.25)));
        assert_eq!(id(Some(&json!("a1"))), "a1");
    }
}
