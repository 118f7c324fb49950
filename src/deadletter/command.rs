//! `stomp-agent-bridge dead-letters list|show|replay`: the operator's commands.

use super::{DeadLetter, DeadLetterError, Filter, Queue, ReplayOutcome, now_ms, parse_age, parse_rate, show};
use crate::config::Config;
use clap::{Args, Subcommand};
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// What to do with the dead-letter queue.
#[derive(Debug, Subcommand)]
pub enum Action {
    /// List dead letters (browsed, not consumed, where the broker can).
    List {
        #[command(flatten)]
        pick: Pick,
    },
    /// Every header and the body of the dead letters with these ids.
    Show {
        #[arg(required = true)]
        ids: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Send dead letters back to their `bridge-source` (or `--to`), each acknowledged only
    /// once the broker confirmed its replay.
    Replay {
        #[command(flatten)]
        pick: Pick,
        /// Only these ids (as listed; a prefix is enough).
        #[arg(long = "id")]
        ids: Vec<String>,
        /// Send to this destination instead of each message's `bridge-source`.
        #[arg(long)]
        to: Option<String>,
        /// Most messages replayed per second (0: no limit; else 0.001 to 100000).
        #[arg(long, default_value_t = 50.0, value_parser = parse_rate)]
        rate: f64,
        /// Say what would be replayed, and send nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// Which dead letters, and how to print them.
#[derive(Debug, Args)]
pub struct Pick {
    /// Only this `bridge-error-kind` (e.g. `too_large`, `yaml`).
    #[arg(long)]
    kind: Option<String>,
    /// Only this `bridge-source` (the destination the message was read from).
    #[arg(long)]
    source: Option<String>,
    /// Only messages at least this old (90s, 15m, 2h, 7d).
    #[arg(long, value_parser = parse_age)]
    older_than: Option<Duration>,
    /// Only messages at most this old.
    #[arg(long, value_parser = parse_age)]
    newer_than: Option<Duration>,
    /// JSON lines instead of a table (and no progress).
    #[arg(long)]
    json: bool,
}

impl Pick {
    fn filter(&self, ids: Vec<String>) -> Filter {
        Filter {
            ids,
            kind: self.kind.clone(),
            source: self.source.clone(),
            older_than: self.older_than,
            newer_than: self.newer_than,
        }
    }
}

/// Runs `action` on `queue` (default: the configuration's `delivery.dead_letter`).
pub async fn run(config: &Config, queue: Option<&str>, action: Action) -> Result<(), DeadLetterError> {
    let destination = queue.unwrap_or(&config.delivery.dead_letter);
    let consume = matches!(action, Action::Replay { dry_run: false, .. });
    let mut q = Queue::open(config, destination, consume).await?;
    let all = q.read_all().await;
    let result = match all {
        Ok(all) => act(&q, &all, action).await,
        Err(e) => Err(e),
    };
    let closed = q.close().await;
    result.and(closed)
}

async fn act(q: &Queue, all: &[DeadLetter], action: Action) -> Result<(), DeadLetterError> {
    let now = now_ms();
    let mut out = std::io::stdout().lock();
    match action {
        Action::List { pick } => {
            let filter = pick.filter(Vec::new());
            let chosen: Vec<&DeadLetter> = all.iter().filter(|d| filter.matches(d, now)).collect();
            if pick.json {
                for dl in chosen {
                    let _ = writeln!(out, "{}", show::json_line(dl, now, false));
                }
            } else {
                let _ = write!(out, "{}", show::table(&chosen, now));
                let _ = writeln!(out, "{} of {} dead letters", chosen.len(), all.len());
            }
        }
        Action::Show { ids, json } => {
            let filter = Filter { ids, ..Filter::default() };
            for dl in all.iter().filter(|d| filter.matches(d, now)) {
                let _ = match json {
                    true => writeln!(out, "{}", show::json_line(dl, now, true)),
                    false => writeln!(out, "{}", show::detail(dl)),
                };
            }
        }
        Action::Replay { pick, ids, to, rate, dry_run } => {
            let filter = pick.filter(ids);
            let chosen: Vec<&DeadLetter> = all.iter().filter(|d| filter.matches(d, now)).collect();
            replay(q, &chosen, to.as_deref(), rate, dry_run, pick.json).await?;
        }
    }
    Ok(())
}

/// Replays `chosen` in order at `rate` a second, with a counter on a terminal.
async fn replay(
    q: &Queue,
    chosen: &[&DeadLetter],
    to: Option<&str>,
    rate: f64,
    dry_run: bool,
    json: bool,
) -> Result<(), DeadLetterError> {
    let mut pace = (rate > 0.0).then(|| {
        let mut i = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
        i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        i
    });
    let progress = !json && std::io::stderr().is_terminal();
    let (mut out, total) = (std::io::stdout().lock(), chosen.len());
    let mut counts = [0usize; 3];
    for (n, dl) in chosen.iter().enumerate() {
        if let Some(pace) = pace.as_mut() {
            pace.tick().await;
        }
        let outcome = q.replay(dl, to, dry_run).await?;
        counts[match outcome {
            ReplayOutcome::Replayed { .. } => 0,
            ReplayOutcome::WouldReplay { .. } => 1,
            ReplayOutcome::NoDestination => 2,
        }] += 1;
        if json {
            let _ = writeln!(out, "{}", show::replay_line(dl, &outcome));
        } else if progress {
            eprint!("\r{} {}/{total}", if dry_run { "checked" } else { "replayed" }, n + 1);
        }
    }
    if progress {
        eprintln!();
    }
    if !json {
        let [replayed, would, none] = counts;
        let mut said = vec![format!("{replayed} replayed")];
        if dry_run {
            said = vec![format!("{would} would be replayed (dry run)")];
        }
        if none > 0 {
            said.push(format!("{none} left: no bridge-source and no --to"));
        }
        let _ = writeln!(out, "{} of {total} chosen", said.join(", "));
    }
    Ok(())
}
