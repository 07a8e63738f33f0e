//! `aerie-jepsen-slowfs`: a FUSE file system that mirrors a backing directory and makes
//! `fsync`/`fdatasync` (and directory syncs) slow on demand, the disk-stall nemesis's disk.
//!
//! A disk that stalls (a dying drive, a saturated SAN, a throttled cloud volume) does not fail
//! writes: it makes the writer wait. RocksDB syncs its write-ahead log before a CM acknowledges
//! a Raft append, so a CM whose fsync takes seconds cannot commit; what must hold is that the
//! cluster still loses nothing and, if that CM leads, either commits slowly or elects another.
//! HTCondor's HA replication (src/condor_had/ReplicatorStateMachine.cpp) writes its copies
//! with no sync at all, so a slow disk there just widens the window it loses.
//!
//! This machine has `/dev/fuse` and no device-mapper (`dm-delay` would be the block-level way),
//! so the stall is made one level up: every file operation is passed through to the backing
//! directory as is, and every sync first sleeps for the delay in milliseconds written in the
//! control file (absent or empty: none), re-read on every sync, so the nemesis changes it at
//! run time by rewriting the file. Every delayed sync is logged on standard error with the
//! file's path, which is how the tests see that RocksDB's log syncs really pass through here.
//!
//! Inodes are the backing files' own inode numbers (the backing root is inode 1), mapped to
//! the path they were last looked up or renamed to; a directory renamed away leaves its
//! children's paths stale (RocksDB renames files only). File locks are left to the kernel
//! (no `setlk`: FUSE then keeps POSIX locks local, enough for RocksDB's `LOCK` file within
//! one machine). Mounted with `mount(2)` directly, so it needs root and no `fusermount`.

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{
    DirBuilderExt, DirEntryExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long the kernel may cache an entry or attributes. Short: the backing directory is
/// changed through this mount only, but a stale size would hide a write.
const TTL: Duration = Duration::from_millis(100);

/// The sync delay the control file `path` asks for: its content in milliseconds; none when the
/// file is absent, empty or not a number.
pub fn delay(path: &Path) -> Duration {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
        .unwrap_or_default()
}

/// The file system: a backing directory, a control file, and the open files.
pub struct SlowFs {
    backing: PathBuf,
    control: PathBuf,
    inodes: Mutex<HashMap<u64, PathBuf>>,
    files: Mutex<HashMap<u64, Arc<File>>>,
    next_fh: AtomicU64,
}

fn errno(e: std::io::Error) -> Errno {
    Errno::from(e)
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32)
    } else {
        UNIX_EPOCH
    }
}

fn kind(t: std::fs::FileType) -> FileType {
    FileType::from_std(t).unwrap_or(FileType::RegularFile)
}

impl SlowFs {
    /// A file system mirroring `backing`, its syncs delayed as `control` says ([`delay`]).
    pub fn new(backing: PathBuf, control: PathBuf) -> SlowFs {
        let mut inodes = HashMap::new();
        inodes.insert(1, backing.clone());
        SlowFs {
            backing,
            control,
            inodes: Mutex::new(inodes),
            files: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
        }
    }

