//! Building one job's ClassAd from the submit hash, in the order and with the rules of
//! condor_submit 23.9.6 (submit_utils.cpp `SubmitHash::make_job_ad` and the `SetXxx`
//! functions it calls; only the vanilla universe).
//!
//! The first job of a cluster starts from the base ad (`init_base_ad`: counters at zero,
//! `QDate`, `MyType`...); every later job starts from the first job's finished ad, as
//! condor_submit chains a job to its cluster ad: a command that assigns nothing for a later
//! job leaves the cluster's value showing (so `nice_user = false` after a nice first job
//! changes nothing, exactly as condor_submit does).

mod attrs;
mod command_line;
mod files;
mod policy;
mod resources;
use crate::error::{At, SubmitError};
use crate::host::Host;
use crate::macros::Macros;
use crate::requirements;
use crate::settings::{Settings, Submitter};
use classad::{ClassAd, Expr, Value};
use std::path::{Path, PathBuf};

/// `JobUniverse` of the vanilla universe.
pub const VANILLA: i64 = 5;

/// One job's inputs.
pub(crate) struct Job<'a> {
    pub file: &'a str,
    pub macros: &'a Macros,
    pub host: &'a dyn Host,
    pub settings: &'a Settings,
    pub who: &'a Submitter,
    pub proc_id: i64,
    /// The `queue` statement this job comes from: the place of errors about defaults.
    pub queue_at: At,
    /// The cluster's first job (`None` when building it).
    pub cluster_ad: Option<&'a ClassAd>,
}

/// What a job's requirements depend on that is not in its ad.
pub(crate) struct Facts {
    pub should_transfer: ShouldTransfer,
    pub user_requirements: Option<(String, At)>,
}

/// `should_transfer_files`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShouldTransfer {
    Yes,
    No,
    IfNeeded,
}

struct B<'a> {
    j: &'a Job<'a>,
    ad: ClassAd,
    iwd: PathBuf,
}

fn parse_bool(s: &str) -> Option<bool> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("true") || t.eq_ignore_ascii_case("t") {
        return Some(true);
    }
    if t.eq_ignore_ascii_case("false") || t.eq_ignore_ascii_case("f") {
        return Some(false);
    }
    match classad::eval(&classad::parse_expr(t).ok()?) {
        Value::Bool(b) => Some(b),
        Value::Int(i) => Some(i != 0),
        Value::Real(r) => Some(r != 0.0),
        _ => None,
    }
}

/// A valid ClassAd attribute name: a letter or `_`, then letters, digits and `_`.
fn is_attr_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// An integer the way condor_submit's `string_is_long_param` reads one: a ClassAd expression
/// of constants that evaluates to an integer.
pub(crate) fn parse_long(s: &str) -> Option<i64> {
    match classad::eval(&classad::parse_expr(s.trim()).ok()?) {
        Value::Int(i) => Some(i),
        Value::Real(r) if r.fract() == 0.0 => Some(r as i64),
        _ => None,
    }
}

fn literal_int(e: Option<&Expr>) -> Option<i64> {
    match e {
        Some(Expr::Lit(Value::Int(i))) => Some(*i),
        _ => None,
    }
}

/// Joins a path the way condor_submit's `full_path` does: absolute names stay, others go
/// under `dir`; repeated slashes are squeezed.
pub(crate) fn full_path(dir: &Path, name: &str) -> String {
    let joined = if name.starts_with('/') {
        name.to_string()
    } else {
        format!("{}/{}", dir.display(), name)
    };
    let mut out = String::with_capacity(joined.len());
    for c in joined.chars() {
        if c == '/' && out.ends_with('/') {
            continue;
        }
        out.push(c);
    }
    out
}

impl<'a> B<'a> {
    fn err(&self, at: &At, message: impl Into<String>) -> SubmitError {
        let at = if at.line == 0 { &self.j.queue_at } else { at };
        at.error(self.j.file, message)
    }

    fn param(&self, name: &str, alt: Option<&str>) -> Result<Option<(String, At)>, SubmitError> {
        self.j
            .macros
            .param(name, alt, self.j.host)
            .map_err(|(at, m)| self.err(&at, m))
    }

    fn param_bool(
        &self,
        name: &str,
        alt: Option<&str>,
        default: bool,
    ) -> Result<(bool, bool), SubmitError> {
        match self.param(name, alt)? {
            None => Ok((default, false)),
            Some((v, at)) => parse_bool(&v).map(|b| (b, true)).ok_or_else(|| {
                self.err(
                    &at,
                    format!("{name}={v} is invalid, must eval to a boolean."),
                )
            }),
        }
    }

    fn expr(&mut self, attr: &str, text: &str, at: &At) -> Result<(), SubmitError> {
        let e = classad::parse_expr(text).map_err(|e| {
            self.err(
                at,
                format!("parse error in expression: {attr} = {text} ({e})"),
            )
        })?;
        self.ad.insert(attr, e);
        Ok(())
    }

