//! The `arguments` and `environment` commands, in both of HTCondor's syntaxes
//! (condor_arglist.cpp `ArgList`, env.cpp `Env`):
//! - old ("V1") syntax: `arguments = a b c` splits on whitespace, a `"` must be written `\"`;
//!   the job gets `Args` with the words joined by one space. `environment = A=1;B=2` is split
//!   on `;` (or on the first character, when it is one of HTCondor's permitted delimiters);
//! - new ("V2") syntax, the whole value in double quotes: `""` is a literal `"`, single quotes
//!   group words with whitespace and `''` is a literal `'`; the job gets `Arguments` (and any
//!   environment `Environment`) in V2 raw form, where each whitespace or `'` of a word is
//!   quoted (`two' 'words`).
//!
//! The environment is always written in V2 form, sorted by name (HTCondor keeps a
//! `std::map`), unless the old `env` keyword was used with an old-syntax value.
use std::collections::BTreeMap;

/// The arguments as the job ad carries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arguments {
    /// Old syntax: `Args`.
    V1(String),
    /// New syntax: `Arguments`.
    V2(String),
}

/// Whether a value is in the new, double-quoted syntax (leading whitespace allowed).
pub fn is_v2_quoted(s: &str) -> bool {
    s.trim_start().starts_with('"')
}

/// `"..."` to its V2 raw content: `""` is a literal `"`; nothing but whitespace may follow.
fn v2_quoted_to_raw(s: &str) -> Result<String, String> {
    let s = s.trim_start();
    let mut chars = s[1..].char_indices().peekable();
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        if c == '"' {
            if chars.peek().map(|(_, c)| *c) == Some('"') {
                chars.next();
                out.push('"');
                continue;
            }
            let rest = &s[1 + i + 1..];
            if !rest.trim().is_empty() {
                return Err(format!(
                    "Unexpected characters following double-quote.  Did you forget to escape the double-quote by repeating it?  Here is the quote and trailing characters: {}",
                    &s[1 + i..]
                ));
            }
            return Ok(out);
        }
        out.push(c);
    }
    Err("Unterminated double-quote.".into())
}

/// V2 raw text to words: whitespace separates, `'...'` groups, `''` inside is a `'`.
fn split_v2(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut buf = String::new();
    let mut token = false;
    let b: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            '\'' => {
                let start = i;
                token = true;
                i += 1;
                loop {
                    if i >= b.len() {
                        let rest: String = b[start..].iter().collect();
                        return Err(format!("Unbalanced quote starting here: {rest}"));
                    }
                    if b[i] == '\'' {
                        if b.get(i + 1) == Some(&'\'') {
                            buf.push('\'');
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    buf.push(b[i]);
                    i += 1;
                }
                i += 1;
            }
            ' ' | '\t' | '\n' | '\r' => {
                i += 1;
                if token {
                    out.push(std::mem::take(&mut buf));
                    token = false;
                }
            }
            c => {
                token = true;
                buf.push(c);
                i += 1;
            }
        }
    }
    if token {
        out.push(buf);
    }
    Ok(out)
}

/// Words to V2 raw text (condor_arglist.cpp `append_arg`): the ClassAd library's, which its
/// `join_args` built-in uses too.
fn join_v2(words: &[String]) -> String {
    classad::builtins::args_env::join_args_v2(words)
}

/// Parses an `arguments` value (either syntax).
pub fn parse_arguments(value: &str) -> Result<Arguments, String> {
    if is_v2_quoted(value) {
        let raw = v2_quoted_to_raw(value)?;
        return Ok(Arguments::V2(join_v2(&split_v2(&raw)?)));
    }
    let mut raw = String::new();
    let mut chars = value.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '"' {
            return Err(format!(
                "Found illegal unescaped double-quote: {}",
                &value[i..]
            ));
        }
        if c == '\\' && chars.peek().map(|(_, c)| *c) == Some('"') {
            chars.next();
            raw.push('"');
            continue;
        }
        raw.push(c);
    }
    Ok(Arguments::V1(
        raw.split_whitespace().collect::<Vec<_>>().join(" "),
    ))
}

/// Parses an `arguments2` value (new syntax only).
pub fn parse_arguments_v2(value: &str) -> Result<Arguments, String> {
    if !is_v2_quoted(value) {
        return Err("Expecting double-quoted input string (V2 format).".into());
    }
    parse_arguments(value)
}

/// A job's environment (env.cpp `Env`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    vars: BTreeMap<String, Option<String>>,
}

const PERMITTED_DELIMS: &str = "!#$%&*+,-/:;<>?@^`|~\x1F";

