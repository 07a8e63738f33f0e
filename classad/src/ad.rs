//! ClassAds: case-insensitive attribute name -> expression maps that keep insertion order.
//!
//! Lookups hash the name once (case-insensitively, no allocation) and probe a small
//! open-addressing table of indices into the entry vector.
use crate::eval::compiled::Matcher;
use crate::expr::Expr;
use crate::name::{ci_hash, Name};
use crate::value::Value;
use std::fmt;
use std::sync::{Arc, OnceLock};

/// A ClassAd. Cloning is O(1): the attribute table is shared and copied on first write.
#[derive(Clone, Default)]
pub struct ClassAd {
    attrs: Arc<Attrs>,
    /// The lexically enclosing ad of a nested ad value (libclassad's parent scope): names not
    /// found here are looked up there.
    parent: Option<Arc<ClassAd>>,
    /// Set on an ad value obtained through `ad["name"]`, a copy with no enclosing ad
    /// (libclassad's SCLASSAD_VALUE). libclassad cannot select attributes from such a value
    /// (`x["c"].d` reads the copy after freeing it: undefined there), and we reproduce that.
    detached: bool,
}

/// One attribute: its name and expression. Ads hold attributes by reference count, so ads
/// read through an [`crate::AttrCache`] share every attribute they have in common (a pool's
/// slot ads differ in a few attributes out of ~100) and an entry costs one pointer.
#[derive(Debug)]
pub struct Attr {
    /// The attribute's name, with its case-insensitive hash.
    pub name: Name,
    /// The attribute's expression, shared between ads that hold the same one.
    pub expr: Arc<Expr>,
}

impl Attr {
    /// A shared attribute, ready for [`ClassAd::insert_attr`].
    pub fn new(name: Name, expr: Arc<Expr>) -> Arc<Attr> {
        Arc::new(Attr { name, expr })
    }
}

#[derive(Default)]
struct Attrs {
    entries: Vec<Arc<Attr>>,
    /// Open addressing table: 0 = empty, otherwise index+1 into `entries`. Length is a power of
    /// two at least twice the number of entries (or empty when there are no entries).
    table: Index,
    /// This ad's Requirements and Rank compiled against the ad itself, made on the first
    /// match and dropped by any change (see `eval::compiled`).
    matcher: OnceLock<Box<Matcher>>,
}

impl Clone for Attrs {
    /// A copy is about to be changed: it compiles its own matcher when it needs one.
    fn clone(&self) -> Self {
        Attrs {
            entries: self.entries.clone(),
            table: self.table.clone(),
            matcher: OnceLock::new(),
        }
    }
}

/// The slots of the open addressing table: 16 bits while the ad has fewer than 65,535
/// attributes (the table of a typical 50-attribute slot ad is then 256 bytes, which matters
/// for a collector holding 100,000 of them), 32 bits beyond.
#[derive(Clone)]
enum Index {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

impl Default for Index {
    fn default() -> Self {
        Index::Narrow(Vec::new())
    }
}

impl Index {
    /// An empty table of `len` slots able to index `entries` attributes.
    fn with_len(len: usize, entries: usize) -> Index {
        if entries < u16::MAX as usize {
            Index::Narrow(vec![0; len])
        } else {
            Index::Wide(vec![0; len])
        }
    }
    #[inline]
    fn len(&self) -> usize {
        match self {
            Index::Narrow(t) => t.len(),
            Index::Wide(t) => t.len(),
        }
    }
    #[inline]
    fn get(&self, i: usize) -> usize {
        match self {
            Index::Narrow(t) => t[i] as usize,
            Index::Wide(t) => t[i] as usize,
        }
    }
    /// Puts entry number `slot` (index + 1) in the first free slot from `hash`.
    fn place(&mut self, hash: u64, slot: usize) {
        let mask = self.len() - 1;
        let mut i = (hash as usize) & mask;
        while self.get(i) != 0 {
            i = (i + 1) & mask;
        }
        // In range: `with_len` picked a width that holds every entry number.
        match self {
            Index::Narrow(t) => t[i] = slot as u16,
            Index::Wide(t) => t[i] = slot as u32,
        }
    }
}

/// Linear probing from `hash` in a table of entry numbers (0 = empty, else index + 1).
#[inline(always)]
/// Returns the entry's index and the entry.
fn probe<'a, T: Copy + Into<u32>>(
    table: &[T],
    entries: &'a [Arc<Attr>],
    name: &str,
    hash: u64,
) -> Option<(usize, &'a Attr)> {
    let mask = table.len().wrapping_sub(1);
    let mut i = (hash as usize) & mask;
    loop {
        let idx = ((*table.get(i)?).into() as usize).wrapping_sub(1);
        let a = entries.get(idx)?;
        if a.name.hash() == hash && crate::name::eq_ci(a.name.as_str(), name) {
            return Some((idx, a));
        }
        i = (i + 1) & mask;
    }
}

