//! The real pool of `pool-real`: two real execute nodes (`aerie-node execute`, three static
//! slots each, running real jobs as `nobody`) and one real access point (`aerie-node
//! access-point`, a durable queue), all in the pool namespace ([`Net::add_pool`], each on a
//! port of its own), with the pool's certificates (security on, as in the main job: the
//! harness's test credentials name `exec1`, `exec2` and `ap`). Real short jobs (`/bin/sh -c
//! 'sleep 1-3; echo ...'`) are submitted with `cmctl submit` for three owners before and
//! during the faults, as HTCondor users would with condor_submit (src/condor_submit.V6), and
//! watched with `cmctl q` / `cmctl history` afterwards.
//!
//! The execute nodes log as JSON (`--log-format json`): their claim and job lines are the
//! record [`crate::checker_jobs`] judges, as HTCondor's StartLog and StarterLog would be read
//! (src/condor_startd.V6, src/condor_starter.V6.1).

use crate::checker_jobs::{self, Finished, JobsRecord, Submitted};
use crate::net::Net;
use crate::workload::Run;
use anyhow::{anyhow, bail, Context};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The execute nodes (their certificate names in the test pool).
const NODES: &[&str] = &["exec1", "exec2"];

/// The owners jobs are submitted for (`accounting_group_user`).
const OWNERS: &[&str] = &["alice", "bob", "carol"];

/// The pool's UID_DOMAIN.
const DOMAIN: &str = "pool.example";

/// The access point's port in the pool namespace; node `i` listens on `NODE_PORT + i`.
const AP_PORT: u16 = 7110;
const NODE_PORT: u16 = 7101;

/// Each node's configuration: three static slots of one core, ads sent on every change and
/// every 2 s; root's jobs run as `nobody` (as scripts/run.sh configures its nodes).
const EXEC_CONFIG: &str = "NUM_CPUS = 3\nMEMORY = 3072\nDISK = 1000000\n\
    NUM_SLOTS_TYPE_1 = 3\nSLOT_TYPE_1 = cpus=1\nSLOT_TYPE_1_PARTITIONABLE = False\n\
    UPDATE_INTERVAL = 2\nUID_DOMAIN = pool.example\nSTARTER_ALLOW_RUNAS_OWNER = False\n";

/// Jobs per submission (one cluster), and the most submissions in a run.
const JOBS_PER_CLUSTER: usize = 2;
const MAX_SUBMISSIONS: usize = 18;

/// Time between submissions after the first round (one per owner at once).
const SUBMIT_GAP: Duration = Duration::from_secs(2);

/// The real pool's processes (killed when dropped) and what was submitted.
pub struct RealPool {
    dir: tempfile::TempDir,
    children: Vec<Child>,
    cmctl: PathBuf,
    client_ns: String,
    cms: Vec<String>,
    seed: u64,
    submitted: Mutex<Vec<Submitted>>,
    submit_errors: Mutex<Vec<String>>,
    /// Unix ms of the last submission.
    last_submit_ms: Mutex<u64>,
}

