//! List functions: `member`, `identicalMember`, `size`, `sum`, `avg`, `min`, `max`,
//! `anyCompare`, `allCompare` (libclassad's `testMember`, `size`, `sumAvg`, `minMax` and
//! `listCompare` in src/classad/fnCall.cpp, "useful for lists as sets"). `size` also counts
//! the attributes of an ad and the bytes of a string, as the reference's does.
//!
//! Like libclassad's, they evaluate a list's elements themselves, one at a time and only as far
//! as they need, in the scope of the call (see [`crate::List`]): `member(1, TARGET.L)` looks
//! the names in L's elements up where the call stands.
use super::{Args, Builtin as B};
use crate::eval::{self, ops};
use crate::expr::BinOp;
use crate::list::List;
use crate::value::Value;

/// The elements of `l` as the list functions evaluate them, one at a time: in the call's scope.
fn elements<'x>(a: &'x Args, l: &'x List) -> impl Iterator<Item = Value> + 'x {
    (0..l.len()).map(move |i| eval::element_in(a.ctx, a.env, l, i))
}

/// `member(x, list)` (`==`) and `identicalMember(x, list)` (`is`).
pub(super) fn member(f: B, a: &Args) -> Value {
    if a.len() != 2 {
        return Value::Error;
    }
    let use_is = f == B::IdenticalMember;
    let (x, l) = (a.eval(0), a.eval(1));
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
    for item in elements(a, &l) {
        let r = ops::binary(if use_is { BinOp::Is } else { BinOp::Eq }, &item, &x);
        if r.is_true() {
            return Value::Bool(true);
        }
    }
    Value::Bool(false)
}

/// `size(list | ad | string)`.
pub(super) fn size(a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    match a.eval(0) {
        Value::Undefined => Value::Undefined,
        Value::List(l) => Value::Int(l.len() as i64),
        Value::Ad(ad) => Value::Int(ad.len() as i64),
        Value::Str(s) => Value::Int(s.len() as i64),
        _ => Value::Error,
    }
}

/// `sum(list)` and `avg(list)`.
pub(super) fn sum_avg(f: B, a: &Args) -> Value {
    match only_list_arg(a).and_then(|l| numbers(a, &l)) {
        Ok(nums) => sum_avg_of(f == B::Sum, &nums),
        Err(v) => v,
    }
}

/// `min(list)` and `max(list)`.
pub(super) fn min_max(f: B, a: &Args) -> Value {
    match only_list_arg(a).and_then(|l| numbers(a, &l)) {
        Ok(nums) => min_max_of(f == B::Min, &nums),
        Err(v) => v,
    }
}

/// The one argument of `sum`, `avg`, `min` and `max`, a list; otherwise the call's result.
fn only_list_arg(a: &Args) -> Result<List, Value> {
    if a.len() != 1 {
        return Err(Value::Error);
    }
    list(a.eval(0))
}

/// The defined elements of a list for sum, avg, min and max, which must all be numbers
/// (booleans count as numbers, as in libclassad): evaluated in order up to the first that is
/// not one, which makes the call an error.
fn numbers(a: &Args, l: &List) -> Result<Vec<Value>, Value> {
    let mut out = Vec::with_capacity(l.len());
    for v in elements(a, l) {
        match v {
            Value::Undefined => {}
            Value::Int(_) | Value::Real(_) | Value::Bool(_) => out.push(v),
            _ => return Err(Value::Error),
        }
    }
    Ok(out)
}

/// A list argument; `undefined` gives `undefined`, anything else `error`.
fn list(v: Value) -> Result<List, Value> {
    match v {
        Value::Undefined => Err(Value::Undefined),
        Value::List(l) => Ok(l),
        _ => Err(Value::Error),
    }
}

/// `anyCompare(op, list, x)` and `allCompare(op, list, x)`: `op` is a comparison operator's text.
pub(super) fn compare(f: B, a: &Args) -> Value {
    if a.len() != 3 {
        return Value::Error;
    }
    let op = match a.eval(0) {
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
    let l = match list(a.eval(1)) {
        Ok(l) => l,
        Err(v) => return v,
    };
    let x = a.eval(2);
    let all = f == B::AllCompare;
    for item in elements(a, &l) {
        match ops::binary(op, &item, &x) {
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

/// libclassad's sum()/avg() over the defined elements (all numbers): 0 when there are none.
fn sum_avg_of(only_sum: bool, nums: &[Value]) -> Value {
    let Some(sum) = nums
        .iter()
        .cloned()
        .reduce(|acc, v| ops::binary(BinOp::Add, &acc, &v))
    else {
        return Value::Int(0);
    };
    if only_sum {
        sum
    } else {
        ops::binary(BinOp::Div, &sum, &Value::Real(nums.len() as f64))
    }
}

/// libclassad's comparison of two numbers coerces both in place (bool to int, int to real).
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

/// libclassad's min()/max() over the defined elements (all numbers): undefined when there are
/// none.
fn min_max_of(is_min: bool, nums: &[Value]) -> Value {
    let op = if is_min { BinOp::Lt } else { BinOp::Gt };
    nums.iter()
        .cloned()
        .reduce(|mut best, mut v| {
            // libclassad's comparison coerces both operands in place (bool -> int, int -> real).
            coerce_in_place(&mut v, &mut best);
            if ops::binary(op, &v, &best).is_true() {
                v
            } else {
                best
            }
        })
        .unwrap_or(Value::Undefined)
}
