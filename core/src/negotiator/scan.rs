//! Reading ads: one pass over a job or slot ad, where each attribute is classified as it is
//! iterated (a job field, a significant name, both or neither) instead of being looked up
//! name by name, so that every ad's scattered attributes are read once per cycle; and the
//! readers of single attributes (pre-hashed names, literals borrowed rather than evaluated).
use super::keys::{hash_expr, FxHasher};
use classad::{ClassAd, Expr, Value};
use std::borrow::Cow;
use std::hash::Hasher;

/// The attributes preparation reads from every job ad (indices into [`JobScan::fields`]).
pub(crate) mod field {
    pub const CLUSTER: usize = 0;
    pub const PROC: usize = 1;
    pub const STATUS: usize = 2;
    pub const USER: usize = 3;
    pub const UID_DOMAIN: usize = 4;
    pub const OWNER: usize = 5;
    pub const ACCOUNTING_GROUP: usize = 6;
    pub const NICE_USER: usize = 7;
    pub const REQUEST_CPUS: usize = 8;
    pub const PRE1: usize = 9;
    pub const PRE2: usize = 10;
    pub const PRIO: usize = 11;
    pub const POST1: usize = 12;
    pub const POST2: usize = 13;
    pub const QDATE: usize = 14;
    pub const LIMITS: usize = 15;
    pub const LIMITS_EXPR: usize = 16;
    pub const COUNT: usize = 17;
    pub const NAMES: [&str; COUNT] = [
        "ClusterId",
        "ProcId",
        "JobStatus",
        "User",
        "UidDomain",
        "Owner",
        "AccountingGroup",
        "NiceUser",
        "RequestCpus",
        "PreJobPrio1",
        "PreJobPrio2",
        "JobPrio",
        "PostJobPrio1",
        "PostJobPrio2",
        "QDate",
        "ConcurrencyLimits",
        "ConcurrencyLimitsExpr",
    ];
}

const NO_ROLE: u32 = u32::MAX;

/// What an attribute name means to preparation: a job field, a significant name (index into
/// the cycle's significant names), both or neither. Lets one pass over a job's attributes
/// replace a lookup per field and per significant name.
pub(crate) struct RoleTable {
    /// Open addressing, power-of-two length: (name hash, name, field, significant index).
    slots: Vec<(u64, Box<str>, u32, u32)>,
    mask: usize,
    pub sig_len: usize,
}

impl RoleTable {
    pub fn new(sig: &[(String, u64)]) -> Self {
        let n = field::COUNT + sig.len();
        let len = (n * 4).next_power_of_two().max(16);
        let mut t = RoleTable {
            slots: vec![(0, Box::from(""), NO_ROLE, NO_ROLE); len],
            mask: len - 1,
            sig_len: sig.len(),
        };
        for (i, f) in field::NAMES.iter().enumerate() {
            t.entry(f).2 = i as u32;
        }
        for (i, (n, _)) in sig.iter().enumerate() {
            t.entry(n).3 = i as u32;
        }
        t
    }

    fn entry(&mut self, name: &str) -> &mut (u64, Box<str>, u32, u32) {
        let h = classad::name::ci_hash(name);
        let mut i = h as usize & self.mask;
        loop {
            let s = &self.slots[i];
            if s.1.is_empty() || (s.0 == h && s.1.eq_ignore_ascii_case(name)) {
                break;
            }
            i = (i + 1) & self.mask;
        }
        let s = &mut self.slots[i];
        if s.1.is_empty() {
            s.0 = h;
            s.1 = Box::from(name);
        }
        s
    }

    /// (field, significant index) of `name`, given its [`classad::name::ci_hash`].
    #[inline]
    fn roles(&self, name: &str, h: u64) -> (u32, u32) {
        let mut i = h as usize & self.mask;
        loop {
            let s = &self.slots[i];
            if s.1.is_empty() {
                return (NO_ROLE, NO_ROLE);
            }
            if s.0 == h && classad::name::eq_ci(&s.1, name) {
                return (s.2, s.3);
            }
            i = (i + 1) & self.mask;
        }
    }
}

/// What one pass over a job ad found: the expressions of its fields and the fingerprint of
/// its non-literal attributes (the significant expressions go to the caller's buffer).
pub(crate) struct JobScan<'e> {
    pub ad: &'e ClassAd,
    pub fields: [Option<&'e Expr>; field::COUNT],
    pub fingerprint: u64,
}

/// Reads a job ad once. `sig` (length `roles.sig_len`) receives the expression of each
/// significant name the ad has. The fingerprint covers every non-literal attribute (names
/// case-insensitive, expressions structurally), so two ads with the same fingerprint
/// reference the same names.
pub(crate) fn scan_job<'e>(
    ad: &'e ClassAd,
    roles: &RoleTable,
    sig: &mut Vec<Option<&'e Expr>>,
) -> JobScan<'e> {
    sig.clear();
    sig.resize(roles.sig_len, None);
    let mut fields = [None; field::COUNT];
    let mut fp = FxHasher::default();
    for (n, e) in ad.iter_named() {
        // The ad's names carry their hash: nothing is hashed here.
        let h = n.hash();
        let (f, k) = roles.roles(n.as_str(), h);
        if f != NO_ROLE {
            fields[f as usize] = Some(e);
        }
        if k != NO_ROLE {
            sig[k as usize] = Some(e);
        }
        if !matches!(e, Expr::Lit(_)) {
            // Order-independent: the attribute's own hash, summed.
            let mut one = FxHasher::default();
            one.write_u64(h);
            hash_expr(e, &mut one);
            fp.add_raw(one.finish());
        }
    }
    JobScan {
        ad,
        fields,
        fingerprint: {
            let mut f = FxHasher::default();
            f.write_u64(fp.raw());
            f.finish()
        },
    }
}

