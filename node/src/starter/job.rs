//! What the starter needs to know about a job, read from its job ad.
//!
//! The attributes are those HTCondor's starter reads (`condor_starter.V6.1/jic_shadow.cpp`,
//! `os_proc.cpp`, `user_proc.cpp`): `Cmd`, `Arguments`/`Args`, `Environment`/`Env`
//! (+`EnvDelim`), `In`/`Out`/`Err`, `KillSig`, `Owner`, `RequestCpus`, `JobMaxVacateTime`,
//! `TransferInput`, `TransferOutput`. With file transfer (no shared file
//! system is assumed) the standard files live in the sandbox under their base names, as
//! `JICShadow::getJobStdFile` does; `/dev/null` (or no attribute) means none.

use super::arglist;
use super::environ::{self, JobEnv};
use super::error::StartError;
use classad::{ClassAd, Value};
use nix::sys::signal::Signal;
use std::str::FromStr;

/// The job, as the starter runs it.
#[derive(Clone, Debug, PartialEq)]
pub struct JobDescription {
    /// `Cmd`: the executable; a relative name is looked up in the sandbox.
    pub cmd: String,
    /// The arguments (`Arguments`, else `Args`), without the executable.
    pub args: Vec<String>,
    /// The environment the job asked for (`Environment`, else `Env`).
    pub env: JobEnv,
    /// `In`: standard input's file in the sandbox, if any.
    pub stdin: Option<String>,
    /// `Out`: standard output's file in the sandbox, if any.
    pub stdout: Option<String>,
    /// `Err`: standard error's file in the sandbox, if any.
    pub stderr: Option<String>,
    /// `KillSig`: the signal that asks the job to leave (SIGTERM by default).
    pub kill_sig: Signal,
    /// `Owner`: the submitting user.
    pub owner: String,
    /// `RequestCpus` (1 when absent).
    pub request_cpus: u32,
    /// `JobMaxVacateTime`, in seconds, when the ad gives it.
    pub job_max_vacate_time: Option<i64>,
    /// `TransferExecutable`: the access point sends the executable, which runs from the
    /// sandbox as `condor_exec.exe` (true unless the ad says false).
    pub transfer_executable: bool,
    /// `TransferInput`: the names of the input files the access point sends.
    pub transfer_input: Vec<String>,
    /// `TransferOutput`: the output files to send back; `None` means every file the job made
    /// or changed at the top of its sandbox.
    pub transfer_output: Option<Vec<String>>,
}

fn bad(attribute: &'static str, message: impl Into<String>) -> StartError {
    StartError::BadJobAd {
        attribute,
        message: message.into(),
    }
}

/// The string value of `attr`, `None` when undefined, an error for any other type.
fn string_attr(ad: &ClassAd, attr: &'static str) -> Result<Option<String>, StartError> {
    match ad.eval_attr(attr) {
        Value::Undefined => Ok(None),
        Value::Str(s) => Ok(Some(s.to_string())),
        other => Err(bad(
            attr,
            format!("expected a string, found {}", other.type_name()),
        )),
    }
}

/// The number value of `attr`, `None` when undefined, an error for any other type.
fn number_attr(ad: &ClassAd, attr: &'static str) -> Result<Option<f64>, StartError> {
    match ad.eval_attr(attr) {
        Value::Undefined => Ok(None),
        v => v
            .as_number()
            .map(Some)
            .ok_or_else(|| bad(attr, format!("expected a number, found {}", v.type_name()))),
    }
}

/// A standard file's name in the sandbox: its base name, or none for `/dev/null` or empty.
fn std_file(ad: &ClassAd, attr: &'static str) -> Result<Option<String>, StartError> {
    Ok(string_attr(ad, attr)?.and_then(|path| {
        if path.is_empty() || path == "/dev/null" {
            return None;
        }
        let base = path.rsplit('/').next().unwrap_or(&path);
        (!base.is_empty()).then(|| base.to_string())
    }))
}

