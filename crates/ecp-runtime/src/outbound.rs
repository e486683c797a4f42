//! The runtime's one outbound HTTP/1.1 client: hyper-util's pooled
//! `Client` over a connector of ours (TCP, rustls, an optional proxy). The
//! provider's upstream ([`crate::http::Upstream`]) and the remote adapter's
//! key set (`remote/auth.rs`) go through it.
//!
//! It keeps what the runtime promised while it used reqwest (0.4.1 and
//! before), which cost about 4 µs of CPU a request in layers the profile
//! does not need (`docs/benchmarks.md`):
//!
//! - TLS: rustls with ring, certificates checked by
//!   rustls-platform-verifier (the system's roots; `SSL_CERT_FILE` on
//!   Linux), TLS 1.2 and 1.3, SNI, ALPN `http/1.1` only;
//! - TCP: nodelay, keepalive after 15 s every 15 s three times, a 30 s user
//!   timeout on Linux; names resolved by the system (`getaddrinfo`), both
//!   address families tried (happy eyeballs);
//! - the pool: idle connections closed after 90 s; a request is retried
//!   only when the pooled connection it was given closed before a byte of
//!   it was sent (nothing else is ever retried); a dropped request closes
//!   its connection at once, so a cancelled search stops the upstream's
//!   work;
//! - no redirect is followed (the caller sees the 3xx);
//! - a proxy: `http` endpoints through it in absolute form with
//!   `Proxy-Authorization: Basic` from the proxy URL's user info
//!   (percent-decoded), `https` endpoints through a `CONNECT` tunnel with
//!   the same credential; an `https` proxy is reached over TLS first.

use std::{
    future::Future,
    io,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{
    Uri,
    body::Incoming,
    header::{HeaderValue, PROXY_AUTHORIZATION},
    rt::ReadBufCursor,
};
use hyper_util::{
    client::legacy::{
        Client,
        connect::{Connected, Connection, HttpConnector, proxy::Tunnel},
    },
    rt::{TokioExecutor, TokioIo, TokioTimer},
};
use rustls::pki_types::ServerName;
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::TcpStream,
};
use tokio_rustls::{TlsConnector, client::TlsStream};
use tower_service::Service;
use url::Url;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A pooled HTTP/1.1 client; cheap to clone (the pool is shared).
#[derive(Clone)]
pub(crate) struct HttpClient {
    client: Client<Connector, Full<Bytes>>,
    /// `Proxy-Authorization` for requests sent to an HTTP proxy in absolute
    /// form (tunnels carry it on their `CONNECT`).
    forward_authorization: Option<HeaderValue>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HttpClient { .. }")
    }
}

/// Why a client cannot be built: the platform's certificate verifier, or
/// a proxy URL that is not one.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BuildError {
    #[error("cannot load the TLS certificate verifier: {0}")]
    Tls(#[from] rustls::Error),
    #[error("the proxy URL cannot be used")]
    Proxy,
}

/// Where connections go.
#[derive(Clone)]
struct Proxy {
    uri: Uri,
    authorization: Option<HeaderValue>,
}

impl HttpClient {
    /// A client that goes through `proxy` when one is given (the caller
    /// decides, from [`crate::proxy_env::ProxyEnv`] or not at all), and gives
    /// up connecting after `connect_timeout`.
    pub(crate) fn new(
        proxy: Option<&Url>,
        connect_timeout: Option<Duration>,
    ) -> Result<HttpClient, BuildError> {
        let proxy = proxy.map(proxy_route).transpose()?;
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_keepalive(Some(Duration::from_secs(15)));
        tcp.set_keepalive_interval(Some(Duration::from_secs(15)));
        tcp.set_keepalive_retries(Some(3));
        #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
        tcp.set_tcp_user_timeout(Some(Duration::from_secs(30)));
        tcp.set_connect_timeout(connect_timeout);
        let connector = Connector {
            tcp,
            tls: TlsConnector::from(tls_config()?),
            proxy: proxy.clone(),
        };
        let client = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .build(connector);
        Ok(HttpClient {
            client,
            forward_authorization: proxy.and_then(|p| p.authorization),
        })
    }

    /// Sends one request; a plain `http` request through a proxy carries
    /// the proxy's credential.
    pub(crate) async fn send(
        &self,
        mut request: hyper::Request<Full<Bytes>>,
    ) -> Result<hyper::Response<Incoming>, hyper_util::client::legacy::Error> {
        if let Some(authorization) = &self.forward_authorization
            && request.uri().scheme() == Some(&hyper::http::uri::Scheme::HTTP)
        {
            request
                .headers_mut()
                .insert(PROXY_AUTHORIZATION, authorization.clone());
        }
        self.client.request(request).await
    }
}

/// Why a body could not be read whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// Declared or found longer than the cap.
    TooLarge,
    /// The connection failed or the framing broke.
    Transport,
}

/// The body of `response`, at most `cap` bytes (exactly `cap` is fine); a
/// larger declared length is refused before a byte is read.
pub(crate) async fn read_body(
    response: hyper::Response<Incoming>,
    cap: usize,
) -> Result<Vec<u8>, BodyError> {
    let declared = response
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    if declared > cap as u64 {
        return Err(BodyError::TooLarge);
    }
    let mut body = response.into_body();
    let mut bytes = Vec::with_capacity(declared as usize);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| BodyError::Transport)?;
        if let Ok(chunk) = frame.into_data() {
            if bytes.len() + chunk.len() > cap {
                return Err(BodyError::TooLarge);
            }
            bytes.extend_from_slice(&chunk);
        }
    }
    Ok(bytes)
}

