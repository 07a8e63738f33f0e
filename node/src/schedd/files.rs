//! The job's files at the access point, read and written as the job's owner: the input files
//! sent with the activation (the executable when transferred, `In`, `TransferInput`) and the
//! output files written back into `Iwd` on exit (stdout and stderr to `Out` and `Err`, the
//! others renamed by `TransferOutputRemaps`, see [`remap`]).
//!
//! A directory in `TransferInput` is sent as its tree, as HTCondor's `ExpandFileTransferList`
//! does: named `dir` its files go to `dir/a`, `dir/sub/b` in the sandbox, named `dir/` they go
//! to the top; its directories travel too, so empty ones survive; a symbolic link is followed
//! only to a file inside the tree (one out of it, or to a directory, holds the job, naming the
//! link). An output directory comes back the same way into `Iwd` (a remap of its name moves
//! its whole tree). URLs are not transferred (no transfer plugins): such a job is held. This
//! is the file-transfer half of HTCondor's shadow (src/condor_shadow.V6.1/, and
//! src/condor_utils/file_transfer.cpp for the names).
//!
//! The access point may run as root; it must then never read or write a file the owner could
//! not. Each job's file work runs on a thread of its own whose file-system identity
//! (`setfsuid`/`setfsgid`, per thread on Linux) is the owner's, so the kernel checks every
//! path as it would for the owner and new files belong to the owner. The thread keeps root's
//! supplementary groups, so an input is also refused unless it is the owner's, readable by
//! everyone, or group-readable with the owner's primary group. An access point not running as
//! root runs only its own user's jobs (see `SubmitPolicy::only_user`).
use super::job::get_str;
use crate::transfer_path;
use aerie_proto::execute::File;
use classad::ClassAd;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Inputs larger than this in total are refused (they travel in one gRPC message).
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// A Unix account the files are handled as.
#[derive(Clone, Debug, PartialEq)]
pub struct Account {
    /// The user name.
    pub name: String,
    /// Its uid.
    pub uid: u32,
    /// Its primary gid.
    pub gid: u32,
}

/// A file error: the message (naming the file) and its errno (0 when none), for
/// `HoldReasonSubCode`.
#[derive(Clone, Debug, PartialEq)]
pub struct FileError {
    /// What went wrong, naming the file.
    pub message: String,
    /// The errno, 0 when there is none.
    pub errno: i32,
}

impl FileError {
    fn new(message: String) -> FileError {
        FileError { message, errno: 0 }
    }

    fn io(what: &str, path: &Path, e: &std::io::Error) -> FileError {
        FileError {
            message: format!("{what} {}: {e}", path.display()),
            errno: e.raw_os_error().unwrap_or(0),
        }
    }
}

/// The account of user `name`.
pub fn account(name: &str) -> Result<Account, String> {
    match nix::unistd::User::from_name(name) {
        Ok(Some(u)) => Ok(Account {
            name: name.to_string(),
            uid: u.uid.as_raw(),
            gid: u.gid.as_raw(),
        }),
        Ok(None) => Err(format!("no such user {name:?} on the access point")),
        Err(e) => Err(format!("looking up user {name:?}: {e}")),
    }
}

/// Runs `f` on a thread of its own whose file-system identity is `acct`'s (when this process
/// is root; otherwise as this process, which must then be `acct`).
pub fn as_owner<T: Send>(
    acct: &Account,
    f: impl FnOnce() -> Result<T, FileError> + Send,
) -> Result<T, FileError> {
    let me = nix::unistd::geteuid().as_raw();
    if me != 0 {
        if me != acct.uid {
            return Err(FileError::new(format!(
                "the access point runs as uid {me} and cannot act as {} (uid {})",
                acct.name, acct.uid
            )));
        }
        return f();
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            use nix::unistd::{setfsgid, setfsuid, Gid, Uid};
            setfsgid(Gid::from_raw(acct.gid));
            setfsuid(Uid::from_raw(acct.uid));
            // setfsuid reports the previous value only: read it back to be sure.
            if setfsuid(Uid::from_raw(acct.uid)).as_raw() != acct.uid {
                return Err(FileError::new(format!(
                    "cannot take the file-system identity of {}",
                    acct.name
                )));
            }
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(FileError::new("file thread panicked".into())))
    })
}

