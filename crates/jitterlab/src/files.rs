//! What the user gave is never lost: before a command does anything, its inputs are
//! registered ([`jitterlab_trace::output::protect_input`]) and each of its outputs —
//! and standard output — is checked not to be one of them (the same file by device and
//! inode: `-o ./x.dat`, a symlink or a hard link to the input are all refused). Every
//! writer checks again when it creates a file (`OutputFile::create`), which covers the
//! outputs a command derives later (`view`'s default `INPUT.html`, an export's files).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use jitterlab_trace::output::{check_output, protect_input};

use crate::exit::Error;

/// The files a command reads and writes, as given on its command line.
#[derive(Debug, Default)]
pub struct Files<'a> {
    /// Traces, results, recipes.
    pub inputs: Vec<Cow<'a, Path>>,
    /// Files and directories it writes (`-` is standard output).
    pub outputs: Vec<&'a Path>,
    /// Which of `outputs` are directories it writes into (the others are files).
    pub dirs: Vec<&'a Path>,
}

impl<'a> Files<'a> {
    /// An input.
    pub fn input(&mut self, path: &'a Path) -> &mut Self {
        self.inputs.push(Cow::Borrowed(path));
        self
    }

    /// An input whose path the command derives (a file inside a directory given).
    pub fn input_owned(&mut self, path: PathBuf) -> &mut Self {
        self.inputs.push(Cow::Owned(path));
        self
    }

    /// An optional input.
    pub fn input_opt(&mut self, path: Option<&'a PathBuf>) -> &mut Self {
        self.inputs.extend(path.map(|p| Cow::Borrowed(p.as_path())));
        self
    }

    /// An output.
    pub fn output(&mut self, path: &'a Path) -> &mut Self {
        self.outputs.push(path);
        self
    }

    /// An optional output.
    pub fn output_opt(&mut self, path: Option<&'a PathBuf>) -> &mut Self {
        self.outputs.extend(path.map(|p| p.as_path()));
        self
    }

    /// A directory it writes files into.
    pub fn output_dir(&mut self, path: &'a Path) -> &mut Self {
        self.outputs.push(path);
        self.dirs.push(path);
        self
    }

    /// An optional directory it writes files into.
    pub fn output_dir_opt(&mut self, path: Option<&'a PathBuf>) -> &mut Self {
        if let Some(p) = path {
            self.output_dir(p);
        }
        self
    }
}

/// Registers the inputs and refuses (exit 2, naming both paths) an output, or a
/// standard output, that is one of them. At most one output may be `-`; when one is,
/// the command's summary goes to stderr ([`crate::output::data_on_stdout`]).
pub fn guard(files: &Files<'_>) -> Result<(), Error> {
    for input in &files.inputs {
        protect_input(input);
    }
    let to_stdout = files
        .outputs
        .iter()
        .filter(|o| o.as_os_str() == "-")
        .count();
    if to_stdout > 1 {
        return Err(Error::usage(
            "more than one output is `-`: only one can go to standard output",
        ));
    }
    if to_stdout == 1 {
        crate::output::data_on_stdout();
    }
    for output in files.outputs.iter().copied().chain([Path::new("-")]) {
        check(output)?;
        if !files.dirs.contains(&output) {
            writable_file(output)?;
        }
    }
    Ok(())
}

/// Refuses, before any work, a file output that cannot be written: a directory, a block
/// device, or a name in a directory that does not exist.
fn writable_file(output: &Path) -> Result<(), Error> {
    use std::os::unix::fs::FileTypeExt;
    if output.as_os_str() == "-" {
        return Ok(());
    }
    let refuse = |why: &str| Err(Error::usage(format!("{}: {why}", output.display())));
    match std::fs::metadata(output) {
        Ok(m) if m.is_dir() => refuse("is a directory; expected a file to write"),
        Ok(m) if m.file_type().is_block_device() => {
            refuse("is a block device; refusing to write a trace or report over it")
        }
        Ok(_) => Ok(()),
        Err(_) => match output.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(dir) if !dir.is_dir() => refuse(&format!(
                "the directory {} does not exist; create it first or write elsewhere",
                dir.display()
            )),
            _ => Ok(()),
        },
    }
}

/// Refuses an output that is one of the registered inputs (exit 2).
pub fn check(output: &Path) -> Result<(), Error> {
    check_output(output).map_err(|e| Error::usage(e.to_string()))
}
