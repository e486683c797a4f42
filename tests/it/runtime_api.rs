//! The runtime crate's public API, as rustdoc sees it: every path an
//! extension can name, with its signature, held by a snapshot
//! (`snapshots/it__runtime_api__public_api.snap`) so that no change to it
//! lands unreviewed, and at most 35 items.
//!
//! rustdoc's JSON output (`--output-format json`, unstable; the stable
//! toolchain allows it with `RUSTC_BOOTSTRAP=1`, in a target folder of its
//! own because that variable changes every unit's fingerprint) with hidden
//! items included: a hidden item is listed as hidden (`internal`, and the
//! old paths earlier generated code still names) and not walked into.

use std::{collections::BTreeSet, fmt::Write as _, path::Path, process::Command};

use serde_json::Value;

/// The most documented items an extension may have to learn.
const MAX_ITEMS: usize = 35;

/// The runtime's rustdoc JSON, hidden items included.
fn rustdoc_json() -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = root.join("target/runtime-api");
    let output = Command::new(env!("CARGO"))
        .args([
            "rustdoc",
            "--quiet",
            "--offline",
            "-p",
            "ecp-runtime",
            "--lib",
            "--",
        ])
        .args(["-Zunstable-options", "--output-format", "json"])
        .arg("--document-hidden-items")
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo rustdoc failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(target.join("doc/ecp_runtime.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The one key of an externally tagged enum value and its content.
fn tagged(value: &Value) -> (&str, &Value) {
    match value {
        Value::Object(map) if map.len() == 1 => {
            let (key, inner) = map.iter().next().unwrap();
            (key.as_str(), inner)
        }
        Value::String(unit) => (unit.as_str(), &Value::Null),
        other => panic!("not a tagged value: {other}"),
    }
}

fn hidden(item: &Value) -> bool {
    item["attrs"]
        .as_array()
        .is_some_and(|attrs| attrs.iter().any(|a| a.to_string().contains("doc(hidden)")))
}

/// A type as Rust writes it (enough of rustdoc's `Type` for this crate).
fn ty(value: &Value) -> String {
    let (kind, inner) = tagged(value);
    match kind {
        "primitive" | "generic" => inner.as_str().unwrap().to_owned(),
        "resolved_path" => path_with_args(inner),
        "borrowed_ref" => {
            let lifetime = inner["lifetime"]
                .as_str()
                .map(|l| format!("{l} "))
                .unwrap_or_default();
            let mutable = if inner["is_mutable"] == true {
                "mut "
            } else {
                ""
            };
            format!("&{lifetime}{mutable}{}", ty(&inner["type"]))
        }
        "slice" => format!("[{}]", ty(inner)),
        "array" => format!(
            "[{}; {}]",
            ty(&inner["type"]),
            inner["len"].as_str().unwrap()
        ),
        "tuple" => {
            let parts: Vec<_> = inner.as_array().unwrap().iter().map(ty).collect();
            format!("({})", parts.join(", "))
        }
        "impl_trait" => format!("impl {}", bounds(inner)),
        "dyn_trait" => {
            let traits: Vec<_> = inner["traits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| path_with_args(&t["trait"]))
                .collect();
            format!("dyn {}", traits.join(" + "))
        }
        "qualified_path" => format!(
            "<{} as {}>::{}",
            ty(&inner["self_type"]),
            path_with_args(&inner["trait"]),
            inner["name"].as_str().unwrap()
        ),
        "raw_pointer" => format!(
            "*{} {}",
            if inner["is_mutable"] == true {
                "mut"
            } else {
                "const"
            },
            ty(&inner["type"])
        ),
        other => format!("<{other}>"),
    }
}

/// `Path<Args>` of a resolved path or a trait bound's trait.
fn path_with_args(path: &Value) -> String {
    let mut out = path["path"].as_str().unwrap().to_owned();
    if path["args"].is_object() {
        out.push_str(&generic_args(&path["args"]));
    }
    out
}

fn generic_args(args: &Value) -> String {
    let (kind, inner) = tagged(args);
    match kind {
        "angle_bracketed" => {
            let mut parts: Vec<String> = inner["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|arg| {
                    let (kind, value) = tagged(arg);
                    match kind {
                        "lifetime" => value.as_str().unwrap().to_owned(),
                        "type" => ty(value),
                        "const" => value["expr"].as_str().unwrap_or("_").to_owned(),
                        _ => "_".to_owned(),
                    }
                })
                .collect();
            for constraint in inner["constraints"].as_array().unwrap() {
                let value = match tagged(&constraint["binding"]) {
                    ("constraint", list) => bounds(list),
                    (_, term) => match tagged(term) {
                        ("type", t) => ty(t),
                        (_, constant) => constant["expr"].as_str().unwrap_or("_").to_owned(),
                    },
                };
                parts.push(format!(
                    "{} = {value}",
                    constraint["name"].as_str().unwrap()
                ));
            }
            if parts.is_empty() {
                String::new()
            } else {
                format!("<{}>", parts.join(", "))
            }
        }
        "parenthesized" => {
            let inputs: Vec<_> = inner["inputs"].as_array().unwrap().iter().map(ty).collect();
            let output = if inner["output"].is_null() {
                String::new()
            } else {
                format!(" -> {}", ty(&inner["output"]))
            };
            format!("({}){output}", inputs.join(", "))
        }
        other => format!("<{other}>"),
    }
}

fn bounds(list: &Value) -> String {
    let parts: Vec<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|bound| {
            let (kind, inner) = tagged(bound);
            match kind {
                "trait_bound" => {
                    let maybe = if inner["modifier"] == "maybe" {
                        "?"
                    } else {
                        ""
                    };
                    format!("{maybe}{}", path_with_args(&inner["trait"]))
                }
                "outlives" => inner.as_str().unwrap().to_owned(),
                other => format!("<{other}>"),
            }
        })
        .collect();
    parts.join(" + ")
}

/// `<P: Provider, R>` and ` where ...` of an item's generics (synthetic
/// parameters, an argument's `impl Trait`, left out).
fn generics(generics: &Value) -> (String, String) {
    let params: Vec<String> = generics["params"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|param| {
            let name = param["name"].as_str().unwrap();
            let (kind, inner) = tagged(&param["kind"]);
            match kind {
                "lifetime" => Some(name.to_owned()),
                "type" if inner["is_synthetic"] == true => None,
                "type" if inner["bounds"].as_array().unwrap().is_empty() => Some(name.to_owned()),
                "type" => Some(format!("{name}: {}", bounds(&inner["bounds"]))),
                "const" => Some(format!("const {name}: {}", ty(&inner["type"]))),
                _ => None,
            }
        })
        .collect();
    let predicates: Vec<String> = generics["where_predicates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|predicate| {
            let (kind, inner) = tagged(predicate);
            match kind {
                "bound_predicate" => {
                    format!("{}: {}", ty(&inner["type"]), bounds(&inner["bounds"]))
                }
                other => format!("<{other}>"),
            }
        })
        .collect();
    let params = if params.is_empty() {
        String::new()
    } else {
        format!("<{}>", params.join(", "))
    };
    let predicates = if predicates.is_empty() {
        String::new()
    } else {
        format!(" where {}", predicates.join(", "))
    };
    (params, predicates)
}

