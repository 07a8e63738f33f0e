//! Expression evaluation: scopes (MY, TARGET, enclosing ads), attribute lookup with a precomputed
//! hash, short-circuit logic, and a depth limit so that self-referential attributes (`a = a + 1`)
//! and deep nesting end in `error` instead of a stack overflow.
pub(crate) mod compiled;
pub mod ops;

use crate::ad::ClassAd;
use crate::expr::{BinOp, Expr, ScopeKw};
use crate::name::Name;
use crate::value::Value;
use std::cell::Cell;
use std::sync::Arc;

/// Maximum evaluation nesting (expression nodes plus attribute indirections).
pub const MAX_EVAL_DEPTH: u32 = 1100;

/// Where an expression is being evaluated.
#[derive(Clone, Copy)]
pub(crate) struct Env<'a> {
    /// The ad the expression belongs to (MY / SELF); its `parent()` chain are the enclosing
    /// ads of a nested ad value.
    pub cur: Option<&'a ClassAd>,
    /// The other ad of a match (TARGET), if any.
    pub target: Option<&'a ClassAd>,
    /// The outermost ad (for `.name`).
    pub root: Option<&'a ClassAd>,
    /// Bare names missing from `cur` and its parents are looked up in `target` (only for the
    /// top-level ads of a match, like libclassad's alternateScope).
    pub alternate: bool,
}

/// How many attribute evaluations in progress are remembered for cycle detection (deeper
/// chains still stop at [`MAX_EVAL_DEPTH`]).
const ACTIVE: usize = 16;

/// Per-evaluation state shared by all frames.
pub(crate) struct Ctx {
    depth: Cell<u32>,
    /// Set when evaluation "fails" in libclassad's sense (a cycle, a bad call that makes the
    /// reference's Evaluate return false): the whole result is then `error`.
    failed: Cell<bool>,
    /// Addresses of the attribute expressions being evaluated: meeting one again is a cycle
    /// (`a = a + 1`), which evaluates to `error` at once, like the reference's failure.
    active: [Cell<usize>; ACTIVE],
    n_active: Cell<usize>,
}

impl Ctx {
    pub fn new() -> Self {
        Ctx {
            depth: Cell::new(0),
            failed: Cell::new(false),
            active: Default::default(),
            n_active: Cell::new(0),
        }
    }

    /// Record a hard failure and return `error`.
    pub fn fail(&self) -> Value {
        self.failed.set(true);
        Value::Error
    }
    pub fn failed(&self) -> bool {
        self.failed.get()
    }
    pub fn set_failed(&self, f: bool) {
        self.failed.set(f)
    }

    /// The final result of an evaluation: `error` after a hard failure.
    pub fn finish(&self, v: Value) -> Value {
        if self.failed.get() {
            Value::Error
        } else {
            v
        }
    }
}

impl<'a> Env<'a> {
    pub fn top(my: Option<&'a ClassAd>, target: Option<&'a ClassAd>) -> Self {
        Env {
            cur: my,
            target,
            root: my,
            alternate: target.is_some(),
        }
    }
}

/// Evaluate `e` with `my` as MY and `target` as TARGET; bare names missing from MY are looked
/// up in TARGET when there is one (the matchmaking rule).
pub fn eval_in(e: &Expr, my: Option<&ClassAd>, target: Option<&ClassAd>) -> Value {
    let ctx = Ctx::new();
    let v = eval(&ctx, Env::top(my, target), e);
    ctx.finish(v)
}

/// Evaluate attribute `name` of `ad` (with `target` as TARGET); a name the ad lacks is
/// looked up as a bare reference would be (special names, TARGET).
pub fn eval_attr(ad: &ClassAd, target: Option<&ClassAd>, name: &str) -> Value {
    let ctx = Ctx::new();
    let v = match ad.lookup(name) {
        Some(e) => eval(&ctx, Env::top(Some(ad), target), e),
        None => {
            // Same rules as a bare reference (special names, TARGET fallback).
            let n = Name::new(name);
            lookup_bare(&ctx, Env::top(Some(ad), target), &n)
        }
    };
    ctx.finish(v)
}