    fn path(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
        let inodes = self.inodes.lock().map_err(|_| Errno::EIO)?;
        inodes.get(&ino.0).cloned().ok_or(Errno::ENOENT)
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<PathBuf, Errno> {
        Ok(self.path(parent)?.join(name))
    }

    fn file(&self, fh: FileHandle) -> Result<Arc<File>, Errno> {
        let files = self.files.lock().map_err(|_| Errno::EIO)?;
        files.get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    /// The inode number the kernel knows `path` by, registering it.
    fn ino_of(&self, path: &Path, meta: &std::fs::Metadata) -> u64 {
        let ino = if path == self.backing { 1 } else { meta.ino() };
        if let Ok(mut inodes) = self.inodes.lock() {
            inodes.insert(ino, path.to_path_buf());
        }
        ino
    }

    fn attr(&self, path: &Path) -> Result<FileAttr, Errno> {
        let meta = std::fs::symlink_metadata(path).map_err(errno)?;
        let ino = self.ino_of(path, &meta);
        Ok(FileAttr {
            ino: INodeNo(ino),
            size: meta.size(),
            blocks: meta.blocks(),
            atime: time(meta.atime(), meta.atime_nsec()),
            mtime: time(meta.mtime(), meta.mtime_nsec()),
            ctime: time(meta.ctime(), meta.ctime_nsec()),
            crtime: time(meta.ctime(), meta.ctime_nsec()),
            kind: kind(meta.file_type()),
            perm: (meta.mode() & 0o7777) as u16,
            nlink: meta.nlink() as u32,
            uid: meta.uid(),
            gid: meta.gid(),
            rdev: meta.rdev() as u32,
            blksize: meta.blksize() as u32,
            flags: 0,
        })
    }

    fn keep(&self, f: File) -> Result<FileHandle, Errno> {
        let fh = self.next_fh.fetch_add(1, Ordering::SeqCst);
        let mut files = self.files.lock().map_err(|_| Errno::EIO)?;
        files.insert(fh, Arc::new(f));
        Ok(FileHandle(fh))
    }

    /// Sleeps the control file's delay before a sync of `what`, logging it when there is one.
    fn stall(&self, what: &Path, datasync: bool) {
        let d = delay(&self.control);
        if !d.is_zero() {
            eprintln!(
                "slowfs: {} of {} delayed {} ms",
                if datasync { "fdatasync" } else { "fsync" },
                what.strip_prefix(&self.backing).unwrap_or(what).display(),
                d.as_millis()
            );
            std::thread::sleep(d);
        }
    }

    fn open_options(flags: i32) -> OpenOptions {
        let acc = flags & libc::O_ACCMODE;
        let mut o = OpenOptions::new();
        o.read(acc != libc::O_WRONLY)
            .write(acc != libc::O_RDONLY)
            // Writes come with their offsets (O_APPEND ones too): no append, no sync flags.
            .custom_flags(flags & libc::O_TRUNC);
        o
    }
}

/// Replies to `reply` with `r`'s value through `ok`, or its error.
macro_rules! answer {
    ($reply:expr, $r:expr, |$v:ident| $ok:expr) => {
        match $r {
            Ok($v) => $ok,
            Err(e) => $reply.error(e),
        }
    };
}

impl Filesystem for SlowFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let r = self.child(parent, name).and_then(|p| self.attr(&p));
        answer!(reply, r, |a| reply.entry(&TTL, &a, Generation(0)))
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let r = self.path(ino).and_then(|p| self.attr(&p));
        answer!(reply, r, |a| reply.attr(&TTL, &a))
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let r = (|| {
            let path = self.path(ino)?;
            if let Some(m) = mode {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(m))
                    .map_err(errno)?;
            }
            if uid.is_some() || gid.is_some() {
                std::os::unix::fs::chown(&path, uid, gid).map_err(errno)?;
            }
            if let Some(len) = size {
                match fh {
                    Some(fh) => self.file(fh)?.set_len(len).map_err(errno)?,
                    None => OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .and_then(|f| f.set_len(len))
                        .map_err(errno)?,
                }
            }
            self.attr(&path)
        })();
        answer!(reply, r, |a| reply.attr(&TTL, &a))
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let r = self.child(parent, name).and_then(|p| {
            std::fs::DirBuilder::new()
                .mode(mode & !umask)
                .create(&p)
                .map_err(errno)?;
            self.attr(&p)
        });
        answer!(reply, r, |a| reply.entry(&TTL, &a, Generation(0)))
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self
            .child(parent, name)
            .and_then(|p| std::fs::remove_file(p).map_err(errno));
        answer!(reply, r, |_v| reply.ok())
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self
            .child(parent, name)
            .and_then(|p| std::fs::remove_dir(p).map_err(errno));
        answer!(reply, r, |_v| reply.ok())
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let r = (|| {
            if !flags.is_empty() {
                return Err(Errno::EINVAL);
            }
            let (from, to) = (self.child(parent, name)?, self.child(newparent, newname)?);
            std::fs::rename(&from, &to).map_err(errno)?;
            // The inode now lives at `to`.
            self.attr(&to).map(|_| ())
        })();
        answer!(reply, r, |_v| reply.ok())
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let r = self.path(ino).and_then(|p| {
            let f = Self::open_options(flags.0).open(p).map_err(errno)?;
            self.keep(f)
        });
        answer!(reply, r, |fh| reply.opened(fh, FopenFlags::empty()))
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let r = self.child(parent, name).and_then(|p| {
            let mut o = Self::open_options(flags);
            o.mode(mode & !umask);
            if flags & libc::O_EXCL != 0 {
                o.create_new(true);
            } else {
                o.create(true);
            }
            let f = o.open(&p).map_err(errno)?;
            let attr = self.attr(&p)?;
            Ok((attr, self.keep(f)?))
        });
        answer!(reply, r, |v| reply.created(
            &TTL,
            &v.0,
            Generation(0),
            v.1,
            FopenFlags::empty()
        ))
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let r = self.file(fh).and_then(|f| {
            let mut buf = vec![0u8; size as usize];
            let mut got = 0;
            while got < buf.len() {
                match f.read_at(&mut buf[got..], offset + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(errno(e)),
                }
            }
            buf.truncate(got);
            Ok(buf)
        });
        answer!(reply, r, |b| reply.data(&b))
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let r = self
            .file(fh)
            .and_then(|f| f.write_all_at(data, offset).map_err(errno));
        answer!(reply, r, |_v| reply.written(data.len() as u32))
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // Writes went straight to the backing file: a close has nothing to push.
        reply.ok()
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        if let Ok(mut files) = self.files.lock() {
            files.remove(&fh.0);
        }
        reply.ok()
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = self.file(fh).and_then(|f| {
            self.stall(&self.path(ino).unwrap_or_default(), datasync);
            if datasync {
                f.sync_data()
            } else {
                f.sync_all()
            }
            .map_err(errno)
        });
        answer!(reply, r, |_v| reply.ok())
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = self.path(ino).and_then(|p| {
            self.stall(&p, datasync);
            File::open(&p).and_then(|d| d.sync_all()).map_err(errno)
        });
        answer!(reply, r, |_v| reply.ok())
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let r = self.path(ino).and_then(|p| {
            let mut entries = vec![
                (ino.0, FileType::Directory, ".".into()),
                (ino.0, FileType::Directory, "..".into()),
            ];
            for e in std::fs::read_dir(&p).map_err(errno)? {
                let e = e.map_err(errno)?;
                let t = e.file_type().map_err(errno)?;
                entries.push((e.ino(), kind(t), e.file_name()));
            }
            Ok(entries)
        });
        match r {
            Ok(entries) => {
                for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
                    if reply.add(INodeNo(*ino), i as u64 + 1, *kind, name) {
                        break;
                    }
                }
                reply.ok()
            }
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let r = (|| {
            let path = std::ffi::CString::new(self.backing.as_os_str().as_encoded_bytes())
                .map_err(|_| Errno::EINVAL)?;
            // SAFETY: statvfs writes only into `s`, and `path` is a valid C string.
            let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
            if unsafe { libc::statvfs(path.as_ptr(), &mut s) } != 0 {
                return Err(errno(std::io::Error::last_os_error()));
            }
            Ok(s)
        })();
        answer!(reply, r, |s| reply.statfs(
            s.f_blocks,
            s.f_bfree,
            s.f_bavail,
            s.f_files,
            s.f_ffree,
            s.f_bsize as u32,
            s.f_namemax as u32,
            s.f_frsize as u32
        ))
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        use std::os::fd::AsRawFd;
        let r = self.file(fh).and_then(|f| {
            // SAFETY: `f` is an open file for the whole call; fallocate only allocates blocks.
            let rc = unsafe { libc::fallocate(f.as_raw_fd(), mode, offset as i64, length as i64) };
            if rc == 0 {
                Ok(())
            } else {
                Err(errno(std::io::Error::last_os_error()))
            }
        });
        answer!(reply, r, |_v| reply.ok())
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        reply.ok()
    }
}

/// Mounts a [`SlowFs`] of `backing` at `mountpoint` (as root, with `mount(2)`) and serves it
/// until it is unmounted.
pub fn serve(backing: PathBuf, mountpoint: &Path, control: PathBuf) -> std::io::Result<()> {
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName("aerie-jepsen-slowfs".into()),
        fuser::MountOption::DefaultPermissions,
    ];
    // A stalled sync holds its thread; the others keep serving reads, writes and lookups.
    config.n_threads = Some(4);
    fuser::mount(SlowFs::new(backing, control), mountpoint, &config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delay_is_the_control_files_milliseconds_and_none_when_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        let control = dir.path().join("delay");
        assert_eq!(delay(&control), Duration::ZERO);
        std::fs::write(&control, "2500\n").unwrap();
        assert_eq!(delay(&control), Duration::from_millis(2500));
        std::fs::write(&control, "").unwrap();
        assert_eq!(delay(&control), Duration::ZERO);
        std::fs::write(&control, "soon").unwrap();
        assert_eq!(delay(&control), Duration::ZERO);
    }
}
