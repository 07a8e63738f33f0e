//! The startd policy as the configuration sets it: the expressions the startd copies into each
//! slot's internal ad (HTCondor's `Resource::init_classad`, which inserts `START`, `IS_OWNER`,
//! `SUSPEND`, `CONTINUE`, `PREEMPT`, `KILL`, `WANT_SUSPEND`, `WANT_VACATE`, their `_VANILLA`
//! forms, `Rank`, `MaxJobRetirementTime`, `MachineMaxVacateTime`), and the timers read with
//! `param()` (`KILLING_TIMEOUT`, `MATCH_TIMEOUT`, `CLAIM_WORKLIFE`, `MAX_CLAIM_ALIVES_MISSED`,
//! `ALIVE_INTERVAL`, and `DEFAULT_DRAINING_START_EXPR` for a graceful drain that names no START).
//!
//! Defaults are HTCondor 23.9.6's, which `aerie-config` carries (checked with
//! `condor_config_val` in the reference chroot): `START = True`, `IS_OWNER = False`,
//! `SUSPEND = False`, `CONTINUE = True`, `PREEMPT = False`, `KILL = False`,
//! `WANT_SUSPEND = False`, `WANT_VACATE = True`, `MachineMaxVacateTime = 10 * 60`,
//! `KILLING_TIMEOUT = 30`, `MATCH_TIMEOUT = 120`, `CLAIM_WORKLIFE = 1200`,
//! `MAX_CLAIM_ALIVES_MISSED = 6`; `RANK` and `MAXJOBRETIREMENTTIME` are undefined there and the
//! startd uses 0 (seed 001 says `CLAIM_WORKLIFE` defaults to -1: the real 23.9.6 value wins). The
//! policy metaknobs (`use POLICY : ALWAYS_RUN_JOBS`, `DESKTOP`, `UWCS_DESKTOP`) are expanded by
//! `aerie-config` like any other statement.
use super::clock::pin_clock;
use super::drain::DrainStart;
use aerie_config::{Config, ConfigError};
use classad::Expr;
use std::fmt;
use std::sync::Arc;

/// The policy expressions: (configuration knob, attribute of the slot's internal ad).
pub const EXPRESSIONS: &[(&str, &str)] = &[
    ("START", "START"),
    ("IS_OWNER", "IS_OWNER"),
    ("SUSPEND", "SUSPEND"),
    ("CONTINUE", "CONTINUE"),
    ("PREEMPT", "PREEMPT"),
    ("KILL", "KILL"),
    ("WANT_SUSPEND", "WANT_SUSPEND"),
    ("WANT_VACATE", "WANT_VACATE"),
    ("SUSPEND_VANILLA", "SUSPEND_VANILLA"),
    ("CONTINUE_VANILLA", "CONTINUE_VANILLA"),
    ("PREEMPT_VANILLA", "PREEMPT_VANILLA"),
    ("KILL_VANILLA", "KILL_VANILLA"),
    ("WANT_SUSPEND_VANILLA", "WANT_SUSPEND_VANILLA"),
    ("WANT_VACATE_VANILLA", "WANT_VACATE_VANILLA"),
    ("RANK", "Rank"),
    ("MAXJOBRETIREMENTTIME", "MaxJobRetirementTime"),
    ("MachineMaxVacateTime", "MachineMaxVacateTime"),
];

/// What went wrong reading the policy: the knob, and the configuration's own error (which
/// names the file and line).
#[derive(Debug)]
pub struct PolicyError {
    /// The knob being read.
    pub knob: String,
    /// The configuration error.
    pub source: Box<ConfigError>,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "startd policy knob {}: {}", self.knob, self.source)
    }
}

impl std::error::Error for PolicyError {}

impl PolicyError {
    fn new(knob: &str, source: ConfigError) -> PolicyError {
        PolicyError {
            knob: knob.to_string(),
            source: Box::new(source),
        }
    }
}

