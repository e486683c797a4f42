//! `ecp new`: render a provider extension from the Tera templates embedded
//! from `templates/`, plus the runtime crate vendored verbatim ([`vendor`])
//! and the provider's own `src/provider.rs` (a V1 mapping on the runtime's
//! HTTP client, to change), then write it all at once.
//!
//! Rendering happens entirely in memory first ([`plan`]); [`write`] then
//! puts the tree into place through a temporary sibling folder and one
//! rename, so a failure never leaves a half-written extension behind.

pub mod typescript;
pub mod vendor;

use std::path::{Path, PathBuf};

use include_dir::{Dir, include_dir};
use serde::Serialize;

use crate::name::{NameError, env_prefix, validate_name};

static TEMPLATES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/templates");

/// Which kind of extension to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    /// A Rust crate: the provider's own adapter, built into `dist/main`.
    Local,
    /// A TypeScript project on the MCP TypeScript SDK, bundled by esbuild
    /// into `dist/main.js`, which Qwen runs with `node`.
    LocalTs,
    /// A manifest-only extension pointing at a provider-operated endpoint.
    Remote,
}

impl Template {
    fn folder(self) -> &'static str {
        match self {
            Template::Local => "local",
            Template::LocalTs => "local-ts",
            Template::Remote => "remote",
        }
    }
}

/// Everything a template needs, validated.
#[derive(Debug, Clone)]
pub struct NewSettings {
    pub name: String,
    pub template: Template,
    pub description: String,
    /// `ACME_CONTEXT` for `acme-context`, unless chosen.
    pub env_prefix: String,
    /// The remote endpoint (remote template only).
    pub endpoint: Option<String>,
    /// dist/main built to serve over HTTP rather than small (local template
    /// only): `opt-level = 3` in the release profile.
    pub server: bool,
    /// How the service authenticates the adapter (local templates).
    pub auth: Auth,
}

/// How a local template's service authenticates the adapter: the manifest,
/// the provider's `from_env` and the generated tests agree on it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Auth {
    /// `authorization: Bearer <*_TOKEN>` (Generic HTTP Search V1's).
    #[default]
    Bearer,
    /// `<name>: <*_TOKEN>`, e.g. `x-api-key`.
    Header(String),
    /// No credential: the manifest passes no `*_TOKEN` at all.
    None,
}

impl std::str::FromStr for Auth {
    type Err = String;

    /// `none`, `bearer` or `header:NAME` (`NAME` an HTTP header name).
    fn from_str(text: &str) -> Result<Auth, String> {
        match text {
            "none" => Ok(Auth::None),
            "bearer" => Ok(Auth::Bearer),
            _ => match text.strip_prefix("header:") {
                Some(name) if RUNTIME_HEADERS.contains(&name.to_ascii_lowercase().as_str()) => {
                    Err(format!(
                        "`{name}` is a header the runtime sets itself (`--auth bearer` sends `authorization`)"
                    ))
                }
                Some(name) if is_header_name(name) => Ok(Auth::Header(name.to_ascii_lowercase())),
                Some(name) => Err(format!(
                    "`{}` is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)",
                    crate::text::outside::line(name, 80)
                )),
                None => Err("expected none, bearer or header:NAME (e.g. header:x-api-key)".into()),
            },
        }
    }
}

/// The headers the runtime sets itself, which a credential cannot take.
const RUNTIME_HEADERS: &[&str] = &[
    "authorization",
    "host",
    "content-type",
    "content-length",
    "accept",
    "connection",
    "transfer-encoding",
];

