//! Macro expansion, as HTCondor 23.9.6 does it: find the leftmost complete `$(...)` (or
//! `$FUNC(...)`), replace it with its value, and scan again from the start until none is left.
//! Rescanning from the start is what makes `$(A$(B))` work: the inner macro is the first
//! complete one, and once it is replaced the outer one becomes complete.
//!
//! `$$(...)` is never touched (it is for match time) and `$(DOLLAR)` becomes `$` at the very end.
//! A reference loop (`A = $(B)`, `B = $(A)`) makes HTCondor spin forever; here it stops after
//! [`MAX_SUBSTITUTIONS`] substitutions with an error instead.
use crate::numeric::{self, Const};
use rand::Rng;

/// Upper bound on substitutions in one expansion; far above any real configuration.
pub(crate) const MAX_SUBSTITUTIONS: usize = 20_000;
/// Upper bound on the length of an expanded value.
pub(crate) const MAX_EXPANDED_LEN: usize = 4 << 20;
/// Upper bound on nested evaluation of macro-function arguments.
const MAX_DEPTH: u32 = 64;

/// What the expander needs from the table of macros it expands against: the configuration,
/// or condor_submit's submit hash (which HTCondor expands with this same code, config.cpp's
/// `expand_macro`, only over another table).
pub trait MacroEnv {
    /// The raw (unexpanded) value of a knob, found with the usual prefix rules
    /// (local name, subsystem, plain name, then defaults). `None` when undefined.
    fn lookup_raw(&self, name: &str) -> Option<String>;
    /// An environment variable.
    fn getenv(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Normal,
    Env,
    RandomChoice,
    RandomInteger,
    Choice,
    Substr,
    Int,
    Real,
    Str,
    Eval,
    Basename,
    Dirname,
    Filename,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyMode {
    Anything,
    IdColon,
    MetaArg,
}

/// Which macros a scan should report.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Select<'a> {
    /// Every macro except `$(DOLLAR)`.
    AllButDollar,
    /// Only `$(DOLLAR)`.
    DollarOnly,
    /// Only references to the knob being defined (`$(X)` and `$(X:default)`, also `$F..(X)`),
    /// by its full name or by its name without a subsystem/local-name prefix.
    SelfOnly(&'a str, Option<&'a str>),
    /// Only metaknob arguments `$(1)`, `$(2?)`, `$(0#)`, `$(2+:default)`.
    MetaArgs,
}

/// Position of a macro in a string (byte offsets).
#[derive(Debug, Clone, Copy)]
pub(crate) struct MacroPos {
    pub dollar: usize,
    pub kind: Kind,
    /// Offset of the `(`.
    pub open: usize,
    pub body: usize,
    /// Offset of the first byte after the `:` of a default, if there is one.
    pub colon: Option<usize>,
    /// Offset just past the `)`.
    pub right: usize,
}

impl MacroPos {
    fn name<'s>(&self, s: &'s str) -> &'s str {
        match self.colon {
            Some(c) => &s[self.body..c - 1],
            None => &s[self.body..self.right - 1],
        }
    }
    fn default<'s>(&self, s: &'s str) -> Option<&'s str> {
        self.colon.map(|c| &s[c..self.right - 1])
    }
}

pub(crate) fn is_idchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'/'
}

