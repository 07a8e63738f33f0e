//! `cmctl rm`, `hold`, `release`, `vacate-job`, `prio` and `qedit`: condor_rm, condor_hold,
//! condor_release, condor_vacate_job (`src/condor_rm.V6/rm.cpp`), condor_prio
//! (`src/condor_prio.V6/prio.cpp`) and condor_qedit (`src/condor_tools/qedit.cpp`) against an
//! access point (`Schedd.Act`, see [`crate::schedd`]).
//!
//! Targets as condor's tools take them: `CLUSTER.PROC`, `CLUSTER`, a user name, and
//! `-constraint EXPR`; each is one request, answered in the tools' words ("Job 12.0 marked
//! for removal", "All jobs in cluster 12 have been held", "All jobs of user \"alice\" have
//! been released", "Couldn't find/remove all jobs matching constraint (...)"). Failures go to
//! standard error after a blank line, as condor prints them, and make the exit code 1. The
//! access point decides who may change what (the caller is taken from the connection).
use crate::queue::{constraint_arg, is_arg, quote, Target};
use crate::schedd::{self, Schedd};
use aerie_proto::schedd::{self as pb, Action};
use anyhow::bail;

/// The tool being run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// condor_rm.
    Rm,
    /// condor_hold.
    Hold,
    /// condor_release.
    Release,
    /// condor_vacate_job.
    Vacate,
    /// condor_prio.
    Prio,
    /// condor_qedit.
    Qedit,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::Rm => "rm",
            Tool::Hold => "hold",
            Tool::Release => "release",
            Tool::Vacate => "vacate-job",
            Tool::Prio => "prio",
            Tool::Qedit => "qedit",
        }
    }

    fn usage(self) -> String {
        let n = self.name();
        match self {
            Tool::Prio => "usage: cmctl prio [-name SOCKET] -p PRIORITY {CLUSTER | CLUSTER.PROC | USER | -constraint EXPR}..."
                .to_string(),
            Tool::Qedit => "usage: cmctl qedit [-name SOCKET] {CLUSTER | CLUSTER.PROC | USER | -constraint EXPR} ATTR VALUE [ATTR VALUE]..."
                .to_string(),
            Tool::Hold | Tool::Rm | Tool::Release => format!(
                "usage: cmctl {n} [-name SOCKET] [-reason TEXT] {{CLUSTER | CLUSTER.PROC | USER | -constraint EXPR | -all}}..."
            ),
            Tool::Vacate => format!(
                "usage: cmctl {n} [-name SOCKET] [-fast] {{CLUSTER | CLUSTER.PROC | USER | -constraint EXPR | -all}}..."
            ),
        }
    }

    /// condor's past and present verbs for the action (`actionWord` in rm.cpp).
    fn words(self, fast: bool) -> (&'static str, &'static str) {
        match self {
            Tool::Rm => ("marked for removal", "remove"),
            Tool::Hold => ("held", "hold"),
            Tool::Release => ("released", "release"),
            Tool::Vacate if fast => ("fast-vacated", "fast-vacate"),
            Tool::Vacate => ("vacated", "vacate"),
            Tool::Prio => ("reprioritised", "reprioritise"),
            Tool::Qedit => ("edited", "edit"),
        }
    }

    fn action(self) -> Action {
        match self {
            Tool::Rm => Action::Remove,
            Tool::Hold => Action::Hold,
            Tool::Release => Action::Release,
            Tool::Vacate => Action::Vacate,
            Tool::Prio => Action::SetPrio,
            Tool::Qedit => Action::Edit,
        }
    }
}

/// `cmctl rm|hold|release|vacate-job|prio|qedit` arguments.
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// the tool's options and targets (-help for the list)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// Which jobs one request picks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// A job id, a cluster or a user.
    Target(Target),
    /// `-constraint EXPR`.
    Constraint(String),
    /// `-all`: every job the caller may change.
    All,
}

