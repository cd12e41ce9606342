//! The use cases that join the engine to render's writers: each opens its input, runs
//! the trace's one pass (`jitterlab_analyze::engine`) with render's sinks or hands the
//! analysis to render's HTML page, and returns the model of what it wrote. The commands
//! call these as they call a library entry point; render below them only writes bytes.

pub mod convert;
pub mod view;
