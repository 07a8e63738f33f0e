//! String-list functions: strings read as lists of tokens between delimiter characters
//! (`"a, b, c"`). `stringListSize`, `stringListSum`, `stringListAvg`, `stringListMin`,
//! `stringListMax`, `stringListMember`, `stringListIMember`, `stringListSubsetMatch`,
//! `stringListISubsetMatch` and `stringList_regexpMember` are HTCondor's (registered in
//! src/condor_utils/compat_classad.cpp); `stringListsIntersect` is libclassad's own
//! (src/classad/fnCall.cpp) but reads the same lists, so it lives here too.
use super::c_number::{c_double_to_i64, strtod};
use super::pattern::build_regex;
use super::{args_and_option, Args, Builtin as B};
use crate::value::Value;
use std::sync::Arc;

/// `stringListsIntersect(a, b[, delimiters])`: whether the lists share a token (delimiters
/// " ," by default; tokens are not trimmed).
pub(super) fn intersect(a: &Args) -> Value {
    let (v, delims) = match args_and_option(a, 2) {
        Ok(args) => args,
        Err(v) => return v,
    };
    let delims = if delims.is_empty() {
        " ,".to_string()
    } else {
        delims
    };
    let (Value::Str(x), Value::Str(y)) = (&v[0], &v[1]) else {
        return Value::Error;
    };
    let split = |s: &str| -> Vec<String> {
        s.split(|c: char| delims.contains(c))
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()
    };
    let l2 = split(y);
    Value::Bool(split(x).iter().any(|t| l2.contains(t)))
}

/// `stringListSize`, `stringListSum`, `stringListAvg`, `stringListMin`, `stringListMax` of
/// `(list[, delimiters])`: an integer unless some token is not written as one.
pub(super) fn summarize(f: B, a: &Args) -> Value {
    let Some((l, d)) = string_and_delimiters(a, ", ") else {
        return Value::Error;
    };
    let toks = split_list(&l, &d);
    if f == B::StringListSize {
        return Value::Int(toks.len() as i64);
    }
    let (mut acc, empty_allowed, is_avg): (f64, bool, bool) = match f {
        B::StringListSum => (0.0, true, false),
        B::StringListAvg => (0.0, true, true),
        B::StringListMin => (f32::MAX as f64, false, false),
        _ => (f32::MIN_POSITIVE as f64, false, false),
    };
    let mut is_real = false;
    for t in &toks {
        let (x, ok) = strtod(t);
        if !ok {
            return Value::Error;
        }
        if !t.bytes().all(|c| matches!(c, b'+' | b'-' | b'0'..=b'9')) {
            is_real = true;
        }
        acc = match f {
            B::StringListMin => {
                if x < acc {
                    x
                } else {
                    acc
                }
            }
            B::StringListMax => {
                if x > acc {
                    x
                } else {
                    acc
                }
            }
            _ => x + acc,
        };
    }
    if toks.is_empty() {
        return if empty_allowed {
            Value::Real(0.0)
        } else {
            Value::Undefined
        };
    }
    if is_avg {
        acc /= toks.len() as f64;
    }
    if is_real {
        Value::Real(acc)
    } else {
        Value::Int(c_double_to_i64(acc))
    }
}

/// `stringListMember(x, list[, delimiters])`, `stringListSubsetMatch(items, list[,
/// delimiters])` and their case-insensitive `I` forms.
pub(super) fn member(f: B, a: &Args) -> Value {
    if !(2..=3).contains(&a.len()) {
        return Value::Error;
    }
    let (x, l) = (a.eval(0), a.eval(1));
    let d = a.eval_or(2, Value::str(", \t\r\n"));
    let ok = |v: &Value| matches!(v, Value::Undefined | Value::Str(_));
    if !ok(&x) || !ok(&l) || (a.len() == 3 && !ok(&d)) {
        return Value::Error;
    }
    if x.is_undefined() && l.is_undefined() {
        return Value::Undefined;
    }
    let item = x.as_str().unwrap_or("");
    let list = l.as_str().unwrap_or("");
    let delims = d.as_str().unwrap_or(", \t\r\n");
    let ci = matches!(f, B::StringListIMember | B::StringListISubsetMatch);
    let eq = |x: &str, y: &str| {
        if ci {
            x.eq_ignore_ascii_case(y)
        } else {
            x == y
        }
    };
    if matches!(f, B::StringListMember | B::StringListIMember) {
        return Value::Bool(split_list(list, delims).iter().any(|t| eq(t, item)));
    }
    if item.is_empty() {
        return Value::Bool(true);
    }
    let set = split_list(list, delims);
    let mut rc = false;
    for it in split_list(item, delims) {
        rc = set.iter().any(|t| eq(t, it));
        if !rc {
            break;
        }
    }
    Value::Bool(rc)
}

/// `stringList_regexpMember(pattern, list[, delimiters[, options]])`.
pub(super) fn regexp_member(a: &Args) -> Value {
    if !(2..=4).contains(&a.len()) {
        return Value::Error;
    }
    let (p, l) = (a.eval(0), a.eval(1));
    let d = a.eval_or(2, Value::str(", "));
    let o = a.eval_or(3, Value::str(""));
    let (Value::Str(p), Value::Str(l), Value::Str(d), Value::Str(o)) = (&p, &l, &d, &o) else {
        return Value::Error;
    };
    let Some(re) = build_regex(p, &o.to_ascii_lowercase()) else {
        return Value::Error;
    };
    let toks = split_list(l, d);
    if toks.is_empty() {
        return Value::Undefined;
    }
    Value::Bool(toks.iter().any(|t| re.is_match(t)))
}

/// The arguments `(string[, delimiters])`, both strings, the delimiters `default` when absent;
/// `None` (the call is an error) otherwise.
pub(super) fn string_and_delimiters(a: &Args, default: &str) -> Option<(Arc<str>, Arc<str>)> {
    if !(1..=2).contains(&a.len()) {
        return None;
    }
    let s = a.eval(0);
    let d = a.eval_or(1, Value::str(default));
    match (s, d) {
        (Value::Str(s), Value::Str(d)) => Some((s, d)),
        _ => None,
    }
}

/// Tokens of an HTCondor string list: split on any delimiter character, trim whitespace, drop
/// empty tokens.
pub fn split_list<'s>(s: &'s str, delims: &str) -> Vec<&'s str> {
    s.split(|c: char| delims.contains(c))
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .collect()
}
