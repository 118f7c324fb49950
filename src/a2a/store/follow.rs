//! The group's changes as they happen: one connection of each bridge subscribed to the store's
//! channels, `changed` (every change of a task, by any bridge) and `adopted` (an answer written
//! by a bridge that does not run its task), waking whoever follows that task here. While the
//! subscription is down every follower is woken every [`NOW_AND_THEN`], to read the task again.

use super::pool::Pool;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};

/// How often a follower reads its task without being woken (a message missed while the
/// subscription was down).
pub const NOW_AND_THEN: Duration = Duration::from_secs(2);

type Wakers = Mutex<HashMap<String, watch::Sender<()>>>;

pub struct Follow {
    changed: Arc<Wakers>,
    adopted: Arc<Wakers>,
    _stop: DropGuard,
}

/// One follower of one task: [`Followed::next`] returns at its next change (or after
/// [`NOW_AND_THEN`]).
pub struct Followed {
    woken: watch::Receiver<()>,
    id: String,
    wakers: Arc<Wakers>,
}

impl Follow {
    /// Starts the subscription, which ends when the returned value is dropped.
    pub fn spawn(pool: Arc<Pool>, prefix: &str) -> Arc<Follow> {
        let (changed, adopted) = (Arc::<Wakers>::default(), Arc::<Wakers>::default());
        let stop = CancellationToken::new();
        let channels = (format!("{prefix}changed"), format!("{prefix}adopted"));
        let listening = listen(pool, channels, changed.clone(), adopted.clone());
        let stopped = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = listening => {}
                () = stopped.cancelled() => {}
            }
        });
        Arc::new(Follow { changed, adopted, _stop: stop.drop_guard() })
    }

    pub fn changed(&self, id: &str) -> Followed {
        follower(&self.changed, id)
    }

    pub fn adopted(&self, id: &str) -> Followed {
        follower(&self.adopted, id)
    }
}

fn follower(wakers: &Arc<Wakers>, id: &str) -> Followed {
    let mut map = wakers.lock().unwrap_or_else(|e| e.into_inner());
    let woken = map.entry(id.to_owned()).or_insert_with(|| watch::channel(()).0).subscribe();
    Followed { woken, id: id.to_owned(), wakers: wakers.clone() }
}

impl Followed {
    /// Waits for the next change, or [`NOW_AND_THEN`].
    pub async fn next(&mut self) {
        let _ = tokio::time::timeout(NOW_AND_THEN, self.woken.changed()).await;
    }

    /// The task followed.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Waits for the next change only.
    pub async fn woken(&mut self) {
        if self.woken.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        let mut map = self.wakers.lock().unwrap_or_else(|e| e.into_inner());
        if map.get(&self.id).is_some_and(|w| w.receiver_count() <= 1) {
            map.remove(&self.id);
        }
    }
}

fn wake(wakers: &Wakers, id: &str) {
    if let Some(waker) = wakers.lock().unwrap_or_else(|e| e.into_inner()).get(id) {
        waker.send_replace(());
    }
}

/// Reads the channels' messages for as long as the store lives, subscribing again (with
/// backoff) whenever the connection fails.
async fn listen(pool: Arc<Pool>, channels: (String, String), changed: Arc<Wakers>, adopted: Arc<Wakers>) {
    let mut wait = Duration::from_millis(100);
    loop {
        let subscribed = pool.subscribe(&[channels.0.as_bytes(), channels.1.as_bytes()]).await;
        if let Ok(mut subscription) = subscribed {
            wait = Duration::from_millis(100);
            // What changed while nobody listened is read again by every follower.
            for wakers in [&changed, &adopted] {
                for waker in wakers.lock().unwrap_or_else(|e| e.into_inner()).values() {
                    waker.send_replace(());
                }
            }
            while let Ok((channel, id)) = subscription.next().await {
                let id = String::from_utf8_lossy(&id);
                if channel == channels.0.as_bytes() {
                    wake(&changed, &id);
                } else {
                    wake(&adopted, &id);
                }
            }
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_secs(2));
    }
}
