//! The job queue on disk, in RocksDB under `--spool`: the queued job ads, the history of
//! finished jobs and the next cluster id. Every [`Change`] batch is one `WriteBatch` written
//! with sync before it is applied in memory or acknowledged, so a crash (or `kill -9`) loses
//! nothing a user was told is queued. HTCondor keeps the same things in its `job_queue.log`
//! and `history` files (src/condor_schedd.V6/qmgmt.cpp, src/condor_utils/classad_log.cpp).
//!
//! Keys: `j` + cluster + proc (big-endian, so jobs iterate in id order) → the job ad in old
//! syntax; `h` + sequence → a finished job's final ad (newest last); `m:next_cluster`;
//! `c` + cluster + proc → the claim a running job's process runs under (slot, claim id and
//! startd address, one per line), deleted in the same batch that records the job leaving it.
//! The claim is a capability: it is kept here, not in the job ad that `cmctl q -l` shows.
use super::job::{JobId, Status};
use super::queue::{Change, RunningOn};
use anyhow::{anyhow, Context};
use classad::{ClassAd, Expr};
use rocksdb::{Direction, IteratorMode, Options, WriteBatch, WriteOptions, DB};
use std::path::{Path, PathBuf};

const NEXT_CLUSTER: &[u8] = b"m:next_cluster";

fn job_key(id: JobId) -> [u8; 17] {
    let mut k = [0u8; 17];
    k[0] = b'j';
    k[1..9].copy_from_slice(&id.cluster.to_be_bytes());
    k[9..17].copy_from_slice(&id.proc.to_be_bytes());
    k
}

fn claim_key(id: JobId) -> [u8; 17] {
    let mut k = job_key(id);
    k[0] = b'c';
    k
}

/// The job a `j` or `c` key names ([`job_key`]'s inverse).
fn key_job(k: &[u8]) -> Option<JobId> {
    let part = |r: std::ops::Range<usize>| Some(i64::from_be_bytes(k.get(r)?.try_into().ok()?));
    (k.len() == 17).then_some(())?;
    Some(JobId::new(part(1..9)?, part(9..17)?))
}

fn history_key(seq: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = b'h';
    k[1..9].copy_from_slice(&seq.to_be_bytes());
    k
}

/// What the spool held when opened.
pub struct Loaded {
    /// The queued jobs' ads.
    pub jobs: Vec<ClassAd>,
    /// The next cluster id to hand out.
    pub next_cluster: i64,
    /// The claims the queued jobs' processes ran under when the spool was last written.
    pub runs: Vec<(JobId, RunningOn)>,
}

/// The queue's RocksDB database.
pub struct Store {
    db: DB,
    path: PathBuf,
    next_history: u64,
}

