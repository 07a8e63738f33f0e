//! The access point client over the wire: a fake `Schedd` server (tonic on a tokio
//! `UnixListener` in a temporary directory) answers `cmctl`'s submit, q, act and history
//! paths, so the Unix-socket connector, the messages and the parsing of the answers are
//! exercised end to end.
use crate::jobs::{self, Tool};
use crate::queue::{self, columns::Clock};
use crate::schedd::Schedd;
use crate::submit;
use aerie_proto::schedd::{self as pb, schedd_server};
use classad::{ClassAd, Value};
use std::sync::{Arc, Mutex};
use tonic::{Request, Response, Status};

/// What the fake access point holds and was sent.
#[derive(Default)]
struct Queue {
    next_cluster: i64,
    jobs: Vec<ClassAd>,
    history: Vec<ClassAd>,
    acts: Vec<pb::ActRequest>,
    /// Answer a projected query asking for rows in rows (else in ads, as access points
    /// before rows did).
    rows: bool,
}

#[derive(Clone, Default)]
struct Fake(Arc<Mutex<Queue>>);

fn select(ads: &[ClassAd], constraint: &str) -> Result<Vec<ClassAd>, Box<Status>> {
    if constraint.is_empty() {
        return Ok(ads.to_vec());
    }
    let e = classad::parse_expr(constraint)
        .map_err(|e| Box::new(Status::invalid_argument(format!("constraint: {e}"))))?;
    Ok(ads
        .iter()
        .filter(|a| matches!(a.eval_expr(&e), Value::Bool(true)))
        .cloned()
        .collect())
}

#[tonic::async_trait]
impl schedd_server::Schedd for Fake {
    async fn new_cluster(
        &self,
        _: Request<pb::NewClusterRequest>,
    ) -> Result<Response<pb::NewClusterReply>, Status> {
        let mut q = self.0.lock().unwrap();
        q.next_cluster += 1;
        Ok(Response::new(pb::NewClusterReply {
            cluster: q.next_cluster,
        }))
    }

    async fn submit(
        &self,
        r: Request<pb::SubmitRequest>,
    ) -> Result<Response<pb::SubmitReply>, Status> {
        let r = r.into_inner();
        let mut q = self.0.lock().unwrap();
        for (i, text) in r.ads.iter().enumerate() {
            let mut ad = classad::parse_old_ads(text)
                .map_err(|e| Status::invalid_argument(format!("ad {i}: {e}")))?
                .remove(0);
            ad.insert_str("Owner", "tester");
            ad.insert_int("JobStatus", 1);
            q.jobs.push(ad);
        }
        Ok(Response::new(pb::SubmitReply {
            cluster: r.cluster,
            count: r.ads.len() as u32,
        }))
    }

    async fn query(
        &self,
        r: Request<pb::QueryRequest>,
    ) -> Result<Response<pb::QueryReply>, Status> {
        let r = r.into_inner();
        let q = self.0.lock().unwrap();
        let mut ads =
            select(if r.history { &q.history } else { &q.jobs }, &r.constraint).map_err(|e| *e)?;
        if r.limit > 0 {
            ads.truncate(r.limit as usize);
        }
        if q.rows && r.rows && !r.projection.is_empty() {
            let mut w = aerie_proto::rows::RowWriter::new(&r.projection);
            ads.iter().for_each(|a| w.push(a));
            let mut reply = w.finish();
            if r.count_queue {
                let mut jobs = vec![0; 8];
                for a in &q.jobs {
                    jobs[a.eval_attr("JobStatus").as_int().unwrap_or(0) as usize] += 1;
                }
                reply.queue_counts = Some(pb::StatusCounts { jobs });
            }
            return Ok(Response::new(reply));
        }
        Ok(Response::new(pb::QueryReply {
            ads: ads.iter().map(|a| a.to_old_syntax()).collect(),
            ..pb::QueryReply::default()
        }))
    }

    async fn act(&self, r: Request<pb::ActRequest>) -> Result<Response<pb::ActReply>, Status> {
        let r = r.into_inner();
        let mut q = self.0.lock().unwrap();
        let by_target = r
            .targets
            .iter()
            .map(|t| queue::Target::parse(t).constraint())
            .collect::<Vec<_>>()
            .join(" || ");
        let c = [by_target, r.constraint.clone()]
            .into_iter()
            .filter(|c| !c.is_empty())
            .map(|c| format!("({c})"))
            .collect::<Vec<_>>()
            .join(" && ");
        let matched = select(&q.jobs, &c).map_err(|e| *e)?.len() as u32;
        q.acts.push(r);
        Ok(Response::new(pb::ActReply {
            matched,
            changed: matched,
            errors: Vec::new(),
        }))
    }
}

/// Serves `fake` on a Unix socket in a new temporary directory, on a runtime of its own.
fn serve(
    fake: Fake,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    tokio::runtime::Runtime,
) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ap.sock");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = {
        let _g = rt.enter();
        tokio::net::UnixListener::bind(&path).unwrap()
    };
    rt.spawn(async move {
        tonic::transport::Server::builder()
            .add_service(schedd_server::ScheddServer::new(fake))
            .serve_with_incoming(tokio_stream::wrappers::UnixListenerStream::new(listener))
            .await
            .unwrap();
    });
    (dir, path, rt)
}

