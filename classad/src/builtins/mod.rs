//! Built-in functions of libclassad 23 and those HTCondor registers on top (stringList*,
//! split*, evalInEachContext, ...). Each follows the reference's argument checks: wrong arity is
//! `error`, undefined arguments usually give `undefined`.
pub mod condor;
pub mod time;

use crate::eval::{self, ops, Ctx, Env};
use crate::expr::{BinOp, Call, Expr};
use crate::format;
use crate::value::Value;
use std::sync::Arc;

macro_rules! builtins {
    ($($v:ident => $n:literal),* $(,)?) => {
        /// A resolved built-in function.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Builtin { $($v),* }
        impl Builtin {
            /// Resolve a function name (case-insensitive).
            pub fn lookup(name: &str) -> Option<Builtin> {
                $( if name.eq_ignore_ascii_case($n) { return Some(Builtin::$v); } )*
                None
            }
            pub fn name(self) -> &'static str {
                match self { $(Builtin::$v => $n),* }
            }
            /// Every built-in function name.
            pub const ALL: &'static [&'static str] = &[$($n),*];
        }
    };
}

builtins! {
    IsUndefined => "isUndefined", IsError => "isError", IsString => "isString", IsInteger => "isInteger",
    IsReal => "isReal", IsList => "isList", IsClassAd => "isClassAd", IsBoolean => "isBoolean",
    IsAbsTime => "isAbsTime", IsRelTime => "isRelTime",
    Member => "member", IdenticalMember => "identicalMember",
    Size => "size", Sum => "sum", Avg => "avg", Min => "min", Max => "max",
    AnyCompare => "anyCompare", AllCompare => "allCompare",
    Time => "time", CurrentTime => "currentTime", TimeZoneOffset => "timeZoneOffset", DayTime => "dayTime",
    GetYear => "getYear", GetMonth => "getMonth", GetDayOfYear => "getDayOfYear", GetDayOfMonth => "getDayOfMonth",
    GetDayOfWeek => "getDayOfWeek", GetDays => "getDays", GetHours => "getHours", GetMinutes => "getMinutes",
    GetSeconds => "getSeconds", SplitTime => "splitTime", FormatTime => "formatTime",
    Strcat => "strcat", Join => "join", ToUpper => "toUpper", ToLower => "toLower", Substr => "substr",
    Strcmp => "strcmp", Stricmp => "stricmp",
    VersionCmp => "versioncmp", VersionLE => "versionLE", VersionLT => "versionLT", VersionGE => "versionGE",
    VersionGT => "versionGT", VersionEQ => "versionEQ", VersionInRange => "version_in_range",
    Regexp => "regexp", RegexpMember => "regexpMember", Regexps => "regexps", Replace => "replace",
    ReplaceAll => "replaceAll",
    Int => "int", Real => "real", String => "string", Bool => "bool", AbsTime => "absTime", RelTime => "relTime",
    Unparse => "unparse", Unresolved => "unresolved",
    Floor => "floor", Ceil => "ceil", Ceiling => "ceiling", Round => "round", Pow => "pow", Log => "log",
    Quantize => "quantize", Random => "random",
    IfThenElse => "ifThenElse", Interval => "interval", Eval => "eval",
    StringListsIntersect => "stringListsIntersect", Debug => "debug",
    EnvV1ToV2 => "envV1ToV2", MergeEnvironment => "mergeEnvironment", ListToArgs => "listToArgs",
    ArgsToList => "argsToList",
    StringListSize => "stringListSize", StringListSum => "stringListSum", StringListAvg => "stringListAvg",
    StringListMin => "stringListMin", StringListMax => "stringListMax", StringListMember => "stringListMember",
    StringListIMember => "stringListIMember", StringListSubsetMatch => "stringListSubsetMatch",
    StringListISubsetMatch => "stringListISubsetMatch", StringListRegexpMember => "stringList_regexpMember",
    UserHome => "userHome", UserMap => "userMap", SplitUserName => "splitUserName",
    SplitSlotName => "splitSlotName", Split => "split",
    EvalInEachContext => "evalInEachContext", CountMatches => "countMatches",
}

