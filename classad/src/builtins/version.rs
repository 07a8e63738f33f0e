//! Version comparison: `versioncmp`, `versionLE`, `versionLT`, `versionGE`, `versionGT`,
//! `versionEQ`, `version_in_range` (libclassad's `compareVersion` and `versionInRange` in
//! src/classad/fnCall.cpp, on its `natural_cmp`, a strverscmp(3)-like ordering where digit
//! runs compare as numbers). A group of its own in the reference's function table.
use super::conversion::to_string_value;
use super::{Args, Builtin as B};
use crate::value::Value;

/// `versioncmp(a, b)` and the `versionXX(a, b)` predicates.
pub(super) fn compare(f: B, call_name: &str, a: &Args) -> Value {
    if a.len() != 2 {
        return Value::Error;
    }
    let (x, y) = (a.eval(0), a.eval(1));
    if x.is_undefined() || y.is_undefined() {
        return Value::Undefined;
    }
    let (Value::Str(a), Value::Str(b)) = (to_string_value(&x), to_string_value(&y)) else {
        return Value::Error;
    };
    let c = version_cmp(&a, &b);
    // The reference dispatches these with a case-sensitive name compare.
    if f != B::VersionCmp && f.name() != call_name {
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

/// `version_in_range(v, lo, hi)`: `lo <= v <= hi` in version order.
pub(super) fn in_range(a: &Args) -> Value {
    if a.len() != 3 {
        return Value::Error;
    }
    let (x, lo, hi) = (a.eval(0), a.eval(1), a.eval(2));
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