/// Evaluate an attribute of `ad` found by the caller, in a scope where `ad` is current.
#[inline]
fn eval_found<'a>(ctx: &Ctx, env: Env<'a>, e: &Expr) -> Value {
    if let Expr::Lit(v) = e {
        return v.clone();
    }
    let key = e as *const Expr as usize;
    let n = ctx.n_active.get();
    for slot in &ctx.active[..n.min(ACTIVE)] {
        if slot.get() == key {
            return ctx.fail();
        }
    }
    if n < ACTIVE {
        ctx.active[n].set(key);
    }
    ctx.n_active.set(n + 1);
    let v = eval(ctx, env, e);
    ctx.n_active.set(n);
    v
}

/// Evaluate `e` in `env`.
pub(crate) fn eval(ctx: &Ctx, env: Env<'_>, e: &Expr) -> Value {
    let d = ctx.depth.get();
    if d >= MAX_EVAL_DEPTH {
        return ctx.fail();
    }
    ctx.depth.set(d + 1);
    // Deep expressions and attribute chains grow the stack on demand instead of overflowing.
    let v = if d % 16 == 15 {
        stacker::maybe_grow(256 * 1024, 2 * 1024 * 1024, || eval_inner(ctx, env, e))
    } else {
        eval_inner(ctx, env, e)
    };
    ctx.depth.set(d);
    v
}

fn eval_inner(ctx: &Ctx, env: Env<'_>, e: &Expr) -> Value {
    match e {
        Expr::Lit(v) => v.clone(),
        Expr::RelTimeLit(r) => Value::Real(*r),
        Expr::OldAbsTimeLit { secs, .. } => Value::AbsTime {
            secs: *secs,
            offset_secs: 0,
        },
        Expr::Attr(n) => lookup_bare(ctx, env, n),
        Expr::Scoped(kw, _, n) => lookup_scoped(ctx, env, *kw, n),
        Expr::Paren(a) => eval(ctx, env, a),
        Expr::Binary(op, a, b) => eval_binary(ctx, env, *op, a, b),
        Expr::Unary(op, a) => ops::unary(*op, eval(ctx, env, a)),
        Expr::Cond(c, m, x) => {
            let cv = eval(ctx, env, c);
            match m {
                Some(m) => match ops::bool_equiv(&cv) {
                    Some(true) => eval(ctx, env, m),
                    Some(false) => eval(ctx, env, x),
                    None => {
                        // libclassad evaluates both branches before it finds the condition
                        // is not a truth value (their values are dropped; a failure in
                        // either fails the whole evaluation).
                        eval(ctx, env, m);
                        eval(ctx, env, x);
                        match cv {
                            Value::Undefined => Value::Undefined,
                            _ => Value::Error,
                        }
                    }
                },
                None => match cv {
                    Value::Undefined => eval(ctx, env, x),
                    other => other,
                },
            }
        }
        // In a match the outermost scope is the match ad itself, which holds none of these.
        Expr::Abs(_) if env.target.is_some() => Value::Undefined,
        Expr::Abs(n) => match env.root {
            Some(root) => match root.lookup_name(n) {
                Some(found) => {
                    let inner = Env {
                        cur: Some(root),
                        alternate: env.alternate && root.parent().is_none(),
                        ..env
                    };
                    eval_found(ctx, inner, found)
                }
                None => Value::Undefined,
            },
            None => ctx.fail(),
        },
        Expr::Select(base, n) => {
            let bv = eval(ctx, env, base);
            select(ctx, env, bv, n)
        }
        Expr::Index(a, b) => {
            let av = eval(ctx, env, a);
            let bv = eval(ctx, env, b);
            if av.is_error() || bv.is_error() {
                return Value::Error;
            }
            if av.is_undefined() || bv.is_undefined() {
                return Value::Undefined;
            }
            match (&av, &bv) {
                (Value::Ad(ad), Value::Str(s))
                    if env
                        .target
                        .is_some_and(|t| ad.same_attrs(t) && ad.parent().is_none()) =>
                {
                    let t = env.target.unwrap_or(ad);
                    match t.lookup(s) {
                        Some(found) => eval_found(ctx, swapped(env, t), found),
                        None => Value::Undefined,
                    }
                }
                (Value::Ad(ad), Value::Str(s)) => match ad.lookup(s) {
                    Some(found) => {
                        let mut e: &Expr = found;
                        while let Expr::Paren(x) = e {
                            e = x;
                        }
                        if let Expr::List(items) = e {
                            // libclassad hands out the list unevaluated and its elements are
                            // later evaluated with no scope at all.
                            let bare = Env {
                                cur: None,
                                target: None,
                                root: None,
                                alternate: false,
                            };
                            return Value::List(Arc::new(
                                items.iter().map(|x| eval(ctx, bare, x)).collect(),
                            ));
                        }
                        let inner = Env {
                            cur: Some(ad),
                            root: Some(outermost(ad)),
                            alternate: false,
                            ..env
                        };
                        match eval_found(ctx, inner, found) {
                            Value::Ad(x) => Value::Ad(Arc::new(x.detached_copy())),
                            other => other,
                        }
                    }
                    None => Value::Undefined,
                },
                (Value::List(l), Value::Int(i)) => {
                    // The reference reads the index as a C int.
                    let i = *i as i32 as i64;
                    if i < 0 || i >= l.len() as i64 {
                        Value::Error
                    } else {
                        l[i as usize].clone()
                    }
                }
                _ => Value::Error,
            }
        }
        Expr::Call(c) => crate::builtins::call(ctx, env, c),
        // libclassad evaluates list elements lazily, one at a time: a failure inside one element
        // makes only that element an error.
        Expr::List(items) => Value::List(Arc::new(
            items
                .iter()
                .map(|x| {
                    let saved = ctx.failed();
                    ctx.set_failed(false);
                    let v = eval(ctx, env, x);
                    let v = if ctx.failed() { Value::Error } else { v };
                    ctx.set_failed(saved);
                    v
                })
                .collect(),
        )),
        // A nested ad value remembers the ad it was written in as its enclosing scope.
        Expr::Ad(ad) => match env.cur {
            Some(cur) => Value::Ad(Arc::new(ad.with_parent(Some(Arc::new(cur.clone()))))),
            None => Value::Ad(ad.clone()),
        },
    }
}