#[test]
fn submit_then_query_then_act_over_a_unix_socket() {
    let fake = Fake::default();
    fake.0.lock().unwrap().next_cluster = 41;
    let (_dir, path, _rt) = serve(fake.clone());
    let mut schedd = Schedd::open(&crate::schedd::Target::Socket(path.clone())).unwrap();

    // submit: a bad file is refused whole, naming file and line, and reserves no cluster.
    let who = aerie_submit::Submitter {
        user: "tester".into(),
        cwd: "/tmp".into(),
        submit_file: "job.sub".into(),
        now: 1_700_000_000,
        cluster: 1,
    };
    let settings = aerie_submit::Settings::default();
    let bad = "executable = /bin/echo\nrequest_memory = 10 XB\nqueue\n";
    match submit::queue_jobs(&mut schedd, "job.sub", bad, &who, &settings).unwrap() {
        submit::Queued::Refused(e) => {
            assert!(
                e.starts_with("ERROR: job.sub, line 2, request_memory:"),
                "{e}"
            )
        }
        submit::Queued::Done(..) => panic!("a bad file was queued"),
    }
    assert_eq!(fake.0.lock().unwrap().next_cluster, 41);
    // A good one: a cluster first, then the ads built for it, in one Submit.
    let text = "executable = /bin/echo\narguments = $(Cluster).$(Process)\nqueue 3\n";
    let s = match submit::queue_jobs(&mut schedd, "job.sub", text, &who, &settings).unwrap() {
        submit::Queued::Done(s, reply) => {
            assert_eq!((reply.cluster, reply.count), (42, 3));
            s
        }
        submit::Queued::Refused(e) => panic!("{e}"),
    };
    assert_eq!(s.cluster, 42);

    // q: the caller's jobs, through the same query condor_q's default view sends.
    let p = queue::parse(&["-nobatch".to_string()]).unwrap();
    let (jobs, all) = queue::fetch(&mut schedd, &p, "tester").unwrap();
    assert_eq!(jobs.len(), 3);
    let clock = Clock {
        now: 1_700_000_100,
        local: false,
    };
    let out = queue::render(&p, &jobs, all.as_ref(), &clock);
    assert!(out.contains("  42.2   tester         11/14 22:13"), "{out}");
    assert!(out.contains(" echo 42.2\n"), "{out}");
    assert!(out.ends_with("Total for all users: 3 jobs; 0 completed, 0 removed, 3 idle, 0 running, 0 held, 0 suspended\n\n"), "{out}");
    let (mine, _) = queue::fetch(&mut schedd, &p, "someone-else").unwrap();
    assert!(mine.is_empty());
    // An access point that answers in rows: the same tables, each view.
    for view in [
        &[][..],
        &["-nobatch"],
        &["-af:j", "Cmd", "Args"],
        &["-hold"],
        &["-run"],
    ] {
        let p = queue::parse(&view.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        let print = |schedd: &mut Schedd| {
            let (jobs, all) = queue::fetch(schedd, &p, "tester").unwrap();
            queue::render(&p, &jobs, all.as_ref(), &clock)
        };
        let by_text = print(&mut schedd);
        fake.0.lock().unwrap().rows = true;
        let by_rows = print(&mut schedd);
        fake.0.lock().unwrap().rows = false;
        assert_eq!(by_rows, by_text, "cmctl q {view:?}");
    }

    // rm 42.1: one request naming the job, answered in condor_rm's words.
    let p = jobs::parse(Tool::Rm, &["-reason".into(), "done".into(), "42.1".into()])
        .unwrap()
        .unwrap();
    let (pick, req) = jobs::requests(Tool::Rm, &p).remove(0);
    let r = schedd.act(req.clone()).unwrap();
    assert_eq!(
        jobs::report(Tool::Rm, false, &pick, &req, &r).stdout,
        "Job 42.1 marked for removal\n"
    );
    let sent = fake.0.lock().unwrap().acts.pop().unwrap();
    assert_eq!(sent.action, pb::Action::Remove as i32);
    assert_eq!(
        (sent.targets, sent.reason),
        (vec!["42.1".to_string()], "done".to_string())
    );

    // history: the limit travels to the access point.
    fake.0.lock().unwrap().history = s.ads.clone();
    let h = schedd
        .query(pb::QueryRequest {
            constraint: String::new(),
            projection: Vec::new(),
            history: true,
            limit: 2,
            rows: false,
            count_queue: false,
        })
        .unwrap();
    assert_eq!(h.len(), 2);
}

#[test]
fn a_missing_socket_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nothing.sock");
    let err = Schedd::open(&crate::schedd::Target::Socket(path.clone()))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("nothing.sock"), "{err}");
    assert!(err.contains("cannot reach the access point"), "{err}");
}
