//! `cmctl advertise`: `condor_advertise` against any CM's collector.
//!
//! Updates go through `Collector.AdvertiseStream`, the call a node streams its ads over, so
//! an admin's ad meets the same validation and limits as a node's (`MyType` and `Name`, the
//! size limit, the update rate of one connection) and the CM relays it to the others. Each
//! query ad of an `INVALIDATE_*` command names an ad (`Name`, at the host of `MyAddress` when
//! given) or picks ads by `Requirements`; live ads go through `Collector.Invalidate` (by name;
//! `Requirements` is a `Collector.Query` first, then one invalidation per ad found), absent
//! and offline ads, which live in the replicated state, through a Raft write that removes
//! their record (`RemoveAd`).
use crate::client::{Client, ConnectArgs};
use aerie_core::admin::AdsQuery;
use aerie_core::state::{AdRecord, Command};
use aerie_proto::collector as pb;
use anyhow::bail;
use classad::{ClassAd, Value};
use std::collections::BTreeMap;
use std::io::Read;

mod command;
mod file;

pub use command::{lookup, Action, AdCommand, Invalidation, Select};
pub use file::{read_ads, FileAd};

#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    #[command(flatten)]
    pub conn: ConnectArgs,
    /// condor_advertise's arguments: [-multiple] [-tcp] [-debug] [-pool HOST:PORT]
    /// [COMMAND [FILE]] (-help for more)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

const USAGE: &str = "\
usage: cmctl advertise [--cms HOST:PORT,...] [-multiple] [-tcp] [-debug] [-pool HOST:PORT]
                       [COMMAND [FILE]]

Publishes ads in the collector, or removes them, as condor_advertise does. Any CM takes them
and relays them to the others.

  COMMAND     UPDATE_STARTD_AD, UPDATE_SCHEDD_AD, UPDATE_SUBMITTOR_AD, UPDATE_MASTER_AD,
              UPDATE_NEGOTIATOR_AD, UPDATE_COLLECTOR_AD, UPDATE_AD_GENERIC: publish each ad
              of FILE (its MyType must agree with the command); without COMMAND, the update
              command of the first ad's MyType. An ad with Offline = true is kept as an
              offline ad (cmctl status -offline).
              INVALIDATE_STARTD_ADS, INVALIDATE_SCHEDD_ADS, INVALIDATE_SUBMITTOR_ADS,
              INVALIDATE_MASTER_ADS, INVALIDATE_NEGOTIATOR_ADS, INVALIDATE_COLLECTOR_ADS,
              INVALIDATE_ADS_GENERIC: each ad of FILE is a query ad that removes live, absent
              and offline ads alike:
                  MyType = \"Query\"
                  TargetType = \"Machine\"
                  Name = \"slot1@node7\"
                  Requirements = Name == \"slot1@node7\"
              Name picks that ad (with MyAddress, only the one at that host) and Requirements
              is then not looked at, as HTCondor's collector does; without Name, Requirements
              picks every ad it is true for (MY.attr works, TARGET.attr is undefined).
  FILE        old ClassAd syntax (one Attr = expression per line, # comments); - or none:
              standard input
  -multiple   FILE holds several ads separated by blank lines; without it a second ad is an
              error, where condor_advertise would merge the two
  -tcp, -udp  accepted for condor_advertise's sake: Aerie always sends over gRPC on TCP
  -debug      also print what the collector did with each ad (new, changed, unchanged...)
  -pool H:P   send to this CM instead of --cms / $AERIE_CMS

Prints \"Sent N of M ads to CM.\" (N: the ads the CM accepted, or the query ads it acted on),
each refused ad with the reason, and exits 0 when every ad went through, 1 otherwise, as
condor_advertise does.
";

/// The command line, parsed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// The command; `None`: the update command of the first ad's `MyType`.
    pub command: Option<&'static AdCommand>,
    /// The file; `None` or `-`: standard input.
    pub file: Option<String>,
    /// `-multiple`: ads separated by blank lines.
    pub multiple: bool,
    /// `-debug`: print each ad's outcome.
    pub debug: bool,
    /// `-udp` was given (ignored: Aerie always uses TCP).
    pub udp: bool,
    /// `-pool HOST:PORT`: this CM instead of `--cms`.
    pub pool: Option<String>,
    /// `-help`.
    pub help: bool,
}

