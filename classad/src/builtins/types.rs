//! Type predicates: `isUndefined`, `isError`, `isString`, `isInteger`, `isReal`, `isList`,
//! `isClassAd`, `isBoolean`, `isAbsTime`, `isRelTime`. libclassad registers all ten on one
//! function, `isType` in src/classad/fnCall.cpp, which reads the wanted type from the name it
//! was called by; here the resolved [`Builtin`] carries it.
use super::{Args, Builtin};
use crate::value::Value;

/// True when the one argument evaluates to the type the function is named for.
pub(super) fn is_type(f: Builtin, a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    let v = a.eval(0);
    Value::Bool(match f {
        Builtin::IsUndefined => matches!(v, Value::Undefined),
        Builtin::IsError => matches!(v, Value::Error),
        Builtin::IsString => matches!(v, Value::Str(_)),
        Builtin::IsInteger => matches!(v, Value::Int(_)),
        Builtin::IsReal => matches!(v, Value::Real(_)),
        Builtin::IsList => matches!(v, Value::List(_)),
        Builtin::IsClassAd => matches!(v, Value::Ad(_)),
        Builtin::IsBoolean => matches!(v, Value::Bool(_)),
        Builtin::IsAbsTime => matches!(v, Value::AbsTime { .. }),
        _ => matches!(v, Value::RelTime(_)),
    })
}
