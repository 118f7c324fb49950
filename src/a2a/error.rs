//! Why the bridge's A2A side could not do something, one type for both ways: what a log line,
//! a dead letter's `bridge-error` or a task's status message says is one of these. (The SDK's
//! `A2AError` is the protocol's error object, what an agent or a client is answered.)

#[derive(Debug, thiserror::Error)]
pub enum A2aFailure {
    /// An A2A agent of the configuration whose HTTP client cannot be made (its TLS files).
    #[error("agent {agent}: {why}")]
    Agent { agent: String, why: String },
    /// The pipeline's request for an agent is not a `SendMessageRequest` (a bug, not input).
    #[error("the request for {agent} is not a SendMessageRequest: {why}")]
    Request { agent: String, why: String },
    #[error("the A2A call stage is closing")]
    Closing,
    #[error("{agent} is an A2A agent but no call stage runs")]
    NoStage { agent: String },
    #[error("{agent} is not an A2A agent of this bridge")]
    Unknown { agent: String },
    /// A bug in the SDK's client: the asker is answered and the request dead-lettered.
    #[error("the A2A client panicked during the call")]
    Panicked,
    #[error("{agent} had no free call (max_calls) before the reply timeout")]
    NoFreeCall { agent: String },
    /// The agent's own answer to this request was an error: another attempt would get it too.
    #[error("{agent} refused the call: {message} (code {code})")]
    Refused { agent: String, message: String, code: i32 },
    /// No answer within the attempts or before the reply timeout; `last` is the last attempt's.
    #[error("{agent} did not answer ({attempts} attempts): {last}")]
    NoAnswer { agent: String, attempts: u32, last: String },
    #[error("the A2A agent's answer cannot be read: {0}")]
    Unreadable(String),
    /// A message part a Wise Agents message cannot carry (`what`: which).
    #[error("{what} cannot be carried in a Wise Agents message: send text or data parts")]
    Uncarried { what: &'static str },
    #[error("the message has no text or data part")]
    NoText,
    #[error("no message")]
    NoMessage,
}
