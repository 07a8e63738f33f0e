//! Evaluating the policy as the startd does (`Resource::eval_expr` in HTCondor's
//! `src/condor_startd.V6/Resource.cpp`): the slot's internal ad is MY, the claim's job (or
//! request) ad is TARGET, a `_VANILLA` form wins for a vanilla job when it evaluates to a
//! boolean, and a number counts as a boolean (non-zero is true, libclassad's
//! `EvaluateAttrBoolEquiv`). Evaluating with no TARGET is HTCondor's "local evaluation": job
//! attributes are UNDEFINED.
use super::clock::{pin_clock, CURRENT_TIME};
use super::knobs::Policy;
use classad::eval::ops::bool_equiv;
use classad::{ClassAd, Value};

/// `JobUniverse` of a vanilla job.
pub const VANILLA_UNIVERSE: i64 = 5;

/// The slot's internal ad at `now`: the machine ad the caller keeps, the policy expressions,
/// the slot's own attributes (`State`, `Activity`, ...) and `CurrentTime = now`.
pub struct View {
    ad: ClassAd,
}

impl View {
    /// Builds the view: `machine`, then `policy`'s expressions, then `own` (the attributes the
    /// state machine owns), then `CurrentTime`.
    pub fn new(machine: &ClassAd, policy: &Policy, own: &ClassAd, now: i64) -> View {
        let mut ad = machine.clone();
        for (name, e) in &policy.exprs {
            ad.insert_shared(name, e.clone());
        }
        ad.update(own);
        ad.insert_int(CURRENT_TIME, now);
        View { ad }
    }

    /// The ad itself (MY).
    pub fn ad(&self) -> &ClassAd {
        &self.ad
    }

    /// Attribute `name` against `target`, as a boolean; `None` when it is undefined, an
    /// error, or not a boolean or number.
    pub fn bool(&self, name: &str, target: Option<&ClassAd>) -> Option<bool> {
        if !self.ad.contains(name) {
            return None;
        }
        bool_equiv(&self.ad.eval_attr_with(name, target))
    }

    /// A policy expression for the job in `target`: `NAME_VANILLA` first for a vanilla job,
    /// when it gives a boolean, then `NAME`.
    pub fn policy(&self, name: &str, target: Option<&ClassAd>) -> Option<bool> {
        if target.is_some_and(is_vanilla) {
            if let Some(b) = self.bool(&format!("{name}_VANILLA"), target) {
                return Some(b);
            }
        }
        self.bool(name, target)
    }

    /// Attribute `name` against `target` as a whole number of seconds (reals truncated,
    /// booleans 0/1, as HTCondor's `EvalInteger`); `None` when it is not a number.
    pub fn int(&self, name: &str, target: Option<&ClassAd>) -> Option<i64> {
        if !self.ad.contains(name) {
            return None;
        }
        as_int(&self.ad.eval_attr_with(name, target))
    }

    /// Attribute `name` against `target` as a real; `None` when it is not a number.
    pub fn real(&self, name: &str, target: Option<&ClassAd>) -> Option<f64> {
        self.ad.eval_attr_with(name, target).as_number()
    }
}

/// A job ad's own attribute `name`, evaluated with the job as MY and the slot as TARGET (how
/// the startd reads the job's `MaxJobRetirementTime` and `JobMaxVacateTime`): `None` when the
/// job does not set it, `Some(None)` when it is not a number. The job's clock is the slot's
/// `now` too (its `time()` pinned, `CurrentTime` set).
pub fn job_int(job: &ClassAd, name: &str, slot: &View) -> Option<Option<i64>> {
    let e = job.lookup(name)?;
    let mut mine = job.clone();
    if let Some(now) = slot.ad().eval_attr(CURRENT_TIME).as_int() {
        mine.insert_int(CURRENT_TIME, now);
    }
    Some(as_int(&mine.eval_expr_with(&pin_clock(e), Some(slot.ad()))))
}

fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Real(r) if r.is_finite() => Some(*r as i64),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

/// Whether a job ad is a vanilla-universe job.
pub fn is_vanilla(job: &ClassAd) -> bool {
    job.eval_attr("JobUniverse").as_int() == Some(VANILLA_UNIVERSE)
}