fn function(name: &str, function: &Value) -> String {
    let sig = &function["sig"];
    let inputs: Vec<String> = sig["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|input| {
            let (name, t) = (input[0].as_str().unwrap(), ty(&input[1]));
            match (name, t.as_str()) {
                ("self", "Self") => "self".to_owned(),
                ("self", "&Self") => "&self".to_owned(),
                ("self", "&mut Self") => "&mut self".to_owned(),
                _ => format!("{name}: {t}"),
            }
        })
        .collect();
    let output = if sig["output"].is_null() {
        String::new()
    } else {
        format!(" -> {}", ty(&sig["output"]))
    };
    let header = &function["header"];
    let mut qualifiers = String::new();
    for (flag, word) in [
        ("is_const", "const "),
        ("is_async", "async "),
        ("is_unsafe", "unsafe "),
    ] {
        if header[flag] == true {
            qualifiers.push_str(word);
        }
    }
    let (params, predicates) = generics(&function["generics"]);
    format!(
        "{qualifiers}fn {name}{params}({}){output}{predicates}",
        inputs.join(", ")
    )
}

/// The API from the crate's root down: its lines, the number of items (not
/// hidden) listed, the hidden paths, and what has no documentation.
struct Walk<'a> {
    index: &'a serde_json::Map<String, Value>,
    out: String,
    items: usize,
    hidden: BTreeSet<String>,
    undocumented: Vec<String>,
}

