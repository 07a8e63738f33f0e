//! The parsed expression tree. Parentheses are kept (libclassad prints them as written).
use crate::ad::ClassAd;
use crate::builtins::Builtin;
use crate::name::Name;
use crate::value::Value;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

/// A prefix operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// `+x`: the number itself (error for non-numbers).
    Plus,
    /// `-x`: arithmetic negation.
    Minus,
    /// `!x`: logical not, in three-valued logic.
    Not,
    /// `~x`: bitwise complement of an integer.
    BitNot,
}

/// An infix operator, in libclassad's precedence classes (see the parser).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `!=`: undefined when either side is undefined.
    Ne,
    /// `==`: undefined when either side is undefined; strings compare without case.
    Eq,
    /// `>=`
    Ge,
    /// `>`
    Gt,
    /// `is` (old syntax `=?=`): identical type and value, never undefined; strings compare
    /// with case.
    Is,
    /// `isnt` (old syntax `=!=`): the negation of `is`.
    Isnt,
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`: error on an integer division by zero.
    Div,
    /// `%`
    Mod,
    /// `||`: short-circuit, three-valued.
    Or,
    /// `&&`: short-circuit, three-valued.
    And,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `&`
    BitAnd,
    /// `<<`
    Shl,
    /// `>>`: arithmetic (sign-extending) right shift.
    Shr,
    /// `>>>`: logical (zero-filling) right shift.
    Ushr,
}

impl BinOp {
    /// `<`, `<=`, `==`, `!=`, `>=`, `>`.
    #[inline]
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Lt | BinOp::Le | BinOp::Eq | BinOp::Ne | BinOp::Ge | BinOp::Gt
        )
    }
    /// How libclassad prints the operator (with its surrounding spaces).
    pub fn text(self) -> &'static str {
        match self {
            BinOp::Lt => " < ",
            BinOp::Le => " <= ",
            BinOp::Ne => " != ",
            BinOp::Eq => " == ",
            BinOp::Ge => " >= ",
            BinOp::Gt => " > ",
            BinOp::Is => " is ",
            BinOp::Isnt => " isnt ",
            BinOp::Add => " + ",
            BinOp::Sub => " - ",
            BinOp::Mul => " * ",
            BinOp::Div => " / ",
            BinOp::Mod => " % ",
            BinOp::Or => " || ",
            BinOp::And => " && ",
            BinOp::BitOr => " | ",
            BinOp::BitXor => " ^ ",
            BinOp::BitAnd => " & ",
            BinOp::Shl => " << ",
            BinOp::Shr => " >> ",
            BinOp::Ushr => " >>> ",
        }
    }
}

/// Which scope keyword a `KW.attr` reference names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeKw {
    /// `MY.`: the ad the expression belongs to.
    My,
    /// `TARGET.`: the other ad of a match.
    Target,
    /// `PARENT.`: the ad enclosing the current nested ad.
    Parent,
}

/// A call of a function by name; `func` is resolved once at parse time.
#[derive(Clone, Debug)]
pub struct Call {
    /// The name as written (libclassad prints it so; lookup ignores case).
    pub name: Arc<str>,
    /// The built-in the name resolved to when parsed; `None` for an unknown name, whose
    /// call evaluates to `error`.
    pub func: Option<Builtin>,
    /// The argument expressions, unevaluated: each function evaluates what it needs.
    pub args: Vec<Expr>,
}

/// An expression.
#[derive(Clone, Debug)]
pub enum Expr {
    /// A literal: integer, real, string, boolean, `undefined`, `error` (and values folded at
    /// parse time, such as `absTime("...")` of a literal string).
    Lit(Value),
    /// `relTime("...")` folded at parse time: libclassad prints it as a relTime literal but
    /// evaluates it to a real number of seconds.
    RelTimeLit(f64),
    /// An absolute-time literal read from an old-syntax ad: printed as written, but libclassad
    /// evaluates it in UTC (offset 0).
    OldAbsTimeLit {
        /// Seconds since the Unix epoch.
        secs: i64,
        /// The timezone offset it was written with, in seconds east of UTC.
        offset_secs: i32,
    },
    /// `name`: looked up in the current ad, its enclosing ads, then (matchmaking) TARGET.
    Attr(Name),
    /// `.name`: looked up from the outermost ad.
    Abs(Name),
    /// `MY.name`, `TARGET.name`, `PARENT.name` (prefix spelling kept for unparse).
    Scoped(ScopeKw, Name, Name),
    /// `expr.name`.
    Select(Box<Expr>, Name),
    /// `expr[index]`.
    Index(Box<Expr>, Box<Expr>),
    /// A prefix operator applied to an operand.
    Unary(UnOp, Box<Expr>),
    /// An infix operator with its left and right operands.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `c ? a : b`, or `c ?: b` when the middle is absent.
    Cond(Box<Expr>, Option<Box<Expr>>, Box<Expr>),
    /// `(expr)`: kept so that unparsing prints the parentheses as written.
    Paren(Box<Expr>),
    /// A function call.
    Call(Box<Call>),
    /// `{a, b, ...}`: a list literal, elements unevaluated (shared with the list values
    /// evaluating it makes, which keep the element expressions as libclassad's do).
    List(ExprList),
    /// `[a = 1; ...]`: a nested ad literal.
    Ad(Arc<ClassAd>),
}

/// The element expressions of a list literal. Shared: a list value made by evaluating the
/// literal holds them too (libclassad's list value is the ExprList itself, evaluated element by
/// element when used), so making one copies no expression.
#[derive(Clone, Debug, Default)]
pub struct ExprList(Arc<Vec<Expr>>);

impl ExprList {
    /// A list of these element expressions.
    pub fn new(items: Vec<Expr>) -> Self {
        ExprList(Arc::new(items))
    }

    /// The elements, to change (copied first if shared).
    pub fn make_mut(&mut self) -> &mut Vec<Expr> {
        Arc::make_mut(&mut self.0)
    }

    /// Whether two lists share their element expressions (the same literal).
    pub fn ptr_eq(&self, other: &ExprList) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl From<Vec<Expr>> for ExprList {
    fn from(items: Vec<Expr>) -> Self {
        ExprList::new(items)
    }
}

impl std::ops::Deref for ExprList {
    type Target = [Expr];
    fn deref(&self) -> &[Expr] {
        &self.0
    }
}

impl<'a> IntoIterator for &'a ExprList {
    type Item = &'a Expr;
    type IntoIter = std::slice::Iter<'a, Expr>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// Attribute names an expression refers to, split as HTCondor's autocluster code wants them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct References {
    /// Bare names and `MY.` names (lowercased): refer to the ad that holds the expression
    /// (a bare name may also resolve in TARGET during matchmaking).
    pub internal: BTreeSet<String>,
    /// `TARGET.` names (lowercased): refer to the other ad of a match.
    pub external: BTreeSet<String>,
}

impl Expr {
    /// An integer literal.
    pub fn int(i: i64) -> Expr {
        Expr::Lit(Value::Int(i))
    }
    /// A real literal.
    pub fn real(r: f64) -> Expr {
        Expr::Lit(Value::Real(r))
    }
    /// A string literal.
    pub fn string(s: &str) -> Expr {
        Expr::Lit(Value::str(s))
    }
    /// A boolean literal.
    pub fn boolean(b: bool) -> Expr {
        Expr::Lit(Value::Bool(b))
    }
    /// A bare attribute reference (`name`).
    pub fn attr(name: &str) -> Expr {
        Expr::Attr(Name::new(name))
    }

    /// Structural identity (what libclassad's `SameAs` checks).
    pub fn same_as(&self, other: &Expr) -> bool {
        use Expr::*;
        match (self, other) {
            (Lit(a), Lit(b)) => a.identical(b),
            (RelTimeLit(a), RelTimeLit(b)) => a == b,
            (
                OldAbsTimeLit {
                    secs: a,
                    offset_secs: x,
                },
                OldAbsTimeLit {
                    secs: b,
                    offset_secs: y,
                },
            ) => a == b && x == y,
            (Attr(a), Attr(b)) | (Abs(a), Abs(b)) => a == b,
            (Scoped(k1, _, a), Scoped(k2, _, b)) => k1 == k2 && a == b,
            (Select(e1, a), Select(e2, b)) => a == b && e1.same_as(e2),
            (Index(a1, b1), Index(a2, b2)) => a1.same_as(a2) && b1.same_as(b2),
            (Unary(o1, a), Unary(o2, b)) => o1 == o2 && a.same_as(b),
            (Binary(o1, a1, b1), Binary(o2, a2, b2)) => {
                o1 == o2 && a1.same_as(a2) && b1.same_as(b2)
            }
            (Cond(c1, m1, e1), Cond(c2, m2, e2)) => {
                c1.same_as(c2)
                    && e1.same_as(e2)
                    && match (m1, m2) {
                        (Some(a), Some(b)) => a.same_as(b),
                        (None, None) => true,
                        _ => false,
                    }
            }
            (Paren(a), Paren(b)) => a.same_as(b),
            (Call(a), Call(b)) => {
                a.name.eq_ignore_ascii_case(&b.name)
                    && a.args.len() == b.args.len()
                    && a.args.iter().zip(&b.args).all(|(x, y)| x.same_as(y))
            }
            (List(a), List(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_as(y)),
            (Ad(a), Ad(b)) => a == b,
            _ => false,
        }
    }

    /// The attribute names this expression refers to (for autoclusters and index building).
    pub fn references(&self) -> References {
        let mut r = References::default();
        self.collect_refs(&mut r);
        r
    }

    fn collect_refs(&self, r: &mut References) {
        match self {
            Expr::Lit(_) | Expr::RelTimeLit(_) | Expr::OldAbsTimeLit { .. } => {}
            Expr::Attr(n) | Expr::Abs(n) => {
                r.internal.insert(n.as_str().to_ascii_lowercase());
            }
            Expr::Scoped(k, _, n) => match k {
                ScopeKw::Target => {
                    r.external.insert(n.as_str().to_ascii_lowercase());
                }
                _ => {
                    r.internal.insert(n.as_str().to_ascii_lowercase());
                }
            },
            Expr::Select(e, _) => e.collect_refs(r),
            Expr::Index(a, b) | Expr::Binary(_, a, b) => {
                a.collect_refs(r);
                b.collect_refs(r);
            }
            Expr::Unary(_, a) | Expr::Paren(a) => a.collect_refs(r),
            Expr::Cond(c, m, e) => {
                c.collect_refs(r);
                if let Some(m) = m {
                    m.collect_refs(r);
                }
                e.collect_refs(r);
            }
            Expr::Call(c) => c.args.iter().for_each(|a| a.collect_refs(r)),
            Expr::List(l) => l.iter().for_each(|a| a.collect_refs(r)),
            Expr::Ad(_) => {}
        }
    }
}

impl fmt::Display for Expr {
    /// libclassad's ClassAdUnParser output.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        crate::format::unparse_expr(&mut s, self);
        f.write_str(&s)
    }
}