fn classify(prefix: &[u8], meta: bool) -> Option<(Kind, BodyMode)> {
    if prefix.len() == 1 {
        return Some((
            Kind::Normal,
            if meta {
                BodyMode::MetaArg
            } else {
                BodyMode::IdColon
            },
        ));
    }
    if meta || prefix[1] == b'$' {
        return None;
    }
    if prefix[1] == b'F'
        && prefix[2..]
            .iter()
            .all(|c| b"pnxdqabfwu".contains(&(c | 0x20)))
    {
        return Some((Kind::Filename, BodyMode::Anything));
    }
    let kind = match &prefix[1..] {
        b"ENV" => return Some((Kind::Env, BodyMode::IdColon)),
        b"RANDOM_CHOICE" => Kind::RandomChoice,
        b"RANDOM_INTEGER" => Kind::RandomInteger,
        b"CHOICE" => Kind::Choice,
        b"SUBSTR" => Kind::Substr,
        b"INT" => Kind::Int,
        b"REAL" => Kind::Real,
        b"STRING" => Kind::Str,
        b"EVAL" => Kind::Eval,
        b"BASENAME" => Kind::Basename,
        b"DIRNAME" => Kind::Dirname,
        _ => return None,
    };
    Some((kind, BodyMode::Anything))
}

fn name_matches(body: &[u8], target: &str) -> bool {
    let t = target.as_bytes();
    (body.len() == t.len() || (body.len() > t.len() && body[t.len()] == b':'))
        && body[..t.len().min(body.len())].eq_ignore_ascii_case(t)
}

fn skip(select: Select<'_>, kind: Kind, body: &[u8]) -> bool {
    let is_dollar = kind == Kind::Normal && body.eq_ignore_ascii_case(b"DOLLAR");
    match select {
        Select::AllButDollar => is_dollar,
        Select::DollarOnly => !is_dollar,
        Select::SelfOnly(a, b) => {
            if kind != Kind::Normal && kind != Kind::Filename {
                return true;
            }
            !(name_matches(body, a) || b.is_some_and(|b| name_matches(body, b)))
        }
        Select::MetaArgs => {
            kind != Kind::Normal || !body.first().is_some_and(|c| c.is_ascii_digit())
        }
    }
}

/// Finds the first macro at or after `from` that `select` accepts.
pub(crate) fn find_macro(s: &str, from: usize, select: Select<'_>) -> Option<MacroPos> {
    let b = s.as_bytes();
    let len = b.len();
    let meta = matches!(select, Select::MetaArgs);
    let mut t = from;
    'outer: loop {
        let (dollar, kind, mode, open) = loop {
            let d = t + b.get(t..)?.iter().position(|&c| c == b'$')?;
            let mut p = d + 1;
            if p < len && b[p] == b'$' {
                p += 1;
            }
            while p < len && (b[p].is_ascii_alphanumeric() || b[p] == b'_') {
                p += 1;
            }
            if p < len && b[p] == b'(' {
                if let Some((kind, mode)) = classify(&b[d..p], meta) {
                    break (d, kind, mode, p);
                }
            }
            t = p.max(d + 1);
        };
        let body = open + 1;
        let mut v = body;
        let mut colon: Option<usize> = None;
        match mode {
            BodyMode::Anything => {
                while v < len && b[v] != b')' {
                    v += 1;
                }
            }
            BodyMode::IdColon | BodyMode::MetaArg => {
                while v < len && b[v] != b')' {
                    let c = b[v];
                    v += 1;
                    if c == b':' && colon.is_none() {
                        colon = Some(v);
                        continue;
                    } else if colon.is_some() {
                        if c == b'(' {
                            if let Some(q) = b[v..].iter().position(|&x| x == b')') {
                                v = v + q + 1;
                                continue;
                            }
                        } else if mode == BodyMode::MetaArg || b"$ ,\\:".contains(&c) {
                            continue;
                        }
                    }
                    let ok = if mode == BodyMode::MetaArg {
                        c.is_ascii_digit() || b"?#+".contains(&c)
                    } else {
                        is_idchar(c)
                    };
                    if !ok {
                        t = body;
                        continue 'outer;
                    }
                }
            }
        }
        if v < len && b[v] == b')' {
            if skip(select, kind, &b[body..v]) {
                t = v;
                continue;
            }
            return Some(MacroPos {
                dollar,
                kind,
                open,
                body,
                colon,
                right: v + 1,
            });
        }
        t = body;
    }
}