/// The command line, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The access point's socket, when given.
    pub socket: Option<String>,
    /// What to act on, one request each.
    pub picks: Vec<Pick>,
    /// `-reason`.
    pub reason: String,
    /// `-fast` (vacate-job).
    pub fast: bool,
    /// `-p N` (prio).
    pub prio: Option<i64>,
    /// `ATTR VALUE` pairs (qedit).
    pub edits: Vec<(String, String)>,
}

/// Parses a tool's command line; `None` for `-help`.
pub fn parse(tool: Tool, args: &[String]) -> anyhow::Result<Option<Parsed>> {
    let (socket, args) = schedd::take_socket_arg(args)?;
    let mut p = Parsed {
        socket,
        picks: Vec::new(),
        reason: String::new(),
        fast: false,
        prio: None,
        edits: Vec::new(),
    };
    let mut loose = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let value = |i: usize| match args.get(i) {
            Some(v) => Ok(v.clone()),
            None => bail!("{a} needs a value\n{}", tool.usage()),
        };
        if !a.starts_with('-') || (tool == Tool::Qedit && !p.picks.is_empty()) {
            loose.push(a.clone());
        } else if is_arg(a, "help", 1) {
            return Ok(None);
        } else if is_arg(a, "constraint", 3) {
            p.picks
                .push(Pick::Constraint(constraint_arg(a, &args, &mut i)?));
        } else if is_arg(a, "all", 2) && tool != Tool::Qedit {
            p.picks.push(Pick::All);
        } else if is_arg(a, "reason", 1) && matches!(tool, Tool::Rm | Tool::Hold | Tool::Release) {
            p.reason = value(i)?;
            i += 1;
        } else if is_arg(a, "fast", 1) && tool == Tool::Vacate {
            p.fast = true;
        } else if a == "-p" && tool == Tool::Prio {
            let v = value(i)?;
            p.prio = Some(
                v.parse()
                    .map_err(|_| anyhow::anyhow!("-p {v:?}: not an integer priority"))?,
            );
            i += 1;
        } else {
            bail!("unrecognized option {a}\n{}", tool.usage());
        }
    }
    if tool == Tool::Qedit {
        let mut rest = loose.into_iter();
        if p.picks.is_empty() {
            match rest.next() {
                Some(t) => p.picks.push(Pick::Target(Target::parse(&t))),
                None => bail!("no jobs given\n{}", tool.usage()),
            }
        }
        let rest: Vec<String> = rest.collect();
        if rest.is_empty() || !rest.len().is_multiple_of(2) {
            bail!("qedit needs ATTR VALUE pairs\n{}", tool.usage());
        }
        for pair in rest.chunks(2) {
            classad::parse_expr(&pair[1]).map_err(|e| {
                anyhow::anyhow!(
                    "the value of {} ({:?}) is not a ClassAd expression: {e}",
                    pair[0],
                    pair[1]
                )
            })?;
            p.edits.push((pair[0].clone(), pair[1].clone()));
        }
    } else {
        p.picks
            .extend(loose.iter().map(|a| Pick::Target(Target::parse(a))));
    }
    if p.picks.is_empty() {
        bail!("You did not specify any jobs\n{}", tool.usage());
    }
    if tool == Tool::Prio && p.prio.is_none() {
        bail!("no priority given (-p N)\n{}", tool.usage());
    }
    Ok(Some(p))
}

/// The requests to send: one per pick (and, for qedit, per attribute).
pub fn requests(tool: Tool, p: &Parsed) -> Vec<(Pick, pb::ActRequest)> {
    let mut out = Vec::new();
    for pick in &p.picks {
        let mut req = pb::ActRequest {
            action: tool.action() as i32,
            reason: p.reason.clone(),
            fast: p.fast,
            ..Default::default()
        };
        match pick {
            Pick::Target(t) => req.targets.push(t.wire()),
            Pick::Constraint(c) => req.constraint = c.clone(),
            Pick::All => req.constraint = "true".into(),
        }
        if tool == Tool::Prio {
            req.value = p.prio.unwrap_or(0).to_string();
        }
        if tool == Tool::Qedit {
            for (attr, value) in &p.edits {
                let mut r = req.clone();
                r.attribute = attr.clone();
                r.value = value.clone();
                out.push((pick.clone(), r));
            }
        } else {
            out.push((pick.clone(), req));
        }
    }
    out
}

