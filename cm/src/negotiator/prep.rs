//! Turning input ads into the cycle's tables: slots (filtered, weighted, classed) and idle
//! jobs (submitter, order keys, autoclusters).
use super::limits::parse_limits;
use classad::{ClassAd, Expr, Value};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// The value of an attribute: literals are read directly (the common case in dumps), anything
/// else is evaluated.
pub(crate) fn attr_value(ad: &ClassAd, name: &str) -> Value {
    match ad.lookup(name) {
        Some(Expr::Lit(v)) => v.clone(),
        Some(_) => ad.eval_attr(name),
        None => Value::Undefined,
    }
}

pub(crate) fn eval_str(ad: &ClassAd, name: &str) -> Option<String> {
    match attr_value(ad, name) {
        Value::Str(s) => Some(s.to_string()),
        _ => None,
    }
}

pub(crate) fn eval_num(ad: &ClassAd, name: &str) -> Option<f64> {
    match attr_value(ad, name) {
        Value::Int(i) => Some(i as f64),
        Value::Real(r) => Some(r),
        Value::Bool(b) => Some(if b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

pub(crate) fn eval_bool(ad: &ClassAd, name: &str) -> Option<bool> {
    match attr_value(ad, name) {
        Value::Bool(b) => Some(b),
        Value::Int(i) => Some(i != 0),
        _ => None,
    }
}

/// How a job's concurrency limits are declared.
#[derive(Clone, Debug)]
pub(crate) enum JobLimits {
    None,
    Fixed(Vec<(String, f64)>),
    /// `ConcurrencyLimitsExpr`, evaluated against each candidate slot.
    Expr(Expr),
    /// Unusable (bad name, or both forms set); the job is never matched.
    Invalid(String),
}

/// One idle job.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    pub index: usize,
    pub cluster: i64,
    pub proc: i64,
    pub submitter: usize,
    pub ac: usize,
    /// Sort key within the submitter (larger sorts first for the first four).
    pub order: (i64, i64, i64, i64, i64, i64, i64, i64),
    pub limits: JobLimits,
    pub request_weight: f64,
}

/// One autocluster: jobs of one submitter that look the same to matchmaking.
#[derive(Clone, Debug)]
pub(crate) struct AutoCluster {
    /// Index into the input job list of the representative job.
    pub rep: usize,
    pub submitter: usize,
}

/// The submitter a job is charged to: `AccountingGroup@domain` if the job has an
/// accounting group (`group.user`), else `Owner@domain`; `nice-user.` prefixed for nice jobs.
pub(crate) fn job_submitter(ad: &ClassAd) -> Result<String, String> {
    let user = eval_str(ad, "User");
    let domain = user
        .as_deref()
        .and_then(|u| u.rsplit_once('@').map(|(_, d)| d.to_string()))
        .or_else(|| eval_str(ad, "UidDomain"))
        .unwrap_or_default();
    let owner = eval_str(ad, "Owner")
        .or_else(|| {
            user.as_deref()
                .map(|u| u.split('@').next().unwrap_or(u).to_string())
        })
        .ok_or_else(|| "job has neither Owner nor User".to_string())?;
    let mut base = match eval_str(ad, "AccountingGroup") {
        Some(g) if !g.is_empty() => g.split('@').next().unwrap_or(&g).to_string(),
        _ => owner,
    };
    if eval_bool(ad, "NiceUser") == Some(true) && !base.starts_with("nice-user.") {
        base = format!("nice-user.{base}");
    }
    Ok(if domain.is_empty() {
        base
    } else {
        format!("{base}@{domain}")
    })
}

pub(crate) fn job_limits(ad: &ClassAd) -> JobLimits {
    let fixed = ad.lookup("ConcurrencyLimits").is_some();
    let expr = ad.lookup("ConcurrencyLimitsExpr").cloned();
    match (fixed, expr) {
        (true, Some(_)) => JobLimits::Invalid(
            "job sets both ConcurrencyLimits and ConcurrencyLimitsExpr".to_string(),
        ),
        (false, Some(e)) => JobLimits::Expr(e),
        (true, None) => match ad.eval_attr("ConcurrencyLimits") {
            Value::Str(s) => match parse_limits(&s) {
                Ok(v) if v.is_empty() => JobLimits::None,
                Ok(v) => JobLimits::Fixed(v),
                Err(e) => JobLimits::Invalid(e),
            },
            Value::Undefined => JobLimits::None,
            _ => JobLimits::Invalid("ConcurrencyLimits is not a string".to_string()),
        },
        (false, None) => JobLimits::None,
    }
}

/// A fast non-cryptographic hasher (the rotate-xor-multiply scheme of rustc's FxHasher):
/// keys here come from the pool's own ads, and autoclusters never mix submitters.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

impl FxHasher {
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

/// Key of an ad restricted to `names`: a 64-bit hash plus the names themselves are compared
/// on collision by [`same_on`].
pub(crate) fn key_on(ad: &ClassAd, names: &[(String, u64)], extra: u64) -> u64 {
    let mut h = FxHasher::default();
    extra.hash(&mut h);
    for (n, nh) in names {
        match ad.lookup_hashed(n, *nh) {
            Some(e) => {
                1u8.hash(&mut h);
                hash_expr(e, &mut h);
            }
            None => 0u8.hash(&mut h),
        }
    }
    h.finish()
}

/// Do two ads agree on every name in `names`?
pub(crate) fn same_on(a: &ClassAd, b: &ClassAd, names: &[(String, u64)]) -> bool {
    names.iter().all(
        |(n, nh)| match (a.lookup_hashed(n, *nh), b.lookup_hashed(n, *nh)) {
            (Some(x), Some(y)) => x.same_as(y),
            (None, None) => true,
            _ => false,
        },
    )
}

/// Interning of keyed ads into classes: `(hash) -> [(representative, class id)]`.
#[derive(Default)]
pub(crate) struct Interner {
    map: HashMap<u64, Vec<(ClassAd, usize)>>,
    pub count: usize,
}

impl Interner {
    /// Class of `ad`. With `verify`, a hash hit is confirmed attribute by attribute (slot
    /// classes); without, the 64-bit key is trusted (autoclusters, which never mix
    /// submitters, so a collision could only ever affect one submitter's own jobs).
    pub fn intern(
        &mut self,
        ad: &ClassAd,
        names: &[(String, u64)],
        extra: u64,
        verify: bool,
    ) -> usize {
        let k = key_on(ad, names, extra);
        let bucket = self.map.entry(k).or_default();
        for (rep, id) in bucket.iter() {
            if !verify || same_on(rep, ad, names) {
                return *id;
            }
        }
        let id = self.count;
        self.count += 1;
        bucket.push((ad.clone(), id));
        id
    }
}

/// Job order keys (HTCondor: PreJobPrio1, PreJobPrio2, JobPrio, PostJobPrio1, PostJobPrio2
/// descending; then QDate, ClusterId, ProcId ascending). Stored so that ascending sort works.
pub(crate) fn job_order(
    ad: &ClassAd,
    cluster: i64,
    proc: i64,
) -> (i64, i64, i64, i64, i64, i64, i64, i64) {
    let n = |a: &str| eval_num(ad, a).map(|v| v as i64);
    (
        -n("PreJobPrio1").unwrap_or(i64::MIN + 1),
        -n("PreJobPrio2").unwrap_or(i64::MIN + 1),
        -n("JobPrio").unwrap_or(0),
        -n("PostJobPrio1").unwrap_or(i64::MIN + 1),
        -n("PostJobPrio2").unwrap_or(i64::MIN + 1),
        n("QDate").unwrap_or(0),
        cluster,
        proc,
    )
}

/// Autocluster key of a job: its submitter, the fingerprint of all its non-literal
/// attributes (which covers every expression that can reference anything), and the literal
/// values of the significant names. Jobs differing only in an insignificant expression land
/// in different autoclusters, which costs a little speed but never correctness.
pub(crate) fn job_key(
    ad: &ClassAd,
    names: &[(String, u64)],
    submitter: usize,
    fingerprint: u64,
) -> u64 {
    let mut h = FxHasher::default();
    h.write_usize(submitter);
    h.write_u64(fingerprint);
    for (n, nh) in names {
        match ad.lookup_hashed(n, *nh) {
            Some(Expr::Lit(v)) => {
                h.write_u8(1);
                hash_value(v, &mut h);
            }
            Some(_) => h.write_u8(2),
            None => h.write_u8(0),
        }
    }
    h.finish()
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
