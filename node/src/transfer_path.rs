//! Paths of transferred files inside a job's sandbox, shared by the access point (which expands
//! a directory named in `transfer_input_files` into its files and brings output directories
//! back) and the starter (which makes them in the sandbox). Pure: no file system here.
//!
//! HTCondor's rules (src/condor_utils/file_transfer.cpp, `ExpandFileTransferList` and the
//! manual's `transfer_input_files`): a directory named without a trailing `/` travels with its
//! name and its whole tree (`dir/a`, `dir/sub/b`); with a trailing `/` only its contents go to
//! the top of the sandbox. A symbolic link is not followed out of the tree it is found in.
//! A path inside the sandbox is always relative and never climbs (`..`): a name sent by the
//! other side that does is refused, not cleaned.

use std::path::{Component, Path};

/// The parts of `name`, a path inside the sandbox (`a`, `dir/sub/b`): an error, naming it,
/// when it is empty, absolute, or holds an empty, `.` or `..` part or a NUL.
pub fn sandbox_parts(name: &str) -> Result<Vec<&str>, String> {
    if name.is_empty() {
        return Err("an empty file name".into());
    }
    if name.starts_with('/') {
        return Err(format!(
            "{name:?} is an absolute path, not a path in the sandbox"
        ));
    }
    if name.contains('\0') {
        return Err(format!("{name:?} holds a NUL byte"));
    }
    let parts: Vec<&str> = name.split('/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return Err(format!(
            "{name:?} is not a plain relative path in the sandbox (an empty, \".\" or \"..\" part)"
        ));
    }
    Ok(parts)
}

/// How a `transfer_input_files` (or `transfer_output_files`) entry lands in the sandbox: the
/// name it gets there (its base name), and whether only its contents go (a trailing `/`, for a
/// directory). An error when it names no file (`.`, `..`, `/`).
pub fn entry_name(entry: &str) -> Result<(String, bool), String> {
    let contents_only = entry.len() > 1 && entry.ends_with('/');
    match Path::new(entry).components().next_back() {
        Some(Component::Normal(n)) => match n.to_str() {
            Some(n) => Ok((n.to_string(), contents_only)),
            None => Err(format!("{entry:?} is not UTF-8")),
        },
        _ => Err(format!("{entry:?} names no file")),
    }
}

/// The sandbox name of `rel` (a path relative to a transferred directory) under that
/// directory's sandbox name `root` (`None` when only its contents are transferred).
pub fn tree_name(root: Option<&str>, rel: &Path) -> String {
    let rel = rel.to_string_lossy();
    match root {
        Some(r) if rel.is_empty() => r.to_string(),
        Some(r) => format!("{r}/{rel}"),
        None => rel.into_owned(),
    }
}

/// Whether `target` (a symbolic link's resolved path, canonical) stays inside the tree whose
/// canonical root is `root`.
pub fn inside(root: &Path, target: &Path) -> bool {
    target.starts_with(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_paths_are_relative_and_never_climb() {
        assert_eq!(sandbox_parts("a").unwrap(), ["a"]);
        assert_eq!(sandbox_parts("dir/sub/b").unwrap(), ["dir", "sub", "b"]);
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "./a",
            "a/",
            "a\0b",
        ] {
            let e = sandbox_parts(bad).unwrap_err();
            assert!(!e.is_empty(), "{bad:?}");
        }
        assert!(sandbox_parts("/abs").unwrap_err().contains("absolute"));
    }

    #[test]
    fn a_trailing_slash_sends_only_the_contents() {
        assert_eq!(entry_name("data").unwrap(), ("data".into(), false));
        assert_eq!(entry_name("x/data/").unwrap(), ("data".into(), true));
        assert_eq!(entry_name("/abs/in.txt").unwrap(), ("in.txt".into(), false));
        for bad in [".", "..", "/", "a/.."] {
            assert!(entry_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(tree_name(Some("data"), Path::new("sub/b")), "data/sub/b");
        assert_eq!(tree_name(Some("data"), Path::new("")), "data");
        assert_eq!(tree_name(None, Path::new("sub/b")), "sub/b");
    }

    #[test]
    fn links_may_not_leave_the_tree() {
        let root = Path::new("/home/u/data");
        assert!(inside(root, Path::new("/home/u/data/sub/f")));
        assert!(!inside(root, Path::new("/home/u/data2/f")));
        assert!(!inside(root, Path::new("/etc/passwd")));
    }
}
