//! `SubscribeToTask` on a bridge that does not run the task, with the tasks shared
//! (`[a2a.store]`): the stream is the task as the store has it, first as it stands, then
//! again at each change any bridge makes, until it ends (as a client following a task over
//! A2A sees it: each event a whole `Task`).

use super::store::Shared;
use a2a::{A2AError, StreamResponse};
use futures_util::StreamExt as _;
use futures_util::stream::{self, BoxStream};
use std::sync::Arc;

type Events = BoxStream<'static, Result<StreamResponse, A2AError>>;

/// The stream of `id`; `None` when the store does not have it. A task that ended is refused
/// as the SDK refuses it.
pub async fn follow(shared: Arc<Shared>, id: &str) -> Result<Option<Events>, A2AError> {
    let followed = shared.follow(id);
    let Some((task, version)) = shared.get_versioned(id).await? else { return Ok(None) };
    if task.status.state.is_terminal() {
        return Err(A2AError::unsupported_operation(format!(
            "task {id} has already reached a terminal state"
        )));
    }
    let first = stream::iter([Ok::<_, A2AError>(StreamResponse::Task(task))]);
    let rest = stream::unfold(Some((shared, followed, version)), |state| async move {
        let (shared, mut followed, seen) = state?;
        loop {
            followed.next().await;
            match shared.get_versioned(followed.id()).await {
                Ok(Some((task, version))) if version > seen => {
                    let more = (!task.status.state.is_terminal()).then_some((shared, followed, version));
                    return Some((Ok(StreamResponse::Task(task)), more));
                }
                Ok(Some(_)) => {}
                // Forgotten meanwhile (its TTL): nothing more to follow.
                Ok(None) => return None,
                // Redis away past `a2a.store.wait_ms`: the stream ends with why.
                Err(e) => return Some((Err(e), None)),
            }
        }
    });
    Ok(Some(Box::pin(first.chain(rest))))
}