/// A value either borrowed from a literal (no copy, no reference counting) or computed.
enum VRef<'a> {
    B(&'a Value),
    O(Value),
}

impl VRef<'_> {
    #[inline]
    fn get(&self) -> &Value {
        match self {
            VRef::B(v) => v,
            VRef::O(v) => v,
        }
    }
}

/// Evaluate for an operator: literals, and attributes whose expression is a literal (the
/// common case in real ads), are borrowed instead of cloned.
#[inline]
fn eval_ref<'a>(ctx: &Ctx, env: Env<'a>, e: &'a Expr) -> VRef<'a> {
    match e {
        Expr::Lit(v) => return VRef::B(v),
        Expr::Scoped(ScopeKw::Target, _, n) => {
            if let Some(t) = env.target {
                if let Some(found) = t.lookup_name(n) {
                    if let Expr::Lit(v) = &**found {
                        return VRef::B(v);
                    }
                }
            }
        }
        Expr::Scoped(ScopeKw::My, _, n) | Expr::Attr(n) => {
            if let Some(c) = env.cur {
                if let Some(found) = c.lookup_name(n) {
                    if let Expr::Lit(v) = &**found {
                        return VRef::B(v);
                    }
                }
            }
        }
        Expr::Paren(x) => return eval_ref(ctx, env, x),
        _ => {}
    }
    VRef::O(eval(ctx, env, e))
}

