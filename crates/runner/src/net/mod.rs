//! The built-in network workloads, each in private network namespaces that the
//! runner creates and removes (never the host's own interfaces).

pub mod mcast;
pub mod netns;
pub mod seq;
pub mod tcp;
