//! Conversions: `int`, `real`, `string`, `bool`, `absTime`, `relTime` (libclassad's
//! `convInt`, `convReal`, `convString`, `convBool` and `convTime` in src/classad/fnCall.cpp),
//! and the value conversions the other families share (libclassad's
//! convertValueToIntegerValue, ...RealValue, ...StringValue in src/classad/value.cpp and
//! fnCall.cpp).
use super::c_number::{c_double_to_i32, c_double_to_i64, strtod};
use super::time::{local_offset, now_secs};
use super::Args;
use crate::format;
use crate::value::Value;

/// `int(x)`.
pub(super) fn int(a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    to_int_value(&a.eval(0))
}

/// `real(x)`.
pub(super) fn real(a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    to_real_value(&a.eval(0))
}

/// `string(x)`.
pub(super) fn string(a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    arg_string(a, 0)
}

/// `bool(x)`: numbers are true when non-zero, strings only when "true" or "false".
pub(super) fn bool(a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    match a.eval(0) {
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

/// `absTime([t[, offset]])` and `relTime(t)`.
pub(super) fn time(a: &Args, relative: bool) -> Value {
    if a.is_empty() && !relative {
        let s = now_secs();
        return Value::AbsTime {
            secs: s,
            offset_secs: local_offset(s),
        };
    }
    if a.is_empty() || a.len() > 2 {
        return Value::Error;
    }
    let v = a.eval(0);
    let mut offset: Option<i32> = None;
    if a.len() == 2 {
        let v2 = a.eval(1);
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
                let off = offset.unwrap_or_else(|| local_offset(i));
                if off == -1 {
                    return a.ctx.fail();
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
                    offset_secs: offset.unwrap_or_else(|| local_offset(i)),
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
                    offset_secs: offset.unwrap_or_else(|| local_offset(i)),
                }
            }
        }
        _ => Value::Error,
    }
}

/// libclassad's convertValueToRealValue: strings through strtod, times as their seconds.
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

/// libclassad's convertValueToIntegerValue: strings through strtod, reals through a C cast.
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

/// `to_string_value` of the `i`th argument (a list prints its element expressions).
pub(super) fn arg_string(a: &Args, i: usize) -> Value {
    to_string_value(&a.eval(i))
}
