//! Errors of the configuration language. Every error says where it happened (file and line,
//! and the metaknob template line when the statement came from a `use` template) and, when a
//! knob is involved, which knob, so an admin can fix the file without guessing.
use std::fmt;

/// Where a statement or a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// Path of the file as it was named (or `<string>` for text given directly).
    pub file: String,
    /// 1-based line number of the statement in that file (first physical line of a continued
    /// line; the closing `@tag` line of a `@=` value, as HTCondor reports it).
    pub line: u32,
    /// `Some(("ROLE:Submit", 0))` when the statement came from line 0 of a metaknob template
    /// that was pulled in by a `use` statement at `file`:`line`.
    pub template: Option<Box<(String, u32)>>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, line {}", self.file, self.line)?;
        if let Some((name, off)) = self.template.as_deref() {
            write!(f, ", use {name}+{off}")?;
        }
        Ok(())
    }
}

/// A configuration error: a broken file, a bad value, a failing macro function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where the problem is, when it is in a file.
    pub location: Option<Location>,
    /// The knob involved, when there is one.
    pub knob: Option<String>,
    /// What is wrong, in words.
    pub message: String,
    /// The chain of `include` statements that led to `location`, innermost first.
    pub included_from: Vec<Location>,
}

impl ConfigError {
    /// An error with a message only.
    pub fn new(message: impl Into<String>) -> Self {
        ConfigError {
            location: None,
            knob: None,
            message: message.into(),
            included_from: Vec::new(),
        }
    }

    /// An error at a place in a file.
    pub fn at(location: Location, message: impl Into<String>) -> Self {
        ConfigError {
            location: Some(location),
            ..ConfigError::new(message)
        }
    }

    /// Names the knob the error is about.
    pub fn with_knob(mut self, knob: impl Into<String>) -> Self {
        self.knob = Some(knob.into());
        self
    }

    /// Sets the location if none is set yet.
    pub fn or_at(mut self, location: &Location) -> Self {
        if self.location.is_none() {
            self.location = Some(location.clone());
        }
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(loc) = &self.location {
            write!(f, "{loc}: ")?;
        }
        if let Some(knob) = &self.knob {
            write!(f, "knob {knob}: ")?;
        }
        f.write_str(&self.message)?;
        for inc in &self.included_from {
            write!(f, " (included from {inc})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_line_template_and_knob() {
        let loc = Location {
            file: "/etc/a.conf".into(),
            line: 7,
            template: Some(Box::new(("ROLE:Submit".into(), 0))),
        };
        let mut e = ConfigError::at(loc, "bad value").with_knob("START");
        e.included_from.push(Location {
            file: "/etc/main.conf".into(),
            line: 2,
            template: None,
        });
        assert_eq!(
            e.to_string(),
            "/etc/a.conf, line 7, use ROLE:Submit+0: knob START: bad value (included from /etc/main.conf, line 2)"
        );
    }
}