/// A header name as HTTP defines a token (at most 64 bytes here).
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// One file of the generated tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Relative, with `/` separators.
    pub path: String,
    pub contents: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error("the name `{name}` {reason}")]
    Name {
        name: String,
        reason: NameError,
        suggestion: String,
    },
    #[error(
        "the environment prefix `{0}` must be upper-case ASCII letters, digits and underscores, starting with a letter"
    )]
    EnvPrefix(String),
    #[error(
        "the endpoint `{0}` must be an absolute https URL without user info, query or fragment"
    )]
    Endpoint(String),
    #[error(
        "the description must be one line of at most 200 characters, without control characters"
    )]
    Description,
    /// The one write rule ([`crate::writes`]) refused a place inside the
    /// target folder (a link, a special file, the wrong kind).
    #[error("{0}")]
    Unsafe(crate::writes::WriteProblem),
    #[error("{} is not empty; choose another --dir or pass --force to write into it", .0.display())]
    NotEmpty(PathBuf),
    #[error("{} exists and is not a folder", .0.display())]
    NotAFolder(PathBuf),
    #[error("template {path}: {message}")]
    Template { path: String, message: String },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl ScaffoldError {
    /// What to do about it, when there is something to suggest.
    pub fn help(&self) -> Option<String> {
        match self {
            ScaffoldError::Name { suggestion, .. } => Some(format!("try `{suggestion}`")),
            ScaffoldError::EnvPrefix(_) => Some("for example --env-prefix ACME_CONTEXT".into()),
            ScaffoldError::Endpoint(_) => {
                Some("for example --endpoint https://context.acme.example/mcp".into())
            }
            ScaffoldError::Unsafe(problem) => problem.help(),
            _ => None,
        }
    }
}

/// Checks an extension name with the rules `ecp lint` applies.
pub fn check_name(name: &str) -> Result<(), ScaffoldError> {
    validate_name(name).map_err(|reason| ScaffoldError::Name {
        name: name.to_owned(),
        reason,
        suggestion: NameError::suggestion(name),
    })
}

pub fn check_env_prefix(prefix: &str) -> Result<(), ScaffoldError> {
    let mut chars = prefix.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !prefix.ends_with('_');
    if valid {
        Ok(())
    } else {
        Err(ScaffoldError::EnvPrefix(prefix.to_owned()))
    }
}

/// The endpoint, normalized, or why it is refused.
pub fn check_endpoint(endpoint: &str) -> Result<String, ScaffoldError> {
    let refuse = || ScaffoldError::Endpoint(endpoint.to_owned());
    let url = url::Url::parse(endpoint.trim()).map_err(|_| refuse())?;
    let clean = url.scheme() == "https"
        && url.host().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && url.fragment().is_none();
    clean.then(|| url.to_string()).ok_or_else(refuse)
}

pub fn check_description(description: &str) -> Result<(), ScaffoldError> {
    if description.chars().any(char::is_control) || description.chars().count() > 200 {
        Err(ScaffoldError::Description)
    } else {
        Ok(())
    }
}

/// The description `--yes` takes.
pub fn default_description(name: &str) -> String {
    let org = name.split('-').next().unwrap_or(name);
    let mut chars = org.chars();
    let org: String = chars
        .next()
        .map(|c| c.to_ascii_uppercase())
        .into_iter()
        .chain(chars)
        .collect();
    format!("Search {org}'s knowledge from Qwen Code.")
}

/// The endpoint `--yes` takes for the remote template.
pub fn default_endpoint(name: &str) -> String {
    let org = name.split('-').next().unwrap_or(name);
    format!("https://context.{org}.example/mcp")
}

impl NewSettings {
    /// Settings with every default for `name`.
    pub fn with_defaults(name: &str, template: Template) -> NewSettings {
        NewSettings {
            name: name.to_owned(),
            template,
            description: default_description(name),
            env_prefix: env_prefix(name),
            endpoint: (template == Template::Remote).then(|| default_endpoint(name)),
            server: false,
            auth: Auth::Bearer,
        }
    }

    /// Validates every value.
    pub fn check(&self) -> Result<(), ScaffoldError> {
        check_name(&self.name)?;
        check_env_prefix(&self.env_prefix)?;
        check_description(&self.description)?;
        if let Some(endpoint) = &self.endpoint {
            check_endpoint(endpoint)?;
        }
        Ok(())
    }
}

