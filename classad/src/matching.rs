//! Matchmaking: symmetric match and rank, evaluated the way HTCondor's negotiator does (MY is
//! the ad holding the expression, TARGET the other one, bare names missing from MY fall back to
//! TARGET).
use crate::ad::ClassAd;
use crate::eval::compiled;
use crate::name::Name;
use crate::value::Value;
use std::sync::OnceLock;

pub(crate) fn requirements() -> &'static Name {
    static N: OnceLock<Name> = OnceLock::new();
    N.get_or_init(|| Name::new("Requirements"))
}
pub(crate) fn rank_name() -> &'static Name {
    static N: OnceLock<Name> = OnceLock::new();
    N.get_or_init(|| Name::new("Rank"))
}

/// Does `my.Requirements` evaluate to exactly `true` against `target`?
///
/// Evaluated through `my`'s compiled Requirements (see `eval::compiled`), which gives the
/// interpreter's result.
pub fn matches(my: &ClassAd, target: &ClassAd) -> bool {
    if compiled::applies(my, target) {
        return my.matcher().requirements_true(my, target);
    }
    requirements_value(my, target).is_some_and(|v| v.is_true())
}

/// Both ads' Requirements are exactly true against each other.
pub fn symmetric_match(a: &ClassAd, b: &ClassAd) -> bool {
    matches(a, b) && matches(b, a)
}

/// `my.Rank` against `target` as a float: booleans give 1/0, anything non-numeric 0.0.
pub fn rank(my: &ClassAd, target: &ClassAd) -> f64 {
    if compiled::applies(my, target) {
        return my.matcher().rank_number(my, target);
    }
    rank_value(my, target).map_or(0.0, |v| rank_of(&v))
}

/// A Rank value as a number: booleans give 1/0, anything non-numeric 0.0.
#[inline]
pub(crate) fn rank_of(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Real(r) => *r,
        Value::Bool(true) => 1.0,
        _ => 0.0,
    }
}

/// The value of `my.Requirements` against `target` in a match (None: `my` has none).
pub fn requirements_value(my: &ClassAd, target: &ClassAd) -> Option<Value> {
    if compiled::applies(my, target) {
        return my.matcher().requirements(my, target);
    }
    my.lookup_name(requirements())
        .map(|e| crate::eval::eval_in(e, Some(my), Some(target)))
}

/// The value of `my.Rank` against `target` in a match (None: `my` has none).
pub fn rank_value(my: &ClassAd, target: &ClassAd) -> Option<Value> {
    if compiled::applies(my, target) {
        return my.matcher().rank(my, target);
    }
    my.lookup_name(rank_name())
        .map(|e| crate::eval::eval_in(e, Some(my), Some(target)))
}
