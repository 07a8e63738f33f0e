//! `cmctl history`: condor_history against an access point (`Schedd.Query` with `history`,
//! newest first; see [`crate::schedd`]).
//!
//! condor_history's options: the default table (`defaultJob_PrintFormat` in
//! `src/condor_tools/history.cpp`: ID OWNER SUBMITTED RUN_TIME ST COMPLETED CMD), `-long`,
//! `-af`, `-json`, `-constraint EXPR`, `-limit N` / `-match N`, and job ids (`C`, `C.P`) or
//! owners as arguments. Unlike condor_q it shows every user's jobs.
use crate::queue::{self, columns as col, columns::Clock, is_arg, AfOptions, Target};
use crate::schedd::{self, Schedd};
use aerie_proto::schedd as pb;
use anyhow::bail;
use classad::ClassAd;

/// `cmctl history` arguments.
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    /// condor_history options: [-name SOCKET] [-long | -json | -af[:jhltnr,] ATTR...]
    /// [-constraint EXPR] [-limit N] [JOB_ID | OWNER]...
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// How to print.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum View {
    /// The default table.
    #[default]
    Table,
    /// Every attribute.
    Long,
    /// JSON.
    Json,
    /// Chosen attributes.
    Autoformat(AfOptions, Vec<String>),
}

/// The command line, parsed.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// The access point's socket, when given.
    pub socket: Option<String>,
    /// How to print.
    pub view: View,
    /// `-constraint`s.
    pub constraints: Vec<String>,
    /// Job ids and owners.
    pub targets: Vec<Target>,
    /// `-limit N`: at most N jobs (0: all).
    pub limit: u32,
}

/// Parses condor_history's command line; `None` for `-help`.
pub fn parse(args: &[String]) -> anyhow::Result<Option<Parsed>> {
    let (socket, args) = schedd::take_socket_arg(args)?;
    let mut p = Parsed {
        socket,
        ..Parsed::default()
    };
    // -af and friends are condor_q's; parse them with its parser.
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if !a.starts_with('-') {
            p.targets.push(Target::parse(a));
        } else if is_arg(a, "help", 1) {
            return Ok(None);
        } else if is_arg(a, "long", 1) {
            p.view = View::Long;
        } else if is_arg(a, "json", 2) {
            p.view = View::Json;
        } else if is_arg(a, "limit", 3) || is_arg(a, "match", 1) {
            let Some(n) = args.get(i) else {
                bail!("{a} needs a number of jobs");
            };
            p.limit = n
                .parse()
                .map_err(|_| anyhow::anyhow!("{a} {n:?}: not a number of jobs"))?;
            i += 1;
        } else if is_arg(a, "constraint", 3) {
            p.constraints.push(queue::constraint_arg(a, &args, &mut i)?);
        } else if a.starts_with("-af") || a.starts_with("-auto") || a.starts_with("--af") {
            let mut af: Vec<String> = vec![a.clone()];
            while i < args.len() && !args[i].starts_with('-') {
                af.push(args[i].clone());
                i += 1;
            }
            match queue::parse(&af)?.view {
                queue::View::Autoformat(o, attrs) => p.view = View::Autoformat(o, attrs),
                _ => bail!("unknown option {a:?}"),
            }
        } else {
            bail!("unknown option {a:?} (cmctl history takes condor_history's options)");
        }
    }
    Ok(Some(p))
}

/// The constraint sent to the access point: the targets (any) and the `-constraint`s.
pub fn constraint(p: &Parsed) -> String {
    queue::join_constraints(&p.constraints, &p.targets)
        .0
        .join(" && ")
}

/// The default table as condor_history 23.9.6 prints it, rows in the order given (the access
/// point's, newest first). It prints as it reads: the header keeps its first widths, and the
/// `ID` (7) and `OWNER` (14) columns widen for the rows from the first wider value on; a
/// run time or completion date of 0 is left empty; `CMD` is padded to 15.
pub fn table(ads: &[ClassAd], clock: &Clock) -> String {
    let mut out = String::from(
        " ID     OWNER          SUBMITTED   RUN_TIME     ST COMPLETED   CMD            \n",
    );
    let (mut iw, mut ow) = (7, 14);
    for a in ads {
        let (c, p) = col::job_id(a);
        let id = format!("{c}.{p}");
        let owner = col::string(a, "Owner").unwrap_or("??".into());
        iw = iw.max(id.len());
        ow = ow.max(owner.chars().count());
        let wall = col::float(a, "RemoteWallClockTime")
            .or_else(|| col::float(a, "RemoteUserCpu"))
            .unwrap_or(0.0) as i64;
        let run_time = if wall == 0 {
            String::new()
        } else {
            col::duration(wall)
        };
        let completed = match col::int(a, "CompletionDate") {
            Some(t) if t > 0 => clock.format(t, "%m/%d %H:%M"),
            _ => String::new(),
        };
        out.push_str(&format!(
            "{id:<iw$} {owner:<ow$} {:>11} {run_time:>12} {} {completed:>11} {:<15}\n",
            col::qdate(a, "QDate", clock).unwrap_or("??".into()),
            col::status_char(a),
            col::command_line(a).unwrap_or_default()
        ));
    }
    out
}

/// Renders the history in the chosen view.
pub fn render(p: &Parsed, ads: &[ClassAd], clock: &Clock) -> String {
    match &p.view {
        View::Table => table(ads, clock),
        View::Long => crate::status::long(ads),
        View::Json => crate::status::json(ads),
        View::Autoformat(o, attrs) => queue::autoformat(ads, o, attrs),
    }
}

/// Runs `cmctl history`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let Some(p) = parse(&args.args)? else {
        println!(
            "usage: cmctl history [-name SOCKET] [-long | -json | -af[:jhltnr,] ATTR...] \
             [-constraint EXPR] [-limit N] [CLUSTER | CLUSTER.PROC | OWNER]..."
        );
        return Ok(0);
    };
    let at = schedd::target(p.socket.as_deref(), |k| std::env::var(k).ok())?;
    let ads = Schedd::open(&at)?.query(pb::QueryRequest {
        constraint: constraint(&p),
        projection: Vec::new(),
        history: true,
        limit: p.limit,
        rows: false,
        count_queue: false,
    })?;
    let clock = Clock {
        now: queue::now(),
        local: true,
    };
    print!("{}", render(&p, &ads, &clock));
    Ok(0)
}
