//! Real execute nodes and access points for end-to-end tests: `aerie-node execute` and
//! `aerie-node access-point` as child processes beside a [`crate::Cluster`] of CMs, each in
//! its own directory, on ports the kernel picks, killed when dropped (also when a test
//! panics). With them a test runs real jobs through the whole pool and watches them with the
//! tools an admin uses: `cmctl submit`/`q`/`history` against the access point's socket, the
//! collector's slot ads, `cmctl drain`.
use anyhow::{anyhow, bail, Context};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A daemon child process with its log file; killed (SIGKILL) when dropped.
pub struct Daemon {
    child: Option<Child>,
    /// Where its standard error goes.
    pub log: PathBuf,
}

impl Daemon {
    /// Starts `cmd` with its standard error appended to `log` and its standard output piped
    /// (read by the caller for a readiness line, or dropped).
    fn spawn(mut cmd: Command, log: PathBuf) -> anyhow::Result<Daemon> {
        crate::test_pool();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("cannot open {}", log.display()))?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(file))
            .spawn()
            .with_context(|| format!("cannot start {cmd:?}"))?;
        Ok(Daemon {
            child: Some(child),
            log,
        })
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// `kill -9`, and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM, and waits up to `within` for it to exit; its exit status, or `None` if it still
    /// runs (then SIGKILLed).
    pub fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let mut c = self.child.take()?;
        let status = crate::sigterm(&mut c, within);
        if status.is_none() {
            let _ = c.kill();
            let _ = c.wait();
        }
        status
    }

    /// Its log so far (for failure messages).
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A directory other accounts can enter: jobs of a root-run node run as `nobody` and must
/// reach their sandboxes, and the access point's socket must be reachable.
pub fn open_tempdir(prefix: &str) -> anyhow::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
    Ok(dir)
}

/// `aerie-node execute` reading an HTCondor configuration of the test's.
pub struct ExecuteNode {
    /// The process.
    pub daemon: Daemon,
    /// The machine name (`--name`, the slots' `Machine`).
    pub name: String,
    /// Where its `Startd` and `Execute` services listen.
    pub addr: String,
    /// Its state directory (sandboxes under `execute/`).
    pub state_dir: PathBuf,
}

impl ExecuteNode {
    /// Starts `bin` (`aerie-node`) as `execute --name NAME` advertising to `cms`, its state
    /// and configuration (`config`, HTCondor syntax) under `dir`; returns once it listens.
    /// `name` must be one the test pool has a certificate for (`exec1`, `exec2`, ...).
    pub fn start(
        bin: &str,
        dir: &Path,
        name: &str,
        cms: &[String],
        config: &str,
    ) -> anyhow::Result<ExecuteNode> {
        let cfg = dir.join(format!("{name}.conf"));
        std::fs::write(&cfg, config)?;
        let state_dir = dir.join(name);
        let mut cmd = Command::new(bin);
        cmd.args(["execute", "--name", name, "--cms", &cms.join(",")])
            .arg("--config")
            .arg(&cfg)
            .arg("--state-dir")
            .arg(&state_dir)
            .env("AERIE_LOG", "info");
        let mut daemon = Daemon::spawn(cmd, dir.join(format!("{name}.log")))?;
        let out = daemon
            .child
            .as_mut()
            .and_then(|c| c.stdout.take())
            .ok_or_else(|| anyhow!("no stdout"))?;
        let mut line = String::new();
        BufReader::new(out).read_line(&mut line)?;
        let addr = line
            .trim()
            .strip_prefix("aerie-node execute: listening on ")
            .ok_or_else(|| anyhow!("{name} did not start: {line:?}\n{}", daemon.log_text()))?
            .to_string();
        Ok(ExecuteNode {
            daemon,
            name: name.into(),
            addr,
            state_dir,
        })
    }
}

/// `aerie-node access-point` with its spool and socket under a directory of the test's.
pub struct AccessPoint {
    /// The process.
    pub daemon: Daemon,
    /// The Unix socket users' tools talk to (`AERIE_AP_SOCKET`).
    pub socket: PathBuf,
}

impl AccessPoint {
    /// Starts `bin` (`aerie-node`) as `access-point --name NAME --domain DOMAIN` advertising
    /// to `cms` every second, reading `config` (HTCondor syntax, e.g. `ALIVE_INTERVAL`);
    /// returns once its socket is there. `name` must be one the test pool has a certificate
    /// for (`ap`, `ap1`).
    pub fn start(
        bin: &str,
        dir: &Path,
        name: &str,
        domain: &str,
        cms: &[String],
        config: &str,
    ) -> anyhow::Result<AccessPoint> {
        let cfg = dir.join(format!("{name}.conf"));
        std::fs::write(&cfg, config)?;
        let socket = dir.join(format!("{name}.sock"));
        let mut cmd = Command::new(bin);
        cmd.args(["access-point", "--name", name, "--domain", domain])
            .args(["--cms", &cms.join(","), "--update-interval", "1"])
            .arg("--config")
            .arg(&cfg)
            .arg("--spool")
            .arg(dir.join(format!("{name}.spool")))
            .arg("--socket")
            .arg(&socket)
            .env("AERIE_LOG", "info");
        let daemon = Daemon::spawn(cmd, dir.join(format!("{name}.log")))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while !socket.exists() {
            if Instant::now() > deadline {
                bail!("{name}: no socket within 30 s\n{}", daemon.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(AccessPoint { daemon, socket })
    }

    /// Runs `cmctl` (`bin`) with `args` against this access point and the CMs `cms`, in
    /// `cwd`; its exit code, standard output and standard error.
    pub fn cmctl(
        &self,
        bin: &str,
        cms: &[String],
        cwd: &Path,
        args: &[&str],
    ) -> (i32, String, String) {
        let out = Command::new(bin)
            .args(args)
            .current_dir(cwd)
            .env("AERIE_CMS", cms.join(","))
            .env("AERIE_AP_SOCKET", &self.socket)
            .stdin(Stdio::null())
            .output()
            .expect("run cmctl");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Writes `description` to `DIR/NAME.sub` and submits it with `cmctl submit`; the
    /// cluster id it was given.
    pub fn submit(
        &self,
        bin: &str,
        cms: &[String],
        dir: &Path,
        name: &str,
        description: &str,
    ) -> anyhow::Result<i64> {
        let file = dir.join(format!("{name}.sub"));
        std::fs::write(&file, description)?;
        let path = file.display().to_string();
        let (code, out, err) = self.cmctl(bin, cms, dir, &["submit", &path]);
        if code != 0 {
            bail!("cmctl submit {path}: exit {code}: {out}{err}");
        }
        // "1 job(s) submitted to cluster N."
        out.split_whitespace()
            .last()
            .and_then(|w| w.trim_end_matches('.').parse().ok())
            .ok_or_else(|| anyhow!("no cluster id in {out:?}"))
    }

    /// The job `cluster`.0 as `cmctl q -l` (or, once it left the queue, `cmctl history -l`)
    /// shows it; `None` when neither knows it.
    pub fn job(&self, bin: &str, cms: &[String], cluster: i64) -> Option<classad::ClassAd> {
        let id = format!("{cluster}.0");
        for cmd in ["q", "history"] {
            let (code, out, _) = self.cmctl(bin, cms, Path::new("/"), &[cmd, "-l", &id]);
            if code == 0 && !out.trim().is_empty() {
                if let Ok(ad) = classad::parse_ad(&out) {
                    return Some(ad);
                }
            }
        }
        None
    }
}