/// Expands every macro in `text` against `env`, as HTCondor's `expand_macro` does (`$(NAME)`,
/// `$(NAME:default)`, `$ENV()`, `$RANDOM_INTEGER()`, `$CHOICE()`, `$SUBSTR()`, `$INT()`,
/// `$REAL()`, `$STRING()`, `$EVAL()`, `$F..()`...); `$(DOLLAR)` becomes `$` and `$$(...)` is
/// left for match time. The error names the macro that cannot be expanded.
pub fn expand_macros(text: &str, env: &dyn MacroEnv) -> Result<String, String> {
    expand(text, env, false)
}

/// Expands only the references to `name` in `text` (`X = $(X) more`), as a value is stored.
pub fn expand_self_references(
    text: &str,
    name: &str,
    env: &dyn MacroEnv,
) -> Result<String, String> {
    expand_self(text, name, None, env)
}

/// Expands every macro in `text`. `$(DOLLAR)` becomes `$` unless `keep_dollar`.
pub(crate) fn expand(text: &str, env: &dyn MacroEnv, keep_dollar: bool) -> Result<String, String> {
    expand_depth(text, env, keep_dollar, 0)
}

fn expand_depth(
    text: &str,
    env: &dyn MacroEnv,
    keep_dollar: bool,
    depth: u32,
) -> Result<String, String> {
    if depth > MAX_DEPTH {
        return Err("macro functions nested too deep".into());
    }
    let mut s = text.to_string();
    substitute_loop(&mut s, Select::AllButDollar, env, depth)?;
    if !keep_dollar {
        let mut from = 0;
        while let Some(pos) = find_macro(&s, from, Select::DollarOnly) {
            s.replace_range(pos.dollar..pos.right, "$");
            from = pos.dollar + 1;
        }
    }
    Ok(s)
}

/// Expands only references to `name` (and to `short`, the name without its prefix), as is done
/// when a value is stored, so that `X = $(X) more` appends to the previous value.
pub(crate) fn expand_self(
    text: &str,
    name: &str,
    short: Option<&str>,
    env: &dyn MacroEnv,
) -> Result<String, String> {
    let mut s = text.to_string();
    substitute_loop(&mut s, Select::SelfOnly(name, short), env, 0)?;
    Ok(s)
}

fn substitute_loop(
    s: &mut String,
    select: Select<'_>,
    env: &dyn MacroEnv,
    depth: u32,
) -> Result<(), String> {
    let mut count = 0usize;
    while let Some(pos) = find_macro(s, 0, select) {
        count += 1;
        if count > MAX_SUBSTITUTIONS || s.len() > MAX_EXPANDED_LEN {
            let name = pos.name(s).to_string();
            return Err(format!(
                "macro expansion does not terminate (a reference loop through $({name})?): HTCondor would hang here"
            ));
        }
        let value = evaluate(s, &pos, env, depth)?;
        s.replace_range(pos.dollar..pos.right, &value);
    }
    Ok(())
}

/// The n-th comma-separated item (0-based), trimmed if asked.
fn nth_item(list: &str, n: usize, trimmed: bool) -> Option<&str> {
    let item = list.split(',').nth(n)?;
    Some(if trimmed {
        item.trim_matches(|c: char| c.is_ascii_whitespace())
    } else {
        item
    })
}

fn count_items(list: &str) -> usize {
    list.split(',').count()
}

/// An argument that may name a knob: the knob's value if it is defined, else the text itself,
/// then fully expanded (keeping `$(DOLLAR)`).
fn lookup_and_expand_arg(
    args: &str,
    n: usize,
    env: &dyn MacroEnv,
    depth: u32,
) -> Result<Option<String>, String> {
    let Some(item) = nth_item(args, n, true) else {
        return Ok(None);
    };
    let raw = env.lookup_raw(item).unwrap_or_else(|| item.to_string());
    expand_depth(&raw, env, true, depth + 1).map(Some)
}

