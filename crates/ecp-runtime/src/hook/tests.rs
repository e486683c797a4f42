use super::{
    query::{MAX_AUTO_RECALL_QUERY_CODE_POINTS, auto_recall_query},
    *,
};

fn query(prompt: &str) -> Option<String> {
    auto_recall_query(prompt, &[])
}

#[test]
fn secret_shapes_and_code_never_reach_the_query() {
    let cases = [
        (
            "how do I rotate the api_key=abc123 for prod",
            "how do I rotate the for prod",
        ),
        ("explain ```rust\nfn main() {}\n``` this", "explain this"),
        ("explain ~~~ never closed", "explain"),
        ("a ``` b ~~~ c ``` d", "a d"),
        ("call with Bearer abc.def-ghi now", "call with now"),
        ("call with bEaReR\n\tabc now", "call with now"),
        ("xBearer abc", "xBearer abc"),
        (
            "token eyJhbGciOi.eyJzdWIiOiIx.SflKxwRJSM here",
            "token here",
        ),
        (
            "key ghp_abcdefghijklmnopqrstuvwxyz0123456789 end",
            "key end",
        ),
        ("set \"password\": \"hunter 2\", next", "set , next"),
        ("my_token_file=x.txt ok", "ok"),
        ("'Secret' = 'a b' c", "c"),
        ("API-KEY:\u{a0}value;rest", ";rest"),
        ("password=\"unterminated and more", "and more"),
        ("tokenizer settings", "tokenizer settings"),
        ("  hello\u{a0}\tworld\u{feff} ", "hello world"),
    ];
    for (prompt, expected) in cases {
        assert_eq!(query(prompt).as_deref(), Some(expected), "{prompt:?}");
    }
}

#[test]
fn a_prompt_of_only_code_or_secrets_makes_no_query() {
    for prompt in ["```\ncode\n```", "token=abc", "   ", "Bearer abcdef", "~~~"] {
        assert_eq!(query(prompt), None, "{prompt:?}");
    }
}

#[test]
fn the_configured_credential_is_removed_wherever_it_stands() {
    let credentials = ["s3cr3t-value".to_owned()];
    assert_eq!(
        auto_recall_query("why does s3cr3t-values3cr3t-value fail", &credentials).as_deref(),
        Some("why does fail")
    );
}

#[test]
fn the_query_keeps_512_code_points_of_at_most_4096_read() {
    let long = "a ".repeat(600);
    let kept = query(&long).unwrap();
    assert_eq!(kept.chars().count(), MAX_AUTO_RECALL_QUERY_CODE_POINTS);
    let astral = "\u{1f600}".repeat(700);
    assert_eq!(query(&astral).unwrap().chars().count(), 512);
    // What comes after the first 4096 code points is never read: a fence
    // there closes nothing.
    let prompt = format!("{}``` tail ```", "b ".repeat(2047));
    let kept = query(&prompt).unwrap();
    assert_eq!(kept.chars().count(), 512);
    assert!(!kept.contains("tail"));
    // A run of 32 word characters is a token, removed whole.
    assert_eq!(query(&"b".repeat(4094)), None);
}

#[test]
fn the_hook_reads_submitted_prompt_only() {
    let input = |value: Value| HookInput::parse(value.to_string().as_bytes());
    let event = "UserPromptSubmit";
    assert_eq!(
        input(
            json!({"hook_event_name": event, "cwd": "/r", "prompt": "expanded", "submitted_prompt": "typed"})
        ),
        Some(HookInput {
            submitted_prompt: "typed".into(),
            cwd: "/r".into()
        })
    );
    assert_eq!(
        input(json!({"hook_event_name": event, "cwd": "/r", "prompt": "expanded"})),
        None
    );
    assert_eq!(
        input(json!({"hook_event_name": event, "cwd": "/r", "submitted_prompt": " \n"})),
        None
    );
    assert_eq!(
        input(json!({"hook_event_name": "Stop", "cwd": "/r", "submitted_prompt": "x"})),
        None
    );
    assert_eq!(
        input(json!({"hook_event_name": event, "submitted_prompt": "x"})),
        None
    );
    assert_eq!(HookInput::parse(b"not json"), None);
}

#[test]
fn the_hook_command_line() {
    let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let settings = HookSettings::from_args(&args(&[
        "user-prompt-submit",
        "--repository-root",
        "/srv/r",
    ]));
    assert_eq!(
        settings,
        Ok(HookSettings {
            repository_root: "/srv/r".into(),
            timeout: Duration::from_millis(1500)
        })
    );
    let settings = HookSettings::from_args(&args(&[
        "user-prompt-submit",
        "--timeout-ms=100",
        "--repository-root=/r",
    ]));
    assert_eq!(settings.map(|s| s.timeout), Ok(Duration::from_millis(100)));
    for bad in [
        &["user-prompt-submit"][..],
        &["stop", "--repository-root", "/r"],
        &[
            "user-prompt-submit",
            "--repository-root",
            "/r",
            "--timeout-ms",
            "99",
        ],
        &[
            "user-prompt-submit",
            "--repository-root",
            "/r",
            "--timeout-ms",
            "5001",
        ],
        &["user-prompt-submit", "--repository-root"],
        &[
            "user-prompt-submit",
            "--repository-root",
            "/r",
            "--retries",
            "1",
        ],
    ] {
        assert!(HookSettings::from_args(&args(bad)).is_err(), "{bad:?}");
    }
}

#[test]
fn the_cwd_must_resolve_inside_the_root() {
    let root = std::env::temp_dir().join(format!("ecp-hook-root-{}", std::process::id()));
    let inside = root.join("sub");
    std::fs::create_dir_all(&inside).unwrap();
    let root = resolved_root(&root).unwrap();
    assert!(is_within(&root, root.to_str().unwrap()));
    assert!(is_within(&root, inside.to_str().unwrap()));
    assert!(is_within(&root, &format!("{}/sub/..", root.display())));
    assert!(!is_within(&root, &format!("{}/..", root.display())));
    assert!(!is_within(&root, &format!("{}-other", root.display())));
    assert!(!is_within(&root, "sub"));
    assert!(!is_within(&root, &format!("{}/missing", root.display())));
    assert_eq!(resolved_root(Path::new("/")), None);
    assert_eq!(resolved_root(Path::new("relative")), None);
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn the_output_is_qwens_hook_shape_or_nothing() {
    assert_eq!(output(None), "{}");
    let out: Value = serde_json::from_str(&output(Some("{\"x\":1}".into()))).unwrap();
    assert_eq!(
        out,
        json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "{\"x\":1}"}})
    );
}
