//! Keys for grouping ads that matchmaking cannot tell apart: a fast hasher, structural hashes
//! of expressions, slot classes ([`Interner`]) and autoclusters ([`AcTable`]).
//!
//! Autoclusters are HTCondor's: the schedd groups a submitter's jobs that agree on every
//! significant attribute (the names the negotiator's compute_significant_attrs reports) and
//! the negotiator answers one request per autocluster the same way. Slot classes are Aerie's
//! own: HTCondor's matchmakingAlgorithm evaluates every startd ad for each request, while
//! slots that agree on every significant attribute match and rank alike, so
//! [`super::candidates`] evaluates a pair once per (autocluster, class).
use classad::{ClassAd, Expr, Value};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// A fast non-cryptographic hasher (the rotate-xor-multiply scheme of rustc's FxHasher):
/// keys here come from the pool's own ads, and autoclusters never mix submitters.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

impl FxHasher {
    /// Adds `w` to the running state without mixing (for order-independent sums).
    #[inline]
    pub(crate) fn add_raw(&mut self, w: u64) {
        self.hash = self.hash.wrapping_add(w);
    }
    /// The running state, unmixed.
    #[inline]
    pub(crate) fn raw(&self) -> u64 {
        self.hash
    }
    #[inline]
    fn add(&mut self, w: u64) {
        self.hash = (self.hash.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            self.add(u64::from_le_bytes(b));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 56));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_i64(&mut self, i: i64) {
        self.add(i as u64);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // Final avalanche so that low bits are usable as table indices.
        let mut x = self.hash;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x
    }
}

/// Hash maps keyed by the cycle's own small integers (class, autocluster indices).
pub(crate) type FxBuild = std::hash::BuildHasherDefault<FxHasher>;

/// Structural hash of an expression, consistent with [`Expr::same_as`] (names hash
/// case-insensitively); used for autocluster and slot-class keys without unparsing.
pub(crate) fn hash_expr<H: Hasher>(e: &Expr, h: &mut H) {
    use std::mem::discriminant;
    discriminant(e).hash(h);
    match e {
        Expr::Lit(v) => hash_value(v, h),
        Expr::RelTimeLit(r) => r.to_bits().hash(h),
        Expr::Attr(n) | Expr::Abs(n) => n.hash().hash(h),
        Expr::Scoped(k, _, n) => {
            discriminant(k).hash(h);
            n.hash().hash(h);
        }
        Expr::Select(x, n) => {
            hash_expr(x, h);
            n.hash().hash(h);
        }
        Expr::Index(a, b) => {
            hash_expr(a, h);
            hash_expr(b, h);
        }
        Expr::Unary(op, a) => {
            discriminant(op).hash(h);
            hash_expr(a, h);
        }
        Expr::Binary(op, a, b) => {
            discriminant(op).hash(h);
            hash_expr(a, h);
            hash_expr(b, h);
        }
        Expr::Cond(c, m, x) => {
            hash_expr(c, h);
            if let Some(m) = m {
                hash_expr(m, h);
            }
            hash_expr(x, h);
        }
        Expr::Paren(a) => hash_expr(a, h),
        Expr::Call(c) => {
            for b in c.name.bytes() {
                b.to_ascii_lowercase().hash(h);
            }
            for a in &c.args {
                hash_expr(a, h);
            }
        }
        Expr::List(l) => {
            l.len().hash(h);
            for a in l {
                hash_expr(a, h);
            }
        }
        Expr::Ad(ad) => ad.len().hash(h),
        // Variants added later to the ClassAd crate (e.g. old-syntax time literals): their
        // unparsed text is a faithful key.
        #[allow(unreachable_patterns)]
        other => {
            use std::fmt::Write;
            struct W<'a, H: Hasher>(&'a mut H);
            impl<H: Hasher> Write for W<'_, H> {
                fn write_str(&mut self, s: &str) -> std::fmt::Result {
                    self.0.write(s.as_bytes());
                    Ok(())
                }
            }
            let _ = write!(W(h), "{other}");
        }
    }
}

