//! Operator semantics, following libclassad's Operation::_doOperation and helpers.
use crate::expr::{BinOp, UnOp};
use crate::value::Value;

/// `=?=` identity between two values (same type, same value; strings case-sensitive).
pub fn identical(a: &Value, b: &Value) -> bool {
    match meta_compare(a, b) {
        Value::Bool(x) => x,
        _ => false,
    }
}

/// Bool, int or real as a truth value (libclassad's IsBooleanValueEquiv).
#[inline]
pub fn bool_equiv(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Int(i) => Some(*i != 0),
        Value::Real(r) => Some(*r != 0.0),
        _ => None,
    }
}

/// Apply a prefix operator to a value, as libclassad's Operation does.
pub fn unary(op: UnOp, v: Value) -> Value {
    match op {
        UnOp::Plus => match v {
            Value::Bool(_)
            | Value::Str(_)
            | Value::List(_)
            | Value::Ad(_)
            | Value::AbsTime { .. } => Value::Error,
            other => other,
        },
        UnOp::Minus => match v {
            Value::Error => Value::Error,
            Value::Undefined => Value::Undefined,
            Value::Int(i) => Value::Int(i.wrapping_neg()),
            Value::Real(r) => Value::Real(-r),
            Value::RelTime(r) => Value::RelTime(-r),
            _ => Value::Error,
        },
        UnOp::Not => match v {
            Value::Error => Value::Error,
            Value::Undefined => Value::Undefined,
            other => match bool_equiv(&other) {
                Some(b) => Value::Bool(!b),
                None => Value::Error,
            },
        },
        UnOp::BitNot => match v {
            Value::Error => Value::Error,
            Value::Undefined => Value::Undefined,
            Value::Int(i) => Value::Int(!i),
            _ => Value::Error,
        },
    }
}

/// A comparison of two numbers or two strings, the common case, decided inline; `None`
/// for anything the general rules of [`binary`] must judge (other types, NaN).
#[inline(always)]
pub(crate) fn quick_compare(op: BinOp, a: &Value, b: &Value) -> Option<bool> {
    use std::cmp::Ordering;
    let ord = match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Real(x), Value::Real(y)) => x.partial_cmp(y)?,
        (Value::Int(x), Value::Real(y)) => (*x as f64).partial_cmp(y)?,
        (Value::Real(x), Value::Int(y)) => x.partial_cmp(&(*y as f64))?,
        (Value::Str(x), Value::Str(y)) if matches!(op, BinOp::Eq | BinOp::Ne) => {
            return Some(crate::name::eq_ci(x, y) == (op == BinOp::Eq))
        }
        _ => return None,
    };
    Some(match op {
        BinOp::Lt => ord == Ordering::Less,
        BinOp::Le => ord != Ordering::Greater,
        BinOp::Eq => ord == Ordering::Equal,
        BinOp::Ne => ord != Ordering::Equal,
        BinOp::Ge => ord != Ordering::Less,
        BinOp::Gt => ord == Ordering::Greater,
        _ => return None,
    })
}

/// Strict binary operators (everything except `&&`, `||`, `is`, `isnt`).
pub fn binary(op: BinOp, a: &Value, b: &Value) -> Value {
    // Fast path for the operand types matchmaking meets most (same results as below).
    if let Some(r) = quick_compare(op, a, b) {
        return Value::Bool(r);
    }
    match op {
        BinOp::Is => return meta_compare(a, b),
        BinOp::Isnt => {
            return match meta_compare(a, b) {
                Value::Bool(x) => Value::Bool(!x),
                other => other,
            }
        }
        BinOp::And | BinOp::Or => return logical(op, a, b),
        _ => {}
    }
    if a.is_error() || b.is_error() {
        return Value::Error;
    }
    if a.is_undefined() || b.is_undefined() {
        return Value::Undefined;
    }
    match op {
        BinOp::Lt | BinOp::Le | BinOp::Eq | BinOp::Ne | BinOp::Gt | BinOp::Ge => compare(op, a, b),
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod => arith(op, a, b),
        _ => bitwise(op, a, b),
    }
}

/// Numeric coercion class of two operands (libclassad's coerceToNumber).
enum Class {
    Ad,
    List,
    Str,
    Undef,
    Err,
    Abs,
    Rel,
    Int(i64, i64),
    Real(f64, f64),
}

#[inline]
fn coerce(a: &Value, b: &Value) -> Class {
    use Value::*;
    if matches!(a, Ad(_)) || matches!(b, Ad(_)) {
        return Class::Ad;
    }
    if matches!(a, List(_)) || matches!(b, List(_)) {
        return Class::List;
    }
    if matches!(a, Str(_)) || matches!(b, Str(_)) {
        return Class::Str;
    }
    if a.is_undefined() || b.is_undefined() {
        return Class::Undef;
    }
    if a.is_error() || b.is_error() {
        return Class::Err;
    }
    if matches!(a, AbsTime { .. }) || matches!(b, AbsTime { .. }) {
        return Class::Abs;
    }
    if matches!(a, RelTime(_)) || matches!(b, RelTime(_)) {
        return Class::Rel;
    }
    let num = |v: &Value| -> (Option<i64>, f64) {
        match v {
            Bool(x) => (Some(*x as i64), *x as i64 as f64),
            Int(i) => (Some(*i), *i as f64),
            Real(r) => (None, *r),
            _ => (Some(0), 0.0),
        }
    };
    let (ia, ra) = num(a);
    let (ib, rb) = num(b);
    match (ia, ib) {
        (Some(x), Some(y)) => Class::Int(x, y),
        _ => Class::Real(ra, rb),
    }
}

