//! Functions about expressions rather than values: `ifThenElse`, `eval`, `unparse`,
//! `unresolved`, `debug`. libclassad's table (src/classad/fnCall.cpp) lists `ifThenElse` and
//! `eval` "for compatibility with old classads", `unparse` as the one that turns an expression
//! into a string "but does not evaluate it", and `debug` last; what they share is that they
//! look at their argument expressions themselves (evaluate one branch only, parse a string,
//! print or walk an unevaluated expression).
use super::conversion::to_string_value;
use super::Args;
use crate::ad::ClassAd;
use crate::eval::{self, ops, Ctx, Env};
use crate::expr::Expr;
use crate::format;
use crate::name::Name;
use crate::value::Value;

/// `ifThenElse(cond, then, else)`: evaluates only the branch it returns.
pub(super) fn if_then_else(a: &Args) -> Value {
    if a.len() != 3 {
        return Value::Error;
    }
    let c = a.eval(0);
    let b = match c {
        Value::Bool(b) => b,
        Value::Int(i) => i != 0,
        Value::Real(r) => r != 0.0,
        Value::Undefined => return Value::Undefined,
        _ => return Value::Error,
    };
    if b {
        a.eval(1)
    } else {
        a.eval(2)
    }
}

/// `eval(s)`: parse the string as an expression and evaluate it where the call stands.
pub(super) fn eval(a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    let Value::Str(s) = to_string_value(&a.eval(0)) else {
        return Value::Error;
    };
    // The parsed expression's parent scope is the current ad (libclassad sets it so).
    match crate::parser::parse_expr(&s) {
        Ok(e) => eval::eval(
            a.ctx,
            Env {
                lex: a.env.cur,
                ..a.env
            },
            &e,
        ),
        Err(_) => Value::Error,
    }
}

/// `unparse(attr)`: the attribute's expression as PrettyPrint prints it, unevaluated.
pub(super) fn unparse(a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    let Expr::Attr(name) = a.expr(0) else {
        // Only plain attribute references are allowed; MY.x etc. unparse to a name that
        // is then not found.
        return match a.expr(0) {
            Expr::Scoped(..) | Expr::Select(..) | Expr::Abs(_) => Value::str(""),
            _ => Value::Error,
        };
    };
    let mut s = String::new();
    if let Some(cur) = a.env.cur {
        if let Some(e) = cur.lookup_name(name) {
            format::unparse_expr_pretty(&mut s, e);
        }
    }
    Value::string(s)
}

/// `debug(x)`: `x` (libclassad also logs the evaluation; there is no log here).
pub(super) fn debug(a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    a.eval(0)
}