/// `arg` is `-name` or `--name`, or a prefix of it of at least two letters (as
/// condor_advertise takes `-m` for `-multiple`).
fn is_opt(arg: &str, name: &str) -> bool {
    let Some(s) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
        return false;
    };
    !s.is_empty() && name.starts_with(s)
}

/// Parses condor_advertise's arguments: options anywhere, then COMMAND and FILE.
pub fn parse(args: &[String]) -> Result<Parsed, String> {
    let mut p = Parsed::default();
    let mut positional = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        if a == "-" || !a.starts_with('-') {
            positional.push(a);
        } else if a == "-help" || a == "--help" || a == "-h" {
            p.help = true;
        } else if a == "-pool" || a == "--pool" {
            let Some(pool) = args.get(i) else {
                return Err("-pool requires an argument (HOST:PORT of a CM)".into());
            };
            p.pool = Some(pool.clone());
            i += 1;
        } else if a == "-debug" || a == "--debug" {
            p.debug = true;
        } else if is_opt(a, "tcp") {
        } else if is_opt(a, "udp") {
            p.udp = true;
        } else if is_opt(a, "multiple") {
            p.multiple = true;
        } else {
            return Err(format!("unknown argument {a}"));
        }
    }
    let mut positional = positional.into_iter();
    if let Some(c) = positional.next() {
        p.command = Some(lookup(c)?);
    }
    p.file = positional.next().map(str::to_string);
    if let Some(extra) = positional.next() {
        return Err(format!("extra argument {extra}"));
    }
    Ok(p)
}

/// Runs `cmctl advertise`; every failure is reported here and exits 1, as condor_advertise
/// does.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let p = match parse(&args.args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("cmctl advertise: {e} (cmctl advertise -help for the usage)");
            return Ok(1);
        }
    };
    if p.help {
        print!("{USAGE}");
        return Ok(0);
    }
    match advertise(args.conn, &p) {
        Ok(code) => Ok(code),
        Err(e) => {
            eprintln!("cmctl advertise: {e:#}");
            Ok(1)
        }
    }
}

/// The file's name for messages and its contents (`-` or none: standard input).
fn read_input(file: Option<&str>) -> anyhow::Result<(String, String)> {
    let mut text = String::new();
    match file {
        None | Some("-") => {
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| anyhow::anyhow!("cannot read standard input: {e}"))?;
            Ok(("(stdin)".into(), text))
        }
        Some(f) => {
            text =
                std::fs::read_to_string(f).map_err(|e| anyhow::anyhow!("cannot read {f}: {e}"))?;
            Ok((f.to_string(), text))
        }
    }
}

fn advertise(mut conn: ConnectArgs, p: &Parsed) -> anyhow::Result<i32> {
    if p.udp {
        eprintln!("cmctl advertise: -udp ignored: Aerie always sends over gRPC on TCP");
    }
    let (name, text) = read_input(p.file.as_deref())?;
    let ads = read_ads(&name, &text, p.multiple).map_err(anyhow::Error::msg)?;
    let command = match p.command {
        Some(c) => c,
        None => match ads[0].ad.eval_attr("MyType") {
            Value::Str(t) => AdCommand::for_type(&t).map_err(anyhow::Error::msg)?,
            _ => bail!(ads[0].fault(
                "MyType",
                "missing: name the COMMAND, or give the ad a MyType to pick it from"
            )),
        },
    };
    if let Some(pool) = &p.pool {
        conn.cms = vec![pool.clone()];
    }
    let mut client = Client::new(&conn)?;
    match command.action {
        Action::Update => update(&mut client, command, &ads, p.debug),
        Action::Invalidate => invalidate(&mut client, command, &ads),
    }
}

