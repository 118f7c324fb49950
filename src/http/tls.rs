//! TLS on the HTTP listener (`http.cert_file`, `http.key_file`): rustls with the ring provider
//! the broker connection uses. Handshakes run beside the accept loop, each bounded in time and
//! in number, so that a client that never finishes one holds no other connection back; axum
//! takes the connections whose handshake is done.

use crate::telemetry::{AcceptFailed, Event as _};
use axum::serve::Listener;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_rustls::TlsAcceptor;
pub use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::crypto;
use tokio_rustls::server::TlsStream;
use tracing::debug;

/// How long a client may take over its handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// Handshakes under way at once; further connections wait to be accepted.
const HANDSHAKES: usize = 256;

/// The server configuration of the PEM certificate chain at `cert` and its key at `key`.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, String> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("cannot read the certificate {}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{} holds no certificate", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("cannot read the key {}: {e}", key.display()))?;
    let mut config = ServerConfig::builder_with_provider(Arc::new(crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("the certificate and key cannot be used together: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A listener whose connections have finished their TLS handshake.
pub struct TlsListener {
    done: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Accepts on `tcp` in a task of its own, which ends when this listener is dropped.
    pub fn new(tcp: TcpListener, config: Arc<ServerConfig>) -> std::io::Result<Self> {
        let local = tcp.local_addr()?;
        let (tx, done) = mpsc::channel(HANDSHAKES);
        tokio::spawn(accept(tcp, TlsAcceptor::from(config), tx));
        Ok(TlsListener { done, local })
    }
}

async fn accept(
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    tx: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    let slots = Arc::new(Semaphore::new(HANDSHAKES));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else { return };
        let (stream, peer) = tokio::select! {
            _ = tx.closed() => return,
            accepted = tcp.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors and the like: said, and tried again shortly.
                    AcceptFailed { error: &error }.emit(&());
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let (acceptor, tx) = (acceptor.clone(), tx.clone());
        tokio::spawn(async move {
            let _slot = slot;
            match tokio::time::timeout(HANDSHAKE, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => drop(tx.send((tls, peer)).await),
                Ok(Err(error)) => debug!(%peer, %error, "an HTTPS client's handshake failed"),
                Err(_) => debug!(%peer, "an HTTPS client did not finish its handshake in time"),
            }
        });
    }
}

impl Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.done.recv().await {
            Some(accepted) => accepted,
            None => std::future::pending().await, // the accept task ended: nothing more comes
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
