//! The shared store against a real Redis (`SAB_REDIS_PORT`, default 6379; scripts/test.sh
//! starts Debian's redis-server): two stores of one prefix are two bridges of one group.

use super::*;
use a2a::TaskStatus;
use std::sync::atomic::{AtomicU64, Ordering};

fn config(prefix: &str) -> StoreConfig {
    let port = std::env::var("SAB_REDIS_PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(6379);
    StoreConfig { port, prefix: prefix.into(), wait_ms: 2_000, ..StoreConfig::default() }
}

/// A prefix of its own for each test (and each run).
fn prefix() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("sab-test:{}:{}:{}:", std::process::id(), now_ms(), N.fetch_add(1, Ordering::Relaxed))
}

fn group(max: usize) -> (Arc<Shared>, Arc<Shared>) {
    let prefix = prefix();
    let store = || Shared::new(config(&prefix), max, Duration::from_secs(60), Duration::from_secs(60), None);
    (store(), store())
}

fn task(id: &str, state: TaskState) -> Task {
    Task {
        id: id.into(),
        context_id: "c".into(),
        status: TaskStatus { state, message: None, timestamp: None },
        artifacts: None,
        history: None,
        metadata: None,
    }
}

#[tokio::test]
async fn a_task_made_on_one_bridge_is_read_listed_and_canceled_on_another() {
    let (a, b) = group(10);
    a.create(task("t1", TaskState::Submitted)).await.unwrap();
    a.create(task("t2", TaskState::Submitted)).await.unwrap();
    assert_eq!(TaskStore::get(b.as_ref(), "t1").await.unwrap().unwrap().id, "t1");
    let req: ListTasksRequest = serde_json::from_value(serde_json::json!({"pageSize": 1})).unwrap();
    let page = TaskStore::list(b.as_ref(), &req).await.unwrap();
    assert_eq!((page.tasks[0].id.as_str(), page.total_size, page.next_page_token.as_str()), ("t2", 2, "1"));
    assert_eq!(b.begin_cancel("t1").await.unwrap().status.state, TaskState::Canceled);
    // The bridge that ran it cannot complete it now; it may write the same end again.
    let refused = a.update(task("t1", TaskState::Completed)).await.unwrap_err();
    assert_eq!(refused.code, error_code::TASK_NOT_CANCELABLE, "{refused:?}");
    a.update(task("t1", TaskState::Canceled)).await.unwrap();
    assert_eq!(b.begin_cancel("t1").await.unwrap_err().code, error_code::TASK_NOT_CANCELABLE);
    assert_eq!(b.begin_cancel("nope").await.unwrap_err().code, error_code::TASK_NOT_FOUND);
    assert_eq!(
        a.update(task("nope", TaskState::Working)).await.unwrap_err().code,
        error_code::TASK_NOT_FOUND
    );
}

#[tokio::test]
async fn a_new_task_past_the_bound_evicts_the_oldest_finished_one_of_the_group() {
    let (a, b) = group(2);
    a.create(task("a", TaskState::Submitted)).await.unwrap();
    b.create(task("b", TaskState::Submitted)).await.unwrap();
    b.update(task("b", TaskState::Completed)).await.unwrap();
    a.create(task("c", TaskState::Submitted)).await.unwrap();
    assert!(TaskStore::get(a.as_ref(), "b").await.unwrap().is_none(), "the finished one went");
    assert!(TaskStore::get(b.as_ref(), "a").await.unwrap().is_some(), "a running task is never evicted");
    let refused = b.create(task("d", TaskState::Submitted)).await.unwrap_err();
    assert!(refused.message.contains("a2a.max_tasks"), "{refused:?}");
}

#[tokio::test]
async fn changes_of_two_bridges_at_once_are_both_kept() {
    let (a, b) = group(10);
    a.create(task("t", TaskState::Working)).await.unwrap();
    let add = |name: &'static str| {
        move |mut t: Task| {
            let mut history = t.history.take().unwrap_or_default();
            history.push(a2a::Message::new(a2a::Role::Agent, vec![a2a::Part::text(name)]));
            t.history = Some(history);
            Ok(Some(t))
        }
    };
    let (one, two) = tokio::join!(a.change("t", add("a")), b.change("t", add("b")));
    assert!(one.unwrap().is_some() && two.unwrap().is_some());
    let stored = TaskStore::get(a.as_ref(), "t").await.unwrap().unwrap();
    assert_eq!(stored.history.unwrap().len(), 2, "neither change overwrote the other");
}

#[tokio::test]
async fn a_follower_on_one_bridge_wakes_when_another_changes_the_task() {
    let (a, b) = group(10);
    a.create(task("t", TaskState::Submitted)).await.unwrap();
    let mut followed = b.follow("t");
    let (_, version) = b.get_versioned("t").await.unwrap().unwrap();
    // The subscription may still be starting: change the task until the follower sees it.
    let seen = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            a.update(task("t", TaskState::Working)).await.unwrap();
            followed.next().await;
            let (_, now) = b.get_versioned("t").await.unwrap().unwrap();
            if now > version {
                return now;
            }
        }
    })
    .await
    .expect("woken within 30 s");
    assert!(seen > version);
    let mut adopted = a.adopted("t");
    b.announce_adopted("t").await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), adopted.woken()).await.expect("told it was adopted");
}

#[tokio::test]
async fn webhooks_set_on_one_bridge_are_read_on_another_and_bounded() {
    let (a, b) = group(10);
    a.create(task("t", TaskState::Working)).await.unwrap();
    let hook = |id: usize| TaskPushNotificationConfig {
        id: Some(format!("h{id}")),
        task_id: "t".into(),
        url: "https://hooks.example/a2a".into(),
        token: None,
        authentication: None,
        tenant: None,
    };
    for id in 0..MAX_WEBHOOKS {
        a.save_hook(&hook(id)).await.unwrap();
    }
    a.save_hook(&hook(0)).await.expect("replacing one is not one more");
    let refused = a.save_hook(&hook(MAX_WEBHOOKS)).await.unwrap_err();
    assert!(refused.message.contains("at most"), "{refused:?}");
    assert_eq!(b.hooks("t").await.unwrap().len(), MAX_WEBHOOKS);
    assert_eq!(b.hook("t", "h3").await.unwrap().url, "https://hooks.example/a2a");
    b.delete_hooks("t", Some("h3")).await.unwrap();
    assert_eq!(a.hook("t", "h3").await.unwrap_err().code, error_code::TASK_NOT_FOUND);
    b.delete_hooks("t", None).await.unwrap();
    assert!(a.hooks("t").await.unwrap().is_empty());
    let unknown = TaskPushNotificationConfig { task_id: "nope".into(), ..hook(0) };
    assert_eq!(a.save_hook(&unknown).await.unwrap_err().code, error_code::TASK_NOT_FOUND);
}

#[tokio::test]
async fn redis_away_is_an_internal_error_that_says_so_once_the_wait_is_over() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let away = StoreConfig { port, wait_ms: 300, ..config(&prefix()) };
    let store = Shared::new(away, 10, Duration::from_secs(60), Duration::from_secs(60), None);
    let failed = store.create(task("t", TaskState::Submitted)).await.unwrap_err();
    assert!(Shared::is_unavailable(&failed), "{failed:?}");
    assert!(failed.message.contains(&format!("127.0.0.1:{port}")), "{failed:?}");
}
