//! Compiled matchmaking expressions: an ad's `Requirements` and `Rank`, specialised once for
//! that ad and then evaluated against many candidate ads.
//!
//! Matchmaking evaluates the same two expressions of one ad against thousands of others. The
//! tree interpreter pays, for every candidate, the lookups of the ad's own attributes (a job's
//! `RequestMemory`, a slot's `START`, `WithinResourceLimits`, `MY.Cpus`...), the parentheses and
//! the depth bookkeeping of every node. Compiling against the ad does that work once:
//!
//! * references to the ad's own attributes whose value is a literal become constants, and
//!   attributes holding an expression are compiled in place;
//! * constant subexpressions are folded (`MY.Cpus > 0` on a slot with 4 cpus is `true`);
//! * references to the other ad (`TARGET.x`, and bare names the ad does not have, which
//!   matchmaking looks up in the target) stay lookups;
//! * anything else (function calls, selections, subscripts, lists, nested ads, special names)
//!   is handed to the interpreter unchanged.
//!
//! The result is the interpreter's, exactly: every operator goes through the same `ops`
//! functions, short circuits are the same, and before entering the interpreter the evaluation
//! depth is set to what the interpreter itself would have reached at that node (so its depth
//! limit and cycle detection behave identically). The tests below and
//! `classad/tests/compiled.rs` (every generated differential case as Requirements and Rank)
//! check this; the `matching` fuzz target asserts it.
use super::{
    eval, eval_found, ops, Ctx, Env, ACTIVE, MAX_EVAL_DEPTH, STACK_RED_ZONE, STACK_SEGMENT,
};
use crate::ad::ClassAd;
use crate::expr::{BinOp, Expr, ScopeKw, UnOp};
use crate::name::{eq_ci, Name};
use crate::value::Value;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

static UNDEFINED: Value = Value::Undefined;
static FALSE: Value = Value::Bool(false);
static TRUE: Value = Value::Bool(true);

/// How deep compilation goes (nodes and inlined attributes) before it leaves the rest to the
/// interpreter: far below the interpreter's own limit, so compiled nodes never reach it.
const MAX_COMPILE_DEPTH: u32 = 200;

/// How many nodes one compiled expression may hold before the rest is left to the interpreter
/// (which bounds its own work): inlining `a0 = a1 + a1; a1 = a2 + a2; ...` doubles at every
/// level, so depth alone does not bound the size.
const MAX_COMPILE_NODES: u32 = 5000;

/// A compiled expression node.
#[derive(Debug)]
enum Node {
    Const(Value),
    /// A name looked up in the target ad: `TARGET.name`, or a bare name that the compiled ad
    /// does not have (matchmaking's fallback). Missing: undefined. `depth` is the interpreter's
    /// depth when it evaluates the attribute found.
    Target {
        name: TargetName,
        depth: u32,
    },
    /// Evaluated by the interpreter, starting at `depth`.
    Interp {
        expr: Box<Expr>,
        depth: u32,
    },
    Binary(BinOp, Box<Node>, Box<Node>),
    /// `((a && b) && c) && ...`: a left-nested chain of `&&` (or of `||`), evaluated left to
    /// right exactly as the nested binary nodes would be, without the recursion.
    Chain(BinOp, Vec<Node>),
    Unary(UnOp, Box<Node>),
    Cond(Box<Node>, Option<Box<Node>>, Box<Node>),
    /// An attribute of the compiled ad compiled in place, registered as being evaluated while
    /// it is (the interpreter's cycle detection, see `eval_found`); `key` is the address of
    /// the attribute's expression in the ad, which the matcher's ad keeps alive.
    Attr {
        key: usize,
        inner: Box<Node>,
    },
}

/// A name looked up in target ads, with the position where it was found last: ads of one
/// pool list their attributes in the same order (one startd configuration, one collector
/// cache), so the next target usually has it at the same index, which is checked before
/// the hash table is probed. A hint only: a wrong guess costs one comparison.
#[derive(Debug)]
struct TargetName {
    name: Name,
    guess: AtomicU32,
}