#[derive(Serialize)]
struct TemplateContext<'a> {
    name: &'a str,
    crate_name: String,
    description: &'a str,
    description_json: String,
    description_toml: String,
    env_prefix: &'a str,
    endpoint: Option<String>,
    /// The endpoint's host (remote template: the TLS proxy example).
    endpoint_host: Option<String>,
    /// The endpoint's path (remote template: what the proxy routes).
    endpoint_path: Option<String>,
    /// The environment prefix of a `{name}-adapter` crate (remote template:
    /// how to run the adapter behind the endpoint).
    adapter_env_prefix: String,
    ecp_version: &'static str,
    /// Where ecp's source lives (the crate's `repository`): pipelines
    /// install ecp from there, pinned to this version's tag.
    ecp_repository: &'static str,
    /// `owner/name` of ecp's repository, whose `action.yml` the generated
    /// release workflows use.
    ecp_action: String,
    /// The commit of this ecp when it is known (the action is pinned to
    /// it), else its tag.
    ecp_action_ref: String,
    /// The release profile built to serve over HTTP (`ecp new --server`).
    server: bool,
    /// `bearer`, `header` or `none` (`ecp new --auth`).
    auth: &'static str,
    /// The header of `--auth header:NAME`.
    auth_header: Option<String>,
    /// The vendored runtime's version and tree checksum.
    runtime_version: &'static str,
    runtime_sha256: String,
}

/// `owner/name` of ecp's GitHub repository (from the crate's `repository`).
pub fn ecp_action_repository() -> String {
    let repository = env!("CARGO_PKG_REPOSITORY");
    repository
        .strip_prefix("https://github.com/")
        .unwrap_or(repository)
        .trim_end_matches('/')
        .to_owned()
}

/// Where a template file lands in the generated tree.
fn output_path(template_path: &str) -> String {
    let path = template_path.strip_suffix(".tera").unwrap_or(template_path);
    match path {
        "gitignore" => ".gitignore".to_owned(),
        _ => match path.strip_prefix("github/") {
            Some(rest) => format!(".github/workflows/{rest}"),
            None => path.to_owned(),
        },
    }
}

fn render(
    tera: &mut tera::Tera,
    path: &str,
    source: &str,
    context: &tera::Context,
) -> Result<String, ScaffoldError> {
    let error = |e: tera::Error| ScaffoldError::Template {
        path: path.to_owned(),
        message: e.to_string(),
    };
    tera.add_raw_template(path, source).map_err(error)?;
    tera.render(path, context).map_err(error)
}

/// The values every template is rendered with.
fn template_context(settings: &NewSettings) -> Result<tera::Context, ScaffoldError> {
    let endpoint = settings
        .endpoint
        .as_deref()
        .map(check_endpoint)
        .transpose()?;
    let parsed = endpoint.as_deref().and_then(|e| url::Url::parse(e).ok());
    let context = TemplateContext {
        name: &settings.name,
        crate_name: settings.name.replace('-', "_"),
        description: &settings.description,
        description_json: serde_json::to_string(&settings.description).unwrap_or_default(),
        description_toml: settings
            .description
            .replace('\\', "\\\\")
            .replace('"', "\\\""),
        env_prefix: &settings.env_prefix,
        endpoint_host: parsed
            .as_ref()
            .and_then(|url| url.host_str().map(str::to_owned)),
        endpoint_path: parsed.as_ref().map(|url| url.path().to_owned()),
        endpoint,
        adapter_env_prefix: env_prefix(&format!("{}-adapter", settings.name)),
        ecp_version: env!("CARGO_PKG_VERSION"),
        ecp_repository: env!("CARGO_PKG_REPOSITORY"),
        ecp_action: ecp_action_repository(),
        ecp_action_ref: option_env!("ECP_SOURCE_COMMIT")
            .map(str::to_owned)
            .unwrap_or_else(|| format!("v{}", env!("CARGO_PKG_VERSION"))),
        server: settings.server,
        auth: match settings.auth {
            Auth::Bearer => "bearer",
            Auth::Header(_) => "header",
            Auth::None => "none",
        },
        auth_header: match &settings.auth {
            Auth::Header(name) => Some(name.clone()),
            _ => None,
        },
        runtime_version: vendor::RUNTIME_VERSION,
        runtime_sha256: vendor::runtime_sha256(),
    };
    tera::Context::from_serialize(&context).map_err(|e| ScaffoldError::Template {
        path: "(context)".into(),
        message: e.to_string(),
    })
}