fn evaluate(s: &str, pos: &MacroPos, env: &dyn MacroEnv, depth: u32) -> Result<String, String> {
    let name = pos.name(s);
    let body = &s[pos.body..pos.right - 1];
    let with_default = |v: Option<String>| -> String {
        match v {
            Some(v) if !v.is_empty() => v,
            _ => pos.default(s).unwrap_or("").to_string(),
        }
    };
    match pos.kind {
        Kind::Normal => Ok(with_default(env.lookup_raw(name))),
        Kind::Env => {
            let v = env.getenv(name);
            if v.is_none() && pos.colon.is_none() {
                return Ok("UNDEFINED".into());
            }
            Ok(with_default(v))
        }
        Kind::RandomChoice => {
            let owned;
            let items = if !body.contains(',') {
                if body.is_empty() {
                    return Err("$RANDOM_CHOICE() error: no list".into());
                }
                owned = lookup_and_expand_arg(body, 0, env, depth)?.unwrap_or_default();
                owned.as_str()
            } else {
                body
            };
            let n = count_items(items);
            let pick = rand::thread_rng().gen_range(0..n.max(1));
            Ok(nth_item(items, pick, true).unwrap_or("").to_string())
        }
        Kind::Choice => {
            let items = nth_item(body, 1, true).ok_or("$CHOICE() error: no list")?;
            let ival = lookup_and_expand_arg(body, 0, env, depth)?.unwrap_or_default();
            let index = numeric::parse_int(&ival)
                .filter(|i| *i >= 0 && *i < i32::MAX as i64)
                .ok_or_else(|| format!("$CHOICE() error: '{ival}' is invalid index"))?
                as usize;
            // everything after the first comma is the list, or the name of a knob holding it
            let rest = &body[body.find(',').map(|i| i + 1).unwrap_or(body.len())..];
            let list: String = if count_items(rest) == 1 {
                let lname = items;
                if lname.is_empty() {
                    return Err("$CHOICE() error: no list".into());
                }
                let raw = env
                    .lookup_raw(lname)
                    .ok_or_else(|| format!("$CHOICE() error: no list named {lname}"))?;
                expand_depth(&raw, env, true, depth + 1)?
            } else {
                rest.to_string()
            };
            nth_item(&list, index, true)
                .map(str::to_string)
                .ok_or_else(|| format!("$CHOICE() error: index {index} is out of range"))
        }
        Kind::RandomInteger => {
            let parse = |n: usize, what: &str| -> Result<i64, String> {
                nth_item(body, n, true)
                    .and_then(|t| t.parse::<i64>().ok())
                    .ok_or_else(|| format!("$RANDOM_INTEGER() error: invalid {what}"))
            };
            let min = parse(0, "min")?;
            let max = parse(1, "max")?;
            let step = if nth_item(body, 2, true).is_some() {
                parse(2, "step")?
            } else {
                1
            };
            if step < 1 {
                return Err("$RANDOM_INTEGER() error: invalid step".into());
            }
            if min > max {
                return Err("$RANDOM_INTEGER() error: min > max".into());
            }
            let num = ((max as i128 - min as i128 + step as i128) / step as i128).max(1) as u64;
            let k = rand::thread_rng().gen_range(0..num) as i128;
            Ok(((min as i128) + k * step as i128).to_string())
        }
        Kind::Substr => {
            // the first argument must name a knob; an undefined knob gives nothing
            let Some(raw) = nth_item(body, 0, true).and_then(|n| env.lookup_raw(n)) else {
                return Ok(String::new());
            };
            let mval = expand_depth(&raw, env, true, depth + 1)?;
            if mval.is_empty() {
                return Ok(String::new());
            }
            // HTCondor 23: $SUBSTR(name, start[, length]); a negative start or length counts
            // from the end
            let start_text = lookup_and_expand_arg(body, 1, env, depth)?
                .ok_or("$SUBSTR() macro: no length specified!")?;
            let mut start = numeric::parse_int(&start_text)
                .filter(|i| *i >= i32::MIN as i64 && *i < i32::MAX as i64)
                .ok_or_else(|| format!("$SUBSTR() macro: {start_text} is invalid start index!"))?;
            let sub_len = match lookup_and_expand_arg(body, 2, env, depth)? {
                Some(l) => numeric::parse_int(&l)
                    .filter(|i| *i >= i32::MIN as i64 && *i <= i32::MAX as i64)
                    .ok_or_else(|| format!("$SUBSTR() macro: {l} is invalid length !"))?,
                None => i64::from(i32::MAX / 2),
            };
            let bytes = mval.as_bytes();
            let cch = bytes.len() as i64;
            if start < 0 {
                start += cch;
            }
            let start = start.clamp(0, cch);
            let rest = cch - start;
            let mut l = sub_len;
            if l < 0 {
                l += rest;
            }
            let l = l.clamp(0, rest);
            Ok(String::from_utf8_lossy(&bytes[start as usize..(start + l) as usize]).into_owned())
        }
        Kind::Int | Kind::Real => {
            let is_int = pos.kind == Kind::Int;
            let fmt = body.find(',').map(|i| &body[i + 1..]);
            let mval = lookup_and_expand_arg(body, 0, env, depth)?.unwrap_or_default();
            if is_int {
                let v = numeric::parse_int(&mval).ok_or_else(|| {
                    format!("$INT() error: {mval} does not evaluate to an integer")
                })?;
                match fmt {
                    Some(f) => crate::printf::format_int(f, v).ok_or_else(|| {
                        format!("$INT() error: '{f}' is not a valid format specifier")
                    }),
                    None => Ok(v.to_string()),
                }
            } else {
                let v = numeric::parse_real(&mval)
                    .ok_or_else(|| format!("$REAL() error: {mval} does not evaluate to a real"))?;
                match fmt {
                    Some(f) => {
                        let mut out = crate::printf::format_real(f, v).ok_or_else(|| {
                            format!("$REAL() error: '{f}' is not a valid format specifier")
                        })?;
                        if !out.contains('.') {
                            out.push_str(".0");
                        }
                        Ok(out)
                    }
                    None => Ok(crate::printf::REAL_DEFAULT.format(v)),
                }
            }
        }
        Kind::Str => {
            let fmt = body.find(',').map(|i| &body[i + 1..]);
            let mval = lookup_and_expand_arg(body, 0, env, depth)?.unwrap_or_default();
            let sval = match numeric::eval_const(&mval) {
                Some(Const::Str(x)) => x,
                _ => mval,
            };
            match fmt {
                Some(f) => crate::printf::format_str(f, &sval).ok_or_else(|| {
                    format!("$STRING() error: '{f}' is not a valid format specifier")
                }),
                None => Ok(sval),
            }
        }
        Kind::Eval => {
            let raw = env.lookup_raw(body).unwrap_or_else(|| body.to_string());
            let text = expand_depth(&raw, env, false, depth + 1)?;
            Ok(match numeric::eval_const(&text) {
                Some(Const::Str(x)) => x,
                Some(Const::Int(i)) => i.to_string(),
                // as the ClassAd unparser prints a real: %1.15E, real("NaN"), -0.0
                Some(Const::Real(r)) => classad::Value::Real(r).to_string(),
                Some(Const::Bool(b)) => if b { "true" } else { "false" }.to_string(),
                None => text,
            })
        }
        Kind::Basename | Kind::Dirname | Kind::Filename => {
            // $BASENAME(X, suffix) also removes a suffix
            let (name, kill_suffix) = match (pos.kind, name.rfind(',')) {
                (Kind::Basename, Some(i)) => (&name[..i], Some(name[i + 1..].trim_start())),
                _ => (name, None),
            };
            // HTCondor 23: an undefined knob name is taken as the path itself
            let mval = match env.lookup_raw(name) {
                Some(v) if v.contains('$') => expand_depth(&v, env, true, depth + 1)?,
                Some(v) => v,
                None => name.to_string(),
            };
            let flags = &s[pos.dollar + 1..pos.open];
            let mut v = crate::pathfn::apply(pos.kind, flags, &mval);
            if let Some(suffix) = kill_suffix.filter(|k| !k.is_empty()) {
                if v.len() > suffix.len() && v.ends_with(suffix) {
                    v.truncate(v.len() - suffix.len());
                }
            }
            Ok(with_default(Some(v)))
        }
    }
}

