//! The Wise Agents registry in Redis (`WiseAgentRegistry`, core.py): its pickled values read
//! as data and written in the shapes Wise Agents writes.

pub mod dumps;
pub mod member;
pub mod pickle;
pub mod resp;
pub mod stage;
pub mod store;