#[inline]
fn eval_binary(ctx: &Ctx, env: Env<'_>, op: BinOp, a: &Expr, b: &Expr) -> Value {
    let av = eval_ref(ctx, env, a);
    match op {
        BinOp::And => {
            if ops::bool_equiv(av.get()) == Some(false) {
                return Value::Bool(false);
            }
            let bv = eval_ref(ctx, env, b);
            ops::logical(op, av.get(), bv.get())
        }
        BinOp::Or => {
            if ops::bool_equiv(av.get()) == Some(true) {
                return Value::Bool(true);
            }
            let bv = eval_ref(ctx, env, b);
            ops::logical(op, av.get(), bv.get())
        }
        BinOp::Is | BinOp::Isnt => {
            let bv = eval_ref(ctx, env, b);
            if let (Value::List(_), Value::List(_)) = (av.get(), bv.get()) {
                if let (Some(x), Some(y)) = (list_kind(a), list_kind(b)) {
                    if x != y {
                        return Value::Bool(op == BinOp::Isnt);
                    }
                }
            }
            ops::binary(op, av.get(), bv.get())
        }
        _ => {
            let bv = eval_ref(ctx, env, b);
            ops::binary(op, av.get(), bv.get())
        }
    }
}

/// Which of libclassad's two list value types an operand's list has, when the expression shows
/// it: a list literal is a LIST_VALUE, a list made by split()/argsToList()/... is a shared
/// SLIST_VALUE. `is` compares value types first, so a literal list `is` a function-made list
/// is false (two lists of the same type are error). `None`: not known from the syntax (e.g.
/// through an attribute); the operands are then compared as lists (error).
fn list_kind(e: &Expr) -> Option<bool> {
    use crate::builtins::Builtin as B;
    match e {
        Expr::Paren(x) => list_kind(x),
        Expr::List(_) => Some(false),
        Expr::Call(c) => match c.func {
            Some(
                B::Split
                | B::SplitUserName
                | B::SplitSlotName
                | B::ArgsToList
                | B::EvalInEachContext,
            ) => Some(true),
            _ => None,
        },
        _ => None,
    }
}

/// `base.name` where base evaluated to `bv`.
fn select(ctx: &Ctx, env: Env<'_>, bv: Value, n: &Name) -> Value {
    match bv {
        Value::Undefined => Value::Undefined,
        Value::Ad(ad) if ad.is_detached() => Value::Undefined,
        Value::Ad(ad) => lookup_in_ad(ctx, env, &ad, n),
        Value::List(l) => {
            let out: Vec<Value> = l
                .iter()
                .map(|item| select(ctx, env, item.clone(), n))
                .collect();
            Value::List(Arc::new(out))
        }
        _ => Value::Error,
    }
}

/// The outermost enclosing ad of `ad`.
fn outermost(ad: &ClassAd) -> &ClassAd {
    let mut a = ad;
    while let Some(p) = a.parent() {
        a = p;
    }
    a
}

/// Look `n` up in ad `ad` and its enclosing ads (`expr.name` on an ad value).
fn lookup_in_ad(ctx: &Ctx, env: Env<'_>, ad: &ClassAd, n: &Name) -> Value {
    // The TARGET ad itself (e.g. `TARGET["x"]` after `TARGET` became a value): roles swap.
    if let Some(t) = env.target {
        if ad.same_attrs(t) && ad.parent().is_none() {
            return match t.lookup_name(n) {
                Some(found) => eval_found(ctx, swapped(env, t), found),
                None => special_in(env, ad, n).unwrap_or(Value::Undefined),
            };
        }
    }
    if let Some(root) = env.root {
        if ad.same_attrs(root) && ad.parent().is_none() {
            return match root.lookup_name(n) {
                Some(found) => eval_found(
                    ctx,
                    Env {
                        cur: Some(root),
                        ..env
                    },
                    found,
                ),
                None => special_in(env, ad, n).unwrap_or(Value::Undefined),
            };
        }
    }
    let mut a = Some(ad);
    while let Some(cur) = a {
        if let Some(found) = cur.lookup_name(n) {
            let inner = Env {
                cur: Some(cur),
                root: Some(outermost(ad)),
                alternate: false,
                ..env
            };
            return eval_found(ctx, inner, found);
        }
        a = cur.parent();
    }
    special_in(env, ad, n).unwrap_or(Value::Undefined)
}

