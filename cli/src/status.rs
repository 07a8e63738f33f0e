//! `cmctl status`: `condor_status` against any CM's collector (`Collector.Query`).
//! `-total` is counted on the CM (`Collector.Totals`), and `-long` and `-af` are rendered on
//! the CM (`Collector.QueryText`, the text [`aerie_core::print`] writes, which this module
//! prints alike from ads) and written out as the chunks arrive. A CM without `QueryText` is
//! asked for `Collector.QueryStream`'s chunks of ads, and one without that for `Query`
//! (HTCondor's condor_status, src/condor_status.V6, fetches the ads, projected to the
//! attributes it prints, and formats and counts on the client).
//!
//! Takes condor_status's single-dash options: the default slot table (Name, OpSys, Arch,
//! State, Activity, LoadAv, Mem, ActvtyTime, then the totals by Arch/OpSys), `-long`,
//! `-af ATTR...`, `-constraint EXPR`, `-json`, `-absent`, `-offline`, `-submitters`,
//! `-schedd`, `-negotiator`, `-any`, `-total`. The first CM of `--cms` that answers is used:
//! every CM holds the whole pool.
use crate::args::is_arg;
use aerie_proto::collector as pb;
use anyhow::bail;
use classad::{ClassAd, Value};
use std::collections::BTreeMap;

#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    #[command(flatten)]
    pub conn: crate::client::ConnectArgs,
    /// condor_status options: -long -af ATTR... -constraint EXPR -json -absent -offline
    /// -submitters -schedd -negotiator -any -total [names...]
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// How to print.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Format {
    #[default]
    Table,
    Long,
    Json,
    Autoformat(Vec<String>),
    Total,
}

/// The command line, parsed.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// The ad type asked for (`Machine` by default).
    pub ad_type: String,
    pub constraints: Vec<String>,
    pub absent: bool,
    pub offline: bool,
    pub format: Format,
    pub names: Vec<String>,
}

pub fn parse(args: &[String]) -> anyhow::Result<Parsed> {
    let mut p = Parsed {
        ad_type: "Machine".into(),
        ..Parsed::default()
    };
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if !a.starts_with('-') {
            p.names.push(a.clone());
        } else if is_arg(a, "long", 1) {
            p.format = Format::Long;
        } else if is_arg(a, "json", 2) {
            p.format = Format::Json;
        } else if is_arg(a, "total", 2) {
            p.format = Format::Total;
        } else if is_arg(a, "af", 2) || is_arg(a, "autoformat", 5) {
            let mut attrs = Vec::new();
            while i < args.len() && !args[i].starts_with('-') {
                attrs.push(args[i].clone());
                i += 1;
            }
            if attrs.is_empty() {
                bail!("{a} needs at least one attribute name");
            }
            p.format = Format::Autoformat(attrs);
        } else if is_arg(a, "constraint", 3) {
            let Some(c) = args.get(i) else {
                bail!("{a} needs an expression");
            };
            classad::parse_expr(c).map_err(|e| anyhow::anyhow!("-constraint {c:?}: {e}"))?;
            p.constraints.push(c.clone());
            i += 1;
        } else if is_arg(a, "absent", 2) {
            p.absent = true;
        } else if is_arg(a, "offline", 2) {
            p.offline = true;
        } else if is_arg(a, "submitters", 2) {
            p.ad_type = "Submitter".into();
        } else if is_arg(a, "schedd", 2) {
            p.ad_type = "Scheduler".into();
        } else if is_arg(a, "negotiator", 2) {
            p.ad_type = "Negotiator".into();
        } else if is_arg(a, "startd", 3) || is_arg(a, "slots", 2) {
            p.ad_type = "Machine".into();
        } else if is_arg(a, "any", 2) {
            p.ad_type = "Any".into();
        } else {
            bail!("unknown option {a:?} (cmctl status takes condor_status's options)");
        }
    }
    Ok(p)
}

/// The constraint sent to the CM: the user's, the names, and -absent/-offline.
pub fn constraint(p: &Parsed) -> String {
    let mut parts: Vec<String> = p.constraints.iter().map(|c| format!("({c})")).collect();
    if !p.names.is_empty() {
        let names: Vec<String> = p
            .names
            .iter()
            .map(|n| {
                let q = n.replace('\\', "\\\\").replace('"', "\\\"");
                format!("Name == \"{q}\" || Machine == \"{q}\"")
            })
            .collect();
        parts.push(format!("({})", names.join(" || ")));
    }
    if p.absent {
        parts.push("(Absent =?= true)".into());
    }
    if p.offline {
        parts.push("(Offline =?= true)".into());
    }
    parts.join(" && ")
}

