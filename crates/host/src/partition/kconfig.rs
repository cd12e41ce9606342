//! The running kernel's build configuration, where it is readable: which
//! isolation boot options it honours (nohz_full needs CONFIG_NO_HZ_FULL, ...).

use std::collections::HashMap;
use std::io::Read;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::root::Root;

/// `CONFIG_*` options of the running kernel.
#[derive(Clone, Debug, Serialize)]
pub struct KernelConfig {
    /// The file it was read from.
    pub source: String,
    #[serde(skip)]
    options: HashMap<String, String>,
}

impl KernelConfig {
    /// Reads `/proc/config.gz` (CONFIG_IKCONFIG_PROC), else
    /// `/boot/config-<release>`, else `/lib/modules/<release>/config`; `None` when
    /// none is readable.
    pub fn read(root: &Root) -> Result<Option<KernelConfig>> {
        let gz = root.path("/proc/config.gz");
        if let Ok(bytes) = root.read_bytes("/proc/config.gz") {
            // Bounded after decompression too: a small file may inflate without end.
            let mut text = String::new();
            flate2::read::GzDecoder::new(bytes.as_slice())
                .take(crate::root::READ_LIMIT + 1)
                .read_to_string(&mut text)
                .map_err(|e| Error::io(&gz, e))?;
            if text.len() as u64 > crate::root::READ_LIMIT {
                return Err(Error::TooLarge {
                    path: gz,
                    limit: crate::root::READ_LIMIT,
                });
            }
            return Ok(Some(KernelConfig::parse("/proc/config.gz", &text)));
        }
        let release = root
            .read_line_opt("/proc/sys/kernel/osrelease")?
            .unwrap_or_default();
        if release.is_empty() {
            return Ok(None);
        }
        for path in [
            format!("/boot/config-{release}"),
            format!("/lib/modules/{release}/config"),
        ] {
            if let Some(text) = root.read_opt(&path)? {
                return Ok(Some(KernelConfig::parse(&path, &text)));
            }
        }
        Ok(None)
    }

    /// Parses `.config` text: `CONFIG_X=y` lines; `# CONFIG_X is not set` and
    /// absent options are off.
    pub fn parse(source: &str, text: &str) -> KernelConfig {
        let options = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .filter(|(k, _)| k.starts_with("CONFIG_"))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        KernelConfig {
            source: source.to_string(),
            options,
        }
    }

    /// The value of `CONFIG_<name>` (`y`, `m`, `250`), or `None` when it is not set.
    pub fn value(&self, name: &str) -> Option<&str> {
        let key = format!("CONFIG_{}", name.trim_start_matches("CONFIG_"));
        self.options.get(&key).map(String::as_str)
    }

    /// Whether `CONFIG_<name>` is built in or a module.
    pub fn enabled(&self, name: &str) -> bool {
        let key = format!("CONFIG_{}", name.trim_start_matches("CONFIG_"));
        matches!(self.options.get(&key).map(String::as_str), Some("y" | "m"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_unset_and_absent() {
        let c = KernelConfig::parse(
            "t",
            "CONFIG_NO_HZ_IDLE=y\n# CONFIG_NO_HZ_FULL is not set\nCONFIG_HZ=250\nCONFIG_X=m\n",
        );
        assert!(c.enabled("NO_HZ_IDLE"));
        assert!(c.enabled("CONFIG_X"));
        assert!(!c.enabled("NO_HZ_FULL"));
        assert!(!c.enabled("RCU_NOCB_CPU"));
    }
}