impl Environment {
    fn set(&mut self, entry: &str) -> Result<(), String> {
        match entry.find('=') {
            None if entry.contains("$$") => {
                self.vars.insert(entry.to_string(), None);
                Ok(())
            }
            None => Err(format!(
                "ERROR: Missing '=' after environment variable '{entry}'."
            )),
            Some(0) => Err(format!("ERROR: missing variable in '{entry}'.")),
            Some(i) => {
                self.vars
                    .insert(entry[..i].to_string(), Some(entry[i + 1..].to_string()));
                Ok(())
            }
        }
    }

    /// Merges an `environment` value in either syntax.
    pub fn merge(&mut self, value: &str) -> Result<(), String> {
        if is_v2_quoted(value) {
            self.merge_v2(value)
        } else {
            self.merge_v1(value)
        }
    }

    /// Merges a new-syntax (double-quoted) value.
    pub fn merge_v2(&mut self, value: &str) -> Result<(), String> {
        if !is_v2_quoted(value) {
            return Err("Expecting a double-quoted environment string (V2 format).".into());
        }
        for e in split_v2(&v2_quoted_to_raw(value)?)? {
            self.set(&e)?;
        }
        Ok(())
    }

    fn merge_v1(&mut self, value: &str) -> Result<(), String> {
        let mut delim = ';';
        let mut s = value;
        if let Some(c) = s.chars().next() {
            if c == delim || PERMITTED_DELIMS.contains(c) {
                delim = c;
                s = &s[c.len_utf8()..];
            }
        }
        for piece in s.split([delim, '\n']) {
            let piece = piece.trim_start_matches([' ', '\t', '\r', '\n']);
            if !piece.is_empty() {
                self.set(piece)?;
            }
        }
        Ok(())
    }

    /// Adds a variable unless it is already set (`getenv = true`).
    pub fn import(&mut self, name: &str, value: &str) {
        self.vars
            .entry(name.to_string())
            .or_insert_with(|| Some(value.to_string()));
    }

    /// The V2 raw form (`Environment`).
    pub fn to_v2(&self) -> String {
        let words: Vec<String> = self
            .vars
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}={v}"),
                None => k.clone(),
            })
            .collect();
        join_v2(&words)
    }

    /// The V1 raw form with `;` (`Env`), or why it cannot be written so.
    pub fn to_v1(&self) -> Result<String, String> {
        let mut parts = Vec::new();
        for (k, v) in &self.vars {
            let part = match v {
                Some(v) => format!("{k}={v}"),
                None => k.clone(),
            };
            if part.contains(';') {
                return Err(format!(
                    "'{part}' cannot be written in the old environment syntax"
                ));
            }
            parts.push(part);
        }
        Ok(parts.join(";"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_and_new_arguments() {
        assert_eq!(
            parse_arguments("one   two 'three' x\\y").unwrap(),
            Arguments::V1("one two 'three' x\\y".into())
        );
        assert_eq!(
            parse_arguments("say \\\"hi\\\"").unwrap(),
            Arguments::V1("say \"hi\"".into())
        );
        assert!(parse_arguments("a \"b\"")
            .unwrap_err()
            .starts_with("Found illegal unescaped double-quote: \"b\""));
        assert_eq!(
            parse_arguments("\"one 'two three' \"\"quoted\"\" four\"").unwrap(),
            Arguments::V2("one two' 'three \"quoted\" four".into())
        );
        assert_eq!(
            parse_arguments("\"\"").unwrap(),
            Arguments::V2(String::new())
        );
        assert_eq!(
            parse_arguments("\"a '' 'it''s'\"").unwrap(),
            Arguments::V2("a '' it''''s".into())
        );
        assert!(parse_arguments("\"a\" b").is_err());
        assert!(parse_arguments("\"a 'b\"")
            .unwrap_err()
            .starts_with("Unbalanced quote"));
    }

    #[test]
    fn environments_sorted_in_v2_form() {
        let mut e = Environment::default();
        e.merge("Z=1;A=two;C=x y").unwrap();
        assert_eq!(e.to_v2(), "A=two C=x' 'y Z=1");
        let mut e = Environment::default();
        e.merge("\"Z=1 A=2 M=x''y B='two words'\"").unwrap();
        assert_eq!(e.to_v2(), "A=2 B=two' 'words M=xy Z=1");
        let mut e = Environment::default();
        e.merge("|A=1|B=2").unwrap();
        assert_eq!(e.to_v2(), "A=1 B=2");
        assert!(Environment::default().merge("NOVALUE").is_err());
    }
}
