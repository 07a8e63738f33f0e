//! The job's sandbox: a fresh directory under the execute directory, its input files, and the
//! output files collected after the job exits (`condor_starter.V6.1/baseStarter.cpp`, the
//! `EXECUTE/dir_<pid>` scratch directory; `condor_utils/file_transfer.cpp`, the output catalog).
//!
//! The directory is made mode 0700 and, when the node is root, given to the job's account; the
//! input files the access point sends are written into it before the job starts, and their
//! modification times and sizes noted (HTCondor's file catalog). After the job exits, the
//! outputs are the files `TransferOutput` names (a missing one is an error naming it) or, when
//! it is undefined, every regular file at the top of the sandbox that is new or whose time or
//! size changed; subdirectories are not scanned, as in HTCondor. Files are opened without
//! following links, and only regular files are sent: the node runs as root and must not read
//! through a link the job planted. The directory is removed afterwards.

use super::account::Account;
use super::error::{is_full, OutputError, StartError};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{chown, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// An output file sent back to the access point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputFile {
    /// The file's name in the sandbox (as `TransferOutput` lists it).
    pub name: String,
    /// Its contents.
    pub bytes: Vec<u8>,
}

/// What the catalog remembers of a file: modification time (ns) and size.
type Stamp = (i128, u64);

fn stamp(meta: &fs::Metadata) -> Stamp {
    (
        meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
        meta.size(),
    )
}

/// One job's sandbox directory.
#[derive(Debug)]
pub struct Sandbox {
    dir: PathBuf,
    owner: Option<(u32, u32)>,
    catalog: BTreeMap<String, Stamp>,
    removed: bool,
}

/// Whether `name` is a plain file name: not empty, not `.` or `..`, without `/` or NUL.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// `SandboxFull` when `source` says the file system is full, else what `other` makes of it.
fn full_or(
    dir: &Path,
    source: io::Error,
    other: impl FnOnce(io::Error) -> StartError,
) -> StartError {
    if is_full(&source) {
        StartError::SandboxFull {
            path: dir.to_path_buf(),
            source,
        }
    } else {
        other(source)
    }
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what)
}

impl Sandbox {
    /// Makes `execute_dir/dir_<id>` (as an absolute path: the job's executable is found
    /// through it after the change of directory), owned by `owner` when given (the node is
    /// root).
    pub fn create(
        execute_dir: &Path,
        id: &str,
        owner: Option<&Account>,
    ) -> Result<Sandbox, StartError> {
        let dir = std::path::absolute(execute_dir.join(format!("dir_{id}")))
            .unwrap_or_else(|_| execute_dir.join(format!("dir_{id}")));
        let fail = |source| {
            full_or(&dir, source, |source| StartError::SandboxNotCreatable {
                path: dir.clone(),
                source,
            })
        };
        if !is_plain_name(id) {
            return Err(fail(invalid(format!("bad sandbox id {id:?}"))));
        }
        fs::create_dir(&dir).map_err(fail)?;
        let sandbox = Sandbox {
            dir: dir.clone(),
            owner: owner.map(|a| (a.uid, a.gid)),
            catalog: BTreeMap::new(),
            removed: false,
        };
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).map_err(fail)?;
        sandbox.give(&dir).map_err(fail)?;
        Ok(sandbox)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn give(&self, path: &Path) -> io::Result<()> {
        match self.owner {
            Some((uid, gid)) => chown(path, Some(uid), Some(gid)),
            None => Ok(()),
        }
    }

    /// Writes an input file the access point sent; `executable` makes it mode 0755 (the
    /// job's executable), else 0644. A name with a `/`, or a write that fails, is an error
    /// naming the file.
    pub fn put_input(
        &mut self,
        name: &str,
        bytes: &[u8],
        executable: bool,
    ) -> Result<(), StartError> {
        let fail = |source| {
            full_or(&self.dir, source, |source| StartError::UnreadableInput {
                name: name.to_string(),
                source,
            })
        };
        if !is_plain_name(name) {
            return Err(fail(invalid(format!(
                "input file name {name:?} is not a plain file name"
            ))));
        }
        let path = self.dir.join(name);
        let mode = if executable { 0o755 } else { 0o644 };
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(fail)?;
        file.write_all(bytes)
            .and_then(|_| file.sync_all())
            .map_err(fail)?;
        file.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(fail)?;
        self.give(&path).map_err(fail)?;
        Ok(())
    }