impl TargetName {
    fn new(name: &Name) -> Self {
        TargetName {
            name: name.clone(),
            guess: AtomicU32::new(0),
        }
    }

    #[inline(always)]
    fn lookup<'a>(&self, t: &'a ClassAd) -> Option<&'a Arc<Expr>> {
        let guess = self.guess.load(Ordering::Relaxed) as usize;
        if let Some(a) = t.entries().get(guess) {
            if a.name.hash() == self.name.hash() && eq_ci(a.name.as_str(), self.name.as_str()) {
                return Some(&a.expr);
            }
        }
        let (i, a) = t.find_attr(&self.name)?;
        if let Ok(i) = u32::try_from(i) {
            self.guess.store(i, Ordering::Relaxed);
        }
        Some(&a.expr)
    }
}

/// An ad's compiled `Requirements` and `Rank` (None: the ad has no such attribute).
#[derive(Debug)]
pub(crate) struct Matcher {
    requirements: Option<Node>,
    rank: Option<Node>,
}

impl Matcher {
    /// Compiles `ad`'s Requirements and Rank against `ad` itself (a top-level ad).
    pub(crate) fn compile(ad: &ClassAd) -> Matcher {
        let mut c = Compiler {
            ad,
            inlining: Vec::new(),
            nesting: 0,
            nodes: 0,
        };
        // `matches`/`rank` evaluate these from the top (`eval_in`): depth 0, through `eval`.
        let requirements = ad
            .lookup_name(crate::matching::requirements())
            .map(|e| c.compile_top(e));
        let rank = ad
            .lookup_name(crate::matching::rank_name())
            .map(|e| c.compile_top(e));
        Matcher { requirements, rank }
    }

    /// `Requirements` of `my` (the ad this was compiled from) against `target`; `None` when
    /// the ad has none.
    pub(crate) fn requirements(&self, my: &ClassAd, target: &ClassAd) -> Option<Value> {
        self.requirements.as_ref().map(|n| run_top(n, my, target))
    }

    /// Whether `Requirements` of `my` is exactly `true` against `target` (what `matches`
    /// asks, without copying the value out).
    pub(crate) fn requirements_true(&self, my: &ClassAd, target: &ClassAd) -> bool {
        self.requirements
            .as_ref()
            .is_some_and(|n| run_top_with(n, my, target, |v, ctx| v.is_true() && !ctx.failed()))
    }

    /// `Rank` of `my` against `target` as a number (`matching::rank`): booleans 1 or 0,
    /// anything that is not a number 0, as is an ad without one.
    pub(crate) fn rank_number(&self, my: &ClassAd, target: &ClassAd) -> f64 {
        self.rank.as_ref().map_or(0.0, |n| {
            run_top_with(n, my, target, |v, ctx| {
                if ctx.failed() {
                    0.0
                } else {
                    crate::matching::rank_of(v)
                }
            })
        })
    }

    /// `Rank` of `my` against `target`; `None` when the ad has none.
    pub(crate) fn rank(&self, my: &ClassAd, target: &ClassAd) -> Option<Value> {
        self.rank.as_ref().map(|n| run_top(n, my, target))
    }
}

/// A value as `&&` and `||` see it: numbers are truth values, and anything else that is not
/// undefined or error makes the operation an error.
#[derive(Clone, Copy, PartialEq)]
enum Truth {
    T,
    F,
    U,
    E,
    Other,
}

#[inline]
fn truth(v: &Value) -> Truth {
    match ops::bool_equiv(v) {
        Some(true) => Truth::T,
        Some(false) => Truth::F,
        None => match v {
            Value::Undefined => Truth::U,
            Value::Error => Truth::E,
            _ => Truth::Other,
        },
    }
}

/// `a || b` (`or`) or `a && b` as `ops::logical` has them, for a left operand that did not
/// end the chain (not true for `||`, not false for `&&`).
#[inline]
fn combine(or: bool, a: Truth, b: Truth) -> Truth {
    use Truth::*;
    if a == Other || b == Other {
        return E;
    }
    // The value that decides `||` (true) / `&&` (false) whatever the other side is.
    let (win, lose) = if or { (T, F) } else { (F, T) };
    match a {
        E => E,
        x if x == lose => b,
        // a is undefined
        _ if b == win => win,
        _ if b == lose => U,
        _ => b,
    }
}

