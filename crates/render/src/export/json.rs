//! The JSON format: any [`Render`] model inside a versioned envelope, pretty-printed:
//!
//! ```json
//! {"schema": "jitterlab.show.irqs", "version": 1, "data": { ... }}
//! ```
//!
//! `schema` names the shape of `data`; `version` is raised whenever a field is removed or
//! changes meaning (adding a field does not raise it). `data` is the model's `Serialize`
//! form as is: integer nanoseconds, no unit conversion.

use std::io::{self, Write};

use serde::Serialize;

use super::Exporter;
use crate::Render;

/// The JSON envelope format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Json;

/// The envelope around a model.
#[derive(Serialize)]
pub(crate) struct Envelope<'a, T: Serialize> {
    pub(crate) schema: &'static str,
    pub(crate) version: u32,
    pub(crate) data: &'a T,
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