impl Attrs {
    #[inline(always)]
    pub(crate) fn find(&self, name: &str, hash: u64) -> Option<usize> {
        self.find_attr(name, hash).map(|(i, _)| i)
    }

    #[inline(always)]
    fn find_attr(&self, name: &str, hash: u64) -> Option<(usize, &Attr)> {
        match &self.table {
            Index::Narrow(t) => probe(t, &self.entries, name, hash),
            Index::Wide(t) => probe(t, &self.entries, name, hash),
        }
    }

    fn rebuild(&mut self) {
        let n = self.entries.len();
        let want = (n * 2).next_power_of_two().max(8);
        self.table = Index::with_len(want, n);
        for (idx, a) in self.entries.iter().enumerate() {
            self.table.place(a.name.hash(), idx + 1);
        }
    }

    fn insert_attr(&mut self, attr: Arc<Attr>) {
        self.matcher.take();
        if let Some(idx) = self.find(attr.name.as_str(), attr.name.hash()) {
            // The first spelling of the name is kept, as libclassad does.
            let old = &self.entries[idx];
            self.entries[idx] = if old.name.as_str() == attr.name.as_str() {
                attr
            } else {
                Attr::new(old.name.clone(), attr.expr.clone())
            };
            return;
        }
        let hash = attr.name.hash();
        self.entries.push(attr);
        let n = self.entries.len();
        let too_narrow = matches!(self.table, Index::Narrow(_)) && n >= u16::MAX as usize;
        if n * 2 > self.table.len() || too_narrow {
            self.rebuild();
        } else {
            self.table.place(hash, n);
        }
    }
}

impl fmt::Debug for ClassAd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self)
    }
}

impl PartialEq for ClassAd {
    /// Same attributes (any order) with structurally identical expressions.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self.attrs.entries.iter().all(|a| {
                // Shared expressions (ads read through one cache) compare by pointer.
                other
                    .lookup_name(&a.name)
                    .is_some_and(|o| Arc::ptr_eq(o, &a.expr) || o.same_as(&a.expr))
            })
    }
}

impl ClassAd {
    /// An empty ad.
    pub fn new() -> Self {
        ClassAd::default()
    }

    /// An empty ad with room for `n` attributes.
    pub fn with_capacity(n: usize) -> Self {
        ClassAd {
            attrs: Arc::new(Attrs {
                entries: Vec::with_capacity(n),
                table: Index::default(),
                matcher: OnceLock::new(),
            }),
            parent: None,
            detached: false,
        }
    }

    /// The ad holding `attrs` in order, as if each were inserted with
    /// [`ClassAd::insert_attr`] (a later attribute of the same name replaces the earlier one's
    /// expression and keeps its spelling), with the vector and index sized once: the old-syntax
    /// reader gathers an ad's lines first and builds it here.
    pub(crate) fn from_attrs(attrs: &mut Vec<Arc<Attr>>) -> ClassAd {
        let n = attrs.len();
        let want = (n * 2).next_power_of_two().max(8);
        let mut a = Attrs {
            entries: Vec::with_capacity(n),
            table: Index::with_len(want, n),
            matcher: OnceLock::new(),
        };
        for attr in attrs.drain(..) {
            if a.find(attr.name.as_str(), attr.name.hash()).is_some() {
                a.insert_attr(attr);
            } else {
                let hash = attr.name.hash();
                a.entries.push(attr);
                a.table.place(hash, a.entries.len());
            }
        }
        ClassAd {
            attrs: Arc::new(a),
            parent: None,
            detached: false,
        }
    }

    /// Insert or replace `name` (case-insensitive; the spelling first inserted is kept).
    pub(crate) fn insert_arc(&mut self, name: Name, expr: Arc<Expr>) {
        self.insert_attr(Attr::new(name, expr));
    }

    /// Insert a shared attribute (the name's first spelling in this ad is kept).
    pub fn insert_attr(&mut self, attr: Arc<Attr>) {
        Arc::make_mut(&mut self.attrs).insert_attr(attr);
    }

    #[inline]
    fn find(&self, name: &str, hash: u64) -> Option<usize> {
        self.attrs.find(name, hash)
    }

    /// Whether `other` shares this ad's attribute table (a cheap identity test).
    pub fn same_attrs(&self, other: &ClassAd) -> bool {
        Arc::ptr_eq(&self.attrs, &other.attrs)
    }

