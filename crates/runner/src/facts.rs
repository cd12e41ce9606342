//! A recipe checked against this machine before anything runs.

use jitterlab_experiment::recipe::{HostFacts, IrqFacts};
use jitterlab_experiment::Recipe;
use jitterlab_host::irqs::IrqMap;
use jitterlab_host::Root;

use crate::error::{Error, Result};

/// What a recipe is checked against: the online CPUs of `root` and the IRQs of its
/// `/proc/interrupts` (each with its label and its actions' names).
pub fn host_facts(root: &Root) -> Result<HostFacts> {
    let online = jitterlab_host::cpus::online(root)?;
    let irqs = IrqMap::read(root)?
        .irqs
        .iter()
        .map(|i| IrqFacts {
            irq: i.irq,
            names: std::iter::once(i.label())
                .chain(i.actions().map(str::to_string))
                .collect(),
        })
        .collect();
    Ok(HostFacts { online, irqs })
}

/// Parses the recipe `text` (named `file` in errors) and checks it against the
/// machine of `root` ([`Recipe::parse_on`]): a recipe that names a CPU that is not
/// online, an IRQ the machine lacks or a partition that leaves no CPU for
/// housekeeping is [`Error::Recipe`], found before anything runs.
pub fn parse_recipe(root: &Root, file: &str, text: &str) -> Result<Recipe> {
    Recipe::parse_on(file, text, &host_facts(root)?).map_err(Error::Recipe)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm2() -> Root {
        Root::at(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../host/tests/fixtures/vm2"
        ))
    }

    #[test]
    fn facts_of_the_fixture_machine() {
        let facts = host_facts(&vm2()).unwrap();
        assert_eq!(facts.online.to_string(), "0-1");
        let irq36 = facts.irqs.iter().find(|i| i.irq == 36).unwrap();
        assert!(
            irq36.names.contains(&"virtio1-req.0".to_string()),
            "{irq36:?}"
        );
        let recipe = |irq: &str| {
            format!("name = \"x\"\n[measure.latency]\n[factors]\nirq = [\"{irq}=1\"]\n")
        };
        assert!(parse_recipe(&vm2(), "ok.toml", &recipe("virtio1-req*")).is_ok());
        assert!(parse_recipe(&vm2(), "ok.toml", &recipe("36")).is_ok());
        let err = parse_recipe(&vm2(), "bad.toml", &recipe("37-req*")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "bad.toml:4:8: irq 37-req*=1: no IRQ of this machine is named \"37-req*\" \
             (jitterlab show irqs lists them)"
        );
    }
}