    /// Notes every file now at the top of the sandbox, so that [`Sandbox::collect_outputs`]
    /// can tell what the job made or changed; called just before the job starts.
    pub fn take_catalog(&mut self) -> io::Result<()> {
        self.catalog.clear();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            if let Some(name) = entry.file_name().to_str() {
                self.catalog
                    .insert(name.to_string(), stamp(&entry.metadata()?));
            }
        }
        Ok(())
    }

    /// Reads a regular file of the sandbox without following links or blocking on a FIFO.
    fn read_output(&self, name: &str) -> Result<Vec<u8>, OutputError> {
        let unreadable = |source: io::Error| OutputError::Unreadable {
            name: name.to_string(),
            source,
        };
        if !is_plain_name(name) {
            return Err(unreadable(invalid(format!(
                "output {name:?} is not a file at the top of the sandbox"
            ))));
        }
        let mut file = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(self.dir.join(name))
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(OutputError::Missing {
                    name: name.to_string(),
                })
            }
            Err(e) => return Err(unreadable(e)),
        };
        let meta = file.metadata().map_err(unreadable)?;
        if !meta.is_file() {
            return Err(unreadable(invalid(format!("{name} is not a regular file"))));
        }
        read_all(&mut file).map_err(unreadable)
    }

    /// The output files, after the job exits: those `transfer_output` names, or every file the
    /// job made or changed when it is `None`.
    pub fn collect_outputs(
        &self,
        transfer_output: Option<&[String]>,
    ) -> Result<Vec<OutputFile>, OutputError> {
        let names: Vec<String> = match transfer_output {
            Some(names) => names.to_vec(),
            None => self
                .changed_files()
                .map_err(|source| OutputError::Unreadable {
                    name: ".".to_string(),
                    source,
                })?,
        };
        names
            .into_iter()
            .map(|name| {
                let bytes = self.read_output(&name)?;
                Ok(OutputFile { name, bytes })
            })
            .collect()
    }

    /// The regular files at the top of the sandbox that are new or changed since the catalog.
    fn changed_files(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            let meta = entry.metadata()?; // does not follow links
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if meta.is_file() && self.catalog.get(&name) != Some(&stamp(&meta)) {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Removes the sandbox and everything in it.
    pub fn remove(mut self) -> io::Result<()> {
        self.removed = true;
        fs::remove_dir_all(&self.dir)
    }
}

fn read_all(file: &mut File) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if !self.removed {
            if let Err(e) = fs::remove_dir_all(&self.dir) {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot remove sandbox");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn sandbox(root: &Path) -> Sandbox {
        Sandbox::create(root, "42", None).unwrap()
    }

    #[test]
    fn layout_inputs_and_cleanup() {
        let root = tempfile::tempdir().unwrap();
        let mut sb = sandbox(root.path());
        assert_eq!(sb.path(), root.path().join("dir_42"));
        let mode = fs::metadata(sb.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        sb.put_input("in.txt", b"hello", false).unwrap();
        sb.put_input("run.sh", b"#!/bin/sh\n", true).unwrap();
        assert_eq!(fs::read(sb.path().join("in.txt")).unwrap(), b"hello");
        let mode = fs::metadata(sb.path().join("run.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        // A second sandbox with the same id is refused, naming the directory.
        let err = Sandbox::create(root.path(), "42", None).unwrap_err();
        assert!(
            matches!(err, StartError::SandboxNotCreatable { .. }),
            "{err}"
        );
        assert!(err.hold_reason().contains("dir_42"));
        let dir = sb.path().to_path_buf();
        sb.remove().unwrap();
        assert!(!dir.exists());
    }

    #[test]
    fn bad_input_names_and_missing_execute_dir() {
        let root = tempfile::tempdir().unwrap();
        let mut sb = sandbox(root.path());
        for name in ["", "..", "a/b", "/etc/passwd"] {
            let err = sb.put_input(name, b"x", false).unwrap_err();
            assert!(
                matches!(err, StartError::UnreadableInput { .. }),
                "{name}: {err}"
            );
        }
        let err = Sandbox::create(&root.path().join("nope"), "1", None).unwrap_err();
        assert!(matches!(err, StartError::SandboxNotCreatable { .. }));
        assert_eq!(err.hold_reason_subcode(), libc::ENOENT);
    }

    #[test]
    fn outputs_are_new_or_changed_files_or_the_named_ones() {
        let root = tempfile::tempdir().unwrap();
        let mut sb = sandbox(root.path());
        sb.put_input("same.txt", b"input", false).unwrap();
        sb.put_input("grown.txt", b"input", false).unwrap();
        sb.take_catalog().unwrap();
        // What a job does: make a file, change one, make a subdirectory, plant a link.
        fs::write(sb.path().join("new.txt"), b"made").unwrap();
        fs::write(sb.path().join("grown.txt"), b"input and more").unwrap();
        fs::create_dir(sb.path().join("sub")).unwrap();
        fs::write(sb.path().join("sub/deep.txt"), b"not scanned").unwrap();
        symlink("/etc/passwd", sb.path().join("link")).unwrap();

        let all = sb.collect_outputs(None).unwrap();
        let names: Vec<&str> = all.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["grown.txt", "new.txt"]);
        assert_eq!(all[1].bytes, b"made");

        let named = sb.collect_outputs(Some(&["same.txt".to_string()])).unwrap();
        assert_eq!(
            named,
            [OutputFile {
                name: "same.txt".into(),
                bytes: b"input".to_vec()
            }]
        );

        let err = sb
            .collect_outputs(Some(&["absent.dat".to_string()]))
            .unwrap_err();
        assert!(matches!(&err, OutputError::Missing { name } if name == "absent.dat"));
        assert!(err.to_string().contains("absent.dat"));
        // A link or a directory is not sent.
        for name in ["link", "sub"] {
            let err = sb.collect_outputs(Some(&[name.to_string()])).unwrap_err();
            assert!(matches!(&err, OutputError::Unreadable { name: n, .. } if n == name));
        }
    }
}
