//! The `queue` statement (submit_utils.cpp `SubmitForeachArgs::parse_queue_args`,
//! `load_inline_q_foreach_items`, `load_external_q_foreach_items`, `split_item`):
//!
//! `queue [N] [VAR[,VAR...]] in|from|matching [files|dirs|any] [[start:end:step]] (ITEMS)`
//!
//! - `N` (any ClassAd expression of an integer, default 1) jobs per item;
//! - `in`: the items are the words of the list (split on commas and whitespace);
//! - `from`: one item per line, of an inline list in parentheses or of a file;
//! - `matching`: the files (and directories, unless `files`; a directory ends in `/`)
//!   matching glob patterns, sorted;
//! - with several variables, an item is split on commas and whitespace, the last variable
//!   taking the rest; without any, the variable is `Item`.
//!
//! The list may run over several lines when the `(` ends the queue line; the source reader
//! ([`crate::source`]) collects those lines.
use crate::host::Host;
use std::path::Path;

/// How the items are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Plain `queue [N]`.
    Count,
    /// `in`.
    In,
    /// `from`.
    From,
    /// `matching`, with what may match.
    Matching(MatchKind),
}

/// What a `matching` pattern may match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    /// Files and directories (the default, and `any`).
    Any,
    /// `files`.
    Files,
    /// `dirs`.
    Dirs,
}

/// A python-style `[start:end:step]` slice of the items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Slice {
    start: Option<i64>,
    end: Option<i64>,
    step: Option<i64>,
}

impl Slice {
    fn selected(&self, ix: usize, len: usize) -> bool {
        let (ix, len) = (ix as i64, len as i64);
        let is = self
            .start
            .map(|s| if s < 0 { s + len } else { s })
            .unwrap_or(0);
        let ie = self
            .end
            .map(|e| if e < 0 { e + len } else { e })
            .unwrap_or(len);
        let step = self.step.unwrap_or(1).max(1);
        ix >= is && ix < ie && (ix - is) % step == 0
    }
}

/// A parsed queue statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queue {
    /// Jobs per item.
    pub count: i64,
    /// The loop variables (`Item` when items are given without names).
    pub vars: Vec<String>,
    /// How the items are given.
    pub mode: Mode,
    /// The items given inline (or the glob patterns of `matching`).
    pub items: Vec<String>,
    /// The file of `from FILE`.
    pub from_file: Option<String>,
    /// The slice, if one was given.
    pub slice: Option<Slice>,
}

fn words(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| c == ',' || c.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
}

