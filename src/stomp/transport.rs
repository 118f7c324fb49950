//! Broker addresses (`stomp://`, `stomp+ssl://`) and the byte stream to them: TCP, or TLS
//! through rustls with a custom CA and an optional client certificate.

use super::codec::FrameError;
use super::session::SessionError;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::{self, AlertDescription, ClientConfig, RootCertStore, crypto};

/// Where the broker is: `stomp://host:port` or `stomp+ssl://host:port`; or, for tests,
/// `stomp+memory://name`, an in-process broker (`stomp::memory`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerUrl {
    pub host: String,
    pub port: u16,
    pub tls: bool,
    /// `stomp+memory://`: `host` names an in-process listener; there is no port.
    pub memory: bool,
}

impl FromStr for BrokerUrl {
    type Err = SessionError;

    /// Ports default to 61613 (`stomp://`) and 61614 (`stomp+ssl://`), ActiveMQ's and
    /// Artemis's conventions. IPv6 hosts are written in brackets: `stomp://[::1]:61613`.
    fn from_str(url: &str) -> Result<Self, SessionError> {
        // Credentials written into a URL are refused, and the error does not repeat them.
        if let Some((_, after)) = url.rsplit_once('@') {
            let reason = "credentials do not belong in the URL: use broker.login and broker.passcode";
            return Err(SessionError::Url { url: format!("…@{after}"), reason });
        }
        let bad = |reason| SessionError::Url { url: url.to_owned(), reason };
        if let Some(name) = url.strip_prefix("stomp+memory://") {
            return match name.is_empty() {
                _ if !cfg!(any(test, feature = "test-util")) => {
                    Err(bad("stomp+memory:// is the tests' in-process transport (the test-util feature)"))
                }
                true => Err(bad("the in-process broker has no name")),
                false => Ok(BrokerUrl { host: name.to_owned(), port: 0, tls: false, memory: true }),
            };
        }
        let (tls, rest) = if let Some(rest) = url.strip_prefix("stomp://") {
            (false, rest)
        } else if let Some(rest) = url.strip_prefix("stomp+ssl://") {
            (true, rest)
        } else {
            return Err(bad("the scheme must be stomp:// or stomp+ssl://"));
        };
        let authority = rest.trim_end_matches('/');
        let (host, port) = split_host_port(authority).ok_or_else(|| bad("expected host:port"))?;
        if host.is_empty() {
            return Err(bad("the host is empty"));
        }
        let port = match port {
            None => {
                if tls {
                    61614
                } else {
                    61613
                }
            }
            Some(p) => p.parse().map_err(|_| bad("the port is not a number from 1 to 65535"))?,
        };
        Ok(BrokerUrl { host: host.to_owned(), port, tls, memory: false })
    }
}

fn split_host_port(authority: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after {
            "" => Some((host, None)),
            _ => Some((host, Some(after.strip_prefix(':')?))),
        };
    }
    match authority.split_once(':') {
        Some((host, port)) => Some((host, Some(port))),
        None => Some((authority, None)),
    }
}

impl std::fmt::Display for BrokerUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.tls { "stomp+ssl" } else { "stomp" };
        if self.memory {
            return write!(f, "stomp+memory://{}", self.host);
        }
        match self.host.contains(':') {
            true => write!(f, "{scheme}://[{}]:{}", self.host, self.port),
            false => write!(f, "{scheme}://{}:{}", self.host, self.port),
        }
    }
}

/// TLS settings for `stomp+ssl://` URLs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// PEM file of the CA(s) to trust; without it, the system's trusted roots.
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate chain, for brokers that require client authentication.
    pub cert_file: Option<PathBuf>,
    /// PEM private key of the client certificate.
    pub key_file: Option<PathBuf>,
}