/// The value of a compiled expression of `my` against `target`, as `eval_in` gives it.
fn run_top(n: &Node, my: &ClassAd, target: &ClassAd) -> Value {
    run_top_with(n, my, target, |v, ctx| {
        super::result(ctx.finish(v.clone()), Some(my), Some(target))
    })
}

/// Runs a compiled expression of `my` against `target` from the top of a match and hands the
/// (borrowed) result and the evaluation state to `f`.
fn run_top_with<R>(
    n: &Node,
    my: &ClassAd,
    target: &ClassAd,
    f: impl FnOnce(&Value, &Ctx) -> R,
) -> R {
    let ctx = Ctx::new();
    let pair = super::Pair {
        left: my,
        right: target,
    };
    let env = Env::top(Some(my), Some(&pair));
    let mut slot = Value::Undefined;
    let v = run(n, &ctx, env, &mut slot);
    f(v, &ctx)
}

/// Whether the compiled form may stand for the interpreter with these two ads: `my` must be a
/// top-level ad (bare names would otherwise be looked up in its enclosing ads first) and the
/// two ads must differ (matching an ad against itself swaps scopes in ways the compiled form
/// does not model).
pub(crate) fn applies(my: &ClassAd, target: &ClassAd) -> bool {
    my.parent().is_none() && !my.is_detached() && !my.same_attrs(target)
}

/// Names that the interpreter resolves specially when an ad lacks them.
fn is_special_bare(n: &Name) -> bool {
    [
        "my",
        "self",
        "target",
        "parent",
        "root",
        "toplevel",
        "currenttime",
    ]
    .iter()
    .any(|s| n.is(s))
}
fn is_special_scoped(n: &Name) -> bool {
    ["my", "self", "target", "parent"].iter().any(|s| n.is(s))
}

struct Compiler<'a> {
    ad: &'a ClassAd,
    /// Attribute expressions being compiled in place (a reference back to one is a cycle,
    /// left to the interpreter, which reports it).
    inlining: Vec<*const Expr>,
    /// How deep `compile` is recursing.
    nesting: u32,
    /// How many nodes have been compiled so far.
    nodes: u32,
}

/// Whether evaluating `e` can move the evaluation state's current ad for what follows it in
/// the same attribute (see `Leak`): a call of `evalInEachContext`, `countMatches` or
/// `unresolved` written in it. Compiled nodes do not follow such a move, so an expression
/// with one is left whole to the interpreter (one attribute's move ends with its evaluation).
fn may_leak(e: &Expr) -> bool {
    use crate::builtins::Builtin as B;
    match e {
        Expr::Lit(_)
        | Expr::RelTimeLit(_)
        | Expr::OldAbsTimeLit { .. }
        | Expr::Attr(_)
        | Expr::Abs(_)
        | Expr::Scoped(..)
        | Expr::Ad(_) => false,
        Expr::Select(a, _) | Expr::Unary(_, a) | Expr::Paren(a) => may_leak(a),
        Expr::Index(a, b) | Expr::Binary(_, a, b) => may_leak(a) || may_leak(b),
        Expr::Cond(c, m, x) => may_leak(c) || m.as_deref().is_some_and(may_leak) || may_leak(x),
        Expr::Call(c) => {
            matches!(
                c.func,
                Some(B::EvalInEachContext | B::CountMatches | B::Unresolved)
            ) || c.args.iter().any(may_leak)
        }
        Expr::List(l) => l.iter().any(may_leak),
    }
}