impl<'a> Walk<'a> {
    fn item(&self, id: &Value) -> Option<&'a Value> {
        self.index.get(&id.to_string())
    }

    fn module(&mut self, path: &str, module: &Value) {
        for id in module["items"].as_array().unwrap() {
            let item = self.item(id).unwrap().clone();
            let (kind, inner) = tagged(&item["inner"]);
            if kind == "use" {
                let name = inner["name"].as_str().unwrap();
                let full = format!("{path}::{name}");
                match self.item(&inner["id"]).cloned() {
                    // A re-export of an item of this crate: listed where it
                    // can be named.
                    Some(target) if target["crate_id"] == 0 => {
                        if hidden(&item) || hidden(&target) {
                            self.hidden.insert(full);
                        } else {
                            self.entry(&full, &target);
                        }
                    }
                    _ if hidden(&item) => {
                        self.hidden.insert(full);
                    }
                    _ => {
                        self.items += 1;
                        writeln!(
                            self.out,
                            "pub use {} as {full}",
                            inner["source"].as_str().unwrap()
                        )
                        .unwrap();
                    }
                }
                continue;
            }
            if kind == "impl" {
                continue;
            }
            let full = format!("{path}::{}", item["name"].as_str().unwrap());
            if hidden(&item) {
                self.hidden.insert(full);
            } else {
                self.entry(&full, &item);
            }
        }
    }

    /// Notes `item` at `path` when it has no documentation.
    fn documented(&mut self, path: &str, item: &Value) {
        if item["docs"].as_str().is_none_or(|d| d.trim().is_empty()) {
            self.undocumented.push(path.to_owned());
        }
    }

    fn entry(&mut self, path: &str, item: &Value) {
        self.items += 1;
        self.documented(path, item);
        if item["attrs"].to_string().contains("non_exhaustive") {
            writeln!(self.out, "#[non_exhaustive]").unwrap();
        }
        let (kind, inner) = tagged(&item["inner"]);
        let name = path.rsplit("::").next().unwrap();
        match kind {
            "module" => {
                writeln!(self.out, "mod {path}").unwrap();
                self.module(path, inner);
            }
            "function" => writeln!(self.out, "{}", function(path, inner)).unwrap(),
            "constant" => {
                writeln!(self.out, "const {path}: {}", ty(&inner["type"])).unwrap();
            }
            "struct" => {
                let (params, predicates) = generics(&inner["generics"]);
                writeln!(self.out, "struct {path}{params}{predicates}").unwrap();
                let (shape, fields) = tagged(&inner["kind"]);
                let fields = match shape {
                    "plain" => fields["fields"].as_array().cloned().unwrap_or_default(),
                    "tuple" => fields.as_array().cloned().unwrap_or_default(),
                    _ => Vec::new(),
                };
                for field in fields.iter().filter(|f| !f.is_null()) {
                    let field = self.item(field).unwrap().clone();
                    let (_, t) = tagged(&field["inner"]);
                    writeln!(
                        self.out,
                        "    pub {}: {}",
                        field["name"].as_str().unwrap(),
                        ty(t)
                    )
                    .unwrap();
                }
                self.impls(path, inner);
            }
            "enum" => {
                writeln!(self.out, "enum {path}").unwrap();
                for variant in inner["variants"].as_array().unwrap() {
                    let variant = self.item(variant).unwrap().clone();
                    let (_, v) = tagged(&variant["inner"]);
                    let (shape, fields) = tagged(&v["kind"]);
                    let fields: Vec<String> = match shape {
                        "tuple" => fields
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|f| {
                                let (_, t) = tagged(&self.item(f).unwrap()["inner"]);
                                ty(t)
                            })
                            .collect(),
                        "struct" => fields["fields"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|f| {
                                let field = self.item(f).unwrap();
                                let (_, t) = tagged(&field["inner"]);
                                format!("{}: {}", field["name"].as_str().unwrap(), ty(t))
                            })
                            .collect(),
                        _ => Vec::new(),
                    };
                    let shown = match shape {
                        "tuple" => format!("({})", fields.join(", ")),
                        "struct" => format!(" {{ {} }}", fields.join(", ")),
                        _ => String::new(),
                    };
                    writeln!(self.out, "    {}{shown}", variant["name"].as_str().unwrap()).unwrap();
                }
                self.impls(path, inner);
            }
            "trait" => {
                let (params, predicates) = generics(&inner["generics"]);
                writeln!(
                    self.out,
                    "trait {path}{params}: {}{predicates}",
                    bounds(&inner["bounds"])
                )
                .unwrap();
                for member in inner["items"].as_array().unwrap() {
                    let member = self.item(member).unwrap().clone();
                    let name = member["name"].as_str().unwrap();
                    self.documented(&format!("{path}::{name}"), &member);
                    let line = match tagged(&member["inner"]) {
                        ("function", f) => function(name, f),
                        ("assoc_type", t) => format!("type {name}: {}", bounds(&t["bounds"])),
                        ("assoc_const", c) => format!("const {name}: {}", ty(&c["type"])),
                        (other, _) => format!("{other} {name}"),
                    };
                    writeln!(self.out, "    {line}").unwrap();
                }
            }
            other => writeln!(self.out, "{other} {path} ({name})").unwrap(),
        }
    }

    /// A type's inherent methods and the traits it implements by hand or
    /// by derive (auto traits and blanket impls left out).
    fn impls(&mut self, path: &str, inner: &Value) {
        let mut traits = BTreeSet::new();
        for id in inner["impls"].as_array().unwrap() {
            let (_, imp) = tagged(&self.item(id).unwrap()["inner"]);
            if imp["is_synthetic"] == true || !imp["blanket_impl"].is_null() {
                continue;
            }
            if imp["trait"].is_object() {
                // The compiler's own markers of a derive are not API.
                let name = path_with_args(&imp["trait"]);
                if !matches!(name.as_str(), "StructuralPartialEq" | "TrivialClone") {
                    traits.insert(name);
                }
                continue;
            }
            for member in imp["items"].as_array().unwrap() {
                let member = self.item(member).unwrap().clone();
                if member["visibility"] != "public" || hidden(&member) {
                    continue;
                }
                self.documented(&format!("{path}::{}", member["name"]), &member);
                match tagged(&member["inner"]) {
                    ("function", f) => {
                        let line = function(member["name"].as_str().unwrap(), f);
                        writeln!(self.out, "    {line}").unwrap();
                    }
                    ("assoc_const", c) => writeln!(
                        self.out,
                        "    const {}: {}",
                        member["name"].as_str().unwrap(),
                        ty(&c["type"])
                    )
                    .unwrap(),
                    _ => {}
                }
            }
        }
        if !traits.is_empty() {
            let traits: Vec<_> = traits.into_iter().collect();
            writeln!(self.out, "    impl {}", traits.join(", ")).unwrap();
        }
    }
}