/// Ads per message of the stream.
const BATCH: usize = 500;

/// `1 ad`, `2 ads`.
fn ads_count(n: usize) -> String {
    format!("{n} ad{}", if n == 1 { "" } else { "s" })
}

/// condor_advertise's last line: `Sent 2 of 3 ads to CM.`, naming the CM that answered, or
/// every CM when none did.
fn summary(client: &Client, done: usize, of: usize, to: Option<&str>) {
    let to = to.map_or_else(|| client.addrs().join(", "), str::to_string);
    println!("Sent {done} of {} to {to}.", ads_count(of));
}

/// Publishes the ads once every one has been checked; prints each refusal and the summary.
fn update(
    client: &mut Client,
    command: &AdCommand,
    ads: &[FileAd],
    debug: bool,
) -> anyhow::Result<i32> {
    for ad in ads {
        command.check_update(ad).map_err(anyhow::Error::msg)?;
    }
    let batches: Vec<pb::AdBatch> = ads
        .chunks(BATCH)
        .map(|c| pb::AdBatch {
            ads: c
                .iter()
                .map(|a| pb::Ad {
                    text: a.text.clone(),
                })
                .collect(),
        })
        .collect();
    let sent = client.collector("sending the ads", |mut c| {
        let batches = batches.clone();
        async move {
            let mut replies = c
                .advertise_stream(tokio_stream::iter(batches))
                .await?
                .into_inner();
            let mut results = Vec::new();
            while let Some(s) = replies.message().await? {
                results.extend(s.results);
            }
            Ok(results)
        }
    });
    let (results, addr) = match sent {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cmctl advertise: {e:#}");
            summary(client, 0, ads.len(), None);
            return Ok(1);
        }
    };
    if results.len() != ads.len() {
        bail!(
            "{addr} answered for {} of {}",
            results.len(),
            ads_count(ads.len())
        );
    }
    let mut accepted = 0;
    for (ad, r) in ads.iter().zip(&results) {
        if r.ok {
            accepted += 1;
            if debug {
                println!("{}: {}", ad.label(), r.outcome);
            }
        } else {
            eprintln!("cmctl advertise: {}: refused: {}", ad.label(), r.error);
        }
    }
    summary(client, accepted, ads.len(), Some(&addr));
    Ok(if accepted == ads.len() { 0 } else { 1 })
}

/// The replicated absent and offline ads: bucket -> record name -> record.
type Hidden = BTreeMap<String, BTreeMap<String, AdRecord>>;