fn text(ad: &ClassAd, attr: &str) -> String {
    value_text(ad.eval_attr(attr))
}

pub use aerie_core::print::{real, value_text};

/// `d+hh:mm:ss`, as condor_status prints durations.
pub fn duration(secs: i64) -> String {
    let s = secs.max(0);
    format!(
        "{}+{:02}:{:02}:{:02}",
        s / 86400,
        (s % 86400) / 3600,
        (s % 3600) / 60,
        s % 60
    )
}

fn sort_key(ad: &ClassAd) -> (String, String) {
    (text(ad, "Machine"), text(ad, "Name"))
}

/// The default slot table and its totals, as condor_status 23 prints them: names never
/// truncated (at least 18 wide), `LoadAv` from `CondorLoadAvg`, `Mem` widening for large
/// values, `ActvtyTime` as `LastHeardFrom - EnteredCurrentActivity` (`-` without
/// `LastHeardFrom`), rows sorted by machine then name.
pub fn slot_table(ads: &[ClassAd]) -> String {
    let mut ads: Vec<&ClassAd> = ads.iter().collect();
    ads.sort_by_key(|a| sort_key(a));
    let mem = |a: &ClassAd| match a.eval_attr("Memory") {
        Value::Int(m) => m.to_string(),
        Value::Real(m) => format!("{}", m as i64),
        _ => "[????]".into(),
    };
    let w = ads
        .iter()
        .map(|a| text(a, "Name").chars().count())
        .max()
        .unwrap_or(0)
        .max(18);
    let mw = ads.iter().map(|a| mem(a).len()).max().unwrap_or(0).max(4);
    let mut out = format!(
        "{:<w$} {:<10} {:<6} {:<9} {:<8} {:>6} {:<mw$} {:>11}\n\n",
        "Name", "OpSys", "Arch", "State", "Activity", "LoadAv", "Mem", "ActvtyTime"
    );
    for a in &ads {
        let load = match a.eval_attr("CondorLoadAvg").as_number() {
            Some(l) => format!("{l:.3}"),
            None => "[????]".into(),
        };
        let time = match a.eval_attr("LastHeardFrom").as_int() {
            Some(heard) => {
                duration(heard - a.eval_attr("EnteredCurrentActivity").as_int().unwrap_or(0))
            }
            None => "-".into(),
        };
        out.push_str(&format!(
            "{:<w$} {:<10} {:<6} {:<9} {:<8} {:>6} {:>mw$} {:>11}\n",
            text(a, "Name"),
            text(a, "OpSys"),
            text(a, "Arch"),
            text(a, "State"),
            text(a, "Activity"),
            load,
            mem(a),
            time
        ));
    }
    out.push('\n');
    out.push_str(&slot_totals(&ads));
    out
}

/// The totals by Arch/OpSys (`-total`, and the bottom of the default table). `Drain` counts
/// `Drained` slots and `Backfill` every `Backfill` slot; `BkIdle` (partitionable backfill
/// resources) is not tracked and stays 0.
pub fn slot_totals(ads: &[&ClassAd]) -> String {
    let mut counts = SlotCounts::default();
    for a in ads {
        counts.add(
            format!("{}/{}", text(a, "Arch"), text(a, "OpSys")),
            &text(a, "State"),
            1,
        );
    }
    counts.to_string()
}

/// What the CM is asked to group slots by for [`slot_totals_of`]: the label's parts and the
/// state.
pub const SLOT_TOTALS_BY: [&str; 3] = ["Arch", "OpSys", "State"];

/// [`slot_totals`] from the CM's counts (`Collector.Totals` grouped by [`SLOT_TOTALS_BY`]):
/// the same text, without the ads crossing the network.
pub fn slot_totals_of(rows: &[pb::TotalsRow]) -> String {
    let mut counts = SlotCounts::default();
    for r in rows {
        let part = |i: usize| r.key.get(i).map(totals_value_text).unwrap_or_default();
        counts.add(format!("{}/{}", part(0), part(1)), &part(2), r.count);
    }
    counts.to_string()
}

