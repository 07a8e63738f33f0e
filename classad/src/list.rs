//! List values, as libclassad has them.
//!
//! A list literal does not evaluate to its elements' values: libclassad's value is the list's
//! own element expressions (the ExprList node), each remembering the ad it was written in, and
//! an element is evaluated only when something uses it, by whoever uses it and how
//! (src/classad/exprList.cpp, `ExprList::_Evaluate` and `GetValueAt`):
//!
//! * a subscript `l[i]` evaluates element `i` in the ad the list was written in (GetValueAt
//!   sets the current ad to the element's parent scope), with the rest of the caller's state;
//! * the list functions (`member`, `sum`, `avg`, `min`, `max`, `anyCompare`, `allCompare`,
//!   `join`, `quantize`, `listToArgs`, `regexpMember`, `evalInEachContext`, ...) evaluate each
//!   element in the caller's state, so its names are looked up where the call stands
//!   (fnCall.cpp: `listElement->Evaluate(state, ...)`);
//! * converting a list to a string prints the element expressions, unevaluated;
//! * a list copied out of an ad by `ad["name"]` has lost its scope (Value::MakeSelfContained
//!   copies it and clears the parent scope): its elements' names resolve nowhere.
//!
//! [`List`] keeps exactly that: the element expressions and the ad they belong to, or element
//! values for the lists functions make (libclassad's SLIST_VALUE of literals). Values given out
//! by the public API ([`crate::eval::eval_in`] and friends) carry the match they came from, so
//! that [`List::iter`] evaluates the elements as a subscript from the top of that evaluation
//! would, once, on first use.
use crate::ad::ClassAd;
use crate::expr::{Expr, ExprList};
use crate::value::Value;
use std::fmt;
use std::sync::{Arc, OnceLock};

/// A list value: element expressions with the ad they are evaluated in, or element values.
/// Cloning is O(1).
#[derive(Clone)]
pub struct List(Arc<Inner>);

struct Inner {
    /// The element expressions of a list literal and their scope; `None` for a list of values.
    exprs: Option<Exprs>,
    /// The elements of a list of values as functions see them, when they differ from what a
    /// subscript reads (see `owns`); otherwise `values`.
    given: Option<Vec<Value>>,
    /// libclassad's SLIST_VALUE (a list a function made, or a copy) rather than LIST_VALUE (a
    /// literal's own list): `is` tells the two types apart.
    shared: bool,
    /// The list owns the lists and ads among its elements (a copy made by `ad["name"]`, the
    /// results of `evalInEachContext`): libclassad's subscript hands out a pointer into the
    /// list and then frees the list, and what it reads there is an empty list or ad. The
    /// functions that take lists read them while the list lives.
    owns: bool,
    /// The evaluation this list is a result of, to evaluate its elements for the public API.
    top: Option<Arc<Top>>,
    /// The elements' values as a subscript reads them: given for a list of values, evaluated
    /// on first use otherwise.
    values: OnceLock<Vec<Value>>,
}

/// The element expressions of a list literal and the ad they were written in.
#[derive(Clone)]
pub(crate) struct Exprs {
    pub items: ExprList,
    /// The elements' parent scope; `None` once copied out of an ad (names resolve nowhere).
    pub scope: Option<ClassAd>,
}

/// The two ads of the evaluation a value came out of (MY and, in a match, TARGET).
pub(crate) struct Top {
    pub my: Option<ClassAd>,
    pub target: Option<ClassAd>,
}

impl List {
    /// A list of these values (as functions make them: libclassad's SLIST_VALUE).
    pub fn new(values: Vec<Value>) -> List {
        List::of_values(values, true)
    }

    pub(crate) fn of_values(values: Vec<Value>, shared: bool) -> List {
        List(Arc::new(Inner {
            exprs: None,
            given: None,
            shared,
            owns: false,
            top: None,
            values: OnceLock::from(values),
        }))
    }

    /// A shared list of values that owns the lists and ads among them (see `owns`).
    pub(crate) fn owning(values: Vec<Value>) -> List {
        let read: Vec<Value> = values.iter().map(dangling).collect();
        List(Arc::new(Inner {
            exprs: None,
            given: Some(values),
            shared: true,
            owns: true,
            top: None,
            values: OnceLock::from(read),
        }))
    }

