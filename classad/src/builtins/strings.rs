//! String functions: `strcat`, `join`, `toUpper`, `toLower`, `substr`, `strcmp`, `stricmp`
//! (libclassad's `strCat`, `changeCase`, `subString` and `compareString` in
//! src/classad/fnCall.cpp). Non-string arguments are converted as `string()` converts them (a
//! list prints as its element expressions, see the conversion family).
use super::conversion::{arg_string, to_string_value};
use super::{Args, Builtin as B};
use crate::eval::{self, ops};
use crate::value::Value;

/// `strcat(x...)` and `join(separator, x...)`, `join(separator, list)`, `join(list)`. A list
/// given to `join` is joined element by element, each evaluated in the call's scope as
/// libclassad passes them as the call's arguments; any other list prints as its element
/// expressions (libclassad's string of a list).
pub(super) fn strcat(a: &Args, is_join: bool) -> Value {
    let mut items: Vec<Value> = Vec::with_capacity(a.len());
    let mut done = false;
    if is_join && !a.is_empty() && a.len() <= 2 {
        let last = a.eval(a.len() - 1);
        if let Value::List(l) = &last {
            if a.len() == 2 {
                items.push(a.eval(0));
            } else {
                items.push(Value::str(""));
            }
            items.extend((0..l.len()).map(|i| eval::element_in(a.ctx, a.env, l, i)));
            done = true;
        }
    }
    if !done {
        items.extend((0..a.len()).map(|i| a.eval(i)));
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

/// `toUpper(s)` and `toLower(s)` (ASCII only, as C's toupper in the C locale).
pub(super) fn change_case(f: B, a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    match arg_string(a, 0) {
        Value::Str(s) => Value::string(if f == B::ToLower {
            s.to_ascii_lowercase()
        } else {
            s.to_ascii_uppercase()
        }),
        other => other,
    }
}

/// `substr(s, offset[, length])`: negative offsets and lengths count from the end; offsets and
/// lengths are read as C ints.
pub(super) fn substr(a: &Args) -> Value {
    if !(2..=3).contains(&a.len()) {
        return Value::Error;
    }
    let (s, o) = (a.eval(0), a.eval(1));
    let l = if a.len() == 3 { Some(a.eval(2)) } else { None };
    if s.is_undefined() || o.is_undefined() || l.as_ref().is_some_and(|v| v.is_undefined()) {
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
    if a.len() == 3 && len == 0 {
        len2 = 0;
    }
    let bytes = &s.as_bytes()[off as usize..(off + len2) as usize];
    Value::string(String::from_utf8_lossy(bytes).into_owned())
}

/// `strcmp(a, b)` and `stricmp(a, b)`: the sign of the byte comparison.
pub(super) fn compare(f: B, a: &Args) -> Value {
    if a.len() != 2 {
        return Value::Error;
    }
    let (x, y) = (a.eval(0), a.eval(1));
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