/// Expands metaknob arguments in a template: `$(0)` is all arguments, `$(0#)` their number,
/// `$(N)` the N-th (1-based, trimmed), `$(N?)` 1 or 0 for non-empty or empty, `$(N+)` the
/// N-th and all after it; each may carry a `:default`.
pub(crate) fn expand_meta_args(template: &str, args: &str) -> String {
    let mut s = template.to_string();
    let tokens: Vec<&str> = args
        .split(',')
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .collect();
    let mut guard = 0;
    while let Some(pos) = find_macro(&s, 0, Select::MetaArgs) {
        guard += 1;
        if guard > MAX_SUBSTITUTIONS {
            break;
        }
        let body = &s[pos.body..pos.right - 1];
        let digits: String = body.chars().take_while(|c| c.is_ascii_digit()).collect();
        let index: usize = digits.parse().unwrap_or(0);
        let rest = &body[digits.len()..];
        let (empty_check, num_args, rest) = match rest.as_bytes().first() {
            Some(b'?') => (true, false, &rest[1..]),
            Some(b'#') | Some(b'+') => (false, true, &rest[1..]),
            _ => (false, false, rest),
        };
        let default = rest.strip_prefix(':');
        let mut buf = if index == 0 {
            if num_args {
                tokens.len().to_string()
            } else {
                args.to_string()
            }
        } else if num_args {
            // everything from the index-th item on
            let mut remain: Option<&str> = Some(args);
            let mut ix = 1;
            while ix < index {
                remain = remain.and_then(|r| {
                    let r = r.trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
                    r.find(',').map(|i| &r[i..])
                });
                ix += 1;
            }
            let mut b = remain
                .map(|r| r.strip_prefix(',').unwrap_or(r).to_string())
                .unwrap_or_default();
            if b.trim().is_empty() {
                if let Some(d) = default {
                    b = d.to_string();
                }
            }
            b
        } else {
            match tokens.get(index - 1) {
                Some(t) => t.to_string(),
                None => default.unwrap_or("").to_string(),
            }
        };
        buf = buf.trim().to_string();
        if empty_check {
            buf = if buf.is_empty() {
                "0".into()
            } else {
                "1".into()
            };
        }
        s.replace_range(pos.dollar..pos.right, &buf);
    }
    s
}