pub(crate) fn hash_value<H: Hasher>(v: &Value, h: &mut H) {
    std::mem::discriminant(v).hash(h);
    match v {
        Value::Undefined | Value::Error => {}
        Value::Bool(b) => b.hash(h),
        Value::Int(i) => i.hash(h),
        Value::Real(r) => r.to_bits().hash(h),
        Value::Str(s) => s.hash(h),
        Value::List(l) => {
            for x in l.iter() {
                hash_value(x, h);
            }
        }
        Value::Ad(a) => a.len().hash(h),
        Value::AbsTime { secs, offset_secs } => {
            secs.hash(h);
            offset_secs.hash(h);
        }
        Value::RelTime(r) => r.to_bits().hash(h),
        #[allow(unreachable_patterns)]
        other => other.to_string().hash(h),
    }
}

/// Key of an ad restricted to the significant names, from its expressions for them (in the
/// order of the names); a hit is confirmed by [`Interner`].
pub(crate) fn view_key<'e>(view: impl Iterator<Item = Option<&'e Expr>>, extra: u64) -> u64 {
    let mut h = FxHasher::default();
    extra.hash(&mut h);
    for e in view {
        match e {
            Some(e) => {
                1u8.hash(&mut h);
                hash_expr(e, &mut h);
            }
            None => 0u8.hash(&mut h),
        }
    }
    h.finish()
}

/// One expression of a class's representative: a literal (cheap to keep: a number or a shared
/// string), or a non-literal expression kept once for every class that has it (an index into
/// [`Interner::shared`]): a heterogeneous pool has a class per slot, all with the same
/// `Requirements`, and copying each class's expression trees was most of interning them.
#[derive(Clone)]
enum RepExpr {
    Lit(Expr),
    Shared(u32),
}

/// A class's representative expressions (one per significant name), its extra key and the
/// class id.
type ClassRep = (Vec<Option<RepExpr>>, u64, usize);

/// Interning of ads into classes: slots that agree on every significant name (and the
/// partitionable flag) sort and match alike, so candidates are evaluated once per class; so do
/// autoclusters that agree on them (job classes, see [`super::tables::AutoCluster::class`]).
/// `(hash) -> [(representative's expressions, extra key, class id)]`; a hash hit is confirmed
/// name by name and on the extra key, so a class never mixes different ads.
#[derive(Default)]
pub(crate) struct Interner {
    map: HashMap<u64, Vec<ClassRep>>,
    /// The distinct non-literal expressions of the representatives.
    shared: Vec<Expr>,
    /// Structural hash -> indices into `shared`.
    shared_by_hash: HashMap<u64, Vec<u32>, FxBuild>,
    pub count: usize,
}

impl Interner {
    /// Class of `ad` (its expressions for `names` looked up here).
    pub fn intern(&mut self, ad: &ClassAd, names: &[(String, u64)], extra: u64) -> usize {
        let view: Vec<Option<&Expr>> = names
            .iter()
            .map(|(n, nh)| ad.lookup_hashed(n, *nh))
            .collect();
        self.intern_view(&view, extra)
    }

    /// Class of an ad whose expressions for the significant names are `view`.
    pub fn intern_view(&mut self, view: &[Option<&Expr>], extra: u64) -> usize {
        let k = view_key(view.iter().copied(), extra);
        if let Some(bucket) = self.map.get(&k) {
            for (rep, rep_extra, id) in bucket {
                let same = *rep_extra == extra
                    && rep.iter().zip(view).all(|(x, y)| match (x, y) {
                        (Some(RepExpr::Lit(x)), Some(y)) => x.same_as(y),
                        (Some(RepExpr::Shared(i)), Some(y)) => self.shared[*i as usize].same_as(y),
                        (None, None) => true,
                        _ => false,
                    });
                if same {
                    return *id;
                }
            }
        }
        let id = self.count;
        self.count += 1;
        let rep = view.iter().map(|e| e.map(|e| self.rep_expr(e))).collect();
        self.map.entry(k).or_default().push((rep, extra, id));
        id
    }

    /// `e` as a representative keeps it.
    fn rep_expr(&mut self, e: &Expr) -> RepExpr {
        if let Expr::Lit(_) = e {
            return RepExpr::Lit(e.clone());
        }
        let mut h = FxHasher::default();
        hash_expr(e, &mut h);
        let known = self.shared_by_hash.entry(h.finish()).or_default();
        if let Some(&i) = known.iter().find(|&&i| self.shared[i as usize].same_as(e)) {
            return RepExpr::Shared(i);
        }
        let i = self.shared.len() as u32;
        self.shared.push(e.clone());
        known.push(i);
        RepExpr::Shared(i)
    }
}

