//! `cmctl submit [-dry-run] [-name SOCKET] FILE`: condor_submit. The client reads the submit
//! description (the `aerie-submit` crate) and builds the job ads itself, as condor_submit does
//! (`src/condor_submit.V6/submit.cpp`): it first checks the whole file (an error names file,
//! line and command, and nothing is queued), then reserves a cluster at the access point
//! (`Schedd.NewCluster`, so that `$(Cluster)` expands to it), builds the ads for that cluster
//! and queues them in one `Schedd.Submit`, all or none. It prints what condor_submit prints:
//! `Submitting job(s)` with a dot per job, then `N job(s) submitted to cluster C.`. The access
//! point is the one of [`crate::schedd::target`].
//!
//! `-dry-run` prints the ads in `condor_q -long` form (attributes sorted, one ad per job, a
//! blank line after each) and then `N job(s) dry-run to cluster C.` as condor_submit does, and
//! queues nothing (it needs no access point).
//!
//! The configuration (`$AERIE_CONFIG`, `$CONDOR_CONFIG`, /etc/aerie/aerie.conf), when there
//! is one, gives `FILESYSTEM_DOMAIN`, the `JOB_DEFAULT_*` requests and the other knobs
//! condor_submit reads (`aerie_submit::Settings::from_config`).
use crate::args::is_arg;
use aerie_submit::{RealHost, Settings, Submission, Submitter};
use std::path::PathBuf;

/// `cmctl submit` arguments.
#[derive(clap::Args)]
pub struct Args {
    /// condor_submit options: [-dry-run] [-name SOCKET] FILE (`-` reads the submit description from
    /// standard input)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

const USAGE: &str = "usage: cmctl submit [-dry-run] [-name SOCKET] FILE";

/// The parsed command line.
#[derive(Debug, PartialEq, Eq)]
struct Parsed {
    dry_run: bool,
    file: String,
    socket: Option<String>,
}

fn parse(args: &[String]) -> anyhow::Result<Option<Parsed>> {
    let (socket, args) = crate::schedd::take_socket_arg(args)?;
    let mut dry_run = false;
    let mut file = None;
    for a in &args {
        if a == "-" || !a.starts_with('-') {
            if file.replace(a.clone()).is_some() {
                anyhow::bail!("more than one submit file given\n{USAGE}");
            }
        } else if is_arg(a, "dry-run", 3) {
            dry_run = true;
        } else if is_arg(a, "help", 1) {
            return Ok(None);
        } else {
            anyhow::bail!("unknown option {a}\n{USAGE}");
        }
    }
    let Some(file) = file else {
        anyhow::bail!("no submit file given\n{USAGE}");
    };
    Ok(Some(Parsed {
        dry_run,
        file,
        socket,
    }))
}

/// The submitting user: the name of the caller's real uid in the user database, as
/// condor_submit's `my_username()` (src/condor_utils/uids.cpp) finds it; `USER`/`LOGNAME`
/// only when the uid has no entry, then the uid itself. The environment does not come
/// first: it may be unset (services, test runners), which made `AcctGroupUser` the uid (a
/// nice-user job of root was charged to `nice-user.0`), or name someone else.
fn user() -> String {
    let uid = nix::unistd::getuid();
    user_name(uid.as_raw(), |u| {
        nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(u))
            .ok()
            .flatten()
            .map(|u| u.name)
    })
}

/// [`user`] with the user database lookup passed in.
fn user_name(uid: u32, lookup: impl Fn(u32) -> Option<String>) -> String {
    if let Some(name) = lookup(uid).filter(|n| !n.is_empty()) {
        return name;
    }
    for v in ["USER", "LOGNAME"] {
        if let Ok(u) = std::env::var(v) {
            if !u.is_empty() {
                return u;
            }
        }
    }
    uid.to_string()
}

/// `$(OPSYSANDVER)`, `$(OPSYSVER)`, `$(OPSYSMAJORVER)` as HTCondor derives them from
/// /etc/os-release (`ID=debian`, `VERSION_ID="12"` give `Debian12`, `1200`, `12`).
fn os_release(text: &str) -> Option<(String, String, String)> {
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .map(|v| v.trim().trim_matches('"').to_string())
    };
    let id = field("ID")?;
    let version = field("VERSION_ID")?;
    let mut parts = version.split('.');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    let mut name = id.clone();
    if let Some(first) = name.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    Some((
        format!("{name}{major}"),
        (major * 100 + minor).to_string(),
        major.to_string(),
    ))
}

