//! Matchmaking spread over every core: the pair evaluations the candidate lists need,
//! computed on several threads and handed back in order.
//!
//! HTCondor's matchmakingAlgorithm evaluates every startd ad for a request on one thread. When
//! a pool's slots are all different (as real startds' `Disk`, `KFlops`, `Mips`... are), slot
//! classes do not collapse and each job class evaluates its job against every slot:
//! independent evaluations of read-only ads, split here into one contiguous run of slots per
//! thread, each slot evaluated against every job asked before the next (its attributes, spread
//! over memory, are read once for all of them). Each result depends only on its (job, slot)
//! pair and the results are put back in the order asked, so the cycle's outcome does not depend
//! on the number of threads or their timing; the cycle stays a pure function of its input.
//! Small lists are evaluated on the calling thread (a thread costs more than a few hundred
//! evaluations).
use super::config::NegotiatorConfig;
use super::matchmaking::{eval_slot_side, SlotSide};
use super::state::SlotState;
use classad::ClassAd;

/// Fewer pairs than this per thread are not worth a thread.
pub(super) const MIN_PAIRS_PER_THREAD: usize = 1024;

/// A job to evaluate slots against: its ad and, per [`SlotSide`], which autoclusters share
/// that expression's value ([`super::tables::AutoCluster::slot_side`]): jobs of a slot with
/// the same one share it, so it is evaluated once per slot.
pub(super) type Job<'a> = (&'a ClassAd, [usize; 3]);

/// What is asked of one job and one slot: nothing (the pair is known), or the pair with which
/// of its slot-side expressions ([`SlotSide`], in that order) are not known yet.
pub(super) type Need = Option<[bool; 3]>;

/// One slot to evaluate (index into the state's slots) with what is asked of it per job (in
/// the order of the jobs).
pub(super) type Ask = (usize, Vec<Need>);

/// A pair's evaluation as a thread returns it: `None` when the job and the slot do not match,
/// else the job's Rank of the slot and each slot-side expression asked for (`None` where it
/// was not asked).
pub(super) type Answer = Option<(f64, [Option<Option<f64>>; 3])>;

/// Evaluates `asks` (slots in `slots`, none with a consumption policy, against `jobs`) on up to
/// `threads` threads, one slot at a time against every job (a slot's attributes are read from
/// memory once); per ask, an answer per job asked (`None` where nothing was). `None` when that
/// is not worth it (or a thread failed), and the caller evaluates them itself.
pub(super) fn eval_pairs(
    cfg: &NegotiatorConfig,
    jobs: &[Job],
    slots: &[SlotState],
    asks: &[Ask],
    threads: usize,
) -> Option<Vec<Vec<Option<Answer>>>> {
    let pairs: usize = asks
        .iter()
        .map(|(_, n)| n.iter().filter(|x| x.is_some()).count())
        .sum();
    let threads = threads.min(pairs / MIN_PAIRS_PER_THREAD).min(asks.len());
    if threads < 2 {
        return None;
    }
    let one = |(si, needs): &Ask| -> Vec<Option<Answer>> {
        let slot = &slots[*si].ad;
        // Slot-side values found for this slot: (expression, sharing group) -> value.
        let mut found: Vec<(SlotSide, usize, Option<f64>)> = Vec::new();
        jobs.iter()
            .zip(needs)
            .map(|(&(job, by), need)| {
                let need = (*need)?;
                if !classad::symmetric_match(job, slot) {
                    return Some(None);
                }
                let sides = SlotSide::ALL.map(|w| {
                    if !need[w as usize] {
                        return None;
                    }
                    let group = by[w as usize];
                    if let Some(&(_, _, v)) =
                        found.iter().find(|(fw, fg, _)| *fw == w && *fg == group)
                    {
                        return Some(v);
                    }
                    let v = eval_slot_side(cfg, slot, job, w);
                    found.push((w, group, v));
                    Some(v)
                });
                Some(Some((classad::rank(job, slot), sides)))
            })
            .collect()
    };
    let chunk = asks.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = asks
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().map(one).collect::<Vec<_>>()))
            .collect();
        let mut out = Vec::with_capacity(asks.len());
        for h in handles {
            out.extend(h.join().ok()?);
        }
        Some(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(i: i64) -> SlotState {
        let mut ad = ClassAd::new();
        ad.insert_int("Memory", 1024 * (1 + i % 4));
        ad.insert_int("Disk", 1000 + i * 7 % 5000);
        ad.insert_int("KFlops", 900_000 + i * 31 % 200_000);
        ad.insert_int("SlotID", 1 + i % 8);
        ad.insert_int("Cpus", 1);
        ad.insert_expr_str("Requirements", "TARGET.RequestMemory <= MY.Memory")
            .unwrap();
        ad.insert_expr_str("Rank", "TARGET.RequestMemory").unwrap();
        SlotState {
            ad,
            class: i as usize,
            taken: false,
        }
    }

    /// Split over threads, the answers are those of one thread, in the order asked.
    #[test]
    fn threads_answer_as_one_thread_in_order() {
        let cfg = NegotiatorConfig::default();
        let mut job = ClassAd::new();
        job.insert_int("RequestMemory", 2048);
        job.insert_int("RequestDisk", 3000);
        job.insert_expr_str(
            "Requirements",
            "TARGET.Memory >= RequestMemory && TARGET.Disk >= RequestDisk",
        )
        .unwrap();
        job.insert_expr_str("Rank", "TARGET.KFlops").unwrap();
        let slots: Vec<SlotState> = (0..3000).map(slot).collect();
        // A second job sharing the first's `NEGOTIATOR_POST_JOB_RANK` (which reads only the
        // slot), evaluated once per slot for both; the pre-job rank and the slot's Rank read
        // RequestMemory (through `MY.Rank`), so they are the second job's own.
        let mut other = job.clone();
        other.insert_int("RequestMemory", 1024);
        other.insert_expr_str("Rank", "0").unwrap();
        let jobs: Vec<Job> = vec![(&job, [0, 0, 0]), (&other, [1, 0, 1])];
        let asks: Vec<Ask> = (0..3000)
            .rev()
            .map(|si| {
                let need = Some([si % 2 == 0, true, si % 3 == 0]);
                (si, vec![need, if si % 5 == 0 { None } else { need }])
            })
            .collect();
        let spread = eval_pairs(&cfg, &jobs, &slots, &asks, 3).expect("worth three threads");
        let alone: Vec<Vec<Option<Answer>>> = asks
            .iter()
            .map(|(si, needs)| {
                let ad = &slots[*si].ad;
                jobs.iter()
                    .zip(needs)
                    .map(|(&(j, _), need)| {
                        let need = (*need)?;
                        Some(classad::symmetric_match(j, ad).then(|| {
                            let sides = SlotSide::ALL
                                .map(|w| need[w as usize].then(|| eval_slot_side(&cfg, ad, j, w)));
                            (classad::rank(j, ad), sides)
                        }))
                    })
                    .collect()
            })
            .collect();
        assert_eq!(spread, alone);
        let answers: Vec<&Answer> = spread.iter().map(|a| a[0].as_ref().unwrap()).collect();
        assert!(answers.iter().any(|a| a.is_some()) && answers.iter().any(|a| a.is_none()));
        assert!(spread.iter().any(|a| a[1].is_none()));
        // Too few pairs for two threads: the caller evaluates them.
        assert!(eval_pairs(&cfg, &jobs, &slots, &asks[..500], 2).is_none());
    }
}