impl Drop for RealPool {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl RealPool {
    /// Starts the execute nodes and the access point in `net`'s pool namespace with the node
    /// binary `bin` (cmctl beside it as `aerie-jepsen-cmctl`), advertising to CMs `1..=cms`;
    /// returns once every node listens and the access point's socket is there.
    pub fn start(net: &Net, bin: &Path, cms: u64, seed: u64) -> anyhow::Result<RealPool> {
        aerie_tests::test_pool();
        let dir = aerie_tests::pool::open_tempdir("aerie-jepsen-real-")?;
        let cms: Vec<String> = (1..=cms).map(Net::cm_addr).collect();
        let mut pool = RealPool {
            cmctl: bin.with_file_name("aerie-jepsen-cmctl"),
            client_ns: net.client_ns(),
            cms,
            seed,
            submitted: Mutex::new(Vec::new()),
            submit_errors: Mutex::new(Vec::new()),
            last_submit_ms: Mutex::new(0),
            children: Vec::new(),
            dir,
        };
        let d = pool.dir.path().to_path_buf();
        for owner in OWNERS {
            let jobs = d.join("jobs").join(owner);
            std::fs::create_dir_all(&jobs)?;
        }
        for (i, name) in NODES.iter().enumerate() {
            let cfg = d.join(format!("{name}.conf"));
            std::fs::write(&cfg, EXEC_CONFIG)?;
            let listen = format!("{}:{}", Net::pool_ip(), NODE_PORT + i as u16);
            let mut cmd = pool.in_pool(net, bin, name);
            cmd.args(["execute", "--name", name, "--cms", &pool.cms.join(",")])
                .arg("--config")
                .arg(&cfg)
                .arg("--state-dir")
                .arg(d.join(name))
                .arg("--dump-ads")
                .arg(d.join(format!("{name}.ads.json")))
                .args(["--listen", &listen]);
            let mut child = cmd
                .spawn()
                .with_context(|| format!("cannot start {} execute", bin.display()))?;
            let out = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
            pool.children.push(child);
            let mut line = String::new();
            BufReader::new(out).read_line(&mut line)?;
            if !line.starts_with("aerie-node execute: listening on ") {
                bail!("{name} did not start: {line:?}\n{}", pool.log(name));
            }
        }
        std::fs::write(d.join("ap.conf"), "")?;
        let listen = format!("{}:{AP_PORT}", Net::pool_ip());
        let mut cmd = pool.in_pool(net, bin, "ap");
        cmd.args(["access-point", "--name", "ap", "--domain", DOMAIN])
            .args(["--cms", &pool.cms.join(","), "--update-interval", "1"])
            .arg("--config")
            .arg(d.join("ap.conf"))
            .arg("--spool")
            .arg(d.join("ap.spool"))
            .arg("--socket")
            .arg(pool.socket())
            .args(["--listen", &listen]);
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {} access-point", bin.display()))?;
        pool.children.push(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !pool.socket().exists() {
            if Instant::now() > deadline {
                bail!(
                    "the access point made no socket within 30 s\n{}",
                    pool.log("ap")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(pool)
    }

    /// `ip netns exec POOL bin --log-format json` with its standard error to `NAME.log`.
    fn in_pool(&self, net: &Net, bin: &Path, name: &str) -> Command {
        let mut cmd = Command::new("ip");
        let log = std::fs::File::create(self.dir.path().join(format!("{name}.log")));
        cmd.args(["netns", "exec", &net.pool_ns()])
            .arg(bin)
            .args(["--log-format", "json"])
            .env("AERIE_LOG", "warn,aerie_node=info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log.map(Stdio::from).unwrap_or_else(|_| Stdio::null()));
        cmd
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("ap.sock")
    }

    /// What daemon `name` (`exec1`, `exec2`, `ap`) logged so far.
    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("{name}.log"))).unwrap_or_default()
    }

    /// Every daemon's log, one after the other, for people.
    pub fn logs(&self) -> String {
        NODES
            .iter()
            .chain(&["ap"])
            .map(|n| format!("--- {n} ---\n{}", self.log(n)))
            .collect()
    }

    /// The nodes' events so far, node after node, and the lines that could not be read.
    pub fn events(&self) -> (Vec<checker_jobs::NodeEvent>, Vec<String>) {
        let (mut all, mut errors) = (Vec::new(), Vec::new());
        for n in NODES {
            let (e, bad) = checker_jobs::parse_node_log(n, &self.log(n));
            all.extend(e);
            errors.extend(bad);
        }
        (all, errors)
    }

    /// The startds' claims so far as a claims log ([`checker_jobs::claims_log`]).
    pub fn claims_log(&self) -> String {
        checker_jobs::claims_log(&self.events().0)
    }

    /// Every slot the nodes advertise (from their `--dump-ads` files).
    pub fn slots(&self) -> anyhow::Result<Vec<String>> {
        let mut out = Vec::new();
        for n in NODES {
            let path = self.dir.path().join(format!("{n}.ads.json"));
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {n}'s slot ads from {}", path.display()))?;
            let ads: Vec<String> = serde_json::from_str(&text)
                .with_context(|| format!("{} is not a JSON list of ads", path.display()))?;
            for ad in ads {
                let ad = classad::parse_ad(&ad)
                    .map_err(|e| anyhow!("{}: an ad does not parse: {e}", path.display()))?;
                if let Some(name) = ad.eval_attr("Name").as_str() {
                    out.push(name.to_string());
                }
            }
        }
        Ok(out)
    }

    /// `cmctl ARGS` in the client namespace against the access point's socket; its output,
    /// or an error with what it said.
    async fn cmctl(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = tokio::process::Command::new("ip")
            .args(["netns", "exec", &self.client_ns])
            .arg(&self.cmctl)
            .args(args)
            .current_dir(self.dir.path())
            .env("AERIE_CMS", self.cms.join(","))
            .env("AERIE_AP_SOCKET", self.socket())
            .stdin(Stdio::null())
            .output()
            .await
            .with_context(|| format!("running cmctl {args:?}"))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            bail!(
                "cmctl {}: {}: {text}{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(text)
    }

    /// Submits one cluster of [`JOBS_PER_CLUSTER`] jobs for `owner`, each sleeping `secs`
    /// then writing a line naming itself to its output file.
    async fn submit(&self, owner: &str, secs: u64) -> anyhow::Result<Vec<Submitted>> {
        let initial = self.dir.path().join("jobs").join(owner);
        let desc = format!(
            "executable = /bin/sh\ntransfer_executable = false\n\
             arguments = \"-c 'sleep {secs}; echo job $(Cluster).$(Process) of {owner}'\"\n\
             initialdir = {}\noutput = out.$(Cluster).$(Process)\n\
             error = err.$(Cluster).$(Process)\naccounting_group_user = {owner}\n\
             request_cpus = 1\nrequest_memory = 64\nqueue {JOBS_PER_CLUSTER}\n",
            initial.display()
        );
        let file = initial.join("job.sub");
        std::fs::write(&file, desc)?;
        let out = self.cmctl(&["submit", &file.display().to_string()]).await?;
        // "N job(s) submitted to cluster C."
        let cluster: i64 = out
            .split_whitespace()
            .last()
            .and_then(|w| w.trim_end_matches('.').parse().ok())
            .ok_or_else(|| anyhow!("no cluster id in cmctl submit's {out:?}"))?;
        Ok((0..JOBS_PER_CLUSTER)
            .map(|p| Submitted {
                job: format!("{cluster}.{p}"),
                owner: owner.into(),
                output: format!("job {cluster}.{p} of {owner}\n"),
            })
            .collect())
    }

    /// Until `run` stops (or [`MAX_SUBMISSIONS`]): a cluster for every owner at once, then one
    /// every [`SUBMIT_GAP`], owners in turn, each job sleeping 1-3 s (drawn from the seed).
    pub async fn workload(&self, run: &Run) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed);
        for k in 0..MAX_SUBMISSIONS {
            if run.stopped() {
                break;
            }
            let owner = OWNERS[k % OWNERS.len()];
            let secs = rng.gen_range(1..=3);
            match self.submit(owner, secs).await {
                Ok(jobs) => self.lock_submitted().extend(jobs),
                Err(e) => self
                    .submit_errors
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(format!("{e:#}")),
            }
            *self
                .last_submit_ms
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = crate::pool::unix_ms();
            if k + 1 >= OWNERS.len() {
                tokio::time::sleep(SUBMIT_GAP).await;
            }
        }
    }

    fn lock_submitted(&self) -> std::sync::MutexGuard<'_, Vec<Submitted>> {
        self.submitted.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every job the access point knows, in its queue or its history, by CLUSTER.PROC.
    async fn jobs(&self) -> anyhow::Result<BTreeMap<String, Finished>> {
        let mut out = BTreeMap::new();
        let attrs = [
            "-af",
            "ClusterId",
            "ProcId",
            "JobStatus",
            "ExitCode",
            "CompletionDate",
            "NumJobStarts",
            "Iwd",
        ];
        for tool in ["q", "history"] {
            let mut args = vec![tool];
            args.extend(attrs);
            for line in self.cmctl(&args).await?.lines() {
                let w: Vec<&str> = line.split_whitespace().collect();
                if w.len() < 7 {
                    continue;
                }
                let int = |s: &str| s.parse::<i64>().ok();
                let job = format!("{}.{}", w[0], w[1]);
                let output = std::fs::read_to_string(Path::new(w[6]).join(format!("out.{job}")));
                out.insert(
                    job,
                    Finished {
                        status: int(w[2]),
                        exit_code: int(w[3]),
                        completion: int(w[4]),
                        starts: int(w[5]),
                        output: output.ok(),
                    },
                );
            }
        }
        Ok(out)
    }

    /// After the run: waits until every submitted job has left the queue (at most until
    /// [`checker_jobs::COMPLETION_BOUND`] after the later of the healing, `healed_ms`, and the
    /// last submission, plus 10 s to see a late one), then gathers the jobs' record.
    pub async fn finish(&self, healed_ms: u64) -> anyhow::Result<JobsRecord> {
        let last = *self
            .last_submit_ms
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let deadline_ms = healed_ms.max(last) + checker_jobs::COMPLETION_BOUND.as_millis() as u64;
        let submitted = self.lock_submitted().clone();
        let finished = loop {
            let jobs = self.jobs().await?;
            let done = submitted
                .iter()
                .all(|s| jobs.get(&s.job).is_some_and(|f| f.status == Some(4)));
            if done || crate::pool::unix_ms() > deadline_ms + 10_000 {
                break jobs;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        let (events, malformed) = self.events();
        Ok(JobsRecord {
            submitted,
            submit_errors: self
                .submit_errors
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            events,
            malformed,
            finished,
            deadline_ms,
        })
    }
}