/// What one request's answer prints.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    /// For standard output.
    pub stdout: String,
    /// For standard error.
    pub stderr: String,
    /// Whether it failed (exit code 1).
    pub failed: bool,
}

/// The answer to one request in condor's words.
pub fn report(
    tool: Tool,
    fast: bool,
    pick: &Pick,
    req: &pb::ActRequest,
    r: &pb::ActReply,
) -> Report {
    let (past, verb) = tool.words(fast);
    let ok = r.changed > 0 && r.errors.is_empty();
    let mut rep = Report::default();
    if tool == Tool::Qedit {
        if r.changed > 0 {
            rep.stdout = format!(
                "Set attribute {} for {} matching jobs.\n",
                quote(&req.attribute),
                r.changed
            );
        } else {
            rep.failed = true;
        }
    } else if tool == Tool::Prio {
        rep.failed = r.changed == 0;
    } else {
        let what = match pick {
            Pick::Target(Target::Job(c, p)) => {
                if ok {
                    rep.stdout = format!("Job {c}.{p} {past}\n");
                } else if r.errors.is_empty() {
                    rep.stderr = format!("\nJob {c}.{p} not found\n");
                    rep.failed = true;
                }
                None
            }
            Pick::Target(Target::Cluster(c)) => Some(format!("jobs in cluster {c}")),
            Pick::Target(Target::Owner(o)) => Some(format!("jobs of user {}", quote(o))),
            Pick::Constraint(c) => Some(format!("jobs matching constraint ({c})")),
            Pick::All => Some("jobs".to_string()),
        };
        if let Some(what) = what {
            if r.changed > 0 {
                rep.stdout = format!("All {what} have been {past}\n");
            }
            if !ok {
                rep.stderr
                    .push_str(&format!("\nCouldn't find/{verb} all {what}\n"));
                rep.failed = true;
            }
        }
    }
    if !r.errors.is_empty() {
        rep.failed = true;
        let lines: String = r.errors.iter().map(|e| format!("{e}\n")).collect();
        rep.stderr = format!("\n{lines}{}", rep.stderr.trim_start_matches('\n'));
    }
    if rep.failed && rep.stderr.is_empty() {
        rep.stderr = match pick {
            Pick::Target(t) => format!("\nCouldn't find/{verb} job(s) {}\n", t.wire()),
            Pick::Constraint(c) => {
                format!("\nCouldn't find/{verb} jobs matching constraint ({c})\n")
            }
            Pick::All => format!("\nCouldn't find/{verb} any jobs\n"),
        };
    }
    rep
}

