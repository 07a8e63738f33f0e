//! Mathematical functions: `floor`, `ceil`, `ceiling`, `round`, `pow`, `quantize`, `random`
//! (libclassad's `doRound`, `doMath2` and `random` in src/classad/fnCall.cpp). Results that
//! libclassad takes from a double through a C cast go through the same cast here.
use super::c_number::c_double_to_i64;
use super::conversion::to_real_value;
use super::{Args, Builtin as B};
use crate::value::Value;

/// `floor(x)`, `ceil(x)`, `ceiling(x)` and `round(x)` (halfway cases to even, as rint()): an
/// integer stays as it is, anything else is converted to a real first.
pub(super) fn round(f: B, a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    let v = a.eval(0);
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

/// `pow(base, exponent)`: an integer for integer operands with a non-negative exponent.
pub(super) fn pow(a: &Args) -> Value {
    if a.len() != 2 {
        return Value::Error;
    }
    let (x, y) = (a.eval(0), a.eval(1));
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

/// `quantize(x, step | list)`: `x` rounded up to a multiple of `step`, or the first element of
/// the list not below it.
pub(super) fn quantize(a: &Args) -> Value {
    if a.len() != 2 {
        return Value::Error;
    }
    let arg = a.eval(0);
    let mut arg2 = a.eval(1);
    let Value::Real(rval) = to_real_value(&arg) else {
        return Value::Error;
    };
    let rbase;
    if let Value::List(l) = &arg2 {
        let mut base = Value::Real(0.0);
        let mut rb = 0.0;
        // Each element evaluated in the call's scope, as libclassad does.
        for i in 0..l.len() {
            base = crate::eval::element_in(a.ctx, a.env, l, i);
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

/// `random([max])`: an integer below an integer `max`, a real below a real one (1.0 by
/// default).
pub(super) fn random(a: &Args) -> Value {
    if a.len() > 1 {
        return Value::Error;
    }
    let x = a.eval_or(0, Value::Real(1.0));
    let r = pseudo_random();
    match x {
        Value::Int(i) => {
            let i = i as i32 as i64;
            if i <= 0 {
                return a.ctx.fail();
            }
            Value::Int((r * i as f64) as i64 % i)
        }
        Value::Real(m) => {
            if m <= 0.0 {
                return a.ctx.fail();
            }
            Value::Real(r * m)
        }
        _ => Value::Error,
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

/// The generator behind `random()`: xorshift64 per thread, from a fixed seed (libclassad
/// seeds C's random() once; the values cannot match it anyway).
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
