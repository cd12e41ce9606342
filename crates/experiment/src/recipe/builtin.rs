//! The built-in recipes, one per seed question, embedded from `recipes/*.toml`.

use super::{Recipe, RecipeError};

/// A built-in recipe.
#[derive(Clone, Copy, Debug)]
pub struct Builtin {
    /// Its name (`--recipe NAME`), the same as the recipe's `name`.
    pub name: &'static str,
    /// The recipe file, as `--show NAME` prints it.
    pub text: &'static str,
}

impl Builtin {
    /// The recipe, parsed (the tests parse every one).
    pub fn recipe(&self) -> Result<Recipe, RecipeError> {
        Recipe::parse(&format!("<built-in {}>", self.name), self.text)
    }
}

const BUILTINS: [Builtin; 4] = [
    Builtin {
        name: "tcp-affinity",
        text: include_str!("../../recipes/tcp-affinity.toml"),
    },
    Builtin {
        name: "mcast-pinning",
        text: include_str!("../../recipes/mcast-pinning.toml"),
    },
    Builtin {
        name: "partition",
        text: include_str!("../../recipes/partition.toml"),
    },
    Builtin {
        name: "latency-hunt",
        text: include_str!("../../recipes/latency-hunt.toml"),
    },
];

/// Every built-in recipe (`--list`).
pub fn builtins() -> &'static [Builtin] {
    &BUILTINS
}

/// The built-in recipe called `name`.
pub fn builtin(name: &str) -> Option<Builtin> {
    BUILTINS.iter().copied().find(|b| b.name == name)
}
