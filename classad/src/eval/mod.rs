//! Expression evaluation: scopes (MY, TARGET, enclosing ads), attribute lookup with a precomputed
//! hash, short-circuit logic, and a depth limit so that self-referential attributes (`a = a + 1`)
//! and deep nesting end in `error` instead of a stack overflow.
//!
//! The scopes follow libclassad's evaluation state (src/classad/attrrefs.cpp, classad.cpp,
//! exprList.cpp, matchClassad.cpp): a current ad where names are looked up, which moves to the
//! ad holding an attribute while that attribute is evaluated, and the parent scope of each
//! expression, which list and ad literals keep. What a list's elements evaluate to depends on
//! who evaluates them (see [`crate::List`]):
//!
//! * a subscript `l[i]` evaluates the element in the ad the list was written in
//!   (`element_at`);
//! * the functions that take lists evaluate each element in the caller's state
//!   (`element_in`); so does `list.name`, which selects `name` from each element;
//! * `ad["name"]` evaluates in a state of its own and hands lists and ads out as copies with
//!   no scope, which a later subscript reads after libclassad freed them (empty);
//! * `evalInEachContext`, `countMatches` and `unresolved` look a name up without restoring the
//!   current ad (see `Leak`);
//! * a conditional whose condition is not a truth value still evaluates both branches.
pub(crate) mod compiled;
pub mod ops;

use crate::ad::ClassAd;
use crate::expr::{BinOp, Expr, ScopeKw};
use crate::list::{List, Top};
use crate::name::Name;
use crate::value::Value;
use std::cell::Cell;
use std::sync::{Arc, OnceLock};

/// Maximum evaluation nesting (expression nodes plus attribute indirections).
pub const MAX_EVAL_DEPTH: u32 = 1100;

/// The most expression nodes one evaluation may visit before it stops with `error`. The depth
/// limit does not bound the work: `a0 = a1 + a1; a1 = a2 + a2; ...; a60 = 1` is 60 deep and
/// 2^60 nodes long. libclassad has no such limit (it would run for ever); a pool's real
/// expressions visit a few hundred nodes, so this is far out of their way, and it keeps one
/// hostile ad from stopping a collector's query or a negotiation cycle.
pub const MAX_EVAL_STEPS: u64 = 200_000;

/// An evaluation stopped because it visited more nodes than it was allowed
/// ([`MAX_EVAL_STEPS`], or the caller's budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvalLimit {
    /// The node visits allowed.
    pub steps: u64,
}

impl std::fmt::Display for EvalLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "evaluation stopped after {} steps (an expression too expensive to evaluate, \
             e.g. attributes that refer to each other twice over)",
            self.steps
        )
    }
}

impl std::error::Error for EvalLimit {}

/// Every 16 levels of evaluation the stack must have this much left, or evaluation goes on in
/// a new segment of [`STACK_SEGMENT`] bytes: 16 levels of an unoptimised build's frames (an
/// attribute hop is two levels and some ten calls) fit in it.
pub(crate) const STACK_RED_ZONE: usize = 1024 * 1024;
/// See [`STACK_RED_ZONE`].
pub(crate) const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// Where an expression is being evaluated: libclassad's evaluation state (the current ad and
/// the root), the parent scope of the expression itself, and the match.
///
/// libclassad evaluates a match inside a MatchClassAd: MY's parent scope is a context ad
/// holding `target = .RIGHT` (TARGET's holds `target = .LEFT`), both under the match ad, which
/// is the root; MY and TARGET are each other's alternate scope (bare names missing from one
/// are looked up in the other). Here the match is `left`/`right`, and what an ad sees of it is
/// derived from whether its chain of enclosing ads reaches MY or TARGET (see [`Env::enter`]).
#[derive(Clone, Copy)]
pub(crate) struct Env<'a> {
    /// The current ad (libclassad's `state.curAd`), where names are looked up; `None` when
    /// there is none (a list copied out of its ad: its names resolve nowhere).
    pub cur: Option<&'a ClassAd>,
    /// The ad the expression being evaluated was written in (its parent scope): list and ad
    /// literals remember it as theirs. The same as `cur` except when a function evaluates the
    /// elements of a list written elsewhere in its own scope.
    pub lex: Option<&'a ClassAd>,
    /// TARGET as seen from `cur`: the other ad of the match when `cur` is MY, TARGET or an ad
    /// inside either; `None` otherwise.
    pub target: Option<&'a ClassAd>,
    /// Bare names missing from `cur` and its enclosing ads are looked up in `target`
    /// (libclassad's alternateScope, which only the match's own two ads have).
    pub alternate: bool,
    /// The outermost scope (`.name` looks there); `None` in a match is the match ad (see
    /// [`match_ad`]), which holds none of the names expressions use.
    pub root: Option<&'a ClassAd>,
    /// The match's two ads (`None` outside a match).
    pub pair: Option<&'a Pair<'a>>,
}

