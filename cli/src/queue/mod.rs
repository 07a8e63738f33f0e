//! `cmctl q`: condor_q against an access point (`Schedd.Query`, see [`crate::schedd`]).
//!
//! Takes condor_q's single-dash options: the default batch view (one row per cluster or
//! batch name, `Total for query` and `Total for all users`), `-nobatch`, `-long`, `-json`,
//! `-af`/`-autoformat` (with `:j` job ids, `:h` a header, `:l` labels, `:t` tabs, `:,` commas,
//! `:n` one value a line, `:r` raw expressions), `-constraint EXPR`, `-allusers`, `-hold`,
//! `-run`, `-better-analyze JOB` ([`analyze`]), and job ids (`C`, `C.P`) or owners as
//! arguments. As condor_q 23.9 does, it shows only the caller's jobs unless job ids, owners or
//! `-allusers` say otherwise. The tables are pure functions of the ads ([`views`]).
use crate::schedd::{self, Schedd};
use aerie_proto::schedd as pb;
use anyhow::bail;
use classad::{ClassAd, Value};
use columns::Clock;

pub mod analyze;
pub mod columns;
pub mod views;

#[cfg(test)]
mod tests;

/// `cmctl q` arguments.
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    #[command(flatten)]
    pub conn: crate::client::ConnectArgs,
    /// condor_q options: [-name SOCKET] [-nobatch | -long | -json | -af[:jhltnr,] ATTR... |
    /// -hold | -run | -better-analyze JOB] [-constraint EXPR] [-allusers] [JOB_ID | OWNER]...
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// The options of `-af`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AfOptions {
    /// `:j`: the job id first.
    pub job_id: bool,
    /// `:h`: a header of attribute names, columns aligned.
    pub header: bool,
    /// `:l`: `Attr = value`.
    pub label: bool,
    /// `:t`: tab-separated.
    pub tabs: bool,
    /// `:,`: separated by a comma and a space.
    pub commas: bool,
    /// `:n`: one value a line.
    pub newlines: bool,
    /// `:r`: expressions unevaluated.
    pub raw: bool,
}

/// How to print.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum View {
    /// One row per batch (the default).
    #[default]
    Batch,
    /// One row per job.
    NoBatch,
    /// Every attribute of each job.
    Long,
    /// JSON.
    Json,
    /// Chosen attributes.
    Autoformat(AfOptions, Vec<String>),
    /// Held jobs and why.
    Hold,
    /// Running jobs and where.
    Run,
    /// Why one job does (not) match the pool's slots.
    Analyze(String),
}

/// A job id or an owner from the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `C`: every job of a cluster.
    Cluster(i64),
    /// `C.P`: one job.
    Job(i64, i64),
    /// A user name: that user's jobs.
    Owner(String),
}

impl Target {
    /// Reads a command-line argument: `C`, `C.P`, or else an owner name.
    pub fn parse(a: &str) -> Target {
        if let Some((c, p)) = a.split_once('.') {
            if let (Ok(c), Ok(p)) = (c.parse(), p.parse()) {
                return Target::Job(c, p);
            }
        } else if let Ok(c) = a.parse() {
            return Target::Cluster(c);
        }
        Target::Owner(a.to_string())
    }

    /// The target as a ClassAd constraint.
    pub fn constraint(&self) -> String {
        match self {
            Target::Cluster(c) => format!("ClusterId == {c}"),
            Target::Job(c, p) => format!("ClusterId == {c} && ProcId == {p}"),
            Target::Owner(o) => format!("Owner == {}", quote(o)),
        }
    }

    /// As the access point's `ActRequest.targets` takes it.
    pub fn wire(&self) -> String {
        match self {
            Target::Cluster(c) => c.to_string(),
            Target::Job(c, p) => format!("{c}.{p}"),
            Target::Owner(o) => o.clone(),
        }
    }
}

/// A string as a ClassAd string literal.
pub fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The command line, parsed.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// The access point's socket, when given.
    pub socket: Option<String>,
    /// How to print.
    pub view: View,
    /// `-constraint`s (all must hold).
    pub constraints: Vec<String>,
    /// `-allusers`.
    pub all_users: bool,
    /// Job ids and owners (any may match).
    pub targets: Vec<Target>,
}

pub(crate) use crate::args::is_arg;