    /// The enclosing ad of a nested ad value, if any.
    pub fn parent(&self) -> Option<&ClassAd> {
        self.parent.as_deref()
    }

    /// Attribute `name` of this ad or of the nearest enclosing ad that has it, with the ad
    /// that holds it: where a bare reference inside a nested ad finds its attribute.
    pub(crate) fn lookup_enclosing(&self, name: &Name) -> Option<(&Arc<Expr>, &ClassAd)> {
        let mut ad = Some(self);
        while let Some(c) = ad {
            if let Some(e) = c.lookup_name(name) {
                return Some((e, c));
            }
            ad = c.parent();
        }
        None
    }

    /// This ad with `parent` as its enclosing scope.
    pub(crate) fn with_parent(&self, parent: Option<Arc<ClassAd>>) -> ClassAd {
        ClassAd {
            attrs: self.attrs.clone(),
            parent,
            detached: false,
        }
    }

    /// The copy `ad["name"]` hands out (libclassad's SafetyCheck copies the ad and clears its
    /// parent scope): no enclosing ad, and marked (see `detached`).
    pub(crate) fn detached_copy(&self) -> ClassAd {
        ClassAd {
            attrs: self.attrs.clone(),
            parent: None,
            detached: true,
        }
    }

    /// Whether `other` is the same ad: the same attributes, enclosed by the same ads.
    pub(crate) fn same_ad(&self, other: &ClassAd) -> bool {
        self.same_attrs(other)
            && self.detached == other.detached
            && match (self.parent(), other.parent()) {
                (Some(a), Some(b)) => a.same_ad(b),
                (None, None) => true,
                _ => false,
            }
    }

    pub(crate) fn is_detached(&self) -> bool {
        self.detached
    }

    /// Set attribute `name` to `expr`, replacing an attribute of the same name in any case
    /// (whose spelling is kept).
    pub fn insert(&mut self, name: &str, expr: Expr) {
        self.insert_arc(Name::new(name), Arc::new(expr));
    }

    /// Insert an already shared expression.
    pub fn insert_shared(&mut self, name: &str, expr: Arc<Expr>) {
        self.insert_arc(Name::new(name), expr);
    }

    pub(crate) fn insert_named(&mut self, name: Name, expr: Expr) {
        self.insert_arc(name, Arc::new(expr));
    }

    /// Set attribute `name` to the literal `v`.
    pub fn insert_value(&mut self, name: &str, v: Value) {
        self.insert(name, Expr::Lit(v));
    }
    /// Set attribute `name` to an integer literal.
    pub fn insert_int(&mut self, name: &str, v: i64) {
        self.insert_value(name, Value::Int(v));
    }
    /// Set attribute `name` to a real literal.
    pub fn insert_real(&mut self, name: &str, v: f64) {
        self.insert_value(name, Value::Real(v));
    }
    /// Set attribute `name` to a boolean literal.
    pub fn insert_bool(&mut self, name: &str, v: bool) {
        self.insert_value(name, Value::Bool(v));
    }
    /// Set attribute `name` to a string literal.
    pub fn insert_str(&mut self, name: &str, v: &str) {
        self.insert_value(name, Value::str(v));
    }

    /// Parse `expr_text` and insert it.
    pub fn insert_expr_str(
        &mut self,
        name: &str,
        expr_text: &str,
    ) -> Result<(), crate::ParseError> {
        let e = crate::parse_expr(expr_text)?;
        self.insert(name, e);
        Ok(())
    }

    /// The expression of attribute `name` (any case) in this ad itself, unevaluated; enclosing
    /// ads are not searched.
    pub fn lookup(&self, name: &str) -> Option<&Expr> {
        self.lookup_hashed(name, ci_hash(name))
    }

    /// Lookup with a precomputed [`ci_hash`] of the name.
    #[inline]
    pub fn lookup_hashed(&self, name: &str, hash: u64) -> Option<&Expr> {
        self.find(name, hash).map(|i| &*self.attrs.entries[i].expr)
    }

    /// Lookup by a [`Name`], whose case-insensitive hash is computed once: for loops that
    /// read the same names from many ads.
    #[inline]
    pub fn lookup_by_name(&self, name: &Name) -> Option<&Expr> {
        self.lookup_name(name).map(|e| &**e)
    }

    #[inline]
    pub(crate) fn lookup_name(&self, name: &Name) -> Option<&Arc<Expr>> {
        self.attrs
            .find_attr(name.as_str(), name.hash())
            .map(|(_, a)| &a.expr)
    }