/// Autoclusters: jobs of one submitter whose non-literal attributes are identical
/// (fingerprint) and whose literal values agree on every significant name.
///
/// A job is read once: the significant names are looked up with their precomputed hashes,
/// the key hashes what was found, and a key hit is confirmed against the autocluster's
/// representative value by value (shared expressions, as ads read through a
/// `classad::AttrCache` have, compare by pointer first). Jobs differing only in an
/// insignificant expression land in different autoclusters, which costs a little speed but
/// never correctness.
pub(crate) struct AcTable<'e> {
    /// Key -> first autocluster with that key; further ones chain through `next`.
    heads: HashMap<u64, usize, FxBuild>,
    next: Vec<usize>,
    submitter: Vec<usize>,
    fingerprint: Vec<u64>,
    /// Per autocluster, `stride` entries: the representative's expression for each
    /// significant name (None when absent).
    views: Vec<Option<&'e Expr>>,
    stride: usize,
}

impl<'e> AcTable<'e> {
    pub fn new(stride: usize) -> Self {
        AcTable {
            heads: HashMap::default(),
            next: Vec::new(),
            submitter: Vec::new(),
            fingerprint: Vec::new(),
            views: Vec::new(),
            stride,
        }
    }

    pub fn len(&self) -> usize {
        self.submitter.len()
    }

    /// Autocluster `id`'s representative expression for each significant name.
    pub fn view(&self, id: usize) -> &[Option<&'e Expr>] {
        &self.views[id * self.stride..(id + 1) * self.stride]
    }

    /// The fingerprint of autocluster `id`'s non-literal attributes.
    pub fn fingerprint(&self, id: usize) -> u64 {
        self.fingerprint[id]
    }

    /// Autocluster of a job (a new one is numbered `len()`), and whether it is new. `view`
    /// holds the job's expression for each significant name (see [`super::scan::scan_job`]).
    pub fn assign(
        &mut self,
        view: &[Option<&'e Expr>],
        submitter: usize,
        fingerprint: u64,
    ) -> (usize, bool) {
        debug_assert_eq!(view.len(), self.stride);
        let mut h = FxHasher::default();
        h.write_usize(submitter);
        h.write_u64(fingerprint);
        for e in view {
            match e {
                Some(Expr::Lit(v)) => {
                    h.write_u8(1);
                    hash_value(v, &mut h);
                }
                Some(_) => h.write_u8(2),
                None => h.write_u8(0),
            }
        }
        let key = h.finish();
        let mut at = self.heads.get(&key).copied();
        let mut last = None;
        while let Some(id) = at {
            if self.submitter[id] == submitter
                && self.fingerprint[id] == fingerprint
                && self.same_view(id, view)
            {
                return (id, false);
            }
            last = Some(id);
            at = Some(self.next[id]).filter(|&x| x != usize::MAX);
        }
        let id = self.len();
        self.submitter.push(submitter);
        self.fingerprint.push(fingerprint);
        self.next.push(usize::MAX);
        self.views.extend_from_slice(view);
        match last {
            Some(l) => self.next[l] = id,
            None => {
                self.heads.insert(key, id);
            }
        }
        (id, true)
    }

    /// Does a job with `view` agree with autocluster `id` on every significant name?
    /// Non-literal expressions are covered by the fingerprint (every non-literal attribute
    /// is part of it); literals must be the same value.
    fn same_view(&self, id: usize, view: &[Option<&'e Expr>]) -> bool {
        let rep = &self.views[id * self.stride..(id + 1) * self.stride];
        rep.iter().zip(view).all(|(a, b)| match (a, b) {
            (None, None) => true,
            (Some(x), Some(y)) => {
                std::ptr::eq(*x, *y)
                    || match (x, y) {
                        (Expr::Lit(p), Expr::Lit(q)) => p == q,
                        (Expr::Lit(_), _) | (_, Expr::Lit(_)) => false,
                        _ => true,
                    }
            }
            _ => false,
        })
    }
}

/// Fingerprint of the non-literal attributes of an ad (names case-insensitive).
pub(crate) fn nonliteral_fingerprint(ad: &ClassAd) -> u64 {
    let mut fp = FxHasher::default();
    for (n, e) in ad.iter() {
        if !matches!(e, Expr::Lit(_)) {
            for b in n.bytes() {
                fp.write_u8(b.to_ascii_lowercase());
            }
            hash_expr(e, &mut fp);
        }
    }
    fp.finish()
}