impl Compiler<'_> {
    /// Compiles a top-level expression (Requirements, Rank).
    fn compile_top(&mut self, e: &Expr) -> Node {
        if may_leak(e) {
            return interp(e, 0);
        }
        self.compile(e, 0, false)
    }

    /// Compiles `e`, which the interpreter would evaluate with its depth counter at `depth`,
    /// through `eval` (`by_ref` false) or through the operand path `eval_ref` (true), which
    /// passes parentheses without counting them.
    fn compile(&mut self, e: &Expr, depth: u32, by_ref: bool) -> Node {
        // Parentheses on the operand path do not count as depth, so the recursion is bounded
        // separately.
        self.nodes += 1;
        if depth >= MAX_COMPILE_DEPTH
            || self.nesting >= MAX_COMPILE_DEPTH
            || self.nodes >= MAX_COMPILE_NODES
        {
            // `eval_ref` passes parentheses without counting them; `eval` would count them.
            let mut e = e;
            while let (true, Expr::Paren(x)) = (by_ref, e) {
                e = x;
            }
            return interp(e, depth);
        }
        self.nesting += 1;
        let n = self.compile_node(e, depth, by_ref);
        self.nesting -= 1;
        n
    }

    fn compile_node(&mut self, e: &Expr, depth: u32, by_ref: bool) -> Node {
        // Inside `eval(e)` the counter is one more.
        let inner = depth + 1;
        match e {
            Expr::Lit(v) => Node::Const(v.clone()),
            Expr::Paren(x) => {
                if by_ref {
                    self.compile(x, depth, true)
                } else {
                    self.compile(x, inner, false)
                }
            }
            // A match has a target, so the outermost scope is the match itself: undefined.
            Expr::Abs(_) => Node::Const(Value::Undefined),
            Expr::Attr(n) => match self.ad.lookup_name(n) {
                // An attribute that can move the current ad is left to the interpreter, which
                // ends the move with the attribute's evaluation.
                Some(found) if may_leak(found) => interp(e, depth),
                Some(found) => self.own_attribute(found, inner),
                None if is_special_bare(n) => interp(e, depth),
                None => Node::Target {
                    name: TargetName::new(n),
                    depth: inner,
                },
            },
            Expr::Scoped(ScopeKw::My, _, n) => match self.ad.lookup_name(n) {
                Some(found) if may_leak(found) => interp(e, depth),
                Some(found) => self.own_attribute(found, inner),
                None if is_special_scoped(n) => interp(e, depth),
                None => Node::Const(Value::Undefined),
            },
            Expr::Scoped(ScopeKw::Target, _, n) if !is_special_scoped(n) => Node::Target {
                name: TargetName::new(n),
                depth: inner,
            },
            Expr::Binary(op, a, b) => {
                let (a, b) = (self.compile(a, inner, true), self.compile(b, inner, true));
                fold_binary(*op, a, b)
            }
            Expr::Unary(op, a) => match self.compile(a, inner, false) {
                Node::Const(v) => Node::Const(ops::unary(*op, v)),
                a => Node::Unary(*op, Box::new(a)),
            },
            Expr::Cond(c, m, x) => {
                let c = self.compile(c, inner, false);
                let m = m.as_ref().map(|m| Box::new(self.compile(m, inner, false)));
                let x = self.compile(x, inner, false);
                Node::Cond(Box::new(c), m, Box::new(x))
            }
            _ => interp(e, depth),
        }
    }

    /// An attribute of the compiled ad, which the interpreter evaluates (through
    /// `eval_found`) with its counter at `depth`: a literal is a constant, an expression is
    /// compiled in place unless that would recurse.
    fn own_attribute(&mut self, found: &Expr, depth: u32) -> Node {
        if let Expr::Lit(v) = found {
            return Node::Const(v.clone());
        }
        let key = found as *const Expr;
        let inner = if self.inlining.contains(&key) {
            // A cycle: the interpreter detects and reports it (as an error).
            interp(found, depth)
        } else {
            self.inlining.push(key);
            let n = self.compile(found, depth, false);
            self.inlining.pop();
            n
        };
        match inner {
            // Nothing left to evaluate, so nothing that could meet this attribute again.
            Node::Const(v) => Node::Const(v),
            inner => Node::Attr {
                key: key as usize,
                inner: Box::new(inner),
            },
        }
    }
}

fn interp(e: &Expr, depth: u32) -> Node {
    Node::Interp {
        expr: Box::new(e.clone()),
        depth,
    }
}