/// `p` relative to `iwd` unless absolute.
fn in_iwd(iwd: &str, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new(iwd).join(p)
    }
}

fn base_name(p: &str) -> Result<String, FileError> {
    match Path::new(p).file_name().and_then(|n| n.to_str()) {
        Some(n) if n != "." && n != ".." => Ok(n.to_string()),
        _ => Err(FileError::new(format!("{p:?} names no file"))),
    }
}

/// Whether `acct` may read a file of metadata `m`: its own, readable by everyone, or
/// group-readable with its primary group (the file thread keeps root's groups).
fn owner_may_read(m: &std::fs::Metadata, acct: &Account) -> bool {
    let mode = m.mode();
    m.uid() == acct.uid || mode & 0o004 != 0 || (mode & 0o040 != 0 && m.gid() == acct.gid)
}

fn unreadable(path: &Path, acct: &Account) -> FileError {
    FileError {
        message: format!("{} is not readable by {}", path.display(), acct.name),
        errno: libc::EACCES,
    }
}

/// Reads one input file as the owner may: a regular file that is the owner's, readable by
/// everyone, or group-readable with the owner's primary group.
fn read_input(path: &Path, acct: &Account, budget: &mut u64) -> Result<Vec<u8>, FileError> {
    let mut f = std::fs::File::open(path).map_err(|e| FileError::io("cannot open", path, &e))?;
    let m = f
        .metadata()
        .map_err(|e| FileError::io("cannot stat", path, &e))?;
    if !m.is_file() {
        return Err(FileError::new(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    if !owner_may_read(&m, acct) {
        return Err(unreadable(path, acct));
    }
    if m.len() > *budget {
        return Err(FileError::new(format!(
            "{}: the job's input files exceed {} MiB",
            path.display(),
            MAX_INPUT_BYTES >> 20
        )));
    }
    let mut data = Vec::with_capacity(m.len() as usize);
    f.read_to_end(&mut data)
        .map_err(|e| FileError::io("cannot read", path, &e))?;
    *budget = budget.saturating_sub(data.len() as u64);
    Ok(data)
}

/// One entry of the job's input list: where it is at the access point, the name it gets in
/// the sandbox, whether it is the executable, and whether only its contents go (a directory
/// named with a trailing `/`).
#[derive(Clone, Debug, PartialEq)]
pub struct InputEntry {
    /// Its path at the access point (relative entries are taken in `Iwd`).
    pub path: PathBuf,
    /// Its name at the top of the sandbox.
    pub name: String,
    /// The job's executable.
    pub executable: bool,
    /// A directory of which only the contents are transferred.
    pub contents_only: bool,
}

/// The job's input entries: the executable (`Cmd`, unless `TransferExecutable` is false),
/// `In` (unless /dev/null) and each of `TransferInput`, files or directories. A URL is
/// refused (no transfer plugins here). Pure.
pub fn input_plan(ad: &ClassAd) -> Result<Vec<InputEntry>, FileError> {
    let iwd = get_str(ad, "Iwd").ok_or_else(|| FileError::new("the job has no Iwd".into()))?;
    let mut out: Vec<InputEntry> = Vec::new();
    let mut add = |p: &str, executable: bool| -> Result<(), FileError> {
        if p.contains("://") {
            return Err(FileError::new(format!(
                "{p:?}: URL transfer is not supported"
            )));
        }
        let (name, contents_only) = transfer_path::entry_name(p).map_err(FileError::new)?;
        out.push(InputEntry {
            path: in_iwd(&iwd, p),
            name,
            executable,
            contents_only,
        });
        Ok(())
    };
    if ad.eval_attr("TransferExecutable").as_bool() != Some(false) {
        if let Some(cmd) = get_str(ad, "Cmd") {
            add(&cmd, true)?;
        }
    }
    if let Some(i) = get_str(ad, "In").filter(|i| !i.is_empty() && i != "/dev/null") {
        add(&i, false)?;
    }
    if let Some(list) = get_str(ad, "TransferInput") {
        for p in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            add(p, false)?;
        }
    }
    Ok(out)
}

/// A directory entry for the activation; its name counts against the input budget (it
/// travels in the same message), so a tree of countless empty directories is refused too.
fn dir_file(name: String, path: &Path, budget: &mut u64) -> Result<File, FileError> {
    let cost = name.len() as u64;
    if cost > *budget {
        return Err(FileError::new(format!(
            "{}: the job's input files exceed {} MiB",
            path.display(),
            MAX_INPUT_BYTES >> 20
        )));
    }
    *budget -= cost;
    Ok(File {
        name,
        directory: true,
        ..Default::default()
    })
}

/// Reads the tree under `dir` (whose canonical path is `root`) into `out`, named under
/// `prefix` (`None`: at the top of the sandbox), as HTCondor transfers a directory: every
/// file and every directory, empty ones too; a symbolic link is followed only to a file
/// inside the tree.
fn read_tree(
    root: &Path,
    dir: &Path,
    rel: &Path,
    prefix: Option<&str>,
    acct: &Account,
    budget: &mut u64,
    out: &mut Vec<File>,
) -> Result<(), FileError> {
    let m = std::fs::metadata(dir).map_err(|e| FileError::io("cannot stat", dir, &e))?;
    if !owner_may_read(&m, acct) {
        return Err(unreadable(dir, acct));
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| FileError::io("cannot list", dir, &e))?
        .collect::<Result<_, _>>()
        .map_err(|e| FileError::io("cannot list", dir, &e))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let rel = rel.join(entry.file_name());
        let name = transfer_path::tree_name(prefix, &rel);
        let kind = entry
            .file_type()
            .map_err(|e| FileError::io("cannot stat", &path, &e))?;
        if kind.is_symlink() {
            let target = std::fs::canonicalize(&path)
                .map_err(|e| FileError::io("cannot follow the link", &path, &e))?;
            if !transfer_path::inside(root, &target) {
                return Err(FileError::new(format!(
                    "{} is a symbolic link out of the transferred directory {} (to {}): \
                     links are not followed out of the tree",
                    path.display(),
                    root.display(),
                    target.display()
                )));
            }
            if target.is_dir() {
                return Err(FileError::new(format!(
                    "{} is a symbolic link to a directory, which is not transferred",
                    path.display()
                )));
            }
            out.push(read_file(&path, name, false, acct, budget)?);
        } else if kind.is_dir() {
            out.push(dir_file(name, &path, budget)?);
            read_tree(root, &path, &rel, prefix, acct, budget, out)?;
        } else if kind.is_file() {
            out.push(read_file(&path, name, false, acct, budget)?);
        } else {
            return Err(FileError::new(format!(
                "{} is not a regular file",
                path.display()
            )));
        }
    }
    Ok(())
}

fn read_file(
    path: &Path,
    name: String,
    executable: bool,
    acct: &Account,
    budget: &mut u64,
) -> Result<File, FileError> {
    Ok(File {
        name,
        data: read_input(path, acct, budget)?,
        executable,
        directory: false,
    })
}

/// Reads one entry of the plan: a file, or a directory and its whole tree.
fn read_entry(
    e: &InputEntry,
    acct: &Account,
    budget: &mut u64,
    out: &mut Vec<File>,
) -> Result<(), FileError> {
    let is_dir = std::fs::metadata(&e.path).is_ok_and(|m| m.is_dir());
    if !is_dir {
        if e.contents_only {
            return Err(FileError::new(format!(
                "{} is named with a trailing / but is not a directory",
                e.path.display()
            )));
        }
        out.push(read_file(
            &e.path,
            e.name.clone(),
            e.executable,
            acct,
            budget,
        )?);
        return Ok(());
    }
    if e.executable {
        return Err(FileError::new(format!(
            "the executable {} is a directory",
            e.path.display()
        )));
    }
    let root = std::fs::canonicalize(&e.path)
        .map_err(|err| FileError::io("cannot resolve", &e.path, &err))?;
    let prefix = (!e.contents_only).then_some(e.name.as_str());
    if let Some(p) = prefix {
        out.push(dir_file(p.to_string(), &e.path, budget)?);
    }
    read_tree(&root, &root, Path::new(""), prefix, acct, budget, out)
}

/// Reads the job's input files as its owner, directories expanded into their trees, within
/// [`MAX_INPUT_BYTES`] in all; two inputs of the same sandbox name are refused.
pub fn read_inputs(ad: &ClassAd, acct: &Account) -> Result<Vec<File>, FileError> {
    let plan = input_plan(ad)?;
    let files = as_owner(acct, || {
        let mut budget = MAX_INPUT_BYTES;
        let mut out = Vec::new();
        for e in &plan {
            read_entry(e, acct, &mut budget, &mut out)?;
        }
        Ok(out)
    })?;
    let mut seen = std::collections::HashSet::new();
    for f in &files {
        if !seen.insert(f.name.as_str()) {
            return Err(FileError::new(format!(
                "two input files are named {:?} in the sandbox",
                f.name
            )));
        }
    }
    Ok(files)
}

/// Where output file `name` goes: `Out` or `Err` (relative to `Iwd`) when it carries their
/// base name, else `Iwd`/name; `None` for stdout/stderr sent to /dev/null. Pure.
pub fn output_path(ad: &ClassAd, name: &str) -> Result<Option<PathBuf>, FileError> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(FileError::new(format!(
            "output file name {name:?} is not a plain name"
        )));
    }
    let iwd = get_str(ad, "Iwd").ok_or_else(|| FileError::new("the job has no Iwd".into()))?;
    for attr in ["Out", "Err"] {
        if let Some(p) = get_str(ad, attr).filter(|p| !p.is_empty()) {
            if base_name(&p).ok().as_deref() == Some(name) {
                if p == "/dev/null" {
                    return Ok(None);
                }
                return Ok(Some(in_iwd(&iwd, &p)));
            }
        }
    }
    if let Some(rules) = get_str(ad, "TransferOutputRemaps").filter(|r| !r.trim().is_empty()) {
        if let Some(target) = remap(&rules, name).map_err(FileError::new)? {
            if target.contains("://") {
                return Err(FileError::new(format!(
                    "TransferOutputRemaps sends {name} to the URL {target}, which this access \
                     point cannot write to"
                )));
            }
            return Ok(Some(in_iwd(&iwd, &target)));
        }
    }
    Ok(Some(Path::new(&iwd).join(name)))
}