/// An error and its causes, for an operator's log line (never for a
/// search's caller, which sees the stable message).
pub(crate) fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn proxy_route(url: &Url) -> Result<Proxy, BuildError> {
    use base64::Engine as _;
    let decode = |text: &str| {
        percent_encoding::percent_decode_str(text)
            .decode_utf8_lossy()
            .into_owned()
    };
    let authorization = if url.username().is_empty() && url.password().is_none() {
        None
    } else {
        let pair = format!(
            "{}:{}",
            decode(url.username()),
            decode(url.password().unwrap_or(""))
        );
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
        let mut value =
            HeaderValue::try_from(format!("Basic {encoded}")).map_err(|_| BuildError::Proxy)?;
        value.set_sensitive(true);
        Some(value)
    };
    let host = url.host_str().ok_or(BuildError::Proxy)?;
    let port = url.port_or_known_default().ok_or(BuildError::Proxy)?;
    let uri = format!("{}://{host}:{port}", url.scheme())
        .parse()
        .map_err(|_| BuildError::Proxy)?;
    Ok(Proxy { uri, authorization })
}

/// rustls with ring and the platform's verifier, ALPN `http/1.1`.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, rustls::Error> {
    install_tls_provider();
    #[allow(deprecated)] // see `install_tls_provider`
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let verifier = rustls_platform_verifier::Verifier::new(provider.clone())?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Opens connections for the pool: to the origin, to the proxy, or
/// through the proxy's tunnel.
#[derive(Clone)]
struct Connector {
    tcp: HttpConnector,
    tls: TlsConnector,
    proxy: Option<Proxy>,
}

impl Connector {
    /// TCP to `uri`'s host and port, then TLS when its scheme is `https`.
    async fn open(mut self, uri: Uri) -> Result<Stream, BoxError> {
        let tcp = self.tcp.call(uri.clone()).await?.into_inner();
        let stream = Stream::Tcp(tcp);
        if uri.scheme() == Some(&hyper::http::uri::Scheme::HTTPS) {
            self.secure(stream, &uri).await
        } else {
            Ok(stream)
        }
    }

    async fn secure(&self, stream: Stream, uri: &Uri) -> Result<Stream, BoxError> {
        let host = uri.host().ok_or("no host")?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_owned())?;
        let tls = self.tls.connect(name, stream).await?;
        Ok(Stream::Tls(Box::new(tls)))
    }

    async fn connect(self, dst: Uri) -> Result<Conn, BoxError> {
        let Some(proxy) = self.proxy.clone() else {
            return Ok(Conn::new(self.open(dst).await?, false));
        };
        if dst.scheme() == Some(&hyper::http::uri::Scheme::HTTP) {
            return Ok(Conn::new(self.open(proxy.uri).await?, true));
        }
        let mut tunnel = Tunnel::new(proxy.uri, ToProxy(self.clone()));
        if let Some(authorization) = proxy.authorization {
            tunnel = tunnel.with_auth(authorization);
        }
        let tunneled = tunnel.call(dst.clone()).await?.into_inner();
        Ok(Conn::new(self.secure(tunneled, &dst).await?, false))
    }
}

impl Service<Uri> for Connector {
    type Response = Conn;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        Box::pin(self.clone().connect(dst))
    }
}

/// The connection to the proxy itself, for hyper-util's `CONNECT` tunnel.
struct ToProxy(Connector);

impl Service<Uri> for ToProxy {
    type Response = TokioIo<Stream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<TokioIo<Stream>, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, proxy: Uri) -> Self::Future {
        let connector = self.0.clone();
        Box::pin(async move { Ok(TokioIo::new(connector.open(proxy).await?)) })
    }
}

/// A TCP stream, or TLS over one (over a tunnel, or over TLS to an `https`
/// proxy).
enum Stream {
    Tcp(TcpStream),
    Tls(Box<TlsStream<Stream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Tcp(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// One pooled connection; `forward_proxy` when requests on it go to an
/// HTTP proxy in absolute form.
struct Conn {
    io: TokioIo<Stream>,
    forward_proxy: bool,
}

impl Conn {
    fn new(stream: Stream, forward_proxy: bool) -> Conn {
        Conn {
            io: TokioIo::new(stream),
            forward_proxy,
        }
    }
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        Connected::new().proxy(self.forward_proxy)
    }
}

impl hyper::rt::Read for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// Makes ring the TLS crypto provider of the process (rustls is built
/// without a default one). Call it before building an HTTP client; calling
/// it again is harmless.
pub fn install_tls_provider() {
    // rustls 0.23.48 deprecates ring's provider for lacking post-quantum
    // key exchange; ring stays (aws-lc-rs needs a C toolchain and cmake on
    // every provider's machine), so a fresh lockfile must not warn about it
    // in an extension's own build. An error only means a provider is
    // already installed.
    #[allow(deprecated)]
    let provider = rustls::crypto::ring::default_provider();
    let _ = provider.install_default();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authorization(proxy: &str) -> Option<String> {
        proxy_route(&Url::parse(proxy).unwrap())
            .unwrap()
            .authorization
            .map(|v| v.to_str().unwrap().to_owned())
    }

    #[test]
    fn proxy_credentials_are_percent_decoded_basic_auth() {
        use base64::Engine as _;
        let basic = |pair: &str| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            )
        };
        assert_eq!(
            authorization("http://user:p%40ss%3Aword@proxy.example:3128").as_deref(),
            Some(basic("user:p@ss:word").as_str())
        );
        assert_eq!(
            authorization("http://only-user@proxy.example:3128").as_deref(),
            Some(basic("only-user:").as_str())
        );
        assert_eq!(authorization("http://proxy.example:3128"), None);
        let route = proxy_route(&Url::parse("https://proxy.example").unwrap()).unwrap();
        assert_eq!(route.uri.to_string(), "https://proxy.example:443/");
    }
}