#[test]
fn the_runtime_api_is_small_documented_and_unchanged() {
    let json = rustdoc_json();
    let index = json["index"].as_object().unwrap();
    let root = &index[&json["root"].to_string()];
    let mut walk = Walk {
        index,
        out: String::new(),
        items: 0,
        hidden: BTreeSet::new(),
        undocumented: Vec::new(),
    };
    let (_, module) = tagged(&root["inner"]);
    walk.module("ecp_runtime", module);
    let hidden: Vec<_> = walk.hidden.iter().cloned().collect();
    let api = format!(
        "{}\n{} items\nhidden (not part of the API): {}\n",
        walk.out,
        walk.items,
        hidden.join(", ")
    );
    insta::assert_snapshot!("public_api", api);
    assert!(
        walk.items <= MAX_ITEMS,
        "the runtime's API has {} items, more than {MAX_ITEMS}:\n{api}",
        walk.items
    );
    // The one module ecp reaches into, and the old paths that earlier
    // generated code still names, are hidden.
    for path in [
        "ecp_runtime::internal",
        "ecp_runtime::binding",
        "ecp_runtime::proxy",
        "ecp_runtime::search_response",
    ] {
        assert!(
            hidden.iter().any(|h| h == path),
            "{path} is not hidden: {api}"
        );
    }
    assert!(
        walk.undocumented.is_empty(),
        "undocumented: {:?}",
        walk.undocumented
    );
}