    /// The list a literal evaluates to: its element expressions, written in `scope`.
    pub(crate) fn of_exprs(items: ExprList, scope: Option<ClassAd>, shared: bool) -> List {
        List(Arc::new(Inner {
            exprs: Some(Exprs { items, scope }),
            given: None,
            shared,
            owns: false,
            top: None,
            values: OnceLock::new(),
        }))
    }

    /// How many elements the list has.
    pub fn len(&self) -> usize {
        match &self.0.exprs {
            Some(e) => e.items.len(),
            None => self.0.values.get().map_or(0, Vec::len),
        }
    }

    /// Whether the list has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements' values: for a list that is the result of an evaluation, each element as
    /// `(expr)[i]` would evaluate it in that evaluation. Evaluated once, on first use.
    pub fn values(&self) -> &[Value] {
        self.0.values.get_or_init(|| {
            let e = self
                .0
                .exprs
                .as_ref()
                .expect("a list without expressions has its values");
            e.items
                .iter()
                .map(|x| {
                    let v = crate::eval::element_value(x, e.scope.as_ref(), self.0.top.as_ref());
                    self.as_read(x, v)
                })
                .collect()
        })
    }

    /// The elements' values (see [`List::values`]).
    pub fn iter(&self) -> std::slice::Iter<'_, Value> {
        self.values().iter()
    }

    /// Element `i`'s value (see [`List::values`]).
    pub fn get(&self, i: usize) -> Option<&Value> {
        self.values().get(i)
    }

    /// The element expressions and their scope, for a list literal's list.
    pub(crate) fn exprs(&self) -> Option<&Exprs> {
        self.0.exprs.as_ref()
    }

    /// Element `i` of a list of values as the functions that take lists see it.
    pub(crate) fn given(&self, i: usize) -> &Value {
        match &self.0.given {
            Some(g) => &g[i],
            None => &self.values()[i],
        }
    }

    /// Element `i` of a list of values as a subscript reads it.
    pub(crate) fn read(&self, i: usize) -> &Value {
        &self.values()[i]
    }

    /// `v`, the value of the element expression `x` of this list, as a subscript reads it: a
    /// list or ad written in the element of a list that owns them is gone (see `owns`).
    pub(crate) fn as_read(&self, x: &Expr, v: Value) -> Value {
        if self.0.owns && written_in(x, &v) {
            dangling(&v)
        } else {
            v
        }
    }

    /// libclassad's SLIST_VALUE: made by a function or copied, not a literal's own list.
    pub(crate) fn is_shared(&self) -> bool {
        self.0.shared
    }

    /// The list as `ad["name"]` hands it out (libclassad's SafetyCheck): a literal's list is
    /// copied, with no scope any more; a list already shared is given as it is.
    pub(crate) fn copied_out(&self) -> List {
        if self.0.shared {
            return self.clone();
        }
        match &self.0.exprs {
            Some(e) => List(Arc::new(Inner {
                exprs: Some(Exprs {
                    items: e.items.clone(),
                    scope: None,
                }),
                given: None,
                shared: true,
                owns: true,
                top: None,
                values: OnceLock::new(),
            })),
            None => List::of_values(self.values().to_vec(), true),
        }
    }

    /// Whether the list's elements need the evaluation it is a result of (see
    /// [`List::with_top`]): expressions, or lists of them, not yet given one.
    pub(crate) fn needs_top(&self) -> bool {
        needs_top_list(self)
    }

    /// This list as the result of the evaluation `top`: its elements are evaluated there when
    /// the public API asks for them.
    pub(crate) fn with_top(&self, top: &Arc<Top>) -> List {
        if self.0.top.is_some() {
            return self.clone();
        }
        match &self.0.exprs {
            Some(e) => List(Arc::new(Inner {
                exprs: Some(e.clone()),
                given: None,
                shared: self.0.shared,
                owns: self.0.owns,
                top: Some(top.clone()),
                values: OnceLock::new(),
            })),
            None => {
                let vals = self.values();
                if !vals.iter().any(needs_top) {
                    return self.clone();
                }
                let map = |vs: &[Value]| vs.iter().map(|v| with_top(v, top)).collect::<Vec<_>>();
                List(Arc::new(Inner {
                    exprs: None,
                    given: self.0.given.as_deref().map(map),
                    shared: self.0.shared,
                    owns: self.0.owns,
                    top: Some(top.clone()),
                    values: OnceLock::from(map(vals)),
                }))
            }
        }
    }

    /// Whether the two lists are the same list: the same literal in the same scope, from the
    /// same evaluation (or the very same value).
    pub(crate) fn same_source(&self, other: &List) -> bool {
        if Arc::ptr_eq(&self.0, &other.0) {
            return true;
        }
        match (&self.0.exprs, &other.0.exprs) {
            (Some(a), Some(b)) => {
                a.items.ptr_eq(&b.items)
                    && self.0.shared == other.0.shared
                    && same_ads(&a.scope, &b.scope)
                    && match (&self.0.top, &other.0.top) {
                        (Some(x), Some(y)) => {
                            same_ads(&x.my, &y.my) && same_ads(&x.target, &y.target)
                        }
                        (None, None) => true,
                        _ => false,
                    }
            }
            _ => false,
        }
    }
}

