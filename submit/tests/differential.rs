//! Differential tests against the real condor_submit 23.9.6 (the reference chroot, see
//! scripts/reference.sh): every submit file under tests/files/ goes through
//! `condor_submit -dry-run -` and through `aerie_submit::submit`, and the job ads must agree
//! attribute by attribute (values compared as our unparser prints them, after reading
//! condor_submit's in old syntax), as must the warnings about unused lines; every file under
//! tests/errors/ must be refused by both, and Aerie's error must name file, line and command.
//!
//! The reference's output is kept next to each file (`NAME.ads`, `NAME.err`) so a reviewer
//! sees what condor_submit builds; the test fails when the recorded output no longer matches
//! the live one (AERIE_SUBMIT_RECORD=1 rewrites them).
//!
//! Both sides see the same machine: Aerie's [`Host`] here is the chroot (its files, a fixed
//! environment), the submit directory is the one condor_submit runs in, the user is root (the
//! reference runs as root) and the submit time is the reference's `QDate`. So the only
//! attributes not compared are, with the reason:
//! - `CondorVersion`, `CondorPlatform`: they name the software that built the ad (Aerie
//!   writes its own version, see `Settings::default`).
//!
//! `condor_submit -dry-run` talks to no schedd, so these tests need no running reference pool
//! (and take no pool lock). Without the reference every test here fails and says how to
//! install it.
use aerie_submit::{submit, DirEntry, Host, Settings, Submitter};
use classad::ClassAd;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Attributes not compared, and why (see the module doc).
const IGNORED: &[(&str, &str)] = &[
    ("CondorVersion", "names the software that built the ad"),
    (
        "CondorPlatform",
        "names the platform of the software that built the ad",
    ),
];

/// The one environment variable both sides see besides PATH.
const TEST_VAR: (&str, &str) = ("AERIE_SUBMIT_TEST_VAR", "xyz");

fn root() -> PathBuf {
    let dir =
        std::env::var("AERIE_REFERENCE_DIR").unwrap_or_else(|_| "/var/lib/aerie-reference".into());
    let root = PathBuf::from(dir).join("htcondor-root");
    assert!(
        root.join("usr/bin/condor_submit").exists(),
        "the reference HTCondor 23.9.6 is missing at {} (install it with scripts/reference.sh htcondor, \
         or point AERIE_REFERENCE_DIR at it)",
        root.display()
    );
    assert!(
        root.join("proc/self/status").exists(),
        "{}/proc is not mounted: run `scripts/reference.sh htcondor` to mount it again",
        root.display()
    );
    root
}

/// The chroot as a [`Host`]: absolute paths are the chroot's, and the environment is the one
/// condor_submit runs with (see `Scratch::condor_submit`: `env -i`, then `sh` adds `PWD` and
/// `OLDPWD`).
struct ChrootHost {
    root: PathBuf,
    env: Vec<(String, String)>,
}

impl ChrootHost {
    fn map(&self, p: &Path) -> PathBuf {
        self.root.join(p.strip_prefix("/").unwrap_or(p))
    }
}

impl Host for ChrootHost {
    fn getenv(&self, name: &str) -> Option<String> {
        self.environment()
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }
    fn environment(&self) -> Vec<(String, String)> {
        self.env.clone()
    }
    fn read_file(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(self.map(path))
    }
    fn file_size(&self, path: &Path) -> Option<u64> {
        std::fs::metadata(self.map(path)).ok().map(|m| m.len())
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.map(path).is_dir()
    }
    fn exists(&self, path: &Path) -> bool {
        self.map(path).exists()
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        aerie_submit::RealHost.list_dir(&self.map(path))
    }
}

