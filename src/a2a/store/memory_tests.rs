use super::*;
use a2a::TaskStatus;

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
async fn a_new_task_past_the_bound_evicts_the_oldest_finished_one() {
    let tasks = Memory::new(2, Duration::from_secs(3600), None);
    tasks.create(task("a", TaskState::Submitted)).await.unwrap();
    tasks.create(task("b", TaskState::Submitted)).await.unwrap();
    tasks.update(task("b", TaskState::Completed)).await.unwrap();
    tasks.create(task("c", TaskState::Submitted)).await.unwrap();
    assert!(TaskStore::get(&tasks, "b").await.unwrap().is_none(), "the finished one went");
    assert!(TaskStore::get(&tasks, "a").await.unwrap().is_some(), "a running task is never evicted");
    let refused = tasks.create(task("d", TaskState::Submitted)).await.unwrap_err();
    assert!(refused.message.contains("a2a.max_tasks"), "{refused:?}");
}

#[tokio::test(start_paused = true)]
async fn a_finished_task_is_forgotten_after_its_ttl() {
    let tasks = Memory::new(10, Duration::from_secs(60), None);
    tasks.create(task("a", TaskState::Submitted)).await.unwrap();
    tasks.update(task("a", TaskState::Failed)).await.unwrap();
    tasks.create(task("b", TaskState::Submitted)).await.unwrap();
    tokio::time::advance(Duration::from_secs(61)).await;
    tasks.create(task("c", TaskState::Submitted)).await.unwrap();
    assert!(TaskStore::get(&tasks, "a").await.unwrap().is_none());
    assert!(TaskStore::get(&tasks, "b").await.unwrap().is_some(), "still running");
}

#[tokio::test]
async fn a_running_task_cancels_once_and_a_finished_one_not_at_all() {
    let tasks = Memory::new(10, Duration::from_secs(60), None);
    tasks.create(task("a", TaskState::Working)).await.unwrap();
    assert_eq!(tasks.begin_cancel("a").await.unwrap().status.state, TaskState::Canceled);
    assert_eq!(tasks.begin_cancel("a").await.unwrap_err().code, a2a::error_code::TASK_NOT_CANCELABLE);
    assert_eq!(tasks.begin_cancel("zz").await.unwrap_err().code, a2a::error_code::TASK_NOT_FOUND);
}

#[tokio::test]
async fn listing_pages_through_the_newest_first() {
    let tasks = Memory::new(10, Duration::from_secs(60), None);
    for id in ["a", "b", "c"] {
        tasks.create(task(id, TaskState::Submitted)).await.unwrap();
    }
    let req = |token: Option<&str>| ListTasksRequest {
        context_id: None,
        status: None,
        page_size: Some(2),
        page_token: token.map(str::to_owned),
        history_length: None,
        status_timestamp_after: None,
        include_artifacts: None,
        tenant: None,
    };
    let first = TaskStore::list(&tasks, &req(None)).await.unwrap();
    let ids: Vec<&str> = first.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!((ids, first.total_size), (vec!["c", "b"], 3));
    let second = TaskStore::list(&tasks, &req(Some(&first.next_page_token))).await.unwrap();
    assert_eq!(second.tasks.len(), 1);
    assert_eq!(second.next_page_token, "");
}
