//! Matchmaking spread over every core: the pair evaluations a job class's first candidate list
//! needs, computed on several threads and handed back in order.
//!
//! HTCondor's matchmakingAlgorithm evaluates every startd ad for a request on one thread. When
//! a pool's slots are all different (as real startds' `Disk`, `KFlops`, `Mips`... are), slot
//! classes do not collapse and a job class's first request evaluates the job against every
//! slot: independent evaluations of read-only ads, split here into one contiguous chunk per
//! thread. Each result depends only on its (job, slot) pair and the results are put back in
//! the order asked, so the cycle's outcome does not depend on the number of threads or their
//! timing; the cycle stays a pure function of its input. Small lists are evaluated on the
//! calling thread (a thread costs more than a few hundred evaluations).
use super::config::NegotiatorConfig;
use super::matchmaking::{eval_slot_side, SlotSide};
use super::state::SlotState;
use classad::ClassAd;

/// Fewer pairs than this per thread are not worth a thread.
pub(super) const MIN_PAIRS_PER_THREAD: usize = 1024;

/// One pair to evaluate: a slot (index into the state's slots) and which of its slot-side
/// expressions ([`SlotSide`], in that order) are not known yet.
pub(super) type Ask = (usize, [bool; 3]);

/// A pair's evaluation as a thread returns it: `None` when the job and the slot do not match,
/// else the job's Rank of the slot and each slot-side expression asked for (`None` where it
/// was not asked).
pub(super) type Answer = Option<(f64, [Option<Option<f64>>; 3])>;

/// Evaluates `asks` (job `job`, slots in `slots`, none with a consumption policy) on up to
/// `threads` threads; `None` when that is not worth it (or a thread failed), and the caller
/// evaluates them itself.
pub(super) fn eval_pairs(
    cfg: &NegotiatorConfig,
    job: &ClassAd,
    slots: &[SlotState],
    asks: &[Ask],
    threads: usize,
) -> Option<Vec<Answer>> {
    let threads = threads.min(asks.len() / MIN_PAIRS_PER_THREAD);
    if threads < 2 {
        return None;
    }
    let one = |&(si, need): &Ask| -> Answer {
        let slot = &slots[si].ad;
        if !classad::symmetric_match(job, slot) {
            return None;
        }
        let sides =
            SlotSide::ALL.map(|w| need[w as usize].then(|| eval_slot_side(cfg, slot, job, w)));
        Some((classad::rank(job, slot), sides))
    };
    let chunk = asks.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = asks
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().map(one).collect::<Vec<Answer>>()))
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
        let asks: Vec<Ask> = (0..3000)
            .rev()
            .map(|si| (si, [si % 2 == 0, true, si % 3 == 0]))
            .collect();
        let spread = eval_pairs(&cfg, &job, &slots, &asks, 3).expect("worth three threads");
        let alone: Vec<Answer> = asks
            .iter()
            .map(|&(si, need)| {
                let ad = &slots[si].ad;
                classad::symmetric_match(&job, ad).then(|| {
                    let sides = SlotSide::ALL
                        .map(|w| need[w as usize].then(|| eval_slot_side(&cfg, ad, &job, w)));
                    (classad::rank(&job, ad), sides)
                })
            })
            .collect();
        assert_eq!(spread, alone);
        assert!(spread.iter().any(|a| a.is_some()) && spread.iter().any(|a| a.is_none()));
        // Too few pairs for two threads: the caller evaluates them.
        assert!(eval_pairs(&cfg, &job, &slots, &asks[..1500], 2).is_none());
    }
}