/// Finds the first whitespace- or `(`-delimited word equal (any case) to one of `keys`;
/// returns (start of the word, index just past it, which key).
fn find_keyword(s: &str, keys: &[&str]) -> Option<(usize, usize, usize)> {
    let b = s.as_bytes();
    let mut start: Option<usize> = None;
    for (i, &c) in b.iter().enumerate() {
        if c.is_ascii_whitespace() || c == b'(' {
            if let Some(st) = start.take() {
                if let Some(k) = keys.iter().position(|k| s[st..i].eq_ignore_ascii_case(k)) {
                    return Some((st, i, k));
                }
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    None
}

fn parse_slice(s: &str) -> Option<(Slice, usize)> {
    let close = s.find(']')?;
    let inner = &s[1..close];
    let parts: Vec<&str> = inner.split(':').collect();
    if parts.len() > 3 {
        return None;
    }
    let num = |i: usize| -> Result<Option<i64>, ()> {
        match parts.get(i).map(|p| p.trim()) {
            None | Some("") => Ok(None),
            Some(p) => p.parse().map(Some).map_err(|_| ()),
        }
    };
    Some((
        Slice {
            start: num(0).ok()?,
            end: num(1).ok()?,
            step: num(2).ok()?,
        },
        close + 1,
    ))
}

/// Parses a queue statement's (expanded) arguments and the lines of its multi-line list.
/// `count_of` evaluates the count expression.
pub fn parse(
    args: &str,
    body: Option<&[String]>,
    count_of: &dyn Fn(&str) -> Option<i64>,
) -> Result<Queue, String> {
    let args = args.trim();
    let mut q = Queue {
        count: 1,
        vars: Vec::new(),
        mode: Mode::Count,
        items: Vec::new(),
        from_file: None,
        slice: None,
    };
    let mut count_text = args;
    if let Some((kw_start, kw_end, which)) = find_keyword(args, &["in", "from", "matching"]) {
        q.mode = match which {
            0 => Mode::In,
            1 => Mode::From,
            _ => Mode::Matching(MatchKind::Any),
        };
        let mut rest = args[kw_end..].trim_start();
        // qualifiers and slice
        loop {
            if rest.starts_with('(') || rest.is_empty() {
                break;
            }
            if rest.starts_with('[') {
                let (slice, used) =
                    parse_slice(rest).ok_or("invalid slice in the queue statement")?;
                q.slice = Some(slice);
                rest = rest[used..].trim_start();
                continue;
            }
            let word_end = rest
                .find(|c: char| c.is_ascii_whitespace() || c == '(')
                .unwrap_or(rest.len());
            let word = &rest[..word_end];
            let kind = match word.to_ascii_lowercase().as_str() {
                "files" => MatchKind::Files,
                "dirs" => MatchKind::Dirs,
                "any" => MatchKind::Any,
                _ => break,
            };
            if word_end == rest.len() {
                break; // a last word is an item, not a qualifier
            }
            if !matches!(q.mode, Mode::Matching(_)) {
                return Err(format!("'{word}' is only allowed after 'matching'"));
            }
            q.mode = Mode::Matching(kind);
            rest = rest[word_end..].trim_start();
        }
        let one_line = rest.starts_with('(') && rest.ends_with(')');
        if one_line {
            let inner = &rest[1..rest.len() - 1];
            if q.mode == Mode::From {
                q.items.push(inner.trim().to_string());
            } else {
                q.items.extend(words(inner));
            }
        } else if let Some(first) = rest.strip_prefix('(') {
            let first = first.trim();
            let lines =
                std::iter::once(first).chain(body.unwrap_or(&[]).iter().map(String::as_str));
            for l in lines.filter(|l| !l.is_empty()) {
                if q.mode == Mode::From {
                    q.items.push(l.to_string());
                } else {
                    q.items.extend(words(l));
                }
            }
        } else if q.mode == Mode::From {
            if rest.is_empty() {
                return Err("'from' needs a file or a list in parentheses".into());
            }
            q.from_file = Some(rest.to_string());
        } else {
            q.items.extend(words(rest));
        }
        // the variables: scan back from the keyword over names, commas and spaces
        let head = args[..kw_start].trim_end();
        let b = head.as_bytes();
        let mut pv = b.len();
        let mut pt = b.len();
        while pt > 0 {
            let mut ch = b[pt - 1];
            if ch.is_ascii_digit() {
                pt -= 1;
                while pt > 0 {
                    ch = b[pt - 1];
                    if ch.is_ascii_alphabetic() {
                        break;
                    }
                    if !ch.is_ascii_digit() {
                        ch = b'!';
                        break;
                    }
                    pt -= 1;
                }
            }
            if ch.is_ascii_whitespace()
                || ch.is_ascii_alphabetic()
                || ch == b','
                || ch == b'_'
                || ch == b'.'
            {
                pv = pt.saturating_sub(1);
            } else {
                break;
            }
            if pt == 0 {
                break;
            }
            pt -= 1;
        }
        q.vars = words(&head[pv..]).collect();
        count_text = &head[..pv];
        if q.vars.is_empty() {
            q.vars.push("Item".to_string());
        }
    }
    let count_text = count_text.trim();
    if !count_text.is_empty() {
        match count_of(count_text) {
            Some(n) if (0..i64::from(i32::MAX)).contains(&n) => q.count = n,
            Some(n) => return Err(format!("the queue count {n} is out of range")),
            None => {
                return Err(format!(
                    "invalid queue statement: '{count_text}' is not a count"
                ))
            }
        }
    }
    Ok(q)
}

/// A shell-style wildcard match of one file name (`*`, `?`, `[...]`).
fn wildcard(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.first() {
        None => name.is_empty(),
        Some(b'*') => (0..=name.len()).any(|i| wildcard(&pattern[1..], &name[i..])),
        Some(b'?') => !name.is_empty() && wildcard(&pattern[1..], &name[1..]),
        Some(b'[') => {
            let Some(close) = pattern
                .iter()
                .skip(1)
                .position(|&c| c == b']')
                .map(|p| p + 1)
            else {
                return name.first() == Some(&b'[') && wildcard(&pattern[1..], &name[1..]);
            };
            let Some(&c) = name.first() else { return false };
            let set = &pattern[1..close];
            let (neg, set) = match set.first() {
                Some(b'!') | Some(b'^') => (true, &set[1..]),
                _ => (false, set),
            };
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == b'-' {
                    hit |= set[i] <= c && c <= set[i + 2];
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            hit != neg && wildcard(&pattern[close + 1..], &name[1..])
        }
        Some(&p) => name.first() == Some(&p) && wildcard(&pattern[1..], &name[1..]),
    }
}

/// The items of a queue statement: read from its file, or matched against the file system,
/// then sliced. Paths are relative to `cwd`.
pub fn items(q: &Queue, cwd: &Path, host: &dyn Host) -> Result<Vec<String>, String> {
    let mut items: Vec<String> = match (q.mode, &q.from_file) {
        (Mode::Count, _) => return Ok(vec![String::new()]),
        (Mode::From, Some(file)) => {
            let path = cwd.join(file);
            let text = host
                .read_file(&path)
                .map_err(|e| format!("cannot read the queue items from {}: {e}", path.display()))?;
            // every non-blank line is an item, `#` lines too, as condor_submit reads them
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        }
        (Mode::Matching(kind), _) => {
            let mut out: Vec<String> = Vec::new();
            for pattern in &q.items {
                let (dir, file_pat) = match pattern.rfind('/') {
                    Some(i) => (&pattern[..=i], &pattern[i + 1..]),
                    None => ("", pattern.as_str()),
                };
                let listing = host.list_dir(&cwd.join(if dir.is_empty() { "." } else { dir }));
                let mut found: Vec<String> = listing
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|e| !e.name.starts_with('.') || file_pat.starts_with('.'))
                    .filter(|e| match kind {
                        MatchKind::Any => true,
                        MatchKind::Files => !e.is_dir,
                        MatchKind::Dirs => e.is_dir,
                    })
                    .filter(|e| wildcard(file_pat.as_bytes(), e.name.as_bytes()))
                    .map(|e| format!("{dir}{}{}", e.name, if e.is_dir { "/" } else { "" }))
                    .collect();
                found.sort();
                for f in found {
                    if !out.contains(&f) {
                        out.push(f);
                    }
                }
            }
            out
        }
        _ => q.items.clone(),
    };
    if let Some(slice) = q.slice {
        let len = items.len();
        items = items
            .into_iter()
            .enumerate()
            .filter(|(i, _)| slice.selected(*i, len))
            .map(|(_, v)| v)
            .collect();
    }
    Ok(items)
}

/// Splits one item over the loop variables (`split_item`): on the first comma or whitespace
/// for each variable but the last, which takes the rest; missing values are empty.
pub fn split_item(item: &str, vars: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut data = item.trim_start_matches([' ', '\t']);
    for (i, v) in vars.iter().enumerate() {
        if i + 1 == vars.len() {
            out.push((v.clone(), data.to_string()));
            break;
        }
        match data.find([',', ' ', '\t']) {
            Some(p) => {
                out.push((v.clone(), data[..p].to_string()));
                data = data[p + 1..].trim_start_matches([' ', '\t']);
            }
            None => {
                out.push((v.clone(), data.to_string()));
                data = "";
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(s: &str) -> Option<i64> {
        s.parse().ok()
    }

    #[test]
    fn forms_of_the_queue_statement() {
        assert_eq!(parse("", None, &int).unwrap().count, 1);
        let q = parse("3", None, &int).unwrap();
        assert_eq!((q.count, q.mode), (3, Mode::Count));
        let q = parse("in (alpha, beta, gamma)", None, &int).unwrap();
        assert_eq!(
            (q.vars.clone(), q.items.clone()),
            (
                vec!["Item".to_string()],
                vec!["alpha".into(), "beta".into(), "gamma".into()]
            )
        );
        let body = vec!["red".to_string(), "green".into(), "blue".into()];
        let q = parse("2 color in (", Some(&body), &int).unwrap();
        assert_eq!(
            (q.count, q.vars.clone(), q.items.len()),
            (2, vec!["color".to_string()], 3)
        );
        let q = parse(
            "name,size from (",
            Some(&["small 100".to_string(), "huge, 8000".into()]),
            &int,
        )
        .unwrap();
        assert_eq!(q.vars, vec!["name".to_string(), "size".into()]);
        assert_eq!(q.items, vec!["small 100".to_string(), "huge, 8000".into()]);
        let q = parse("f matching files *.dat", None, &int).unwrap();
        assert_eq!(
            (q.mode, q.items.clone()),
            (Mode::Matching(MatchKind::Files), vec!["*.dat".to_string()])
        );
        let q = parse("x from items.txt", None, &int).unwrap();
        assert_eq!(q.from_file.as_deref(), Some("items.txt"));
        let q = parse("v1 in [1:] a b c", None, &int).unwrap();
        assert_eq!(q.vars, vec!["v1".to_string()]);
        assert!(parse("x y z bogus", None, &int).is_err());
    }

    #[test]
    fn items_split_over_variables() {
        let vars = vec!["a".to_string(), "b".into()];
        assert_eq!(
            split_item("huge, 8000", &vars),
            vec![("a".into(), "huge".into()), ("b".into(), "8000".into())]
        );
        assert_eq!(
            split_item("1", &vars),
            vec![("a".into(), "1".into()), ("b".into(), "".into())]
        );
        assert_eq!(
            split_item("x y z", &vars),
            vec![("a".into(), "x".into()), ("b".into(), "y z".into())]
        );
    }

    #[test]
    fn wildcards() {
        assert!(wildcard(b"host*", b"hosts.allow"));
        assert!(wildcard(b"h?st[s-t]", b"hosts"));
        assert!(!wildcard(b"host*", b"ghost"));
    }
}
