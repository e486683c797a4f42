//! What `ecp check --cassette` and the scripted upstream read from outside:
//! a cassette file (someone else's, in a reviewed repository), the requests
//! a target sends, the lines it writes, and the recorded answers bent into
//! hostile ones. Whatever the bytes: no panic; a cassette that parses is
//! within its bounds; a request's marker is one of the suite's words; a
//! line rewritten for lone surrogates is rewritten once and still reads
//! wherever `JSON.parse` read it; every hostile variant of a document is JSON.

use ecp::check::{
    cassette::Cassette,
    lines, mutate,
    upstream::{SeenRequest, markers},
};

/// One input, as the fuzz target and the seed replay in `cargo test` run it.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);

    if let Ok(cassette) = Cassette::parse(&text) {
        assert!(!cassette.exchanges.is_empty() && cassette.exchanges.len() <= 64);
        assert!(cassette.base_path.starts_with('/'));
        // A cassette answers the request it recorded, whatever its method.
        let request = SeenRequest {
            method: cassette.exchanges[0].method.clone(),
            path: cassette.exchanges[0].target.clone(),
            headers: Vec::new(),
            body: cassette.exchanges[0].body.clone(),
        };
        assert!(cassette.answer_for(&request).is_some());
    }

    let middle = (0..=text.len() / 2)
        .rev()
        .find(|&at| text.is_char_boundary(at))
        .unwrap_or(0);
    let (path, body) = text.split_at(middle);
    let (path, body) = (path.to_owned(), body.to_owned());
    let request = SeenRequest {
        method: "POST".into(),
        path,
        headers: Vec::new(),
        body,
    };
    if let Some((marker, _)) = request.marker() {
        assert!(markers().contains(&marker.as_str()));
    }

    let js = ecp::providers::http::parse_json_like_javascript(&text);
    if let Some(rewritten) = lines::as_json_parse_reads(data) {
        // Once is enough, and what JSON.parse read still reads.
        assert_eq!(lines::as_json_parse_reads(&rewritten), None);
        let rewritten = std::str::from_utf8(&rewritten).expect("UTF-8 in, UTF-8 out");
        if js.is_some() {
            assert!(
                ecp::providers::http::parse_json_like_javascript(rewritten).is_some(),
                "{rewritten:?}"
            );
        }
    }

    if let Some(document) = js {
        let seed = data.first().copied().unwrap_or(0).into();
        let hostile = mutate::hostile(&document, seed, data.len() as u64);
        let hostile = std::str::from_utf8(&hostile).expect("UTF-8");
        assert!(
            ecp::providers::http::parse_json_like_javascript(hostile).is_some(),
            "{hostile:?}"
        );
    }
}
