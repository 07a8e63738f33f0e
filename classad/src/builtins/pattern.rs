//! Pattern matching: `regexp`, `regexpMember`, `regexps`, `replace`, `replaceAll`
//! (libclassad's `matchPattern`, `matchPatternMember` and `substPattern` in
//! src/classad/fnCall.cpp, on PCRE2). Rust's `regex` crate stands in for PCRE2; where their
//! meanings differ for the patterns HTCondor users write (`$` before a final newline), the
//! pattern is rewritten to keep PCRE's meaning. Options are PCRE's letters: `i` caseless, `m`
//! multi-line, `s` dot-all, `x` extended, and for substitutions `f` (keep the text around the
//! match) and `g` (every match).
use super::{args_and_option, Args, Builtin as B};
use crate::value::Value;

/// `regexp(pattern, target[, options])`, and `regexpMember(pattern, list[, options])`:
/// whether any string of the list matches, `undefined` when none does and some element is
/// undefined.
pub(super) fn regexp(f: B, a: &Args) -> Value {
    let (v, opts) = match args_and_option(a, 2) {
        Ok(args) => args,
        Err(v) => return v,
    };
    match (f, &v[0], &v[1]) {
        (B::Regexp, Value::Str(p), Value::Str(t)) => regex_helper(p, t, None, &opts),
        (B::RegexpMember, Value::Str(p), Value::List(l)) => {
            let mut maybe_undef = false;
            // Each element evaluated in the call's scope; one that fails to evaluate makes the
            // call an error, and fails nothing else (as in libclassad).
            for i in 0..l.len() {
                let item = crate::eval::in_new_state(a.ctx, || {
                    crate::eval::element_in(a.ctx, a.env, l, i)
                });
                match item {
                    Value::Str(t) => {
                        if regex_helper(p, &t, None, &opts).is_true() {
                            return Value::Bool(true);
                        }
                    }
                    Value::Undefined => maybe_undef = true,
                    _ => return Value::Error,
                }
            }
            if maybe_undef {
                Value::Undefined
            } else {
                Value::Bool(false)
            }
        }
        _ => Value::Error,
    }
}

/// `regexps(pattern, target, replacement[, options])` and its `replace` (`f`) and
/// `replaceAll` (`fg`) forms.
pub(super) fn substitute(f: B, a: &Args) -> Value {
    let (v, mut opts) = match args_and_option(a, 3) {
        Ok(args) => args,
        Err(v) => return v,
    };
    if f == B::Replace {
        opts.push('f');
    } else if f == B::ReplaceAll {
        opts.push_str("fg");
    }
    let (Value::Str(p), Value::Str(t), Value::Str(r)) = (&v[0], &v[1], &v[2]) else {
        return Value::Error;
    };
    regex_helper(p, t, Some(r), &opts)
}

/// `p` with the characters outside escapes and character classes that `rewrite` takes (it is
/// given each one's byte offset and writes what replaces it; `false` keeps the character).
fn rewrite_outside_classes(
    p: &str,
    mut rewrite: impl FnMut(usize, char, &mut String) -> bool,
) -> String {
    let mut out = String::with_capacity(p.len() + 8);
    let mut chars = p.char_indices();
    let mut in_class = false;
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                if let Some((_, n)) = chars.next() {
                    out.push(n);
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            _ if !in_class && rewrite(i, c, &mut out) => {}
            _ => out.push(c),
        }
    }
    out
}

/// PCRE's `$` (without the m option) also matches before a newline that ends the subject;
/// Rust's does not. When the subject's only newline is its last character, `(?m:$)` has
/// exactly PCRE's meaning, so unescaped `$` outside classes is rewritten for such subjects.
fn pcre_dollar(p: &str, target: &str) -> Option<String> {
    if !target.ends_with('\n') || target[..target.len() - 1].contains('\n') || !p.contains('$') {
        return None;
    }
    Some(rewrite_outside_classes(p, |_, c, out| {
        c == '$' && {
            out.push_str("(?m:$)");
            true
        }
    }))
}

/// A regex for a pattern matched against `target`, with PCRE's meaning of `$` kept.
fn build_regex_for(p: &str, opts: &str, target: &str) -> Option<regex::Regex> {
    if opts.contains('m') {
        return build_regex(p, opts);
    }
    match pcre_dollar(p, target) {
        Some(q) => build_regex(&q, opts),
        None => build_regex(p, opts),
    }
}