/// A connected byte stream, plain or TLS.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// Opens TCP to the broker, and TLS over it when the URL asks.
pub async fn open(url: &BrokerUrl, tls: Option<&TlsConnector>) -> Result<Box<dyn Io>, SessionError> {
    #[cfg(any(test, feature = "test-util"))]
    if url.memory {
        return Ok(Box::new(super::memory::connect(&url.host)?));
    }
    let addr = format!("{}:{}", url.host, url.port);
    let tcp = TcpStream::connect((url.host.as_str(), url.port))
        .await
        .map_err(|source| SessionError::Connect { addr: addr.clone(), source })?;
    let _ = tcp.set_nodelay(true);
    let Some(tls) = tls.filter(|_| url.tls) else {
        return Ok(Box::new(tcp));
    };
    let name = ServerName::try_from(url.host.clone()).map_err(|e| SessionError::Tls(e.to_string()))?;
    let stream = tls.connect(name, tcp).await.map_err(|source| SessionError::Connect { addr, source })?;
    Ok(Box::new(stream))
}

/// `err` as [`SessionError::TlsRefused`] when it is a TLS alert from the broker, whether it
/// came during the handshake (TLS 1.2) or with the first read after it (TLS 1.3, where a
/// server judges the client certificate after the client has finished). A certificate alert
/// says whether a client certificate was presented, as a question: the alert alone does not
/// tell a missing certificate from an untrusted one.
pub fn refused_handshake(err: SessionError, opts: &TlsOptions) -> SessionError {
    let io = match &err {
        SessionError::Connect { source, .. } | SessionError::Frame(FrameError::Io(source)) => source,
        _ => return err,
    };
    let Some(rustls::Error::AlertReceived(alert)) = io.get_ref().and_then(|e| e.downcast_ref()) else {
        return err;
    };
    let about_certificate = matches!(
        alert,
        AlertDescription::BadCertificate
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateRevoked
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateRequired
            | AlertDescription::AccessDenied
            | AlertDescription::HandshakeFailure
    );
    let said = rustls::Error::AlertReceived(*alert).to_string();
    SessionError::TlsRefused(match (&opts.cert_file, about_certificate) {
        (_, false) => said,
        (None, true) => format!("{said} (no client certificate was presented: does the broker require one?)"),
        (Some(cert), true) => {
            format!("{said} (does the broker trust the client certificate {}?)", cert.display())
        }
    })
}

/// Builds the TLS client configuration once, from PEM files.
pub fn tls_connector(opts: &TlsOptions) -> Result<TlsConnector, SessionError> {
    Ok(TlsConnector::from(Arc::new(tls_client_config(opts)?)))
}

/// The rustls client configuration of `opts` (ring, the safe default protocol versions):
/// the CA file's roots or the system's, and the client certificate if one is given.
pub fn tls_client_config(opts: &TlsOptions) -> Result<ClientConfig, SessionError> {
    let tls_err = |what: &str, path: &Path, e: &dyn std::fmt::Display| {
        SessionError::Tls(format!("{what} {}: {e}", path.display()))
    };
    let mut roots = RootCertStore::empty();
    match &opts.ca_file {
        Some(path) => {
            for cert in
                CertificateDer::pem_file_iter(path).map_err(|e| tls_err("cannot read CA file", path, &e))?
            {
                let cert = cert.map_err(|e| tls_err("bad certificate in", path, &e))?;
                roots.add(cert).map_err(|e| tls_err("unusable CA certificate in", path, &e))?;
            }
        }
        None => {
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        }
    }
    let builder = ClientConfig::builder_with_provider(Arc::new(crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| SessionError::Tls(e.to_string()))?
        .with_root_certificates(roots);
    let config = match (&opts.cert_file, &opts.key_file) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| tls_err("cannot read client certificate", cert, &e))?;
            let key =
                PrivateKeyDer::from_pem_file(key).map_err(|e| tls_err("cannot read client key", key, &e))?;
            builder.with_client_auth_cert(chain, key).map_err(|e| SessionError::Tls(e.to_string()))?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => return Err(SessionError::Tls("a client certificate needs both cert_file and key_file".into())),
    };
    Ok(config)
}

#[cfg(test)]
#[path = "transport_tests.rs"]
mod tests;