/// The rules of one remap list (`name = target; ...`, condor_submit's
/// `transfer_output_remaps`), as HTCondor's `filename_remap_find` reads them
/// (src/condor_utils/filename_tools_cpp.cpp): tabs and newlines dropped, each side trimmed,
/// `\=` escaped in a name and `\;` in a target, a field without `=` skipped.
fn remap_rules(rules: &str) -> Vec<(String, String)> {
    let text: String = rules
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n'))
        .collect();
    let mut out = Vec::new();
    let (mut name, mut cur, mut in_target) = (String::new(), String::new(), false);
    let mut chars = text.chars().peekable();
    let mut flush = |name: &mut String, cur: &mut String, in_target: bool| {
        if in_target {
            out.push((name.trim().to_string(), cur.trim().to_string()));
        }
        name.clear();
        cur.clear();
    };
    while let Some(c) = chars.next() {
        let delim = if in_target { ';' } else { '=' };
        match c {
            '\\' if chars.peek() == Some(&delim) => cur.push(chars.next().unwrap_or(delim)),
            '=' if !in_target => {
                name = std::mem::take(&mut cur);
                in_target = true;
            }
            ';' => {
                flush(&mut name, &mut cur, in_target);
                in_target = false;
            }
            c => cur.push(c),
        }
    }
    flush(&mut name, &mut cur, in_target);
    out
}