/// Fills `view` (length `roles.sig_len`) with the expression of each significant name `ad`
/// has, in one pass over its attributes.
pub(crate) fn scan_sig<'e>(ad: &'e ClassAd, roles: &RoleTable, view: &mut Vec<Option<&'e Expr>>) {
    view.clear();
    view.resize(roles.sig_len, None);
    for (n, e) in ad.iter_named() {
        let (_, k) = roles.roles(n.as_str(), n.hash());
        if k != NO_ROLE {
            view[k as usize] = Some(e);
        }
    }
}

impl<'e> JobScan<'e> {
    /// A field's value: a literal borrowed, anything else evaluated.
    #[inline]
    pub fn value(&self, f: usize) -> Cow<'e, Value> {
        match self.fields[f] {
            Some(Expr::Lit(v)) => Cow::Borrowed(v),
            Some(_) => Cow::Owned(self.ad.eval_attr(field::NAMES[f])),
            None => Cow::Owned(Value::Undefined),
        }
    }
    #[inline]
    pub fn num(&self, f: usize) -> Option<f64> {
        number(&self.value(f))
    }
    #[inline]
    pub fn bool(&self, f: usize) -> Option<bool> {
        truth(&self.value(f))
    }
    #[inline]
    pub fn str(&self, f: usize) -> Option<Cow<'e, str>> {
        string(self.value(f))
    }
}

/// An attribute name with its case-insensitive hash computed once per cycle rather than once
/// per ad (preparation reads a dozen names from each of tens of thousands of job ads):
/// classad's own [`classad::Name`], looked up with [`ClassAd::lookup_by_name`].
pub(crate) type HName = classad::Name;

/// The names preparation reads from every slot ad.
pub(crate) struct SlotNames {
    pub absent: HName,
    pub offline: HName,
    pub state: HName,
    pub activity: HName,
    pub partitionable: HName,
    pub preempting_group: HName,
    pub preempting_user: HName,
    pub accounting_group: HName,
    pub remote_user: HName,
    pub limits: HName,
    pub retirement: HName,
    pub preempting_rank: HName,
    pub current_rank: HName,
    pub name: HName,
}

impl SlotNames {
    pub fn new() -> Self {
        SlotNames {
            absent: HName::new("Absent"),
            offline: HName::new("Offline"),
            state: HName::new("State"),
            activity: HName::new("Activity"),
            partitionable: HName::new("PartitionableSlot"),
            preempting_group: HName::new("PreemptingAccountingGroup"),
            preempting_user: HName::new("PreemptingUser"),
            accounting_group: HName::new("AccountingGroup"),
            remote_user: HName::new("RemoteUser"),
            limits: HName::new("ConcurrencyLimits"),
            retirement: HName::new("RetirementTimeRemaining"),
            preempting_rank: HName::new("PreemptingRank"),
            current_rank: HName::new("CurrentRank"),
            name: HName::new("Name"),
        }
    }
}

/// The value of a pre-hashed attribute: a literal is borrowed (no clone, no allocation),
/// anything else is evaluated.
#[inline]
pub(crate) fn value_h<'e>(ad: &'e ClassAd, n: &HName) -> Cow<'e, Value> {
    match ad.lookup_by_name(n) {
        Some(Expr::Lit(v)) => Cow::Borrowed(v),
        Some(_) => Cow::Owned(ad.eval_attr(n.as_str())),
        None => Cow::Owned(Value::Undefined),
    }
}

#[inline]
pub(crate) fn num_h(ad: &ClassAd, n: &HName) -> Option<f64> {
    number(&value_h(ad, n))
}

/// A value as a number, as preparation reads numeric attributes (booleans count as 0/1).
#[inline]
pub(crate) fn number(v: &Value) -> Option<f64> {
    match *v {
        Value::Int(i) => Some(i as f64),
        Value::Real(r) => Some(r),
        Value::Bool(b) => Some(if b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

#[inline]
pub(crate) fn bool_h(ad: &ClassAd, n: &HName) -> Option<bool> {
    truth(&value_h(ad, n))
}

/// A value as a flag (a boolean, or an integer that is not 0).
#[inline]
pub(crate) fn truth(v: &Value) -> Option<bool> {
    match *v {
        Value::Bool(b) => Some(b),
        Value::Int(i) => Some(i != 0),
        _ => None,
    }
}

/// A string attribute, borrowed from the ad when it is a literal.
#[inline]
pub(crate) fn str_h<'e>(ad: &'e ClassAd, n: &HName) -> Option<Cow<'e, str>> {
    string(value_h(ad, n))
}

/// A string value, still borrowed if it was.
#[inline]
pub(crate) fn string(v: Cow<'_, Value>) -> Option<Cow<'_, str>> {
    match v {
        Cow::Borrowed(Value::Str(s)) => Some(Cow::Borrowed(&**s)),
        Cow::Owned(Value::Str(s)) => Some(Cow::Owned(s.to_string())),
        _ => None,
    }
}

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