/// PCRE reads `{` as a literal unless a quantifier follows it exactly (`{n}`, `{n,}`,
/// `{n,m}`): `a{`, `{x}` and `x{ 2}` match themselves there, and are an error or a
/// quantifier for Rust's regex, so such braces are escaped.
fn pcre_braces(p: &str) -> std::borrow::Cow<'_, str> {
    if !p.contains('{') {
        return std::borrow::Cow::Borrowed(p);
    }
    let b = p.as_bytes();
    let quantifier = |i: usize| {
        let digits = |mut j: usize| {
            let start = j;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            (j > start, j)
        };
        let (some, mut j) = digits(i + 1);
        if !some {
            return false;
        }
        if j < b.len() && b[j] == b',' {
            j = digits(j + 1).1;
        }
        j < b.len() && b[j] == b'}'
    };
    std::borrow::Cow::Owned(rewrite_outside_classes(p, |i, c, out| {
        c == '{' && !quantifier(i) && {
            out.push_str("\\{");
            true
        }
    }))
}

/// A regex for a pattern with PCRE's option letters.
pub(super) fn build_regex(p: &str, opts: &str) -> Option<regex::Regex> {
    let p = pcre_braces(p);
    let mut b = regex::RegexBuilder::new(&p);
    b.case_insensitive(opts.contains('i'))
        .multi_line(opts.contains('m'))
        .dot_matches_new_line(opts.contains('s'))
        .ignore_whitespace(opts.contains('x'));
    b.build().ok()
}

/// Match or substitute like libclassad's PCRE2 helper: without `f` a substitution returns only
/// the replacement; `g` replaces every match.
fn regex_helper(p: &str, target: &str, replace: Option<&str>, opts: &str) -> Value {
    let Some(re) = build_regex_for(p, opts, target) else {
        return Value::Error;
    };
    let Some(rep) = replace else {
        return Value::Bool(re.is_match(target));
    };
    let full = opts.contains('f');
    let all = opts.contains('g');
    let mut out = String::new();
    let mut idx = 0usize;
    let mut empty_match = false;
    loop {
        if idx > target.len() {
            // The reference asks PCRE2 to match past the end: an error.
            return Value::Error;
        }
        if empty_match {
            // After an empty match the reference retries anchored and non-empty at the same
            // place; when that fails it copies one character and moves on.
            match re.captures_at(target, idx) {
                Some(c) if c.get(0).is_some_and(|m| m.start() == idx && m.end() > idx) => {}
                _ => {
                    if idx >= target.len() {
                        return Value::Error;
                    }
                    let ch = target[idx..]
                        .chars()
                        .next()
                        .map(|c| c.len_utf8())
                        .unwrap_or(1);
                    out.push_str(&target[idx..idx + ch]);
                    idx += ch;
                    empty_match = false;
                    if !all {
                        break;
                    }
                    continue;
                }
            }
        }
        let Some(caps) = re.captures_at(target, idx) else {
            break;
        };
        let Some(m) = caps.get(0) else { break };
        if full {
            out.push_str(&target[idx..m.start()]);
        }
        // number of groups as PCRE reports: highest group that participated + 1
        let ngroups = (0..caps.len())
            .rev()
            .find(|&g| caps.get(g).is_some())
            .map(|g| g + 1)
            .unwrap_or(1);
        let rb = rep.as_bytes();
        let mut k = 0;
        while k < rb.len() {
            if rb[k] == b'\\' && k + 1 < rb.len() && rb[k + 1].is_ascii_digit() {
                let g = (rb[k + 1] - b'0') as usize;
                if g >= ngroups {
                    return Value::Error;
                }
                if let Some(gm) = caps.get(g) {
                    out.push_str(gm.as_str());
                }
                k += 2;
                continue;
            }
            let ch_len = rep[k..].chars().next().map(|c| c.len_utf8()).unwrap_or(1);
            out.push_str(&rep[k..k + ch_len]);
            k += ch_len;
        }
        idx = m.end();
        empty_match = m.start() == m.end();
        if !all {
            break;
        }
    }
    if full {
        out.push_str(&target[idx.min(target.len())..]);
    }
    Value::string(out)
}