/// Where `TransferOutputRemaps` (`rules`) sends output file `name`: the first rule naming
/// it, followed again while its target is itself a rule's name (as HTCondor's
/// `filename_remap_find` recurses); `None` when no rule names it; an error on a loop.
pub fn remap(rules: &str, name: &str) -> Result<Option<String>, String> {
    let rules = remap_rules(rules);
    let find = |n: &str| rules.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let Some(mut target) = find(name) else {
        return Ok(None);
    };
    for _ in 0..128 {
        match find(&target) {
            Some(next) if next != target => target = next,
            _ => return Ok(Some(target)),
        }
    }
    Err(format!("TransferOutputRemaps loops on {name}"))
}

/// Where an output of an output directory's tree goes: where [`output_path`] sends its top
/// directory (`Iwd`/`dir`, or its remap), then the rest of the path, checked to stay
/// relative and never climb. Pure.
pub fn output_tree_path(ad: &ClassAd, name: &str) -> Result<Option<PathBuf>, FileError> {
    if !name.contains('/') {
        return output_path(ad, name);
    }
    transfer_path::sandbox_parts(name)
        .map_err(|e| FileError::new(format!("output file name {e}")))?;
    // The tree follows where its top directory goes (a remap of the directory moves it all).
    let (top, rest) = name.split_once('/').unwrap_or((name, ""));
    Ok(output_path(ad, top)?.map(|p| p.join(rest)))
}