/// Renders the whole tree in memory, sorted by path.
pub fn plan(settings: &NewSettings) -> Result<Vec<GeneratedFile>, ScaffoldError> {
    settings.check()?;
    let context = template_context(settings)?;
    let mut tera = tera::Tera::default();
    let folder = settings.template.folder();
    let dir = TEMPLATES
        .get_dir(folder)
        .ok_or_else(|| ScaffoldError::Template {
            path: folder.into(),
            message: "missing from the binary".into(),
        })?;

    let mut files = Vec::new();
    let mut pending: Vec<&include_dir::File<'_>> = Vec::new();
    let mut stack = vec![dir];
    while let Some(dir) = stack.pop() {
        stack.extend(dir.dirs());
        pending.extend(dir.files());
    }
    for file in pending {
        let full = file.path().to_string_lossy().replace('\\', "/");
        let relative = full
            .strip_prefix(&format!("{folder}/"))
            .unwrap_or(&full)
            .to_owned();
        let source = file
            .contents_utf8()
            .ok_or_else(|| ScaffoldError::Template {
                path: full.clone(),
                message: "not UTF-8".into(),
            })?;
        let rendered = render(&mut tera, &full, source, &context)?;
        files.push(GeneratedFile {
            path: output_path(&relative),
            contents: rendered.into_bytes(),
        });
    }
    if settings.template == Template::Local {
        for (path, contents) in vendor::runtime_files() {
            files.push(GeneratedFile {
                path: format!("{}/{path}", vendor::VENDOR_DIR),
                contents: contents.to_vec(),
            });
        }
    }
    if settings.template == Template::LocalTs {
        files.extend(typescript::project_files(
            &settings.name,
            &settings.description,
        )?);
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// Whether `dir` is missing or an empty folder.
fn is_vacant(dir: &Path) -> Result<bool, ScaffoldError> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::NotADirectory => {
            Err(ScaffoldError::NotAFolder(dir.to_owned()))
        }
        Err(source) => Err(ScaffoldError::Write {
            path: dir.to_owned(),
            source,
        }),
    }
}

fn write_tree(root: &Path, files: &[GeneratedFile]) -> Result<(), ScaffoldError> {
    for file in files {
        let path = root.join(&file.path);
        let io = |source| ScaffoldError::Write {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&path, &file.contents).map_err(io)?;
    }
    Ok(())
}

/// Writes the tree into `dir`.
///
/// A missing or empty `dir` is filled atomically: the tree is written into a
/// temporary sibling folder that is renamed into place. A non-empty `dir` is
/// refused unless `force`; then each file is written to a temporary name
/// and renamed over its target, so no file is ever half-written.
pub fn write(dir: &Path, files: &[GeneratedFile], force: bool) -> Result<(), ScaffoldError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ScaffoldError::Write { path, source }
    };
    if is_vacant(dir)? {
        let parent = match dir.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).map_err(io(&parent))?;
        let staging = tempfile::Builder::new()
            .prefix(".ecp-new-")
            .tempdir_in(&parent)
            .map_err(io(&parent))?;
        write_tree(staging.path(), files)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // tempdir creates 0700; a project folder is 0755.
            std::fs::set_permissions(staging.path(), std::fs::Permissions::from_mode(0o755))
                .map_err(io(staging.path()))?;
        }
        // rename(2) replaces an empty folder; a missing one is created.
        let staged = staging.keep();
        if let Err(source) = std::fs::rename(&staged, dir) {
            let _ = std::fs::remove_dir_all(&staged);
            return Err(ScaffoldError::Write {
                path: dir.to_owned(),
                source,
            });
        }
        return Ok(());
    }
    if !force {
        return Err(ScaffoldError::NotEmpty(dir.to_owned()));
    }
    // The one write rule inside the target (the folder itself is the
    // user's): nothing on the way may be a link (`src -> /etc` would make
    // --force write outside the project) or a special file, checked for
    // every file before the first is written.
    let place = |file: &GeneratedFile| crate::writes::Place::within(dir, &dir.join(&file.path));
    let refused = |problem| match problem {
        crate::writes::WriteProblem::Io { path, source } => ScaffoldError::Write { path, source },
        unsafe_place => ScaffoldError::Unsafe(unsafe_place),
    };
    for file in files {
        place(file).check_file().map_err(refused)?;
    }
    for file in files {
        place(file).write(&file.contents).map_err(refused)?;
    }
    Ok(())
}
