//! A deliberately broken profile server for `ecp check`'s own tests: correct
//! (the same profile core and HTTP binding as ecp) except for the one defect
//! named by `--defect NAME`. A conformance check that cannot fail one of
//! these is a defect of the runner.

use std::{borrow::Cow, sync::Arc, time::Duration};

use ecp::{
    profile::{SEARCH_FAILED, TOOL_NAME, ecmascript::utf16_len, query_from_arguments, render},
    providers::http::{
        DEFAULT_BASE_URL_ENV, DEFAULT_TOKEN_ENV, HttpSearchConfig, HttpSearchProvider,
    },
    runtime::{Provider, context_search_tool},
};
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};
use serde_json::Value;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Defect {
    WrongSchema,
    ExtraTool,
    MissingAnnotations,
    UnescapedAngle,
    TextOver4000,
    EchoQuery,
    AcceptsUnknownArgument,
    Retries,
    IgnoresCancellation,
    LeaksToken,
    UnstableErrors,
    InvalidStructuredContent,
}

impl Defect {
    fn parse(name: &str) -> Option<Defect> {
        Some(match name {
            "wrong-schema" => Defect::WrongSchema,
            "extra-tool" => Defect::ExtraTool,
            "missing-annotations" => Defect::MissingAnnotations,
            "unescaped-angle" => Defect::UnescapedAngle,
            "text-over-4000" => Defect::TextOver4000,
            "echo-query" => Defect::EchoQuery,
            "accepts-unknown-argument" => Defect::AcceptsUnknownArgument,
            "retries" => Defect::Retries,
            "ignores-cancellation" => Defect::IgnoresCancellation,
            "leaks-token" => Defect::LeaksToken,
            "unstable-errors" => Defect::UnstableErrors,
            "invalid-structured-content" => Defect::InvalidStructuredContent,
            _ => return None,
        })
    }
}

#[derive(Clone)]
struct Broken {
    defect: Defect,
    provider: Arc<HttpSearchProvider>,
}

impl Broken {
    fn tool(&self) -> Tool {
        let mut tool = context_search_tool();
        match self.defect {
            Defect::WrongSchema => {
                let mut schema = (*tool.input_schema).clone();
                schema["properties"]["limit"] = serde_json::json!({"type": "integer"});
                tool.input_schema = Arc::new(schema);
            }
            Defect::MissingAnnotations => tool.annotations = None,
            _ => {}
        }
        tool
    }

    async fn search(
        &self,
        query: &str,
        cancelled: tokio_util::sync::CancellationToken,
    ) -> Result<String, String> {
        let attempt = || async {
            tokio::time::timeout(Duration::from_secs(5), self.provider.search(query, 5))
                .await
                .map_err(|_| "timeout".to_owned())?
                .map_err(|e| e.to_string())
        };
        let work = async {
            match attempt().await {
                Err(_) if self.defect == Defect::Retries => attempt().await,
                other => other,
            }
        };
        let items = if self.defect == Defect::IgnoresCancellation {
            work.await?
        } else {
            tokio::select! {
                () = cancelled.cancelled() => return Err("cancelled".into()),
                items = work => items?,
            }
        };
        let mut text = render(&items).text;
        if self.defect == Defect::UnescapedAngle {
            text = text.replace("\\u003c", "<").replace("\\u003e", ">");
        }
        if self.defect == Defect::TextOver4000 && utf16_len(&text) >= 3990 {
            let padding = " ".repeat(4001 - utf16_len(&text));
            text.insert_str(text.len() - 2, &padding);
        }
        Ok(text)
    }
}

impl ServerHandler for Broken {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = vec![self.tool()];
        if self.defect == Defect::ExtraTool {
            let mut extra = context_search_tool();
            extra.name = "context_remember".into();
            tools.push(extra);
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL_NAME {
            return Err(ErrorData::invalid_params("unknown tool", None));
        }
        let mut arguments = request.arguments.clone();
        if self.defect == Defect::AcceptsUnknownArgument
            && let Some(arguments) = &mut arguments
        {
            arguments.retain(|key, _| key == "query");
        }
        let query = match query_from_arguments(arguments.as_ref()) {
            Ok(query) => query,
            Err(error) => {
                let text = match self.defect {
                    Defect::EchoQuery => format!(
                        "{} Got: {}",
                        error.message(),
                        Value::Object(request.arguments.unwrap_or_default())
                    ),
                    _ => error.message().to_owned(),
                };
                return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into());
            }
        };
        let result = match self.search(&query, context.ct).await {
            Ok(text) => {
                let mut structured: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                if self.defect == Defect::InvalidStructuredContent {
                    structured["untrusted_external_context"]["trusted"] = true.into();
                }
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(structured);
                result
            }
            Err(error) => {
                let text = match self.defect {
                    Defect::UnstableErrors => format!("{SEARCH_FAILED} ({error})"),
                    _ => SEARCH_FAILED.to_owned(),
                };
                CallToolResult::error(vec![ContentBlock::text(text)])
            }
        };
        Ok(result.into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let defect = match args.as_slice() {
        [_, flag, name] if flag == "--defect" => Defect::parse(name),
        _ => None,
    };
    let Some(defect) = defect else {
        eprintln!("usage: broken-server --defect NAME");
        std::process::exit(2);
    };
    let token = std::env::var(DEFAULT_TOKEN_ENV).unwrap_or_default();
    if defect == Defect::LeaksToken {
        eprintln!("broken-server: using token {token}");
    }
    let config =
        HttpSearchConfig::from_env(DEFAULT_BASE_URL_ENV, DEFAULT_TOKEN_ENV).expect("configuration");
    let provider = Arc::new(HttpSearchProvider::new(config));
    let server = Broken { defect, provider };
    let (stdin, stdout) = rmcp::transport::io::stdio();
    let running = server.serve((stdin, stdout)).await.expect("handshake");
    let _ = running.waiting().await;
}