impl Store {
    /// Opens (creating) the spool database in `dir` and reads the queue back.
    pub fn open(dir: &Path) -> anyhow::Result<(Store, Loaded)> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the spool {}", dir.display()))?;
        let path = dir.join("job_queue.db");
        let mut opts = Options::default();
        opts.create_if_missing(true);
        let db = DB::open(&opts, &path)
            .with_context(|| format!("cannot open the job queue {}", path.display()))?;
        let mut jobs = Vec::new();
        for item in db.iterator(IteratorMode::From(b"j", Direction::Forward)) {
            let (k, v) = item.with_context(|| format!("reading {}", path.display()))?;
            if k.first() != Some(&b'j') {
                break;
            }
            let text = std::str::from_utf8(&v)
                .map_err(|e| anyhow!("{}: job record {:?} is not UTF-8: {e}", path.display(), k))?;
            let ad = super::job::parse_ad(text).map_err(|e| {
                anyhow!("{}: job record {:?} does not parse: {e}", path.display(), k)
            })?;
            jobs.push(ad);
        }
        let next_cluster =
            match db.get(NEXT_CLUSTER)? {
                Some(v) => i64::from_be_bytes(v.as_slice().try_into().map_err(|_| {
                    anyhow!("{}: next_cluster record is not 8 bytes", path.display())
                })?),
                None => 1,
            };
        let mut last = db.iterator(IteratorMode::From(&[b'h', 0xff], Direction::Reverse));
        let next_history = match last.next() {
            Some(Ok((k, _))) if k.len() == 9 && k[0] == b'h' => {
                u64::from_be_bytes(k[1..9].try_into().unwrap_or([0; 8])) + 1
            }
            _ => 0,
        };
        drop(last);
        let mut runs = Vec::new();
        for item in db.iterator(IteratorMode::From(b"c", Direction::Forward)) {
            let (k, v) = item.with_context(|| format!("reading {}", path.display()))?;
            if k.first() != Some(&b'c') {
                break;
            }
            let id = key_job(&k);
            let text = std::str::from_utf8(&v).unwrap_or("");
            let mut lines = text.split('\n');
            let (slot, claim, addr) = (lines.next(), lines.next(), lines.next());
            match (id, slot, claim, addr) {
                (Some(id), Some(slot), Some(claim_id), Some(startd_addr)) => runs.push((
                    id,
                    RunningOn {
                        slot: slot.to_string(),
                        claim_id: claim_id.to_string(),
                        startd_addr: startd_addr.to_string(),
                    },
                )),
                _ => {
                    tracing::warn!(path = %path.display(), key = ?k, "claim record does not parse; skipped")
                }
            }
        }
        Ok((
            Store {
                db,
                path,
                next_history,
            },
            Loaded {
                jobs,
                next_cluster,
                runs,
            },
        ))
    }

    /// Writes `changes` as one batch, synced to disk before it returns.
    pub fn commit(&mut self, changes: &[Change]) -> anyhow::Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let mut batch = WriteBatch::default();
        let mut seq = self.next_history;
        for c in changes {
            match c {
                Change::Put(id, ad) => {
                    batch.put(job_key(*id), ad.to_old_syntax());
                    if !Status::of(ad).has_process() {
                        batch.delete(claim_key(*id));
                    }
                }
                Change::RunsOn(id, on) => batch.put(
                    claim_key(*id),
                    format!("{}\n{}\n{}", on.slot, on.claim_id, on.startd_addr),
                ),
                Change::Finish(id, ad) => {
                    batch.delete(job_key(*id));
                    batch.delete(claim_key(*id));
                    batch.put(history_key(seq), ad.to_old_syntax());
                    seq += 1;
                }
                Change::NextCluster(n) => batch.put(NEXT_CLUSTER, n.to_be_bytes()),
            }
        }
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        self.db
            .write_opt(batch, &wo)
            .with_context(|| format!("cannot write the job queue {}", self.path.display()))?;
        self.next_history = seq;
        Ok(())
    }

    /// Finished jobs, newest first, that satisfy `constraint`, at most `limit` (0: all).
    pub fn history(&self, constraint: Option<&Expr>, limit: usize) -> anyhow::Result<Vec<ClassAd>> {
        let mut out = Vec::new();
        for item in self
            .db
            .iterator(IteratorMode::From(&[b'h', 0xff], Direction::Reverse))
        {
            let (k, v) = item.with_context(|| format!("reading {}", self.path.display()))?;
            if k.first() != Some(&b'h') {
                break;
            }
            let Some(ad) = std::str::from_utf8(&v)
                .ok()
                .and_then(|t| super::job::parse_ad(t).ok())
            else {
                tracing::warn!(path = %self.path.display(), key = ?k, "history record does not parse; skipped");
                continue;
            };
            if constraint.is_none_or(|e| ad.eval_expr(e).is_true()) {
                out.push(ad);
                if limit != 0 && out.len() >= limit {
                    break;
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(c: i64, p: i64, status: i64) -> ClassAd {
        classad::parse_ad(&format!(
            "ClusterId = {c}\nProcId = {p}\nJobStatus = {status}"
        ))
        .unwrap()
    }

    #[test]
    fn what_is_committed_is_there_after_reopening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut s, l) = Store::open(dir.path()).unwrap();
            assert!(l.jobs.is_empty());
            assert_eq!(l.next_cluster, 1);
            s.commit(&[
                Change::NextCluster(3),
                Change::Put(JobId::new(2, 1), job(2, 1, 1)),
                Change::Put(JobId::new(2, 0), job(2, 0, 1)),
                Change::Put(JobId::new(10, 0), job(10, 0, 1)),
            ])
            .unwrap();
            s.commit(&[Change::Finish(JobId::new(2, 1), job(2, 1, 4))])
                .unwrap();
        }
        let (mut s, l) = Store::open(dir.path()).unwrap();
        assert_eq!(l.next_cluster, 3);
        let ids: Vec<JobId> = l.jobs.iter().filter_map(JobId::of).collect();
        assert_eq!(ids, [JobId::new(2, 0), JobId::new(10, 0)]);
        // The history keeps counting after a reopen, newest first.
        s.commit(&[Change::Finish(JobId::new(2, 0), job(2, 0, 3))])
            .unwrap();
        let h = s.history(None, 0).unwrap();
        let procs: Vec<Option<i64>> = h.iter().map(|a| a.eval_attr("ProcId").as_int()).collect();
        assert_eq!(procs, [Some(0), Some(1)]);
        let e = classad::parse_expr("JobStatus == 4").unwrap();
        assert_eq!(s.history(Some(&e), 0).unwrap().len(), 1);
        assert_eq!(s.history(None, 1).unwrap().len(), 1);
    }

    /// A running job's claim is on disk until the job leaves it, and never in its ad.
    #[test]
    fn a_running_jobs_claim_is_kept_until_it_leaves_it() {
        let dir = tempfile::tempdir().unwrap();
        let on = |c: &str| RunningOn {
            slot: "slot1@exec".into(),
            claim_id: c.into(),
            startd_addr: "<127.0.0.1:9618>".into(),
        };
        let (a, b, c) = (JobId::new(1, 0), JobId::new(1, 1), JobId::new(2, 0));
        {
            let (mut s, _) = Store::open(dir.path()).unwrap();
            s.commit(&[
                Change::Put(a, job(1, 0, 2)),
                Change::RunsOn(a, on("A")),
                Change::Put(b, job(1, 1, 2)),
                Change::RunsOn(b, on("B")),
                Change::Put(c, job(2, 0, 2)),
                Change::RunsOn(c, on("C")),
            ])
            .unwrap();
            // b is idle again, c finished: their claims go with that.
            s.commit(&[
                Change::Put(b, job(1, 1, 1)),
                Change::Finish(c, job(2, 0, 4)),
            ])
            .unwrap();
        }
        let (_, l) = Store::open(dir.path()).unwrap();
        assert_eq!(l.runs, vec![(a, on("A"))]);
        assert!(l.jobs.iter().all(|j| j.lookup("ClaimId").is_none()));
    }

    #[test]
    fn a_corrupt_record_is_named() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (s, _) = Store::open(dir.path()).unwrap();
            s.db.put(job_key(JobId::new(1, 0)), "A = (1 +").unwrap();
        }
        let e = Store::open(dir.path()).err().unwrap().to_string();
        assert!(
            e.contains("job record") && e.contains("job_queue.db"),
            "{e}"
        );
    }
}