/// The two ads of a match: MY of the evaluation (libclassad's LEFT) and TARGET (RIGHT).
pub(crate) struct Pair<'a> {
    pub left: &'a ClassAd,
    pub right: &'a ClassAd,
}

impl<'a> Pair<'a> {
    /// The match of `my` and `target`, when both are given.
    pub fn of(my: Option<&'a ClassAd>, target: Option<&'a ClassAd>) -> Option<Pair<'a>> {
        Some(Pair {
            left: my?,
            right: target?,
        })
    }
}

/// The match ad (libclassad's MatchClassAd), the root of a match: it holds none of the names
/// expressions use, so `.name` there is undefined and an evaluation state left at it (see
/// [`Leak`]) resolves nothing.
pub(crate) fn match_ad() -> &'static ClassAd {
    static M: OnceLock<ClassAd> = OnceLock::new();
    M.get_or_init(ClassAd::new)
}

/// How many attribute evaluations in progress are remembered for cycle detection (deeper
/// chains still stop at [`MAX_EVAL_DEPTH`]).
const ACTIVE: usize = 16;

/// Where a function left the evaluation state's current ad. libclassad's
/// `AttributeReference::Deref` (used by `evalInEachContext`, `countMatches` and `unresolved`)
/// looks a name up in the caller's state without restoring its current ad, which stays where
/// the lookup stopped (the ad holding the name, or the match ad when nothing does) for the rest
/// of the enclosing attribute's evaluation: `countMatches(Undefined, L) + A` then looks `A` up
/// from the match ad.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Leak {
    No,
    /// The match ad.
    Match,
    /// MY of the match.
    Left,
    /// TARGET of the match.
    Right,
}

/// Per-evaluation state shared by all frames.
pub(crate) struct Ctx {
    depth: Cell<u32>,
    /// Expression nodes visited so far, and how many may be.
    steps: Cell<u64>,
    limit: u64,
    /// Set when evaluation "fails" in libclassad's sense (a cycle, a bad call that makes the
    /// reference's Evaluate return false): the whole result is then `error`.
    failed: Cell<bool>,
    /// Addresses of the attribute expressions being evaluated: meeting one again is a cycle
    /// (`a = a + 1`), which evaluates to `error` at once, like the reference's failure.
    active: [Cell<usize>; ACTIVE],
    n_active: Cell<usize>,
    /// Where a function left the current ad (see [`Leak`]).
    leak: Cell<Leak>,
}

impl Ctx {
    pub fn new() -> Self {
        Ctx::with_limit(MAX_EVAL_STEPS)
    }