/// The startd policy of one machine (the same for every slot: a slot-specific policy tests
/// `SlotID`, seed 001 §3.5.1).
#[derive(Clone, Debug)]
pub struct Policy {
    /// Each defined expression, under the attribute name it has in the slot's internal ad,
    /// with `time()` pinned to `CurrentTime` (see [`super::clock`]).
    pub exprs: Vec<(&'static str, Arc<Expr>)>,
    /// `KILLING_TIMEOUT`: seconds in Preempting/Killing before the starter's whole process
    /// tree gets SIGKILL.
    pub killing_timeout: i64,
    /// `MATCH_TIMEOUT`: longest time in Matched without a claim.
    pub match_timeout: i64,
    /// `CLAIM_WORKLIFE`: seconds during which a claim may start new jobs; `None` for ever
    /// (a negative value).
    pub claim_worklife: Option<i64>,
    /// `MAX_CLAIM_ALIVES_MISSED`: a claim's lease, in keep-alive intervals, when the job sets
    /// no `JobLeaseDuration`.
    pub max_claim_alives_missed: i64,
    /// `ALIVE_INTERVAL`: the access point's keep-alive interval when the claim request does
    /// not say (HTCondor's schedd defaults it to 300 s).
    pub alive_interval: i64,
    /// `DEFAULT_DRAINING_START_EXPR`: START while a graceful drain that names none is in
    /// force (unset: no job starts while draining).
    pub default_draining_start: Option<DrainStart>,
}

impl Default for Policy {
    /// HTCondor 23.9.6's default policy.
    fn default() -> Self {
        let cfg = Config::empty(aerie_config::Context::subsystem("STARTD"));
        Policy::from_config(&cfg).expect("HTCondor's default policy parses")
    }
}

impl Policy {
    /// Reads the policy from a configuration (read for the `STARTD` subsystem, so that
    /// `STARTD.START` wins over `START`).
    pub fn from_config(cfg: &Config) -> Result<Policy, PolicyError> {
        let mut exprs = Vec::with_capacity(EXPRESSIONS.len());
        for &(knob, attr) in EXPRESSIONS {
            let e = cfg.expr(knob).map_err(|e| PolicyError::new(knob, e))?;
            if let Some(e) = e {
                exprs.push((attr, Arc::new(pin_clock(&e))));
            }
        }
        let int = |knob: &str, fallback: i64| {
            cfg.int_or(knob, fallback)
                .map_err(|e| PolicyError::new(knob, e))
        };
        let worklife = int("CLAIM_WORKLIFE", 1200)?;
        Ok(Policy {
            exprs,
            killing_timeout: int("KILLING_TIMEOUT", 30)?,
            match_timeout: int("MATCH_TIMEOUT", 120)?,
            claim_worklife: (worklife >= 0).then_some(worklife),
            max_claim_alives_missed: int("MAX_CLAIM_ALIVES_MISSED", 6)?,
            alive_interval: int("ALIVE_INTERVAL", 300)?,
            default_draining_start: draining_start(cfg)?,
        })
    }

    /// The expression set for `attr` (an attribute name of [`EXPRESSIONS`]), if any.
    pub fn expr(&self, attr: &str) -> Option<&Expr> {
        self.exprs
            .iter()
            .find(|(a, _)| a.eq_ignore_ascii_case(attr))
            .map(|(_, e)| e.as_ref())
    }
}

/// `DEFAULT_DRAINING_START_EXPR`, read as `ResMgr::startDraining` reads it.
fn draining_start(cfg: &Config) -> Result<Option<DrainStart>, PolicyError> {
    const KNOB: &str = "DEFAULT_DRAINING_START_EXPR";
    let Some(e) = cfg.expr(KNOB).map_err(|e| PolicyError::new(KNOB, e))? else {
        return Ok(None);
    };
    Ok(Some(DrainStart {
        text: e.to_string(),
        expr: Arc::new(pin_clock(&e)),
    }))
}
