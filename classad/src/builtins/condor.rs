//! The rest of the functions HTCondor registers on top of libclassad (in
//! src/condor_utils/compat_classad.cpp): user and slot names (`splitUserName`,
//! `splitSlotName`, `userHome`, `userMap`), `split`, per-element evaluation
//! (`evalInEachContext`, `countMatches`) and job argument and environment strings
//! (`argsToList`, `listToArgs`, `envV1ToV2`, `mergeEnvironment`, whose grammar is in
//! [`super::args_env`]). The string-list functions are in their own family.
use super::args_env;
use super::stringlist::string_and_delimiters;
use super::{Args, Builtin as B};
use crate::ad::ClassAd;
use crate::eval::{self, ops};
use crate::expr::Expr;
use crate::list::List;
use crate::value::Value;

/// `splitUserName(name)` and `splitSlotName(name)`: the two sides of the `@`; without one the
/// whole name is the user (or the slot's machine).
pub(super) fn split_name(f: B, a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    let v = a.eval(0);
    let Value::Str(s) = &v else {
        return Value::Error;
    };
    let (l, r) = match s.find('@') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => {
            if f == B::SplitUserName {
                (&s[..], "")
            } else {
                ("", &s[..])
            }
        }
    };
    Value::list(vec![Value::str(l), Value::str(r)])
}

/// `split(s[, separators])`: tokens between separator characters (", \\t" by default).
pub(super) fn split(a: &Args) -> Value {
    let Some((s, d)) = string_and_delimiters(a, ", \t") else {
        return Value::Error;
    };
    Value::list(split_arb(&s, &d).into_iter().map(Value::string).collect())
}

/// HTCondor's split(): tokens between separator characters; an empty token appears only
/// between two identical non-space separators.
fn split_arb(s: &str, seps: &str) -> Vec<String> {
    let b = s.as_bytes();
    let is_sep = |c: u8| seps.as_bytes().contains(&c);
    let mut out = Vec::new();
    let mut last = 0usize;
    let mut ch: i32 = -1;
    if !seps.is_empty() {
        let mut ix = (last..b.len()).find(|&i| is_sep(b[i]));
        while let Some(i) = ix {
            if i > last {
                out.push(String::from_utf8_lossy(&b[last..i]).into_owned());
            } else if !(ch >= 0 && (ch as u8).is_ascii_whitespace()) && ch == b[i] as i32 {
                out.push(String::new());
            }
            if !b[i].is_ascii_whitespace() {
                ch = b[i] as i32;
            }
            last = i + 1;
            ix = (last..b.len()).find(|&k| is_sep(b[k]));
        }
    }
    if b.len() > last {
        out.push(String::from_utf8_lossy(&b[last..]).into_owned());
    }
    out
}

/// `evalInEachContext(expr, ads)` (the list of results) and `countMatches(expr, ads)` (how many
/// are true): `expr` evaluated with each ad of the list as MY (compat_classad.cpp's
/// evalInEachContext_func and evaluateInContext).
///
/// An attribute reference as `expr` means that attribute's expression, looked up first, as
/// libclassad's `AttributeReference::Deref` does, which moves the caller's current ad (see
/// `eval::deref`): the list is then evaluated (unless it is written as a literal) from where
/// the lookup stopped. Each element is evaluated in the caller's scope; an ad among them is a
/// new evaluation state of its own, in which an ad directly inside MY or TARGET falls back to
/// the other ad for bare names as they do.
pub(super) fn eval_in_each_context(f: B, a: &Args) -> Value {
    if a.len() != 2 {
        return Value::Error;
    }
    let (ctx, env) = (a.ctx, a.env);
    let is_each = f == B::EvalInEachContext;
    let found = match a.expr(0) {
        Expr::Attr(_) | Expr::Abs(_) | Expr::Scoped(..) | Expr::Select(..) => {
            eval::deref(ctx, env, a.expr(0))
        }
        _ => None,
    };
    let (expr, expr_scope): (&Expr, Option<&ClassAd>) = match &found {
        Some(x) => (&x.expr, Some(&x.ad)),
        None => (a.expr(0), env.lex),
    };
    let list = match a.expr(1) {
        // A literal is used as it is written.
        Expr::List(items) => List::of_exprs(items.clone(), env.lex.cloned(), false),
        // Anything else is evaluated (a failure there is not one of the call's).
        other => match ctx_isolated(a, other) {
            Value::List(l) => l,
            Value::Undefined if is_each => return Value::Undefined,
            Value::Undefined => return Value::Int(0),
            _ => return Value::Error,
        },
    };
    let in_match = env.pair.is_some();
    let mut out = Vec::new();
    let mut count = 0i64;
    for i in 0..list.len() {
        let item = {
            let saved = ctx.failed();
            ctx.set_failed(false);
            let v = eval::element_in(ctx, env, &list, i);
            let v = if ctx.failed() { Value::Error } else { v };
            ctx.set_failed(saved);
            v
        };
        let v = match item {
            Value::Ad(ad) => {
                let own_side = |t: Option<&ClassAd>| {
                    t.is_some_and(|t| ad.parent().is_some_and(|p| p.same_attrs(t)))
                };
                let fresh = env.fresh(&ad);
                let inner = eval::Env {
                    lex: expr_scope,
                    alternate: in_match && (own_side(env.left()) || own_side(env.right())),
                    ..fresh
                };
                eval::in_new_state(ctx, || eval::eval(ctx, inner, expr))
            }
            Value::Undefined => Value::Undefined,
            _ => Value::Error,
        };
        if f == B::CountMatches {
            if ops::bool_equiv(&v) == Some(true) {
                count += 1;
            }
        } else {
            // The reference stores each result as a literal (a reltime literal reads back
            // as a real) or, for a list or an ad, a copy.
            out.push(eval::literal_of(&v));
        }
    }
    if f == B::CountMatches {
        Value::Int(count)
    } else {
        // The list holds copies of the list and ad results (see `List::owning`).
        Value::List(List::owning(out))
    }
}