/// `-af` / `-autoformat` with its `:options`; `None` when `a` is not that option.
fn af_options(a: &str) -> Option<anyhow::Result<AfOptions>> {
    let (name, opts) = a.split_once(':').unwrap_or((a, ""));
    if !(is_arg(name, "af", 2) || is_arg(name, "autoformat", 5)) {
        return None;
    }
    let mut o = AfOptions::default();
    for c in opts.chars() {
        match c {
            'j' => o.job_id = true,
            'h' => o.header = true,
            'l' => o.label = true,
            't' => o.tabs = true,
            ',' => o.commas = true,
            'n' => o.newlines = true,
            'r' => o.raw = true,
            // condor_q's other letters (V, o, s, g...) change nothing here.
            _ => {}
        }
    }
    Some(Ok(o))
}

/// The expression after `-constraint` (`flag`) at `args[*i]`, checked so that a typo fails
/// here; moves `i` past it.
pub(crate) fn constraint_arg(flag: &str, args: &[String], i: &mut usize) -> anyhow::Result<String> {
    let Some(c) = args.get(*i) else {
        bail!("{flag} needs an expression");
    };
    classad::parse_expr(c).map_err(|e| anyhow::anyhow!("{flag} {c:?}: {e}"))?;
    *i += 1;
    Ok(c.clone())
}

/// The parts of a query's constraint (all must hold): each `-constraint`, and the targets
/// (any of them); and whether there were targets.
pub(crate) fn join_constraints(constraints: &[String], targets: &[Target]) -> (Vec<String>, bool) {
    let mut parts: Vec<String> = constraints.iter().map(|c| format!("({c})")).collect();
    if !targets.is_empty() {
        let any: Vec<String> = targets.iter().map(Target::constraint).collect();
        parts.push(format!("({})", any.join(" || ")));
    }
    (parts, !targets.is_empty())
}

/// Parses condor_q's command line.
pub fn parse(args: &[String]) -> anyhow::Result<Parsed> {
    let (socket, args) = schedd::take_socket_arg(args)?;
    let mut p = Parsed {
        socket,
        ..Parsed::default()
    };
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if !a.starts_with('-') {
            p.targets.push(Target::parse(a));
        } else if let Some(o) = af_options(a) {
            let mut attrs = Vec::new();
            while i < args.len() && !args[i].starts_with('-') {
                attrs.push(args[i].clone());
                i += 1;
            }
            if attrs.is_empty() {
                bail!("{a} needs at least one attribute name");
            }
            p.view = View::Autoformat(o?, attrs);
        } else if is_arg(a, "nobatch", 3) {
            p.view = View::NoBatch;
        } else if is_arg(a, "batch", 2) {
            p.view = View::Batch;
        } else if is_arg(a, "long", 1) {
            p.view = View::Long;
        } else if is_arg(a, "json", 2) {
            p.view = View::Json;
        } else if is_arg(a, "hold", 2) || is_arg(a, "held", 4) {
            p.view = View::Hold;
        } else if is_arg(a, "run", 2) || is_arg(a, "running", 3) {
            p.view = View::Run;
        } else if is_arg(a, "allusers", 2) {
            p.all_users = true;
        } else if is_arg(a, "constraint", 3) {
            p.constraints.push(constraint_arg(a, &args, &mut i)?);
        } else if is_arg(a, "better-analyze", 3) || is_arg(a, "analyze", 3) {
            let Some(j) = args.get(i) else {
                bail!("{a} needs a job id (CLUSTER.PROC)");
            };
            if !matches!(Target::parse(j), Target::Job(..)) {
                bail!("{a}: {j:?} is not a job id (CLUSTER.PROC)");
            }
            p.view = View::Analyze(j.clone());
            i += 1;
        } else {
            bail!("unknown option {a:?} (cmctl q takes condor_q's options; -help for the list)");
        }
    }
    Ok(p)
}

/// The constraint sent to the access point: the targets (any), the `-constraint`s, the view's
/// own (`-hold`: held jobs, `-run`: running jobs), and, without targets or `-allusers`,
/// only `me`'s jobs.
pub fn constraint(p: &Parsed, me: &str) -> String {
    let (mut parts, targeted) = join_constraints(&p.constraints, &p.targets);
    if !targeted && !p.all_users {
        parts.push(format!("(Owner == {})", quote(me)));
    }
    match p.view {
        View::Hold => parts.push("(JobStatus == 5)".into()),
        View::Run => parts.push("(JobStatus == 2)".into()),
        _ => {}
    }
    parts.join(" && ")
}

/// A value as `-af` prints it: strings bare, reals as condor does, the rest unparsed.
pub fn af_value(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::Undefined => "undefined".into(),
        Value::Real(r) => crate::status::real(*r),
        other => other.to_string(),
    }
}

