//! The job's sandbox: a fresh directory under the execute directory, its input files, and the
//! output files collected after the job exits (`condor_starter.V6.1/baseStarter.cpp`, the
//! `EXECUTE/dir_<pid>` scratch directory; `condor_utils/file_transfer.cpp`, the output catalog).
//!
//! The directory is made mode 0700 and, when the node is root, given to the job's account; the
//! input files the access point sends are written into it before the job starts (at their
//! relative paths: the files and directories of a transferred directory tree, `dir/sub/b`),
//! and their modification times and sizes noted (HTCondor's file catalog). After the job
//! exits, the outputs are what `TransferOutput` names (a missing one is an error naming it; a
//! directory comes back with its whole tree, or only its contents when named with a trailing
//! `/`) or, when it is undefined, every regular file at the top of the sandbox that is new or
//! whose time or size changed; subdirectories are not scanned then, as in HTCondor.
//!
//! The node runs as root and must not write or read through a link the job (or anyone) planted:
//! every path is walked one directory at a time from the sandbox (`openat` with `O_NOFOLLOW`),
//! a path that is absolute or climbs (`..`) is refused, a link on the way is an error naming
//! it, and only regular files and directories are sent. The directory is removed afterwards.

use super::account::Account;
use super::error::{is_full, OutputError, StartError};
use crate::transfer_path;
use nix::errno::Errno;
use nix::fcntl::{openat, AtFlags, OFlag};
use nix::sys::stat::{fstatat, mkdirat, Mode};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{chown, fchown, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// An output file sent back to the access point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputFile {
    /// The file's path in the sandbox (as `TransferOutput` lists it, or `dir/sub/f` for a
    /// file of an output directory).
    pub name: String,
    /// Its contents.
    pub bytes: Vec<u8>,
    /// A directory of an output directory's tree (no contents), so that empty ones come back.
    pub directory: bool,
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

    /// Opens the directory `parts` (a path in the sandbox, split) without following a link at
    /// any step, making the missing ones (mode 0755, the job's) when `make`. A link or a
    /// non-directory on the way is an error (ELOOP or ENOTDIR) naming the path.
    fn open_dir(&self, parts: &[&str], make: bool) -> io::Result<OwnedFd> {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let mut dir: OwnedFd = OpenOptions::new()
            .read(true)
            .custom_flags(flags.bits())
            .open(&self.dir)?
            .into();
        for (i, part) in parts.iter().enumerate() {
            let made = make
                && match mkdirat(&dir, *part, Mode::from_bits_truncate(0o755)) {
                    Ok(()) => true,
                    Err(Errno::EEXIST) => false,
                    Err(e) => return Err(e.into()),
                };
            dir = openat(&dir, *part, flags, Mode::empty()).map_err(|e| {
                let at = parts[..=i].join("/");
                let link = fstatat(&dir, *part, AtFlags::AT_SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK);
                let what = match e {
                    Errno::ELOOP | Errno::ENOTDIR if link => {
                        format!("{at} is a symbolic link in the sandbox")
                    }
                    Errno::ENOTDIR => format!("{at} is not a directory in the sandbox"),
                    e => format!("{at}: {e}"),
                };
                io::Error::new(io::Error::from(e).kind(), what)
            })?;
            if made {
                self.give_fd(&dir)?;
            }
        }
        Ok(dir)
    }

    fn give_fd(&self, fd: &impl AsFd) -> io::Result<()> {
        match self.owner {
            Some((uid, gid)) => fchown(fd, Some(uid), Some(gid)),
            None => Ok(()),
        }
    }

    /// Writes an input file the access point sent, at its path in the sandbox (`a`, or
    /// `dir/sub/b` for a file of a transferred directory, its directories made as needed);
    /// `executable` makes it mode 0755 (the job's executable), else 0644. An absolute path, a
    /// `..`, a link on the way, or a write that fails is an error naming the file.
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
        let parts = transfer_path::sandbox_parts(name).map_err(|e| fail(invalid(e)))?;
        let (last, dirs) = parts.split_last().expect("sandbox_parts is never empty");
        let parent = self.open_dir(dirs, true).map_err(fail)?;
        let mode = if executable { 0o755 } else { 0o644 };
        let fd = openat(
            &parent,
            *last,
            OFlag::O_WRONLY
                | OFlag::O_CREAT
                | OFlag::O_TRUNC
                | OFlag::O_NOFOLLOW
                | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(mode),
        )
        .map_err(|e| fail(e.into()))?;
        let mut file = File::from(fd);
        file.write_all(bytes)
            .and_then(|_| file.sync_all())
            .map_err(fail)?;
        file.set_permissions(fs::Permissions::from_mode(mode))
            .map_err(fail)?;
        self.give_fd(&file).map_err(fail)?;
        Ok(())
    }

    /// Makes a directory of a transferred directory tree (an empty one survives this way),
    /// with the same checks as [`Sandbox::put_input`].
    pub fn put_directory(&mut self, name: &str) -> Result<(), StartError> {
        let fail = |source| {
            full_or(&self.dir, source, |source| StartError::UnreadableInput {
                name: name.to_string(),
                source,
            })
        };
        let parts = transfer_path::sandbox_parts(name).map_err(|e| fail(invalid(e)))?;
        self.open_dir(&parts, true).map(drop).map_err(fail)
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

    /// Reads output `name` of the sandbox without following links or blocking on a FIFO: a
    /// regular file, or a directory and its whole tree (directories first, then what they
    /// hold, in name order), as HTCondor brings an output directory back.
    fn read_output(&self, name: &str, out: &mut Vec<OutputFile>) -> Result<(), OutputError> {
        let unreadable = |source: io::Error| OutputError::Unreadable {
            name: name.to_string(),
            source,
        };
        let parts = transfer_path::sandbox_parts(name).map_err(|e| unreadable(invalid(e)))?;
        let (last, dirs) = parts.split_last().expect("sandbox_parts is never empty");
        let opened = self.open_dir(dirs, false).and_then(|parent| {
            openat(
                &parent,
                *last,
                OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .map_err(io::Error::from)
        });
        let mut file = match opened {
            Ok(fd) => File::from(fd),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(OutputError::Missing {
                    name: name.to_string(),
                })
            }
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Err(unreadable(invalid(format!(
                    "{name} is a symbolic link, which is not sent back"
                ))))
            }
            Err(e) => return Err(unreadable(e)),
        };
        let meta = file.metadata().map_err(unreadable)?;
        if meta.is_dir() {
            out.push(OutputFile {
                name: name.to_string(),
                bytes: Vec::new(),
                directory: true,
            });
            let mut children: Vec<String> = fs::read_dir(self.dir.join(name))
                .and_then(|entries| {
                    entries
                        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                        .collect()
                })
                .map_err(unreadable)?;
            children.sort();
            for child in children {
                self.read_output(&format!("{name}/{child}"), out)?;
            }
            return Ok(());
        }
        if !meta.is_file() {
            return Err(unreadable(invalid(format!("{name} is not a regular file"))));
        }
        let bytes = read_all(&mut file).map_err(unreadable)?;
        out.push(OutputFile {
            name: name.to_string(),
            bytes,
            directory: false,
        });
        Ok(())
    }

    /// The output files, after the job exits: those `transfer_output` names (a directory with
    /// its whole tree; with a trailing `/`, its contents only, at the top), or every file the
    /// job made or changed when it is `None`; and, either way, the `always` ones (the job's
    /// standard output and error, which HTCondor's starter sends back even when the job
    /// wrote nothing to them: a user's `error = job.err` is there, empty, after a clean run).
    pub fn collect_outputs(
        &self,
        transfer_output: Option<&[String]>,
        always: &[String],
    ) -> Result<Vec<OutputFile>, OutputError> {
        let mut names: Vec<String> = match transfer_output {
            Some(names) => names.to_vec(),
            None => self
                .changed_files()
                .map_err(|source| OutputError::Unreadable {
                    name: ".".to_string(),
                    source,
                })?,
        };
        for name in always {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        let mut out = Vec::new();
        for name in names {
            let Some(dir) = name.strip_suffix('/').filter(|d| !d.is_empty()) else {
                self.read_output(&name, &mut out)?;
                continue;
            };
            let mut tree = Vec::new();
            self.read_output(dir, &mut tree)?;
            let prefix = format!("{dir}/");
            out.extend(tree.into_iter().filter_map(|mut f| {
                f.name = f.name.strip_prefix(&prefix)?.to_string();
                Some(f)
            }));
        }
        Ok(out)
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
        for name in ["", "..", "a/../../b", "/etc/passwd", "a//b"] {
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

        let all = sb.collect_outputs(None, &[]).unwrap();
        let names: Vec<&str> = all.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["grown.txt", "new.txt"]);
        assert_eq!(all[1].bytes, b"made");

        let named = sb
            .collect_outputs(Some(&["same.txt".to_string()]), &[])
            .unwrap();
        assert_eq!(
            named,
            [OutputFile {
                name: "same.txt".into(),
                bytes: b"input".to_vec(),
                directory: false,
            }]
        );

        let err = sb
            .collect_outputs(Some(&["absent.dat".to_string()]), &[])
            .unwrap_err();
        assert!(matches!(&err, OutputError::Missing { name } if name == "absent.dat"));
        assert!(err.to_string().contains("absent.dat"));
        // A link is not sent.
        let err = sb
            .collect_outputs(Some(&["link".to_string()]), &[])
            .unwrap_err();
        assert!(matches!(&err, OutputError::Unreadable { name, .. } if name == "link"));
        assert!(err.to_string().contains("symbolic link"), "{err}");
    }

    #[test]
    fn inputs_of_a_directory_tree_are_made_without_following_links() {
        let root = tempfile::tempdir().unwrap();
        let mut sb = sandbox(root.path());
        sb.put_input("data/sub/b", b"b", false).unwrap();
        sb.put_directory("data/empty").unwrap();
        sb.put_input("data/a", b"a", false).unwrap();
        assert_eq!(fs::read(sb.path().join("data/sub/b")).unwrap(), b"b");
        assert!(sb.path().join("data/empty").is_dir());
        // A link planted in the sandbox is not followed, on the way or at the end.
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), sb.path().join("evil")).unwrap();
        let err = sb.put_input("evil/x", b"x", false).unwrap_err();
        assert!(
            err.hold_reason().contains("evil is a symbolic link"),
            "{err}"
        );
        let err = sb.put_directory("evil/d").unwrap_err();
        assert!(err.hold_reason().contains("symbolic link"), "{err}");
        symlink(outside.path().join("f"), sb.path().join("data/f")).unwrap();
        assert!(sb.put_input("data/f", b"x", false).is_err());
        assert!(fs::read_dir(outside.path()).unwrap().next().is_none());
        // A file where a directory is needed.
        let err = sb.put_input("data/a/x", b"x", false).unwrap_err();
        assert!(
            err.hold_reason().contains("data/a is not a directory"),
            "{err}"
        );
        for bad in ["../x", "/tmp/x", "data/../../x"] {
            assert!(sb.put_directory(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_named_output_directory_comes_back_whole_or_as_its_contents() {
        let root = tempfile::tempdir().unwrap();
        let sb = sandbox(root.path());
        fs::create_dir_all(sb.path().join("out/sub")).unwrap();
        fs::create_dir(sb.path().join("out/empty")).unwrap();
        fs::write(sb.path().join("out/r"), b"r").unwrap();
        fs::write(sb.path().join("out/sub/s"), b"s").unwrap();
        let got = sb.collect_outputs(Some(&["out".to_string()]), &[]).unwrap();
        let names: Vec<(&str, bool)> = got.iter().map(|f| (f.name.as_str(), f.directory)).collect();
        assert_eq!(
            names,
            [
                ("out", true),
                ("out/empty", true),
                ("out/r", false),
                ("out/sub", true),
                ("out/sub/s", false)
            ]
        );
        assert_eq!(got[4].bytes, b"s");
        let got = sb
            .collect_outputs(Some(&["out/".to_string()]), &[])
            .unwrap();
        let names: Vec<&str> = got.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["empty", "r", "sub", "sub/s"]);
        // A link inside an output directory is refused, naming it.
        symlink("/etc/passwd", sb.path().join("out/sub/pw")).unwrap();
        let err = sb
            .collect_outputs(Some(&["out".to_string()]), &[])
            .unwrap_err();
        assert!(err.to_string().contains("out/sub/pw"), "{err}");
    }
}
