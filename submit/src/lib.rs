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
    /// condor_submit's warnings about lines nothing used ("the line 'x = y' was unused by cmctl
    /// submit. Is it a typo?"), when any job was queued: a typo, or a command Aerie does not
    /// implement.
    pub warnings: Vec<String>,
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
    let warnings = if ads.is_empty() {
        Vec::new()
    } else {
        macros.unused("cmctl submit")
    };
    Ok(Submission {
        cluster: who.cluster,
        ads,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    //! Behaviour that matters, without the reference (tests/differential.rs compares every
    //! attribute against the real condor_submit).
    use super::*;
    use std::path::{Path, PathBuf};

    /// A machine where every path exists as a small file and every directory is empty.
    struct FakeHost;

    impl Host for FakeHost {
        fn getenv(&self, name: &str) -> Option<String> {
            (name == "WHO").then(|| "tester".to_string())
        }
        fn environment(&self) -> Vec<(String, String)> {
            vec![("WHO".into(), "tester".into())]
        }
        fn read_file(&self, _: &Path) -> std::io::Result<String> {
            Ok("a 1\nb 2\n".into())
        }
        fn file_size(&self, _: &Path) -> Option<u64> {
            Some(2048)
        }
        fn is_dir(&self, _: &Path) -> bool {
            true
        }
        fn exists(&self, _: &Path) -> bool {
            true
        }
        fn list_dir(&self, _: &Path) -> std::io::Result<Vec<DirEntry>> {
            Ok(Vec::new())
        }
    }

    fn run(text: &str) -> Result<Vec<ClassAd>, SubmitError> {
        let who = Submitter {
            user: "alice".into(),
            cwd: PathBuf::from("/home/alice"),
            submit_file: "job.sub".into(),
            now: 1_800_000_000,
            cluster: 7,
        };
        submit("job.sub", text, &who, &Settings::default(), &FakeHost).map(|s| s.ads)
    }

    fn get(ad: &ClassAd, attr: &str) -> String {
        ad.lookup(attr)
            .map(|e| e.to_string())
            .unwrap_or_else(|| "(absent)".into())
    }

    #[test]
    fn old_arguments_give_args_and_new_ones_arguments() {
        let ads =
            run("executable = prog\narguments = a b\nqueue\narguments = \"a 'b c'\"\nqueue\n")
                .unwrap();
        assert_eq!(get(&ads[0], "Cmd"), "\"/home/alice/prog\"");
        assert_eq!(get(&ads[0], "Args"), "\"a b\"");
        assert_eq!(get(&ads[1], "Arguments"), "\"a b' 'c\"");
    }

    #[test]
    fn a_later_job_keeps_what_it_does_not_reassign_from_the_first() {
        let ads = run(
            "executable = x\nnice_user = true\nqueue\nnice_user = false\npriority = 3\nqueue\n",
        )
        .unwrap();
        for ad in &ads {
            assert_eq!(get(ad, "AccountingGroup"), "\"nice-user.alice\"");
            assert_eq!(get(ad, "MaxJobRetirementTime"), "0");
        }
        assert_eq!(
            (get(&ads[0], "JobPrio"), get(&ads[1], "JobPrio")),
            ("0".into(), "3".into())
        );
        assert_eq!(
            (get(&ads[1], "ProcId"), get(&ads[1], "ClusterId")),
            ("1".into(), "7".into())
        );
    }

    #[test]
    fn requests_with_units_and_the_requirements_clauses_they_add() {
        let ads = run(
            "executable = x\nrequest_memory = 1024K\nrequest_disk = 2G\nrequest_cpus = 2\nqueue\n",
        )
        .unwrap();
        assert_eq!(get(&ads[0], "RequestMemory"), "1");
        assert_eq!(get(&ads[0], "RequestDisk"), "2097152");
        let req = get(&ads[0], "Requirements");
        assert!(req.contains("TARGET.Cpus >= RequestCpus"), "{req}");
        assert!(
            !req.contains("TARGET.Memory"),
            "a request of 1 MiB adds no memory clause: {req}"
        );
        assert!(req.contains("TARGET.HasFileTransfer"), "{req}");
    }

    #[test]
    fn cron_jobs_get_deferral_defaults_and_clauses() {
        let ads = run("executable = x\ncron_minute = 0\nqueue\n").unwrap();
        assert_eq!(get(&ads[0], "CronMinute"), "\"0\"");
        assert_eq!(get(&ads[0], "DeferralWindow"), "0");
        assert_eq!(get(&ads[0], "DeferralPrepTime"), "300");
        assert_eq!(get(&ads[0], "ScheddInterval"), "300");
        assert!(get(&ads[0], "Requirements").contains("TARGET.HasJobDeferral"));
    }

    #[test]
    fn queue_variables_rows_and_steps() {
        let ads = run("executable = x\narguments = $(v) $(Row) $(Step) $(Process) $ENV(WHO)\nqueue 2 v in (p, q)\n").unwrap();
        let args: Vec<String> = ads.iter().map(|a| get(a, "Args")).collect();
        assert_eq!(
            args,
            [
                "\"p 0 0 0 tester\"",
                "\"p 0 1 1 tester\"",
                "\"q 1 0 2 tester\"",
                "\"q 1 1 3 tester\""
            ]
        );
        let ads = run("executable = x\narguments = $(n)-$(m)\nqueue n m from list.txt\n").unwrap();
        assert_eq!(get(&ads[1], "Args"), "\"b-2\"");
    }

    #[test]
    fn errors_name_the_line_and_the_command() {
        let e = run("executable = x\n\nrequest_memory = 12Q\nqueue\n").unwrap_err();
        assert_eq!(
            (e.file.as_str(), e.line, e.command.as_str()),
            ("job.sub", 3, "request_memory")
        );
        let e = run("executable = x\nuniverse = docker\nqueue\n").unwrap_err();
        assert_eq!((e.line, e.command.as_str()), (2, "universe"));
        assert!(e.message.contains("only the vanilla universe"), "{e}");
        let e = run("arguments = x\nqueue\n").unwrap_err();
        assert_eq!((e.line, e.command.as_str()), (2, "queue"));
    }

    #[test]
    fn bad_input_is_an_error_never_a_panic() {
        let nasty = [
            "é = ü\nqueue",
            "executable = x\nqueue é in (ä, ö)",
            "executable = x\nqueue 2 é,ü from (\n ä ö\n)\n",
            "executable = x\narguments = \"é 'ü\nqueue",
            "executable = x\nenvironment = =x\nqueue",
            "executable = x\nrequest_memory = 1.\u{e9}G\nqueue",
            "executable = x\nqueue in [1:x] (a)",
            "executable = x\nqueue -1",
            "executable = $(a)\na = $(b)\nb = $(a)\nqueue",
            "executable = x\n+é = 1\nqueue",
            "executable = x\nconcurrency_limits = ü\nqueue",
            "executable = x\nqueue f matching [",
            "queue\\",
            "\\",
        ];
        for text in nasty {
            let _ = run(text);
        }
        assert!(run("executable = x\nqueue -1").is_err());
    }
}
