//! The runner's one error type.

/// A failure to run an experiment.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or changing the host failed.
    #[error(transparent)]
    Host(#[from] jitterlab_host::Error),
    /// The latency probe or a load failed.
    #[error(transparent)]
    Latency(#[from] jitterlab_latency::Error),
    /// A file of the experiment could not be read or written.
    #[error("{path}: {cause}")]
    Io {
        /// The file.
        path: String,
        /// What the system said.
        cause: std::io::Error,
    },
    /// A workload (a network namespace, iperf3, the multicast pair, a command) could
    /// not be set up or run.
    #[error("{what}: {error}")]
    Workload {
        /// What was being done (`ip netns add jl-exp-1234-0`, `iperf3 server`).
        what: String,
        /// What went wrong.
        error: String,
    },
    /// The recipe is malformed, or names what this machine does not have (a CPU
    /// that is not online, an IRQ it lacks): found before anything ran.
    #[error(transparent)]
    Recipe(jitterlab_experiment::RecipeError),
    /// The recipe asks for something this machine cannot give (a CPU that is not
    /// online, `irq-cpu` without a pinned peer, a missing program).
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    /// A [`Error::Workload`].
    pub fn workload(what: impl Into<String>, error: impl std::fmt::Display) -> Error {
        Error::Workload {
            what: what.into(),
            error: error.to_string(),
        }
    }
}

/// The runner's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