/// Carries out each query ad once every one has been checked; prints what each removed.
fn invalidate(client: &mut Client, command: &AdCommand, ads: &[FileAd]) -> anyhow::Result<i32> {
    let plans = ads
        .iter()
        .map(|a| command.invalidation(a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let mut hidden = None;
    let mut done = 0;
    for (ad, plan) in ads.iter().zip(&plans) {
        match remove(client, plan, &mut hidden) {
            Ok(removed) if removed.is_empty() => {
                done += 1;
                println!("{}: no ad matched", ad.label());
            }
            Ok(removed) => {
                done += 1;
                println!(
                    "{}: removed {}: {}",
                    ad.label(),
                    ads_count(removed.len()),
                    removed.join(", ")
                );
            }
            Err(e) => eprintln!("cmctl advertise: {}: {e:#}", ad.label()),
        }
    }
    let answered = (done > 0).then(|| client.answered().to_string());
    summary(client, done, ads.len(), answered.as_deref());
    Ok(if done == ads.len() { 0 } else { 1 })
}

fn string(ad: &ClassAd, attr: &str) -> String {
    ad.eval_attr(attr).as_str().unwrap_or_default().to_string()
}

/// The host of a daemon address (`<host:port?...>`, `host:port`, `[v6]:port`), which the
/// collector keys ads by.
fn address_host(addr: &str) -> &str {
    let s = addr.trim().trim_start_matches('<');
    let s = s.split(['?', '>']).next().unwrap_or("");
    match s.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => s.rsplit_once(':').map_or(s, |(h, _)| h),
    }
}

/// Whether `plan` picks `ad`.
fn picks(plan: &Invalidation, ad: &ClassAd) -> bool {
    let my_type = string(ad, "MyType");
    if plan.types != ["Any"] && !plan.types.iter().any(|t| command::same_type(t, &my_type)) {
        return false;
    }
    match &plan.select {
        Select::Name { name, addr } => {
            string(ad, "Name") == *name
                && (addr.is_empty() || address_host(&string(ad, "MyAddress")) == address_host(addr))
        }
        Select::Constraint(e) => ad.eval_expr(e).is_true(),
    }
}

/// Removes what one query ad picks: the live ads through the collector (which relays the
/// invalidations), then the absent and offline ones through Raft. Returns the ads removed,
/// as `Machine "slot1@x"`.
fn remove(
    client: &mut Client,
    plan: &Invalidation,
    hidden: &mut Option<Hidden>,
) -> anyhow::Result<Vec<String>> {
    let mut live: Vec<(String, String, String)> = Vec::new();
    match &plan.select {
        Select::Name { name, addr } => {
            for t in &plan.types {
                live.push((t.clone(), name.clone(), addr.clone()));
            }
        }
        Select::Constraint(e) => {
            for t in &plan.types {
                let req = pb::QueryRequest {
                    ad_type: t.clone(),
                    constraint: e.to_string(),
                    projection: vec!["MyType".into(), "Name".into(), "MyAddress".into()],
                    absent: false,
                    limit: 0,
                };
                for ad in crate::status::fetch(client, req)? {
                    let addr = string(&ad, "MyAddress");
                    live.push((string(&ad, "MyType"), string(&ad, "Name"), addr));
                }
            }
        }
    }
    let mut removed = Vec::new();
    for (ad_type, name, addr) in live {
        let req = pb::InvalidateRequest {
            ad_type: ad_type.clone(),
            name: name.clone(),
            addr,
        };
        let (reply, _) = client.collector("the invalidation", |mut c| {
            let req = req.clone();
            async move { Ok(c.invalidate(req).await?.into_inner()) }
        })?;
        if reply.found {
            removed.push((ad_type, name, ""));
        }
    }
    let records = match hidden {
        Some(h) => h,
        None => hidden.insert(client.query(AdsQuery, false)?),
    };
    let mut picked = Vec::new();
    for (bucket, recs) in records.iter() {
        for (record, r) in recs {
            let Ok(ad) = classad::parse_ad(&r.text) else {
                continue;
            };
            if picks(plan, &ad) {
                let kind = if bucket == "Offline" {
                    "offline"
                } else {
                    "absent"
                };
                picked.push((bucket.clone(), record.clone(), ad, kind));
            }
        }
    }
    for (bucket, record, ad, kind) in picked {
        client.write_ok(Command::RemoveAd {
            ad_type: bucket.clone(),
            name: record.clone(),
        })?;
        if let Some(m) = records.get_mut(&bucket) {
            m.remove(&record);
        }
        let (t, n) = (string(&ad, "MyType"), string(&ad, "Name"));
        // The collector answers "found" for a hidden ad it leaves to the replicated state.
        removed.retain(|(lt, ln, _)| !(command::same_type(lt, &t) && *ln == n));
        removed.push((t, n, kind));
    }
    Ok(removed
        .into_iter()
        .map(|(t, n, kind)| match kind {
            "" => format!("{t} {n:?}"),
            k => format!("{t} {n:?} ({k})"),
        })
        .collect())
}

#[cfg(test)]
mod tests;
