//! Command-line arguments of `aerie-node`, and the small value types they parse into
//! (runtime distributions, concurrency-limit shares), each with an error that names the flag.
use clap::{Args, Parser, Subcommand};
use rand::Rng;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The whole `aerie-node` command line.
#[derive(Parser, Debug)]
#[command(
    name = "aerie-node",
    version,
    about = "Aerie execute node and access point agent"
)]
pub struct Cli {
    /// Log lines as text (colour only on a terminal) or JSON (for log shippers); `AERIE_LOG`
    /// selects what is logged.
    #[arg(long, value_enum, global = true, default_value_t = aerie_log::LogFormat::Text)]
    pub log_format: aerie_log::LogFormat,
    /// Credentials (mutual TLS) or `--insecure`.
    #[command(flatten)]
    pub security: aerie_security::transport::SecurityArgs,
    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands of `aerie-node`.
#[derive(Subcommand, Debug)]
// Parsed once at start; the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Play a whole pool on this machine: many startds and one access point with many
    /// submitters, advertising to the CMs and taking grants from the leader.
    Simulate(SimulateArgs),
    /// Run an execute node: the slots of this machine, as its HTCondor configuration lays
    /// them out, running real jobs for the access points that claim them.
    Execute(crate::execute::ExecuteArgs),
    /// Check claims logs written by `simulate --claims-log`: no slot claimed twice at once,
    /// no claim accepted with a term older than an earlier one on the same slot.
    CheckClaims(CheckArgs),
    /// Run an access point (schedd): the durable job queue users submit to over a Unix
    /// socket, the leader's requests and grants, and the claims that run the jobs.
    AccessPoint(crate::schedd::args::AccessPointArgs),
}

/// The arguments of `aerie-node simulate`: the pool's shape and workload, where it
/// advertises, and what it records.
#[derive(Args, Debug, Clone)]
pub struct SimulateArgs {
    /// The central managers' collector addresses (host:port,...); the stream goes to the
    /// first reachable one and moves round robin when it fails.
    #[arg(long, value_delimiter = ',', required = true)]
    pub cms: Vec<String>,
    /// Number of slots (static mode) or of cores (partitionable mode).
    #[arg(long, default_value_t = 8)]
    pub slots: u32,
    /// Number of jobs queued at start.
    #[arg(long, default_value_t = 16)]
    pub jobs: u32,
    /// Number of submitters (users); users are named user1..userK unless --users is given.
    #[arg(long, default_value_t = 1)]
    pub submitters: u32,
    /// User names, overriding --submitters.
    #[arg(long, value_delimiter = ',')]
    pub users: Vec<String>,
    /// Accounting groups; users are assigned to them round robin.
    #[arg(long, value_delimiter = ',')]
    pub groups: Vec<String>,
    /// One partitionable slot per machine instead of static slots.
    #[arg(long)]
    pub partitionable: bool,
    /// Job runtime distribution: "fixed:S", "uniform:MIN:MAX" or "exp:MEAN" (seconds).
    #[arg(long, default_value = "uniform:20:60", value_parser = RuntimeDist::parse)]
    pub runtime: RuntimeDist,
    /// Seed of every random choice (claim ids, job sizes, runtimes).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where the AccessPoint and Startd gRPC services listen.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Append claim, release and refusal events here (JSON lines).
    #[arg(long)]
    pub claims_log: Option<PathBuf>,
    /// Slots (static mode) or cores (partitionable mode) per machine.
    #[arg(long, default_value_t = 4)]
    pub machines: u32,
    /// UID domain: submitter names are user@DOMAIN, machines sim<m>.DOMAIN.
    #[arg(long, default_value = "pool.example")]
    pub domain: String,
    /// Prefix of machine and access point names, so several simulators can share a pool.
    #[arg(long, default_value = "sim")]
    pub prefix: String,
    /// Seconds between full re-advertisements (ads expire after CLASSAD_LIFETIME).
    #[arg(long, default_value_t = 5)]
    pub update_interval: u64,
    /// Replace each finished job with a fresh idle one (unlimited demand).
    #[arg(long)]
    pub jobs_forever: bool,
    /// Procs per cluster: each submitter's jobs fill a cluster of this many (one queue time,
    /// one memory request) before a new one opens, as users submit `queue N`.
    #[arg(long, default_value_t = 1)]
    pub cluster_size: u64,
    /// Concurrency limits for some jobs: "name:fraction,...", e.g. "licA:0.5".
    #[arg(long, value_delimiter = ',', value_parser = LimitShare::parse)]
    pub limits: Vec<LimitShare>,
    /// Seconds between status lines on stderr.
    #[arg(long, default_value_t = 5)]
    pub status_interval: u64,
    /// Test-only: keep FILE holding the slots' current claim ids as JSON {slot: id}, so a
    /// test can act as the leader (the collector never returns private attributes).
    #[arg(long, hide = true)]
    pub dump_claim_ids: Option<PathBuf>,
}

impl SimulateArgs {
    /// The user names: --users, else user1..userK.
    pub fn user_names(&self) -> Vec<String> {
        if !self.users.is_empty() {
            self.users.clone()
        } else {
            (1..=self.submitters.max(1))
                .map(|i| format!("user{i}"))
                .collect()
        }
    }