    fn string(&mut self, attr: &str, v: &str) {
        self.ad.insert_str(attr, v);
    }

    fn int(&mut self, attr: &str, v: i64) {
        self.ad.insert_int(attr, v);
    }

    fn has(&self, attr: &str) -> bool {
        self.ad.contains(attr)
    }

    fn bool_attr(&self, attr: &str) -> Option<bool> {
        match self.ad.lookup(attr) {
            Some(Expr::Lit(Value::Bool(b))) => Some(*b),
            _ => None,
        }
    }

    fn string_attr(&self, attr: &str) -> Option<String> {
        match self.ad.lookup(attr) {
            Some(Expr::Lit(Value::Str(s))) => Some(s.to_string()),
            _ => None,
        }
    }

    fn size_kb(&self, path: &str) -> i64 {
        self.j
            .host
            .file_size(Path::new(path))
            .map(|b| (b as i64 + 1023) / 1024)
            .unwrap_or(0)
    }
}

/// Wraps an expression in parentheses when it would not stay whole on the right of `||`
/// (`WrapExprTreeInParensForOp`): only the conditional operator binds looser.
fn wrap_for_or(e: &Expr) -> String {
    match e {
        Expr::Cond(..) => format!("({e})"),
        _ => e.to_string(),
    }
}

/// Whether the job asks for deferred execution (`NeedsJobDeferral`).
pub(crate) fn needs_deferral(ad: &ClassAd) -> bool {
    [
        "CronMinute",
        "CronHour",
        "CronDayOfMonth",
        "CronMonth",
        "CronDayOfWeek",
        "DeferralTime",
    ]
    .iter()
    .any(|a| ad.contains(a))
}

/// The base ad of a cluster (`init_base_ad`).
pub(crate) fn base_ad(settings: &Settings, who: &Submitter) -> ClassAd {
    let mut ad = ClassAd::new();
    ad.insert_str("MyType", "Job");
    ad.insert_str("TargetType", "Machine");
    ad.insert_int("QDate", who.now);
    ad.insert_int("JobSubmitMethod", 0);
    ad.insert_value("Owner", Value::Undefined);
    for a in [
        "RemoteWallClockTime",
        "RemoteUserCpu",
        "RemoteSysCpu",
        "CumulativeRemoteUserCpu",
        "CumulativeRemoteSysCpu",
    ] {
        ad.insert_real(a, 0.0);
    }
    for a in [
        "ExitStatus",
        "NumCkpts",
        "NumJobStarts",
        "NumJobCompletions",
        "NumRestarts",
        "NumSystemHolds",
        "CommittedTime",
        "CommittedSlotTime",
        "CumulativeSlotTime",
        "TotalSuspensions",
        "LastSuspensionTime",
        "CumulativeSuspensionTime",
        "CommittedSuspensionTime",
    ] {
        ad.insert_int(a, 0);
    }
    ad.insert_bool("ExitBySignal", false);
    ad.insert_str("CondorVersion", &settings.condor_version);
    ad.insert_str("CondorPlatform", &settings.condor_platform);
    ad
}

/// Builds one job's ad (`make_job_ad`).
pub(crate) fn build(j: &Job<'_>) -> Result<ClassAd, SubmitError> {
    let start = match j.cluster_ad {
        Some(c) => c.clone(),
        None => base_ad(j.settings, j.who),
    };
    let mut b = B {
        j,
        ad: start,
        iwd: j.who.cwd.clone(),
    };
    b.universe()?;
    b.iwd()?;
    b.executable()?;
    b.arguments()?;
    b.environment()?;
    b.job_status()?;
    for f in files::STD_FILES {
        b.std_file(f)?;
    }
    b.notification()?;
    b.rank()?;
    b.periodic()?;
    b.retries()?;
    b.requests()?;
    b.concurrency_limits()?;
    b.accounting_group()?;
    b.simple()?;
    b.deferral()?;
    b.image_size()?;
    let should_transfer = b.transfer()?;
    b.auto_attributes();
    b.forced()?;
    let facts = Facts {
        should_transfer,
        user_requirements: b.param("requirements", None)?,
    };
    // `MY.Requirements` (or `+Requirements`) replaces the whole generated expression
    let forced = j.macros.entry("MY.Requirements", None).is_some();
    if !forced {
        let req =
            requirements::build(&b.ad, &facts, j.settings).map_err(|(at, m)| b.err(&at, m))?;
        let at = facts
            .user_requirements
            .map(|(_, at)| at)
            .unwrap_or_default();
        if needs_deferral(&b.ad) && !b.has("ScheddInterval") {
            match j.settings.schedd_interval.clone() {
                Some(i) => b.expr("ScheddInterval", &i, &At::default())?,
                None => b.int("ScheddInterval", 300),
            }
        }
        b.expr("Requirements", &req, &at)?;
    }
    if j.cluster_ad.is_none() {
        b.int("ClusterId", j.who.cluster);
    }
    Ok(b.ad)
}