    /// A state that stops after `limit` node visits.
    pub fn with_limit(limit: u64) -> Self {
        Ctx {
            depth: Cell::new(0),
            steps: Cell::new(0),
            limit,
            failed: Cell::new(false),
            active: Default::default(),
            n_active: Cell::new(0),
            leak: Cell::new(Leak::No),
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

    /// The node visits so far, and whether the limit stopped the evaluation.
    pub fn steps(&self) -> (u64, bool) {
        let s = self.steps.get();
        (s, s > self.limit)
    }

    /// The final result of an evaluation: `error` after a hard failure.
    pub fn finish(&self, v: Value) -> Value {
        if self.failed.get() {
            Value::Error
        } else {
            v
        }
    }

    /// Moves the current ad for the rest of the enclosing attribute's evaluation.
    pub fn set_leak(&self, l: Leak) {
        self.leak.set(l)
    }

    /// Evaluates `f` in a new evaluation state (an attribute's expression, a list element in
    /// its own scope, a fresh state): a current ad moved before does not apply inside, and
    /// one moved inside does not survive it.
    #[inline]
    fn scoped<R>(&self, f: impl FnOnce() -> R) -> R {
        let saved = self.leak.replace(Leak::No);
        let r = f();
        self.leak.set(saved);
        r
    }

    /// Evaluates `f` where libclassad ignores a failure (a subscript's element, an
    /// `ad["name"]` lookup, userHome's arguments): a failure inside is `error` there and fails
    /// nothing else.
    pub fn isolated(&self, f: impl FnOnce() -> Value) -> Value {
        let saved = self.failed.replace(false);
        let v = f();
        let v = if self.failed.get() { Value::Error } else { v };
        self.failed.set(saved);
        v
    }
}

/// The outermost enclosing ad of `ad`.
pub(crate) fn outermost(ad: &ClassAd) -> &ClassAd {
    let mut a = ad;
    while let Some(p) = a.parent() {
        a = p;
    }
    a
}

impl<'a> Env<'a> {
    /// The state libclassad's Python binding evaluates in: MY as the current ad and the
    /// expression's parent scope, in the match `pair` (of MY and TARGET) when there is one.
    pub fn top(my: Option<&'a ClassAd>, pair: Option<&'a Pair<'a>>) -> Self {
        let target = pair.map(|p| p.right);
        Env {
            cur: my,
            lex: my,
            target,
            alternate: target.is_some(),
            root: match target {
                Some(_) => None,
                None => my.map(outermost),
            },
            pair,
        }
    }

    /// MY of the match.
    #[inline]
    pub fn left(&self) -> Option<&'a ClassAd> {
        self.pair.map(|p| p.left)
    }

    /// TARGET of the match (`None` outside one).
    #[inline]
    pub fn right(&self) -> Option<&'a ClassAd> {
        self.pair.map(|p| p.right)
    }

    /// Which ad of the match `x` is in (true: MY, false: TARGET); `None` outside a match or
    /// for an ad outside both (a copy, an ad a function made, the match ad).
    #[inline]
    fn side(&self, x: &ClassAd) -> Option<bool> {
        let p = self.pair?;
        let (l, r) = (p.left, p.right);
        let mut a = Some(x);
        while let Some(c) = a {
            if c.is_detached() {
                return None;
            }
            if c.same_attrs(l) {
                return Some(true);
            }
            if c.same_attrs(r) {
                return Some(false);
            }
            a = c.parent();
        }
        None
    }

