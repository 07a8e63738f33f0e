//! Why a job could not start, or its output could not be collected, as the access point must
//! hear it: a typed error whose text is a `HoldReason` naming the cause, with HTCondor's
//! `HoldReasonCode` and the errno as `HoldReasonSubCode` (`condor_utils/condor_holdcodes.h`).
//! The starter reports; the access point decides to hold. The caller prefixes the text with
//! "Error from SLOT: ", as HTCondor's starter does.

use std::io;
use std::path::PathBuf;

/// HTCondor's `CONDOR_HOLD_CODE::FailedToCreateProcess`.
pub const HOLD_FAILED_TO_CREATE_PROCESS: u32 = 6;
/// HTCondor's `CONDOR_HOLD_CODE::TransferOutputError`.
pub const HOLD_TRANSFER_OUTPUT_ERROR: u32 = 12;
/// HTCondor's `CONDOR_HOLD_CODE::TransferInputError`.
pub const HOLD_TRANSFER_INPUT_ERROR: u32 = 13;
/// HTCondor's `CONDOR_HOLD_CODE::IwdError` (the job's working directory, here its sandbox).
pub const HOLD_IWD_ERROR: u32 = 14;
/// HTCondor's `CONDOR_HOLD_CODE::FailedToAccessUserAccount`.
pub const HOLD_FAILED_TO_ACCESS_USER_ACCOUNT: u32 = 23;

/// A job that cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// An attribute of the job ad is missing or unreadable.
    #[error("Job ad attribute {attribute} is invalid: {message}")]
    BadJobAd {
        /// The attribute, as the job ad spells it.
        attribute: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The executable does not exist.
    #[error("Failed to execute '{}': (errno=2: 'No such file or directory')", path.display())]
    MissingExecutable {
        /// The path the starter tried.
        path: PathBuf,
    },
    /// The executable exists but cannot be run.
    #[error("Failed to execute '{}': {reason}", path.display())]
    NotExecutable {
        /// The path the starter tried.
        path: PathBuf,
        /// Why not (not a regular file, no execute permission, bad format).
        reason: String,
        /// The errno, when the kernel gave one.
        errno: i32,
    },
    /// The job's owner has no account on this machine.
    #[error("Uid for \"{owner}\" not found in passwd file")]
    UnknownOwner {
        /// The job's `Owner` (or the configured slot user).
        owner: String,
    },
    /// The account chosen to run the job is root, which a starter never runs.
    #[error("Attempt to run job of \"{owner}\" as root (uid {uid}, gid {gid}) rejected")]
    RootOwner {
        /// The account name.
        owner: String,
        /// Its uid.
        uid: u32,
        /// Its gid.
        gid: u32,
    },
    /// An input file cannot be written into, or read from, the sandbox.
    #[error("Transfer input files failure: {name}: {source}")]
    UnreadableInput {
        /// The file's name, as the job named it.
        name: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The sandbox directory cannot be made.
    #[error("Failed to create the job's sandbox {}: {source}", path.display())]
    SandboxNotCreatable {
        /// The directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The file system holding the sandbox is full.
    #[error("The job's sandbox {} is full: {source}", path.display())]
    SandboxFull {
        /// The sandbox directory.
        path: PathBuf,
        /// The underlying error (ENOSPC or EDQUOT).
        #[source]
        source: io::Error,
    },
    /// The process could not be created for another reason.
    #[error("Failed to create the job's process ({what}): {source}")]
    Spawn {
        /// The step that failed.
        what: &'static str,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl StartError {
    /// The `HoldReason` the access point should show: this error's text.
    pub fn hold_reason(&self) -> String {
        self.to_string()
    }

    /// The `HoldReasonCode`.
    pub fn hold_reason_code(&self) -> u32 {
        match self {
            StartError::UnknownOwner { .. } | StartError::RootOwner { .. } => {
                HOLD_FAILED_TO_ACCESS_USER_ACCOUNT
            }
            StartError::UnreadableInput { .. } | StartError::SandboxFull { .. } => {
                HOLD_TRANSFER_INPUT_ERROR
            }
            StartError::SandboxNotCreatable { .. } => HOLD_IWD_ERROR,
            StartError::BadJobAd { .. }
            | StartError::MissingExecutable { .. }
            | StartError::NotExecutable { .. }
            | StartError::Spawn { .. } => HOLD_FAILED_TO_CREATE_PROCESS,
        }
    }

    /// The `HoldReasonSubCode`: the errno where there is one, else 0.
    pub fn hold_reason_subcode(&self) -> i32 {
        match self {
            StartError::MissingExecutable { .. } => libc::ENOENT,
            StartError::NotExecutable { errno, .. } => *errno,
            StartError::UnreadableInput { source, .. }
            | StartError::SandboxNotCreatable { source, .. }
            | StartError::SandboxFull { source, .. }
            | StartError::Spawn { source, .. } => source.raw_os_error().unwrap_or(0),
            _ => 0,
        }
    }
}

/// Output files that cannot be collected after the job exits.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// A file named in `TransferOutput` is not in the sandbox.
    #[error("Transfer output files failure: output file {name} was not created by the job")]
    Missing {
        /// The name, as `TransferOutput` has it.
        name: String,
    },
    /// A file is there but cannot be read (or is a link or not a regular file).
    #[error("Transfer output files failure: reading output file {name}: {source}")]
    Unreadable {
        /// The name, relative to the sandbox.
        name: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl OutputError {
    /// The `HoldReasonCode` (`TransferOutputError`).
    pub fn hold_reason_code(&self) -> u32 {
        HOLD_TRANSFER_OUTPUT_ERROR
    }

    /// The `HoldReasonSubCode`: the errno.
    pub fn hold_reason_subcode(&self) -> i32 {
        match self {
            OutputError::Missing { .. } => libc::ENOENT,
            OutputError::Unreadable { source, .. } => source.raw_os_error().unwrap_or(0),
        }
    }
}

/// Whether an I/O error means the file system is full.
pub(crate) fn is_full(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}
