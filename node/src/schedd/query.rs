//! The answer to a query of the queue or the history (condor_q, condor_history): the jobs
//! that satisfy the constraint, as ads cut to the projection in old ClassAd syntax
//! ([`queue::select`]), or, when the client asks for rows and names a projection, as rows
//! of typed values ([`aerie_proto::rows`]), which neither side prints nor parses as text.
//! HTCondor's schedd answers condor_q's projected query the same way in spirit: only the
//! projected attributes go back (src/condor_schedd.V6/qmgmt.cpp, `GetNextJobByConstraint`).
use super::job::Status;
use super::queue;
use aerie_proto::rows::RowWriter;
use aerie_proto::schedd::{QueryReply, StatusCounts};
use classad::{ClassAd, Expr};
use std::collections::BTreeMap;

/// The queue's jobs per status ([`queue::Queue::status_counts`], kept as changes apply) as
/// the wire has them: condor_q's "Total for all users" line without a pass over every job.
pub fn status_counts(by_status: &BTreeMap<Status, u64>) -> StatusCounts {
    let mut jobs = vec![0; Status::ALL.len() + 1];
    for (s, n) in by_status {
        jobs[*s as usize] += n;
    }
    StatusCounts { jobs }
}

/// The jobs of `ads` that satisfy `constraint`, at most `limit` (0: all), as ads (whole when
/// `projection` is empty) or, with `rows` and a projection, as rows.
pub fn answer<'a>(
    ads: impl Iterator<Item = &'a ClassAd>,
    constraint: Option<&Expr>,
    projection: &[String],
    limit: usize,
    rows: bool,
) -> QueryReply {
    if !rows || projection.is_empty() {
        return QueryReply {
            ads: queue::select(ads, constraint, projection, limit),
            ..QueryReply::default()
        };
    }
    let mut w = RowWriter::new(projection);
    for ad in ads
        .filter(|ad| constraint.is_none_or(|e| ad.eval_expr(e).is_true()))
        .take(if limit == 0 { usize::MAX } else { limit })
    {
        w.push(ad);
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use aerie_proto::rows::read_ads;

    fn queue() -> Vec<ClassAd> {
        (0..4)
            .map(|p| {
                classad::parse_ad(&format!(
                    "ClusterId = 7\nProcId = {p}\nOwner = \"alice\"\nJobStatus = {}\n\
                     ResidentSetSize = {}\nMemoryUsage = ((ResidentSetSize + 1023) / 1024)\n\
                     RemoteUserCpu = {}.25\nCmd = \"/bin/sleep\"",
                    1 + p % 2,
                    1000 * p,
                    p
                ))
                .unwrap()
            })
            .collect()
    }

    /// The rows read back are the ads the text path gives, attribute for attribute.
    #[test]
    fn rows_read_back_as_the_projected_ads() {
        let ads = queue();
        let c = classad::parse_expr("JobStatus == 2").unwrap();
        let projection: Vec<String> = ["ProcId", "MemoryUsage", "RemoteUserCpu", "Gone"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for limit in [0, 1] {
            let text = answer(ads.iter(), Some(&c), &projection, limit, false);
            let rows = answer(ads.iter(), Some(&c), &projection, limit, true);
            assert!(!text.in_rows && rows.in_rows && rows.ads.is_empty());
            let (by_text, by_rows) = (read_ads(&text).unwrap(), read_ads(&rows).unwrap());
            assert_eq!(by_rows.len(), if limit == 1 { 1 } else { 2 });
            assert_eq!(by_text, by_rows);
            assert_eq!(by_rows[0].eval_attr("MemoryUsage").as_int(), Some(1));
            assert!(!by_rows[0].contains("Cmd"), "{:?}", by_rows[0]);
        }
    }

    #[test]
    fn status_counts_are_indexed_by_job_status() {
        let by: BTreeMap<Status, u64> = [(Status::Idle, 3), (Status::Held, 2)].into();
        assert_eq!(status_counts(&by).jobs, [0, 3, 0, 0, 0, 2, 0, 0]);
    }

    /// No projection: whole ads as text, even when rows were asked for.
    #[test]
    fn without_a_projection_the_answer_is_ads() {
        let ads = queue();
        let a = answer(ads.iter(), None, &[], 0, true);
        assert!(!a.in_rows);
        assert_eq!(a.ads.len(), 4);
        assert_eq!(a.ads[3], ads[3].to_old_syntax());
    }
}