    /// The state for evaluating an expression that ad `x` holds (where a lookup found it):
    /// `x` current and the expression's scope; TARGET is the other ad of the match when `x`
    /// is in one of them, and the bare-name fallback applies to the match's own two ads.
    #[inline]
    pub fn enter(self, x: &'a ClassAd) -> Env<'a> {
        if self.cur.is_some_and(|c| std::ptr::eq(c, x)) {
            return Env {
                lex: Some(x),
                ..self
            };
        }
        let (target, alternate) = match self.side(x) {
            Some(is_left) => {
                let top = if is_left { self.left() } else { self.right() };
                let other = if is_left { self.right() } else { self.left() };
                let own = top.is_some_and(|t| {
                    std::ptr::eq(t, x)
                        || (t.same_attrs(x) && x.parent().is_none() == t.parent().is_none())
                });
                (other, own)
            }
            None => (None, false),
        };
        Env {
            cur: Some(x),
            lex: Some(x),
            target,
            alternate,
            ..self
        }
    }

    /// A new evaluation state at `x` (libclassad's `EvalState::SetScopes(x)`): `x` entered,
    /// the root the outermost scope (the match ad for an ad in the match).
    pub fn fresh(self, x: &'a ClassAd) -> Env<'a> {
        let root = if self.side(x).is_some() {
            None
        } else {
            Some(outermost(x))
        };
        Env {
            root,
            ..self.enter(x)
        }
    }

    /// The root ad: the match ad in a match (see `root`).
    fn root_ad(&self) -> Option<&'a ClassAd> {
        match self.root {
            Some(r) => Some(r),
            None if self.pair.is_some() => Some(match_ad()),
            None => None,
        }
    }

    /// The state a list element is evaluated in by a subscript (GetValueAt): the list's own
    /// scope current, the rest of the caller's state kept.
    pub fn at_scope(self, scope: Option<&'a ClassAd>) -> Env<'a> {
        match scope {
            Some(x) => self.enter(x),
            None => Env {
                cur: None,
                lex: None,
                target: None,
                alternate: false,
                ..self
            },
        }
    }

    /// This state with the current ad moved as `l` says (see [`Leak`]).
    fn leaked(self, l: Leak) -> Env<'a> {
        let to = match l {
            Leak::No => return self,
            Leak::Left => self.left(),
            Leak::Right => self.right(),
            Leak::Match => None,
        };
        match to {
            Some(x) => Env {
                lex: self.lex,
                ..self.enter(x)
            },
            None => Env {
                cur: Some(match_ad()),
                target: None,
                alternate: false,
                ..self
            },
        }
    }
}

/// Evaluate `e` with `my` as MY and `target` as TARGET; bare names missing from MY are looked
/// up in TARGET when there is one (the matchmaking rule).
pub fn eval_in(e: &Expr, my: Option<&ClassAd>, target: Option<&ClassAd>) -> Value {
    let ctx = Ctx::new();
    let pair = Pair::of(my, target);
    let v = eval(&ctx, Env::top(my, pair.as_ref()), e);
    result(ctx.finish(v), my, target)
}

/// [`eval_in`] within `budget` node visits (at most [`MAX_EVAL_STEPS`]), taking what it used
/// from the budget: a collector evaluating a constraint over many ads under a lock bounds the
/// whole query, not only each ad.
pub fn eval_in_budget(
    e: &Expr,
    my: Option<&ClassAd>,
    target: Option<&ClassAd>,
    budget: &mut u64,
) -> Result<Value, EvalLimit> {
    let limit = (*budget).min(MAX_EVAL_STEPS);
    let ctx = Ctx::with_limit(limit);
    let pair = Pair::of(my, target);
    let v = eval(&ctx, Env::top(my, pair.as_ref()), e);
    let (steps, stopped) = ctx.steps();
    *budget = budget.saturating_sub(steps);
    if stopped {
        return Err(EvalLimit { steps: limit });
    }
    Ok(result(ctx.finish(v), my, target))
}

/// Evaluate attribute `name` of `ad` (with `target` as TARGET); a name the ad lacks is
/// looked up as a bare reference would be (special names, TARGET).
pub fn eval_attr(ad: &ClassAd, target: Option<&ClassAd>, name: &str) -> Value {
    let ctx = Ctx::new();
    let pair = Pair::of(Some(ad), target);
    let env = Env::top(Some(ad), pair.as_ref());
    let v = match ad.lookup(name) {
        Some(e) => eval(&ctx, env, e),
        None => {
            // Same rules as a bare reference (special names, TARGET).
            let n = Name::new(name);
            lookup_bare(&ctx, env, &n)
        }
    };
    result(ctx.finish(v), Some(ad), target)
}

/// A value as the public API gives it out: a list remembers the evaluation it came from, to
/// evaluate its elements there when asked (see [`List::values`]).
#[inline]
pub(crate) fn result(v: Value, my: Option<&ClassAd>, target: Option<&ClassAd>) -> Value {
    match &v {
        Value::List(l) => list_result(l, my, target),
        _ => v,
    }
}

#[cold]
fn list_result(l: &List, my: Option<&ClassAd>, target: Option<&ClassAd>) -> Value {
    if !l.needs_top() {
        return Value::List(l.clone());
    }
    let top = Arc::new(Top {
        my: my.cloned(),
        target: target.cloned(),
    });
    Value::List(l.with_top(&top))
}

/// The value of one element of a list given out by the public API: as the subscript `(l)[i]`
/// evaluates it at the top of the evaluation `top` (in the list's own scope).
pub(crate) fn element_value(e: &Expr, scope: Option<&ClassAd>, top: Option<&Arc<Top>>) -> Value {
    let ctx = Ctx::new();
    let pair = top.and_then(|t| Pair::of(t.my.as_ref(), t.target.as_ref()));
    let env = match top {
        Some(t) => Env::top(t.my.as_ref(), pair.as_ref()).at_scope(scope),
        None => Env::top(scope, None),
    };
    let v = ctx.finish(eval(&ctx, env, e));
    match top {
        Some(t) => crate::list::with_top(&v, t),
        None => v,
    }
}

/// Element `i` of `l` as a subscript evaluates it (libclassad's `ExprList::GetValueAt`): in
/// the scope the list was written in, with the rest of the caller's state; a failure there is
/// only this element's `error`.
pub(crate) fn element_at(ctx: &Ctx, env: Env<'_>, l: &List, i: usize) -> Value {
    match l.exprs() {
        None => l.read(i).clone(),
        Some(x) => {
            let inner = env.at_scope(x.scope.as_ref());
            let v = ctx.scoped(|| ctx.isolated(|| eval(ctx, inner, &x.items[i])));
            l.as_read(&x.items[i], v)
        }
    }
}

/// Element `i` of `l` as the list functions evaluate it (`member`, `sum`, `join`, ...): in the
/// caller's state, so its names are looked up where the call stands; list and ad literals in
/// it still belong to the list's scope.
pub(crate) fn element_in(ctx: &Ctx, env: Env<'_>, l: &List, i: usize) -> Value {
    match l.exprs() {
        None => l.given(i).clone(),
        Some(x) => eval(
            ctx,
            Env {
                lex: x.scope.as_ref(),
                ..env
            },
            &x.items[i],
        ),
    }
}

/// Evaluates `f` in a new evaluation state (libclassad's temporary EvalState): the current ad
/// moved outside does not apply, one moved inside does not escape, and a failure inside is
/// only an `error` result.
pub(crate) fn in_new_state(ctx: &Ctx, f: impl FnOnce() -> Value) -> Value {
    ctx.scoped(|| ctx.isolated(f))
}

/// Evaluate an attribute of an ad found by the caller, in `env` (see [`Env::enter`]).
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
    let v = ctx.scoped(|| eval(ctx, env, e));
    ctx.n_active.set(n);
    v
}

