//! Evaluated ClassAd values and how libclassad prints them.
use crate::ad::ClassAd;
use crate::format;
use crate::list::List;
use std::fmt;
use std::sync::Arc;

/// The result of evaluating an expression.
///
/// A list keeps its element expressions, unevaluated, as libclassad's does (see [`List`]).
#[derive(Clone, Debug, Default)]
pub enum Value {
    /// `undefined`: what a missing attribute evaluates to; most operators pass it on.
    #[default]
    Undefined,
    /// `error`: a type mismatch or bad argument; most operators pass it on.
    Error,
    /// `true` or `false`.
    Bool(bool),
    /// A 64-bit integer (libclassad's `long long`).
    Int(i64),
    /// A double.
    Real(f64),
    /// A string (shared: copying a value does not copy the text).
    Str(Arc<str>),
    /// A list (see [`List`]: a literal's element expressions and their scope, or values).
    List(List),
    /// A nested ad.
    Ad(Arc<ClassAd>),
    /// Seconds since the Unix epoch (UTC) and the timezone offset it was written with.
    AbsTime {
        /// Seconds since the Unix epoch.
        secs: i64,
        /// The timezone offset, in seconds east of UTC.
        offset_secs: i32,
    },
    /// Seconds.
    RelTime(f64),
}

impl Value {
    /// A string value copied from `s`.
    pub fn str(s: &str) -> Value {
        Value::Str(Arc::from(s))
    }
    /// A string value taking `s`.
    pub fn string(s: String) -> Value {
        Value::Str(Arc::from(s))
    }
    /// A list value of the given elements.
    pub fn list(v: Vec<Value>) -> Value {
        Value::List(List::new(v))
    }
    /// Whether this is `undefined`.
    pub fn is_undefined(&self) -> bool {
        matches!(self, Value::Undefined)
    }
    /// Whether this is `error`.
    pub fn is_error(&self) -> bool {
        matches!(self, Value::Error)
    }
    /// True only for the boolean `true` (how Requirements are judged).
    pub fn is_true(&self) -> bool {
        matches!(self, Value::Bool(true))
    }
    /// The boolean, if this is one (no conversion from numbers).
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    /// The integer, if this is one (no conversion from reals or booleans).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    /// Integer, real or boolean as a number (what rank and arithmetic accept).
    pub fn as_number(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Real(r) => Some(*r),
            Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            _ => None,
        }
    }
    /// The name libclassad's documentation and `cmctl eval --jsonl` use for the type.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Undefined => "undefined",
            Value::Error => "error",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Real(_) => "real",
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Ad(_) => "classad",
            Value::AbsTime { .. } => "abstime",
            Value::RelTime(_) => "reltime",
        }
    }

    /// Identity as `=?=` sees it: same type and same value, strings case-sensitive.
    pub fn identical(&self, other: &Value) -> bool {
        crate::eval::ops::identical(self, other)
    }
}

impl PartialEq for Value {
    /// Structural identity (`=?=` for scalars, element by element for lists and ads), with NaN
    /// equal to itself so that values can be compared in tests.
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Real(a), Value::Real(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Value::RelTime(a), Value::RelTime(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Ad(a), Value::Ad(b)) => a == b,
            _ => self.identical(other),
        }
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}
impl From<f64> for Value {
    fn from(r: f64) -> Self {
        Value::Real(r)
    }
}
impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::str(s)
    }
}

impl fmt::Display for Value {
    /// Unparse as libclassad's ClassAdUnParser prints a value: reals as `%1.15E`, strings quoted
    /// and escaped, lists `{ a,b }` (a literal's list as its element expressions, unevaluated,
    /// as classad_eval prints it), ads `[ a = 1; b = 2 ]`, times as `absTime("...")`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        format::unparse_value(&mut s, self);
        f.write_str(&s)
    }
}
