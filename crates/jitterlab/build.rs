//! The commit `jitterlab --version` names: `JITTERLAB_COMMIT` from the environment when
//! set (a package built from a tarball), else `git rev-parse --short HEAD` of the clone
//! being built, else `unknown`. Rebuilt when HEAD moves.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=JITTERLAB_COMMIT");
    let commit = match std::env::var("JITTERLAB_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => {
            watch_head();
            git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into())
        }
    };
    println!("cargo:rustc-env=JITTERLAB_COMMIT={commit}");
}

/// `git ARGS` in this crate's directory: its trimmed output, if it succeeded.
fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

/// Re-run when HEAD, the branch it names or the packed refs change (only files that
/// exist: a missing one would re-run the script on every build).
fn watch_head() {
    let (Some(dir), Some(common)) = (
        git(&["rev-parse", "--absolute-git-dir"]),
        git(&["rev-parse", "--git-common-dir"]),
    ) else {
        return;
    };
    let dir = PathBuf::from(dir);
    // --git-common-dir may be relative to the crate's directory.
    let common = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(|m| Path::new(&m).join(&common))
        .unwrap_or_else(|| PathBuf::from(&common));
    let mut files = vec![dir.join("HEAD"), common.join("packed-refs")];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        files.push(dir.join(&branch));
        files.push(common.join(&branch));
    }
    for f in files.iter().filter(|f| f.is_file()) {
        println!("cargo:rerun-if-changed={}", f.display());
    }
}
