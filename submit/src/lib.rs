//! The HTCondor submit description language, as condor_submit 23.9.6 reads it: a submit file
//! in, the job ClassAds condor_submit would queue out (condor_submit.V6/submit.cpp,
//! condor_utils/submit_utils.cpp).
//!
//! ```no_run
//! use aerie_submit::{submit, RealHost, Settings, Submitter};
//! let text = std::fs::read_to_string("job.sub").unwrap();
//! let who = Submitter { user: "alice".into(), cwd: "/home/alice".into(),
//!                       submit_file: "job.sub".into(), now: 1_700_000_000, cluster: 1 };
//! let jobs = submit("job.sub", &text, &who, &Settings::default(), &RealHost).unwrap();
//! println!("{} job(s) submitted to cluster {}.", jobs.ads.len(), jobs.cluster);
//! ```
//!
//! The pieces, in the order a submit runs through them: [`source`] reads the statements,
//! [`macros`] keeps the commands and expands `$(...)`, [`queue`] turns a `queue` statement into
//! items and loop variables, `job` builds each job's ad (with [`args`] for `arguments` and
//! `environment`, [`units`] for sizes, and `requirements` for the default `Requirements`
//! clauses). Only the vanilla universe is built; any other is an error. Everything that touches
//! the machine (environment, files, directories) goes through a [`Host`], and the time and
//! user come in a [`Submitter`], so a submit is a pure function of its inputs.
#![warn(missing_docs)]

pub mod args;
pub mod error;
pub mod host;
mod job;
pub mod macros;
pub mod queue;
mod requirements;
pub mod settings;
pub mod source;
pub mod units;

pub use error::SubmitError;
pub use host::{DirEntry, Host, RealHost};
pub use settings::{Settings, Submitter};

use classad::ClassAd;
use error::At;
use macros::Macros;
use source::Statement;

/// The jobs of one submit file: one cluster.
#[derive(Debug, Clone)]
pub struct Submission {
    /// The cluster id.
    pub cluster: i64,
    /// One full ad per job, by `ProcId`.
    pub ads: Vec<ClassAd>,
}

/// The default macros of a submit (submit_utils.cpp `SubmitMacroDefaults`), for `who`.
fn default_macros(who: &Submitter, settings: &Settings) -> Macros {
    let (y, m, d) = {
        let days = who.now.div_euclid(86_400);
        let (y, m, d) = classad::format::civil_from_days(days);
        (y, m, d)
    };
    Macros::with_defaults(&[
        ("Cluster", who.cluster.to_string()),
        ("ClusterId", who.cluster.to_string()),
        ("Process", "0".into()),
        ("ProcId", "0".into()),
        ("Row", "0".into()),
        ("ItemIndex", "0".into()),
        ("Step", "0".into()),
        ("Node", String::new()),
        ("JobId", "$(ClusterId).$(ProcId)".into()),
        ("ARCH", settings.arch.clone()),
        ("OPSYS", settings.opsys.clone()),
        ("OPSYSANDVER", settings.opsys_and_ver.clone()),
        ("OPSYSVER", settings.opsys_ver.clone()),
        ("OPSYSMAJORVER", settings.opsys_major_ver.clone()),
        (
            "IsLinux",
            if settings.opsys == "LINUX" { "1" } else { "0" }.into(),
        ),
        (
            "IsWindows",
            if settings.opsys == "WINDOWS" {
                "1"
            } else {
                "0"
            }
            .into(),
        ),
        ("SPOOL", settings.spool.clone()),
        ("SUBMIT_FILE", who.submit_file.clone()),
        ("SUBMIT_TIME", who.now.to_string()),
        ("Year", format!("{y:04}")),
        ("Month", format!("{m:02}")),
        ("Day", format!("{d:02}")),
    ])
}

/// Reads a submit file and builds every job it queues, as `condor_submit -dry-run` would.
/// `file` names the file in errors. A file with any error queues nothing: the error names
/// the file, the line and the command.
pub fn submit(
    file: &str,
    text: &str,
    who: &Submitter,
    settings: &Settings,
    host: &dyn Host,
) -> Result<Submission, SubmitError> {
    let statements = source::parse(file, text)?;
    let mut macros = default_macros(who, settings);
    let mut ads: Vec<ClassAd> = Vec::new();
    for st in statements {
        match st {
            Statement::Assign { name, value, line } => {
                macros
                    .set(&name, &value, line, host)
                    .map_err(|m| At::new(line, &name).error(file, m))?;
            }
            Statement::Queue { args, body, line } => {
                let at = At::new(line, "queue");
                let expanded = macros.expand(&args, host).map_err(|m| at.error(file, m))?;
                let body: Option<Vec<String>> = match body {
                    None => None,
                    Some(lines) => Some(
                        lines
                            .iter()
                            .map(|l| macros.expand(l, host))
                            .collect::<Result<_, _>>()
                            .map_err(|m| at.error(file, m))?,
                    ),
                };
                let q = queue::parse(&expanded, body.as_deref(), &job::parse_long)
                    .map_err(|m| at.error(file, m))?;
                let items = queue::items(&q, &who.cwd, host).map_err(|m| at.error(file, m))?;
                for (row, item) in items.iter().enumerate() {
                    if q.mode != queue::Mode::Count {
                        macros.set_loop_vars(&queue::split_item(item, &q.vars));
                    }
                    for step in 0..q.count {
                        let proc_id = ads.len() as i64;
                        macros.set_default("Process", proc_id.to_string());
                        macros.set_default("ProcId", proc_id.to_string());
                        macros.set_default("Row", row.to_string());
                        macros.set_default("ItemIndex", row.to_string());
                        macros.set_default("Step", step.to_string());
                        let job = job::Job {
                            file,
                            macros: &macros,
                            host,
                            settings,
                            who,
                            proc_id,
                            queue_at: at.clone(),
                            cluster_ad: ads.first(),
                        };
                        let ad = job::build(&job)?;
                        ads.push(ad);
                    }
                }
                if q.mode != queue::Mode::Count {
                    macros.end_queue(&q.vars);
                }
            }
        }
    }
    Ok(Submission {
        cluster: who.cluster,
        ads,
    })
}