/// A binary node, folded when both operands are constants (`ops` gives the same answer at
/// compile time as at run time) and when a constant left operand decides a short circuit.
fn fold_binary(op: BinOp, a: Node, b: Node) -> Node {
    match (op, &a, &b) {
        (BinOp::And, Node::Const(x), _) if ops::bool_equiv(x) == Some(false) => {
            Node::Const(Value::Bool(false))
        }
        (BinOp::Or, Node::Const(x), _) if ops::bool_equiv(x) == Some(true) => {
            Node::Const(Value::Bool(true))
        }
        (BinOp::And | BinOp::Or, Node::Const(x), Node::Const(y)) => {
            Node::Const(ops::logical(op, x, y))
        }
        (_, Node::Const(x), Node::Const(y)) if !matches!(op, BinOp::And | BinOp::Or) => {
            Node::Const(ops::binary(op, x, y))
        }
        (BinOp::And | BinOp::Or, Node::Chain(o, _), _) if *o == op => match a {
            Node::Chain(o, mut items) => {
                items.push(b);
                Node::Chain(o, items)
            }
            _ => unreachable!("matched a chain above"),
        },
        // `true && x` is x seen as a truth value (error if it is not one), which a chain
        // of the single element x gives; likewise `false || x`.
        (BinOp::And | BinOp::Or, Node::Const(x), _)
            if ops::bool_equiv(x) == Some(op == BinOp::And) =>
        {
            Node::Chain(op, vec![b])
        }
        (BinOp::And | BinOp::Or, _, _) => Node::Chain(op, vec![a, b]),
        _ => Node::Binary(op, Box::new(a), Box::new(b)),
    }
}

/// `run` for an operand of a chain: leaves and binary operators on leaves (`TARGET.Memory >=
/// 2048`, the bulk of real Requirements) without a call.
#[inline(always)]
fn operand<'a>(n: &'a Node, ctx: &Ctx, env: Env<'a>, slot: &'a mut Value) -> &'a Value {
    match n {
        Node::Binary(op, a, b) => binary(*op, a, b, ctx, env, slot),
        _ => leaf(n, ctx, env, slot),
    }
}

/// `truth(operand(..))` for an element of a chain, with a comparison of two literals (the
/// usual element) decided without going through a value.
#[inline(always)]
fn element_truth<'a>(n: &'a Node, ctx: &Ctx, env: Env<'a>, slot: &'a mut Value) -> Truth {
    if let Node::Binary(op, a, b) = n {
        if op.is_comparison() {
            if let (Some(av), Some(bv)) = (literal(a, env), literal(b, env)) {
                if let Some(r) = ops::quick_compare(*op, av, bv) {
                    return if r { Truth::T } else { Truth::F };
                }
            }
        }
    }
    truth(operand(n, ctx, env, slot))
}

/// A leaf's value when it is a literal (a constant or a target attribute holding one, or
/// missing: undefined); `None` when it needs evaluating.
#[inline(always)]
fn literal<'a>(n: &'a Node, env: Env<'a>) -> Option<&'a Value> {
    match n {
        Node::Const(v) => Some(v),
        Node::Target { name, .. } => match name.lookup(env.target?) {
            Some(found) => match &**found {
                Expr::Lit(v) => Some(v),
                _ => None,
            },
            None => Some(&UNDEFINED),
        },
        _ => None,
    }
}

/// `run` for a leaf: constants and target attributes without a call.
#[inline(always)]
fn leaf<'a>(n: &'a Node, ctx: &Ctx, env: Env<'a>, slot: &'a mut Value) -> &'a Value {
    match n {
        Node::Const(v) => v,
        Node::Target { name, depth } => target_attr(name, *depth, ctx, env, slot),
        _ => run(n, ctx, env, slot),
    }
}

