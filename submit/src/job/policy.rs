//! The job's policy: its initial status (`hold`), `notification`, `rank`, the periodic and
//! on-exit expressions, retries (`max_retries`, `success_exit_code`, `retry_until`) and
//! deferral (`deferral_*`, `cron_window`, `cron_prep_time`) (submit_utils.cpp `SetJobStatus`,
//! `SetNotification`, `SetRank`, `SetPeriodicExpressions`, `SetLeaveInQueue`,
//! `SetJobRetries`, `SetJobDeferral`).
use super::{needs_deferral, parse_long, wrap_for_or, B};
use crate::error::{At, SubmitError};
use classad::{Expr, Value};

/// `JobStatus` of an idle job.
const IDLE: i64 = 1;
/// `JobStatus` of a held job.
const HELD: i64 = 5;
/// `HoldReasonCode` of a job submitted on hold.
const SUBMITTED_ON_HOLD: i64 = 15;
/// `DeferralWindow` when none is given.
const DEFERRAL_WINDOW_DEFAULT: i64 = 0;
/// `DeferralPrepTime` when none is given.
const DEFERRAL_PREP_TIME_DEFAULT: i64 = 300;

impl B<'_> {
    pub(super) fn job_status(&mut self) -> Result<(), SubmitError> {
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

    pub(super) fn notification(&mut self) -> Result<(), SubmitError> {
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

    pub(super) fn rank(&mut self) -> Result<(), SubmitError> {
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

    pub(super) fn periodic(&mut self) -> Result<(), SubmitError> {
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
    pub(super) fn retries(&mut self) -> Result<(), SubmitError> {
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

    /// `deferral_time`, `deferral_window`/`cron_window`, `deferral_prep_time`/`cron_prep_time`
    /// (`SetJobDeferral`); the `cron_*` attributes are set by [`B::simple`] before.
    pub(super) fn deferral(&mut self) -> Result<(), SubmitError> {
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
}
