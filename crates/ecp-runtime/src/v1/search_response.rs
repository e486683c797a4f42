//! A fast reader of a Generic HTTP Search V1 response: the `items` of the
//! document read straight into [`ProviderItem`]s, without a
//! [`serde_json::Value`] tree (its maps, hashes and copied strings) first.
//!
//! It agrees with the binding's reading by value
//! (`binding::parse_search_document`, the reference) on every document it
//! answers, and answers `None` for everything it does not decide itself, so
//! that the caller falls back to the reference: a document serde_json
//! refuses (an overflowing number, a lone surrogate, nesting past 128
//! levels, a top level that is not an object, `items` that is not an array).
//! Duplicate keys keep the last value, as `JSON.parse` and the value
//! reading do. Values it does not keep are still walked through
//! serde_json's `deserialize_any` (`Skip`, not serde's `IgnoredAny`,
//! whose skipping serde_json does without its nesting limit), so a document
//! nested too deeply anywhere is refused here as the reference refuses it.
//! The fuzz target `http_body` holds the two readings equal.

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::ProviderItem;

/// A value read only to be passed over, through `deserialize_any` so that
/// serde_json counts its nesting as it does for a `Value`.
struct Skip;

impl<'de> serde::Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Skip)
    }
}

/// The first `limit` items with an `id` and a `content`, in order; `None`
/// when the reference must decide.
pub fn read_items(text: &str, limit: usize) -> Option<Vec<ProviderItem>> {
    let document: Document = serde_json::from_str(text).ok()?;
    let items = document.items?;
    Some(
        items
            .into_iter()
            .map(|item| item.0)
            .filter(|item| !item.id.is_empty() && !item.content.is_empty())
            .take(limit)
            .collect(),
    )
}

/// The top-level object; `items` is `None` when absent (the reference
/// decides: malformed).
struct Document {
    items: Option<Vec<Item>>,
}

impl<'de> serde::Deserialize<'de> for Document {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(DocumentVisitor)
    }
}

struct DocumentVisitor;

impl<'de> Visitor<'de> for DocumentVisitor {
    type Value = Document;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a search response object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Document, A::Error> {
        let mut items = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "items" {
                // A non-array `items` fails here: the reference decides.
                items = Some(map.next_value::<Vec<Item>>()?);
            } else {
                map.next_value::<Skip>()?;
            }
        }
        Ok(Document { items })
    }
}

/// One item of any JSON type: a non-object is an item without `id`.
struct Item(ProviderItem);

impl<'de> serde::Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ItemVisitor)
    }
}

/// A field value as the reference reads it: a string, a number (for
/// `score`), null, or something else.
enum Scalar {
    Text(String),
    Number(f64),
    Null,
    Other,
}

impl Scalar {
    fn text(self) -> Option<String> {
        match self {
            Scalar::Text(text) => Some(text),
            _ => None,
        }
    }
}

struct ItemVisitor;