/// The settings of this machine: the configuration's knobs when there is a configuration
/// file, this machine's architecture and OS version, and its host name as the file system
/// domain unless one is configured (HTCondor's default `FILESYSTEM_DOMAIN` is the host name).
fn settings() -> anyhow::Result<Settings> {
    let mut s = match aerie_config::default_config_path() {
        Ok(path) => {
            let opts = aerie_config::LoadOptions::for_subsystem("SUBMIT");
            let cfg = aerie_config::Config::load(&path, &opts)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            Settings::from_config(&cfg).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
        }
        Err(_) => Settings::default(),
    };
    s.arch = match std::env::consts::ARCH {
        "x86_64" => "X86_64".into(),
        "x86" => "INTEL".into(),
        other => other.to_string(),
    };
    if let Some((and_ver, ver, major)) = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| os_release(&t))
    {
        s.opsys_and_ver = and_ver;
        s.opsys_ver = ver;
        s.opsys_major_ver = major;
    }
    if s.filesystem_domain.is_empty() {
        if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
            s.filesystem_domain = h.trim().to_string();
        }
    }
    Ok(s)
}

/// What `-dry-run` prints for a submission.
fn dry_run_text(s: &Submission) -> String {
    let mut out = crate::status::long(&s.ads);
    out.push_str(&format!(
        "{} job(s) dry-run to cluster {}.\n",
        s.ads.len(),
        s.cluster
    ));
    out
}

/// What condor_submit prints once the access point has queued the jobs.
fn submitted_text(count: usize, cluster: i64) -> String {
    format!(
        "Submitting job(s){}\n{count} job(s) submitted to cluster {cluster}.\n",
        ".".repeat(count)
    )
}

/// The ads as the access point takes them: old ClassAd syntax, one string per job.
fn wire_ads(s: &Submission) -> Vec<String> {
    s.ads.iter().map(|a| a.to_old_syntax()).collect()
}

/// The submitting user, directory, file and time; the cluster is filled in per build.
pub(crate) fn submitter(file: &str) -> Submitter {
    Submitter {
        user: user(),
        cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        submit_file: file.to_string(),
        now: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0),
        cluster: 1,
    }
}

/// Builds the submission for `who.cluster`; a bad file gives the error condor_submit prints
/// (`ERROR: ...`, naming file, line and command).
pub(crate) fn build(
    file: &str,
    text: &str,
    who: &Submitter,
    settings: &Settings,
) -> Result<Submission, String> {
    aerie_submit::submit(file, text, who, settings, &RealHost).map_err(|e| format!("ERROR: {e}"))
}

/// What queuing a submit file came to.
pub(crate) enum Queued {
    /// The access point queued the jobs.
    Done(Submission, aerie_proto::schedd::SubmitReply),
    /// The file is bad (the error condor_submit prints); nothing was queued.
    Refused(String),
}

/// Queues a submit file's jobs at the access point, as condor_submit does: the whole file is
/// checked first (a bad file queues nothing and reserves no cluster), then a cluster is
/// reserved, the ads are built for it and sent in one `Submit`, all or none.
pub(crate) fn queue_jobs(
    schedd: &mut crate::schedd::Schedd,
    file: &str,
    text: &str,
    who: &Submitter,
    settings: &Settings,
) -> anyhow::Result<Queued> {
    if let Err(e) = build(file, text, who, settings) {
        return Ok(Queued::Refused(e));
    }
    let cluster = schedd.new_cluster()?;
    let who = Submitter {
        cluster,
        ..who.clone()
    };
    let submission = match build(file, text, &who, settings) {
        Ok(s) => s,
        Err(e) => return Ok(Queued::Refused(e)),
    };
    let reply = schedd.submit(cluster, wire_ads(&submission))?;
    Ok(Queued::Done(submission, reply))
}

