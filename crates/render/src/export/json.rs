//! The JSON format: any [`Render`] model inside a versioned envelope, pretty-printed:
//!
//! ```json
//! {"schema": "jitterlab.show.irqs", "version": 1, "producer": "jitterlab 0.1.0", "data": { ... }}
//! ```
//!
//! `schema` names the shape of `data`; `version` is raised whenever a field is removed or
//! changes meaning (adding a field does not raise it); `producer` is the jitterlab that
//! wrote it ([`PRODUCER`]). `data` is the model's `Serialize` form as is: integer
//! nanoseconds, no unit conversion.

use std::io::{self, Write};

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use super::Exporter;
use crate::Render;

/// The JSON envelope format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Json;

/// The program and version every envelope names as its `producer`:
/// `jitterlab 0.1.0`.
pub(crate) const PRODUCER: &str = concat!("jitterlab ", env!("CARGO_PKG_VERSION"));

/// The envelope around a model; serialized with the [`PRODUCER`] between `version` and
/// `data`.
pub(crate) struct Envelope<'a, T: Serialize> {
    pub(crate) schema: &'static str,
    pub(crate) version: u32,
    pub(crate) data: &'a T,
}

impl<T: Serialize> Serialize for Envelope<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut env = s.serialize_struct("Envelope", 4)?;
        env.serialize_field("schema", self.schema)?;
        env.serialize_field("version", &self.version)?;
        env.serialize_field("producer", PRODUCER)?;
        env.serialize_field("data", self.data)?;
        env.end()
    }
}

impl<M: Render> Exporter<M> for Json {
    fn write(&self, model: &M, out: &mut dyn Write) -> io::Result<()> {
        let env = Envelope {
            schema: M::SCHEMA,
            version: M::VERSION,
            data: model,
        };
        serde_json::to_writer_pretty(&mut *out, &env)?;
        writeln!(out)
    }
}
