//! Text from outside as ecp shows it (`ecp::text::outside`): a target's stderr,
//! a statement's field, a manifest value. Whatever the bytes, the rendering
//! holds no character a terminal would obey (C0 but the line breaks of a
//! block, DEL, C1, bidirectional overrides and isolates), stays within its
//! bound, and a tail of a stream keeps the stream's end.

use ecp::text::outside::{self, Tail};

/// Whether `c` must never reach a terminal raw.
fn obeyed(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// One input, as the fuzz target and the seed replay in `cargo test` run it.
pub fn run(data: &[u8]) {
    let Some((&bound, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let max = usize::from(bound % 64) + 1;

    let line = outside::line(&text, max);
    assert!(!line.chars().any(obeyed), "{line:?}");
    // Each kept character grows at most to `\u{10ffff}` (10), and the cut
    // adds one short sentence.
    assert!(line.chars().count() <= max * 10 + 40, "{line:?}");
    if text.chars().count() <= max && !text.chars().any(obeyed) {
        assert_eq!(line.chars().count(), text.chars().count());
    }

    let block = outside::block(&text, 4, max);
    assert!(!block.chars().any(|c| c != '\n' && obeyed(c)), "{block:?}");
    assert!(block.lines().count() <= 5, "{block:?}");

    let mut tail = Tail::new(max * 4);
    for chunk in rest.chunks(usize::from(bound % 7) + 1) {
        tail.push(chunk);
    }
    let kept = rest.len().min(max * 4);
    assert_eq!(tail.dropped() as usize, rest.len() - kept);
    assert_eq!(
        tail.text(),
        String::from_utf8_lossy(&rest[rest.len() - kept..])
    );
    let rendered = tail.render();
    assert!(
        !rendered.chars().any(|c| c != '\n' && obeyed(c)),
        "{rendered:?}"
    );
}