    /// Checks the values clap cannot (names usable in ClassAd strings, non-zero sizes).
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.machines == 0 {
            anyhow::bail!("--machines must be at least 1 (slots per machine)");
        }
        if self.update_interval == 0 {
            anyhow::bail!("--update-interval must be at least 1 second");
        }
        if self.cms.iter().any(|c| c.trim().is_empty()) {
            anyhow::bail!("--cms has an empty address in {:?}", self.cms.join(","));
        }
        let check_name = |flag: &str, s: &str| -> anyhow::Result<()> {
            let ok = !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            if ok {
                Ok(())
            } else {
                anyhow::bail!("{flag}: {s:?} is not a name (letters, digits, '_', '-', '.')")
            }
        };
        for u in &self.users {
            check_name("--users", u)?;
        }
        for g in &self.groups {
            check_name("--groups", g)?;
        }
        check_name("--domain", &self.domain)?;
        check_name("--prefix", &self.prefix)?;
        Ok(())
    }
}

/// The arguments of `aerie-node check-claims`.
#[derive(Args, Debug, Clone)]
pub struct CheckArgs {
    /// Claims logs to check (each checked on its own; the summary covers all).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// How long a simulated job runs once its slot is claimed (`--runtime`); all values are
/// seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RuntimeDist {
    /// Every job runs this many seconds ("fixed:S").
    Fixed(f64),
    /// Uniform between a minimum and a maximum, the maximum excluded ("uniform:MIN:MAX");
    /// equal bounds give that value.
    Uniform(f64, f64),
    /// Exponential with this mean ("exp:MEAN"): many short jobs and a few long ones.
    Exp(f64),
}

impl RuntimeDist {
    /// Parses "fixed:S", "uniform:MIN:MAX" or "exp:MEAN" (seconds, non-negative).
    pub fn parse(s: &str) -> Result<RuntimeDist, String> {
        let parts: Vec<&str> = s.split(':').collect();
        let num = |t: &str| -> Result<f64, String> {
            match t.trim().parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
                _ => Err(format!(
                    "runtime {s:?}: {t:?} is not a non-negative number of seconds"
                )),
            }
        };
        match parts.as_slice() {
            ["fixed", v] => Ok(RuntimeDist::Fixed(num(v)?)),
            ["uniform", a, b] => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("runtime {s:?}: minimum {a} exceeds maximum {b}"));
                }
                Ok(RuntimeDist::Uniform(a, b))
            }
            ["exp", m] => Ok(RuntimeDist::Exp(num(m)?)),
            _ => Err(format!(
                "runtime {s:?}: expected fixed:S, uniform:MIN:MAX or exp:MEAN (seconds)"
            )),
        }
    }

    /// Draws one runtime.
    pub fn sample(&self, rng: &mut impl Rng) -> Duration {
        let secs = match *self {
            RuntimeDist::Fixed(v) => v,
            RuntimeDist::Uniform(a, b) if a < b => rng.gen_range(a..b),
            RuntimeDist::Uniform(a, _) => a,
            RuntimeDist::Exp(m) => {
                let u: f64 = rng.gen_range(f64::EPSILON..1.0);
                -m * u.ln()
            }
        };
        Duration::from_secs_f64(secs.clamp(0.0, 1e7))
    }
}

/// A concurrency limit given to a fraction of the jobs (`--limits name:fraction`).
#[derive(Clone, Debug, PartialEq)]
pub struct LimitShare {
    /// The limit's name as jobs list it in `ConcurrencyLimits` (letters, digits, '_', '.');
    /// the pool's limit for it is set at the CMs (`cmctl limit set NAME N`, HTCondor's
    /// `NAME_LIMIT` knob).
    pub name: String,
    /// The chance, from 0 to 1, that each job queued draws this limit (drawn independently
    /// per limit, so a job may hold several).
    pub fraction: f64,
}

impl LimitShare {
    /// Parses "name:fraction" (the fraction between 0 and 1), with an error that names the
    /// flag's value.
    pub fn parse(s: &str) -> Result<LimitShare, String> {
        let (name, frac) = s
            .rsplit_once(':')
            .ok_or_else(|| format!("limit {s:?}: expected name:fraction, e.g. licA:0.5"))?;
        let name = name.trim();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.'))
        {
            return Err(format!(
                "limit {s:?}: {name:?} is not a limit name (letters, digits, '_', '.')"
            ));
        }
        let fraction = match frac.trim().parse::<f64>() {
            Ok(f) if (0.0..=1.0).contains(&f) => f,
            _ => {
                return Err(format!(
                    "limit {s:?}: fraction {frac:?} is not a number between 0 and 1"
                ))
            }
        };
        Ok(LimitShare {
            name: name.to_string(),
            fraction,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn runtime_dists_parse_and_sample_in_range() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let u = RuntimeDist::parse("uniform:20:60").unwrap();
        for _ in 0..100 {
            let d = u.sample(&mut rng).as_secs_f64();
            assert!((20.0..60.0).contains(&d), "{d}");
        }
        assert_eq!(RuntimeDist::parse("exp:30"), Ok(RuntimeDist::Exp(30.0)));
        assert_eq!(RuntimeDist::parse("fixed:0.5"), Ok(RuntimeDist::Fixed(0.5)));
        for bad in ["uniform:60:20", "exp:-1", "normal:3", "uniform:a:b", ""] {
            let e = RuntimeDist::parse(bad).unwrap_err();
            assert!(e.contains("runtime"), "{bad}: {e}");
        }
    }

    #[test]
    fn limit_shares_parse() {
        assert_eq!(
            LimitShare::parse("licA:0.25"),
            Ok(LimitShare {
                name: "licA".into(),
                fraction: 0.25
            })
        );
        assert!(LimitShare::parse("licA").is_err());
        assert!(LimitShare::parse("licA:2").is_err());
        assert!(LimitShare::parse("a b:0.5").is_err());
    }
}