/// A scratch directory inside the chroot with the reference's configuration.
struct Scratch {
    root: PathBuf,
    /// As condor_submit sees it.
    dir: String,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        let root = root();
        let base = format!("/srv/aerie-submit-{name}");
        let host_base = root.join(base.trim_start_matches('/'));
        let _ = std::fs::remove_dir_all(&host_base);
        std::fs::create_dir_all(host_base.join("files")).unwrap();
        std::fs::write(
            host_base.join("condor_config"),
            format!(
                "RELEASE_DIR = /usr\nLOCAL_DIR = {base}\nLOG = /tmp\nUID_DOMAIN = ref.test\n\
                 FILESYSTEM_DOMAIN = ref.test\nCONDOR_HOST = 127.0.0.1\nNO_DNS = True\nDEFAULT_DOMAIN_NAME = ref.test\n"
            ),
        )
        .unwrap();
        // the files the submit files read (queue ... from items.txt)
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests")
            .join(name);
        for e in std::fs::read_dir(&src).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "txt") {
                std::fs::copy(&p, host_base.join("files").join(p.file_name().unwrap())).unwrap();
            }
        }
        Scratch {
            root,
            dir: format!("{base}/files"),
        }
    }

    /// The reference's configuration file, as condor_submit sees it.
    fn config(&self) -> String {
        format!("{}/condor_config", self.dir.trim_end_matches("/files"))
    }

    fn settings(&self) -> Settings {
        // the chroot is Debian 13 (trixie)
        Settings {
            opsys_and_ver: "Debian13".into(),
            opsys_ver: "1300".into(),
            opsys_major_ver: "13".into(),
            filesystem_domain: "ref.test".into(),
            spool: format!("{}/spool", self.dir.trim_end_matches("/files")),
            ..Settings::default()
        }
    }

    /// Runs `condor_submit -dry-run - NAME` on `text`: (exit status ok, stdout, stderr).
    fn condor_submit(&self, name: &str, text: &str) -> (bool, String, String) {
        std::fs::write(
            self.root.join(self.dir.trim_start_matches('/')).join(name),
            text,
        )
        .unwrap();
        let out = Command::new("chroot")
            .arg(&self.root)
            .args(["env", "-i", "PATH=/usr/bin:/bin"])
            .arg(format!("{}={}", TEST_VAR.0, TEST_VAR.1))
            .arg(format!(
                "CONDOR_CONFIG={}/condor_config",
                self.dir.trim_end_matches("/files")
            ))
            .args([
                "sh",
                "-c",
                &format!("cd {} && exec condor_submit -dry-run - {name}", self.dir),
            ])
            .output()
            .expect("running chroot (the differential tests run as root)");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn ours(
        &self,
        name: &str,
        text: &str,
        now: i64,
    ) -> Result<aerie_submit::Submission, aerie_submit::SubmitError> {
        let who = Submitter {
            user: "root".into(),
            cwd: PathBuf::from(&self.dir),
            submit_file: name.into(),
            now,
            cluster: 1,
        };
        let host = ChrootHost {
            root: self.root.clone(),
            env: vec![
                ("PATH".into(), "/usr/bin:/bin".into()),
                (TEST_VAR.0.into(), TEST_VAR.1.into()),
                ("CONDOR_CONFIG".into(), self.config()),
                ("PWD".into(), self.dir.clone()),
                ("OLDPWD".into(), "/".into()),
            ],
        };
        submit(name, text, &who, &self.settings(), &host)
    }
}

/// condor_submit's dry-run output as full job ads (attribute -> value text): the first job
/// carries the cluster attributes, later ones only what differs (the proc ad chained to the
/// cluster ad), so each later job is the cluster ad overlaid with its own lines.
fn dry_run_jobs(out: &str) -> (Vec<BTreeMap<String, String>>, Option<usize>) {
    let mut cluster: BTreeMap<String, String> = BTreeMap::new();
    let mut jobs = Vec::new();
    let mut cur: Option<BTreeMap<String, String>> = None;
    let mut total = None;
    for line in out.lines() {
        if line == "." {
            let mut job = cluster.clone();
            job.extend(cur.take().unwrap_or_default());
            jobs.push(job);
            continue;
        }
        if let Some(n) = line.strip_suffix(" job(s) dry-run to cluster 1.") {
            total = n.trim().parse().ok();
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if k == "ProcId" {
            cur = Some(BTreeMap::new());
        }
        match cur.as_mut() {
            Some(c) => c.insert(k.to_string(), v.to_string()),
            None => cluster.insert(k.to_string(), v.to_string()),
        };
    }
    (jobs, total)
}

/// An old-syntax value (as the dry-run prints it: a backslash is a plain character) as our
/// unparser prints it, so both sides are printed alike.
fn normal(v: &str) -> String {
    classad::parse_old_ads(&format!("X = {v}\n"))
        .ok()
        .and_then(|ads| {
            ads.first()
                .and_then(|a| a.lookup("X").map(|e| e.to_string()))
        })
        .unwrap_or_else(|| format!("<unparsable> {v}"))
}

fn our_attrs(ad: &ClassAd) -> BTreeMap<String, String> {
    ad.iter()
        .map(|(k, e)| (k.to_string(), e.to_string()))
        .collect()
}

fn files(dir: &str) -> Vec<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sub"))
        .collect();
    v.sort();
    v
}

fn recording() -> bool {
    std::env::var("AERIE_SUBMIT_RECORD").is_ok_and(|v| v == "1")
}

