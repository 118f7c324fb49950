//! A stage beside the engine (the Wise Agents registry's, the calls to A2A agents): a job goes
//! out with an id, its result comes back with that id, and the work it is for waits parked here
//! meanwhile, still the engine's, so that a slow stage holds only the work that needs it.

use crate::a2a::call::{Call, Called, Calls};
use crate::bridge::delivery::Work;
use crate::wise_registry::stage::{Check, Checked, Checks};
use std::collections::HashMap;

/// What the engine needs of a stage: to hand it a job, and its next result.
pub trait SideStage {
    type Job;
    type Done;
    fn send(&self, job: Self::Job);
    fn next(&mut self) -> impl Future<Output = Option<Self::Done>> + Send;
    /// The id of the job `done` is the result of.
    fn id(done: &Self::Done) -> u64;
}

/// A stage, if one runs, and the work parked on its jobs by id.
pub struct Side<S> {
    stage: Option<S>,
    parked: HashMap<u64, Work>,
    next_id: u64,
}

impl<S: SideStage> Side<S> {
    pub fn new(stage: Option<S>) -> Self {
        Side { stage, parked: HashMap::new(), next_id: 0 }
    }

    pub fn stage(&self) -> Option<&S> {
        self.stage.as_ref()
    }

    /// The work parked.
    pub fn len(&self) -> usize {
        self.parked.len()
    }

    pub fn is_empty(&self) -> bool {
        self.parked.is_empty()
    }

    /// Parks `work` and hands the stage the job `job` makes with its id; without a stage, the
    /// work is given back.
    #[must_use]
    pub fn park(&mut self, work: Work, job: impl FnOnce(u64) -> S::Job) -> Option<Work> {
        let Some(stage) = &self.stage else { return Some(work) };
        self.next_id += 1;
        stage.send(job(self.next_id));
        self.parked.insert(self.next_id, work);
        None
    }

    /// The next result with its work (never, without a stage). A result whose work was taken
    /// back meanwhile ([`Side::take_stale`]) is passed over. Cancel-safe: a result is taken
    /// from the stage and matched with its work with no wait between.
    pub async fn next(&mut self) -> Option<(S::Done, Work)> {
        let Some(stage) = self.stage.as_mut() else { return std::future::pending().await };
        loop {
            let done = stage.next().await?;
            if let Some(work) = self.parked.remove(&S::id(&done)) {
                return Some((done, work));
            }
        }
    }

    /// Takes back the work of connections before `epoch` (its message comes again).
    pub fn take_stale(&mut self, epoch: u64) -> Vec<Work> {
        let stale: Vec<u64> =
            self.parked.iter().filter(|(_, w)| w.source.ack_ref().epoch < epoch).map(|(id, _)| *id).collect();
        stale.iter().filter_map(|id| self.parked.remove(id)).collect()
    }

    /// Takes back all the work parked.
    pub fn take_all(&mut self) -> impl Iterator<Item = Work> + use<S> {
        std::mem::take(&mut self.parked).into_values()
    }
}

impl SideStage for Checks {
    type Job = Check;
    type Done = Checked;

    fn send(&self, job: Check) {
        self.check(job);
    }

    fn next(&mut self) -> impl Future<Output = Option<Checked>> + Send {
        Checks::next(self)
    }

    fn id(done: &Checked) -> u64 {
        done.id
    }
}

impl SideStage for Calls {
    type Job = Call;
    type Done = Called;

    fn send(&self, job: Call) {
        self.call(job);
    }

    fn next(&mut self) -> impl Future<Output = Option<Called>> + Send {
        Calls::next(self)
    }

    fn id(done: &Called) -> u64 {
        done.id
    }
}