/// A key value of a `Collector.Totals` row as [`text`] would print the attribute.
fn totals_value_text(v: &pb::TotalsValue) -> String {
    use pb::totals_value::Value as V;
    match &v.value {
        None => value_text(Value::Undefined),
        Some(V::Str(s)) => s.clone(),
        Some(V::Int(i)) => value_text(Value::Int(*i)),
        Some(V::Real(r)) => value_text(Value::Real(*r)),
        Some(V::Boolean(b)) => value_text(Value::Bool(*b)),
        Some(V::Other(o)) => o.clone(),
    }
}

/// The `-total` table's columns and their widths.
const TOTAL_COLS: [(&str, usize); 9] = [
    ("Total", 5),
    ("Owner", 5),
    ("Claimed", 7),
    ("Unclaimed", 9),
    ("Matched", 7),
    ("Preempting", 10),
    ("Drain", 6),
    ("Backfill", 8),
    ("BkIdle", 6),
];

/// Slot counts by `Arch/OpSys` label and state column of [`TOTAL_COLS`].
#[derive(Default)]
struct SlotCounts {
    rows: BTreeMap<String, [u64; 9]>,
    total: [u64; 9],
}

impl SlotCounts {
    /// Counts `n` slots of `label` in `state`.
    fn add(&mut self, label: String, state: &str, n: u64) {
        let idx = match state {
            "Owner" => Some(1),
            "Claimed" => Some(2),
            "Unclaimed" => Some(3),
            "Matched" => Some(4),
            "Preempting" => Some(5),
            "Drained" => Some(6),
            "Backfill" => Some(7),
            _ => None,
        };
        let r = self.rows.entry(label).or_insert([0; 9]);
        r[0] += n;
        self.total[0] += n;
        if let Some(i) = idx {
            r[i] += n;
            self.total[i] += n;
        }
    }
}

impl std::fmt::Display for SlotCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lw = self.rows.keys().map(|k| k.len()).max().unwrap_or(0).max(14);
        write!(f, "{:>lw$}", "")?;
        for (h, w) in TOTAL_COLS {
            write!(f, " {h:>w$}")?;
        }
        f.write_str("\n\n")?;
        let line = |f: &mut std::fmt::Formatter<'_>, label: &str, v: &[u64; 9]| {
            write!(f, "{label:>lw$}")?;
            for ((_, w), n) in TOTAL_COLS.iter().zip(v) {
                write!(f, " {n:>w$}", w = *w)?;
            }
            f.write_str("\n")
        };
        for (label, v) in &self.rows {
            line(f, label, v)?;
        }
        f.write_str("\n")?;
        line(f, "Total", &self.total)
    }
}

/// The `-submitters` (`schedd = false`: RunningJobs, IdleJobs, HeldJobs) and `-schedd`
/// (`TotalRunningJobs`...) tables with their totals, as condor_status 23 prints them.
pub fn jobs_table(ads: &[ClassAd], schedd: bool) -> String {
    let mut ads: Vec<&ClassAd> = ads.iter().collect();
    ads.sort_by_key(|a| sort_key(a));
    let attrs: [&str; 3] = if schedd {
        ["TotalRunningJobs", "TotalIdleJobs", "TotalHeldJobs"]
    } else {
        ["RunningJobs", "IdleJobs", "HeldJobs"]
    };
    let num = |a: &ClassAd, i: usize| a.eval_attr(attrs[i]).as_int().unwrap_or(0);
    let nw = ads
        .iter()
        .map(|a| text(a, "Name").len())
        .max()
        .unwrap_or(0)
        .max(4);
    let mw = ads
        .iter()
        .map(|a| text(a, "Machine").len())
        .max()
        .unwrap_or(0)
        .max(7);
    let mut out = format!(
        "{:<nw$} {:<mw$} {:>11} {:>10} {:>10}\n\n",
        "Name", "Machine", "RunningJobs", "IdleJobs", "HeldJobs"
    );
    for a in &ads {
        out.push_str(&format!(
            "{:<nw$} {:<mw$} {:>11} {:>10} {:>10}\n",
            text(a, "Name"),
            text(a, "Machine"),
            num(a, 0),
            num(a, 1),
            num(a, 2)
        ));
    }
    out.push('\n');
    let mut total = [0i64; 3];
    for a in &ads {
        for (i, t) in total.iter_mut().enumerate() {
            *t += num(a, i);
        }
    }
    if schedd {
        out.push_str(&format!(
            "{:nw$} {:>16} {:>18} {:>18}\n\n{:14}\n",
            "", attrs[0], attrs[1], attrs[2], ""
        ));
        out.push_str(&format!(
            "{:>14} {:>17} {:>18} {:>18}\n",
            "Total", total[0], total[1], total[2]
        ));
        return out;
    }
    // Submitters: one line per user (summed over their schedds), then the total.
    let mut by_user: BTreeMap<String, [i64; 3]> = BTreeMap::new();
    for a in &ads {
        let r = by_user.entry(text(a, "Name")).or_insert([0; 3]);
        for (i, t) in r.iter_mut().enumerate() {
            *t += num(a, i);
        }
    }
    let lw = nw.max(5);
    out.push_str(&format!(
        "{:lw$} {:>11} {:>10} {:>10}\n\n",
        "", attrs[0], attrs[1], attrs[2]
    ));
    for (user, r) in &by_user {
        out.push_str(&format!(
            "{user:>lw$} {:>11} {:>10} {:>10}\n",
            r[0], r[1], r[2]
        ));
    }
    out.push_str(&format!(
        "\n{:>lw$} {:>11} {:>10} {:>10}\n",
        "Total", total[0], total[1], total[2]
    ));
    out
}

