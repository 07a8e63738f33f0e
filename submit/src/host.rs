//! What condor_submit asks of the machine it runs on: environment variables (`$ENV()`,
//! `getenv`), files (`queue ... from FILE`, the executable's size), directories (`initialdir`
//! must exist, `queue ... matching GLOB`). The builder asks through [`Host`], so it stays a
//! pure function of its inputs: `cmctl submit` passes [`RealHost`], the tests a host whose
//! files are those of the reference HTCondor's chroot.
use std::io;
use std::path::Path;

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The file name (no directory part).
    pub name: String,
    /// Whether it is a directory.
    pub is_dir: bool,
}

/// The machine, as a submit sees it. Paths are absolute, as the submit side computes them.
pub trait Host {
    /// An environment variable of the submitter.
    fn getenv(&self, name: &str) -> Option<String>;
    /// The submitter's whole environment (`getenv = true`).
    fn environment(&self) -> Vec<(String, String)>;
    /// A whole text file (`queue ... from FILE`).
    fn read_file(&self, path: &Path) -> io::Result<String>;
    /// A file's size in bytes, `None` when it cannot be read.
    fn file_size(&self, path: &Path) -> Option<u64>;
    /// Whether `path` exists and is a directory.
    fn is_dir(&self, path: &Path) -> bool;
    /// Whether `path` exists (any kind of file).
    fn exists(&self, path: &Path) -> bool;
    /// The entries of a directory, in any order.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>>;
}

/// The machine this process runs on.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealHost;

impl Host for RealHost {
    fn getenv(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
    fn environment(&self) -> Vec<(String, String)> {
        std::env::vars().collect()
    }
    fn read_file(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }
    fn file_size(&self, path: &Path) -> Option<u64> {
        std::fs::metadata(path).ok().map(|m| m.len())
    }
    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(path)? {
            let e = e?;
            out.push(DirEntry {
                name: e.file_name().to_string_lossy().into_owned(),
                is_dir: e.path().is_dir(),
            });
        }
        Ok(out)
    }
}
