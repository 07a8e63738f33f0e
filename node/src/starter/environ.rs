//! The job's environment, in HTCondor's two syntaxes (`condor_utils/env.cpp`).
//!
//! A job ad carries it as `Environment` (the "new", V2 raw syntax) or as `Env` (the "old", V1
//! raw syntax); `Environment` wins when both are there (`Env::MergeFrom(ClassAd)`).
//!
//! - V2 raw (`MergeFromV2Raw`): the string is split exactly as V2 arguments are
//!   ([`super::arglist::split_v2`]), and each piece is one `NAME=VALUE`.
//! - V1 raw (`MergeFromV1AutoDelim`): entries are separated by the delimiter (`;` on Unix, or
//!   the job's `EnvDelim`) or a newline; leading white space of an entry is dropped, the rest
//!   is literal; a string that starts with one of ``!#$%&*+,-/:;<>?@^`|~`` (or 0x1F) declares
//!   that character its delimiter; empty entries are skipped.
//!
//! In both, an entry splits at its first `=`; an entry without `=`, or with nothing before it,
//! is an error (HTCondor keeps an unexpanded `$$(...)` entry verbatim; the access point expands
//! those before a job reaches a starter, so here it is refused like any entry without `=`). A
//! later entry for the same name replaces an earlier one.

use super::arglist::{split_v2, ArgsError};
use std::collections::BTreeMap;
use std::fmt;

/// The environment a job asked for, by name (HTCondor keeps it in a map too).
pub type JobEnv = BTreeMap<String, String>;

/// An environment string that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EnvError {
    /// A V2 string with a quote left open.
    Quote(ArgsError),
    /// An entry without `=`.
    MissingEquals(String),
    /// An entry with nothing before its `=`.
    MissingName(String),
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvError::Quote(e) => e.fmt(f),
            EnvError::MissingEquals(e) => {
                write!(f, "Missing '=' after environment variable '{e}'.")
            }
            EnvError::MissingName(e) => write!(f, "missing variable in '{e}'."),
        }
    }
}

impl std::error::Error for EnvError {}

/// The V1 delimiter on Unix.
pub const UNIX_V1_DELIMITER: char = ';';

const PERMITTED_DELIMITERS: &str = "!#$%&*+,-/:;<>?@^`|~\x1F";

fn set_entry(env: &mut JobEnv, entry: &str) -> Result<(), EnvError> {
    match entry.split_once('=') {
        None => Err(EnvError::MissingEquals(entry.to_string())),
        Some(("", _)) => Err(EnvError::MissingName(entry.to_string())),
        Some((name, value)) => {
            env.insert(name.to_string(), value.to_string());
            Ok(())
        }
    }
}

/// Parses a V2 raw environment (the job ad's `Environment`).
pub fn parse_v2(raw: &str) -> Result<JobEnv, EnvError> {
    let mut env = JobEnv::new();
    for entry in split_v2(raw).map_err(EnvError::Quote)? {
        set_entry(&mut env, &entry)?;
    }
    Ok(env)
}

/// Parses a V1 raw environment (the job ad's `Env`), with the job's `EnvDelim` if it has one.
pub fn parse_v1(raw: &str, env_delim: Option<char>) -> Result<JobEnv, EnvError> {
    let mut delim = env_delim.unwrap_or(UNIX_V1_DELIMITER);
    let mut rest = raw;
    if let Some(first) = raw.chars().next() {
        if first == delim || PERMITTED_DELIMITERS.contains(first) {
            delim = first;
            rest = &raw[first.len_utf8()..];
        }
    }
    let mut env = JobEnv::new();
    for entry in rest.split([delim, '\n']) {
        let entry = entry.trim_start_matches([' ', '\t', '\n', '\r']);
        if !entry.is_empty() {
            set_entry(&mut env, entry)?;
        }
    }
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(env: &JobEnv) -> Vec<(&str, &str)> {
        env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    #[test]
    fn v2_as_condor_submit_writes_it() {
        // condor_submit 23.9.6 turns `environment = "A=1 B='x y' C=it''s"` into this.
        let env = parse_v2("A=1 B=x' 'y C=its").unwrap();
        assert_eq!(pairs(&env), [("A", "1"), ("B", "x y"), ("C", "its")]);
        let env = parse_v2("X='a=b c' EMPTY= X2=''").unwrap();
        assert_eq!(pairs(&env), [("EMPTY", ""), ("X", "a=b c"), ("X2", "")]);
    }

    #[test]
    fn v1_delimiters_and_white_space() {
        let env = parse_v1("A=1;B=x y; C= z ;;\nD=4", None).unwrap();
        assert_eq!(
            pairs(&env),
            [("A", "1"), ("B", "x y"), ("C", " z "), ("D", "4")]
        );
        // A leading permitted character declares the delimiter.
        let env = parse_v1("|A=1;2|B=3", None).unwrap();
        assert_eq!(pairs(&env), [("A", "1;2"), ("B", "3")]);
        // The job's EnvDelim.
        let env = parse_v1("A=1|B=2", Some('|')).unwrap();
        assert_eq!(pairs(&env), [("A", "1"), ("B", "2")]);
        assert!(parse_v1("", None).unwrap().is_empty());
    }

    #[test]
    fn later_entries_replace_earlier() {
        assert_eq!(pairs(&parse_v2("A=1 A=2").unwrap()), [("A", "2")]);
        assert_eq!(pairs(&parse_v1("A=1;A=2", None).unwrap()), [("A", "2")]);
    }

    #[test]
    fn bad_entries_are_named() {
        assert_eq!(
            parse_v2("A=1 NOVALUE").unwrap_err().to_string(),
            "Missing '=' after environment variable 'NOVALUE'."
        );
        assert_eq!(
            parse_v1("A=1;=3", None).unwrap_err(),
            EnvError::MissingName("=3".into())
        );
        assert!(matches!(parse_v2("A='x"), Err(EnvError::Quote(_))));
    }
}
