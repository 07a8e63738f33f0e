//! Matchmaking: symmetric match and rank, evaluated the way HTCondor's negotiator does (MY is
//! the ad holding the expression, TARGET the other one, bare names missing from MY fall back to
//! TARGET).
use crate::ad::ClassAd;
use crate::name::Name;
use crate::value::Value;
use std::sync::OnceLock;

fn requirements() -> &'static Name {
    static N: OnceLock<Name> = OnceLock::new();
    N.get_or_init(|| Name::new("Requirements"))
}
fn rank_name() -> &'static Name {
    static N: OnceLock<Name> = OnceLock::new();
    N.get_or_init(|| Name::new("Rank"))
}

/// Does `my.Requirements` evaluate to exactly `true` against `target`?
pub fn matches(my: &ClassAd, target: &ClassAd) -> bool {
    match my.lookup_name(requirements()) {
        Some(e) => crate::eval::eval_in(e, Some(my), Some(target)).is_true(),
        None => false,
    }
}

/// Both ads' Requirements are exactly true against each other.
pub fn symmetric_match(a: &ClassAd, b: &ClassAd) -> bool {
    matches(a, b) && matches(b, a)
}

/// `my.Rank` against `target` as a float: booleans give 1/0, anything non-numeric 0.0.
pub fn rank(my: &ClassAd, target: &ClassAd) -> f64 {
    match my.lookup_name(rank_name()) {
        Some(e) => match crate::eval::eval_in(e, Some(my), Some(target)) {
            Value::Int(i) => i as f64,
            Value::Real(r) => r,
            Value::Bool(b) => {
                if b {
                    1.0
                } else {
                    0.0
                }
            }
            _ => 0.0,
        },
        None => 0.0,
    }
}
