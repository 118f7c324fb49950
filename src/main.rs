//! The `stomp-agent-bridge` command: `run`, `validate`, `health`, `dead-letters`, `translate`.

use clap::{Parser, Subcommand, ValueEnum};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use stomp_agent_bridge::bridge::reload::{Reloader, SetLevel, on_hangup};
use stomp_agent_bridge::config::Config;
use stomp_agent_bridge::deadletter::command::Action;
use stomp_agent_bridge::envelope::Direction;
use stomp_agent_bridge::envelope::SystemClock;
use stomp_agent_bridge::envelope::civitas::Encoding;
use stomp_agent_bridge::envelope::codecs::{Codecs, Framework, Origin};
use stomp_agent_bridge::telemetry::Metrics;
use tokio_util::sync::CancellationToken;

/// Counts the live heap for `bridge_heap_bytes` (telemetry::heap).
#[global_allocator]
static ALLOCATOR: stomp_agent_bridge::telemetry::heap::Counting =
    stomp_agent_bridge::telemetry::heap::Counting;

#[derive(Parser)]
#[command(version, about = "Bridges Wise Agents (STOMP + YAML) to Civitas, VOX and PenguiFlow agents")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the bridge.
    Run {
        #[arg(long, short)]
        config: PathBuf,
        /// Log format: auto (text on a terminal, JSON lines otherwise), json or text.
        #[arg(long)]
        log_format: Option<String>,
    },
    /// Check a configuration without connecting; names the key and file of every error.
    Validate {
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Exit 0 if the running bridge's /healthz answers (for container health checks).
    Health {
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Read, pick and replay the dead-letter queue (docs/OPERATING.md, "Dead letters").
    DeadLetters {
        /// The bridge's configuration (broker, credentials, `delivery.dead_letter`).
        #[arg(long, short, global = true)]
        config: Option<PathBuf>,
        /// The queue to read (default: the configuration's `delivery.dead_letter`).
        #[arg(long, global = true)]
        queue: Option<String>,
        #[command(subcommand)]
        action: Action,
    },
    /// Translate one message from stdin to stdout, offline.
    Translate {
        #[arg(long)]
        from: Framework,
        #[arg(long)]
        to: Framework,
        /// Read codec settings (default context, VOX registry, tenant) from this config.
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Civitas output encoding.
        #[arg(long, value_enum, default_value = "json")]
        encoding: EncodingArg,
        #[arg(long, value_enum, default_value = "request")]
        direction: DirectionArg,
        /// The agent the message is for (Wise Agents bodies do not say).
        #[arg(long, default_value = "Agent")]
        agent: String,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum EncodingArg {
    Json,
    Msgpack,
}

#[derive(Clone, Copy, ValueEnum)]
enum DirectionArg {
    Request,
    Response,
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Validate { config } => validate(&config),
        Command::Run { config, log_format } => run(&config, log_format),
        Command::Health { config } => health(&config),
        Command::DeadLetters { config, queue, action } => dead_letters(config, queue, action),
        Command::Translate { from, to, config, encoding, direction, agent } => {
            translate(from, to, config, encoding, direction, &agent)
        }
    }
}

fn validate(path: &Path) -> ExitCode {
    match Config::load(path) {
        Ok(config) => {
            println!("{}: valid ({} proxied agents)", path.display(), config.agents.len());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn dead_letters(config: Option<PathBuf>, queue: Option<String>, action: Action) -> ExitCode {
    let Some(path) = config else {
        eprintln!("dead-letters needs --config FILE (the bridge's configuration)");
        return ExitCode::FAILURE;
    };
    let config = match Config::load(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(stomp_agent_bridge::deadletter::command::run(&config, queue.as_deref(), action)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dead-letters: {e}");
            ExitCode::FAILURE
        }
    }
}

/// GET /healthz on the configured listen address (a wildcard address is asked on loopback);
/// with HTTPS, a connection the listener accepts.
fn health(path: &Path) -> ExitCode {
    use std::io::Read;
    let Ok(config) = Config::load(path) else { return ExitCode::FAILURE };
    let Ok(mut addr) = config.http.listen.parse::<std::net::SocketAddr>() else { return ExitCode::FAILURE };
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let timeout = std::time::Duration::from_secs(2);
    let Ok(mut stream) = std::net::TcpStream::connect_timeout(&addr, timeout) else {
        return ExitCode::FAILURE;
    };
    // HTTPS: the listener accepting is the answer (`/healthz` says only that the process is
    // alive; a probe has no CA to verify the certificate with, and need not speak TLS for that).
    if config.http.cert_file.is_some() {
        return ExitCode::SUCCESS;
    }
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.write_all(b"GET /healthz HTTP/1.0\r\n\r\n");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer.split_whitespace().nth(1);
    if status == Some("200") { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn run(path: &Path, log_format: Option<String>) -> ExitCode {
    let config = match Config::load(path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let set_level = init_logs(log_format.as_deref().unwrap_or(&config.log.format), &config.log.level);
    one_malloc_arena();
    // One thread: the daemon's work per message is a few microseconds, and every hop between
    // threads (a connection's event loop, the engine, the other connection) was a wake-up on
    // another core; on one thread the bridge used a third to a half less CPU per message and
    // answered sooner, on all three brokers (docs/PERFORMANCE.md, "One thread").
    let mut builder = tokio::runtime::Builder::new_current_thread();
    let coalesce = std::time::Duration::from_micros(config.delivery.coalesce_us);
    stomp_agent_bridge::bridge::wakeups::install(&mut builder, coalesce);
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The daemon runs as a task, not as the future `block_on` polls: a task that wakes
    // `block_on`'s own future makes the scheduler poll the I/O driver first (an `epoll_wait`
    // that returns at once), two per message when the engine was that future; between tasks
    // a wake-up is a push on the run queue (docs/PERFORMANCE.md, "Where the CPU goes").
    let path = path.to_owned();
    runtime.block_on(async move {
        match tokio::spawn(async move { serve(config, &path, set_level).await }).await {
            Ok(code) => code,
            // A panic ends the process as it did on the main thread (its message already said).
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => {
                eprintln!("the bridge's task ended abnormally: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

/// One malloc arena for the whole daemon, unless `MALLOC_ARENA_MAX` says otherwise. glibc's
/// default, an arena for each thread that allocates (the runtime's threads, the blocking
/// pool's), kept 1–2 MiB more resident for no gain (docs/PERFORMANCE.md, "Memory").
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn one_malloc_arena() {
    use std::ffi::c_int;
    const M_ARENA_MAX: c_int = -8;
    unsafe extern "C" {
        fn mallopt(param: c_int, value: c_int) -> c_int;
    }
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt sets one of glibc's allocator tunables; it is called before the
        // runtime starts any thread, and M_ARENA_MAX with a positive value is always valid.
        unsafe { mallopt(M_ARENA_MAX, 1) };
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn one_malloc_arena() {}

/// The services of the HTTP listener that `config` asks for (`[a2a]`, `[mcp]`), asking through
/// `relay`; `None`, its error logged, when one cannot be made (the bridge does not start).
fn services(
    config: &Config,
    relay: Option<&Arc<stomp_agent_bridge::relay::Relay>>,
) -> Option<stomp_agent_bridge::http::Services> {
    let Some(relay) = relay else { return Some(stomp_agent_bridge::http::Services { a2a: None, mcp: None }) };
    let a2a = stomp_agent_bridge::a2a::A2aService::of(config, relay)
        .map_err(|e| tracing::error!(error = %e, "cannot serve A2A ([a2a])"))
        .ok()?;
    let mcp = stomp_agent_bridge::mcp::McpService::of(config, relay)
        .map_err(|e| tracing::error!(error = %e, "cannot serve MCP ([mcp])"))
        .ok()?;
    Some(stomp_agent_bridge::http::Services { a2a, mcp })
}

async fn serve(config: Config, path: &Path, set_level: SetLevel) -> ExitCode {
    let metrics = Arc::new(Metrics::default());
    if let Err(e) = metrics.traces.install(&config.traces) {
        tracing::error!(error = %e, "cannot export traces ([traces])");
        return ExitCode::FAILURE;
    }
    let shutdown = CancellationToken::new();
    let relay = stomp_agent_bridge::relay::Relay::of(&config, metrics.clone());
    let Some(services) = services(&config, relay.as_ref()) else { return ExitCode::FAILURE };
    if !config.http.listen.is_empty() {
        let tls = match (&config.http.cert_file, &config.http.key_file) {
            (Some(cert), Some(key)) => match stomp_agent_bridge::http::tls::server_config(cert, key) {
                Ok(tls) => Some(tls),
                Err(e) => {
                    tracing::error!(error = %e, "cannot serve HTTPS (http.cert_file, http.key_file)");
                    return ExitCode::FAILURE;
                }
            },
            _ => None,
        };
        match tokio::net::TcpListener::bind(&config.http.listen).await {
            Ok(listener) => {
                let (metrics, shutdown) = (metrics.clone(), shutdown.clone());
                tokio::spawn(stomp_agent_bridge::http::serve(listener, tls, metrics, services, shutdown));
            }
            Err(e) => {
                tracing::error!(listen = %config.http.listen, error = %e, "cannot open the HTTP endpoint");
                return ExitCode::FAILURE;
            }
        }
    }
    tokio::spawn(on_signal(shutdown.clone()));
    let (reloads, requests) = tokio::sync::mpsc::channel(1);
    let reloader = Reloader::new(path.to_owned(), config.clone(), reloads, metrics.clone(), set_level);
    match on_hangup(reloader, shutdown.clone()) {
        Ok(reloading) => drop(tokio::spawn(reloading)),
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGHUP: the configuration cannot be reloaded")
        }
    }
    let attached = stomp_agent_bridge::bridge::Attached { reloads: Some(requests), relay };
    let ran = stomp_agent_bridge::bridge::run_with(config, metrics.clone(), shutdown.clone(), attached).await;
    if let Some(exporter) = metrics.traces.exporter() {
        // The spans of the last messages: sent, or given up after a bound.
        // (The bridge has stopped: nothing else needs this thread.)
        exporter.flush(std::time::Duration::from_secs(5));
    }
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "the bridge stopped");
            ExitCode::FAILURE
        }
    }
}

/// SIGTERM or SIGINT starts a clean shutdown.
async fn on_signal(shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = int.recv() => tracing::info!("SIGINT: shutting down"),
    }
    shutdown.cancel();
}

/// Starts the logs; the returned function sets the level again (a reload of `log.level`),
/// unless `RUST_LOG` set it, which stays in force.
fn init_logs(format: &str, level: &str) -> SetLevel {
    use tracing_subscriber::EnvFilter;
    let from_env = EnvFilter::try_from_default_env().ok();
    let overridden = from_env.is_some();
    let filter = from_env.unwrap_or_else(|| EnvFilter::new(with_sdks_quiet(level)));
    let json = match format {
        "json" => true,
        "text" => false,
        _ => !std::io::stderr().is_terminal(),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let set: Box<dyn Fn(EnvFilter) -> Result<(), String> + Send + Sync> = if json {
        let builder = builder.json().flatten_event(true).with_current_span(false).with_filter_reloading();
        let handle = builder.reload_handle();
        builder.init();
        Box::new(move |f| handle.reload(f).map_err(|e| e.to_string()))
    } else {
        let builder = builder.with_filter_reloading();
        let handle = builder.reload_handle();
        builder.init();
        Box::new(move |f| handle.reload(f).map_err(|e| e.to_string()))
    };
    Box::new(move |level: &str| {
        if overridden {
            return Err("RUST_LOG is set, and it overrides log.level".into());
        }
        set(EnvFilter::try_new(with_sdks_quiet(level)).map_err(|e| format!("{level:?}: {e}"))?)
    })
}

/// `level`, with the MCP SDK's lines at `warn`, and those of its request loop off, unless it
/// names the SDK (`rmcp...`): at `info` it logs three lines for every request it serves, and an
/// `ERROR` ("failed to send pending response during drain") for every call whose client went
/// away, its own bookkeeping rather than the bridge's events (each call's end, that one
/// included, is the bridge's own line).
fn with_sdks_quiet(level: &str) -> String {
    if level.contains("rmcp") { level.to_owned() } else { format!("{level},rmcp=warn,rmcp::service=off") }
}

fn translate(
    from: Framework,
    to: Framework,
    config: Option<PathBuf>,
    encoding: EncodingArg,
    direction: DirectionArg,
    agent: &str,
) -> ExitCode {
    let mut codecs = match config.map(|p| Config::load(&p)).transpose() {
        Ok(Some(config)) => stomp_agent_bridge::config::codecs(&config),
        Ok(None) => Codecs::default(),
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut body = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut body) {
        eprintln!("cannot read stdin: {e}");
        return ExitCode::FAILURE;
    }
    let direction = match direction {
        DirectionArg::Request => Direction::Request,
        DirectionArg::Response => Direction::Response,
    };
    let civitas = match encoding {
        EncodingArg::Json => Encoding::Json,
        EncodingArg::Msgpack => Encoding::Msgpack,
    };
    let origin = Origin { direction, recipient: agent, content_type: None };
    let result = codecs
        .decode(from, &body, origin, &mut SystemClock)
        .and_then(|env| codecs.encode(to, &env, Some(civitas), &mut SystemClock));
    match result {
        Ok(out) => {
            let _ = std::io::stdout().write_all(&out.body);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{from} → {to}: [{}] {e}", e.kind());
            ExitCode::FAILURE
        }
    }
}
