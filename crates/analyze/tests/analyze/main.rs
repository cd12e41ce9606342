//! The analyze crate's tests: synthetic event sequences for each edge case of the state
//! machine, the analyses on small hand-made traces, and the real traces of this machine
//! checked against independent computations over the kernel's own text.

mod analyses;
mod functions;
mod machine;
mod real;
mod util;
mod veth;