/// Evaluates argument expression `e` where a failure is only an error.
fn ctx_isolated(a: &Args, e: &Expr) -> Value {
    let saved = a.ctx.failed();
    a.ctx.set_failed(false);
    let v = eval::eval(a.ctx, a.env, e);
    let v = if a.ctx.failed() { Value::Error } else { v };
    a.ctx.set_failed(saved);
    v
}

/// `userHome(owner[, default])`: the user's home directory from /etc/passwd.
pub(super) fn user_home(a: &Args) -> Value {
    if !(1..=2).contains(&a.len()) {
        return a.ctx.fail();
    }
    // HTCondor's userHome ignores a failure to evaluate either argument (its value is then
    // not a string).
    let default = if a.len() == 2 {
        match a.ctx.isolated(|| a.eval(1)) {
            Value::Str(s) => s.to_string(),
            _ => String::new(),
        }
    } else {
        String::new()
    };
    let owner = a.ctx.isolated(|| a.eval(0));
    if owner.is_undefined() && default.is_empty() {
        return Value::Undefined;
    }
    let fallback = |is_error: bool| {
        if !default.is_empty() {
            Value::str(&default)
        } else if is_error {
            Value::Error
        } else {
            Value::Undefined
        }
    };
    let Value::Str(user) = owner else {
        return fallback(true);
    };
    match passwd_home(&user) {
        Some(h) => Value::string(h),
        None => fallback(false),
    }
}

/// The home directory of `user` from /etc/passwd (what getpwnam reports on this host).
fn passwd_home(user: &str) -> Option<String> {
    let text = std::fs::read_to_string("/etc/passwd").ok()?;
    text.lines().find_map(|l| {
        let mut it = l.split(':');
        if it.next()? != user {
            return None;
        }
        let home = it.nth(4)?;
        if home.is_empty() {
            None
        } else {
            Some(home.to_string())
        }
    })
}

/// `userMap(map, user[, preferred[, default]])`: no user maps are configured here, so the
/// mapping fails (`undefined`, or the default).
pub(super) fn user_map(a: &Args) -> Value {
    if !(2..=4).contains(&a.len()) {
        return Value::Error;
    }
    let (m, u) = (a.eval(0), a.eval(1));
    let _pref = a.eval_or(2, Value::Undefined);
    let dflt = a.eval_or(3, Value::Undefined);
    if !matches!(m, Value::Str(_)) || !matches!(u, Value::Str(_)) {
        if m.is_error() || u.is_error() {
            return Value::Error;
        }
        return if a.len() < 4 { Value::Undefined } else { dflt };
    }
    // No user maps are configured: the mapping fails.
    if a.len() < 4 {
        Value::Undefined
    } else {
        dflt
    }
}

/// `argsToList(args[, version])` and `listToArgs(list[, version])`: version 1 or 2 argument
/// strings.
pub(super) fn args(f: B, a: &Args) -> Value {
    if !(1..=2).contains(&a.len()) {
        return Value::Error;
    }
    let vers = if a.len() == 2 {
        match a.eval(1) {
            Value::Int(v) if v as i32 == 1 || v as i32 == 2 => v as i32,
            _ => return Value::Error,
        }
    } else {
        2
    };
    let v = a.eval(0);
    if f == B::ArgsToList {
        let Value::Str(s) = v else {
            return Value::Error;
        };
        let args = if vers == 1 {
            Some(args_env::split_args_v1(&s))
        } else {
            args_env::split_args_v2(&s)
        };
        match args {
            Some(a) => Value::list(a.into_iter().map(Value::string).collect()),
            None => Value::Error,
        }
    } else {
        let Value::List(l) = v else {
            return Value::Error;
        };
        // Each element evaluated in the call's scope, as libclassad does.
        let mut args = Vec::with_capacity(l.len());
        for i in 0..l.len() {
            match eval::element_in(a.ctx, a.env, &l, i) {
                Value::Str(s) => args.push(s.to_string()),
                _ => return Value::Error,
            }
        }
        if vers == 1 {
            args_env::join_args_v1(&args)
                .map(Value::string)
                .unwrap_or(Value::Error)
        } else {
            Value::string(args_env::join_args_v2(&args))
        }
    }
}

/// `envV1ToV2(env)`: a V1 environment string (`;`-separated) in V2 syntax.
pub(super) fn env_v1_to_v2(a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    match a.eval(0) {
        Value::Undefined => Value::Undefined,
        Value::Str(s) => {
            let mut env = args_env::Env::default();
            if env.merge_v1_auto(&s) {
                Value::string(env.to_v2())
            } else {
                Value::Error
            }
        }
        _ => Value::Error,
    }
}

/// `mergeEnvironment(env...)`: V2 environment strings merged left to right (later ones win).
pub(super) fn merge_environment(a: &Args) -> Value {
    let mut env = args_env::Env::default();
    for i in 0..a.len() {
        match a.eval(i) {
            Value::Undefined => continue,
            Value::Str(s) => {
                if !env.merge_v2(&s) {
                    return Value::Error;
                }
            }
            _ => return Value::Error,
        }
    }
    Value::string(env.to_v2())
}