/// A strict binary operator (everything but `&&` and `||`).
#[inline(always)]
fn binary<'a>(
    op: BinOp,
    a: &'a Node,
    b: &'a Node,
    ctx: &Ctx,
    env: Env<'a>,
    slot: &'a mut Value,
) -> &'a Value {
    // Both operands literal (a constant, or a target attribute holding a literal): no
    // evaluation and nothing to hold. Lookups have no side effects, so looking again on
    // the general path below changes nothing but time.
    if let (Some(av), Some(bv)) = (literal(a, env), literal(b, env)) {
        if op.is_comparison() {
            if let Some(r) = ops::quick_compare(op, av, bv) {
                return if r { &TRUE } else { &FALSE };
            }
        }
        *slot = ops::binary(op, av, bv);
        return slot;
    }
    let (mut sa, mut sb) = (Value::Undefined, Value::Undefined);
    let av = leaf(a, ctx, env, &mut sa);
    let bv = leaf(b, ctx, env, &mut sb);
    if op.is_comparison() {
        if let Some(r) = ops::quick_compare(op, av, bv) {
            return if r { &TRUE } else { &FALSE };
        }
    }
    *slot = ops::binary(op, av, bv);
    slot
}

/// The value of attribute `name` of the target ad (undefined if it has none).
#[inline(always)]
fn target_attr<'a>(
    name: &TargetName,
    depth: u32,
    ctx: &Ctx,
    env: Env<'a>,
    slot: &'a mut Value,
) -> &'a Value {
    let Some(t) = env.target else {
        return &UNDEFINED;
    };
    match name.lookup(t) {
        Some(found) => match &**found {
            Expr::Lit(v) => v,
            e => {
                ctx.depth.set(depth);
                *slot = eval_found(ctx, env.enter(t), e);
                slot
            }
        },
        None => &UNDEFINED,
    }
}

/// Evaluates a compiled node; constants and literal attributes of the target are borrowed,
/// computed values are stored in `slot`.
fn run<'a>(n: &'a Node, ctx: &Ctx, env: Env<'a>, slot: &'a mut Value) -> &'a Value {
    match n {
        Node::Const(v) => v,
        Node::Target { name, depth } => target_attr(name, *depth, ctx, env, slot),
        Node::Interp { expr, depth } => {
            ctx.depth.set(*depth);
            *slot = eval(ctx, env, expr);
            slot
        }
        Node::Binary(op, a, b) => binary(*op, a, b, ctx, env, slot),
        Node::Chain(op, items) => {
            // `ops::logical` on truth values: the same table, without building values.
            let or = *op == BinOp::Or;
            let stop = if or { Truth::T } else { Truth::F };
            let mut acc = Truth::Other;
            for (i, x) in items.iter().enumerate() {
                // `slot` is free until the end: each element's value is used up at once.
                let v = element_truth(x, ctx, env, &mut *slot);
                acc = if i == 0 { v } else { combine(or, acc, v) };
                if acc == stop {
                    return if or { &TRUE } else { &FALSE };
                }
            }
            match acc {
                Truth::T => &TRUE,
                Truth::F => &FALSE,
                Truth::U => &UNDEFINED,
                Truth::E | Truth::Other => {
                    *slot = Value::Error;
                    slot
                }
            }
        }
        Node::Attr { key, inner } => {
            let n = ctx.n_active.get();
            if ctx.active[..n.min(ACTIVE)].iter().any(|a| a.get() == *key) {
                *slot = ctx.fail();
                return slot;
            }
            if let Some(a) = ctx.active.get(n) {
                a.set(*key);
            }
            ctx.n_active.set(n + 1);
            // Long chains of attributes compiled in place recurse deeply: every 8 of them the
            // stack is grown on demand, as the interpreter does.
            let v = if n % 8 == 7 {
                stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || run(inner, ctx, env, slot))
            } else {
                run(inner, ctx, env, slot)
            };
            ctx.n_active.set(n);
            v
        }
        Node::Unary(op, a) => {
            let mut sa = Value::Undefined;
            let av = run(a, ctx, env, &mut sa).clone();
            *slot = ops::unary(*op, av);
            slot
        }
        Node::Cond(c, m, x) => {
            let mut sc = Value::Undefined;
            let cv = run(c, ctx, env, &mut sc);
            match m {
                Some(m) => match ops::bool_equiv(cv) {
                    Some(true) => run(m, ctx, env, slot),
                    Some(false) => run(x, ctx, env, slot),
                    None => {
                        // Both branches are evaluated, as the interpreter does, for their
                        // failures.
                        let undefined = cv.is_undefined();
                        run(m, ctx, env, &mut Value::Undefined);
                        run(x, ctx, env, &mut Value::Undefined);
                        if undefined {
                            &UNDEFINED
                        } else {
                            *slot = Value::Error;
                            slot
                        }
                    }
                },
                None => match cv {
                    Value::Undefined => run(x, ctx, env, slot),
                    other => {
                        *slot = other.clone();
                        slot
                    }
                },
            }
        }
    }
}

