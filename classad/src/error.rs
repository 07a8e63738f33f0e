//! Parse errors with the position where parsing stopped and what was expected there.
use std::fmt;

/// A parse error: 1-based line and column of the offending token, and a message that says
/// what the parser expected (and what it found).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line of the token where parsing stopped.
    pub line: u32,
    /// 1-based column of that token.
    pub column: u32,
    /// What the parser expected there, and what it found.
    pub message: String,
}

impl ParseError {
    /// An error at `line`:`column`.
    pub fn new(line: u32, column: u32, message: impl Into<String>) -> Self {
        ParseError {
            line,
            column,
            message: message.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for ParseError {}
