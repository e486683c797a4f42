//! A fixture corpus behind `ecp serve --fixture`: a JSON array or JSON Lines
//! file of items, ranked deterministically against the query, so a provider
//! team can try Qwen Code with no service at all.
//!
//! Ranking: the query's lower-cased alphanumeric terms; a term found in an
//! item's title weighs 2, in its content 1. Items that match nothing are left
//! out; ties keep corpus order. The reported score is the weight over the
//! best possible weight, rounded to two decimals.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::{
    profile::ProviderItem,
    runtime::{Provider, ProviderError},
};

/// One corpus entry, as written in the file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FixtureItem {
    id: String,
    content: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    uri: Option<String>,
    #[serde(default, rename = "updatedAt", alias = "updated_at")]
    updated_at: Option<String>,
}

/// Why a corpus file cannot be used; every variant names the file and, where
/// it has one, the line and column.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}:{column}: {message}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}: {place}: the {field} is empty; every item needs a non-empty id and content", path.display())]
    EmptyField {
        path: PathBuf,
        /// `line N` in JSON Lines, `item N` in an array (both from 1).
        place: String,
        field: &'static str,
    },
    #[error("{} holds no items; add a JSON array of {{\"id\", \"content\"}} objects or one object per line", path.display())]
    Empty { path: PathBuf },
}

/// A loaded corpus.
#[derive(Debug, Clone)]
pub struct FixtureCorpus {
    items: Vec<FixtureItem>,
}

/// Lower-cased alphanumeric terms of `text`, deduplicated, in order.
fn terms(text: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for term in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
    {
        if !terms.contains(&term) {
            terms.push(term);
        }
    }
    terms
}

/// The example corpus, built into ecp (`--fixture example`).
pub const EXAMPLE: &str = include_str!("../../templates/corpus/example.jsonl");

/// The name that selects [`EXAMPLE`] when no file of that name exists.
pub const EXAMPLE_NAME: &str = "example";

impl FixtureCorpus {
    /// `--fixture VALUE`: a file, or `example` (the built-in corpus) when no
    /// file of that name exists.
    pub fn open(value: &Path) -> Result<FixtureCorpus, FixtureError> {
        if value == Path::new(EXAMPLE_NAME) && std::fs::symlink_metadata(value).is_err() {
            return FixtureCorpus::parse(EXAMPLE, Path::new("(built-in example corpus)"));
        }
        FixtureCorpus::load(value)
    }

    /// Reads a JSON array (first non-blank character `[`) or JSON Lines.
    pub fn load(path: &Path) -> Result<FixtureCorpus, FixtureError> {
        let text = std::fs::read_to_string(path).map_err(|source| FixtureError::Read {
            path: path.to_owned(),
            source,
        })?;
        FixtureCorpus::parse(&text, path)
    }

    /// Parses corpus text; `path` only labels errors.
    pub fn parse(text: &str, path: &Path) -> Result<FixtureCorpus, FixtureError> {
        let syntax = |error: serde_json::Error, line_offset: usize| FixtureError::Syntax {
            path: path.to_owned(),
            line: error.line() + line_offset,
            column: error.column(),
            message: error.to_string(),
        };
        // (place, item) pairs, so that content errors point somewhere too.
        let mut entries: Vec<(String, FixtureItem)> = Vec::new();
        if text.trim_start().starts_with('[') {
            let items: Vec<FixtureItem> = serde_json::from_str(text).map_err(|e| syntax(e, 0))?;
            entries.extend(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(index, item)| (format!("item {}", index + 1), item)),
            );
        } else {
            for (index, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let item = serde_json::from_str(line).map_err(|e| syntax(e, index))?;
                entries.push((format!("line {}", index + 1), item));
            }
        }
        if entries.is_empty() {
            return Err(FixtureError::Empty {
                path: path.to_owned(),
            });
        }
        for (place, item) in &entries {
            let empty = if item.id.is_empty() {
                Some("id")
            } else if item.content.is_empty() {
                Some("content")
            } else {
                None
            };
            if let Some(field) = empty {
                return Err(FixtureError::EmptyField {
                    path: path.to_owned(),
                    place: place.clone(),
                    field,
                });
            }
        }
        Ok(FixtureCorpus {
            items: entries.into_iter().map(|(_, item)| item).collect(),
        })
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The best `limit` matches for `query`, best first.
    pub fn rank(&self, query: &str, limit: usize) -> Vec<ProviderItem> {
        let query_terms = terms(query);
        if query_terms.is_empty() {
            return Vec::new();
        }
        let best = 3 * query_terms.len();
        let mut scored: Vec<(usize, &FixtureItem)> = self
            .items
            .iter()
            .filter_map(|item| {
                let title = item.title.as_deref().map(terms).unwrap_or_default();
                let content = terms(&item.content);
                let weight: usize = query_terms
                    .iter()
                    .map(|term| {
                        2 * usize::from(title.contains(term)) + usize::from(content.contains(term))
                    })
                    .sum();
                (weight > 0).then_some((weight, item))
            })
            .collect();
        // A stable sort keeps corpus order among equal weights.
        scored.sort_by_key(|(weight, _)| std::cmp::Reverse(*weight));
        scored
            .into_iter()
            .take(limit)
            .map(|(weight, item)| ProviderItem {
                id: item.id.clone(),
                content: item.content.clone(),
                title: item.title.clone(),
                uri: item.uri.clone(),
                score: Some((weight * 100 / best) as f64 / 100.0),
                updated_at: item.updated_at.clone(),
            })
            .collect()
    }
}

impl Provider for FixtureCorpus {
    async fn search(&self, query: &str, limit: usize) -> Result<Vec<ProviderItem>, ProviderError> {
        Ok(self.rank(query, limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORPUS: &str = r#"
{"id":"a","content":"Deployments go through the release train.","title":"Release train"}
{"id":"b","content":"Use the reviewed deployment workflow for every deploy.","title":"Deployment policy"}

{"id":"c","content":"Lunch menu","updatedAt":"2026-01-01"}
"#;

    #[test]
    fn ranks_title_matches_first_and_keeps_order_on_ties() {
        let corpus = FixtureCorpus::parse(CORPUS, Path::new("c.jsonl")).unwrap();
        let got = corpus.rank("deployment  POLICY", 5);
        let ids: Vec<_> = got.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["b"]);
        assert_eq!(got[0].score, Some(0.83));
        assert!(corpus.rank("menu", 5)[0].updated_at.is_some());
        assert!(corpus.rank("nothing-matches-zzz", 5).is_empty());
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let error = FixtureCorpus::parse(
            "{\"id\":\"a\",\"content\":\"x\"}\n{\"id\":\"b\",\"contnt\":\"x\"}\n",
            Path::new("c.jsonl"),
        )
        .unwrap_err()
        .to_string();
        assert!(error.starts_with("c.jsonl:2:"), "{error}");
        assert!(error.contains("contnt"), "{error}");
        let error = FixtureCorpus::parse(r#"[{"id":"a","content":""}]"#, Path::new("c.json"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "c.json: item 1: the content is empty; every item needs a non-empty id and content"
        );
        assert!(matches!(
            FixtureCorpus::parse("  \n", Path::new("c.jsonl")),
            Err(FixtureError::Empty { .. })
        ));
    }
}