// The compiled form never reaches the interpreter's depth limit on its own.
const _: () = assert!(MAX_COMPILE_DEPTH + 10 < MAX_EVAL_DEPTH);

#[cfg(test)]
mod tests {
    use crate::matching::{matches, rank, requirements_value};
    use crate::{parse_ad, parse_expr, ClassAd, Value};

    fn interpreted(my: &ClassAd, target: &ClassAd) -> Option<Value> {
        my.lookup("Requirements")
            .map(|e| my.eval_expr_with(&e.clone(), Some(target)))
    }

    #[test]
    fn a_changed_ad_is_recompiled_and_copies_keep_their_own() {
        let mut job =
            parse_ad("[ Requirements = TARGET.Memory >= RequestMemory; RequestMemory = 2048 ]")
                .expect("job");
        let slot = parse_ad("[ Memory = 4096 ]").expect("slot");
        assert!(matches(&job, &slot));
        let copy = job.clone();
        job.insert_int("RequestMemory", 8192);
        assert!(
            !matches(&job, &slot),
            "the old compiled form must not survive a change"
        );
        assert!(
            matches(&copy, &slot),
            "a copy made before the change keeps its value"
        );
        job.insert_expr_str("Requirements", "TARGET.Memory > 100")
            .expect("parses");
        assert!(matches(&job, &slot));
        job.remove("Requirements");
        assert!(!matches(&job, &slot), "no Requirements: no match");
    }