#[inline]
fn cmp_result<T: PartialOrd>(op: BinOp, x: T, y: T) -> Value {
    Value::Bool(match op {
        BinOp::Lt => x < y,
        BinOp::Le => x <= y,
        BinOp::Eq => x == y,
        BinOp::Ne => x != y,
        BinOp::Gt => x > y,
        BinOp::Ge => x >= y,
        _ => false,
    })
}

/// strcasecmp on bytes (ASCII case folding).
#[inline]
pub fn strcasecmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len().min(b.len());
    for i in 0..n {
        let (x, y) = (a[i].to_ascii_lowercase(), b[i].to_ascii_lowercase());
        if x != y {
            return x.cmp(&y);
        }
    }
    a.len().cmp(&b.len())
}

fn compare(op: BinOp, a: &Value, b: &Value) -> Value {
    match coerce(a, b) {
        Class::Str => match (a, b) {
            (Value::Str(x), Value::Str(y)) => {
                if op == BinOp::Eq || op == BinOp::Ne {
                    let eq = crate::name::eq_ci(x, y);
                    return Value::Bool(eq == (op == BinOp::Eq));
                }
                cmp_result(op, strcasecmp(x, y), std::cmp::Ordering::Equal)
            }
            _ => Value::Error,
        },
        Class::Int(x, y) => cmp_result(op, x, y),
        Class::Real(x, y) => cmp_result(op, x, y),
        Class::Abs => match (a, b) {
            (Value::AbsTime { secs: x, .. }, Value::AbsTime { secs: y, .. }) => {
                cmp_result(op, *x, *y)
            }
            _ => Value::Error,
        },
        Class::Rel => match (a, b) {
            (Value::RelTime(x), Value::RelTime(y)) => cmp_result(op, *x, *y),
            _ => Value::Error,
        },
        Class::Undef => Value::Undefined,
        Class::Err | Class::Ad | Class::List => Value::Error,
    }
}

/// `=?=`: different types are never identical; undefined/error are identical to themselves.
pub fn meta_compare(a: &Value, b: &Value) -> Value {
    use Value::*;
    match (a, b) {
        (Undefined, Undefined) | (Error, Error) => Bool(true),
        (Bool(x), Bool(y)) => Bool(x == y),
        (Int(x), Int(y)) => Bool(x == y),
        (Real(x), Real(y)) => Bool(x == y),
        (Str(x), Str(y)) => Bool(x == y),
        (
            AbsTime {
                secs: s1,
                offset_secs: o1,
            },
            AbsTime {
                secs: s2,
                offset_secs: o2,
            },
        ) => Bool(s1 == s2 && o1 == o2),
        (RelTime(x), RelTime(y)) => Bool(x == y),
        // libclassad has two value types each for lists and ads: a literal's own (LIST_VALUE,
        // CLASSAD_VALUE) and a shared one a function made or a subscript copied (SLIST_VALUE,
        // SCLASSAD_VALUE). Different types are not identical; two of one type are an error.
        (List(x), List(y)) if x.is_shared() != y.is_shared() => Bool(false),
        (Ad(x), Ad(y)) if x.is_detached() != y.is_detached() => Bool(false),
        (List(_), List(_)) | (Ad(_), Ad(_)) => Error,
        _ => Bool(false),
    }
}

fn arith(op: BinOp, a: &Value, b: &Value) -> Value {
    let ok = |v: &Value| {
        matches!(
            v,
            Value::Int(_)
                | Value::Real(_)
                | Value::AbsTime { .. }
                | Value::RelTime(_)
                | Value::Bool(_)
        )
    };
    if !ok(a) || !ok(b) {
        return Value::Error;
    }
    match coerce(a, b) {
        Class::Int(x, y) => match op {
            BinOp::Add => Value::Int(x.wrapping_add(y)),
            BinOp::Sub => Value::Int(x.wrapping_sub(y)),
            BinOp::Mul => Value::Int(x.wrapping_mul(y)),
            BinOp::Div => {
                if x == i64::MIN && y == -1 {
                    Value::Int(i64::MAX)
                } else if y == 0 {
                    Value::Error
                } else {
                    Value::Int(x / y)
                }
            }
            BinOp::Mod => {
                if x == i64::MIN && y == -1 {
                    Value::Int(0)
                } else if y == 0 {
                    Value::Error
                } else {
                    Value::Int(x % y)
                }
            }
            _ => Value::Error,
        },
        Class::Real(x, y) => {
            let r = match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::Div => {
                    // C sets errno=ERANGE? no: division by zero gives inf (error) or nan.
                    x / y
                }
                _ => return Value::Error,
            };
            if r == f64::INFINITY {
                Value::Error
            } else {
                Value::Real(r)
            }
        }
        Class::Abs | Class::Rel => time_arith(op, a, b),
        _ => Value::Error,
    }
}

