//! The rmcp `ServerHandler` for `context_search`: argument checks, the
//! provider call under budget and cancellation, and result rendering.

use std::{borrow::Cow, future::Future, panic::AssertUnwindSafe, sync::Arc, task::Poll};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        JsonObject, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
        ServerConfig, Tool,
    },
    service::RequestContext,
};
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio_util::{sync::CancellationToken, task::AbortOnDropHandle};

use super::{
    Provider, ProviderError, RuntimeConfig, context_search_tool,
    log::{self, Level, LogFormat},
};
use crate::ProviderItem;
use crate::profile::{PROVIDER_LIMIT, Rendered, SEARCH_FAILED, TOOL_NAME, query_from_arguments};

/// The newest protocol revision served: 2026-07-28 (`server/discover`,
/// self-contained requests, no `initialize`, negotiated by rmcp); older ones
/// down to 2024-11-05 too, over `initialize`. A client that asks
/// `initialize` for a revision it does not know gets the newest one that
/// still has it (rmcp's fallback), 2025-11-25.
const NEWEST_PROTOCOL: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// An MCP server offering only `context_search`, backed by `P`.
pub struct ContextSearchServer<P> {
    provider: Arc<P>,
    config: RuntimeConfig,
    log_format: LogFormat,
}

impl<P> Clone for ContextSearchServer<P> {
    fn clone(&self) -> Self {
        ContextSearchServer {
            provider: self.provider.clone(),
            config: self.config.clone(),
            log_format: self.log_format,
        }
    }
}

/// What a `tools/call` answers: the rendered envelope, or a failure text
/// (an input message or the stable [`SEARCH_FAILED`]) with `isError`.
pub(crate) enum Answer {
    Envelope(Rendered),
    Failure(&'static str),
}

impl Answer {
    pub(crate) fn into_result(self) -> CallToolResult {
        match self {
            Answer::Envelope(rendered) => {
                let envelope = rendered.into_envelope();
                let mut result = CallToolResult::success(vec![ContentBlock::text(envelope.text)]);
                result.structured_content = Some(envelope.structured);
                result
            }
            Answer::Failure(text) => failure(text),
        }
    }
}

/// How a call that reached the provider ended, for the result and the log.
enum Outcome {
    Found(Vec<crate::ProviderItem>),
    Failed(ProviderError),
    Cancelled,
}

impl<P: Provider> ContextSearchServer<P> {
    /// A server answering `context_search` with `provider`.
    pub fn new(provider: Arc<P>, config: RuntimeConfig) -> Self {
        ContextSearchServer {
            provider,
            config,
            log_format: LogFormat::Plain,
        }
    }

    /// Writes stderr lines in `format` (JSON over HTTP).
    pub fn with_log_format(mut self, format: LogFormat) -> Self {
        self.log_format = format;
        self
    }

    /// The provider's answer to `query`; dropped, it drops the provider's
    /// future, and with it any in-flight upstream request (its connection
    /// is closed). A panic in the mapping is a failed search, never a dead
    /// server.
    async fn provider_search(&self, query: String) -> Result<Vec<ProviderItem>, ProviderError> {
        if Handle::current().runtime_flavor() == RuntimeFlavor::CurrentThread {
            // One thread (stdio, `--listen` on one core): a task of its own
            // would cost a spawn and a wake-up a call and protect nothing,
            // so the future is polled in the call's task (and never again
            // after a panic).
            let mut search = std::pin::pin!(self.provider.search(&query, PROVIDER_LIMIT));
            return std::future::poll_fn(|cx| {
                std::panic::catch_unwind(AssertUnwindSafe(|| search.as_mut().poll(cx)))
                    .unwrap_or(Poll::Ready(Err(ProviderError::Internal)))
            })
            .await;
        }
        // Several threads: a task of its own, so that the budget still ends
        // the call on another thread while a mapping blocks its own (a
        // synchronous call inside the mapping is a bug, but the budget is
        // the profile's promise).
        let provider = self.provider.clone();
        let task = AbortOnDropHandle::new(tokio::spawn(async move {
            provider.search(&query, PROVIDER_LIMIT).await
        }));
        task.await.unwrap_or(Err(ProviderError::Internal))
    }

    async fn search(&self, query: String, cancelled: CancellationToken) -> Outcome {
        let guarded = self.provider_search(query);
        tokio::select! {
            biased;
            () = cancelled.cancelled() => Outcome::Cancelled,
            finished = tokio::time::timeout(self.config.budget.duration(), guarded) => {
                match finished {
                    Err(_elapsed) => Outcome::Failed(ProviderError::Timeout),
                    Ok(Err(error)) => Outcome::Failed(error),
                    Ok(Ok(mut items)) => {
                        // Invalid items are dropped before the renderer
                        // keeps the first five, as the V1 binding does, so
                        // that a mapping need neither filter nor limit.
                        crate::profile::retain_valid(&mut items);
                        Outcome::Found(items)
                    }
                }
            }
        }
    }

    /// One `context_search` call with its `arguments`, until `cancelled`:
    /// what rmcp's `tools/call` handler on stdio and the remote adapter
    /// (`remote::mcp`, `remote::direct`) answer.
    pub(crate) async fn call(
        &self,
        arguments: Option<&JsonObject>,
        cancelled: CancellationToken,
    ) -> CallToolResult {
        self.answer(arguments, cancelled).await.into_result()
    }

    /// [`Self::call`] before it becomes rmcp's result type.
    pub(crate) async fn answer(
        &self,
        arguments: Option<&JsonObject>,
        cancelled: CancellationToken,
    ) -> Answer {
        let query = match query_from_arguments(arguments) {
            Ok(query) => query,
            Err(error) => return Answer::Failure(error.message()),
        };
        match self.search(query, cancelled).await {
            Outcome::Found(items) => Answer::Envelope(Rendered::from_items(items)),
            Outcome::Failed(error) => {
                self.log(
                    "context_search_failed",
                    format_args!("context_search failed: {error}"),
                );
                Answer::Failure(SEARCH_FAILED)
            }
            Outcome::Cancelled => {
                self.log_cancelled();
                Answer::Failure(SEARCH_FAILED)
            }
        }
    }

    /// The stderr line of a call its client gave up on.
    pub(crate) fn log_cancelled(&self) {
        self.log(
            "context_search_cancelled",
            format_args!("context_search cancelled by the client"),
        );
    }

    fn log(&self, event: &str, message: std::fmt::Arguments<'_>) {
        log::event(
            self.log_format,
            &self.config.name,
            Level::Warn,
            event,
            message,
            &[],
        );
    }
}

fn failure(text: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

impl<P: Provider> ServerHandler for ContextSearchServer<P> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                self.config.name.clone(),
                self.config.version.clone(),
            ))
            .with_protocol_version(NEWEST_PROTOCOL)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&NEWEST_PROTOCOL))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![context_search_tool()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == TOOL_NAME).then(context_search_tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL_NAME {
            return Err(ErrorData::invalid_params(
                "Unknown tool: this server offers only context_search.",
                None,
            ));
        }
        Ok(self
            .call(request.arguments.as_ref(), context.ct)
            .await
            .into())
    }
}
