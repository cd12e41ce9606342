//! How a command's result ends. Each result model that decides it says its own
//! [`Status`] (`IrqSetReport::status`, `PinReport::status`, `VerifyReport::status`, the
//! latency, audit and experiment reports' ...); the command line only maps it to the
//! process exit status and never looks into the model to find it.

/// What a result says of how its command went, in the words of the documented exit
/// statuses (GUIDE.md, "Exit status"), which the binary maps it to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Everything asked was done (exit status 0).
    Ok,
    /// Partly failed: something asked was refused or could not be done, the rest was
    /// done and the result says which (exit status 1).
    Failed,
    /// The request was refused before anything changed, and the result says why
    /// (`isolate`'s plan with a failed check; exit status 2).
    Invalid,
    /// A limit was hit: a latency above the threshold, a run ended by a break, a CPU
    /// that is not isolated or not fit for real-time work (exit status 3).
    Limit,
    /// A command that was started ended with this status, as a shell gives it (127:
    /// not found, 126: not runnable, 128 + N: ended by signal N).
    Command(u8),
}

impl Status {
    /// [`Status::Failed`] if `failed`, else [`Status::Ok`].
    pub fn failed_if(failed: bool) -> Status {
        if failed {
            Status::Failed
        } else {
            Status::Ok
        }
    }

    /// [`Status::Limit`] if `hit`, else [`Status::Ok`].
    pub fn limit_if(hit: bool) -> Status {
        if hit {
            Status::Limit
        } else {
            Status::Ok
        }
    }
}