/// Writes the job's output files into its `Iwd` as its owner (new files are the owner's;
/// symbolic links are not followed): the files, and the directories of an output
/// directory's tree, made as needed.
pub fn write_outputs(ad: &ClassAd, acct: &Account, files: &[File]) -> Result<(), FileError> {
    let mut plan = Vec::with_capacity(files.len());
    for f in files {
        if let Some(p) = output_tree_path(ad, &f.name)? {
            plan.push((p, f));
        }
    }
    as_owner(acct, || {
        for (path, f) in &plan {
            if f.directory {
                std::fs::create_dir_all(path)
                    .map_err(|e| FileError::io("cannot make the directory", path, &e))?;
                continue;
            }
            if f.name.contains('/') {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| FileError::io("cannot make the directory", parent, &e))?;
                }
            }
            let mut out = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o644)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path)
                .map_err(|e| FileError::io("cannot write", path, &e))?;
            out.write_all(&f.data)
                .map_err(|e| FileError::io("cannot write", path, &e))?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> Account {
        let uid = nix::unistd::geteuid();
        let u = nix::unistd::User::from_uid(uid).unwrap().unwrap();
        Account {
            name: u.name,
            uid: uid.as_raw(),
            gid: u.gid.as_raw(),
        }
    }

    fn job(iwd: &Path, extra: &str) -> ClassAd {
        classad::parse_ad(&format!(
            "Iwd = \"{}\"\nCmd = \"run.sh\"\n{extra}",
            iwd.display()
        ))
        .unwrap()
    }

    #[test]
    fn inputs_are_the_executable_in_and_transfer_input() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::write(d.path().join("in.txt"), "x").unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/a"), "a").unwrap();
        let ad = job(d.path(), "In = \"in.txt\"\nTransferInput = \"sub/a, in2\"");
        let plan = input_plan(&ad).unwrap();
        let names: Vec<&str> = plan.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["run.sh", "in.txt", "a", "in2"]);
        assert!(plan[0].executable && !plan[1].executable);
        // in2 is missing: the error names it.
        let e = read_inputs(&ad, &me()).unwrap_err();
        assert!(
            e.message.contains("in2") && e.errno == libc::ENOENT,
            "{e:?}"
        );
        let ad = job(d.path(), "In = \"in.txt\"\nTransferInput = \"sub/a\"");
        let files = read_inputs(&ad, &me()).unwrap();
        assert_eq!(files[2].data, b"a");
        std::fs::write(d.path().join("a"), "top").unwrap();
        let ad = job(
            d.path(),
            "TransferExecutable = false\nTransferInput = \"a, sub/a\"",
        );
        let e = read_inputs(&ad, &me()).unwrap_err();
        assert!(e.message.contains("two input files"), "{e:?}");
        let ad = job(d.path(), "TransferInput = \"http://h/x\"");
        let e = input_plan(&ad).unwrap_err();
        assert!(e.message.contains("URL transfer is not supported"), "{e:?}");
    }

    fn names(files: &[File]) -> Vec<(&str, bool)> {
        files
            .iter()
            .map(|f| (f.name.as_str(), f.directory))
            .collect()
    }

    #[test]
    fn a_directory_goes_with_its_name_and_tree_or_only_its_contents() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("data/sub")).unwrap();
        std::fs::create_dir(d.path().join("data/empty")).unwrap();
        std::fs::write(d.path().join("data/a"), "a").unwrap();
        std::fs::write(d.path().join("data/sub/b"), "b").unwrap();
        std::os::unix::fs::symlink("b", d.path().join("data/sub/link")).unwrap();
        let ad = job(
            d.path(),
            "TransferExecutable = false\nTransferInput = \"data\"",
        );
        let files = read_inputs(&ad, &me()).unwrap();
        assert_eq!(
            names(&files),
            [
                ("data", true),
                ("data/a", false),
                ("data/empty", true),
                ("data/sub", true),
                ("data/sub/b", false),
                ("data/sub/link", false),
            ]
        );
        assert_eq!(files[4].data, b"b");
        // A link inside the tree is sent as the file it names.
        assert_eq!(files[5].data, b"b");
        let ad = job(
            d.path(),
            "TransferExecutable = false\nTransferInput = \"data/\"",
        );
        let files = read_inputs(&ad, &me()).unwrap();
        assert_eq!(
            names(&files),
            [
                ("a", false),
                ("empty", true),
                ("sub", true),
                ("sub/b", false),
                ("sub/link", false),
            ]
        );
        // A trailing slash on a file is refused.
        let ad = job(
            d.path(),
            "TransferExecutable = false\nTransferInput = \"data/a/\"",
        );
        let e = read_inputs(&ad, &me()).unwrap_err();
        assert!(e.message.contains("not a directory"), "{e:?}");
    }

    #[test]
    fn a_link_out_of_the_tree_is_refused_naming_it() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("data")).unwrap();
        std::fs::write(d.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink("../secret", d.path().join("data/out")).unwrap();
        let ad = job(
            d.path(),
            "TransferExecutable = false\nTransferInput = \"data\"",
        );
        let e = read_inputs(&ad, &me()).unwrap_err();
        assert!(
            e.message.contains("data/out") && e.message.contains("out of the transferred"),
            "{e:?}"
        );
        std::fs::remove_file(d.path().join("data/out")).unwrap();
        std::os::unix::fs::symlink(d.path(), d.path().join("data/loop")).unwrap();
        let e = read_inputs(&ad, &me()).unwrap_err();
        assert!(e.message.contains("data/loop"), "{e:?}");
    }

    #[test]
    fn a_directory_tree_counts_against_the_input_limit() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("data")).unwrap();
        let big = std::fs::File::create(d.path().join("data/big")).unwrap();
        big.set_len(MAX_INPUT_BYTES / 2 + 1).unwrap();
        std::fs::copy(d.path().join("data/big"), d.path().join("data/big2")).unwrap();
        let ad = job(
            d.path(),
            "TransferExecutable = false\nTransferInput = \"data\"",
        );
        let e = read_inputs(&ad, &me()).unwrap_err();
        assert!(
            e.message.contains("data/big2") && e.message.contains("exceed"),
            "{e:?}"
        );
    }

    #[test]
    fn an_output_directory_comes_back_into_iwd() {
        let d = tempfile::tempdir().unwrap();
        let ad = job(d.path(), "");
        let f = |n: &str, dir: bool| File {
            name: n.into(),
            data: if dir { vec![] } else { n.as_bytes().to_vec() },
            executable: false,
            directory: dir,
        };
        write_outputs(
            &ad,
            &me(),
            &[
                f("out", true),
                f("out/empty", true),
                f("out/sub/r", false),
                f("top", false),
            ],
        )
        .unwrap();
        assert!(d.path().join("out/empty").is_dir());
        assert_eq!(
            std::fs::read_to_string(d.path().join("out/sub/r")).unwrap(),
            "out/sub/r"
        );
        for bad in ["out/../../x", "/etc/x", "out//x"] {
            assert!(output_tree_path(&ad, bad).is_err(), "{bad}");
        }
        // A remap of the directory's name moves its whole tree.
        let ad = job(d.path(), "TransferOutputRemaps = \"out = moved\"");
        assert_eq!(
            output_tree_path(&ad, "out/sub/r").unwrap(),
            Some(d.path().join("moved/sub/r"))
        );
    }

    #[test]
    fn outputs_go_to_out_err_and_iwd() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("logs")).unwrap();
        let ad = job(d.path(), "Out = \"logs/job.out\"\nErr = \"/dev/null\"");
        let f = |n: &str, t: &str| File {
            name: n.into(),
            data: t.as_bytes().to_vec(),
            ..Default::default()
        };
        write_outputs(
            &ad,
            &me(),
            &[f("job.out", "hello\n"), f("null", "e"), f("r.dat", "1")],
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("logs/job.out")).unwrap(),
            "hello\n"
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join("r.dat")).unwrap(),
            "1"
        );
        // Err is /dev/null: a file of that base name goes nowhere.
        assert_eq!(output_path(&ad, "null").unwrap(), None);
        assert!(output_path(&ad, "../x").is_err());
    }

    #[test]
    fn transfer_output_remaps_rename_outputs_as_htcondor_reads_them() {
        let rules = " a.dat = out/a.dat ;b\\;1=/abs/b ; nothing; c = c2;c2=c3 ;\tx=y\\=z";
        assert_eq!(remap(rules, "a.dat").unwrap().as_deref(), Some("out/a.dat"));
        // `\;` escapes only in a target: a name holding `;` ends at it, as HTCondor's.
        assert_eq!(remap(rules, "b;1").unwrap(), None);
        assert_eq!(remap(rules, "1").unwrap().as_deref(), Some("/abs/b"));
        // A remapped name is remapped again.
        assert_eq!(remap(rules, "c").unwrap().as_deref(), Some("c3"));
        assert_eq!(remap(rules, "x").unwrap().as_deref(), Some("y\\=z"));
        assert_eq!(remap("k=a\\;b", "k").unwrap().as_deref(), Some("a;b"));
        assert_eq!(remap(rules, "nothing").unwrap(), None);
        assert!(remap("p=q;q=p", "p").unwrap_err().contains("loops"));
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("out")).unwrap();
        let ad = job(
            d.path(),
            "TransferOutputRemaps = \"a.dat=out/a.dat;r=/tmp/r;u=https://h/u\"\nOut = \"o\"",
        );
        write_outputs(
            &ad,
            &me(),
            &[File {
                name: "a.dat".into(),
                data: b"1".to_vec(),
                ..Default::default()
            }],
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("out/a.dat")).unwrap(),
            "1"
        );
        assert_eq!(
            output_path(&ad, "r").unwrap(),
            Some(PathBuf::from("/tmp/r"))
        );
        assert_eq!(output_path(&ad, "o").unwrap(), Some(d.path().join("o")));
        let e = output_path(&ad, "u").unwrap_err();
        assert!(e.message.contains("URL"), "{e:?}");
    }

    #[test]
    fn a_file_of_someone_else_is_not_handed_over() {
        // As an ordinary user this process cannot act as another account at all.
        if nix::unistd::geteuid().is_root() {
            let d = tempfile::tempdir().unwrap();
            let secret = d.path().join("secret");
            std::fs::write(&secret, "s").unwrap();
            std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .unwrap();
            let nobody = account("nobody").unwrap();
            let ad = job(
                d.path(),
                "TransferExecutable = false\nTransferInput = \"secret\"",
            );
            let e = read_inputs(&ad, &nobody).unwrap_err();
            assert!(e.message.contains("secret"), "{e:?}");
        } else {
            let other = Account {
                name: "other".into(),
                uid: 12345,
                gid: 12345,
            };
            let e = as_owner(&other, || Ok(())).unwrap_err();
            assert!(e.message.contains("cannot act as other"), "{e:?}");
        }
    }
}