/// Evaluate a function call.
pub(crate) fn call(ctx: &Ctx, env: Env<'_>, c: &Call) -> Value {
    let Some(f) = c.func else {
        return Value::Error;
    };
    let a = &c.args;
    let call_name = &c.name;
    let ev = |i: usize| eval::eval(ctx, env, &a[i]);
    let n = a.len();
    use Builtin as B;
    match f {
        B::IsUndefined
        | B::IsError
        | B::IsString
        | B::IsInteger
        | B::IsReal
        | B::IsList
        | B::IsClassAd
        | B::IsBoolean
        | B::IsAbsTime
        | B::IsRelTime => {
            if n != 1 {
                return Value::Error;
            }
            let v = ev(0);
            Value::Bool(match f {
                B::IsUndefined => matches!(v, Value::Undefined),
                B::IsError => matches!(v, Value::Error),
                B::IsString => matches!(v, Value::Str(_)),
                B::IsInteger => matches!(v, Value::Int(_)),
                B::IsReal => matches!(v, Value::Real(_)),
                B::IsList => matches!(v, Value::List(_)),
                B::IsClassAd => matches!(v, Value::Ad(_)),
                B::IsBoolean => matches!(v, Value::Bool(_)),
                B::IsAbsTime => matches!(v, Value::AbsTime { .. }),
                _ => matches!(v, Value::RelTime(_)),
            })
        }
        B::Member | B::IdenticalMember => {
            if n != 2 {
                return Value::Error;
            }
            let use_is = f == B::IdenticalMember;
            let (x, l) = (ev(0), ev(1));
            if l.is_undefined() || (!use_is && x.is_undefined()) {
                return Value::Undefined;
            }
            let Value::List(l) = l else {
                return Value::Error;
            };
            if matches!(x, Value::List(_) | Value::Ad(_)) {
                return Value::Error;
            }
            if !use_is && x.is_error() {
                return Value::Error;
            }
            for item in l.iter() {
                let r = ops::binary(if use_is { BinOp::Is } else { BinOp::Eq }, item, &x);
                if r.is_true() {
                    return Value::Bool(true);
                }
            }
            Value::Bool(false)
        }
        B::Size => {
            if n != 1 {
                return Value::Error;
            }
            match ev(0) {
                Value::Undefined => Value::Undefined,
                Value::List(l) => Value::Int(l.len() as i64),
                Value::Ad(ad) => Value::Int(ad.len() as i64),
                Value::Str(s) => Value::Int(s.len() as i64),
                _ => Value::Error,
            }
        }
        B::Sum | B::Avg => {
            if n != 1 {
                return Value::Error;
            }
            let l = match ev(0) {
                Value::Undefined => return Value::Undefined,
                Value::List(l) => l,
                _ => return Value::Error,
            };
            sum_avg(f == B::Sum, l.iter().cloned())
        }
        B::Min | B::Max => {
            if n != 1 {
                return Value::Error;
            }
            let l = match ev(0) {
                Value::Undefined => return Value::Undefined,
                Value::List(l) => l,
                _ => return Value::Error,
            };
            min_max(f == B::Min, l.iter().cloned())
        }
        B::AnyCompare | B::AllCompare => {
            if n != 3 {
                return Value::Error;
            }
            let op = match ev(0) {
                Value::Undefined => return Value::Undefined,
                Value::Str(s) => match &*s {
                    "<" => BinOp::Lt,
                    "<=" => BinOp::Le,
                    "!=" => BinOp::Ne,
                    "==" => BinOp::Eq,
                    ">" => BinOp::Gt,
                    ">=" => BinOp::Ge,
                    "is" => BinOp::Is,
                    "isnt" => BinOp::Isnt,
                    _ => return Value::Error,
                },
                _ => return Value::Error,
            };
            let l = match ev(1) {
                Value::Undefined => return Value::Undefined,
                Value::List(l) => l,
                _ => return Value::Error,
            };
            let x = ev(2);
            let all = f == B::AllCompare;
            for item in l.iter() {
                match ops::binary(op, item, &x) {
                    Value::Bool(true) => {
                        if !all {
                            return Value::Bool(true);
                        }
                    }
                    Value::Bool(false) => {
                        if all {
                            return Value::Bool(false);
                        }
                    }
                    Value::Undefined => {
                        // The reference stops here: false for allCompare, the initial value otherwise.
                        return Value::Bool(false);
                    }
                    _ => return Value::Error,
                }
            }
            Value::Bool(all)
        }
        B::Time => {
            if n != 0 {
                return Value::Error;
            }
            Value::Int(time::now_secs())
        }
        B::CurrentTime => {
            if n != 0 {
                return Value::Error;
            }
            let s = time::now_secs();
            Value::AbsTime {
                secs: s,
                offset_secs: time::local_offset(s),
            }
        }
        B::TimeZoneOffset => {
            if n != 0 {
                return Value::Error;
            }
            Value::RelTime(time::local_offset(time::now_secs()) as f64)
        }
        B::DayTime => {
            if n != 0 {
                return Value::Error;
            }
            let s = time::now_secs() + time::local_offset(0) as i64;
            Value::RelTime(s.rem_euclid(86_400) as f64)
        }
        B::GetYear
        | B::GetMonth
        | B::GetDayOfYear
        | B::GetDayOfMonth
        | B::GetDayOfWeek
        | B::GetDays
        | B::GetHours
        | B::GetMinutes
        | B::GetSeconds => {
            if n != 1 {
                return Value::Error;
            }
            match ev(0) {
                Value::AbsTime { secs, .. } => {
                    let tm = time::gmtime(secs + time::local_offset(secs) as i64);
                    Value::Int(match f {
                        B::GetYear => tm.year,
                        B::GetMonth => tm.mon as i64,
                        B::GetDayOfYear => tm.yday as i64,
                        B::GetDayOfMonth => tm.mday as i64,
                        B::GetDayOfWeek => tm.wday as i64,
                        B::GetHours => tm.hour as i64,
                        B::GetMinutes => tm.min as i64,
                        B::GetSeconds => tm.sec as i64,
                        _ => return Value::Error,
                    })
                }
                Value::RelTime(r) => {
                    // libclassad reads the seconds through a C int.
                    let r = c_double_to_i32(r) as i64;
                    Value::Int(match f {
                        B::GetDays => r / 86_400,
                        B::GetHours => (r % 86_400) / 3600,
                        B::GetMinutes => (r % 3600) / 60,
                        B::GetSeconds => r % 60,
                        _ => return Value::Error,
                    })
                }
                _ => Value::Error,
            }
        }
        B::SplitTime => {
            if n != 1 {
                return Value::Error;
            }
            match ev(0) {
                Value::Undefined => Value::Undefined,
                Value::Ad(_) => Value::Error,
                v => split_time(&v)
                    .map(|ad| Value::Ad(Arc::new(ad)))
                    .unwrap_or(Value::Error),
            }
        }
        B::FormatTime => format_time(ctx, env, a),
        B::Strcat | B::Join => strcat(ctx, env, f == B::Join, a),
        B::ToUpper | B::ToLower => {
            if n != 1 {
                return Value::Error;
            }
            match arg_string(ctx, env, &a[0]) {
                Value::Str(s) => Value::string(if f == B::ToLower {
                    s.to_ascii_lowercase()
                } else {
                    s.to_ascii_uppercase()
                }),
                other => other,
            }
        }
        B::Substr => {
            if !(2..=3).contains(&n) {
                return Value::Error;
            }
            let (s, o) = (ev(0), ev(1));
            let l = if n == 3 { Some(ev(2)) } else { None };
            if s.is_undefined() || o.is_undefined() || l.as_ref().is_some_and(|v| v.is_undefined())
            {
                return Value::Undefined;
            }
            let (Value::Str(s), Value::Int(off)) = (&s, &o) else {
                return Value::Error;
            };
            let len = match &l {
                Some(Value::Int(x)) => *x as i32 as i64,
                Some(_) => return Value::Error,
                None => 0,
            };
            let alen = s.len() as i64;
            let mut off = *off as i32 as i64;
            if off < 0 {
                off = (alen + off).max(0);
            } else if off >= alen {
                off = alen;
            }
            let mut len2 = len;
            if len2 <= 0 {
                len2 = (alen - off + len2).max(0);
            } else if len2 > alen - off {
                len2 = alen - off;
            }
            if n == 3 && len == 0 {
                len2 = 0;
            }
            let bytes = &s.as_bytes()[off as usize..(off + len2) as usize];
            Value::string(String::from_utf8_lossy(bytes).into_owned())
        }
        B::Strcmp | B::Stricmp => {
            if n != 2 {
                return Value::Error;
            }
            let (x, y) = (ev(0), ev(1));
            if x.is_undefined() || y.is_undefined() {
                return Value::Undefined;
            }
            match (to_string_value(&x), to_string_value(&y)) {
                (Value::Str(a), Value::Str(b)) => {
                    let o = if f == B::Strcmp {
                        a.as_bytes().cmp(b.as_bytes())
                    } else {
                        ops::strcasecmp(&a, &b)
                    };
                    Value::Int(o as i64)
                }
                _ => Value::Error,
            }
        }
        B::VersionCmp
        | B::VersionLE
        | B::VersionLT
        | B::VersionGE
        | B::VersionGT
        | B::VersionEQ => {
            if n != 2 {
                return Value::Error;
            }
            let (x, y) = (ev(0), ev(1));
            if x.is_undefined() || y.is_undefined() {
                return Value::Undefined;
            }
            let (Value::Str(a), Value::Str(b)) = (to_string_value(&x), to_string_value(&y)) else {
                return Value::Error;
            };
            let c = version_cmp(&a, &b);
            // The reference dispatches these with a case-sensitive name compare.
            if f != B::VersionCmp && c_name(f) != &**call_name {
                return Value::Error;
            }
            match f {
                B::VersionCmp => Value::Int(c as i64),
                B::VersionLE => Value::Bool(c <= 0),
                B::VersionLT => Value::Bool(c < 0),
                B::VersionGE => Value::Bool(c >= 0),
                B::VersionGT => Value::Bool(c > 0),
                _ => Value::Bool(c == 0),
            }
        }
        B::VersionInRange => {
            if n != 3 {
                return Value::Error;
            }
            let (x, lo, hi) = (ev(0), ev(1), ev(2));
            if lo.is_undefined() || hi.is_undefined() {
                return Value::Undefined;
            }
            match (
                to_string_value(&x),
                to_string_value(&lo),
                to_string_value(&hi),
            ) {
                (Value::Str(x), Value::Str(lo), Value::Str(hi)) => {
                    Value::Bool(version_cmp(&lo, &x) <= 0 && version_cmp(&x, &hi) <= 0)
                }
                _ => Value::Error,
            }
        }
        B::Regexp => {
            let (p, t, opts) = match pattern_args(n, &ev) {
                Ok(args) => args,
                Err(v) => return v,
            };
            let (Value::Str(p), Value::Str(t)) = (&p, &t) else {
                return Value::Error;
            };
            regex_helper(p, t, None, &opts)
        }
        B::RegexpMember => {
            let (p, l, opts) = match pattern_args(n, &ev) {
                Ok(args) => args,
                Err(v) => return v,
            };
            let (Value::Str(p), Value::List(l)) = (&p, &l) else {
                return Value::Error;
            };
            let mut maybe_undef = false;
            for item in l.iter() {
                match item {
                    Value::Str(t) => {
                        if regex_helper(p, t, None, &opts).is_true() {
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
        B::Regexps | B::Replace | B::ReplaceAll => {
            if !(3..=4).contains(&n) {
                return Value::Error;
            }
            let (p, t, r) = (ev(0), ev(1), ev(2));
            let o = if n == 4 { Some(ev(3)) } else { None };
            if p.is_error()
                || t.is_error()
                || r.is_error()
                || o.as_ref().is_some_and(|v| v.is_error())
            {
                return Value::Error;
            }
            if p.is_undefined()
                || t.is_undefined()
                || r.is_undefined()
                || o.as_ref().is_some_and(|v| v.is_undefined())
            {
                return Value::Undefined;
            }
            let mut opts = match &o {
                Some(Value::Str(s)) => s.to_string(),
                Some(_) => return Value::Error,
                None => String::new(),
            };
            if f == B::Replace {
                opts.push('f');
            } else if f == B::ReplaceAll {
                opts.push_str("fg");
            }
            let (Value::Str(p), Value::Str(t), Value::Str(r)) = (&p, &t, &r) else {
                return Value::Error;
            };
            regex_helper(p, t, Some(r), &opts)
        }
        B::Int => {
            if n != 1 {
                return Value::Error;
            }
            to_int_value(&ev(0))
        }
        B::Real => {
            if n != 1 {
                return Value::Error;
            }
            to_real_value(&ev(0))
        }
        B::String => {
            if n != 1 {
                return Value::Error;
            }
            arg_string(ctx, env, &a[0])
        }
        B::Bool => {
            if n != 1 {
                return Value::Error;
            }
            match ev(0) {
                Value::Undefined => Value::Undefined,
                Value::Bool(b) => Value::Bool(b),
                Value::Int(i) => Value::Bool(i != 0),
                Value::Real(r) => Value::Bool(r != 0.0),
                Value::Str(s) => {
                    if s.eq_ignore_ascii_case("false") {
                        Value::Bool(false)
                    } else if s.eq_ignore_ascii_case("true") {
                        Value::Bool(true)
                    } else {
                        Value::Undefined
                    }
                }
                Value::RelTime(r) => Value::Bool(c_double_to_i32(r) != 0),
                _ => Value::Error,
            }
        }
        B::AbsTime | B::RelTime => conv_time(ctx, env, f == B::RelTime, a),
        B::Unparse => {
            if n != 1 {
                return Value::Error;
            }
            let Expr::Attr(name) = &a[0] else {
                // Only plain attribute references are allowed; MY.x etc. unparse to a name that
                // is then not found.
                return match &a[0] {
                    Expr::Scoped(..) | Expr::Select(..) | Expr::Abs(_) => Value::str(""),
                    _ => Value::Error,
                };
            };
            let mut s = String::new();
            if let Some(cur) = env.cur {
                if let Some(e) = cur.lookup_name(name) {
                    format::unparse_expr_pretty(&mut s, e);
                }
            }
            Value::string(s)
        }
        B::Unresolved => unresolved(ctx, env, a),
        B::Floor | B::Ceil | B::Ceiling | B::Round => {
            if n != 1 {
                return Value::Error;
            }
            let v = ev(0);
            if let Value::Int(_) = v {
                return v;
            }
            match to_real_value(&v) {
                Value::Real(r) => {
                    let x = match f {
                        B::Floor => r.floor(),
                        B::Round => round_half_even(r),
                        _ => r.ceil(),
                    };
                    Value::Int(c_double_to_i64(x))
                }
                Value::Undefined if v.is_undefined() => Value::Error,
                _ => Value::Error,
            }
        }
        B::Pow => {
            if n != 2 {
                return Value::Error;
            }
            let (x, y) = (ev(0), ev(1));
            if let (Value::Int(b), Value::Int(e)) = (&x, &y) {
                if *e >= 0 {
                    return Value::Int(c_double_to_i64((*b as f64).powf(*e as f64) + 0.5));
                }
            }
            match (to_real_value(&x), to_real_value(&y)) {
                (Value::Real(b), Value::Real(e)) => Value::Real(b.powf(e)),
                _ => Value::Error,
            }
        }
        B::Log => Value::Error,
        B::Quantize => quantize(ctx, env, a),
        B::Random => {
            if n > 1 {
                return Value::Error;
            }
            let x = if n == 1 { ev(0) } else { Value::Real(1.0) };
            let r = pseudo_random();
            match x {
                Value::Int(i) => {
                    let i = i as i32 as i64;
                    if i <= 0 {
                        return ctx.fail();
                    }
                    Value::Int((r * i as f64) as i64 % i)
                }
                Value::Real(m) => {
                    if m <= 0.0 {
                        return ctx.fail();
                    }
                    Value::Real(r * m)
                }
                _ => Value::Error,
            }
        }
        B::IfThenElse => {
            if n != 3 {
                return Value::Error;
            }
            let c = ev(0);
            let b = match c {
                Value::Bool(b) => b,
                Value::Int(i) => i != 0,
                Value::Real(r) => r != 0.0,
                Value::Undefined => return Value::Undefined,
                _ => return Value::Error,
            };
            if b {
                ev(1)
            } else {
                ev(2)
            }
        }
        B::Interval => {
            if n != 1 {
                return Value::Error;
            }
            let Value::Int(t) = to_int_value(&ev(0)) else {
                return Value::Error;
            };
            let t = t as i32 as i64;
            let days = t / 86_400;
            let rem = t % 86_400;
            let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
            let out = if days != 0 {
                format!("{}+{:02}:{:02}:{:02}", days, h.abs(), m.abs(), s.abs())
            } else if h != 0 {
                format!("{}:{:02}:{:02}", h, m.abs(), s.abs())
            } else if m != 0 {
                format!("{}:{:02}", m, s.abs())
            } else {
                format!("{}", s)
            };
            Value::string(out)
        }
        B::Eval => {
            if n != 1 {
                return Value::Error;
            }
            let Value::Str(s) = to_string_value(&ev(0)) else {
                return Value::Error;
            };
            match crate::parser::parse_expr(&s) {
                Ok(e) => eval::eval(ctx, env, &e),
                Err(_) => Value::Error,
            }
        }
        B::Debug => {
            if n != 1 {
                return Value::Error;
            }
            ev(0)
        }
        B::StringListsIntersect => {
            if !(2..=3).contains(&n) {
                return Value::Error;
            }
            let (x, y) = (ev(0), ev(1));
            let d = if n == 3 { Some(ev(2)) } else { None };
            if x.is_error() || y.is_error() || d.as_ref().is_some_and(|v| v.is_error()) {
                return Value::Error;
            }
            if x.is_undefined() || y.is_undefined() || d.as_ref().is_some_and(|v| v.is_undefined())
            {
                return Value::Undefined;
            }
            let delims = match &d {
                Some(Value::Str(s)) => s.to_string(),
                Some(_) => return Value::Error,
                None => String::new(),
            };
            let delims = if delims.is_empty() {
                " ,".to_string()
            } else {
                delims
            };
            let (Value::Str(x), Value::Str(y)) = (&x, &y) else {
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
        B::StringListSize
        | B::StringListSum
        | B::StringListAvg
        | B::StringListMin
        | B::StringListMax => string_list_num(ctx, env, f, a),
        B::StringListMember
        | B::StringListIMember
        | B::StringListSubsetMatch
        | B::StringListISubsetMatch => {
            if !(2..=3).contains(&n) {
                return Value::Error;
            }
            let (x, l) = (ev(0), ev(1));
            let d = if n == 3 {
                ev(2)
            } else {
                Value::str(", \t\r\n")
            };
            let ok = |v: &Value| matches!(v, Value::Undefined | Value::Str(_));
            if !ok(&x) || !ok(&l) || (n == 3 && !ok(&d)) {
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
        B::StringListRegexpMember => {
            if !(2..=4).contains(&n) {
                return Value::Error;
            }
            let (p, l) = (ev(0), ev(1));
            let d = if n >= 3 { ev(2) } else { Value::str(", ") };
            let o = if n == 4 { ev(3) } else { Value::str("") };
            let (Value::Str(p), Value::Str(l), Value::Str(d), Value::Str(o)) = (&p, &l, &d, &o)
            else {
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
        B::SplitUserName | B::SplitSlotName => {
            if n != 1 {
                return Value::Error;
            }
            let v = ev(0);
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
        B::Split => {
            if !(1..=2).contains(&n) {
                return Value::Error;
            }
            let v = ev(0);
            let d = if n == 2 { ev(1) } else { Value::str(", \t") };
            let (Value::Str(s), Value::Str(d)) = (&v, &d) else {
                return Value::Error;
            };
            Value::list(split_arb(s, d).into_iter().map(Value::string).collect())
        }
        B::EvalInEachContext | B::CountMatches => {
            if n != 2 {
                return Value::Error;
            }
            // An attribute reference as the expression means "that attribute's expression".
            let mut expr: &Expr = &a[0];
            let mut holder = None;
            if let Expr::Attr(name) = &a[0] {
                if let Some(cur) = env.cur {
                    if let Some(found) = cur.lookup_name(name) {
                        holder = Some(found.clone());
                    }
                }
            }
            if let Some(h) = &holder {
                expr = h;
            }
            // libclassad's dereference of an unresolvable reference leaves its evaluation state
            // at the outermost (match) scope, where the list argument then resolves nothing.
            let unresolvable = env.target.is_some()
                && holder.is_none()
                && match &a[0] {
                    Expr::Attr(_) => true,
                    Expr::Scoped(crate::ScopeKw::My, _, n) => {
                        env.cur.is_some_and(|c| c.lookup_name(n).is_none())
                    }
                    Expr::Scoped(crate::ScopeKw::Target, _, n) => {
                        env.target.is_some_and(|t| t.lookup_name(n).is_none())
                    }
                    _ => false,
                };
            let l = if unresolvable {
                eval::eval(
                    ctx,
                    Env {
                        cur: None,
                        target: None,
                        root: None,
                        alternate: false,
                    },
                    &a[1],
                )
            } else {
                ev(1)
            };
            let Value::List(l) = l else {
                return match l {
                    Value::Undefined if f == B::EvalInEachContext => Value::Undefined,
                    Value::Undefined => Value::Int(0),
                    _ => Value::Error,
                };
            };
            let mut out = Vec::new();
            let mut count = 0i64;
            for item in l.iter() {
                let v = match item {
                    Value::Ad(ad) => {
                        let inner = Env {
                            cur: Some(ad),
                            root: Some(ad),
                            target: env.target,
                            alternate: env.alternate,
                        };
                        // A failure inside one context is only an error for that element.
                        let saved = ctx.failed();
                        let v = eval::eval(ctx, inner, expr);
                        ctx.set_failed(saved);
                        v
                    }
                    Value::Undefined => Value::Undefined,
                    _ => Value::Error,
                };
                if f == B::CountMatches {
                    if ops::bool_equiv(&v) == Some(true) {
                        count += 1;
                    }
                } else {
                    // The reference stores each result as a literal; a reltime literal reads
                    // back as a real.
                    out.push(match v {
                        Value::RelTime(r) => Value::Real(r),
                        // Observed: in a match, list and ad results come back empty from the
                        // reference.
                        Value::List(_) if env.target.is_some() => Value::list(Vec::new()),
                        Value::Ad(_) if env.target.is_some() => {
                            Value::Ad(Arc::new(crate::ClassAd::new()))
                        }
                        other => other,
                    });
                }
            }
            if f == B::CountMatches {
                Value::Int(count)
            } else {
                Value::list(out)
            }
        }
        B::UserHome => {
            if !(1..=2).contains(&n) {
                return ctx.fail();
            }
            let default = if n == 2 {
                match ev(1) {
                    Value::Str(s) => s.to_string(),
                    _ => String::new(),
                }
            } else {
                String::new()
            };
            let owner = ev(0);
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
        B::UserMap => {
            if !(2..=4).contains(&n) {
                return Value::Error;
            }
            let (m, u) = (ev(0), ev(1));
            let _pref = if n >= 3 { ev(2) } else { Value::Undefined };
            let dflt = if n == 4 { ev(3) } else { Value::Undefined };
            if !matches!(m, Value::Str(_)) || !matches!(u, Value::Str(_)) {
                if m.is_error() || u.is_error() {
                    return Value::Error;
                }
                return if n < 4 { Value::Undefined } else { dflt };
            }
            // No user maps are configured: the mapping fails.
            if n < 4 {
                Value::Undefined
            } else {
                dflt
            }
        }
        B::ArgsToList | B::ListToArgs => {
            if !(1..=2).contains(&n) {
                return Value::Error;
            }
            let vers = if n == 2 {
                match ev(1) {
                    Value::Int(v) if v as i32 == 1 || v as i32 == 2 => v as i32,
                    _ => return Value::Error,
                }
            } else {
                2
            };
            let v = ev(0);
            if f == B::ArgsToList {
                let Value::Str(s) = v else {
                    return Value::Error;
                };
                let args = if vers == 1 {
                    Some(condor::split_args_v1(&s))
                } else {
                    condor::split_args_v2(&s)
                };
                match args {
                    Some(a) => Value::list(a.into_iter().map(Value::string).collect()),
                    None => Value::Error,
                }
            } else {
                let Value::List(l) = v else {
                    return Value::Error;
                };
                let mut args = Vec::with_capacity(l.len());
                for item in l.iter() {
                    match item {
                        Value::Str(s) => args.push(s.to_string()),
                        _ => return Value::Error,
                    }
                }
                if vers == 1 {
                    condor::join_args_v1(&args)
                        .map(Value::string)
                        .unwrap_or(Value::Error)
                } else {
                    Value::string(condor::join_args_v2(&args))
                }
            }
        }
        B::EnvV1ToV2 => {
            if n != 1 {
                return Value::Error;
            }
            match ev(0) {
                Value::Undefined => Value::Undefined,
                Value::Str(s) => {
                    let mut env = condor::Env::default();
                    if env.merge_v1_auto(&s) {
                        Value::string(env.to_v2())
                    } else {
                        Value::Error
                    }
                }
                _ => Value::Error,
            }
        }
        B::MergeEnvironment => {
            let mut env = condor::Env::default();
            for i in 0..n {
                match ev(i) {
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

/// The source text libclassad prints when it turns a list into a string: its lists keep the
/// element expressions unevaluated, so `string({1 + 1})` is `"{ 1 + 1 }"`. Found for a list
/// literal argument or an attribute whose expression is one.
fn list_source_text(env: Env<'_>, e: &Expr) -> Option<String> {
    list_source_expr(env, e).map(|x| x.to_string())
}

/// The list literal an argument denotes (directly or through an attribute), if any.
fn list_source_expr<'a>(env: Env<'a>, e: &'a Expr) -> Option<&'a Expr> {
    list_source_expr_depth(env, e, 8)
}

fn list_source_expr_depth<'a>(env: Env<'a>, e: &'a Expr, depth: u32) -> Option<&'a Expr> {
    if depth == 0 {
        return None;
    }
    let mut e = e;
    while let Expr::Paren(x) = e {
        e = x;
    }
    let found: Option<&Expr> = match e {
        Expr::List(_) => Some(e),
        Expr::Attr(n) | Expr::Scoped(crate::ScopeKw::My, _, n) => {
            let mut ad = env.cur;
            let mut hit = None;
            while let Some(c) = ad {
                if let Some(x) = c.lookup_name(n) {
                    hit = Some(&**x);
                    break;
                }
                ad = c.parent();
            }
            if hit.is_none() {
                if let (Expr::Attr(_), true, Some(t)) = (e, env.alternate, env.target) {
                    hit = t.lookup_name(n).map(|x| &**x);
                }
            }
            hit
        }
        Expr::Scoped(crate::ScopeKw::Target, _, n) => {
            env.target.and_then(|t| t.lookup_name(n)).map(|x| &**x)
        }
        _ => None,
    };
    let mut f = found?;
    while let Expr::Paren(x) = f {
        f = x;
    }
    match f {
        Expr::List(_) => Some(f),
        // `R = L` where L is a list literal: follow a short chain of references.
        Expr::Attr(_) | Expr::Scoped(..) => list_source_expr_depth(env, f, depth - 1),
        _ => None,
    }
}

/// `to_string_value` of an argument, printing list literals as libclassad does.
fn arg_string(ctx: &Ctx, env: Env<'_>, e: &Expr) -> Value {
    let v = eval::eval(ctx, env, e);
    if let Value::List(_) = v {
        if let Some(text) = list_source_text(env, e) {
            return Value::string(text);
        }
    }
    to_string_value(&v)
}

fn c_name(f: Builtin) -> &'static str {
    f.name()
}

fn c_double_to_i64(x: f64) -> i64 {
    if x.is_nan() || x >= 9.223_372_036_854_775_807e18 || x < -9.223_372_036_854_775_808e18 {
        i64::MIN
    } else {
        x as i64
    }
}

/// rint() in the default rounding mode: halfway cases to even.
fn round_half_even(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 {
        2.0 * (x / 2.0).round()
    } else {
        r
    }
}

fn pseudo_random() -> f64 {
    use std::cell::Cell;
    thread_local!(static SEED: Cell<u64> = const { Cell::new(0x2545_F491_4F6C_DD1D) });
    SEED.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}

/// libclassad's sum()/avg() over already evaluated elements.
fn sum_avg(only_sum: bool, items: impl Iterator<Item = Value>) -> Value {
    let mut result = Value::Int(0);
    let mut first = true;
    let mut len = 0;
    for v in items {
        len += 1;
        match v {
            Value::Undefined => {
                len -= 1;
                continue;
            }
            Value::Int(_) | Value::Real(_) | Value::Bool(_) => {}
            _ => return Value::Error,
        }
        if first {
            result = v;
            first = false;
        } else {
            result = ops::binary(BinOp::Add, &result, &v);
        }
    }
    if only_sum {
        return result;
    }
    if len > 0 {
        ops::binary(BinOp::Div, &result, &Value::Real(len as f64))
    } else {
        result
    }
}

fn coerce_in_place(a: &mut Value, b: &mut Value) {
    for v in [&mut *a, &mut *b] {
        if let Value::Bool(x) = v {
            *v = Value::Int(*x as i64);
        }
    }
    match (&*a, &*b) {
        (Value::Int(i), Value::Real(_)) => *a = Value::Real(*i as f64),
        (Value::Real(_), Value::Int(i)) => *b = Value::Real(*i as f64),
        _ => {}
    }
}

fn min_max(is_min: bool, items: impl Iterator<Item = Value>) -> Value {
    let mut result = Value::Undefined;
    let mut first = true;
    for mut v in items {
        match v {
            Value::Undefined => continue,
            Value::Int(_) | Value::Real(_) | Value::Bool(_) => {}
            _ => return Value::Error,
        }
        if first {
            result = v;
            first = false;
        } else {
            // libclassad's comparison coerces both operands in place (bool -> int, int -> real).
            coerce_in_place(&mut v, &mut result);
            if ops::binary(if is_min { BinOp::Lt } else { BinOp::Gt }, &v, &result).is_true() {
                result = v;
            }
        }
    }
    result
}

fn strcat(ctx: &Ctx, env: Env<'_>, is_join: bool, a: &[Expr]) -> Value {
    let mut items: Vec<Value> = Vec::with_capacity(a.len());
    let mut done = false;
    if is_join && !a.is_empty() && a.len() <= 2 {
        let last_expr = &a[a.len() - 1];
        let last = eval::eval(ctx, env, last_expr);
        if let Value::List(l) = &last {
            if a.len() == 2 {
                items.push(eval::eval(ctx, env, &a[0]));
            } else {
                items.push(Value::str(""));
            }
            // Elements that are lists print as their source text, as in libclassad.
            let elems: Option<&Vec<Expr>> = match list_source_expr(env, last_expr) {
                Some(Expr::List(xs)) if xs.len() == l.len() => Some(xs),
                _ => None,
            };
            for (i, v) in l.iter().enumerate() {
                match (v, elems) {
                    (Value::List(_), Some(xs)) => {
                        let text = list_source_text(env, &xs[i]).map(Value::string);
                        items.push(text.unwrap_or_else(|| v.clone()));
                    }
                    _ => items.push(v.clone()),
                }
            }
            done = true;
        }
    }
    if !done {
        for e in a {
            let v = eval::eval(ctx, env, e);
            items.push(match v {
                Value::List(_) => list_source_text(env, e).map(Value::string).unwrap_or(v),
                other => other,
            });
        }
    }
    let mut buf = String::new();
    let mut sep = String::new();
    let (mut undef, mut def) = (false, false);
    for (i, v) in items.iter().enumerate() {
        let s = match to_string_value(v) {
            Value::Str(s) => s,
            Value::Undefined => {
                undef = true;
                if is_join {
                    continue;
                }
                def = false;
                break;
            }
            _ => return Value::Error,
        };
        if is_join {
            if i == 0 {
                sep = s.to_string();
                continue;
            }
            if !buf.is_empty() {
                buf.push_str(&sep);
            }
        }
        def = true;
        buf.push_str(&s);
    }
    if undef && !def {
        return Value::Undefined;
    }
    Value::string(buf)
}

/// C strtod on a prefix of `s`: the number and whether any characters were consumed.
pub fn strtod(s: &str) -> (f64, bool) {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == 0x0b) {
        i += 1;
    }
    let start = i;
    let mut j = i;
    if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
        j += 1;
    }
    let rest = &s[j..];
    let lower: String = rest
        .chars()
        .take(8)
        .collect::<String>()
        .to_ascii_lowercase();
    let neg = j > start && b[start] == b'-';
    if lower.starts_with("inf") {
        let v = if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
        return (v, true);
    }
    if lower.starts_with("nan") {
        return (f64::NAN, true);
    }
    if lower.starts_with("0x") {
        // hexadecimal float
        let mut k = j + 2;
        let mut v = 0f64;
        let mut any = false;
        while k < b.len() && b[k].is_ascii_hexdigit() {
            v = v * 16.0 + (b[k] as char).to_digit(16).unwrap_or(0) as f64;
            k += 1;
            any = true;
        }
        if k < b.len() && b[k] == b'.' {
            k += 1;
            let mut scale = 1.0 / 16.0;
            while k < b.len() && b[k].is_ascii_hexdigit() {
                v += (b[k] as char).to_digit(16).unwrap_or(0) as f64 * scale;
                scale /= 16.0;
                k += 1;
                any = true;
            }
        }
        if !any {
            return (0.0, true); // "0" consumed
        }
        if k < b.len() && (b[k] == b'p' || b[k] == b'P') {
            let mut m = k + 1;
            let mut eneg = false;
            if m < b.len() && (b[m] == b'+' || b[m] == b'-') {
                eneg = b[m] == b'-';
                m += 1;
            }
            let es = m;
            let mut e = 0i32;
            while m < b.len() && b[m].is_ascii_digit() {
                e = e.saturating_mul(10).saturating_add((b[m] - b'0') as i32);
                m += 1;
            }
            if m > es {
                v *= 2f64.powi(if eneg { -e } else { e });
            }
        }
        return (if neg { -v } else { v }, true);
    }
    let mut k = j;
    let ds = k;
    while k < b.len() && b[k].is_ascii_digit() {
        k += 1;
    }
    let mut nd = k - ds;
    if k < b.len() && b[k] == b'.' {
        k += 1;
        let fs = k;
        while k < b.len() && b[k].is_ascii_digit() {
            k += 1;
        }
        nd += k - fs;
    }
    if nd == 0 {
        return (0.0, false);
    }
    if k < b.len() && (b[k] == b'e' || b[k] == b'E') {
        let mut m = k + 1;
        if m < b.len() && (b[m] == b'+' || b[m] == b'-') {
            m += 1;
        }
        let es = m;
        while m < b.len() && b[m].is_ascii_digit() {
            m += 1;
        }
        if m > es {
            k = m;
        }
    }
    let text = &s[start..k];
    let text = if text.ends_with('.') && text.len() > 1 {
        &text[..text.len() - 1]
    } else {
        text
    };
    (text.parse::<f64>().unwrap_or(0.0), true)
}

pub fn to_real_value(v: &Value) -> Value {
    match v {
        Value::Undefined => Value::Undefined,
        Value::Str(s) => {
            let (r, ok) = strtod(s);
            if !ok && r == 0.0 {
                Value::Error
            } else {
                Value::Real(r)
            }
        }
        Value::Bool(b) => Value::Real(if *b { 1.0 } else { 0.0 }),
        Value::Int(i) => Value::Real(*i as f64),
        Value::Real(r) => Value::Real(*r),
        Value::AbsTime { secs, .. } => Value::Real(*secs as f64),
        Value::RelTime(r) => Value::Real(c_double_to_i32(*r) as f64),
        _ => Value::Error,
    }
}

pub fn to_int_value(v: &Value) -> Value {
    match v {
        Value::Undefined => Value::Undefined,
        Value::Str(s) => {
            let (r, ok) = strtod(s);
            let i = c_double_to_i64(r);
            if !ok && i == 0 {
                Value::Error
            } else {
                Value::Int(i)
            }
        }
        Value::Bool(b) => Value::Int(*b as i64),
        Value::Int(i) => Value::Int(*i),
        Value::Real(r) => Value::Int(c_double_to_i64(*r)),
        Value::AbsTime { secs, .. } => Value::Int(*secs),
        Value::RelTime(r) => Value::Int(c_double_to_i32(*r) as i64),
        _ => Value::Error,
    }
}

/// libclassad's convertValueToStringValue.
pub fn to_string_value(v: &Value) -> Value {
    match v {
        Value::Undefined => Value::Undefined,
        Value::Error => Value::Error,
        Value::Str(_) => v.clone(),
        Value::AbsTime { secs, offset_secs } => {
            let mut s = String::new();
            format::abs_time_string(&mut s, *secs, *offset_secs);
            Value::string(s)
        }
        Value::RelTime(r) => {
            let mut s = String::new();
            format::rel_time_string(&mut s, c_double_to_i32(*r) as f64);
            Value::string(s)
        }
        other => Value::string(other.to_string()),
    }
}

/// libclassad's doSplitTime: ints and reals are read as C ints (32 bits).
fn split_time(v: &Value) -> Option<crate::ClassAd> {
    let mut ad = crate::ClassAd::new();
    match v {
        Value::Int(i) => {
            let secs = *i as i32 as i64;
            return split_time(&Value::AbsTime {
                secs,
                offset_secs: time::local_offset(secs),
            });
        }
        Value::Real(r) => {
            let secs = c_double_to_i32(*r) as i64;
            return split_time(&Value::AbsTime {
                secs,
                offset_secs: time::local_offset(secs),
            });
        }
        Value::AbsTime { secs, offset_secs } => {
            let tm = time::gmtime(secs + *offset_secs as i64);
            ad.insert_str("Type", "AbsoluteTime");
            ad.insert_int("Year", tm.year);
            ad.insert_int("Month", tm.mon);
            ad.insert_int("Day", tm.mday);
            ad.insert_int("Hours", tm.hour);
            ad.insert_int("Minutes", tm.min);
            ad.insert_int("Seconds", tm.sec);
            ad.insert_int("Offset", *offset_secs as i64);
        }
        Value::RelTime(r) => {
            let mut r = *r;
            let neg = r < 0.0;
            if neg {
                r = -r;
            }
            let total = c_double_to_i32(r) as i64;
            let mut days = total / 86_400;
            let mut hrs = (total % 86_400) / 3600;
            let mut mins = (total % 3600) / 60;
            let mut secs = (total % 60) as f64 + (r - r.floor());
            if neg {
                if days > 0 {
                    days = -days;
                } else if hrs > 0 {
                    hrs = -hrs;
                } else if mins > 0 {
                    mins = -mins;
                } else {
                    secs = -secs;
                }
            }
            ad.insert_str("Type", "RelativeTime");
            ad.insert_int("Days", days);
            ad.insert_int("Hours", hrs);
            ad.insert_int("Minutes", mins);
            ad.insert_real("Seconds", secs);
        }
        Value::Ad(a) => return Some((**a).clone()),
        _ => return None,
    }
    Some(ad)
}

fn c_double_to_i32(x: f64) -> i32 {
    if x.is_nan() || x >= 2_147_483_648.0 || x <= -2_147_483_649.0 {
        i32::MIN
    } else {
        x as i32
    }
}

fn format_time(ctx: &Ctx, env: Env<'_>, a: &[Expr]) -> Value {
    match a.len() {
        0 => {
            let now = time::now_secs();
            Value::string(time::strftime(
                &time::gmtime(now + time::local_offset(now) as i64),
                "%c",
            ))
        }
        1 | 2 => {
            let t = eval::eval(ctx, env, &a[0]);
            if matches!(t, Value::RelTime(_)) {
                return Value::Error;
            }
            let Some(split) = split_time(&t) else {
                return Value::Error;
            };
            let field = |name: &str| -> Option<i64> {
                match split.eval_attr(name) {
                    Value::Int(i) => Some(i as i32 as i64),
                    _ => None,
                }
            };
            let mut tm = time::Tm {
                sec: field("Seconds").unwrap_or(0),
                min: field("Minutes").unwrap_or(0),
                hour: field("Hours").unwrap_or(0),
                mday: field("Day").unwrap_or(0),
                mon: field("Month").unwrap_or(1),
                year: field("Year").unwrap_or(1900),
                wday: 0,
                yday: 0,
            };
            let (wd, yd) = time::day_numbers(tm.year, tm.mon, tm.mday);
            tm.wday = wd;
            tm.yday = yd;
            let fmt = if a.len() == 2 {
                match eval::eval(ctx, env, &a[1]) {
                    Value::Str(s) => s.to_string(),
                    _ => return Value::Error,
                }
            } else {
                "%c".to_string()
            };
            Value::string(time::strftime(&tm, &fmt))
        }
        _ => Value::Error,
    }
}

fn conv_time(ctx: &Ctx, env: Env<'_>, relative: bool, a: &[Expr]) -> Value {
    if a.is_empty() && !relative {
        let s = time::now_secs();
        return Value::AbsTime {
            secs: s,
            offset_secs: time::local_offset(s),
        };
    }
    if a.is_empty() || a.len() > 2 {
        return Value::Error;
    }
    let v = eval::eval(ctx, env, &a[0]);
    let mut offset: Option<i32> = None;
    if a.len() == 2 {
        let v2 = eval::eval(ctx, env, &a[1]);
        if relative {
            return Value::Error;
        }
        offset = Some(match v2 {
            Value::Int(i) => i as i32,
            Value::Real(r) => r as i32,
            Value::RelTime(r) => r as i64 as i32,
            _ => return Value::Error,
        });
    }
    match v {
        Value::Undefined => Value::Undefined,
        Value::Int(i) => {
            let i = i as i32 as i64;
            if relative {
                Value::RelTime(i as f64)
            } else {
                let off = offset.unwrap_or_else(|| time::local_offset(i));
                if off == -1 {
                    return ctx.fail();
                }
                Value::AbsTime {
                    secs: i,
                    offset_secs: off,
                }
            }
        }
        Value::Real(r) => {
            if relative {
                Value::RelTime(r)
            } else {
                let i = r as i32 as i64;
                Value::AbsTime {
                    secs: i,
                    offset_secs: offset.unwrap_or_else(|| time::local_offset(i)),
                }
            }
        }
        // libclassad falls through to its absolute-time case: a computed string is returned
        // unchanged by absTime() and gives relTime(0).
        Value::Str(_) => {
            if relative {
                Value::RelTime(0.0)
            } else {
                v
            }
        }
        Value::AbsTime { secs, .. } => {
            if relative {
                Value::RelTime(secs as f64)
            } else {
                v
            }
        }
        Value::RelTime(r) => {
            if relative {
                v
            } else {
                let i = c_double_to_i32(r) as i64;
                Value::AbsTime {
                    secs: i,
                    offset_secs: offset.unwrap_or_else(|| time::local_offset(i)),
                }
            }
        }
        _ => Value::Error,
    }
}

/// `unresolved(attr[, regex])`: the attribute names the referenced expression needs that
/// cannot be found (following resolvable references), as libclassad's external references.
fn unresolved(ctx: &Ctx, env: Env<'_>, a: &[Expr]) -> Value {
    if a.is_empty() || a.len() > 2 {
        return Value::Error;
    }
    if !matches!(
        a[0],
        Expr::Attr(_) | Expr::Abs(_) | Expr::Scoped(..) | Expr::Select(..)
    ) {
        return Value::Error;
    }
    // Dereference the argument without evaluating it.
    let start: Option<(Arc<Expr>, &crate::ClassAd)> = match &a[0] {
        Expr::Attr(n) => {
            let mut found = None;
            let mut ad = env.cur;
            while let Some(c) = ad {
                if let Some(e) = c.lookup_name(n) {
                    found = Some((e.clone(), c));
                    break;
                }
                ad = c.parent();
            }
            if found.is_none() && env.alternate {
                if let Some(t) = env.target {
                    found = t.lookup_name(n).map(|e| (e.clone(), t));
                }
            }
            found
        }
        // MY.x from inside a nested ad literal: the current ad, then its enclosing ads (as
        // evaluating MY.x does; the reference gives "" for `[c = unresolved(MY.S)]`).
        Expr::Scoped(crate::ScopeKw::My, _, n) => {
            let mut found = None;
            let mut ad = env.cur;
            while let Some(c) = ad {
                if let Some(e) = c.lookup_name(n) {
                    found = Some((e.clone(), c));
                    break;
                }
                ad = c.parent();
            }
            found
        }
        Expr::Scoped(crate::ScopeKw::Target, _, n) => env
            .target
            .and_then(|t| t.lookup_name(n).map(|e| (e.clone(), t))),
        _ => None,
    };
    // `x.y`: the base must evaluate to an ad holding y (or an enclosing ad of it).
    let holder;
    let start = match (&a[0], start) {
        (Expr::Select(base, n), None) => match eval::eval(ctx, env, base) {
            Value::Ad(ad) => {
                holder = ad;
                let mut found = None;
                let mut cur = Some(&*holder);
                while let Some(c) = cur {
                    if let Some(e) = c.lookup_name(n) {
                        found = Some((e.clone(), c));
                        break;
                    }
                    cur = c.parent();
                }
                found
            }
            _ => None,
        },
        (_, s) => s,
    };
    let Some((expr, home)) = start else {
        return Value::Undefined;
    };
    let re = if a.len() == 2 {
        match eval::eval(ctx, env, &a[1]) {
            Value::Str(p) => match regex::RegexBuilder::new(&p).case_insensitive(true).build() {
                Ok(r) => Some(r),
                Err(_) => return Value::Error,
            },
            _ => return Value::Error,
        }
    } else {
        None
    };
    let mut refs: Vec<String> = Vec::new();
    let walker = RefWalker { ctx, env };
    let ok = walker.walk(&expr, home, &mut refs, 0);
    refs.sort_by(|x, y| ops::strcasecmp(x, y));
    refs.dedup_by(|x, y| x.eq_ignore_ascii_case(y));
    let names: Vec<&str> = if ok {
        refs.iter()
            .map(|r| {
                if r.len() >= 7 && r[..7].eq_ignore_ascii_case("target.") {
                    &r[7..]
                } else {
                    &r[..]
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    match re {
        Some(re) => Value::Bool(names.iter().any(|n| !n.is_empty() && re.is_match(n))),
        None => Value::string(names.join(",")),
    }
}

struct RefWalker<'c, 'a> {
    ctx: &'c Ctx,
    env: Env<'a>,
}

impl<'c, 'a> RefWalker<'c, 'a> {
    fn walk(&self, e: &Expr, cur: &crate::ClassAd, refs: &mut Vec<String>, depth: u32) -> bool {
        if depth > 200 {
            return false;
        }
        let d = depth + 1;
        match e {
            Expr::Lit(_) | Expr::RelTimeLit(_) | Expr::OldAbsTimeLit { .. } => true,
            Expr::Attr(n) => {
                let mut ad = Some(cur);
                while let Some(c) = ad {
                    if let Some(found) = c.lookup_name(n) {
                        let found = found.clone();
                        return self.walk(&found, c, refs, d);
                    }
                    ad = c.parent();
                }
                if n.is("my") || n.is("self") {
                    return self.walk_ad(cur, refs, d);
                }
                refs.push(n.as_str().to_string());
                true
            }
            Expr::Abs(n) => match self
                .env
                .root
                .and_then(|r| r.lookup_name(n).map(|e| (e.clone(), r)))
            {
                Some((found, r)) => self.walk(&found, r, refs, d),
                None => {
                    refs.push(n.as_str().to_string());
                    true
                }
            },
            Expr::Scoped(kw, prefix, n) => {
                let base = match kw {
                    crate::ScopeKw::My => Some(cur),
                    crate::ScopeKw::Target => self.env.target,
                    crate::ScopeKw::Parent => cur.parent(),
                };
                match base {
                    None => {
                        refs.push(format!("{}.{}", prefix.as_str(), n.as_str()));
                        true
                    }
                    Some(b) => {
                        let mut ad = Some(b);
                        while let Some(c) = ad {
                            if let Some(found) = c.lookup_name(n) {
                                let found = found.clone();
                                return self.walk(&found, c, refs, d);
                            }
                            ad = c.parent();
                        }
                        refs.push(n.as_str().to_string());
                        true
                    }
                }
            }
            Expr::Select(base, n) => {
                let env = Env {
                    cur: Some(cur),
                    ..self.env
                };
                match eval::eval(self.ctx, env, base) {
                    Value::Undefined => {
                        refs.push(format!("{}.{}", base, n.as_str()));
                        true
                    }
                    Value::Ad(ad) => {
                        let mut a = Some(&*ad);
                        while let Some(c) = a {
                            if let Some(found) = c.lookup_name(n) {
                                let found = found.clone();
                                return self.walk(&found, c, refs, d);
                            }
                            a = c.parent();
                        }
                        refs.push(n.as_str().to_string());
                        true
                    }
                    _ => false,
                }
            }
            Expr::Index(x, y) | Expr::Binary(_, x, y) => {
                self.walk(x, cur, refs, d) && self.walk(y, cur, refs, d)
            }
            Expr::Unary(_, x) | Expr::Paren(x) => self.walk(x, cur, refs, d),
            Expr::Cond(c, m, x) => {
                self.walk(c, cur, refs, d)
                    && m.as_ref().is_none_or(|m| self.walk(m, cur, refs, d))
                    && self.walk(x, cur, refs, d)
            }
            Expr::Call(c) => c.args.iter().all(|x| self.walk(x, cur, refs, d)),
            Expr::List(l) => l.iter().all(|x| self.walk(x, cur, refs, d)),
            Expr::Ad(ad) => ad
                .entries()
                .iter()
                .all(|a| self.walk(&a.expr, cur, refs, d)),
        }
    }

    fn walk_ad(&self, ad: &crate::ClassAd, refs: &mut Vec<String>, d: u32) -> bool {
        ad.entries().iter().all(|a| self.walk(&a.expr, ad, refs, d))
    }
}

fn quantize(ctx: &Ctx, env: Env<'_>, a: &[Expr]) -> Value {
    if a.len() != 2 {
        return Value::Error;
    }
    let arg = eval::eval(ctx, env, &a[0]);
    let mut arg2 = eval::eval(ctx, env, &a[1]);
    let Value::Real(rval) = to_real_value(&arg) else {
        return Value::Error;
    };
    let rbase;
    if let Value::List(l) = &arg2 {
        let mut base = Value::Real(0.0);
        let mut rb = 0.0;
        for item in l.iter() {
            base = item.clone();
            match to_real_value(&base) {
                Value::Real(r) => {
                    rb = r;
                    if rb >= rval {
                        return base;
                    }
                }
                _ => return Value::Error,
            }
        }
        arg2 = base;
        rbase = rb;
    } else {
        match to_real_value(&arg2) {
            Value::Real(r) => rbase = r,
            _ => return Value::Error,
        }
    }
    if let Value::Int(ib) = arg2 {
        if ib == 0 {
            return arg;
        }
        if let Value::Int(iv) = arg {
            return Value::Int(((iv.wrapping_add(ib - 1)) / ib).wrapping_mul(ib));
        }
        return Value::Real((rval / ib as f64).ceil() * ib as f64);
    }
    if (-1e-8..=1e-8).contains(&rbase) {
        arg
    } else {
        Value::Real((rval / rbase).ceil() * rbase)
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

fn string_list_num(ctx: &Ctx, env: Env<'_>, f: Builtin, a: &[Expr]) -> Value {
    if !(1..=2).contains(&a.len()) {
        return Value::Error;
    }
    let l = eval::eval(ctx, env, &a[0]);
    let d = if a.len() == 2 {
        eval::eval(ctx, env, &a[1])
    } else {
        Value::str(", ")
    };
    let (Value::Str(l), Value::Str(d)) = (&l, &d) else {
        return Value::Error;
    };
    let toks = split_list(l, d);
    if f == Builtin::StringListSize {
        return Value::Int(toks.len() as i64);
    }
    let (mut acc, empty_allowed, is_avg): (f64, bool, bool) = match f {
        Builtin::StringListSum => (0.0, true, false),
        Builtin::StringListAvg => (0.0, true, true),
        Builtin::StringListMin => (f32::MAX as f64, false, false),
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
            Builtin::StringListMin => {
                if x < acc {
                    x
                } else {
                    acc
                }
            }
            Builtin::StringListMax => {
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

/// PCRE's `$` (without the m option) also matches before a newline that ends the subject;
/// Rust's does not. When the subject's only newline is its last character, `(?m:$)` has
/// exactly PCRE's meaning, so unescaped `$` outside classes is rewritten for such subjects.
fn pcre_dollar(p: &str, target: &str) -> Option<String> {
    if !target.ends_with('\n') || target[..target.len() - 1].contains('\n') || !p.contains('$') {
        return None;
    }
    let mut out = String::with_capacity(p.len() + 8);
    let mut chars = p.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                if let Some(n) = chars.next() {
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
            '$' if !in_class => out.push_str("(?m:$)"),
            _ => out.push(c),
        }
    }
    Some(out)
}

fn build_regex_for(p: &str, opts: &str, target: &str) -> Option<regex::Regex> {
    if opts.contains('m') {
        return build_regex(p, opts);
    }
    match pcre_dollar(p, target) {
        Some(q) => build_regex(&q, opts),
        None => build_regex(p, opts),
    }
}

fn build_regex(p: &str, opts: &str) -> Option<regex::Regex> {
    let mut b = regex::RegexBuilder::new(p);
    b.case_insensitive(opts.contains('i'))
        .multi_line(opts.contains('m'))
        .dot_matches_new_line(opts.contains('s'))
        .ignore_whitespace(opts.contains('x'));
    b.build().ok()
}

/// The arguments of `regexp(pattern, target[, options])` and `regexpMember(pattern, list[,
/// options])`: 2 or 3 of them, error before undefined, options a string (empty if absent).
fn pattern_args(n: usize, ev: &dyn Fn(usize) -> Value) -> Result<(Value, Value, String), Value> {
    if !(2..=3).contains(&n) {
        return Err(Value::Error);
    }
    let (p, t) = (ev(0), ev(1));
    let o = if n == 3 { Some(ev(2)) } else { None };
    if p.is_error() || t.is_error() || o.as_ref().is_some_and(|v| v.is_error()) {
        return Err(Value::Error);
    }
    if p.is_undefined() || t.is_undefined() || o.as_ref().is_some_and(|v| v.is_undefined()) {
        return Err(Value::Undefined);
    }
    let opts = match &o {
        Some(Value::Str(s)) => s.to_string(),
        Some(_) => return Err(Value::Error),
        None => String::new(),
    };
    Ok((p, t, opts))
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

/// libclassad's natural_cmp: digit runs compare by length then text, leading zeros sort
/// first; the result is a character difference like strcmp's.
fn version_cmp(a: &str, b: &str) -> i32 {
    let (s1, s2) = (a.as_bytes(), b.as_bytes());
    let at = |s: &[u8], i: usize| -> u8 { s.get(i).copied().unwrap_or(0) };
    let diff = |x: u8, y: u8| -> i32 { (x as i8 as i32) - (y as i8 as i32) };
    let mut i = 0;
    while at(s1, i) != 0 && at(s1, i) == at(s2, i) {
        i += 1;
    }
    if at(s1, i) == at(s2, i) {
        return 0;
    }
    let mut n_beg = i;
    while n_beg > 0 && s1[n_beg - 1].is_ascii_digit() {
        n_beg -= 1;
    }
    if n_beg == i && (!at(s1, i).is_ascii_digit() || !at(s2, i).is_ascii_digit()) {
        return diff(at(s1, i), at(s2, i));
    }
    let mut z1 = n_beg;
    while at(s1, z1) == b'0' {
        z1 += 1;
    }
    let mut z2 = n_beg;
    while at(s2, z2) == b'0' {
        z2 += 1;
    }
    if z1 > n_beg && !at(s1, z1).is_ascii_digit() {
        z1 -= 1;
    }
    if z2 > n_beg && !at(s2, z2).is_ascii_digit() {
        z2 -= 1;
    }
    if z1 - n_beg != z2 - n_beg {
        return (z2 - n_beg) as i32 - (z1 - n_beg) as i32;
    }
    if z1 > n_beg {
        return diff(at(s1, i), at(s2, i));
    }
    let mut e1 = z1;
    while at(s1, e1).is_ascii_digit() {
        e1 += 1;
    }
    let mut e2 = z2;
    while at(s2, e2).is_ascii_digit() {
        e2 += 1;
    }
    if e1 - n_beg != e2 - n_beg {
        (e1 - n_beg) as i32 - (e2 - n_beg) as i32
    } else {
        diff(at(s1, i), at(s2, i))
    }
}