/// Evaluate `e` in `env`.
#[inline]
pub(crate) fn eval(ctx: &Ctx, env: Env<'_>, e: &Expr) -> Value {
    let leak = ctx.leak.get();
    if leak != Leak::No {
        return eval_leaked(ctx, env, e, leak);
    }
    eval_here(ctx, env, e)
}

/// [`eval`] after a function moved the current ad (see [`Leak`]).
#[cold]
#[inline(never)]
fn eval_leaked(ctx: &Ctx, env: Env<'_>, e: &Expr, leak: Leak) -> Value {
    eval_here(ctx, env.leaked(leak), e)
}

/// [`eval`] in `env` as it is: the depth limit, then the node.
fn eval_here(ctx: &Ctx, env: Env<'_>, e: &Expr) -> Value {
    let d = ctx.depth.get();
    let s = ctx.steps.get() + 1;
    ctx.steps.set(s);
    if d >= MAX_EVAL_DEPTH || s > ctx.limit {
        return ctx.fail();
    }
    ctx.depth.set(d + 1);
    // Deep expressions and attribute chains grow the stack on demand instead of overflowing.
    let v = if d % 16 == 15 {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || eval_inner(ctx, env, e))
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
        // `.name`: looked up in the root (in a match, the match ad, which holds none).
        Expr::Abs(n) => match env.root {
            Some(root) => match root.lookup_name(n) {
                Some(found) => eval_found(ctx, env.enter(root), found),
                None => Value::Undefined,
            },
            None if env.pair.is_some() => Value::Undefined,
            None => ctx.fail(),
        },
        Expr::Select(base, n) => {
            let bv = eval(ctx, env, base);
            select(ctx, env, bv, n)
        }
        Expr::Index(a, b) => {
            let av = eval(ctx, env, a);
            let bv = eval(ctx, env, b);
            subscript(ctx, env, av, bv)
        }
        Expr::Call(c) => crate::builtins::call(ctx, env, c),
        // A list literal's value is its element expressions, evaluated when used (see
        // `List`), and it belongs to the ad it was written in.
        Expr::List(items) => Value::List(List::of_exprs(items.clone(), env.lex.cloned(), false)),
        // A nested ad value is the ad itself, enclosed by the ad it was written in.
        Expr::Ad(ad) => match env.lex {
            Some(lex) => Value::Ad(Arc::new(ad.with_parent(Some(Arc::new(lex.clone()))))),
            None => Value::Ad(ad.clone()),
        },
    }
}