/// Runs `cmctl submit`.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let Some(p) = parse(&args.args)? else {
        println!("{USAGE}");
        return Ok(0);
    };
    let text = if p.file == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(&p.file).map_err(|e| anyhow::anyhow!("{}: {e}", p.file))?
    };
    let settings = settings()?;
    let who = submitter(&p.file);
    if p.dry_run {
        let checked = match build(&p.file, &text, &who, &settings) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{e}");
                return Ok(1);
            }
        };
        for w in &checked.warnings {
            eprintln!("WARNING: {w}");
        }
        print!("{}", dry_run_text(&checked));
        return Ok(0);
    }
    let at = crate::schedd::target(p.socket.as_deref(), |k| std::env::var(k).ok())?;
    let mut schedd = crate::schedd::Schedd::open(&at)?;
    match queue_jobs(&mut schedd, &p.file, &text, &who, &settings)? {
        Queued::Refused(e) => {
            eprintln!("{e}");
            Ok(1)
        }
        Queued::Done(submission, reply) => {
            for w in &submission.warnings {
                eprintln!("WARNING: {w}");
            }
            print!("{}", submitted_text(reply.count as usize, reply.cluster));
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_submitting_user_is_the_uids_name_in_the_user_database() {
        let db = |uid: u32| (uid == 1000).then(|| "alice".to_string());
        assert_eq!(user_name(1000, db), "alice");
        // No entry: the environment, else the number (never a number for a known uid).
        let fallback = user_name(4242, db);
        assert!(!fallback.is_empty());
        assert_eq!(user_name(0, |_| Some("root".into())), "root");
    }

    #[test]
    fn os_release_gives_the_opsys_version_macros() {
        let debian = "PRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\nVERSION_ID=\"13\"\nID=debian\n";
        assert_eq!(
            os_release(debian),
            Some(("Debian13".into(), "1300".into(), "13".into()))
        );
        let rocky = "ID=\"rocky\"\nVERSION_ID=\"9.4\"\n";
        assert_eq!(
            os_release(rocky),
            Some(("Rocky9".into(), "904".into(), "9".into()))
        );
        assert_eq!(os_release("NAME=x\n"), None);
    }

    #[test]
    fn command_line() {
        assert_eq!(
            parse(&strs(&["-dry-run", "job.sub"])).unwrap(),
            Some(Parsed {
                dry_run: true,
                file: "job.sub".into(),
                socket: None,
            })
        );
        assert_eq!(
            parse(&strs(&["job.sub"])).unwrap(),
            Some(Parsed {
                dry_run: false,
                file: "job.sub".into(),
                socket: None,
            })
        );
        assert_eq!(parse(&strs(&["-help"])).unwrap(), None);
        assert!(parse(&strs(&["-dry-run"])).is_err());
        assert!(parse(&strs(&["-bogus", "x.sub"])).is_err());
        assert_eq!(
            parse(&strs(&["-name", "/run/ap.sock", "job.sub"]))
                .unwrap()
                .unwrap()
                .socket
                .as_deref(),
            Some("/run/ap.sock")
        );
    }

    #[test]
    fn dry_run_prints_one_long_ad_per_job_then_the_count() {
        let who = Submitter {
            user: "alice".into(),
            cwd: PathBuf::from("/"),
            submit_file: "job.sub".into(),
            now: 1_700_000_000,
            cluster: 1,
        };
        let text = "executable = /bin/sh\narguments = -c true\nrequest_memory = 2G\nqueue 2\n";
        let s =
            aerie_submit::submit("job.sub", text, &who, &Settings::default(), &RealHost).unwrap();
        let out = dry_run_text(&s);
        let ads: Vec<&str> = out.split("\n\n").collect();
        assert_eq!(ads.len(), 3, "{out}");
        let has = |ad: &str, line: &str| ad.lines().any(|l| l == line);
        assert!(has(ads[0], "Args = \"-c true\""), "{out}");
        assert!(
            has(ads[0], "ProcId = 0") && has(ads[1], "ProcId = 1"),
            "{out}"
        );
        assert!(has(ads[1], "RequestMemory = 2048"), "{out}");
        assert_eq!(ads[2], "2 job(s) dry-run to cluster 1.\n");
    }

    #[test]
    fn submitting_prints_a_dot_per_job_then_the_cluster() {
        // condor_submit 23.9.6 in the reference pool: `queue 3`, then `queue 2`.
        assert_eq!(
            submitted_text(3, 1),
            "Submitting job(s)...\n3 job(s) submitted to cluster 1.\n"
        );
        assert_eq!(
            submitted_text(2, 2),
            "Submitting job(s)..\n2 job(s) submitted to cluster 2.\n"
        );
    }
}
