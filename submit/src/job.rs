//! Building one job's ClassAd from the submit hash, in the order and with the rules of
//! condor_submit 23.9.6 (submit_utils.cpp `SubmitHash::make_job_ad` and the `SetXxx`
//! functions it calls; only the vanilla universe).
//!
//! The first job of a cluster starts from the base ad (`init_base_ad`: counters at zero,
//! `QDate`, `MyType`...); every later job starts from the first job's finished ad, as
//! condor_submit chains a job to its cluster ad: a command that assigns nothing for a later
//! job leaves the cluster's value showing (so `nice_user = false` after a nice first job
//! changes nothing, exactly as condor_submit does).
use crate::args::{self, Arguments, Environment};
use crate::error::{At, SubmitError};
use crate::host::Host;
use crate::macros::Macros;
use crate::requirements;
use crate::settings::{Settings, Submitter};
use crate::units::parse_bytes;
use classad::{ClassAd, Expr, Value};
use std::path::{Path, PathBuf};

/// `JobStatus` of an idle job.
const IDLE: i64 = 1;
/// `JobStatus` of a held job.
const HELD: i64 = 5;
/// `HoldReasonCode` of a job submitted on hold.
const SUBMITTED_ON_HOLD: i64 = 15;
/// `JobUniverse` of the vanilla universe.
pub const VANILLA: i64 = 5;
/// `DeferralWindow` when none is given.
const DEFERRAL_WINDOW_DEFAULT: i64 = 0;
/// `DeferralPrepTime` when none is given.
const DEFERRAL_PREP_TIME_DEFAULT: i64 = 300;

/// The simple commands: (command, attribute, how the value is stored). A subset of
/// submit_utils.cpp `prunable_keywords` with the commands people use.
#[derive(Clone, Copy)]
enum Kind {
    Expr,
    Str,
    StrStripQuotes,
    Int,
    Bool,
    LogFile,
}

const SIMPLE: &[(&str, &str, Kind)] = &[
    (
        "job_ad_information_attrs",
        "JobAdInformationAttrs",
        Kind::Str,
    ),
    ("notify_user", "NotifyUser", Kind::Str),
    ("want_graceful_removal", "WantGracefulRemoval", Kind::Expr),
    ("job_max_vacate_time", "JobMaxVacateTime", Kind::Expr),
    ("log", "UserLog", Kind::LogFile),
    ("log_xml", "UserLogUseXML", Kind::Bool),
    ("cron_minute", "CronMinute", Kind::Str),
    ("cron_hour", "CronHour", Kind::Str),
    ("cron_day_of_month", "CronDayOfMonth", Kind::Str),
    ("cron_month", "CronMonth", Kind::Str),
    ("cron_day_of_week", "CronDayOfWeek", Kind::Str),
    ("description", "JobDescription", Kind::Str),
    ("batch_name", "JobBatchName", Kind::StrStripQuotes),
    (
        "max_job_retirement_time",
        "MaxJobRetirementTime",
        Kind::Expr,
    ),
    ("job_lease_duration", "JobLeaseDuration", Kind::Expr),
    ("coresize", "CoreSize", Kind::Int),
    ("priority", "JobPrio", Kind::Int),
    ("max_transfer_input_mb", "MaxTransferInputMB", Kind::Expr),
    ("max_transfer_output_mb", "MaxTransferOutputMB", Kind::Expr),
    (
        "erase_output_and_error_on_restart",
        "DontAppend",
        Kind::Bool,
    ),
    ("allowed_job_duration", "AllowedJobDuration", Kind::Expr),
    (
        "allowed_execute_duration",
        "AllowedExecuteDuration",
        Kind::Expr,
    ),
];

/// One of the standard files: its commands and attributes.
#[derive(Clone, Copy)]
struct StdFile {
    key: &'static str,
    alt: &'static str,
    attr: &'static str,
    transfer_key: &'static str,
    transfer_attr: &'static str,
    stream_key: &'static str,
    stream_attr: &'static str,
}

const STD_FILES: &[StdFile] = &[
    StdFile {
        key: "input",
        alt: "stdin",
        attr: "In",
        transfer_key: "transfer_input",
        transfer_attr: "TransferIn",
        stream_key: "stream_input",
        stream_attr: "StreamIn",
    },
    StdFile {
        key: "output",
        alt: "stdout",
        attr: "Out",
        transfer_key: "transfer_output",
        transfer_attr: "TransferOut",
        stream_key: "stream_output",
        stream_attr: "StreamOut",
    },
    StdFile {
        key: "error",
        alt: "stderr",
        attr: "Err",
        transfer_key: "transfer_error",
        transfer_attr: "TransferErr",
        stream_key: "stream_error",
        stream_attr: "StreamErr",
    },
];