/// `a[b]` on the two operands' values.
fn subscript(ctx: &Ctx, env: Env<'_>, av: Value, bv: Value) -> Value {
    if av.is_error() || bv.is_error() {
        return Value::Error;
    }
    if av.is_undefined() || bv.is_undefined() {
        return Value::Undefined;
    }
    match (&av, &bv) {
        // libclassad's ClassAd::EvaluateAttr: only the ad's own attributes; evaluated in a
        // state of its own (a failure there is an error here, nothing more), and a list or ad
        // comes out as a copy with no scope (Value::SafetyCheck).
        (Value::Ad(ad), Value::Str(s)) => match ad.lookup(s) {
            Some(found) => {
                let inner = env.fresh(ad);
                let v = ctx.scoped(|| ctx.isolated(|| eval_found(ctx, inner, found)));
                copied_out(v)
            }
            None => Value::Undefined,
        },
        (Value::List(l), Value::Int(i)) => {
            // The reference reads the index as a C int.
            let i = *i as i32 as i64;
            if i < 0 || i >= l.len() as i64 {
                Value::Error
            } else {
                element_at(ctx, env, l, i as usize)
            }
        }
        _ => Value::Error,
    }
}

/// A value as `ad["name"]` hands it out: lists and ads copied, with no scope.
pub(crate) fn copied_out(v: Value) -> Value {
    match v {
        Value::List(l) => Value::List(l.copied_out()),
        Value::Ad(ad) if !ad.is_detached() => Value::Ad(Arc::new(ad.detached_copy())),
        other => other,
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
    if ctx.leak.get() != Leak::No {
        return VRef::O(eval(ctx, env, e));
    }
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
        _ => {
            let bv = eval_ref(ctx, env, b);
            ops::binary(op, av.get(), bv.get())
        }
    }
}

/// `base.name` where base evaluated to `bv`.
fn select(ctx: &Ctx, env: Env<'_>, bv: Value, n: &Name) -> Value {
    match bv {
        Value::Undefined => Value::Undefined,
        // libclassad reads such a copy after freeing it: undefined there.
        Value::Ad(ad) if ad.is_detached() => Value::Undefined,
        Value::Ad(ad) => lookup_from(ctx, env, &ad, n),
        Value::List(l) => select_each(ctx, env, &l, n),
        _ => Value::Error,
    }
}

/// `list.name`: libclassad selects `name` from each element in a new evaluation state at the
/// caller's current ad (AttributeReference::FindExpr), so each element is evaluated there, in
/// its own scope; the results make a new list.
fn select_each(ctx: &Ctx, env: Env<'_>, l: &List, n: &Name) -> Value {
    // A list that contains itself selects forever (libclassad overflows its stack): counted
    // as evaluation depth here, it ends in a failure.
    let d = ctx.depth.get();
    if d >= MAX_EVAL_DEPTH {
        return ctx.fail();
    }
    ctx.depth.set(d + 1);
    let v = stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
        select_each_in(ctx, env, l, n)
    });
    ctx.depth.set(d);
    v
}

fn select_each_in(ctx: &Ctx, env: Env<'_>, l: &List, n: &Name) -> Value {
    let inner = match env.cur {
        Some(c) => env.fresh(c),
        None => Env { root: None, ..env },
    };
    let out: Vec<Value> = (0..l.len())
        .map(|i| {
            ctx.scoped(|| {
                let item = element_in(ctx, inner, l, i);
                unscoped(&select(ctx, inner, item, n))
            })
        })
        .collect();
    Value::List(List::of_values(out, false))
}

/// A value as libclassad stores it in a list it makes (`list.name`): lists and ads copied
/// with no parent scope any more (the new list's SetParentScope(nullptr) reaches them), other
/// values as literals (see [`literal_of`]).
fn unscoped(v: &Value) -> Value {
    match v {
        // A copy of its own (of a copy that `ad["name"]` handed out too, which is then no
        // longer the freed one).
        Value::Ad(ad) => Value::Ad(Arc::new(ad.with_parent(None))),
        Value::List(l) => match l.exprs() {
            Some(x) => Value::List(List::of_exprs(x.items.clone(), None, false)),
            None => v.clone(),
        },
        other => literal_of(other),
    }
}