/// `-af[:opts] ATTR...`: one line per job.
pub fn autoformat(ads: &[ClassAd], o: &AfOptions, attrs: &[String]) -> String {
    let cells: Vec<Vec<String>> = ads
        .iter()
        .map(|a| {
            let mut row: Vec<String> = Vec::new();
            if o.job_id {
                let (c, p) = columns::job_id(a);
                // Under a header the id takes condor_q's ID column (`%4d.%-3d`).
                row.push(if o.header {
                    views::id_cells(a)
                } else {
                    format!("{c}.{p}")
                });
            }
            for n in attrs {
                let v = if o.raw {
                    a.lookup(n)
                        .map(|e| e.to_string())
                        .unwrap_or("undefined".into())
                } else {
                    af_value(&a.eval_attr(n))
                };
                row.push(if o.label { format!("{n} = {v}") } else { v });
            }
            row
        })
        .collect();
    let sep = if o.newlines {
        "\n"
    } else if o.tabs {
        "\t"
    } else if o.commas {
        ", "
    } else {
        " "
    };
    let mut out = String::new();
    if o.header && !o.newlines {
        let mut names: Vec<String> = Vec::new();
        if o.job_id {
            names.push(" ID".into());
        }
        names.extend(attrs.iter().cloned());
        let widths: Vec<usize> = (0..names.len())
            .map(|i| {
                cells
                    .iter()
                    .map(|r| r[i].chars().count())
                    .chain([names[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |row: &[String]| {
            row.iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect::<Vec<_>>()
                .join(sep)
        };
        out.push_str(line(&names).trim_end());
        out.push('\n');
        for r in &cells {
            out.push_str(&line(r));
            out.push('\n');
        }
        return out;
    }
    for r in &cells {
        out.push_str(&r.join(sep));
        out.push('\n');
        if o.newlines {
            out.push('\n');
        }
    }
    out
}

/// The line above condor_q's tables (after two blank lines): which access point, and when.
pub fn schedd_header(path: &str, clock: &Clock) -> String {
    format!(
        "\n\n-- Schedd: {path} @ {}\n",
        clock.format(clock.now, "%m/%d/%y %H:%M:%S")
    )
}

/// Renders the answer to a query in the chosen view; `all_users` counts the whole queue for
/// the second summary line. `Analyze` is rendered by [`analyze`].
pub fn render(
    p: &Parsed,
    ads: &[ClassAd],
    all_users: Option<&views::Totals>,
    clock: &Clock,
) -> String {
    let sorted = || {
        let mut v: Vec<ClassAd> = ads.to_vec();
        v.sort_by_cached_key(columns::job_id);
        v
    };
    let totals = views::Totals::of(ads);
    let partial =
        !p.constraints.is_empty() || p.targets.iter().any(|t| !matches!(t, Target::Owner(_)));
    match &p.view {
        View::Long => crate::status::long(&sorted()),
        View::Json => crate::status::json(&sorted()),
        View::Autoformat(o, attrs) => autoformat(&sorted(), o, attrs),
        View::Batch => views::batch(ads, partial, clock) + &views::summary(&totals, all_users),
        View::NoBatch => views::nobatch(ads, clock) + &views::summary(&totals, all_users),
        View::Hold => views::hold(ads, clock) + &views::summary(&totals, all_users),
        View::Run => views::run(ads, clock),
        View::Analyze(_) => String::new(),
    }
}

/// Whose jobs `cmctl q` shows by default at `at`: over TCP with a token, the token's user (the
/// access point makes `user@domain` the owner `user`); else the Unix account running cmctl.
pub fn me_at(at: &schedd::Target) -> String {
    if let (schedd::Target::Tcp(_), aerie_security::Transport::Token { token, .. }) =
        (at, aerie_security::transport())
    {
        if let Some(sub) = aerie_security::token::unverified_subject(token) {
            return sub
                .split_once('@')
                .map_or(sub.clone(), |(u, _)| u.to_string());
        }
    }
    me()
}

/// The Unix user running this command: condor_q's "my jobs".
pub fn me() -> String {
    let uid = nix::unistd::getuid();
    match nix::unistd::User::from_uid(uid) {
        Ok(Some(u)) => u.name,
        _ => uid.to_string(),
    }
}

/// The current time, seconds since the epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// The attributes the default batch view reads ([`views::batch`]).
pub const BATCH_ATTRS: &[&str] = &[
    "ClusterId",
    "ProcId",
    "Owner",
    "JobBatchName",
    "TotalSubmitProcs",
    "JobStatus",
    "QDate",
];

/// The first columns of `-nobatch` and `-run` (ID, OWNER, SUBMITTED) and the run time
/// ([`columns::run_time`]) with the status it reads.
const JOB_ROW_ATTRS: &[&str] = &[
    "ClusterId",
    "ProcId",
    "Owner",
    "QDate",
    "RemoteUserCpu",
    "JobStatus",
    "ServerTime",
    "ShadowBday",
    "LastRemoteWallClockTime",
];

/// What `-nobatch` reads besides [`JOB_ROW_ATTRS`] ([`views::nobatch`]: ST, PRI, SIZE, CMD).
pub const NOBATCH_ATTRS: &[&str] = &[
    "TransferQueued",
    "TransferringInput",
    "TransferringOutput",
    "JobPrio",
    "MemoryUsage",
    "ImageSize",
    "Cmd",
    "Args",
    "Arguments",
    "JobDescription",
    "MATCH_EXP_JobDescription",
];

/// The attributes `-hold` reads ([`views::hold`]).
pub const HOLD_ATTRS: &[&str] = &[
    "ClusterId",
    "ProcId",
    "Owner",
    "EnteredCurrentStatus",
    "HoldReason",
    "JobStatus",
];

/// The attributes to ask the access point for in `view` (empty: whole ads); the access point
/// adds those a kept attribute's expression refers to. condor_q too asks only for its print
/// format's attributes (src/condor_q.V6/queue.cpp): whole ads made `cmctl q` over 100,000
/// jobs send and parse some 40 attributes a job to print a few.
pub fn projection(view: &View) -> Vec<String> {
    let table = |parts: &[&[&str]]| parts.concat().iter().map(|a| a.to_string()).collect();
    match view {
        View::Long | View::Json | View::Analyze(_) => Vec::new(),
        View::Autoformat(_, attrs) => ["ClusterId", "ProcId"]
            .iter()
            .map(|a| a.to_string())
            .chain(attrs.iter().cloned())
            .collect(),
        View::Batch => table(&[BATCH_ATTRS]),
        View::NoBatch => table(&[JOB_ROW_ATTRS, NOBATCH_ATTRS]),
        View::Hold => table(&[HOLD_ATTRS]),
        // `-run` adds HOST(S).
        View::Run => table(&[JOB_ROW_ATTRS, &["RemoteHost"]]),
    }
}

/// Asks the access point for the jobs `p` picks, and for the whole queue's states when the
/// view has a summary; a projected view asks for rows of typed values, which cmctl reads
/// without parsing ad text ([`aerie_proto::rows`]; an older access point answers in ads).
pub fn fetch(
    schedd: &mut Schedd,
    p: &Parsed,
    me: &str,
) -> anyhow::Result<(Vec<ClassAd>, Option<views::Totals>)> {
    let summary = matches!(p.view, View::Batch | View::NoBatch | View::Hold);
    let (ads, counts) = schedd.query_counted(pb::QueryRequest {
        constraint: constraint(p, me),
        projection: projection(&p.view),
        history: false,
        limit: 0,
        rows: true,
        count_queue: summary,
    })?;
    let all = match (summary, counts) {
        (false, _) => None,
        (true, Some(c)) => Some(views::Totals::of_counts(&c.jobs)),
        // An access point that does not count: every job's status.
        (true, None) => {
            let every = schedd.query(pb::QueryRequest {
                constraint: String::new(),
                projection: vec!["JobStatus".into()],
                history: false,
                limit: 0,
                rows: true,
                count_queue: false,
            })?;
            Some(views::Totals::of(&every))
        }
    };
    Ok((ads, all))
}

const USAGE: &str = "usage: cmctl q [-name SOCKET] [-nobatch | -long | -json | -af[:jhltnr,] ATTR... \
| -hold | -run | -better-analyze CLUSTER.PROC [--cms host:port,...]] [-constraint EXPR] [-allusers] \
[CLUSTER | CLUSTER.PROC | OWNER]...";

/// Runs `cmctl q`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    if args.args.iter().any(|a| is_arg(a, "help", 1)) {
        println!("{USAGE}");
        return Ok(0);
    }
    let p = parse(&args.args)?;
    let at = schedd::target(p.socket.as_deref(), |k| std::env::var(k).ok())?;
    let mut schedd = Schedd::open(&at)?;
    let clock = Clock {
        now: now(),
        local: true,
    };
    let path_text = at.to_string();
    if let View::Analyze(job) = &p.view {
        let text = analyze::run(&mut schedd, &args.conn, job, &path_text)?;
        print!("{text}");
        return Ok(0);
    }
    let (ads, all) = fetch(&mut schedd, &p, &me_at(&at))?;
    let mut out = String::new();
    if !matches!(p.view, View::Long | View::Json | View::Autoformat(..)) {
        out.push_str(&schedd_header(&path_text, &clock));
    }
    out.push_str(&render(&p, &ads, all.as_ref(), &clock));
    print!("{out}");
    Ok(0)
}