impl<'de> Visitor<'de> for ItemVisitor {
    type Value = Item;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an item")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item, A::Error> {
        let (mut id, mut content, mut title, mut uri) = (None, None, None, None);
        let (mut snake, mut camel, mut score) = (None, None, None);
        // Duplicate keys keep the last value, as JSON.parse does.
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let slot = match key.as_ref() {
                "id" => &mut id,
                "content" => &mut content,
                "title" => &mut title,
                "uri" => &mut uri,
                "updated_at" => &mut snake,
                "updatedAt" => &mut camel,
                "score" => &mut score,
                _ => {
                    map.next_value::<Skip>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value::<Scalar>()?);
        }
        let text = |field: Option<Scalar>| field.and_then(Scalar::text);
        // `updated_at` wins when present and not null, even when it is not
        // a string (then there is none).
        let updated_at = match snake {
            Some(Scalar::Null) | None => text(camel),
            Some(field) => field.text(),
        };
        let score = match score {
            Some(Scalar::Number(score)) if score.is_finite() => Some(score),
            _ => None,
        };
        Ok(Item(ProviderItem {
            id: text(id).unwrap_or_default(),
            content: text(content).unwrap_or_default(),
            title: text(title),
            uri: text(uri),
            score,
            updated_at,
        }))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Item, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Item(ProviderItem::default()))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Item, E> {
        Ok(Item(ProviderItem::default()))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Item, E> {
        Ok(Item(ProviderItem::default()))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Item, E> {
        Ok(Item(ProviderItem::default()))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Item, E> {
        Ok(Item(ProviderItem::default()))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Item, E> {
        Ok(Item(ProviderItem::default()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Item, E> {
        Ok(Item(ProviderItem::default()))
    }
}

impl<'de> serde::Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Scalar, E> {
        Ok(Scalar::Text(text.to_owned()))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Scalar, E> {
        Ok(Scalar::Text(text))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }

    // As `Value::as_f64` reads numbers.
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Scalar, E> {
        Ok(Scalar::Number(n as f64))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Scalar, E> {
        Ok(Scalar::Number(n as f64))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Scalar, E> {
        Ok(Scalar::Number(n))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Scalar::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Scalar::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::read_items;
    use crate::v1::binding::parse_search_document;

    /// Hand-written documents: empty and wrong shapes, duplicate keys, a
    /// number past f64, a lone surrogate, and nesting past serde_json's 128
    /// levels in every place a value is passed over.
    fn edge_documents() -> Vec<String> {
        let mut documents = vec![
            r#"{"items":[]}"#.to_owned(),
            r#"{"items":{}}"#.to_owned(),
            r#"{"items":null}"#.to_owned(),
            r#"{}"#.to_owned(),
            r#"[]"#.to_owned(),
            r#"{"items":[1,"x",null,[],true]}"#.to_owned(),
            r#"{"items":[{"id":"a","content":"b"}],"items":[{"id":"c","content":"d"}]}"#.to_owned(),
            r#"{"items":[{"id":"a","content":"b"}],"items":7}"#.to_owned(),
            r#"{"items":7,"items":[{"id":"a","content":"b"}]}"#.to_owned(),
            r#"{"items":[{"id":"a","content":"b","score":1e400}]}"#.to_owned(),
            r#"{"items":[{"id":"\ud800","content":"b"}]}"#.to_owned(),
        ];
        // Nesting past serde_json's 128 levels, in every place a value is
        // passed over: the reference refuses these documents.
        for depth in [120, 126, 127, 128, 200] {
            let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            for place in [
                format!(r#"{{"items":[{{"id":"a","content":"b"}}],"x":{deep}}}"#),
                format!(r#"{{"items":[{{"id":"a","content":"b","other":{deep}}}]}}"#),
                format!(r#"{{"items":[{{"id":"a","content":"b","title":{deep}}}]}}"#),
                format!(r#"{{"items":[{deep},{{"id":"a","content":"b"}}]}}"#),
            ] {
                documents.push(place);
            }
        }
        documents
    }

    /// `count` seeded documents built from every kind of field value, key
    /// order, duplicate and item shape.
    fn generated_documents(count: usize) -> Vec<String> {
        let values = [
            r#""plain""#,
            r#""esc\"aped \u00e9 \ud83d\ude00 \n""#,
            r#""""#,
            "null",
            "0",
            "-0",
            "0.91",
            "1e21",
            "18446744073709551615",
            "-9223372036854775808",
            "true",
            "[1,[2]]",
            r#"{"a":{"b":null}}"#,
        ];
        let keys = [
            "id",
            "content",
            "title",
            "uri",
            "score",
            "updated_at",
            "updatedAt",
            "other",
        ];
        let mut documents = Vec::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..count {
            let mut items = Vec::new();
            for _ in 0..next(8) {
                let mut fields = vec![
                    format!(r#""id":"i{}""#, next(3)),
                    format!(r#""content":"c{}""#, next(3)),
                ];
                for _ in 0..next(9) {
                    fields.push(format!(
                        r#""{}":{}"#,
                        keys[next(keys.len())],
                        values[next(values.len())]
                    ));
                }
                // Shuffle by rotating: duplicates may now come first or last.
                let turn = next(fields.len());
                fields.rotate_left(turn);
                items.push(format!("{{{}}}", fields.join(",")));
            }
            documents.push(format!(
                r#"{{"x":1,"items":[{}],"y":[{{}}]}}"#,
                items.join(",")
            ));
        }
        documents
    }

    /// Documents built from every kind of field value, key order,
    /// duplicate and item shape: wherever the typed reader answers, it
    /// answers what the reference does.
    #[test]
    fn the_typed_reader_agrees_with_the_reference() {
        let mut documents = edge_documents();
        documents.extend(generated_documents(3000));
        let mut answered = 0;
        for document in &documents {
            for limit in [0, 1, 5] {
                if let Some(fast) = read_items(document, limit) {
                    answered += 1;
                    assert_eq!(
                        Ok(fast),
                        parse_search_document(document, limit),
                        "{document}"
                    );
                }
            }
        }
        assert!(answered > 9000, "the typed reader answered only {answered}");
        let deep = format!(
            r#"{{"items":[],"x":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        for refused in [
            r#"{"items":{}}"#,
            "[]",
            r#"{"items":[{"score":1e400}]}"#,
            &deep,
        ] {
            assert_eq!(read_items(refused, 5), None, "{refused}");
        }
        assert_eq!(
            parse_search_document(&deep, 5),
            Err(crate::ProviderError::Malformed)
        );
    }
}