/// What a value reads as once libclassad has made it a literal (Literal::MakeLiteral): a
/// relative time becomes a ReltimeLiteral of whole seconds, which evaluates to a real.
pub(crate) fn literal_of(v: &Value) -> Value {
    match v {
        Value::RelTime(r) => Value::Real(*r as i64 as f64),
        other => other.clone(),
    }
}

/// Look `n` up from ad `start` (libclassad's LookupInScope): the ad's own attributes, then the
/// special names, then its enclosing ads; at the top of MY or TARGET, the match's context ads
/// hold `target` and `other`.
fn lookup_from(ctx: &Ctx, env: Env<'_>, start: &ClassAd, n: &Name) -> Value {
    if let Some(v) = lookup_chain(ctx, env, start, n) {
        return v;
    }
    match env.side(start) {
        Some(is_left) => match_context_name(env, is_left, n).unwrap_or(Value::Undefined),
        None => Value::Undefined,
    }
}

/// The ad `start`'s own attribute `n`, a special name, or the attribute of an enclosing ad, as
/// [`lookup_from`] finds them (`None`: none of those).
fn lookup_chain(ctx: &Ctx, env: Env<'_>, start: &ClassAd, n: &Name) -> Option<Value> {
    if let Some(found) = start.lookup_name(n) {
        return Some(eval_found(ctx, env.enter(start), found));
    }
    if let Some(v) = special_at(env, start, n) {
        return Some(v);
    }
    let mut a = start.parent();
    while let Some(x) = a {
        if let Some(found) = x.lookup_name(n) {
            return Some(eval_found(ctx, env.enter(x), found));
        }
        a = x.parent();
    }
    None
}

/// The names the match's context ads hold (`[other = .RIGHT; target = .RIGHT; my = .LEFT; ad =
/// .LEFT]` above MY, the other way round above TARGET), reached when a lookup leaves MY or
/// TARGET (`my` is resolved before, as a special name).
fn match_context_name(env: Env<'_>, is_left: bool, n: &Name) -> Option<Value> {
    let s = n.as_str();
    if s.len() != 2 && s.len() != 5 && s.len() != 6 {
        return None;
    }
    let (own, other) = if is_left {
        (env.left(), env.right())
    } else {
        (env.right(), env.left())
    };
    if n.is("target") || n.is("other") {
        return Some(other.map(ad_value).unwrap_or(Value::Undefined));
    }
    if n.is("ad") {
        return Some(own.map(ad_value).unwrap_or(Value::Undefined));
    }
    None
}

/// The special names libclassad resolves at the ad a lookup starts from, when it lacks them:
/// MY/SELF (that ad), PARENT (its enclosing ad), ROOT/TOPLEVEL (the root), CurrentTime.
fn special_at(env: Env<'_>, ad: &ClassAd, n: &Name) -> Option<Value> {
    let s = n.as_str();
    if s.len() > 11 || s.len() < 2 {
        return None;
    }
    if n.is("my") || n.is("self") {
        return Some(ad_value(ad));
    }
    if n.is("parent") {
        return Some(ad.parent().map(ad_value).unwrap_or(Value::Undefined));
    }
    if n.is("root") || n.is("toplevel") {
        return Some(env.root_ad().map(ad_value).unwrap_or(Value::Error));
    }
    if n.is("currenttime") {
        return Some(Value::Int(crate::builtins::time::now_secs()));
    }
    None
}

/// `MY.x`, `TARGET.x`, `PARENT.x`.
#[inline]
fn lookup_scoped(ctx: &Ctx, env: Env<'_>, kw: ScopeKw, n: &Name) -> Value {
    let start = match kw {
        ScopeKw::My => env.cur,
        ScopeKw::Target => env.target,
        ScopeKw::Parent => env.cur.and_then(|c| c.parent()),
    };
    match start {
        Some(a) => lookup_from(ctx, env, a, n),
        None => Value::Undefined,
    }
}