fn time_arith(op: BinOp, a: &Value, b: &Value) -> Value {
    use Value::*;
    match (op, a, b) {
        (BinOp::Add, AbsTime { secs, offset_secs }, RelTime(r))
        | (BinOp::Add, RelTime(r), AbsTime { secs, offset_secs }) => AbsTime {
            secs: secs.wrapping_add(*r as i32 as i64),
            offset_secs: *offset_secs,
        },
        (BinOp::Add, RelTime(x), RelTime(y)) => RelTime(x + y),
        (BinOp::Sub, AbsTime { secs: x, .. }, AbsTime { secs: y, .. }) => {
            RelTime(x.wrapping_sub(*y) as f64)
        }
        (BinOp::Sub, AbsTime { secs, offset_secs }, RelTime(r)) => AbsTime {
            secs: secs.wrapping_sub(*r as i32 as i64),
            offset_secs: *offset_secs,
        },
        (BinOp::Sub, RelTime(x), RelTime(y)) => RelTime(x - y),
        (BinOp::Mul, RelTime(x), Int(n)) => RelTime(x * *n as f64),
        (BinOp::Div, RelTime(x), Int(n)) => RelTime(x / *n as f64),
        (BinOp::Mul, RelTime(x), Real(n)) => RelTime(x * n),
        (BinOp::Div, RelTime(x), Real(n)) => RelTime(x / n),
        (BinOp::Mul, Int(n), RelTime(x)) => RelTime(*n as f64 * x),
        (BinOp::Mul, Real(n), RelTime(x)) => RelTime(x * n),
        _ => Error,
    }
}

fn bitwise(op: BinOp, a: &Value, b: &Value) -> Value {
    let (Value::Int(x), Value::Int(y)) = (a, b) else {
        return Value::Error;
    };
    let (x, y) = (*x, *y);
    Value::Int(match op {
        BinOp::BitOr => x | y,
        BinOp::BitAnd => x & y,
        BinOp::BitXor => x ^ y,
        BinOp::Shl => x.wrapping_shl(y as u32),
        BinOp::Shr => {
            if x >= 0 {
                x.wrapping_shr(y as u32)
            } else {
                let n = y.min(64);
                let mut v = x;
                let mut i = 0;
                while i < n {
                    v = (v >> 1) | i64::MIN;
                    i += 1;
                }
                v
            }
        }
        BinOp::Ushr => {
            if x >= 0 {
                x.wrapping_shr(y as u32)
            } else {
                let v = (x >> 1) & i64::MAX;
                v.wrapping_shr((y.wrapping_sub(1)) as u32)
            }
        }
        _ => return Value::Error,
    })
}

/// A logical operand after libclassad's conversion: numbers become booleans.
#[derive(Clone, Copy, PartialEq)]
enum Tri {
    T,
    F,
    U,
    E,
}

#[inline]
fn tri(v: &Value) -> Option<Tri> {
    Some(match v {
        Value::Bool(true) => Tri::T,
        Value::Bool(false) => Tri::F,
        Value::Undefined => Tri::U,
        Value::Error => Tri::E,
        Value::Int(i) => {
            if *i != 0 {
                Tri::T
            } else {
                Tri::F
            }
        }
        Value::Real(r) => {
            if *r != 0.0 {
                Tri::T
            } else {
                Tri::F
            }
        }
        _ => return None,
    })
}

#[inline]
fn from_tri(t: Tri) -> Value {
    match t {
        Tri::T => Value::Bool(true),
        Tri::F => Value::Bool(false),
        Tri::U => Value::Undefined,
        Tri::E => Value::Error,
    }
}

/// `&&` / `||` after both sides are known (the short circuit is done by the caller).
pub fn logical(op: BinOp, a: &Value, b: &Value) -> Value {
    if let (Value::Bool(x), Value::Bool(y)) = (a, b) {
        return Value::Bool(if op == BinOp::Or { *x || *y } else { *x && *y });
    }
    let (Some(a), Some(b)) = (tri(a), tri(b)) else {
        return Value::Error;
    };
    let r = if op == BinOp::Or {
        match (a, b) {
            (Tri::T, _) => Tri::T,
            (Tri::E, _) => Tri::E,
            (Tri::F, _) => b,
            (_, Tri::T) => Tri::T,
            (_, Tri::F) => Tri::U,
            _ => b,
        }
    } else {
        match (a, b) {
            (Tri::F, _) => Tri::F,
            (Tri::E, _) => Tri::E,
            (Tri::T, _) => b,
            (_, Tri::F) => Tri::F,
            (_, Tri::T) => Tri::U,
            _ => b,
        }
    };
    from_tri(r)
}