    #[test]
    fn cycles_and_long_attribute_chains_give_the_interpreters_error() {
        let target = parse_ad("[ x = 1 ]").expect("target");
        let cyc = parse_ad("[ Requirements = a; a = b && true; b = a ]").expect("ad");
        assert_eq!(requirements_value(&cyc, &target), Some(Value::Error));
        assert!(!matches(&cyc, &target));
        let mut chain = ClassAd::new();
        chain.insert("Requirements", parse_expr("a0 > 0").expect("parses"));
        for i in 0..3000 {
            chain.insert(
                &format!("a{i}"),
                parse_expr(&format!("a{} + 1", i + 1)).expect("parses"),
            );
        }
        chain.insert_int("a3000", 1);
        let h = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                (
                    requirements_value(&chain, &target),
                    interpreted(&chain, &target),
                )
            })
            .expect("spawn");
        let (got, want) = h.join().expect("no stack overflow");
        assert_eq!(got, want);
        assert_eq!(got, Some(Value::Error), "past the depth limit");
    }

    #[test]
    fn deeply_parenthesised_operands_compile_within_bounds() {
        let target = parse_ad("[ Cpus = 4 ]").expect("target");
        for n in [10usize, 150, 199, 200, 201, 250, 900] {
            let text = format!("TARGET.Cpus + {}1{} > 2", "(".repeat(n), ")".repeat(n));
            // All within the parser's nesting limit (1000, as the reference).
            let e = parse_expr(&text).expect("parses");
            let mut my = ClassAd::new();
            my.insert("Requirements", e);
            let target = target.clone();
            let h = std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || (requirements_value(&my, &target), interpreted(&my, &target)))
                .expect("spawn");
            let (got, want) = h.join().expect("no stack overflow");
            assert_eq!(got, want, "{n} parentheses");
        }
    }

    #[test]
    fn folding_keeps_error_and_undefined_semantics() {
        let target = parse_ad("[ Cpus = 4; Name = \"slot1\" ]").expect("target");
        for (req, want) in [
            // A constant false left side decides `&&` without looking right.
            ("false && TARGET.Cpus / 0", Value::Bool(false)),
            // A constant false right side does not: error && false is error.
            ("(TARGET.Cpus / 0 > 1) && false", Value::Error),
            ("undefined && false", Value::Bool(false)),
            ("undefined || TARGET.Cpus > 1", Value::Bool(true)),
            ("\"x\" && true", Value::Error),
            (
                "MY.Missing =?= undefined && TARGET.Cpus == 4",
                Value::Bool(true),
            ),
            ("Missing", Value::Undefined),
            ("TARGET.Name == \"SLOT1\"", Value::Bool(true)),
            ("4.0 == TARGET.Cpus", Value::Bool(true)),
            ("TARGET.Cpus > real(\"nan\")", Value::Bool(false)),
            // `true && x` is x as a truth value, not x.
            ("true && TARGET.Name", Value::Error),
            ("true && TARGET.Cpus", Value::Bool(true)),
            ("false || TARGET.Missing", Value::Undefined),
            ("(true && TARGET.Name) && true", Value::Error),
            ("true && (TARGET.Cpus - 4.0)", Value::Bool(false)),
        ] {
            let mut my = ClassAd::new();
            my.insert("Requirements", parse_expr(req).expect(req));
            assert_eq!(
                requirements_value(&my, &target),
                Some(want.clone()),
                "{req}"
            );
            assert_eq!(interpreted(&my, &target), Some(want), "{req} (interpreter)");
        }
    }

    #[test]
    fn the_remembered_position_of_a_target_attribute_is_only_a_hint() {
        let job = parse_ad("[ Requirements = TARGET.Memory >= 2048 && TARGET.Arch == \"X86_64\" ]")
            .expect("job");
        // The same attributes in other orders, one target without Memory, one where the
        // remembered index holds a different attribute of the same length.
        let targets = [
            ("[ Memory = 4096; Arch = \"X86_64\" ]", true),
            ("[ Arch = \"X86_64\"; Memory = 1024 ]", false),
            ("[ Arch = \"X86_64\"; Memory = 8192 ]", true),
            ("[ Arch = \"X86_64\" ]", false),
            ("[ Memorz = 9999; Arch = \"X86_64\"; Memory = 2048 ]", true),
            ("[ Memory = 100; ARCH = \"x86_64\" ]", false),
            ("[ x = 1; y = 2; memory = 2048; arch = \"x86_64\" ]", true),
        ];
        for _ in 0..2 {
            for (text, want) in targets {
                let slot = parse_ad(text).expect("slot");
                assert_eq!(matches(&job, &slot), want, "{text}");
                assert_eq!(requirements_value(&job, &slot), interpreted(&job, &slot));
            }
        }
    }

    #[test]
    fn an_ad_matched_against_itself_uses_the_interpreter() {
        let ad = parse_ad("[ Requirements = TARGET.x == MY.x && Rank > 1; x = 3; Rank = x ]")
            .expect("ad");
        assert_eq!(requirements_value(&ad, &ad), interpreted(&ad, &ad));
        assert!(matches(&ad, &ad));
        assert_eq!(rank(&ad, &ad), 3.0);
    }

    #[test]
    fn rank_as_a_number_is_the_ranks_value_as_one() {
        use crate::matching::rank_value;
        let slot = parse_ad("[ Mips = 250; Name = \"slot1\"; L = {1, 2} ]").expect("slot");
        for r in [
            "TARGET.Mips + 0.0",
            "TARGET.Mips",
            "TARGET.Mips > 100",
            "TARGET.Mips < 100",
            "TARGET.Name",
            "TARGET.Missing",
            "1 / 0",
            "Rank + 1",
            "TARGET.L",
            "size(TARGET.L) * 2.5",
        ] {
            let job = parse_ad(&format!("[ Rank = {r} ]")).expect("job");
            let want = match rank_value(&job, &slot) {
                Some(Value::Int(i)) => i as f64,
                Some(Value::Real(x)) => x,
                Some(Value::Bool(true)) => 1.0,
                _ => 0.0,
            };
            assert_eq!(rank(&job, &slot), want, "{r}");
        }
        assert_eq!(rank(&parse_ad("[ x = 1 ]").expect("job"), &slot), 0.0);
    }
}