/// `ad.TARGET`, `ad.MY`, `ad.PARENT`: scope names resolved from inside `ad`.
fn special_in(env: Env<'_>, ad: &ClassAd, n: &Name) -> Option<Value> {
    let s = n.as_str();
    if s.len() > 6 || s.len() < 2 {
        return None;
    }
    if n.is("target") {
        let t = env.target?;
        // Seen from the target ad, TARGET is our own top-level ad.
        if ad.same_attrs(t) {
            return env.root.map(ad_value);
        }
        return Some(ad_value(t));
    }
    if n.is("my") || n.is("self") {
        return Some(Value::Ad(Arc::new(ad.clone())));
    }
    if n.is("parent") {
        return Some(ad.parent().map(ad_value).unwrap_or(Value::Undefined));
    }
    None
}

/// `MY.x`, `TARGET.x`, `PARENT.x`.
#[inline]
fn lookup_scoped(ctx: &Ctx, env: Env<'_>, kw: ScopeKw, n: &Name) -> Value {
    match kw {
        ScopeKw::My => match env.cur {
            Some(cur) => lookup_in_ad(
                ctx,
                Env {
                    alternate: env.alternate,
                    ..env
                },
                cur,
                n,
            ),
            None => Value::Undefined,
        },
        ScopeKw::Target => match env.target {
            Some(t) => match t.lookup_name(n) {
                Some(found) => eval_found(ctx, swapped(env, t), found),
                None => special_in(env, t, n).unwrap_or(Value::Undefined),
            },
            None => Value::Undefined,
        },
        ScopeKw::Parent => match env.cur.and_then(|c| c.parent()) {
            Some(p) => lookup_in_ad(ctx, env, p, n),
            None => Value::Undefined,
        },
    }
}

/// The environment for evaluating an attribute that lives in the target ad: roles swap.
#[inline]
fn swapped<'a>(env: Env<'a>, t: &'a ClassAd) -> Env<'a> {
    // MY of the target side is the target; its TARGET is our top-level ad.
    let my_top = env.root;
    Env {
        cur: Some(t),
        target: my_top,
        root: Some(t),
        alternate: true,
    }
}

/// A bare name: current ad, enclosing ads, special names, then (matchmaking) TARGET.
fn lookup_bare(ctx: &Ctx, env: Env<'_>, n: &Name) -> Value {
    let mut a = env.cur;
    let mut first = true;
    while let Some(cur) = a {
        if let Some(found) = cur.lookup_name(n) {
            // Found in an enclosing ad: evaluation continues there; the TARGET fallback applies
            // again when that is a top-level ad of the match.
            let alternate = if first {
                env.alternate
            } else {
                env.target.is_some() && cur.parent().is_none()
            };
            return eval_found(
                ctx,
                Env {
                    cur: Some(cur),
                    alternate,
                    ..env
                },
                found,
            );
        }
        first = false;
        a = cur.parent();
    }
    if let Some(v) = special_name(env, n) {
        return v;
    }
    if env.alternate {
        if let Some(t) = env.target {
            if let Some(found) = t.lookup_name(n) {
                return eval_found(ctx, swapped(env, t), found);
            }
        }
    }
    Value::Undefined
}

fn ad_value(ad: &ClassAd) -> Value {
    Value::Ad(Arc::new(ad.clone()))
}

/// MY/SELF, TARGET, PARENT, ROOT/TOPLEVEL and CurrentTime used as plain names.
fn special_name(env: Env<'_>, n: &Name) -> Option<Value> {
    let s = n.as_str();
    if s.len() > 11 || s.len() < 2 {
        return None;
    }
    if n.is("my") || n.is("self") {
        return Some(env.cur.map(ad_value).unwrap_or(Value::Undefined));
    }
    if n.is("target") {
        return Some(env.target.map(ad_value).unwrap_or(Value::Undefined));
    }
    if n.is("parent") {
        return Some(
            env.cur
                .and_then(|c| c.parent())
                .map(ad_value)
                .unwrap_or(Value::Undefined),
        );
    }
    if n.is("root") || n.is("toplevel") {
        return Some(env.root.map(ad_value).unwrap_or(Value::Error));
    }
    if n.is("currenttime") {
        return Some(Value::Int(crate::builtins::time::now_secs()));
    }
    None
}
