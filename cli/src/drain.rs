//! `cmctl drain`: condor_drain's command line. A request is committed through Raft (every CM
//! shows it, it survives any CM's crash), and the leader carries it out on the machine's
//! execute node, again until the machine's slots advertise it (cm/src/leader/drains.rs).
//!
//! condor_drain (src/condor_tools/drain.cpp) contacts one startd and prints "Sent request to
//! drain NAME"; here the answer comes from the cluster, once the request is committed.
use crate::args::is_arg;
use crate::client::{Client, ConnectArgs};
use aerie_core::admin::PolicyQuery;
use aerie_core::state::{Command, DrainRequest};
use anyhow::bail;

#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    #[command(flatten)]
    pub conn: ConnectArgs,
    /// condor_drain options: [-graceful | -quick | -fast] [-reason TEXT] [-start EXPR]
    /// [-check EXPR] [-resume-on-completion] MACHINE...; or -cancel MACHINE...
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// condor_drain's options, parsed.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Options {
    /// "graceful" (the default), "quick" or "fast".
    pub how: &'static str,
    /// -reason.
    pub reason: Option<String>,
    /// -start.
    pub start: Option<String>,
    /// -check.
    pub check: Option<String>,
    /// -resume-on-completion.
    pub resume_on_completion: bool,
    /// -cancel.
    pub cancel: bool,
    /// The machines (their slots' `Machine`).
    pub machines: Vec<String>,
}

/// Parses condor_drain's options (one dash or two, abbreviated as condor's tools allow).
pub fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options {
        how: "graceful",
        ..Default::default()
    };
    let mut how_given: Option<&'static str> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("-{name} needs a value"))
        };
        let how = if is_arg(a, "graceful", 1) {
            Some("graceful")
        } else if is_arg(a, "quick", 1) {
            Some("quick")
        } else if is_arg(a, "fast", 1) {
            Some("fast")
        } else {
            None
        };
        if let Some(h) = how {
            if let Some(prev) = how_given.replace(h) {
                if prev != h {
                    bail!("-{prev} and -{h} cannot be given together");
                }
            }
            o.how = h;
        } else if is_arg(a, "reason", 3) {
            o.reason = Some(value("reason")?);
        } else if is_arg(a, "start", 3) {
            o.start = Some(value("start")?);
        } else if is_arg(a, "check", 2) {
            o.check = Some(value("check")?);
        } else if is_arg(a, "resume-on-completion", 3) {
            o.resume_on_completion = true;
        } else if is_arg(a, "cancel", 2) {
            o.cancel = true;
        } else if a.starts_with('-') {
            bail!("unknown option {a}: cmctl drain [-graceful|-quick|-fast] [-reason TEXT] [-start EXPR] [-check EXPR] [-resume-on-completion] MACHINE... | -cancel MACHINE...");
        } else {
            o.machines.push(a.clone());
        }
    }
    if o.machines.is_empty() {
        bail!("no machine given: cmctl drain [options] MACHINE...");
    }
    if o.cancel
        && (how_given.is_some() || o.start.is_some() || o.check.is_some() || o.resume_on_completion)
    {
        bail!("-cancel takes only machine names");
    }
    Ok(o)
}

/// Checks that an expression option parses, naming the option.
fn expr_option(option: &str, text: &Option<String>) -> anyhow::Result<String> {
    let Some(t) = text else {
        return Ok(String::new());
    };
    if let Err(e) = classad::parse_expr(t) {
        bail!("-{option} {t:?}: not a ClassAd expression: {e}");
    }
    Ok(t.clone())
}

/// A request id that no other drain of this machine has: the time in microseconds.
fn new_request_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("{}", now.as_micros())
}

/// The drain requests to commit, one per machine, or the option that is wrong.
pub fn requests(args: &Options, now: i64) -> anyhow::Result<Vec<DrainRequest>> {
    let start_expr = expr_option("start", &args.start)?;
    let check_expr = expr_option("check", &args.check)?;
    let id = new_request_id();
    Ok(args
        .machines
        .iter()
        .enumerate()
        .map(|(i, m)| DrainRequest {
            machine: m.clone(),
            how: args.how.to_string(),
            reason: args
                .reason
                .clone()
                .unwrap_or_else(|| "by command".to_string()),
            time: now,
            request_id: format!("{id}-{i}"),
            start_expr: start_expr.clone(),
            check_expr: check_expr.clone(),
            resume_on_completion: args.resume_on_completion,
        })
        .collect())
}

/// Runs `cmctl drain`; exit code 1 when any machine's request failed.
pub fn run(raw: Args) -> anyhow::Result<i32> {
    let args = parse(&raw.args)?;
    let mut client = Client::new(&raw.conn)?;
    let mut code = 0;
    if args.cancel {
        let known = client.query(PolicyQuery, false)?.drains;
        for m in &args.machines {
            if !known.contains_key(m) {
                eprintln!("Error: no drain request for {m}");
                code = 1;
                continue;
            }
            match client.write_ok(Command::CancelDrain { machine: m.clone() }) {
                Ok(_) => println!("Sent request to cancel draining on {m}"),
                Err(e) => {
                    eprintln!("Error: cancelling the drain of {m}: {e:#}");
                    code = 1;
                }
            }
        }
        return Ok(code);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    for r in requests(&args, now)? {
        let m = r.machine.clone();
        match client.write_ok(Command::RequestDrain(r)) {
            Ok(_) => println!("Sent request to drain {m}"),
            Err(e) => {
                eprintln!("Error: draining {m}: {e:#}");
                code = 1;
            }
        }
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_strs(args: &[&str]) -> anyhow::Result<Options> {
        parse(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn condor_drain_options_become_the_request() {
        let a = parse_strs(&[
            "-fast",
            "-reason",
            "kernel",
            "-start",
            "Owner == \"ops\"",
            "n1",
            "n2",
        ])
        .expect("parses");
        let rs = requests(&a, 100).expect("valid");
        assert_eq!(rs.len(), 2);
        assert_eq!(rs[0].machine, "n1");
        assert_eq!(rs[0].how, "fast");
        assert_eq!(rs[0].reason, "kernel");
        assert_eq!(rs[0].start_expr, "Owner == \"ops\"");
        assert_ne!(rs[0].request_id, rs[1].request_id);
        assert!(rs.iter().all(|r| r.has_v3_fields()));
        let g = parse_strs(&["n1"]).expect("parses");
        assert_eq!(requests(&g, 1).expect("valid")[0].how, "graceful");
        assert_eq!(requests(&g, 1).expect("valid")[0].reason, "by command");
        let q = parse_strs(&["--quick", "-resume-on-completion", "n1"]).expect("parses");
        assert!(q.resume_on_completion && q.how == "quick");
    }

    #[test]
    fn a_bad_expression_is_named_and_conflicting_options_refused() {
        let a = parse_strs(&["-check", "Cpus >", "n1"]).expect("parses");
        let e = requests(&a, 1).unwrap_err().to_string();
        assert!(e.contains("-check") && e.contains("Cpus >"), "{e}");
        assert!(parse_strs(&["-fast", "-quick", "n1"]).is_err());
        assert!(parse_strs(&["-cancel", "-fast", "n1"]).is_err());
        assert!(parse_strs(&["-reason"]).is_err());
        assert!(parse_strs(&[]).is_err());
        assert!(parse_strs(&["-bogus", "n1"]).is_err());
        assert!(parse_strs(&["-cancel", "n1"]).expect("parses").cancel);
    }
}
