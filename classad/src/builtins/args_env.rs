//! HTCondor's argument and environment string helpers behind `argsToList`, `listToArgs`,
//! `envV1ToV2` and `mergeEnvironment` (V1: whitespace separated; V2: whitespace separated
//! with `'...'` quoting and `''` for a quote), as its ArgList and Env classes read and write
//! them (src/condor_utils/condor_arglist.cpp, src/condor_utils/env.cpp).
use std::collections::BTreeMap;

/// Split V2 raw arguments; `None` on an unbalanced quote.
pub fn split_args_v2(args: &str) -> Option<Vec<String>> {
    let b = args.as_bytes();
    let mut out = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut parsed = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\'' => {
                i += 1;
                parsed = true;
                loop {
                    if i >= b.len() {
                        return None;
                    }
                    if b[i] == b'\'' {
                        if i + 1 < b.len() && b[i + 1] == b'\'' {
                            buf.push(b'\'');
                            i += 2;
                        } else {
                            break;
                        }
                    } else {
                        buf.push(b[i]);
                        i += 1;
                    }
                }
                i += 1;
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                if parsed {
                    parsed = false;
                    out.push(String::from_utf8_lossy(&buf).into_owned());
                    buf.clear();
                }
            }
            c => {
                parsed = true;
                buf.push(c);
                i += 1;
            }
        }
    }
    if parsed {
        out.push(String::from_utf8_lossy(&buf).into_owned());
    }
    Some(out)
}

/// Split V1 raw arguments (unix): on whitespace only.
pub fn split_args_v1(args: &str) -> Vec<String> {
    args.split([' ', '\t', '\n', '\r'])
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Append one argument in V2 raw syntax.
fn append_arg(arg: &str, out: &mut String) {
    if !out.is_empty() {
        out.push(' ');
    }
    if arg.is_empty() {
        out.push_str("''");
    }
    for c in arg.chars() {
        match c {
            ' ' | '\t' | '\n' | '\r' | '\'' => {
                if out.ends_with('\'') {
                    out.pop();
                } else {
                    out.push('\'');
                }
                if c == '\'' {
                    out.push('\'');
                }
                out.push(c);
                out.push('\'');
            }
            c => out.push(c),
        }
    }
}

/// Join arguments into a V2 string, quoting those with spaces or quotes.
pub fn join_args_v2(args: &[String]) -> String {
    let mut out = String::new();
    for a in args {
        append_arg(a, &mut out);
    }
    out
}

/// V1 raw: plain space-joined; `None` when an argument holds whitespace.
pub fn join_args_v1(args: &[String]) -> Option<String> {
    let mut out = String::new();
    for a in args {
        if a.contains([' ', '\t', '\r', '\n']) {
            return None;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(a);
    }
    Some(out)
}

/// An environment: variable -> value, kept sorted as HTCondor's table is.
#[derive(Default)]
pub struct Env {
    vars: BTreeMap<String, Option<String>>,
}

impl Env {
    /// `NAME=value`; an entry without `=` is kept verbatim only when it holds `$$`.
    fn set(&mut self, entry: &str) -> bool {
        if entry.is_empty() {
            return false;
        }
        match entry.find('=') {
            None if entry.contains("$$") => {
                self.vars.insert(entry.to_string(), None);
                true
            }
            None | Some(0) => false,
            Some(i) => {
                self.vars
                    .insert(entry[..i].to_string(), Some(entry[i + 1..].to_string()));
                true
            }
        }
    }

    /// Add the `NAME=value` entries of a V2 environment string (later entries win); false if
    /// the string or an entry is malformed.
    pub fn merge_v2(&mut self, text: &str) -> bool {
        let Some(items) = split_args_v2(text) else {
            return false;
        };
        items.iter().all(|e| self.set(e))
    }

    /// V1 with the delimiter `;` or a leading permitted delimiter character.
    pub fn merge_v1_auto(&mut self, text: &str) -> bool {
        if text.is_empty() {
            return true;
        }
        let mut delim = ';';
        let mut rest = text;
        let first = text.chars().next().unwrap_or(';');
        if first == delim {
            rest = &text[1..];
        } else if "!#$%&*+,-/:;<>?@^`|~\x1F".contains(first) {
            delim = first;
            rest = &text[first.len_utf8()..];
        }
        let b = rest;
        let mut i = 0;
        let bytes = b.as_bytes();
        while i < bytes.len() {
            while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b'\n' | b'\r') {
                i += 1;
            }
            let start = i;
            while i < bytes.len() && bytes[i] != b'\n' && bytes[i] as char != delim {
                i += 1;
            }
            let entry = &b[start..i];
            if i < bytes.len() {
                i += 1;
            }
            if !entry.is_empty() && !self.set(entry) {
                return false;
            }
        }
        true
    }

    /// The environment as a V2 string, entries sorted by name.
    pub fn to_v2(&self) -> String {
        let list: Vec<String> = self
            .vars
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{}={}", k, v),
                None => k.clone(),
            })
            .collect();
        join_args_v2(&list)
    }
}
