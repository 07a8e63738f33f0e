//! The clock nemesis: wall-clock jumps and skew of one CM, in Jepsen's way (its
//! `jepsen.nemesis.time` bumps and strobes one node's clock), with Debian's libfaketime
//! instead of `date -s` so only one process's clock moves, not the whole machine's.
//!
//! Every CM of a clock scenario is started with libfaketime preloaded (`LD_PRELOAD`) and a
//! timestamp file of its own (`FAKETIME_TIMESTAMP_FILE`) that libfaketime re-reads on every
//! clock read (`FAKETIME_NO_CACHE=1`). The file holds the offset from the true time
//! (`+3600`, `-60`): writing it moves the CM's wall clock at once, as an NTP step or an
//! operator's `date -s` would. `FAKETIME_DONT_FAKE_MONOTONIC=1` leaves `CLOCK_MONOTONIC`
//! alone, as a real step does: Raft's election and heartbeat timers (tokio, on the monotonic
//! clock) keep their pace, and what is tested is what the CM does with the *wall* time it
//! reads (the accountant's ticks, ad lifetimes, token and grant times). libfaketime works
//! with the Rust binary: `std` reads the time through glibc's `clock_gettime`, which the
//! preload intercepts (tried with a jump of an hour while sleeping: the wall clock jumped,
//! `Instant` did not).
//!
//! The offset a CM can take is bounded by the pool's certificates: they are valid from one
//! hour before they were issued, so a CM set more than an hour back refuses every peer's
//! certificate as not yet valid. The schedules stay within an hour.
//!
//! HTCondor has no defence here beyond the daemons' own: the accountant charges whatever
//! `time(NULL)` says passed since its last update (src/condor_negotiator.V6/Accountant.cpp,
//! `UpdatePriorities`); Aerie's leader bounds it (cm/src/leader/tick.rs).

use crate::history::{Fault, FaultKind};
use crate::workload::{Run, Step, Target};
use aerie_tests::Cluster;
use anyhow::{anyhow, bail, Context};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Where Debian's `libfaketime` package puts the preload library, per architecture.
const LIBFAKETIME: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
];

/// The environment variable naming a CM's timestamp file.
const TIMESTAMP_FILE: &str = "FAKETIME_TIMESTAMP_FILE";

/// The preload library, or an error saying which package to install.
pub fn libfaketime() -> anyhow::Result<PathBuf> {
    LIBFAKETIME
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .ok_or_else(|| {
            anyhow!(
                "libfaketime not found (looked in {}): install Debian's `faketime` package \
                 (scripts/deps.sh does)",
                LIBFAKETIME.join(", ")
            )
        })
}

/// What libfaketime reads from a timestamp file for an offset of `seconds` from the true
/// time: a relative offset, signed.
pub fn spec(seconds: i64) -> String {
    if seconds < 0 {
        format!("{seconds}\n")
    } else {
        format!("+{seconds}\n")
    }
}

/// The offset libfaketime reads from `text`, if it is one [`spec`] writes.
pub fn parse_spec(text: &str) -> Option<i64> {
    let t = text.trim();
    t.strip_prefix('+').unwrap_or(t).parse().ok()
}

/// Writes `seconds` to the timestamp file `path` so that no clock read sees half a file: a
/// new file renamed over the old one.
pub fn set_offset(path: &Path, seconds: i64) -> anyhow::Result<()> {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, spec(seconds)).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))
}

/// The per-CM timestamp files of a run.
pub struct Clocks {
    dir: tempfile::TempDir,
    lib: PathBuf,
}

impl Clocks {
    /// Timestamp files for CMs `ids`, each starting at its offset in `skews` (0 if absent).
    pub fn new(
        ids: impl IntoIterator<Item = u64>,
        skews: &BTreeMap<u64, i64>,
    ) -> anyhow::Result<Clocks> {
        let lib = libfaketime()?;
        let dir = tempfile::Builder::new()
            .prefix("aerie-jepsen-clocks-")
            .tempdir()?;
        let c = Clocks { dir, lib };
        for id in ids {
            set_offset(&c.file(id), skews.get(&id).copied().unwrap_or(0))?;
        }
        Ok(c)
    }

    /// CM `id`'s timestamp file.
    pub fn file(&self, id: u64) -> PathBuf {
        self.dir.path().join(format!("cm{id}.faketime"))
    }

    /// The environment that starts CM `id` under libfaketime with its own file.
    pub fn env(&self, id: u64) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), self.lib.display().to_string()),
            (TIMESTAMP_FILE.into(), self.file(id).display().to_string()),
            ("FAKETIME_NO_CACHE".into(), "1".into()),
            ("FAKETIME_DONT_FAKE_MONOTONIC".into(), "1".into()),
        ]
    }
}

/// CM `id`'s timestamp file, as the cluster started it.
fn file_of(cluster: &Cluster, id: u64) -> anyhow::Result<PathBuf> {
    let node = cluster
        .nodes
        .get(&id)
        .ok_or_else(|| anyhow!("no CM {id}"))?;
    node.env
        .iter()
        .find(|(k, _)| k == TIMESTAMP_FILE)
        .and_then(|(_, v)| v.clone())
        .map(PathBuf::from)
        .ok_or_else(|| {
            anyhow!("CM {id} was not started under libfaketime: the scenario has no clocks")
        })
}