/// A comma or white-space separated list of file names (HTCondor's `StringList`).
pub fn split_file_list(list: &str) -> Vec<String> {
    list.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A signal named as `KillSig` names it: `SIGTERM`, `TERM` or a number.
pub fn parse_signal(text: &str) -> Option<Signal> {
    let text = text.trim();
    if let Ok(n) = text.parse::<i32>() {
        return Signal::try_from(n).ok();
    }
    let upper = text.to_ascii_uppercase();
    let name = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    Signal::from_str(&name).ok()
}

impl JobDescription {
    /// Reads the job from its ad; an attribute that is there but unreadable is an error
    /// naming it.
    pub fn from_ad(ad: &ClassAd) -> Result<JobDescription, StartError> {
        let cmd = string_attr(ad, "Cmd")?
            .filter(|c| !c.is_empty())
            .ok_or_else(|| bad("Cmd", "the job has no executable"))?;
        let owner = string_attr(ad, "Owner")?
            .filter(|o| !o.is_empty())
            .ok_or_else(|| bad("Owner", "the job has no owner"))?;
        let args = match string_attr(ad, "Arguments")? {
            Some(v2) => arglist::split_v2(&v2).map_err(|e| bad("Arguments", e.to_string()))?,
            None => string_attr(ad, "Args")?
                .map(|v1| arglist::split_v1(&v1))
                .unwrap_or_default(),
        };
        let env = match string_attr(ad, "Environment")? {
            Some(v2) => environ::parse_v2(&v2).map_err(|e| bad("Environment", e.to_string()))?,
            None => match string_attr(ad, "Env")? {
                Some(v1) => {
                    let delim = string_attr(ad, "EnvDelim")?.and_then(|d| d.chars().next());
                    environ::parse_v1(&v1, delim).map_err(|e| bad("Env", e.to_string()))?
                }
                None => JobEnv::new(),
            },
        };
        let kill_sig = match ad.eval_attr("KillSig") {
            Value::Undefined => Signal::SIGTERM,
            Value::Int(n) => Signal::try_from(n as i32)
                .map_err(|_| bad("KillSig", format!("{n} is not a signal")))?,
            Value::Str(s) => {
                parse_signal(&s).ok_or_else(|| bad("KillSig", format!("{s:?} is not a signal")))?
            }
            v => {
                return Err(bad(
                    "KillSig",
                    format!("expected a signal, found {}", v.type_name()),
                ))
            }
        };
        let request_cpus = match number_attr(ad, "RequestCpus")? {
            None => 1,
            Some(c) if c.is_finite() && c >= 1.0 => c as u32,
            Some(c) => return Err(bad("RequestCpus", format!("{c} is not a cpu count"))),
        };
        let job_max_vacate_time = number_attr(ad, "JobMaxVacateTime")?.map(|t| t as i64);
        let transfer_executable = match ad.eval_attr("TransferExecutable") {
            Value::Undefined => true,
            Value::Bool(b) => b,
            v => {
                let found = v.type_name();
                return Err(bad(
                    "TransferExecutable",
                    format!("expected a boolean, found {found}"),
                ));
            }
        };
        let transfer_input = string_attr(ad, "TransferInput")?
            .map(|l| split_file_list(&l))
            .unwrap_or_default();
        let transfer_output = string_attr(ad, "TransferOutput")?.map(|l| split_file_list(&l));
        Ok(JobDescription {
            cmd,
            args,
            env,
            stdin: std_file(ad, "In")?,
            stdout: std_file(ad, "Out")?,
            stderr: std_file(ad, "Err")?,
            kill_sig,
            owner,
            request_cpus,
            job_max_vacate_time,
            transfer_executable,
            transfer_input,
            transfer_output,
        })
    }

    /// A job running the node's own `cmd` (not transferred) with `args` for `owner`, everything
    /// else as an empty ad leaves it.
    pub fn new(cmd: &str, args: &[&str], owner: &str) -> JobDescription {
        JobDescription {
            cmd: cmd.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: JobEnv::new(),
            stdin: None,
            stdout: None,
            stderr: None,
            kill_sig: Signal::SIGTERM,
            owner: owner.to_string(),
            request_cpus: 1,
            job_max_vacate_time: None,
            transfer_executable: false,
            transfer_input: Vec::new(),
            transfer_output: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        classad::parse_ad(text).unwrap()
    }

    #[test]
    fn reads_a_submitted_job() {
        let job = JobDescription::from_ad(&ad(r#"[
            Cmd = "/home/alice/sim"; Owner = "alice";
            Arguments = "-n 3 'a b'"; Args = "ignored";
            Environment = "A=1 B='x y'"; Env = "IGNORED=1";
            In = "/home/alice/in.txt"; Out = "out.txt"; Err = "/dev/null";
            KillSig = "SIGINT"; RequestMemory = 128 * 2; RequestCpus = 2;
            JobMaxVacateTime = 30; TransferInput = "a.dat, b.dat";
            TransferOutput = "result.dat,log.txt"
        ]"#))
        .unwrap();
        assert_eq!(job.cmd, "/home/alice/sim");
        assert_eq!(job.args, ["-n", "3", "a b"]);
        assert_eq!(job.env.get("B").map(String::as_str), Some("x y"));
        assert!(!job.env.contains_key("IGNORED"));
        assert_eq!(job.stdin.as_deref(), Some("in.txt"));
        assert_eq!(job.stdout.as_deref(), Some("out.txt"));
        assert_eq!(job.stderr, None);
        assert_eq!(job.kill_sig, Signal::SIGINT);
        assert_eq!(job.request_cpus, 2);
        assert_eq!(job.job_max_vacate_time, Some(30));
        assert!(job.transfer_executable);
        assert_eq!(job.transfer_input, ["a.dat", "b.dat"]);
        assert_eq!(
            job.transfer_output,
            Some(vec!["result.dat".to_string(), "log.txt".to_string()])
        );
    }

    #[test]
    fn old_syntax_and_defaults() {
        let job = JobDescription::from_ad(&ad(
            r#"[ Cmd = "x"; Owner = "bob"; Args = "a  b"; Env = "|A=1;2|B=3";
                 TransferExecutable = false ]"#,
        ))
        .unwrap();
        assert_eq!(job.args, ["a", "b"]);
        assert_eq!(job.env.get("A").map(String::as_str), Some("1;2"));
        assert_eq!(job.kill_sig, Signal::SIGTERM);
        assert_eq!(job.request_cpus, 1);
        assert_eq!(job.transfer_output, None);
        assert!(!job.transfer_executable);
    }

    #[test]
    fn bad_attributes_are_named() {
        let err = |text: &str| match JobDescription::from_ad(&ad(text)) {
            Err(StartError::BadJobAd { attribute, .. }) => attribute,
            other => panic!("expected a bad job ad, got {other:?}"),
        };
        assert_eq!(err(r#"[ Owner = "a" ]"#), "Cmd");
        assert_eq!(err(r#"[ Cmd = "x" ]"#), "Owner");
        assert_eq!(
            err(r#"[ Cmd = "x"; Owner = "a"; Arguments = "'open" ]"#),
            "Arguments"
        );
        assert_eq!(
            err(r#"[ Cmd = "x"; Owner = "a"; Environment = "NOEQ" ]"#),
            "Environment"
        );
        assert_eq!(
            err(r#"[ Cmd = "x"; Owner = "a"; KillSig = "SIGNOPE" ]"#),
            "KillSig"
        );
        assert_eq!(
            err(r#"[ Cmd = "x"; Owner = "a"; RequestCpus = "lots" ]"#),
            "RequestCpus"
        );
        assert_eq!(err(r#"[ Cmd = 3; Owner = "a" ]"#), "Cmd");
    }

    #[test]
    fn kill_sig_spellings() {
        assert_eq!(parse_signal("SIGUSR1"), Some(Signal::SIGUSR1));
        assert_eq!(parse_signal("quit"), Some(Signal::SIGQUIT));
        assert_eq!(parse_signal("15"), Some(Signal::SIGTERM));
        assert_eq!(parse_signal("SIGNOPE"), None);
    }
}