/// A simple table of the given columns (negotiators and other types; condor_status's own
/// `-negotiator` layout is not reproduced).
pub fn column_table(ads: &[ClassAd], cols: &[&str]) -> String {
    let mut ads: Vec<&ClassAd> = ads.iter().collect();
    ads.sort_by_key(|a| sort_key(a));
    let cells: Vec<Vec<String>> = ads
        .iter()
        .map(|a| cols.iter().map(|c| text(a, c)).collect())
        .collect();
    let widths: Vec<usize> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
                .max(c.len())
        })
        .collect();
    let fmt_row = |r: &[String]| {
        let mut s = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join(" ");
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let header: Vec<String> = cols.iter().map(|c| c.to_string()).collect();
    let mut out = fmt_row(&header);
    out.push('\n');
    for r in &cells {
        out.push_str(&fmt_row(r));
    }
    out
}

/// `-af`: the attributes' values separated by spaces, strings unquoted, one line per ad.
pub fn autoformat(ads: &[ClassAd], attrs: &[String]) -> String {
    let mut out = String::new();
    for a in ads {
        aerie_core::print::autoformat_line(&mut out, a, attrs);
    }
    out
}

/// `-long`: each ad's attributes sorted by name (case-insensitively), a blank line after
/// each ad.
pub fn long(ads: &[ClassAd]) -> String {
    let mut out = String::new();
    for a in ads {
        aerie_core::print::long_ad(&mut out, a.iter());
    }
    out
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// A value as condor_status -json writes it; `None` when it is not a literal.
fn json_value(v: &Value, indent: usize) -> Option<String> {
    Some(match v {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Real(r) if r.is_finite() => real(*r),
        Value::Str(s) => json_str(s),
        Value::Undefined => "null".into(),
        Value::List(l) => {
            let pad = " ".repeat(indent + 2);
            let items: Option<Vec<String>> = l
                .iter()
                .map(|x| json_value(x, indent + 2).map(|j| format!("{pad}{j}")))
                .collect();
            format!("[\n{}\n{}]", items?.join(",\n"), " ".repeat(indent))
        }
        _ => return None,
    })
}

/// `-json` as condor_status writes it: `[`, the ads separated by a line with a comma, each
/// ad's attributes sorted by name; literals as JSON, other expressions as the string
/// `"\/Expr(...)\/"`.
pub fn json(ads: &[ClassAd]) -> String {
    let mut objs = Vec::new();
    for a in ads {
        let mut attrs: Vec<(&str, &classad::Expr)> = a.iter().collect();
        attrs.sort_by_key(|(n, _)| n.to_ascii_lowercase());
        let lines: Vec<String> = attrs
            .iter()
            .map(|(name, e)| {
                let lit = e.to_string();
                let literal = if is_literal(e) {
                    json_value(&a.eval_expr(e), 2)
                } else {
                    None
                };
                let v = literal.unwrap_or_else(|| {
                    let inner = json_str(&lit);
                    format!("\"\\/Expr({})\\/\"", &inner[1..inner.len() - 1])
                });
                format!("  {}: {v}", json_str(name))
            })
            .collect();
        objs.push(format!("{{\n{}\n}}", lines.join(",\n")));
    }
    format!("[\n{}\n]\n", objs.join("\n,\n"))
}

/// Whether an attribute's expression is a literal (a negative number or a list of literals
/// counts): condor_status writes those as JSON values, anything else as an expression.
fn is_literal(e: &classad::Expr) -> bool {
    use classad::Expr;
    match e {
        Expr::Lit(_) => true,
        Expr::Unary(_, x) => matches!(**x, Expr::Lit(Value::Int(_) | Value::Real(_))),
        Expr::List(l) => l.iter().all(is_literal),
        _ => false,
    }
}

/// Renders the CM's answer as asked.
pub fn render(p: &Parsed, ads: &[ClassAd]) -> String {
    match &p.format {
        Format::Long => long(ads),
        Format::Json => json(ads),
        Format::Autoformat(attrs) => autoformat(ads, attrs),
        Format::Total if ads.is_empty() => String::new(),
        // condor_status -total starts with a blank line.
        Format::Total => {
            let refs: Vec<&ClassAd> = ads.iter().collect();
            format!("\n{}", slot_totals(&refs))
        }
        // condor_status prints nothing at all when no ad matches.
        Format::Table if ads.is_empty() => String::new(),
        Format::Table => match p.ad_type.as_str() {
            "Machine" => slot_table(ads),
            "Submitter" => jobs_table(ads, false),
            "Scheduler" => jobs_table(ads, true),
            "Negotiator" => column_table(
                ads,
                &[
                    "Name",
                    "LastNegotiationCycleEnd0",
                    "LastNegotiationCycleDuration0",
                    "LastNegotiationCycleCandidateSlots0",
                    "LastNegotiationCycleActiveSubmitterCount0",
                    "LastNegotiationCycleNumSchedulers0",
                    "LastNegotiationCycleNumIdleJobs0",
                    "LastNegotiationCycleMatches0",
                    "LastNegotiationCycleRejections0",
                ],
            ),
            _ => column_table(ads, &["MyType", "TargetType", "Name"]),
        },
    }
}

/// Asks the CMs in order until one answers; the ads it answered with, parsed.
pub(crate) fn fetch(
    client: &mut crate::client::Client,
    req: pb::QueryRequest,
) -> anyhow::Result<Vec<ClassAd>> {
    let (reply, addr) = client.collector("query", |mut c| {
        let req = req.clone();
        async move { Ok(c.query(req).await?.into_inner()) }
    })?;
    let mut ads = Vec::with_capacity(reply.ads.len());
    for (i, t) in reply.ads.iter().enumerate() {
        let mut parsed = classad::parse_old_ads(t)
            .map_err(|e| anyhow::anyhow!("ad {i} from {addr} does not parse: {e}"))?;
        if let Some(a) = parsed.pop() {
            ads.push(a);
        }
    }
    Ok(ads)
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    if args
        .args
        .iter()
        .any(|a| a == "-help" || a == "--help" || a == "-h")
    {
        println!(
            "usage: cmctl status [--cms host:port,...] [-long | -af ATTR... | -json | -total] \
             [-constraint EXPR] [-absent] [-offline] [-submitters | -schedd | -negotiator | -any] [names...]"
        );
        return Ok(0);
    }
    let p = parse(&args.args)?;
    let mut client = crate::client::Client::new(&args.conn)?;
    if p.format == Format::Total {
        if let Some(out) = totals(&mut client, &p)? {
            print!("{out}");
            return Ok(0);
        }
    }
    let req = pb::QueryRequest {
        ad_type: p.ad_type.clone(),
        constraint: constraint(&p),
        projection: match &p.format {
            Format::Autoformat(a) => a.clone(),
            _ => Vec::new(),
        },
        absent: p.absent || p.offline,
        limit: 0,
    };
    if let Some(format) = text_format(&p.format) {
        if query_text(&mut client, &req, format)? || stream(&mut client, &req, &p)? {
            return Ok(0);
        }
    }
    let ads = fetch(&mut client, req)?;
    print!("{}", render(&p, &ads));
    Ok(0)
}

/// The text `Collector.QueryText` renders for `format` on the CM, if any.
fn text_format(format: &Format) -> Option<pb::QueryFormat> {
    match format {
        Format::Long => Some(pb::QueryFormat::Long),
        Format::Autoformat(_) => Some(pb::QueryFormat::Autoformat),
        _ => None,
    }
}

/// `-long` and `-af` as the CM renders them (`Collector.QueryText`): the chunks of text are
/// written to standard output as they arrive, through one lock and without parsing an ad.
/// False from a CM too old to render (nothing printed: the caller asks `QueryStream`). As
/// with [`stream`], a stream that breaks after the first chunk is a final error.
fn query_text(
    client: &mut crate::client::Client,
    req: &pb::QueryRequest,
    format: pb::QueryFormat,
) -> anyhow::Result<bool> {
    use std::io::Write;
    let (rendered, _) = client.collector("query", |mut c| {
        let req = pb::QueryTextRequest {
            query: Some(req.clone()),
            format: format.into(),
        };
        async move {
            let mut s = match c.query_text(req).await {
                Ok(r) => r.into_inner(),
                Err(st) if st.code() == tonic::Code::Unimplemented => return Ok(false),
                Err(st) => return Err(st),
            };
            let mut out = std::io::stdout().lock();
            let mut n = 0usize;
            let broke = |n: usize, what: String| {
                tonic::Status::internal(format!("after {n} bytes of the answer: {what}"))
            };
            while let Some(chunk) = s.message().await.map_err(|e| broke(n, e.to_string()))? {
                out.write_all(&chunk.text)
                    .map_err(|e| broke(n, format!("writing standard output: {e}")))?;
                n += chunk.text.len();
            }
            out.flush()
                .map_err(|e| broke(n, format!("writing standard output: {e}")))?;
            Ok(true)
        }
    })?;
    Ok(rendered)
}

/// `-long` and `-af` print the ads in the CM's order, so they print each chunk of
/// `Collector.QueryStream` as it arrives. False from a CM too old to stream (nothing printed:
/// the caller asks `Query`). A stream that breaks after the first chunk is a final error (what
/// was printed cannot be taken back, so no other CM is asked).
fn stream(
    client: &mut crate::client::Client,
    req: &pb::QueryRequest,
    p: &Parsed,
) -> anyhow::Result<bool> {
    use std::io::Write;
    let (streamed, _) = client.collector("query", |mut c| {
        let req = req.clone();
        async move {
            let mut s = match c.query_stream(req).await {
                Ok(r) => r.into_inner(),
                Err(st) if st.code() == tonic::Code::Unimplemented => return Ok(false),
                Err(st) => return Err(st),
            };
            let mut n = 0usize;
            let broke =
                |n: usize, what: String| tonic::Status::internal(format!("after {n} ads: {what}"));
            while let Some(chunk) = s.message().await.map_err(|e| broke(n, e.to_string()))? {
                let mut ads = Vec::with_capacity(chunk.ads.len());
                for (i, t) in chunk.ads.iter().enumerate() {
                    let mut parsed = classad::parse_old_ads(t)
                        .map_err(|e| broke(n, format!("ad {} does not parse: {e}", n + i)))?;
                    ads.extend(parsed.pop());
                }
                std::io::stdout()
                    .lock()
                    .write_all(render(p, &ads).as_bytes())
                    .map_err(|e| broke(n, format!("writing standard output: {e}")))?;
                n += chunk.ads.len();
            }
            Ok(true)
        }
    })?;
    Ok(streamed)
}

/// `-total` counted by the CM (`Collector.Totals`); `None` from a CM too old to count, which
/// leaves it to the client (all the ads fetched).
fn totals(client: &mut crate::client::Client, p: &Parsed) -> anyhow::Result<Option<String>> {
    let req = pb::TotalsRequest {
        ad_type: p.ad_type.clone(),
        constraint: constraint(p),
        absent: p.absent || p.offline,
        group_by: SLOT_TOTALS_BY.map(String::from).to_vec(),
        sum: Vec::new(),
    };
    let (reply, _) = client.collector("totals", |mut c| {
        let req = req.clone();
        async move {
            match c.totals(req).await {
                Ok(r) => Ok(Some(r.into_inner())),
                Err(s) if s.code() == tonic::Code::Unimplemented => Ok(None),
                Err(s) => Err(s),
            }
        }
    })?;
    Ok(reply.map(|r| render_totals(&r.rows)))
}

/// `-total` from the CM's counts, as [`render`] prints it from the ads: nothing when no slot
/// matched, else a blank line and the totals.
pub fn render_totals(rows: &[pb::TotalsRow]) -> String {
    if rows.iter().all(|r| r.count == 0) {
        return String::new();
    }
    format!("\n{}", slot_totals_of(rows))
}

#[cfg(test)]
mod tests;