/// `unresolved(attr[, regex])`: the attribute names the referenced expression needs that
/// cannot be found (following resolvable references), as libclassad's external references.
pub(super) fn unresolved(a: &Args) -> Value {
    let (ctx, env) = (a.ctx, a.env);
    if a.is_empty() || a.len() > 2 {
        return Value::Error;
    }
    if !matches!(
        a.expr(0),
        Expr::Attr(_) | Expr::Abs(_) | Expr::Scoped(..) | Expr::Select(..)
    ) {
        return Value::Error;
    }
    // Dereference the argument without evaluating it (which, as in libclassad, leaves the
    // current ad where the lookup stopped: see `eval::deref`).
    let Some(found) = eval::deref(ctx, env, a.expr(0)) else {
        return Value::Undefined;
    };
    let (expr, home) = (found.expr.clone(), &found.ad);
    let re = if a.len() == 2 {
        match a.eval(1) {
            Value::Str(p) => match regex::RegexBuilder::new(&p).case_insensitive(true).build() {
                Ok(r) => Some(r),
                Err(_) => return Value::Error,
            },
            _ => return Value::Error,
        }
    } else {
        None
    };
    let mut refs: Vec<String> = Vec::new();
    let walker = RefWalker {
        ctx,
        env: env.enter(home),
    };
    let ok = walker.walk(&expr, home, &mut refs, 0);
    refs.sort_by(|x, y| ops::strcasecmp(x, y));
    refs.dedup_by(|x, y| x.eq_ignore_ascii_case(y));
    let names: Vec<&str> = if ok {
        refs.iter()
            .map(|r| {
                if r.len() >= 7 && r[..7].eq_ignore_ascii_case("target.") {
                    &r[7..]
                } else {
                    &r[..]
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    match re {
        Some(re) => Value::Bool(names.iter().any(|n| !n.is_empty() && re.is_match(n))),
        None => Value::string(names.join(",")),
    }
}

/// Collects the names an expression needs that nothing defines, following the references
/// that resolve (libclassad's external-reference walk behind `unresolved()`).
struct RefWalker<'c, 'a> {
    ctx: &'c Ctx,
    env: Env<'a>,
}

impl<'c, 'a> RefWalker<'c, 'a> {
    fn walk(&self, e: &Expr, cur: &ClassAd, refs: &mut Vec<String>, depth: u32) -> bool {
        if depth > 200 {
            return false;
        }
        let d = depth + 1;
        match e {
            Expr::Lit(_) | Expr::RelTimeLit(_) | Expr::OldAbsTimeLit { .. } => true,
            Expr::Attr(n) => {
                if let Some((found, c)) = cur.lookup_enclosing(n) {
                    return self.walk(found, c, refs, d);
                }
                if n.is("my") || n.is("self") {
                    return self.walk_ad(cur, refs, d);
                }
                refs.push(n.as_str().to_string());
                true
            }
            Expr::Abs(n) => match self
                .env
                .root
                .and_then(|r| r.lookup_name(n).map(|e| (e.clone(), r)))
            {
                Some((found, r)) => self.walk(&found, r, refs, d),
                None => {
                    refs.push(n.as_str().to_string());
                    true
                }
            },
            Expr::Scoped(kw, prefix, n) => {
                let base = match kw {
                    crate::ScopeKw::My => Some(cur),
                    crate::ScopeKw::Target => self.env.target,
                    crate::ScopeKw::Parent => cur.parent(),
                };
                match base {
                    None => {
                        refs.push(format!("{}.{}", prefix.as_str(), n.as_str()));
                        true
                    }
                    Some(b) => self.walk_found(b, n, refs, d),
                }
            }
            Expr::Select(base, n) => {
                let env = Env {
                    cur: Some(cur),
                    ..self.env
                };
                match eval::eval(self.ctx, env, base) {
                    Value::Undefined => {
                        refs.push(format!("{}.{}", base, n.as_str()));
                        true
                    }
                    Value::Ad(ad) => self.walk_found(&ad, n, refs, d),
                    _ => false,
                }
            }
            Expr::Index(x, y) | Expr::Binary(_, x, y) => {
                self.walk(x, cur, refs, d) && self.walk(y, cur, refs, d)
            }
            Expr::Unary(_, x) | Expr::Paren(x) => self.walk(x, cur, refs, d),
            Expr::Cond(c, m, x) => {
                self.walk(c, cur, refs, d)
                    && m.as_ref().is_none_or(|m| self.walk(m, cur, refs, d))
                    && self.walk(x, cur, refs, d)
            }
            Expr::Call(c) => c.args.iter().all(|x| self.walk(x, cur, refs, d)),
            Expr::List(l) => l.iter().all(|x| self.walk(x, cur, refs, d)),
            Expr::Ad(ad) => ad
                .entries()
                .iter()
                .all(|a| self.walk(&a.expr, cur, refs, d)),
        }
    }

    /// Walk the expression `n` names in `ad` or its enclosing ads; a name found nowhere is an
    /// unresolved reference.
    fn walk_found(&self, ad: &ClassAd, n: &Name, refs: &mut Vec<String>, d: u32) -> bool {
        match ad.lookup_enclosing(n) {
            Some((found, c)) => self.walk(found, c, refs, d),
            None => {
                refs.push(n.as_str().to_string());
                true
            }
        }
    }

    fn walk_ad(&self, ad: &ClassAd, refs: &mut Vec<String>, d: u32) -> bool {
        ad.entries().iter().all(|a| self.walk(&a.expr, ad, refs, d))
    }
}
