//! The recipe file as TOML gives it, with the spans that errors point at; the
//! checks and conversions are in `validate.rs`.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::plan::{Order, Trace};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Recipe {
    pub name: Spanned<String>,
    pub description: Option<String>,
    pub rounds: Option<Spanned<i64>>,
    pub duration: Option<Spanned<String>>,
    pub warmup: Option<Spanned<i64>>,
    pub order: Option<Order>,
    pub seed: Option<Spanned<i64>>,
    pub noise: Option<Spanned<toml::Value>>,
    pub precision: Option<Spanned<toml::Value>>,
    pub trace: Option<Trace>,
    pub setup: Option<String>,
    pub teardown: Option<String>,
    #[serde(default)]
    pub factors: Factors,
    pub workload: Option<Workload>,
    #[serde(default)]
    pub measure: Measures,
    pub baseline: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
}

pub(super) type Strings = Option<Spanned<Vec<Spanned<String>>>>;

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Factors {
    pub affinity: Strings,
    pub irq: Strings,
    pub partition: Strings,
    pub bitrate: Strings,
    pub load: Strings,
    pub setup: Option<Spanned<Vec<Spanned<Setup>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Setup {
    pub name: Spanned<String>,
    pub setup: Option<String>,
    pub teardown: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Workload {
    pub command: Spanned<String>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Measures {
    pub latency: Option<Latency>,
    #[serde(default)]
    pub command: Vec<Spanned<Command>>,
    pub tcp: Option<Tcp>,
    pub mcast: Option<Mcast>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Latency {
    pub cpus: Option<Spanned<String>>,
    pub interval: Option<Spanned<String>>,
    pub priority: Option<Spanned<i64>>,
    #[serde(rename = "break")]
    pub break_: Option<Spanned<String>>,
}

#[derive(Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Better {
    Higher,
    Lower,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Command {
    pub name: Spanned<String>,
    pub command: Spanned<String>,
    pub json: Option<Spanned<String>>,
    pub regex: Option<Spanned<String>>,
    pub unit: String,
    pub better: Better,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Tcp {
    pub bitrate: Option<Spanned<String>>,
    pub streams: Option<Spanned<i64>>,
    pub interval: Option<Spanned<String>>,
    pub server_cpus: Option<Spanned<String>>,
    pub client_cpus: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Mcast {
    pub payload: Option<Spanned<i64>>,
    pub rate: Option<Spanned<i64>>,
    pub interval: Option<Spanned<String>>,
    pub sender_cpus: Option<Spanned<String>>,
    pub receiver_cpus: Option<Spanned<String>>,
}