/// A recorded output without what changes with every run: the submit time (the `QDate` and
/// `EnteredCurrentStatus` lines, and the time wherever `$(SUBMIT_TIME)` put it).
fn stable(out: &str) -> String {
    let qdate = out
        .lines()
        .find_map(|l| l.strip_prefix("QDate="))
        .unwrap_or("")
        .to_string();
    out.lines()
        .filter(|l| !l.starts_with("QDate=") && !l.starts_with("EnteredCurrentStatus="))
        .map(|l| {
            if qdate.is_empty() {
                l.to_string()
            } else {
                l.replace(&qdate, "<QDate>")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn check_fixture(path: &Path, ext: &str, live: &str, problems: &mut Vec<String>) {
    let fixture = path.with_extension(ext);
    if recording() {
        std::fs::write(&fixture, live).unwrap();
        return;
    }
    match std::fs::read_to_string(&fixture) {
        Ok(rec) if stable(&rec) == stable(live) => {}
        Ok(_) => problems.push(format!(
            "{}: the recorded reference output differs from the live one (AERIE_SUBMIT_RECORD=1 to record again)",
            fixture.display()
        )),
        Err(e) => problems.push(format!("{}: {e} (AERIE_SUBMIT_RECORD=1 records it)", fixture.display())),
    }
}

#[test]
fn submit_files_build_the_ads_condor_submit_builds() {
    let scratch = Scratch::new("files");
    let mut problems = Vec::new();
    let all = files("files");
    assert!(
        all.len() >= 20,
        "expected the submit files under tests/files"
    );
    for path in &all {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).unwrap();
        let (ok, out, err) = scratch.condor_submit(&name, &text);
        if !ok {
            problems.push(format!("{name}: condor_submit refused it: {err}"));
            continue;
        }
        check_fixture(path, "ads", &out, &mut problems);
        // the same warnings, in any order (condor_submit prints them in hash order)
        let mut their_warnings: Vec<String> = err
            .lines()
            .filter_map(|l| l.strip_prefix("WARNING: "))
            .filter(|l| l.ends_with("Is it a typo?"))
            .map(str::to_string)
            .collect();
        their_warnings.sort();
        let (theirs, total) = dry_run_jobs(&out);
        assert_eq!(
            total,
            Some(theirs.len()),
            "{name}: could not read condor_submit's output:\n{out}"
        );
        let now: i64 = theirs
            .first()
            .and_then(|j| j.get("QDate"))
            .and_then(|q| q.parse().ok())
            .unwrap_or(0);
        let ours = match scratch.ours(&name, &text, now) {
            Ok(s) => {
                let mut ours: Vec<String> = s
                    .warnings
                    .iter()
                    .map(|w| w.replace("cmctl submit", "condor_submit"))
                    .collect();
                ours.sort();
                if ours != their_warnings {
                    problems.push(format!(
                        "{name}: unused-line warnings: Aerie {:?} / condor_submit {:?}",
                        s.warnings, their_warnings
                    ));
                }
                s.ads
            }
            Err(e) => {
                problems.push(format!("{name}: Aerie refused it: {e}"));
                continue;
            }
        };
        if ours.len() != theirs.len() {
            problems.push(format!(
                "{name}: {} jobs, condor_submit built {}",
                ours.len(),
                theirs.len()
            ));
            continue;
        }
        for (proc_id, (o, t)) in ours.iter().zip(&theirs).enumerate() {
            let o = our_attrs(o);
            let names: std::collections::BTreeSet<&String> = o.keys().chain(t.keys()).collect();
            for n in names {
                if IGNORED.iter().any(|(i, _)| i == n) {
                    continue;
                }
                let ov = o.get(n).cloned();
                let tv = t.get(n).map(|v| normal(v));
                if ov != tv {
                    problems.push(format!(
                        "{name} job {proc_id}: {n}: Aerie {} / condor_submit {}",
                        ov.as_deref().unwrap_or("(absent)"),
                        tv.as_deref().unwrap_or("(absent)")
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} disagreement(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn bad_submit_files_are_refused_by_both_naming_the_line() {
    let scratch = Scratch::new("errors");
    let mut problems = Vec::new();
    let all = files("errors");
    assert!(
        all.len() >= 5,
        "expected the bad submit files under tests/errors"
    );
    for path in &all {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).unwrap();
        let (ok, _, err) = scratch.condor_submit(&name, &text);
        if ok {
            problems.push(format!("{name}: condor_submit accepted it"));
        }
        check_fixture(path, "err", &err, &mut problems);
        match scratch.ours(&name, &text, 0) {
            Ok(s) => problems.push(format!("{name}: Aerie accepted it ({} jobs)", s.ads.len())),
            Err(e) => {
                if e.file != name || e.line == 0 || e.command.is_empty() {
                    problems.push(format!(
                        "{name}: the error does not name file, line and command: {e:?}"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
