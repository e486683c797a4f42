//! A search engine with a query language and array-valued fields
//! (tantivy-cli's `tantivy serve`), as a generated extension's
//! `src/provider.rs` (docs/commands.md, "Shapes search engines answer
//! with"; tests/it/mapping_examples.rs compiles it in a generated crate
//! and runs the tests below).
//!
//! `GET {base}/api/?q=<query>&nhits=5`, no credential, answered by
//! `{"hits": [{"score", "doc": {"id": [7], "title": ["..."], "body":
//! ["..."]}}]}`: every stored field is an array, the id a number.

use ecp_runtime::{
    Provider, ProviderError, ProviderItem,
    http::{ConfigError, Credential, Upstream},
    serde_json::Value,
};

pub struct SearchProvider {
    pub upstream: Upstream,
}

impl SearchProvider {
    /// The service needs no credential: `_token_var` stays unread.
    pub fn from_env(base_url_var: &str, _token_var: &str) -> Result<SearchProvider, ConfigError> {
        let upstream = Upstream::from_env(base_url_var, Credential::None)?;
        Ok(SearchProvider { upstream })
    }
}

impl Provider for SearchProvider {
    async fn search(&self, query: &str, limit: usize) -> Result<Vec<ProviderItem>, ProviderError> {
        let words = plain_words(query);
        if words.is_empty() {
            return Ok(Vec::new()); // no word to search: the engine would refuse it
        }
        let request = self.upstream.get("api/").query("q", &words).query("nhits", limit);
        let answer = request.send().await?;
        let hits = answer.get("hits").and_then(Value::as_array);
        Ok(hits.ok_or(ProviderError::Malformed)?.iter().map(item).collect())
    }
}

/// The query as plain words for a query language: every character that is
/// not a letter or a digit is a space (quotes, `:`, `-`, brackets are its
/// syntax), and the words are lower-cased so that none is an operator
/// (`AND`, `OR`, `NOT`).
pub fn plain_words(query: &str) -> String {
    let spaced: String = query
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    spaced.split_whitespace().map(str::to_lowercase).collect::<Vec<_>>().join(" ")
}

/// One hit: each stored field is an array, its first value taken.
pub fn item(hit: &Value) -> ProviderItem {
    let first = |name: &str| hit.pointer(&format!("/doc/{name}/0")).cloned();
    let text = |name: &str| first(name).and_then(|v| v.as_str().map(str::to_owned));
    let id = match first("id") {
        Some(Value::Number(id)) => id.to_string(),
        Some(Value::String(id)) => id,
        _ => String::new(),
    };
    ProviderItem {
        id,
        content: text("body").unwrap_or_default(),
        title: text("title"),
        uri: text("url"),
        score: hit.get("score").and_then(Value::as_f64),
        updated_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecp_runtime::serde_json::json;

    #[test]
    fn array_fields_and_a_numeric_id_make_an_item_and_syntax_becomes_words() {
        let hit = json!({"score": 2.5, "doc": {"id": [7], "title": ["T"], "body": ["B", "more"]}});
        let item = item(&hit);
        assert_eq!((item.id.as_str(), item.content.as_str()), ("7", "B"));
        assert_eq!(plain_words("<script> \"x\" a:b -c OR it's"), "script x a b c or it s");
        assert_eq!(plain_words("\u{85}"), "");
    }
}