/// True if the text has metaknob argument references.
pub(crate) fn has_meta_args(text: &str) -> bool {
    find_macro(text, 0, Select::MetaArgs).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct Env(HashMap<String, String>);
    impl MacroEnv for Env {
        fn lookup_raw(&self, name: &str) -> Option<String> {
            self.0.get(&name.to_ascii_uppercase()).cloned()
        }
        fn getenv(&self, name: &str) -> Option<String> {
            (name == "HOME").then(|| "/root".to_string())
        }
    }
    fn env(pairs: &[(&str, &str)]) -> Env {
        Env(pairs
            .iter()
            .map(|(k, v)| (k.to_ascii_uppercase(), v.to_string()))
            .collect())
    }

    #[test]
    fn plain_default_nested_and_dollar() {
        let e = env(&[
            ("A", "hello"),
            ("J", "1"),
            ("A1", "nested"),
            ("Q", ""),
            ("B", "$(A) world"),
        ]);
        assert_eq!(expand("$(B)!", &e, false).unwrap(), "hello world!");
        assert_eq!(expand("$(UNDEF) tail", &e, false).unwrap(), " tail");
        assert_eq!(
            expand("$(UNDEF:def val) x", &e, false).unwrap(),
            "def val x"
        );
        assert_eq!(expand("$(Q:qdef)", &e, false).unwrap(), "qdef");
        assert_eq!(expand("$(A$(J))", &e, false).unwrap(), "nested");
        assert_eq!(expand("$(DOLLAR)(A)", &e, false).unwrap(), "$(A)");
        assert_eq!(
            expand("$$(Memory) $$([1+2])", &e, false).unwrap(),
            "$$(Memory) $$([1+2])"
        );
        assert_eq!(expand("$(X:$(A))", &e, false).unwrap(), "hello");
        assert_eq!(expand("$(a)", &e, false).unwrap(), "hello");
    }

    #[test]
    fn env_and_functions() {
        let e = env(&[
            ("A", "hello # not a comment"),
            ("J", "1"),
            ("P", "/usr/local/lib/file.tar.gz"),
            ("L", "a, b ,c"),
        ]);
        assert_eq!(
            expand("$ENV(HOME) $ENV(NOPE) $ENV(NOPE:dflt)", &e, false).unwrap(),
            "/root UNDEFINED dflt"
        );
        assert_eq!(
            expand("$INT(J) $REAL(J) $SUBSTR(A,1,3) $SUBSTR(A,-2)", &e, false).unwrap(),
            "1 1 ell nt"
        );
        assert_eq!(
            expand("$INT(J,%03d) $REAL(J,%.2f)", &e, false).unwrap(),
            "001 1.00"
        );
        assert_eq!(
            expand("$CHOICE(1,L) $CHOICE(0,x,y)", &e, false).unwrap(),
            "b x"
        );
        assert_eq!(expand("$RANDOM_INTEGER(5,5)", &e, false).unwrap(), "5");
        let r: i64 = expand("$RANDOM_INTEGER(10,20,5)", &e, false)
            .unwrap()
            .parse()
            .unwrap();
        assert!([10, 15, 20].contains(&r));
        let c = expand("$RANDOM_CHOICE(x,y,z)", &e, false).unwrap();
        assert!(["x", "y", "z"].contains(&c.as_str()));
        assert!(expand("$RANDOM_INTEGER(9,1)", &e, false).is_err());
        assert!(expand("$INT(A)", &e, false).is_err());
    }

    #[test]
    fn self_only_expansion() {
        let e = env(&[("B", "old"), ("A", "a")]);
        assert_eq!(
            expand_self("$(B) $(A) new", "B", None, &e).unwrap(),
            "old $(A) new"
        );
        assert_eq!(
            expand_self("$(negotiator.B) $(B)", "NEGOTIATOR.B", Some("B"), &e).unwrap(),
            " old"
        );
    }

    #[test]
    fn reference_loop_is_an_error() {
        let e = env(&[("A", "$(B)"), ("B", "$(A)")]);
        let err = expand("$(A)", &e, false).unwrap_err();
        assert!(err.contains("does not terminate"), "{err}");
    }

    #[test]
    fn meta_args() {
        let t = "NUM_SLOTS_TYPE_$(1:1)=1\nSLOT_TYPE_$(1:1)=$(2+:100%)\nN=$(0#) E=$(3?) F=$(1?)";
        assert_eq!(
            expand_meta_args(t, "2, cpus=4, mem=5"),
            "NUM_SLOTS_TYPE_2=1\nSLOT_TYPE_2=cpus=4, mem=5\nN=3 E=1 F=1"
        );
        assert_eq!(
            expand_meta_args(t, ""),
            "NUM_SLOTS_TYPE_1=1\nSLOT_TYPE_1=100%\nN=0 E=0 F=0"
        );
    }
}
