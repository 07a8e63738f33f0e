//! Time enters the policy only through `now`: the startd's own expressions read the clock with
//! `time()` (HTCondor 23's defaults: `StateTimer = (time() - EnteredCurrentState)`,
//! `ActivationTimer = ifThenElse(JobStart =!= UNDEFINED, (time() - JobStart), 0)`) and older
//! ones with `CurrentTime`. Each policy expression is rewritten once, when the policy is read, so
//! that `time()` becomes a reference to `CurrentTime`, and the evaluator puts
//! `CurrentTime = now` into the machine ad it evaluates against. The same expression then gives
//! the same answer for the same `now`, which is what lets the state machine be tested exactly.
use classad::expr::Call;
use classad::{Builtin, Expr, Name};

/// The attribute the evaluator sets to `now`.
pub const CURRENT_TIME: &str = "CurrentTime";

/// `e` with every `time()` call replaced by a reference to [`CURRENT_TIME`].
pub fn pin_clock(e: &Expr) -> Expr {
    let mut e = e.clone();
    rewrite(&mut e);
    e
}

fn rewrite(e: &mut Expr) {
    match e {
        Expr::Call(call) => {
            if is_time_call(call) {
                *e = Expr::Attr(Name::new(CURRENT_TIME));
            } else {
                call.args.iter_mut().for_each(rewrite);
            }
        }
        Expr::Select(inner, _) | Expr::Unary(_, inner) | Expr::Paren(inner) => rewrite(inner),
        Expr::Index(a, b) | Expr::Binary(_, a, b) => {
            rewrite(a);
            rewrite(b);
        }
        Expr::Cond(c, then, otherwise) => {
            rewrite(c);
            if let Some(t) = then {
                rewrite(t);
            }
            rewrite(otherwise);
        }
        Expr::List(items) => items.make_mut().iter_mut().for_each(rewrite),
        Expr::Lit(_)
        | Expr::RelTimeLit(_)
        | Expr::OldAbsTimeLit { .. }
        | Expr::Attr(_)
        | Expr::Abs(_)
        | Expr::Scoped(..)
        | Expr::Ad(_) => {}
    }
}

fn is_time_call(call: &Call) -> bool {
    matches!(call.func, Some(Builtin::Time)) && call.args.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use classad::{ClassAd, Value};

    #[test]
    fn time_calls_read_current_time_from_the_ad() {
        let e = classad::parse_expr("(time() - EnteredCurrentState) > 10 && { time() }[0] > 0")
            .unwrap();
        let pinned = pin_clock(&e);
        let mut ad = ClassAd::new();
        ad.insert_int("EnteredCurrentState", 1000);
        ad.insert_int(CURRENT_TIME, 1011);
        assert_eq!(ad.eval_expr(&pinned), Value::Bool(true));
        ad.insert_int(CURRENT_TIME, 1010);
        assert_eq!(ad.eval_expr(&pinned), Value::Bool(false));
    }
}
