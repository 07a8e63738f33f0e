//! The remaining attributes: the universe (vanilla only), the simple one-command-one-attribute
//! commands, the attributes every job gets, and `+Attr`/`MY.Attr` (submit_utils.cpp
//! `SetUniverse`, `prunable_keywords`, `SetAutoAttributes`, `SetForcedAttributes`).
use super::{full_path, parse_bool, parse_long, B, VANILLA};
use crate::error::{At, SubmitError};

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

impl B<'_> {
    pub(super) fn universe(&mut self) -> Result<(), SubmitError> {
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

    pub(super) fn simple(&mut self) -> Result<(), SubmitError> {
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

    pub(super) fn auto_attributes(&mut self) {
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
    pub(super) fn forced(&mut self) -> Result<(), SubmitError> {
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