    /// Whether this ad has attribute `name` (any case).
    pub fn contains(&self, name: &str) -> bool {
        self.lookup(name).is_some()
    }

    /// Remove attribute `name` (any case), giving back its expression.
    pub fn remove(&mut self, name: &str) -> Option<Expr> {
        let idx = self.find(name, ci_hash(name))?;
        let attrs = Arc::make_mut(&mut self.attrs);
        attrs.matcher.take();
        let a = attrs.entries.remove(idx);
        attrs.rebuild();
        let e = a.expr.clone();
        drop(a);
        Some(Arc::try_unwrap(e).unwrap_or_else(|a| (*a).clone()))
    }

    /// The attributes' names and expressions, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Expr)> {
        self.attrs
            .entries
            .iter()
            .map(|a| (a.name.as_str(), &*a.expr))
    }

    /// The attributes with their [`Name`]s (which carry the case-insensitive hash), in order.
    pub fn iter_named(&self) -> impl Iterator<Item = (&Name, &Expr)> {
        self.attrs.entries.iter().map(|a| (&a.name, &*a.expr))
    }

    /// How many attributes the ad has.
    pub fn len(&self) -> usize {
        self.attrs.entries.len()
    }

    /// Whether the ad has no attributes.
    pub fn is_empty(&self) -> bool {
        self.attrs.entries.is_empty()
    }

    /// Gives back spare capacity of the attribute vector (for ads kept a long time, such as
    /// the collector's: an ad built by inserts has up to twice the room it needs).
    pub fn shrink_to_fit(&mut self) {
        if self.attrs.entries.capacity() > self.attrs.entries.len() {
            Arc::make_mut(&mut self.attrs).entries.shrink_to_fit();
        }
    }

    /// Copy every attribute of `other` into this ad (replacing same-named ones).
    pub fn update(&mut self, other: &ClassAd) {
        for a in &other.attrs.entries {
            self.insert_attr(a.clone());
        }
    }

    /// Evaluate attribute `name` of this ad, with no target ad.
    pub fn eval_attr(&self, name: &str) -> Value {
        crate::eval::eval_attr(self, None, name)
    }

    /// Evaluate `e` with this ad as MY and no target.
    pub fn eval_expr(&self, e: &Expr) -> Value {
        crate::eval::eval_in(e, Some(self), None)
    }

    /// Evaluate attribute `name` with MY = self and TARGET = target (matchmaking context: a bare
    /// name missing from MY is looked up in TARGET).
    pub fn eval_attr_with(&self, name: &str, target: Option<&ClassAd>) -> Value {
        crate::eval::eval_attr(self, target, name)
    }

    /// Evaluate `e` with MY = self and TARGET = target (matchmaking context).
    pub fn eval_expr_with(&self, e: &Expr, target: Option<&ClassAd>) -> Value {
        crate::eval::eval_in(e, Some(self), target)
    }

    /// [`ClassAd::eval_expr_with`] within `budget` node visits, which it takes from the budget;
    /// an error when the evaluation would need more (see [`crate::MAX_EVAL_STEPS`]).
    pub fn eval_expr_budget(
        &self,
        e: &Expr,
        target: Option<&ClassAd>,
        budget: &mut u64,
    ) -> Result<Value, crate::EvalLimit> {
        crate::eval::eval_in_budget(e, Some(self), target, budget)
    }

    /// Old syntax, as `condor_status -long` prints: one `Name = expr` per line.
    pub fn to_old_syntax(&self) -> String {
        let mut s = String::new();
        for a in &self.attrs.entries {
            s.push_str(a.name.as_str());
            s.push_str(" = ");
            crate::format::unparse_expr_old(&mut s, &a.expr);
            s.push('\n');
        }
        s
    }

    /// This ad's compiled Requirements and Rank (compiled on first use, shared by every copy
    /// of the ad until one of them changes).
    pub(crate) fn matcher(&self) -> &Matcher {
        self.attrs
            .matcher
            .get_or_init(|| Box::new(Matcher::compile(self)))
    }

    /// The entry named `name` and its index in [`ClassAd::entries`].
    #[inline]
    pub(crate) fn find_attr(&self, name: &Name) -> Option<(usize, &Attr)> {
        self.attrs.find_attr(name.as_str(), name.hash())
    }

    #[inline]
    pub(crate) fn entries(&self) -> &[Arc<Attr>] {
        &self.attrs.entries
    }
}

impl fmt::Display for ClassAd {
    /// New syntax on one line, as libclassad's ClassAdUnParser prints: `[ a = 1; b = "x" ]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        crate::format::unparse_ad(&mut s, self);
        f.write_str(&s)
    }
}
