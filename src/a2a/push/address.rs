//! Where a webhook may be: an `http(s)` URL, and, unless `a2a.push.allow_private`, not on a
//! loopback, private (RFC 1918, IPv6 ULA), link-local, unspecified or multicast address, nor a
//! cloud metadata host. A webhook is a way into the operator's network: a client could
//! otherwise make the bridge post to its neighbours. Checked twice: on the URL when the client
//! sets the webhook ([`refusal`], pure), and on every address its host resolves to when it is
//! called ([`Guarded`]), so that a name that resolves to a private address (now or after a
//! DNS change) is not reached either. The same rules as the SDK's own sender (a2a-server-lf's
//! `validate_push_url` and `SsrfGuardedResolver`), which the bridge does not use (its module
//! says why).

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::{IpAddr, SocketAddr};

/// Hosts that name the machine itself or a cloud's metadata service.
const BLOCKED_HOSTS: [&str; 6] = [
    "localhost",
    "metadata.google.internal",
    "metadata.goog",
    "metadata.azure.com",
    "169.254.169.254",
    "0.0.0.0",
];

/// Why `url` cannot be a webhook, if it cannot; `allow_private` lets it be on any address.
pub fn refusal(url: &str, allow_private: bool) -> Option<String> {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return Some("the push notification URL is not a URL".into());
    };
    if !matches!(parsed.scheme(), "http" | "https") {
        return Some("the push notification URL must be http:// or https://".into());
    }
    let Some(host) = parsed.host_str() else {
        return Some("the push notification URL has no host".into());
    };
    if allow_private {
        return None;
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    let literal = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().ok();
    let blocked = BLOCKED_HOSTS.contains(&host.to_ascii_lowercase().as_str())
        || host.to_ascii_lowercase().ends_with(".localhost")
        || literal.is_some_and(blocked);
    blocked.then(|| {
        format!(
            "the push notification URL's host {host} is a loopback, private, link-local or metadata \
             address, which a2a.push.allow_private does not allow"
        )
    })
}

/// Whether the bridge may not call `ip` (without `allow_private`).
pub fn blocked(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                // 100.64.0.0/10, the carrier-grade NAT range, is as internal as RFC 1918's.
                || (v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64)
        }
        IpAddr::V6(v6) => {
            let segment = v6.segments()[0];
            v6.to_ipv4_mapped().is_some_and(|v4| blocked(IpAddr::V4(v4)))
                || v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (segment & 0xfe00) == 0xfc00
                || (segment & 0xffc0) == 0xfe80
        }
    }
}

/// The webhooks' resolver without `allow_private`: the system's, keeping only the addresses
/// the bridge may call; a host with none left is not reached. reqwest dials exactly what this
/// returns, so a second lookup cannot answer otherwise (no resolve-then-connect gap).
pub struct Guarded;

impl Resolve for Guarded {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let resolved = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let allowed: Vec<SocketAddr> = resolved.filter(|a| !blocked(a.ip())).collect();
            if allowed.is_empty() {
                let why = format!(
                    "{host} resolves only to loopback, private or link-local addresses, which \
                     a2a.push.allow_private does not allow"
                );
                return Err(why.into());
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
#[path = "address_tests.rs"]
mod tests;