/// A bare name: the current ad, the special names, the enclosing ads, the match's context
/// ads, then (for MY and TARGET themselves) the other ad of the match.
fn lookup_bare(ctx: &Ctx, env: Env<'_>, n: &Name) -> Value {
    let Some(cur) = env.cur else {
        return Value::Undefined;
    };
    if let Some(v) = lookup_chain(ctx, env, cur, n) {
        return v;
    }
    if let Some(t) = env.target {
        let is_left = env.side(cur) == Some(true);
        if let Some(v) = match_context_name(env, is_left, n) {
            return v;
        }
        if env.alternate {
            if let Some(found) = t.lookup_name(n) {
                return eval_found(ctx, env.enter(t), found);
            }
        }
    }
    Value::Undefined
}

fn ad_value(ad: &ClassAd) -> Value {
    Value::Ad(Arc::new(ad.clone()))
}

/// What [`deref()`] found: the expression an attribute reference names and the ad holding it.
pub(crate) struct Found {
    pub expr: Arc<Expr>,
    pub ad: ClassAd,
}

/// libclassad's `AttributeReference::Deref`, which `evalInEachContext`, `countMatches` and
/// `unresolved` use: the expression an attribute reference (`x`, `MY.x`, `TARGET.x`,
/// `PARENT.x`, `.x`, `e.x`) names, without evaluating it. Like libclassad's, the lookup leaves
/// the evaluation state's current ad where it stopped (see [`Leak`]): at the ad holding the
/// name, or, when no ad does, at the match ad (a lookup from MY or TARGET goes up through the
/// match's context ads to it).
pub(crate) fn deref(ctx: &Ctx, env: Env<'_>, e: &Expr) -> Option<Found> {
    let mut e = e;
    while let Expr::Paren(x) = e {
        e = x;
    }
    let holder;
    let (start, n, alternate): (Option<&ClassAd>, &Name, bool) = match e {
        Expr::Attr(n) => (env.cur, n, env.alternate),
        Expr::Scoped(ScopeKw::My, _, n) => (env.cur, n, false),
        Expr::Scoped(ScopeKw::Target, _, n) => (env.target, n, false),
        Expr::Scoped(ScopeKw::Parent, _, n) => (env.cur.and_then(|c| c.parent()), n, false),
        Expr::Abs(n) => (env.root_ad(), n, false),
        Expr::Select(base, n) => match eval(ctx, env, base) {
            Value::Ad(ad) if !ad.is_detached() => {
                holder = ad;
                (Some(&*holder), n, false)
            }
            _ => return None,
        },
        _ => return None,
    };
    // A reference whose scope is undefined stops before any lookup: nothing moves.
    let start = start?;
    let moved_to = |x: &ClassAd| {
        if env.cur.is_some_and(|c| std::ptr::eq(c, x)) {
            return;
        }
        let own = |t: Option<&ClassAd>| {
            t.is_some_and(|t| t.same_attrs(x) && x.parent().is_none() && !x.is_detached())
        };
        if own(env.left()) {
            ctx.set_leak(Leak::Left);
        } else if own(env.right()) {
            ctx.set_leak(Leak::Right);
        }
    };
    let mut a = Some(start);
    while let Some(x) = a {
        if let Some(found) = x.lookup_name(n) {
            moved_to(x);
            return Some(Found {
                expr: found.clone(),
                ad: x.clone(),
            });
        }
        if std::ptr::eq(x, start) && is_special(n) {
            // Resolved to an ad rather than an expression: nothing to dereference.
            return None;
        }
        a = x.parent();
    }
    if alternate {
        if let Some(t) = env.target {
            if let Some(found) = t.lookup_name(n) {
                moved_to(t);
                return Some(Found {
                    expr: found.clone(),
                    ad: t.clone(),
                });
            }
        }
    }
    if env.side(start).is_some() || std::ptr::eq(start, match_ad()) {
        ctx.set_leak(Leak::Match);
    }
    None
}

/// The names libclassad resolves specially where a lookup starts.
fn is_special(n: &Name) -> bool {
    ["my", "self", "parent", "root", "toplevel", "currenttime"]
        .iter()
        .any(|s| n.is(s))
}