/// A jump schedule over `total`, replayable from `seed`: the leader's clock jumps forward by
/// 60 s to an hour while writes go on, is set right, then jumps back by as much, is set
/// right; once more in the rest of the time.
pub fn jumps(seed: u64, total: Duration) -> Vec<Step> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut steps = Vec::new();
    let mut t = Duration::ZERO;
    while t < total {
        let by = rng.gen_range(60..=3600);
        let hold = Duration::from_millis(rng.gen_range(1500..3000));
        let calm = Duration::from_millis(rng.gen_range(500..1500));
        for offset in [by, -by] {
            steps.extend([
                Step::Clock(Target::Leader, offset),
                Step::Sleep(hold),
                Step::ResetClocks,
                Step::Sleep(calm),
            ]);
            t += hold + calm;
        }
    }
    steps
}

/// The skew of a `clock-skew` run, from `seed`: one CM of `1..=n`, 60 s to an hour ahead or
/// behind, for the whole run.
pub fn skew(seed: u64, n: u64) -> BTreeMap<u64, i64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let id = rng.gen_range(1..=n);
    let by: i64 = rng.gen_range(60..=3600);
    BTreeMap::from([(id, if rng.gen_bool(0.5) { by } else { -by })])
}

/// Records the skews a run's CMs were started with: clock faults from time zero, never
/// undone.
pub fn record_skews(run: &Run, skews: &BTreeMap<u64, i64>) {
    run.record(|h| {
        for (&node, &offset) in skews.iter().filter(|(_, o)| **o != 0) {
            h.faults.push(Fault {
                kind: FaultKind::Clock(offset),
                node,
                start: Duration::ZERO,
                end: Duration::MAX,
            });
        }
    });
}

impl Run {
    /// Sets CM `target`'s wall clock `offset` seconds off; remembered in `jumped` to be set
    /// right by [`Run::reset_clocks`].
    pub(crate) fn jump_clock(
        &self,
        cluster: &Mutex<Cluster>,
        target: Target,
        offset: i64,
        jumped: &mut Vec<u64>,
    ) -> anyhow::Result<()> {
        let id = self.resolve(target)?;
        let file = {
            let c = crate::membership::locked(cluster)?;
            file_of(&c, id)?
        };
        if jumped.contains(&id) {
            bail!("CM {id}'s clock is already off: set it right first");
        }
        set_offset(&file, offset)?;
        jumped.push(id);
        self.fault(FaultKind::Clock(offset), id);
        Ok(())
    }

    /// Sets every clock in `jumped` right (a skew the CM was started with stays).
    pub(crate) fn reset_clocks(
        &self,
        cluster: &Mutex<Cluster>,
        jumped: &mut Vec<u64>,
    ) -> anyhow::Result<()> {
        let end = self.now();
        for id in std::mem::take(jumped) {
            let file = {
                let c = crate::membership::locked(cluster)?;
                file_of(&c, id)?
            };
            set_offset(&file, 0)?;
            self.record(|h| {
                for f in h.faults.iter_mut().filter(|f| {
                    f.node == id
                        && matches!(f.kind, FaultKind::Clock(_))
                        && f.end == Duration::MAX
                        && f.start > Duration::ZERO
                }) {
                    f.end = end;
                }
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_written_as_libfaketime_reads_them() {
        assert_eq!(spec(3600), "+3600\n");
        assert_eq!(spec(-60), "-60\n");
        assert_eq!(spec(0), "+0\n");
        for s in [3600, -60, 0] {
            assert_eq!(parse_spec(&spec(s)), Some(s));
        }
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("cm1.faketime");
        set_offset(&f, -120).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "-120\n");
        set_offset(&f, 5).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "+5\n");
    }

    #[test]
    fn a_jump_schedule_is_replayed_from_its_seed_goes_both_ways_and_sets_clocks_right() {
        let a = jumps(5, Duration::from_secs(10));
        assert_eq!(a, jumps(5, Duration::from_secs(10)));
        assert_ne!(a, jumps(6, Duration::from_secs(10)));
        let offsets: Vec<i64> = a
            .iter()
            .filter_map(|s| match s {
                Step::Clock(Target::Leader, o) => Some(*o),
                _ => None,
            })
            .collect();
        assert!(offsets.iter().any(|o| *o > 0) && offsets.iter().any(|o| *o < 0));
        assert!(offsets.iter().all(|o| (60..=3600).contains(&o.abs())));
        // Every jump is set right before the next one.
        let mut off = false;
        for s in &a {
            match s {
                Step::Clock(..) => {
                    assert!(!off, "{a:?}");
                    off = true
                }
                Step::ResetClocks => off = false,
                _ => {}
            }
        }
        assert!(!off);
    }

    #[test]
    fn a_skew_is_one_cm_within_an_hour() {
        let s = skew(3, 3);
        assert_eq!(s, skew(3, 3));
        assert_eq!(s.len(), 1);
        let (id, by) = s.iter().next().unwrap();
        assert!((1..=3).contains(id) && (60..=3600).contains(&by.abs()));
    }
}