/// What a subscript reads of a list or ad that was freed: an empty one.
fn dangling(v: &Value) -> Value {
    match v {
        Value::List(_) => Value::List(List::of_values(Vec::new(), false)),
        Value::Ad(_) => Value::Ad(Arc::new(ClassAd::new())),
        other => other.clone(),
    }
}

/// Whether `v` is a list or ad written in the expression `e` (a literal in it).
fn written_in(e: &Expr, v: &Value) -> bool {
    match v {
        Value::List(l) => match l.exprs() {
            Some(x) => has_node(e, &|n| matches!(n, Expr::List(i) if i.ptr_eq(&x.items))),
            None => false,
        },
        Value::Ad(ad) => has_node(e, &|n| matches!(n, Expr::Ad(a) if a.same_attrs(ad))),
        _ => false,
    }
}

/// Whether `e` or an expression inside it (in lists and nested ads too) is `hit`.
fn has_node(e: &Expr, hit: &dyn Fn(&Expr) -> bool) -> bool {
    if hit(e) {
        return true;
    }
    match e {
        Expr::Select(a, _) | Expr::Unary(_, a) | Expr::Paren(a) => has_node(a, hit),
        Expr::Index(a, b) | Expr::Binary(_, a, b) => has_node(a, hit) || has_node(b, hit),
        Expr::Cond(c, m, x) => {
            has_node(c, hit) || m.as_deref().is_some_and(|m| has_node(m, hit)) || has_node(x, hit)
        }
        Expr::Call(c) => c.args.iter().any(|a| has_node(a, hit)),
        Expr::List(l) => l.iter().any(|a| has_node(a, hit)),
        Expr::Ad(ad) => ad.iter().any(|(_, a)| has_node(a, hit)),
        _ => false,
    }
}

fn same_ads(a: &Option<ClassAd>, b: &Option<ClassAd>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => x.same_ad(y),
        (None, None) => true,
        _ => false,
    }
}

/// Whether a value holds a list whose elements need the evaluation they came from.
fn needs_top(v: &Value) -> bool {
    match v {
        Value::List(l) => needs_top_list(l),
        _ => false,
    }
}

fn needs_top_list(l: &List) -> bool {
    l.0.top.is_none() && (l.0.exprs.is_some() || l.iter().any(needs_top))
}

/// `v` as the result of the evaluation `top` (lists remember it, see [`List::with_top`]).
pub(crate) fn with_top(v: &Value, top: &Arc<Top>) -> Value {
    match v {
        Value::List(l) => Value::List(l.with_top(top)),
        other => other.clone(),
    }
}

impl PartialEq for List {
    /// Same elements' values (see [`List::values`]), element by element; the same list is
    /// equal to itself even when it contains itself.
    fn eq(&self, other: &List) -> bool {
        thread_local! {
            static DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
        }
        if self.same_source(other) {
            return true;
        }
        if self.len() != other.len() {
            return false;
        }
        // Lists can contain themselves through other lists: compare a bounded depth.
        let d = DEPTH.with(|d| d.get());
        if d > 64 {
            return true;
        }
        DEPTH.with(|c| c.set(d + 1));
        let same = self.iter().zip(other.iter()).all(|(x, y)| x == y);
        DEPTH.with(|c| c.set(d));
        same
    }
}

impl fmt::Debug for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.exprs {
            Some(e) => {
                let mut s = String::new();
                crate::format::unparse_expr(&mut s, &Expr::List(e.items.clone()));
                write!(f, "List({s})")
            }
            None => f.debug_list().entries(self.values()).finish(),
        }
    }
}

impl From<Vec<Value>> for List {
    fn from(values: Vec<Value>) -> Self {
        List::new(values)
    }
}

impl<'a> IntoIterator for &'a List {
    type Item = &'a Value;
    type IntoIter = std::slice::Iter<'a, Value>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