/// Runs one of the tools.
pub fn run(tool: Tool, args: Args) -> anyhow::Result<i32> {
    let Some(p) = parse(tool, &args.args)? else {
        println!("{}", tool.usage());
        return Ok(0);
    };
    let at = schedd::target(p.socket.as_deref(), |k| std::env::var(k).ok())?;
    let mut schedd = Schedd::open(&at)?;
    let mut code = 0;
    for (pick, req) in requests(tool, &p) {
        let reply = schedd.act(req.clone())?;
        let rep = report(tool, p.fast, &pick, &req, &reply);
        print!("{}", rep.stdout);
        eprint!("{}", rep.stderr);
        if rep.failed {
            code = 1;
        }
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn reply(matched: u32, changed: u32, errors: &[&str]) -> pb::ActReply {
        pb::ActReply {
            matched,
            changed,
            errors: strs(errors),
        }
    }

    fn one(tool: Tool, args: &[&str], r: pb::ActReply) -> Report {
        let p = parse(tool, &strs(args)).unwrap().unwrap();
        let (pick, req) = requests(tool, &p).remove(0);
        report(tool, p.fast, &pick, &req, &r)
    }

    /// The texts condor_rm, condor_hold, condor_release, condor_vacate_job and condor_qedit
    /// 23.9.6 printed in the reference pool (`cli/tests/fixtures/queue/README.md`).
    #[test]
    fn answers_in_condors_words() {
        let r = one(Tool::Rm, &["1.2"], reply(1, 1, &[]));
        assert_eq!(r.stdout, "Job 1.2 marked for removal\n");
        assert!(!r.failed);
        let r = one(Tool::Rm, &["9999.0"], reply(0, 0, &[]));
        assert_eq!(
            (r.stdout.as_str(), r.stderr.as_str()),
            ("", "\nJob 9999.0 not found\n")
        );
        assert!(r.failed);
        let r = one(Tool::Rm, &["9999"], reply(0, 0, &[]));
        assert_eq!(
            r.stderr,
            "\nCouldn't find/remove all jobs in cluster 9999\n"
        );
        let r = one(Tool::Hold, &["1"], reply(3, 3, &[]));
        assert_eq!(r.stdout, "All jobs in cluster 1 have been held\n");
        let r = one(Tool::Release, &["ref"], reply(3, 3, &[]));
        assert_eq!(r.stdout, "All jobs of user \"ref\" have been released\n");
        let r = one(Tool::Hold, &["nosuchuser"], reply(0, 0, &[]));
        assert_eq!(
            r.stderr,
            "\nCouldn't find/hold all jobs of user \"nosuchuser\"\n"
        );
        let r = one(Tool::Rm, &["-constraint", "ProcId == 0"], reply(2, 2, &[]));
        assert_eq!(
            r.stdout,
            "All jobs matching constraint (ProcId == 0) have been marked for removal\n"
        );
        let r = one(
            Tool::Release,
            &["1.1"],
            reply(1, 0, &["Job 1.1 not held to be released"]),
        );
        assert_eq!(r.stderr, "\nJob 1.1 not held to be released\n");
        assert!(r.failed);
        let r = one(
            Tool::Vacate,
            &["1.0"],
            reply(1, 0, &["Job 1.0 not running to be vacated"]),
        );
        assert_eq!(r.stderr, "\nJob 1.0 not running to be vacated\n");
        let r = one(Tool::Qedit, &["1.0", "Foo", "\"bar\""], reply(1, 1, &[]));
        assert_eq!(r.stdout, "Set attribute \"Foo\" for 1 matching jobs.\n");
    }

    #[test]
    fn command_lines_become_requests() {
        let p = parse(
            Tool::Hold,
            &strs(&["-reason", "disk full", "12", "alice", "3.4"]),
        )
        .unwrap()
        .unwrap();
        let reqs = requests(Tool::Hold, &p);
        let targets: Vec<&str> = reqs.iter().map(|(_, r)| r.targets[0].as_str()).collect();
        assert_eq!(targets, ["12", "alice", "3.4"]);
        assert!(reqs
            .iter()
            .all(|(_, r)| r.reason == "disk full" && r.action == Action::Hold as i32));
        let p = parse(Tool::Prio, &strs(&["-p", "-5", "7.0"]))
            .unwrap()
            .unwrap();
        assert_eq!(requests(Tool::Prio, &p)[0].1.value, "-5");
        let p = parse(
            Tool::Qedit,
            &strs(&["-constraint", "Owner == \"a\"", "A", "1", "B", "\"x\""]),
        )
        .unwrap()
        .unwrap();
        let reqs = requests(Tool::Qedit, &p);
        assert_eq!(reqs.len(), 2);
        assert_eq!(
            (reqs[1].1.attribute.as_str(), reqs[1].1.value.as_str()),
            ("B", "\"x\"")
        );
        assert_eq!(reqs[1].1.constraint, "Owner == \"a\"");
        let p = parse(Tool::Vacate, &strs(&["-fast", "-name", "/s", "1"]))
            .unwrap()
            .unwrap();
        assert!(p.fast && p.socket.as_deref() == Some("/s"));
        assert!(parse(Tool::Rm, &[]).is_err());
        assert!(parse(Tool::Prio, &strs(&["1.0"])).is_err());
        assert!(parse(Tool::Qedit, &strs(&["1.0", "A"])).is_err());
        assert!(parse(Tool::Rm, &strs(&["-constraint", "a ==="])).is_err());
    }
}