/// The universes condor_submit knows, by name and number; only vanilla is built.
const UNIVERSES: &[(&str, i64)] = &[
    ("standard", 1),
    ("pipe", 2),
    ("linda", 3),
    ("pvm", 4),
    ("vanilla", 5),
    ("pvmd", 6),
    ("scheduler", 7),
    ("mpi", 8),
    ("grid", 9),
    ("java", 10),
    ("parallel", 11),
    ("local", 12),
    ("vm", 13),
    ("docker", 5),
    ("container", 5),
];

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

    fn universe(&mut self) -> Result<(), SubmitError> {
        let Some((u, at)) = self.param("universe", Some("JobUniverse"))? else {
            self.int("JobUniverse", VANILLA);
            return Ok(());
        };
        let number = u.parse::<i64>().ok().filter(|n| *n != 0);
        let known = UNIVERSES
            .iter()
            .find(|(name, n)| u.eq_ignore_ascii_case(name) || number == Some(*n));
        match known {
            Some((name, _)) if name.eq_ignore_ascii_case("vanilla") || number == Some(VANILLA) => {
                self.int("JobUniverse", VANILLA);
                Ok(())
            }
            Some(_) => Err(self.err(
                &at,
                format!("universe {u} is not supported by Aerie: only the vanilla universe is"),
            )),
            None => Err(self.err(&at, format!("I don't know about the '{u}' universe."))),
        }
    }

    fn iwd(&mut self) -> Result<(), SubmitError> {
        let given = match self.param("initialdir", Some("Iwd"))? {
            Some(v) => Some(v),
            None => self.param("initial_dir", Some("job_iwd"))?,
        };
        let cwd = &self.j.who.cwd;
        let iwd = match &given {
            Some((d, _)) => full_path(cwd, d),
            None => full_path(Path::new("/"), &cwd.display().to_string()),
        };
        let iwd = if iwd.len() > 1 {
            iwd.trim_end_matches('/').to_string()
        } else {
            iwd
        };
        if !self.j.host.is_dir(Path::new(&iwd)) {
            let at = given.map(|(_, at)| at).unwrap_or_default();
            return Err(self.err(&at, format!("No such directory: {iwd}")));
        }
        self.string("Iwd", &iwd);
        self.string("JobSubmitFile", &self.j.who.submit_file.clone());
        self.iwd = PathBuf::from(iwd);
        Ok(())
    }

    fn executable(&mut self) -> Result<(), SubmitError> {
        let Some((exe, at)) = self.param("executable", Some("Cmd"))? else {
            if self.has("Cmd") {
                return Ok(());
            }
            return Err(self.err(&At::default(), "No 'executable' parameter was provided"));
        };
        let mut transfer = true;
        if let Some((v, _)) = self.param("transfer_executable", Some("TransferExecutable"))? {
            if v.starts_with(['F', 'f']) {
                self.ad.insert_bool("TransferExecutable", false);
                transfer = false;
            }
        }
        let full = if transfer {
            full_path(&self.j.who.cwd, &exe)
        } else {
            exe.clone()
        };
        if transfer && !self.j.host.exists(Path::new(&full)) {
            return Err(self.err(&at, format!("Executable file {full} does not exist")));
        }
        self.string("Cmd", &full);
        Ok(())
    }

    fn arguments(&mut self) -> Result<(), SubmitError> {
        let a1 = self.param("arguments", Some("Args"))?;
        let a2 = self.param("arguments2", None)?;
        let allow_v1 = self.param_bool("allow_arguments_v1", None, false)?.0;
        let parsed = match (&a1, &a2) {
            (Some((_, at)), Some(_)) if !allow_v1 => {
                return Err(self.err(
                    at,
                    "If you wish to specify both 'arguments' and 'arguments2' for maximal compatibility with different versions of Condor, then you must also specify allow_arguments_v1=true.",
                ))
            }
            (_, Some((v, at))) => args::parse_arguments_v2(v).map_err(|m| (at.clone(), m, v.clone())),
            (Some((v, at)), None) => args::parse_arguments(v).map_err(|m| (at.clone(), m, v.clone())),
            (None, None) => {
                if self.has("Args") || self.has("Arguments") {
                    return Ok(());
                }
                Ok(Arguments::V2(String::new()))
            }
        };
        match parsed {
            Ok(Arguments::V1(s)) => self.string("Args", &s),
            Ok(Arguments::V2(s)) => self.string("Arguments", &s),
            Err((at, m, v)) => {
                return Err(self.err(
                    &at,
                    format!("{m} (the full arguments you specified were: {v})"),
                ))
            }
        }
        Ok(())
    }

    fn environment(&mut self) -> Result<(), SubmitError> {
        let env1 = self.param("environment", Some("env"))?;
        let env2 = self.param("environment2", None)?;
        let allow_v1 = self.param_bool("allow_environment_v1", None, false)?.0;
        let prefer_v1 = env1.is_some()
            && env2.is_none()
            && self
                .param("env", None)?
                .is_some_and(|(v, _)| !args::is_v2_quoted(&v));
        if let (Some((_, at)), Some(_)) = (&env1, &env2) {
            if !allow_v1 {
                return Err(self.err(
                    at,
                    "If you wish to specify both 'environment' and 'environment2' for maximal compatibility with different versions of Condor, then you must also specify allow_environment_v1=true.",
                ));
            }
        }
        let mut env = Environment::default();
        let merged = match (&env1, &env2) {
            (_, Some((v, at))) => env.merge_v2(v).map_err(|m| (at.clone(), m, v.clone())),
            (Some((v, at)), None) => env.merge(v).map_err(|m| (at.clone(), m, v.clone())),
            (None, None) => Ok(()),
        };
        if let Err((at, m, v)) = merged {
            return Err(self.err(
                &at,
                format!("{m} (the environment you specified was: '{v}')"),
            ));
        }
        if let Some((v, at)) = self.param("getenv", Some("get_env"))? {
            match parse_bool(&v) {
                Some(false) => {}
                Some(true) => {
                    for (k, val) in self.j.host.environment() {
                        env.import(&k, &val);
                    }
                }
                None => return Err(self.err(
                    &at,
                    "getenv with a list of variables is not supported by Aerie: use true or false",
                )),
            }
        }
        if prefer_v1 {
            let (v, at) = env1.clone().unwrap_or_default();
            let raw = env.to_v1().map_err(|m| {
                self.err(
                    &at,
                    format!("{m} (the environment you specified was: '{v}')"),
                )
            })?;
            self.string("Env", &raw);
            self.string("EnvDelim", ";");
        } else {
            self.string("Environment", &env.to_v2());
        }
        Ok(())
    }

    fn job_status(&mut self) -> Result<(), SubmitError> {
        let (hold, _) = self.param_bool("hold", None, false)?;
        if hold {
            self.int("JobStatus", HELD);
            self.int("HoldReasonCode", SUBMITTED_ON_HOLD);
            self.string("HoldReason", "submitted on hold at user's request");
        } else {
            self.int("JobStatus", IDLE);
        }
        self.int("EnteredCurrentStatus", self.j.who.now);
        Ok(())
    }

    /// `input`/`output`/`error` (`SetStdin`, `SetStdout`, `SetStderr`).
    fn std_file(&mut self, f: &StdFile) -> Result<(), SubmitError> {
        let StdFile {
            key,
            alt,
            attr,
            transfer_key,
            transfer_attr,
            stream_key,
            stream_attr,
        } = *f;
        let mut transfer = self.bool_attr(transfer_attr).unwrap_or(true);
        let (t, _) = self.param_bool(transfer_key, Some(transfer_attr), transfer)?;
        let must_set = t != transfer;
        transfer = t;
        let stream_default = self.bool_attr(stream_attr).unwrap_or(false);
        let (stream, _) = self.param_bool(stream_key, Some(stream_attr), stream_default)?;
        let value = self.param(key, Some(alt))?;
        if value.is_some() || !self.has(attr) {
            let file = match &value {
                None => {
                    transfer = false;
                    "/dev/null".to_string()
                }
                Some((v, _)) if v == "/dev/null" => {
                    transfer = false;
                    v.clone()
                }
                Some((v, _)) => v.clone(),
            };
            self.string(attr, &file);
        }
        if transfer {
            self.ad.insert_bool(stream_attr, stream);
            if must_set {
                self.ad.insert_bool(transfer_attr, true);
            }
        } else {
            self.ad.insert_bool(transfer_attr, false);
        }
        Ok(())
    }

    fn notification(&mut self) -> Result<(), SubmitError> {
        let given = self.param("notification", Some("JobNotification"))?;
        let (how, at) = match given {
            Some((v, at)) => (Some(v), at),
            None => (self.j.settings.default_notification.clone(), At::default()),
        };
        let n = match how.as_deref().map(str::to_ascii_lowercase).as_deref() {
            None | Some("never") => 0,
            Some("always") => 1,
            Some("complete") => 2,
            Some("error") => 3,
            Some(_) => {
                return Err(self.err(
                    &at,
                    "Notification must be 'Never', 'Always', 'Complete', or 'Error'",
                ))
            }
        };
        self.int("JobNotification", n);
        Ok(())
    }

    fn rank(&mut self) -> Result<(), SubmitError> {
        let given = match self.param("rank", None)? {
            Some(v) => Some(v),
            None => self.param("preferences", None)?,
        };
        let s = self.j.settings;
        let (rank, at) = match given {
            Some((r, at)) => (Some(r), at),
            None => (s.default_rank.clone(), At::default()),
        };
        let rank = match (rank, &s.append_rank) {
            (Some(r), Some(a)) => Some(format!("({r}) + ({a})")),
            (None, Some(a)) => Some(a.clone()),
            (r, None) => r,
        };
        match rank {
            Some(r) => self.expr("Rank", &r, &at),
            None => {
                self.ad.insert_real("Rank", 0.0);
                Ok(())
            }
        }
    }

    fn periodic(&mut self) -> Result<(), SubmitError> {
        for (key, attr) in [
            ("periodic_hold", "PeriodicHold"),
            ("periodic_hold_reason", "PeriodicHoldReason"),
            ("periodic_hold_subcode", "PeriodicHoldSubCode"),
            ("periodic_release", "PeriodicRelease"),
            ("periodic_remove", "PeriodicRemove"),
            ("periodic_vacate", "PeriodicVacate"),
            ("on_exit_hold_reason", "OnExitHoldReason"),
            ("on_exit_hold_subcode", "OnExitHoldSubCode"),
        ] {
            if let Some((v, at)) = self.param(key, Some(attr))? {
                self.expr(attr, &v, &at)?;
            }
        }
        match self.param("leave_in_queue", Some("LeaveJobInQueue"))? {
            Some((v, at)) => self.expr("LeaveJobInQueue", &v, &at)?,
            None if !self.has("LeaveJobInQueue") => self.ad.insert_bool("LeaveJobInQueue", false),
            None => {}
        }
        Ok(())
    }

    /// `max_retries`, `success_exit_code`, `retry_until`, `on_exit_remove`, `on_exit_hold`
    /// (`SetJobRetries`).
    fn retries(&mut self) -> Result<(), SubmitError> {
        let erc = self.param("on_exit_remove", Some("OnExitRemove"))?;
        let ehc = self.param("on_exit_hold", Some("OnExitHold"))?;
        let long = |b: &Self, key: &str, alt: &str| -> Result<Option<(i64, At)>, SubmitError> {
            match b.param(key, Some(alt))? {
                None => Ok(None),
                Some((v, at)) => parse_long(&v)
                    .map(|n| Some((n, at.clone())))
                    .ok_or_else(|| {
                        b.err(
                            &at,
                            format!("{key}={v} is invalid, must eval to an integer."),
                        )
                    }),
            }
        };
        let max_retries = long(self, "max_retries", "JobMaxRetries")?;
        let success = long(self, "success_exit_code", "JobSuccessExitCode")?;
        let retry_until = self.param("retry_until", None)?;
        if max_retries.is_none() && success.is_none() && retry_until.is_none() {
            if let Some((v, at)) = &erc {
                self.expr("OnExitRemove", v, at)?;
            }
            if let Some((v, at)) = &ehc {
                self.expr("OnExitHold", v, at)?;
            }
            return Ok(());
        }
        let mut until = None;
        if let Some((v, at)) = &retry_until {
            let e = classad::parse_expr(v).map_err(|_| {
                self.err(
                    at,
                    format!(
                        "retry_until={v} is invalid, it must be an integer or boolean expression."
                    ),
                )
            })?;
            let refs = e.references();
            until = Some(if refs.internal.is_empty() && refs.external.is_empty() {
                match parse_long(v) {
                    Some(code) => format!("ExitCode =?= {code}"),
                    None => wrap_for_or(&e),
                }
            } else {
                wrap_for_or(&e)
            });
        }
        match max_retries {
            Some((n, _)) => self.int("JobMaxRetries", n),
            None if !self.has("JobMaxRetries") => self.int("JobMaxRetries", 2),
            None => {}
        }
        match &ehc {
            Some((v, at)) => self.expr("OnExitHold", v, at)?,
            None if !self.has("OnExitHold") => self.ad.insert_bool("OnExitHold", false),
            None => {}
        }
        if self.has("OnExitRemove") && success.is_none() && until.is_none() {
            return Ok(());
        }
        let mut code_check = match success {
            Some((code, _)) => {
                self.int("JobSuccessExitCode", code);
                "JobSuccessExitCode".to_string()
            }
            None => "0".to_string(),
        };
        if let Some(u) = until {
            code_check.push_str(" || ");
            code_check.push_str(&u);
        }
        let mut remove = format!("NumJobCompletions > JobMaxRetries || ExitCode =?= {code_check}");
        if let Some((v, at)) = &erc {
            let e = classad::parse_expr(v).map_err(|_| {
                self.err(
                    at,
                    format!("on_exit_remove={v} is invalid, it must be a boolean expression."),
                )
            })?;
            remove.push_str(" || ");
            remove.push_str(&wrap_for_or(&e));
        }
        let at = self.j.queue_at.clone();
        self.expr("OnExitRemove", &remove, &at)
    }

    /// `request_cpus`, `request_memory` (MiB), `request_disk` (KiB) and `request_<name>`
    /// (`SetRequestResources`).
    fn requests(&mut self) -> Result<(), SubmitError> {
        let s = self.j.settings;
        // the special ones
        let mem = self.param("request_memory", Some("RequestMemory"))?;
        let disk = self.param("request_disk", Some("RequestDisk"))?;
        let cpus = self.param("request_cpus", Some("RequestCpus"))?;
        let defaulted = |b: &Self, given: Option<(String, At)>, attr: &str, default: &str| {
            given.or_else(|| {
                (!b.has(attr) && b.j.cluster_ad.is_none())
                    .then(|| (default.to_string(), At::default()))
            })
        };
        if let Some((v, at)) = defaulted(self, cpus, "RequestCpus", &s.default_request_cpus) {
            if !v.eq_ignore_ascii_case("undefined") {
                self.expr("RequestCpus", &v, &at)?;
            }
        }
        if let Some((v, at)) = defaulted(self, disk, "RequestDisk", &s.default_request_disk) {
            match parse_bytes(&v, 1024) {
                Some(kb) => self.int("RequestDisk", kb),
                None if v.eq_ignore_ascii_case("undefined") => {}
                None => self.expr("RequestDisk", &v, &at)?,
            }
        }
        if let Some((v, at)) = defaulted(self, mem, "RequestMemory", &s.default_request_memory) {
            match parse_bytes(&v, 1 << 20) {
                Some(mb) => self.int("RequestMemory", mb),
                None if v.eq_ignore_ascii_case("undefined") => {}
                None => self.expr("RequestMemory", &v, &at)?,
            }
        }
        // custom resources: request_<name> = expr
        let custom: Vec<(String, String, usize)> = self
            .j
            .macros
            .entries()
            .filter_map(|e| {
                let lower = e.name.to_ascii_lowercase();
                let tag = lower.strip_prefix("request_")?;
                let special = ["cpus", "cpu", "memory", "disk", "gpus", "gpu"];
                (tag.len() >= 2 && !tag.starts_with('_') && !special.contains(&tag)).then(|| {
                    (
                        e.name.clone(),
                        e.name["request_".len()..].to_string(),
                        e.line,
                    )
                })
            })
            .collect();
        for (name, tag, _) in custom {
            if let Some((v, at)) = self.param(&name, None)? {
                self.expr(&format!("Request{tag}"), &v, &at)?;
            }
        }
        if self.param("request_gpus", Some("RequestGPUs"))?.is_some() {
            return Err(self.err(
                &self
                    .param("request_gpus", Some("RequestGPUs"))?
                    .map(|(_, at)| at)
                    .unwrap_or_default(),
                "request_gpus is not supported by Aerie yet",
            ));
        }
        Ok(())
    }

    fn concurrency_limits(&mut self) -> Result<(), SubmitError> {
        let limits = self.param("concurrency_limits", None)?;
        let expr = self.param("concurrency_limits_expr", None)?;
        match (limits, expr) {
            (Some((_, at)), Some(_)) => Err(self.err(
                &at,
                "concurrency_limits and concurrency_limits_expr can't be used together",
            )),
            (Some((v, at)), None) => {
                let mut list: Vec<String> = v
                    .to_ascii_lowercase()
                    .split(|c: char| c == ',' || c.is_ascii_whitespace())
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                for l in &list {
                    // name[.sub][:increment]; the increment is not checked (NegotiationUtils.cpp
                    // `ParseConcurrencyLimit`)
                    let name = l.split(':').next().unwrap_or("");
                    let valid = match name.split_once('.') {
                        Some((head, sub)) => is_attr_name(head) && is_attr_name(sub),
                        None => is_attr_name(name),
                    };
                    if !valid {
                        return Err(self.err(&at, format!("Invalid concurrency limit '{l}'")));
                    }
                }
                list.sort();
                let joined = list.join(",");
                if !joined.is_empty() {
                    self.string("ConcurrencyLimits", &joined);
                }
                Ok(())
            }
            (None, Some((v, at))) => self.expr("ConcurrencyLimits", &v, &at),
            (None, None) => Ok(()),
        }
    }

    fn accounting_group(&mut self) -> Result<(), SubmitError> {
        let mut group = self.param("accounting_group", Some("AccountingGroup"))?;
        let (nice, _) = self.param_bool("nice_user", Some("NiceUser"), false)?;
        if nice {
            if group.is_none() {
                let g = self.j.settings.nice_user_group.clone();
                if !g.is_empty() {
                    group = Some((g, At::default()));
                }
            }
            // nice-user jobs may be preempted at once unless they say otherwise
            self.int("MaxJobRetirementTime", 0);
        }
        let gu = self.param("accounting_group_user", Some("AcctGroupUser"))?;
        if group.is_none() && gu.is_none() {
            return Ok(());
        }
        let (user, user_at) = gu.unwrap_or_else(|| (self.j.who.user.clone(), At::default()));
        let valid = |s: &str| {
            !s.is_empty()
                && !s.contains(|c: char| c.is_whitespace() || c == '@' || c == '"' || c == '\'')
        };
        if let Some((g, at)) = &group {
            if !valid(g) {
                return Err(self.err(at, format!("Invalid accounting_group: {g}")));
            }
        }
        if !valid(&user) {
            return Err(self.err(&user_at, format!("Invalid accounting_group_user: {user}")));
        }
        self.string("AcctGroupUser", &user);
        match group {
            Some((g, _)) => {
                self.string("AcctGroup", &g);
                self.string("AccountingGroup", &format!("{g}.{user}"));
            }
            None => self.string("AccountingGroup", &user),
        }
        Ok(())
    }

    fn simple(&mut self) -> Result<(), SubmitError> {
        for &(key, attr, kind) in SIMPLE {
            let Some((v, at)) = self.param(key, Some(attr))? else {
                continue;
            };
            match kind {
                Kind::Expr => self.expr(attr, &v, &at)?,
                Kind::Str => self.string(attr, &v),
                Kind::StrStripQuotes => {
                    let t = v.trim();
                    let t = t
                        .strip_prefix('"')
                        .and_then(|t| t.strip_suffix('"'))
                        .unwrap_or(t);
                    self.string(attr, t);
                }
                Kind::Int => {
                    let n = parse_long(&v).ok_or_else(|| {
                        self.err(
                            &at,
                            format!("{key}={v} is invalid, must eval to an integer."),
                        )
                    })?;
                    self.int(attr, n);
                }
                Kind::Bool => {
                    let b = parse_bool(&v).ok_or_else(|| {
                        self.err(
                            &at,
                            format!("{key}={v} is invalid, must eval to a boolean."),
                        )
                    })?;
                    self.ad.insert_bool(attr, b);
                }
                Kind::LogFile => {
                    let p = full_path(&self.iwd, &v);
                    self.string(attr, &p);
                }
            }
        }
        Ok(())
    }

    /// `deferral_time`, `deferral_window`/`cron_window`, `deferral_prep_time`/`cron_prep_time`
    /// (`SetJobDeferral`); the `cron_*` attributes are set by [`B::simple`] before.
    fn deferral(&mut self) -> Result<(), SubmitError> {
        let nonneg =
            |b: &mut Self, attr: &str, key: &str, v: &str, at: &At| -> Result<(), SubmitError> {
                b.expr(attr, v, at)?;
                if let Some(Expr::Lit(lit)) = b.ad.lookup(attr) {
                    if !matches!(lit, Value::Int(i) if *i >= 0) {
                        return Err(b.err(
                            at,
                            format!("{key} = {v} is invalid, must eval to a non-negative integer."),
                        ));
                    }
                }
                Ok(())
            };
        if let Some((v, at)) = self.param("deferral_time", Some("DeferralTime"))? {
            nonneg(self, "DeferralTime", "deferral_time", &v, &at)?;
        }
        if !needs_deferral(&self.ad) {
            return Ok(());
        }
        let window = match self.param("cron_window", Some("CronWindow"))? {
            Some(v) => Some(("cron_window", v)),
            None => self
                .param("deferral_window", Some("DeferralWindow"))?
                .map(|v| ("deferral_window", v)),
        };
        match window {
            Some((key, (v, at))) => nonneg(self, "DeferralWindow", key, &v, &at)?,
            None => self.int("DeferralWindow", DEFERRAL_WINDOW_DEFAULT),
        }
        let prep = match self.param("cron_prep_time", Some("CronPrepTime"))? {
            Some(v) => Some(("cron_prep_time", v)),
            None => self
                .param("deferral_prep_time", Some("DeferralPrepTime"))?
                .map(|v| ("deferral_prep_time", v)),
        };
        match prep {
            Some((key, (v, at))) => nonneg(self, "DeferralPrepTime", key, &v, &at)?,
            None => self.int("DeferralPrepTime", DEFERRAL_PREP_TIME_DEFAULT),
        }
        Ok(())
    }

    fn image_size(&mut self) -> Result<(), SubmitError> {
        if self.j.proc_id < 1 {
            let cmd = self.string_attr("Cmd").unwrap_or_default();
            let kb = if cmd.is_empty() {
                0
            } else {
                self.size_kb(&cmd)
            };
            self.int("ExecutableSize", kb);
        }
        match self.param("image_size", Some("ImageSize"))? {
            Some((v, at)) => {
                let kb = parse_bytes(&v, 1024).unwrap_or(0);
                if kb < 1 {
                    return Err(self.err(
                        &at,
                        format!("'{v}' is not valid for Image Size: it must be positive"),
                    ));
                }
                self.int("ImageSize", kb);
            }
            None if !self.has("ImageSize") => {
                let exe = literal_int(self.ad.lookup("ExecutableSize")).unwrap_or(0);
                self.int("ImageSize", exe);
            }
            None => {}
        }
        Ok(())
    }

    /// `transfer_input_files`, `transfer_output_files`, `should_transfer_files`,
    /// `when_to_transfer_output` (`SetTransferFiles`).
    fn transfer(&mut self) -> Result<ShouldTransfer, SubmitError> {
        let split = |v: &str| -> Vec<String> {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        };
        let mut input_kb = 0i64;
        let inputs = self.param("transfer_input_files", Some("TransferInputFiles"))?;
        let input_list = match &inputs {
            Some((v, _)) if v != "\"\"" => split(v),
            _ => Vec::new(),
        };
        for f in &input_list {
            if !f.contains("://") {
                input_kb += self.size_kb(&full_path(&self.iwd, f));
            }
        }
        if self.bool_attr("TransferIn").unwrap_or(true) {
            if let Some(stdin) = self.string_attr("In") {
                if !stdin.is_empty() {
                    input_kb += self.size_kb(&full_path(&self.iwd, &stdin));
                }
            }
        }
        let outputs = self.param("transfer_output_files", Some("TransferOutputFiles"))?;
        let (out_specified, output_list) = match &outputs {
            Some((v, _)) if v == "\"\"" => (true, Vec::new()),
            Some((v, _)) => {
                let l = split(v);
                (!l.is_empty(), l)
            }
            None => (false, Vec::new()),
        };
        let should_given = match self.param("should_transfer_files", Some("ShouldTransferFiles"))? {
            Some(v) => Some(v),
            None => self
                .string_attr("ShouldTransferFiles")
                .map(|s| (s, At::default())),
        };
        let default_should = should_given.is_none();
        let (should_text, should_at) = should_given
            .clone()
            .unwrap_or(("IF_NEEDED".into(), At::default()));
        let mut should = match should_text.to_ascii_uppercase().as_str() {
            "YES" | "TRUE" | "ALWAYS" => ShouldTransfer::Yes,
            "NO" | "FALSE" | "NEVER" => ShouldTransfer::No,
            "IF_NEEDED" => ShouldTransfer::IfNeeded,
            _ => {
                return Err(self.err(
                    &should_at,
                    format!("invalid value ({should_text}) for ShouldTransferFiles.  Please either specify YES, NO, or IF_NEEDED and try again."),
                ))
            }
        };
        if should == ShouldTransfer::No && (!input_list.is_empty() || out_specified) {
            let which = match (!input_list.is_empty(), out_specified) {
                (true, true) => "\"transfer_input_files\" and \"transfer_output_files\"",
                (true, false) => "\"transfer_input_files\"",
                _ => "\"transfer_output_files\"",
            };
            return Err(self.err(&should_at, format!("you specified files you want Condor to transfer via {which}, but you disabled should_transfer_files.")));
        }
        let when_given =
            match self.param("when_to_transfer_output", Some("WhenToTransferOutput"))? {
                Some(v) => Some(v),
                None => self
                    .string_attr("WhenToTransferOutput")
                    .map(|s| (s, At::default())),
            };
        #[derive(PartialEq)]
        enum When {
            OnExit,
            OnExitOrEvict,
            OnSuccess,
            Never,
        }
        let (mut when, when_text, when_at) = match &when_given {
            None => (When::OnExit, "ON_EXIT".to_string(), At::default()),
            Some((w, at)) => {
                let when = match w.to_ascii_uppercase().as_str() {
                    "ON_EXIT" => When::OnExit,
                    "ON_EXIT_OR_EVICT" => When::OnExitOrEvict,
                    "ON_SUCCESS" => When::OnSuccess,
                    "NEVER" => When::Never,
                    _ => {
                        return Err(self.err(
                            at,
                            format!("invalid value ({w}) for WhenToTransferOutput.  Please either specify ON_EXIT, or ON_EXIT_OR_EVICT and try again."),
                        ))
                    }
                };
                (when, w.clone(), at.clone())
            }
        };
        if !default_should && when_given.is_none() && should == ShouldTransfer::No {
            when = When::Never;
        }
        if (should == ShouldTransfer::No) != (when == When::Never) {
            return Err(self.err(
                &when_at,
                format!("WhenToTransferOutput specified as {when_text} yet ShouldTransferFiles defined as {should_text}.  Please remove this contradiction from your submit file and try again."),
            ));
        }
        if default_should && when == When::OnExitOrEvict && should == ShouldTransfer::IfNeeded {
            should = ShouldTransfer::Yes;
        }
        if when == When::OnExitOrEvict && should == ShouldTransfer::IfNeeded {
            return Err(self.err(&when_at, "\"when_to_transfer_output = ON_EXIT_OR_EVICT\" and \"should_transfer_files = IF_NEEDED\" are incompatible."));
        }
        self.string(
            "ShouldTransferFiles",
            match should {
                ShouldTransfer::Yes => "YES",
                ShouldTransfer::No => "NO",
                ShouldTransfer::IfNeeded => "IF_NEEDED",
            },
        );
        if should != ShouldTransfer::No {
            self.string(
                "WhenToTransferOutput",
                match when {
                    When::OnExit => "ON_EXIT",
                    When::OnExitOrEvict => "ON_EXIT_OR_EVICT",
                    When::OnSuccess => "ON_SUCCESS",
                    When::Never => "NEVER",
                },
            );
        }
        if should != ShouldTransfer::Yes
            && !self.has("FileSystemDomain")
            && !self.j.settings.filesystem_domain.is_empty()
        {
            self.string(
                "FileSystemDomain",
                &self.j.settings.filesystem_domain.clone(),
            );
        }
        match self.param("disk_usage", Some("DiskUsage"))? {
            Some((v, at)) => {
                let kb = parse_bytes(&v, 1024).filter(|k| *k >= 1).ok_or_else(|| {
                    self.err(
                        &at,
                        format!("'{v}' is not valid for disk_usage. It must be >= 1"),
                    )
                })?;
                self.int("DiskUsage", kb);
            }
            None => {
                let exe = literal_int(self.ad.lookup("ExecutableSize")).unwrap_or(0);
                self.int("TransferInputSizeMB", (exe + input_kb) / 1024);
                self.int("DiskUsage", exe + input_kb);
            }
        }
        if should != ShouldTransfer::No {
            if !input_list.is_empty() {
                self.string("TransferInput", &input_list.join(","));
            }
            if out_specified {
                self.string("TransferOutput", &output_list.join(","));
            }
        }
        if should == ShouldTransfer::No
            && self
                .param_bool("transfer_executable", Some("TransferExecutable"), false)?
                .0
        {
            return Err(self.err(&At::default(), "You explicitly requested that the executable be transfered, but for this to work, you must enable Condor's file transfer functionality."));
        }
        if let Some((v, at)) = self.param("transfer_output_remaps", Some("TransferOutputRemaps"))? {
            let inner = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .filter(|_| v.len() >= 2);
            let inner = inner.ok_or_else(|| {
                self.err(
                    &at,
                    format!("transfer_output_remaps must be a quoted string, not: {v}"),
                )
            })?;
            self.string("TransferOutputRemaps", inner);
        }
        Ok(should)
    }

    fn auto_attributes(&mut self) {
        if !self.has("MaxHosts") {
            self.int("MinHosts", 1);
            self.int("MaxHosts", 1);
        }
        if !self.has("CurrentHosts") {
            self.int("CurrentHosts", 0);
        }
        if !self.has("JobLeaseDuration") {
            if let Some(l) = self.j.settings.default_lease_duration.clone() {
                if let Ok(e) = classad::parse_expr(&l) {
                    self.ad.insert("JobLeaseDuration", e);
                }
            }
        }
        if !self.has("JobPrio") {
            self.int("JobPrio", 0);
        }
    }

    /// `+Attr = value` and `MY.Attr = value` (`SetForcedAttributes`); then `ProcId`.
    fn forced(&mut self) -> Result<(), SubmitError> {
        let forced: Vec<(String, String)> = self
            .j
            .macros
            .entries()
            .filter(|e| e.name.len() > 3 && e.name[..3].eq_ignore_ascii_case("MY."))
            .map(|e| (e.name.clone(), e.name[3..].to_string()))
            .collect();
        for (name, attr) in forced {
            let value = self.param(&name, None)?;
            let at = self
                .j
                .macros
                .entry(&name, None)
                .map(|e| At::new(e.line, &e.name))
                .unwrap_or_default();
            let v = value.map(|(v, _)| v).unwrap_or_else(|| "undefined".into());
            self.expr(&attr, &v, &at)?;
        }
        self.int("ProcId", self.j.proc_id);
        Ok(())
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
    for f in STD_FILES {
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
    let req = requirements::build(&b.ad, &facts, j.settings).map_err(|(at, m)| b.err(&at, m))?;
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
    if j.cluster_ad.is_none() {
        b.int("ClusterId", j.who.cluster);
    }
    Ok(b.ad)
}
