//! Property tests of the renderer on arbitrary Unicode items.

use ecp::profile::{self, ContextItem, ProviderItem, ecmascript::utf16_len};
use proptest::prelude::*;
use serde_json::Value;

use crate::contracts::output_schema;

/// Text that stresses the renderer: escapes, astral characters, controls,
/// angle brackets and plain letters, from empty to past the content bound.
fn text(max: usize) -> impl Strategy<Value = String> {
    let character = prop_oneof![
        4 => any::<char>(),
        2 => prop::sample::select(vec!['<', '>', '"', '\\', '\n', '\u{0}', '\u{1f}', '\u{2028}']),
        2 => prop::sample::select(vec!['😀', '𝄞', '\u{10FFFF}', 'é', '中']),
        3 => prop::char::range('a', 'z'),
    ];
    prop::collection::vec(character, 0..max).prop_map(|chars| chars.into_iter().collect())
}

fn score() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        Just(None),
        Just(Some(f64::NAN)),
        Just(Some(f64::INFINITY)),
        any::<f64>().prop_map(Some),
        (0u32..=100).prop_map(|n| Some(f64::from(n) / 100.0)),
    ]
}

fn item() -> impl Strategy<Value = ProviderItem> {
    (
        text(140),
        text(1300),
        prop::option::of(text(220)),
        prop::option::of(text(520)),
        score(),
        prop::option::of(text(70)),
    )
        .prop_map(
            |(id, content, title, uri, score, updated_at)| ProviderItem {
                id,
                content,
                title,
                uri,
                score,
                updated_at,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn rendered_envelopes_keep_every_promise(items in prop::collection::vec(item(), 0..8)) {
        let envelope = profile::render(&items);
        let text = &envelope.text;

        prop_assert!(utf16_len(text) <= profile::MAX_TEXT_UTF16);
        prop_assert!(!text.contains('<') && !text.contains('>'));
        let parsed: Value = serde_json::from_str(text).unwrap();
        prop_assert_eq!(&parsed, &envelope.structured);
        prop_assert!(output_schema().is_valid(&envelope.structured));

        // Provider order: the output is a prefix of the compacted first five
        // valid items (with content possibly cut), never reordered.
        let candidates: Vec<ContextItem> = items
            .iter()
            .take(profile::MAX_ITEMS)
            .filter_map(ContextItem::compact)
            .collect();
        prop_assert!(envelope.items.len() <= candidates.len());
        for (out, candidate) in envelope.items.iter().zip(&candidates) {
            prop_assert_eq!(&out.id, &candidate.id);
            prop_assert!(!out.content.is_empty());
            prop_assert!(candidate.content.starts_with(&out.content));
        }
    }
}
