//! What goes wrong in a submit file, and where: condor_submit reports "on Line N of submit
//! file" and the command it was working on (submit_utils.cpp `push_error`); a
//! [`SubmitError`] always carries the file, the line and the command.
use std::fmt;

/// An error in a submit file: nothing of that file is queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmitError {
    /// The submit file, as it was named to `cmctl submit`.
    pub file: String,
    /// The 1-based line of the command (or queue statement) at fault; 0 when no line applies.
    pub line: usize,
    /// The command at fault (`request_memory`, `queue`...), as the file spells it.
    pub command: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SubmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(
                f,
                "{}, line {}, {}: {}",
                self.file, self.line, self.command, self.message
            )
        } else {
            write!(f, "{}, {}: {}", self.file, self.command, self.message)
        }
    }
}

impl std::error::Error for SubmitError {}

/// Where a command was given: its line and its name as written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct At {
    /// The 1-based line.
    pub line: usize,
    /// The command's name as written.
    pub command: String,
}

impl At {
    /// A place in the file.
    pub fn new(line: usize, command: &str) -> At {
        At {
            line,
            command: command.to_string(),
        }
    }

    /// The error at this place in `file`.
    pub fn error(&self, file: &str, message: impl Into<String>) -> SubmitError {
        SubmitError {
            file: file.to_string(),
            line: self.line,
            command: self.command.clone(),
            message: message.into(),
        }
    }
}
