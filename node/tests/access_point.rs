//! The access point role end to end inside one process: the Schedd service over a real Unix
//! socket (the caller known from the socket), and the leader's side against an in-test fake
//! execute node (claim, activation with the input files, job events, outputs written into
//! Iwd, the claim reused for the next job of its autocluster, then released).
use aerie_node::schedd::args::AccessPointArgs;
use aerie_node::schedd::run::{start, Running};
use aerie_proto::execute as ex;
use aerie_proto::negotiation as pb;
use aerie_proto::schedd as sc;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::transport::{Channel, Endpoint, Uri};

fn args(dir: &Path) -> AccessPointArgs {
    aerie_security::testing::test_pool();
    AccessPointArgs {
        cms: vec![],
        spool: dir.join("spool"),
        socket: dir.join("schedd.sock"),
        listen: "127.0.0.1:0".parse().unwrap(),
        address: None,
        name: Some("ap.test".into()),
        config: None,
        domain: Some("pool.test".into()),
        metrics_listen: None,
        update_interval: 20,
    }
}

/// Connects to the Unix socket from a thread whose credentials are `uid`'s (a raw
/// setresuid changes only the calling thread on Linux), or as this process.
async fn connect_as(path: PathBuf, uid: Option<u32>) -> sc::schedd_client::ScheddClient<Channel> {
    let ch = Endpoint::try_from("http://localhost")
        .unwrap()
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move {
                let std_stream = std::thread::spawn(move || {
                    if let Some(u) = uid {
                        // SAFETY: a plain system call on this thread's own credentials.
                        let r = unsafe { libc::syscall(libc::SYS_setresuid, u, u, u) };
                        if r != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    std::os::unix::net::UnixStream::connect(&path)
                })
                .join()
                .unwrap()?;
                std_stream.set_nonblocking(true)?;
                let s = tokio::net::UnixStream::from_std(std_stream)?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(s))
            }
        }))
        .await
        .unwrap();
    sc::schedd_client::ScheddClient::new(ch)
}

fn me() -> String {
    nix::unistd::User::from_uid(nix::unistd::geteuid())
        .unwrap()
        .unwrap()
        .name
}

fn job_ad(cluster: i64, proc: i64, iwd: &Path, extra: &str) -> String {
    format!(
        "ClusterId = {cluster}\nProcId = {proc}\nCmd = \"run.sh\"\nIwd = \"{}\"\nIn = \"in.txt\"\n\
         Out = \"job{proc}.out\"\nErr = \"job{proc}.err\"\n\
         RequestCpus = 1\nRequestMemory = 128\nRequestDisk = 1024\n\
         Requirements = TARGET.Cpus >= RequestCpus\nOwner = \"someone\"\nJobStatus = 4\n{extra}",
        iwd.display()
    )
}

async fn submit(
    c: &mut sc::schedd_client::ScheddClient<Channel>,
    iwd: &Path,
    n: i64,
    extra: &str,
) -> i64 {
    let cluster = c
        .new_cluster(sc::NewClusterRequest {})
        .await
        .unwrap()
        .into_inner()
        .cluster;
    let ads = (0..n).map(|p| job_ad(cluster, p, iwd, extra)).collect();
    let r = c
        .submit(sc::SubmitRequest { cluster, ads })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.count as i64, n);
    cluster
}

async fn query(
    c: &mut sc::schedd_client::ScheddClient<Channel>,
    constraint: &str,
    history: bool,
) -> Vec<classad::ClassAd> {
    let r = c
        .query(sc::QueryRequest {
            constraint: constraint.into(),
            projection: vec![],
            history,
            limit: 0,
            rows: false,
            count_queue: false,
        })
        .await
        .unwrap()
        .into_inner();
    r.ads
        .iter()
        .map(|a| classad::parse_ad(a).unwrap())
        .collect()
}

/// A projected query of job 1.1 answered in rows reads back as the same job ad as answered
/// in ad text (condor_q's views ask for rows).
async fn assert_projected_rows_read_as_text(
    c: &mut sc::schedd_client::ScheddClient<Channel>,
    history: bool,
) {
    let req = |rows| sc::QueryRequest {
        constraint: "ClusterId == 1 && ProcId == 1".into(),
        projection: ["ProcId", "Owner", "JobStatus", "Cmd", "QDate", "Gone"]
            .map(String::from)
            .to_vec(),
        history,
        limit: 0,
        rows,
        count_queue: true,
    };
    let text = c.query(req(false)).await.unwrap().into_inner();
    let rows = c.query(req(true)).await.unwrap().into_inner();
    assert!(!text.in_rows && rows.in_rows && rows.ads.is_empty());
    let by_rows = aerie_proto::rows::read_ads(&rows).unwrap();
    assert_eq!(by_rows, aerie_proto::rows::read_ads(&text).unwrap());
    assert_eq!(by_rows.len(), 1);
    assert_eq!(by_rows[0].len(), 5, "{:?}", by_rows[0]);
    // The queue's jobs per status, asked for beside the jobs (none for the history).
    let counts = rows.queue_counts.map(|c| c.jobs);
    if history {
        assert_eq!(counts, None);
    } else {
        assert_eq!(counts, Some(vec![0, 2, 0, 0, 0, 0, 0, 0]));
    }
}

fn act(action: sc::Action, targets: &[&str]) -> sc::ActRequest {
    sc::ActRequest {
        action: action as i32,
        targets: targets.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

#[tokio::test]
async fn the_schedd_service_queues_queries_and_acts_for_the_socket_peer() {
    let dir = tempfile::tempdir().unwrap();
    let a = args(dir.path());
    let running = start(&a).await.unwrap();
    let mode = std::fs::metadata(&a.socket).unwrap().permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o666
    );
    let mut c = connect_as(a.socket.clone(), None).await;
    let cluster = submit(&mut c, dir.path(), 2, "").await;
    assert_eq!(cluster, 1);
    let ads = query(&mut c, "", false).await;
    assert_eq!(ads.len(), 2);
    // The access point's Owner, not the ad's.
    assert_eq!(ads[0].eval_attr("Owner").as_str(), Some(me().as_str()));
    assert_eq!(
        ads[0].eval_attr("User").as_str(),
        Some(format!("{}@pool.test", me()).as_str())
    );
    assert_eq!(ads[0].eval_attr("JobStatus").as_int(), Some(1));
    assert_projected_rows_read_as_text(&mut c, false).await;
    // Hold, release, remove; the removed job is in the history.
    let r = c
        .act(act(sc::Action::Hold, &["1.0"]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((r.matched, r.changed), (1, 1));
    assert_eq!(query(&mut c, "JobStatus == 5", false).await.len(), 1);
    let r = c
        .act(act(sc::Action::Release, &["1.1"]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.errors, ["Job 1.1 is not held"]);
    c.act(act(sc::Action::Release, &["1.0"])).await.unwrap();
    let r = c
        .act(act(sc::Action::Remove, &["1"]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.changed, 2);
    assert!(query(&mut c, "", false).await.is_empty());
    let h = query(&mut c, "", true).await;
    assert_eq!(h.len(), 2);
    assert_eq!(h[0].eval_attr("JobStatus").as_int(), Some(3));
    assert_projected_rows_read_as_text(&mut c, true).await;
    // A bad submit is refused whole.
    let cl = c
        .new_cluster(sc::NewClusterRequest {})
        .await
        .unwrap()
        .into_inner()
        .cluster;
    let e = c
        .submit(sc::SubmitRequest {
            cluster: cl,
            ads: vec![job_ad(cl, 0, dir.path(), ""), "ClusterId = ".into()],
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(query(&mut c, "", false).await.is_empty());
    // The queue survives a restart, and cluster ids are never handed out twice.
    submit(&mut c, dir.path(), 1, "").await;
    drop(c);
    running.stop().await;
    let running = start(&a).await.unwrap();
    let mut c = connect_as(a.socket.clone(), None).await;
    assert_eq!(query(&mut c, "", false).await.len(), 1);
    let next = c
        .new_cluster(sc::NewClusterRequest {})
        .await
        .unwrap()
        .into_inner()
        .cluster;
    assert_eq!(next, 4);
    drop(c);
    running.stop().await;
}

/// A client of the access point's TCP `Schedd` presenting `token` (no certificate), as
/// `cmctl --schedd` does with `AERIE_TOKEN`; `None`: no token either.
// tonic's interceptors return a tonic Status.
#[allow(clippy::result_large_err)]
async fn tcp_client(
    addr: std::net::SocketAddr,
    token: Option<String>,
) -> sc::schedd_client::ScheddClient<
    tonic::service::interceptor::InterceptedService<
        Channel,
        impl FnMut(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status>,
    >,
> {
    let ca_pem =
        std::fs::read_to_string(aerie_security::testing::test_pool().join("ca.crt")).unwrap();
    let t = aerie_security::Transport::Token {
        ca_pem,
        token: String::new(),
    };
    let ch = t
        .endpoint(&addr.to_string(), aerie_security::Role::AccessPoint)
        .unwrap()
        .connect()
        .await
        .unwrap();
    sc::schedd_client::ScheddClient::with_interceptor(ch, move |mut r: tonic::Request<()>| {
        if let Some(t) = &token {
            r.metadata_mut()
                .insert("authorization", format!("Bearer {t}").parse().unwrap());
        }
        Ok(r)
    })
}

/// A token for `identity` with `scope`, signed with the test pool's key.
fn token(identity: &str, scope: &str) -> String {
    let key =
        aerie_security::token::SigningKey::load(aerie_security::testing::test_pool()).unwrap();
    let now = aerie_security::transport::now_unix();
    key.sign(&aerie_security::token::Claims {
        sub: identity.into(),
        iss: key.issuer.clone(),
        iat: now,
        exp: now + 3600,
        jti: format!("t-{identity}-{scope}"),
        scope: Some(scope.into()),
    })
}

/// Issue 16: a person with a token reaches the access point over TCP (mutual TLS, no Unix
/// login): `user@domain` owns its jobs as `user`, another token's user may not touch them, a
/// READ token may only look, and a caller with neither token nor certificate is refused.
#[tokio::test]
async fn a_token_holder_submits_and_acts_over_tcp_as_the_tokens_user() {
    if std::env::var("AERIE_INSECURE").is_ok_and(|v| v == "1" || v == "true") {
        return; // no TLS, no tokens
    }
    let dir = tempfile::tempdir().unwrap();
    let a = args(dir.path());
    let running = start(&a).await.unwrap();
    let mine = token(
        &format!("{}@pool.example", me()),
        "condor:/READ condor:/WRITE",
    );
    let mut c = tcp_client(running.tcp, Some(mine)).await;
    let cluster = c
        .new_cluster(sc::NewClusterRequest {})
        .await
        .unwrap()
        .into_inner()
        .cluster;
    let r = c
        .submit(sc::SubmitRequest {
            cluster,
            ads: vec![job_ad(cluster, 0, dir.path(), "")],
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.count, 1);
    let ads = c
        .query(sc::QueryRequest::default())
        .await
        .unwrap()
        .into_inner()
        .ads;
    let ad = classad::parse_ad(&ads[0]).unwrap();
    // The token's user, without its domain, owns the job.
    assert_eq!(ad.eval_attr("Owner").as_str(), Some(me().as_str()));
    // Another token's user may not change it; a READ token may look but not write.
    let mut other = tcp_client(
        running.tcp,
        Some(token("mallory@pool.example", "condor:/READ condor:/WRITE")),
    )
    .await;
    let r = other
        .act(act(sc::Action::Hold, &["1.0"]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.changed, 0);
    assert!(r.errors[0].contains("belongs to"), "{:?}", r.errors);
    let mut reader = tcp_client(
        running.tcp,
        Some(token("reader@pool.example", "condor:/READ")),
    )
    .await;
    assert_eq!(
        reader
            .query(sc::QueryRequest::default())
            .await
            .unwrap()
            .into_inner()
            .ads
            .len(),
        1
    );
    let e = reader
        .new_cluster(sc::NewClusterRequest {})
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
    // No token, no certificate: who is it?
    let mut nobody = tcp_client(running.tcp, None).await;
    let e = nobody.query(sc::QueryRequest::default()).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");
    // The owner removes its own job over TCP.
    let r = c
        .act(act(sc::Action::Remove, &["1.0"]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.changed, 1, "{:?}", r.errors);
    drop((c, other, reader, nobody));
    running.stop().await;
}

#[tokio::test]
async fn another_user_may_not_touch_the_jobs_nor_submit_to_a_root_access_point_as_someone_else() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!(
            "skipped: connecting as another uid needs root (the rule is unit-tested in queue)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let a = args(dir.path());
    let running = start(&a).await.unwrap();
    let mut root = connect_as(a.socket.clone(), None).await;
    submit(&mut root, dir.path(), 1, "").await;
    let nobody = nix::unistd::User::from_name("nobody").unwrap().unwrap();
    let mut other = connect_as(a.socket.clone(), Some(nobody.uid.as_raw())).await;
    let r = other
        .act(act(sc::Action::Remove, &["1.0"]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((r.matched, r.changed), (1, 0));
    assert_eq!(r.errors, ["Job 1.0 belongs to root"]);
    // nobody's own submit is nobody's.
    let cl = other
        .new_cluster(sc::NewClusterRequest {})
        .await
        .unwrap()
        .into_inner()
        .cluster;
    other
        .submit(sc::SubmitRequest {
            cluster: cl,
            ads: vec![job_ad(cl, 0, Path::new("/tmp"), "")],
        })
        .await
        .unwrap();
    let ads = query(&mut root, &format!("ClusterId == {cl}"), false).await;
    assert_eq!(ads[0].eval_attr("Owner").as_str(), Some("nobody"));
    // root (a queue super user) may remove it.
    let r = root
        .act(act(sc::Action::Remove, &[&cl.to_string()]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.changed, 1);
    drop((root, other));
    running.stop().await;
}

/// One activation the fake execute node saw: the job, the claim, the input files (name,
/// contents, executable).
type Activation = (String, String, Vec<(String, Vec<u8>, bool)>);

/// What the fake execute node saw.
#[derive(Default)]
struct Seen {
    claims: Vec<String>,
    activations: Vec<Activation>,
    releases: Vec<String>,
    keep_alives: usize,
    /// Activated jobs start and never exit by themselves.
    run_forever: bool,
    /// Keep-alives answer that the claim is gone.
    lost: bool,
    /// The running job per claim: (job, slot, shadow address).
    running: std::collections::HashMap<String, (String, String, String)>,
    /// Deactivations: (claim, fast).
    deactivations: Vec<(String, bool)>,
}

/// Sends one job event to the access point's Shadow service.
async fn send_event(
    shadow: &str,
    job: &str,
    slot: &str,
    claim: &str,
    e: ex::job_event_request::Event,
) {
    let ch = aerie_security::testing::endpoint(shadow, aerie_security::Role::AccessPoint)
        .connect()
        .await
        .unwrap();
    let r = ex::shadow_client::ShadowClient::new(ch)
        .job_event(ex::JobEventRequest {
            job: job.into(),
            slot: slot.into(),
            claim_id: claim.into(),
            time: 0,
            event: Some(e),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.ok, "{r:?}");
}

/// A fake execute node: accepts every claim, runs every activated job at once (started,
/// then exited with stdout = its input in upper case and a result file).
#[derive(Clone, Default)]
struct FakeNode(Arc<Mutex<Seen>>);

#[tonic::async_trait]
impl pb::startd_server::Startd for FakeNode {
    async fn request_claim(
        &self,
        r: tonic::Request<pb::ClaimRequest>,
    ) -> Result<tonic::Response<pb::ClaimReply>, tonic::Status> {
        let r = r.into_inner();
        self.0.lock().unwrap().claims.push(r.job.clone());
        Ok(tonic::Response::new(pb::ClaimReply {
            ok: true,
            error: String::new(),
            claimed_slot: format!("{}_1", r.slot),
            claim_id: "dyn-claim".into(),
        }))
    }
    async fn release_claim(
        &self,
        r: tonic::Request<pb::ReleaseRequest>,
    ) -> Result<tonic::Response<pb::ReleaseReply>, tonic::Status> {
        self.0
            .lock()
            .unwrap()
            .releases
            .push(r.into_inner().claim_id);
        Ok(tonic::Response::new(pb::ReleaseReply {
            ok: true,
            error: String::new(),
        }))
    }
}

#[tonic::async_trait]
impl ex::execute_server::Execute for FakeNode {
    async fn activate_claim(
        &self,
        r: tonic::Request<ex::ActivateRequest>,
    ) -> Result<tonic::Response<ex::ActivateReply>, tonic::Status> {
        let r = r.into_inner();
        let files = r
            .inputs
            .iter()
            .map(|f| (f.name.clone(), f.data.clone(), f.executable))
            .collect();
        self.0
            .lock()
            .unwrap()
            .activations
            .push((r.job.clone(), r.claim_id.clone(), files));
        let input = r
            .inputs
            .iter()
            .find(|f| f.name == "in.txt")
            .map(|f| f.data.clone())
            .unwrap_or_default();
        let proc = r.job.split('.').nth(1).unwrap_or("0").to_string();
        let forever = {
            let mut seen = self.0.lock().unwrap();
            seen.running.insert(
                r.claim_id.clone(),
                (r.job.clone(), r.slot.clone(), r.shadow_addr.clone()),
            );
            seen.run_forever
        };
        if forever {
            tokio::spawn(async move {
                send_event(
                    &r.shadow_addr,
                    &r.job,
                    &r.slot,
                    &r.claim_id,
                    ex::job_event_request::Event::Started(true),
                )
                .await;
            });
            return Ok(tonic::Response::new(ex::ActivateReply {
                ok: true,
                ..Default::default()
            }));
        }
        tokio::spawn(async move {
            let ch = aerie_security::testing::endpoint(
                &r.shadow_addr,
                aerie_security::Role::AccessPoint,
            )
            .connect()
            .await
            .unwrap();
            let mut sh = ex::shadow_client::ShadowClient::new(ch);
            let ev = |e| ex::JobEventRequest {
                job: r.job.clone(),
                slot: r.slot.clone(),
                claim_id: r.claim_id.clone(),
                time: 0,
                event: Some(e),
            };
            assert!(
                sh.job_event(ev(ex::job_event_request::Event::Started(true)))
                    .await
                    .unwrap()
                    .into_inner()
                    .ok
            );
            let out = |n: String, d: Vec<u8>| ex::File {
                name: n,
                data: d,
                ..Default::default()
            };
            let dir = |n: &str| ex::File {
                name: n.into(),
                directory: true,
                ..Default::default()
            };
            let exited = ex::Exited {
                exit_code: Some(0),
                exit_signal: None,
                usage: Some(ex::Usage {
                    wall_seconds: 2.0,
                    ..Default::default()
                }),
                outputs: vec![
                    out(format!("job{proc}.out"), input.to_ascii_uppercase()),
                    out(format!("result{proc}"), b"42".to_vec()),
                    // An output directory's tree, as a starter sends it back.
                    dir(&format!("outdir{proc}")),
                    dir(&format!("outdir{proc}/empty")),
                    out(format!("outdir{proc}/sub/r"), b"deep".to_vec()),
                ],
                output_error: String::new(),
            };
            assert!(
                sh.job_event(ev(ex::job_event_request::Event::Exited(exited)))
                    .await
                    .unwrap()
                    .into_inner()
                    .ok
            );
        });
        Ok(tonic::Response::new(ex::ActivateReply {
            ok: true,
            ..Default::default()
        }))
    }
    async fn keep_alive(
        &self,
        _: tonic::Request<ex::KeepAliveRequest>,
    ) -> Result<tonic::Response<ex::KeepAliveReply>, tonic::Status> {
        let mut seen = self.0.lock().unwrap();
        seen.keep_alives += 1;
        Ok(tonic::Response::new(ex::KeepAliveReply {
            ok: !seen.lost,
            error: if seen.lost {
                "no such claim".into()
            } else {
                String::new()
            },
            lease_seconds: 900,
        }))
    }
    async fn deactivate_claim(
        &self,
        r: tonic::Request<ex::DeactivateRequest>,
    ) -> Result<tonic::Response<ex::DeactivateReply>, tonic::Status> {
        let r = r.into_inner();
        let job = {
            let mut seen = self.0.lock().unwrap();
            seen.deactivations.push((r.claim_id.clone(), r.fast));
            seen.running.remove(&r.claim_id)
        };
        let Some((job, slot, shadow)) = job else {
            return Ok(tonic::Response::new(ex::DeactivateReply {
                ok: false,
                error: "no job".into(),
            }));
        };
        tokio::spawn(async move {
            let ev = ex::Evicted {
                reason: "vacated".into(),
                usage: Some(ex::Usage {
                    wall_seconds: 1.0,
                    ..Default::default()
                }),
            };
            send_event(
                &shadow,
                &job,
                &slot,
                &r.claim_id,
                ex::job_event_request::Event::Evicted(ev),
            )
            .await;
        });
        Ok(tonic::Response::new(ex::DeactivateReply {
            ok: true,
            error: String::new(),
        }))
    }
    async fn drain(
        &self,
        _: tonic::Request<ex::DrainRequest>,
    ) -> Result<tonic::Response<ex::DrainReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("drain"))
    }
    async fn cancel_drain(
        &self,
        _: tonic::Request<ex::CancelDrainRequest>,
    ) -> Result<tonic::Response<ex::CancelDrainReply>, tonic::Status> {
        Err(tonic::Status::unimplemented("cancel drain"))
    }
}

/// The access point's TCP services as the leader calls them (mutual TLS, the harness's
/// certificate, which holds the CM role).
async fn as_leader(running: &Running) -> pb::access_point_client::AccessPointClient<Channel> {
    let ch = aerie_security::testing::endpoint(
        &running.tcp.to_string(),
        aerie_security::Role::AccessPoint,
    )
    .connect()
    .await
    .unwrap();
    pb::access_point_client::AccessPointClient::new(ch)
}

/// The idle jobs the access point offers the leader (`GetRequests`, whole ads).
async fn idle_jobs(
    leader: &mut pb::access_point_client::AccessPointClient<Channel>,
) -> Vec<String> {
    leader
        .get_requests(pb::RequestsRequest {
            term: 1,
            cycle: 1,
            negotiator: "cm1".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .jobs
}

async fn fake_node() -> (FakeNode, String) {
    let node = FakeNode::default();
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let n = node.clone();
    tokio::spawn(async move {
        aerie_security::testing::server()
            .add_service(pb::startd_server::StartdServer::new(n.clone()))
            .add_service(ex::execute_server::ExecuteServer::new(n))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(l))
            .await
            .unwrap();
    });
    (node, format!("<{addr}>"))
}

/// A grant of the fake node's `slot1@node` at `addr` for `job`, with capability `claim`.
fn slot_grant(addr: &str, job: &str, claim: &str) -> pb::Grant {
    pb::Grant {
        job: job.into(),
        slot: "slot1@node".into(),
        startd_addr: addr.into(),
        claim_id: claim.into(),
        weight: 1.0,
        ..Default::default()
    }
}

/// Delivers `grants` as leader 1 of `term`, cycle `cycle`; the access point's answer.
async fn deliver(
    leader: &mut pb::access_point_client::AccessPointClient<Channel>,
    term: u64,
    cycle: u64,
    grants: Vec<pb::Grant>,
) -> pb::GrantReply {
    leader
        .deliver_grants(pb::GrantBatch {
            term,
            cycle,
            leader_id: 1,
            grants,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
}

async fn until(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..200 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn a_grant_runs_the_job_and_its_claim_runs_the_next_one_then_is_released() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.sh"), "#!/bin/sh\ncat\n").unwrap();
    std::fs::write(dir.path().join("in.txt"), "hello\n").unwrap();
    let a = args(dir.path());
    let running: Running = start(&a).await.unwrap();
    let mut c = connect_as(a.socket.clone(), None).await;
    // Two jobs of one autocluster, and one of another (2 cpus) the claim must not take.
    submit(&mut c, dir.path(), 2, "").await;
    let other = submit(&mut c, dir.path(), 1, "RequestCpus = 2").await;
    let mut leader = as_leader(&running).await;
    let idle = idle_jobs(&mut leader).await;
    assert_eq!(idle.len(), 3);
    let (node, addr) = fake_node().await;
    let grant = |job: &str| slot_grant(&addr, job, "grant-claim");
    let r = deliver(
        &mut leader,
        2,
        1,
        vec![grant("1.0"), grant("1.0"), grant("9.0")],
    )
    .await;
    let accepted: Vec<bool> = r.results.iter().map(|r| r.accepted).collect();
    assert_eq!(accepted, [true, false, false]);
    let seen = node.0.clone();
    until(
        "both jobs of the autocluster to run and the claim to be released",
        || !seen.lock().unwrap().releases.is_empty(),
    )
    .await;
    {
        let s = seen.lock().unwrap();
        // One claim, two activations on it, then one release.
        assert_eq!(s.claims, ["1.0"]);
        let jobs: Vec<&str> = s.activations.iter().map(|a| a.0.as_str()).collect();
        assert_eq!(jobs, ["1.0", "1.1"]);
        assert!(s.activations.iter().all(|a| a.1 == "dyn-claim"));
        let names: Vec<(&str, bool)> = s.activations[0]
            .2
            .iter()
            .map(|f| (f.0.as_str(), f.2))
            .collect();
        assert_eq!(names, [("run.sh", true), ("in.txt", false)]);
        assert_eq!(s.activations[0].2[1].1, b"hello\n");
        assert_eq!(s.releases, ["dyn-claim"]);
    }
    // Outputs are in Iwd; the jobs are in the history, completed.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("job0.out")).unwrap(),
        "HELLO\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("result1")).unwrap(),
        "42"
    );
    let h = query(&mut c, "", true).await;
    assert_eq!(h.len(), 2);
    for ad in &h {
        assert_eq!(ad.eval_attr("JobStatus").as_int(), Some(4));
        assert_eq!(ad.eval_attr("ExitCode").as_int(), Some(0));
        assert_eq!(ad.eval_attr("NumJobStarts").as_int(), Some(1));
        assert_eq!(ad.eval_attr("RemoteWallClockTime").as_number(), Some(2.0));
        assert_eq!(
            ad.eval_attr("LastRemoteHost").as_str(),
            Some("slot1@node_1")
        );
        assert!(ad.eval_attr("CompletionDate").as_int().unwrap() > 0);
    }
    // The other autocluster's job is still idle, offered to the leader.
    let q = query(&mut c, "", false).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].eval_attr("ClusterId").as_int(), Some(other));
    assert_eq!(q[0].eval_attr("JobStatus").as_int(), Some(1));
    // An older term's grant is refused now.
    let r = deliver(&mut leader, 1, 9, vec![grant(&format!("{other}.0"))]).await;
    assert!(r.results[0].error.contains("stale term"), "{:?}", r.results);
    drop((c, leader));
    running.stop().await;
}

/// A slot ad for the resource-request test.
fn slot_ad(name: &str, cpus: i64, requirements: &str) -> classad::ClassAd {
    classad::parse_ad(&format!(
        "MyType = \"Machine\"\nName = \"{name}\"\nState = \"Unclaimed\"\nActivity = \"Idle\"\n\
         Cpus = {cpus}\nMemory = 4096\nDisk = 100000\nRequirements = {requirements}\nRank = 0"
    ))
    .unwrap()
}

/// Issue 15.4: the access point answers with resource requests; expanded by the leader they
/// give the negotiator the same matches as the whole job ads, and a grant naming an
/// autocluster goes to another idle job of it when the named one is taken.
#[tokio::test]
async fn resource_requests_negotiate_as_whole_jobs_and_grants_name_the_autocluster() {
    use aerie_core::accountant::Accountant;
    use aerie_core::negotiator::{negotiate, requests, NegotiationInput, NegotiatorConfig};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.sh"), "#!/bin/sh\ncat\n").unwrap();
    std::fs::write(dir.path().join("in.txt"), "x\n").unwrap();
    let a = args(dir.path());
    let running: Running = start(&a).await.unwrap();
    let mut c = connect_as(a.socket.clone(), None).await;
    submit(&mut c, dir.path(), 4, "").await;
    submit(&mut c, dir.path(), 2, "RequestCpus = 2").await;
    submit(
        &mut c,
        dir.path(),
        2,
        "JobPrio = 5\nDepartment = \"physics\"",
    )
    .await;
    submit(&mut c, dir.path(), 3, "Department = \"chemistry\"").await;
    let mut leader = as_leader(&running).await;
    let pools = [
        vec![slot_ad("s1", 1, "true"), slot_ad("s2", 2, "true")],
        vec![
            slot_ad("s1", 4, "TARGET.Department =?= \"physics\""),
            slot_ad("s2", 1, "true"),
            slot_ad("s3", 2, "TARGET.Department =!= \"chemistry\""),
            slot_ad("s4", 1, "TARGET.JobPrio > 1"),
        ],
        (0..12)
            .map(|i| slot_ad(&format!("s{i}"), 1 + i % 3, "true"))
            .collect(),
    ];
    let whole: Vec<classad::ClassAd> = leader
        .get_requests(pb::RequestsRequest::default())
        .await
        .unwrap()
        .into_inner()
        .jobs
        .iter()
        .map(|t| classad::parse_ad(t).unwrap())
        .collect();
    assert_eq!(whole.len(), 11);
    let cfg = NegotiatorConfig::default();
    let acct = Accountant::new(cfg.accountant.clone());
    let matches = |slots: &[classad::ClassAd], jobs: Vec<classad::ClassAd>| {
        let input = NegotiationInput {
            slots: slots.to_vec(),
            jobs,
        };
        let o = negotiate(&input, &acct, &cfg, 1_700_000_000);
        o.matches
            .iter()
            .map(|m| format!("{} {} {}", m.submitter, m.job, m.slot))
            .collect::<Vec<_>>()
    };
    let mut autocluster = String::new();
    for slots in &pools {
        let reply = leader
            .get_requests(pb::RequestsRequest {
                term: 1,
                cycle: 1,
                negotiator: "cm1".into(),
                resource_requests: true,
                significant_attributes: requests::significant_names(&cfg, slots),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(reply.jobs.is_empty());
        // Fewer requests than jobs: procs differing only in Out/Err share one.
        assert!(reply.requests.len() < whole.len(), "{:?}", reply.requests);
        assert_eq!(reply.requests.iter().map(|r| r.count).sum::<u64>(), 11);
        let mut expanded = Vec::new();
        for r in &reply.requests {
            let rep = classad::parse_ad(&r.ad).unwrap();
            let procs: Vec<requests::ProcRange> = r
                .procs
                .iter()
                .map(|p| requests::ProcRange {
                    first: p.first,
                    count: p.count,
                })
                .collect();
            requests::expand(&rep, r.has_ids.then_some(r.cluster), &procs, &mut expanded);
        }
        let want = matches(slots, whole.clone());
        assert!(!want.is_empty());
        assert_eq!(matches(slots, expanded), want);
        autocluster = reply.requests[0].autocluster.clone();
    }
    // Two grants for 1.0 naming its autocluster (the claim signature: Requirements,
    // Request*, submitter; not JobPrio or Department): the second goes to the
    // highest-priority idle job of it, 3.0 (JobPrio 5), as a reused claim would.
    let (node, addr) = fake_node().await;
    node.0.lock().unwrap().run_forever = true;
    let grant = |claim: &str| pb::Grant {
        autocluster: autocluster.clone(),
        ..slot_grant(&addr, "1.0", claim)
    };
    let r = deliver(&mut leader, 2, 1, vec![grant("g1"), grant("g2")]).await;
    let accepted: Vec<bool> = r.results.iter().map(|r| r.accepted).collect();
    assert_eq!(accepted, [true, true], "{:?}", r.results);
    let seen = node.0.clone();
    until("both claims", || seen.lock().unwrap().claims.len() == 2).await;
    assert_eq!(seen.lock().unwrap().claims, ["1.0", "3.0"]);
    drop((c, leader));
    running.stop().await;
}

#[tokio::test]
async fn a_job_whose_inputs_cannot_be_read_is_held_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.sh"), "#!/bin/sh\n").unwrap();
    let (act, ad) = run_one(dir.path(), "").await; // in.txt does not exist
    assert_eq!(ad.eval_attr("JobStatus").as_int(), Some(5));
    assert_eq!(ad.eval_attr("HoldReasonCode").as_int(), Some(13));
    let why = ad.eval_attr("HoldReason").as_str().unwrap().to_string();
    assert!(why.contains("in.txt"), "{why}");
    assert_eq!(act, None);
}

/// Runs one job of `extra` on the fake node; the job's activation (its input files), if it
/// got one, and its ad afterwards.
async fn run_one(dir: &Path, extra: &str) -> (Option<Activation>, classad::ClassAd) {
    let state = tempfile::tempdir().unwrap();
    let a = args(state.path());
    let running = start(&a).await.unwrap();
    let mut c = connect_as(a.socket.clone(), None).await;
    submit(&mut c, dir, 1, extra).await;
    let (node, addr) = fake_node().await;
    let mut leader = as_leader(&running).await;
    let g = pb::Grant {
        job: "1.0".into(),
        slot: "slot1@node".into(),
        startd_addr: addr,
        claim_id: "c".into(),
        ..Default::default()
    };
    leader
        .deliver_grants(pb::GrantBatch {
            term: 1,
            cycle: 1,
            leader_id: 1,
            grants: vec![g],
            ..Default::default()
        })
        .await
        .unwrap();
    let seen = node.0.clone();
    until("the claim to be released", || {
        !seen.lock().unwrap().releases.is_empty()
    })
    .await;
    let activation = seen.lock().unwrap().activations.pop();
    let ad = query(&mut c, "", false)
        .await
        .pop()
        .or(query(&mut c, "", true).await.pop())
        .unwrap();
    drop((c, leader));
    running.stop().await;
    (activation, ad)
}

#[tokio::test]
async fn a_directory_input_travels_as_its_tree_and_an_output_directory_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::write(dir.path().join("in.txt"), "hi\n").unwrap();
    std::fs::create_dir_all(dir.path().join("data/sub")).unwrap();
    std::fs::create_dir(dir.path().join("data/empty")).unwrap();
    std::fs::write(dir.path().join("data/sub/b"), "b").unwrap();
    let (act, ad) = run_one(dir.path(), "TransferInput = \"data\"").await;
    let act = act.unwrap();
    let names: Vec<&str> = act.2.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "run.sh",
            "in.txt",
            "data",
            "data/empty",
            "data/sub",
            "data/sub/b"
        ]
    );
    assert_eq!(ad.eval_attr("JobStatus").as_int(), Some(4));
    assert!(dir.path().join("outdir0/empty").is_dir());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("outdir0/sub/r")).unwrap(),
        "deep"
    );
    // A link out of the tree puts the job on hold, naming it; nothing is activated.
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join("data/sub/pw")).unwrap();
    let (act, ad) = run_one(dir.path(), "TransferInput = \"data\"").await;
    assert_eq!(act, None);
    assert_eq!(ad.eval_attr("JobStatus").as_int(), Some(5));
    let why = ad.eval_attr("HoldReason").as_str().unwrap().to_string();
    assert!(
        why.contains("data/sub/pw") && why.contains("out of the"),
        "{why}"
    );
    // A URL is not transferred: the job is held with that reason.
    let (_, ad) = run_one(dir.path(), "TransferInput = \"https://example.org/x\"").await;
    assert_eq!(ad.eval_attr("JobStatus").as_int(), Some(5));
    let why = ad.eval_attr("HoldReason").as_str().unwrap().to_string();
    assert!(why.contains("URL transfer is not supported"), "{why}");
}

async fn status_of(c: &mut sc::schedd_client::ScheddClient<Channel>, job: &str) -> Option<i64> {
    let (cl, p) = job.split_once('.').unwrap();
    let q = query(c, &format!("ClusterId == {cl} && ProcId == {p}"), false).await;
    q.first().and_then(|a| a.eval_attr("JobStatus").as_int())
}

/// Waits until the job's JobStatus is `want`.
async fn wait_status(c: &mut sc::schedd_client::ScheddClient<Channel>, job: &str, want: i64) {
    for _ in 0..200 {
        if status_of(c, job).await == Some(want) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("job {job} never reached JobStatus {want}");
}

#[tokio::test]
async fn rm_hold_vacate_and_a_lost_claim_stop_a_running_job_first() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::write(dir.path().join("in.txt"), "x").unwrap();
    let a = args(dir.path());
    let running = start(&a).await.unwrap();
    let mut c = connect_as(a.socket.clone(), None).await;
    submit(&mut c, dir.path(), 3, "").await;
    let (node, addr) = fake_node().await;
    node.0.lock().unwrap().run_forever = true;
    let seen = node.0.clone();
    let mut leader = as_leader(&running).await;
    let mut term = 0;
    let mut run = |job: &'static str| {
        term += 1;
        let g = pb::Grant {
            job: job.into(),
            slot: "slot1@node".into(),
            startd_addr: addr.clone(),
            claim_id: "c".into(),
            ..Default::default()
        };
        pb::GrantBatch {
            term,
            cycle: 1,
            leader_id: 1,
            grants: vec![g],
            ..Default::default()
        }
    };
    let started = |n: usize| {
        let seen = seen.clone();
        move || seen.lock().unwrap().activations.len() >= n
    };
    // Vacate: stopped, idle again, its claim released.
    leader.deliver_grants(run("1.0")).await.unwrap();
    until("1.0 activated", started(1)).await;
    wait_status(&mut c, "1.0", 2).await;
    let r = c
        .act(sc::ActRequest {
            fast: true,
            ..act(sc::Action::Vacate, &["1.0"])
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.changed, 1, "{r:?}");
    until("1.0's claim released", || {
        seen.lock().unwrap().releases.len() == 1
    })
    .await;
    assert_eq!(
        seen.lock().unwrap().deactivations,
        [("dyn-claim".to_string(), true)]
    );
    assert_eq!(status_of(&mut c, "1.0").await, Some(1));
    // Hold of a running job: stopped, then held.
    leader.deliver_grants(run("1.0")).await.unwrap();
    until("1.0 activated again", started(2)).await;
    wait_status(&mut c, "1.0", 2).await;
    c.act(act(sc::Action::Hold, &["1.0"])).await.unwrap();
    until("1.0's second claim released", || {
        seen.lock().unwrap().releases.len() == 2
    })
    .await;
    assert_eq!(status_of(&mut c, "1.0").await, Some(5));
    // Remove of a running job: stopped, then in the history as removed.
    leader.deliver_grants(run("1.1")).await.unwrap();
    until("1.1 activated", started(3)).await;
    wait_status(&mut c, "1.1", 2).await;
    c.act(act(sc::Action::Remove, &["1.1"])).await.unwrap();
    until("1.1's claim released", || {
        seen.lock().unwrap().releases.len() == 3
    })
    .await;
    assert_eq!(status_of(&mut c, "1.1").await, None);
    let h = query(&mut c, "", true).await;
    assert_eq!(h[0].eval_attr("JobStatus").as_int(), Some(3));
    // A claim the startd no longer knows: the job is idle again.
    leader.deliver_grants(run("1.2")).await.unwrap();
    until("1.2 activated", started(4)).await;
    wait_status(&mut c, "1.2", 2).await;
    seen.lock().unwrap().lost = true;
    running.schedd.keep_alive_once().await;
    assert_eq!(status_of(&mut c, "1.2").await, Some(1));
    assert!(running.schedd.lock().claims.is_empty());
    drop((c, leader));
    running.stop().await;
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test]
async fn deferred_jobs_wait_for_their_time_late_ones_are_held_and_crontab_jobs_get_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.sh"), "#!/bin/sh\ncat\n").unwrap();
    std::fs::write(dir.path().join("in.txt"), "hello\n").unwrap();
    let conf = dir.path().join("ap.conf");
    std::fs::write(&conf, "PERIODIC_EXPR_INTERVAL = 1\n").unwrap();
    let mut a = args(dir.path());
    a.config = Some(conf);
    let running: Running = start(&a).await.unwrap();
    let mut c = connect_as(a.socket.clone(), None).await;
    let now = unix_now();
    // Due in 3 s, matched up to 100 s before: offered now, started on its time. Due in
    // 100 s with no preparation time: not offered yet. Its window passed long ago: held.
    // (Each its own autocluster, so the claim takes no other.)
    let mut clusters = Vec::new();
    for extra in [
        format!(
            "DeferralTime = {}\nDeferralPrepTime = 100\nDeferralWindow = 60",
            now + 3
        ),
        format!(
            "DeferralTime = {}\nDeferralPrepTime = 0\nRequestCpus = 2",
            now + 100
        ),
        format!(
            "DeferralTime = {}\nDeferralWindow = 10\nRequestCpus = 3",
            now - 100
        ),
    ] {
        clusters.push(submit(&mut c, dir.path(), 1, &extra).await);
    }
    let [early, later, late] = clusters[..] else {
        unreachable!()
    };
    // Every hour at minute 0: its DeferralTime is the next top of the hour.
    let cron = submit(&mut c, dir.path(), 1, "CronMinute = \"0\"\nRequestCpus = 4").await;
    let q = query(&mut c, &format!("ClusterId == {cron}"), false).await;
    let t = q[0].eval_attr("DeferralTime").as_int().unwrap();
    assert!(t > now && t <= now + 3660 && t % 60 == 0, "{t}");
    let mut leader = as_leader(&running).await;
    let idle = idle_jobs(&mut leader).await;
    let offered: Vec<i64> = idle
        .iter()
        .map(|a| {
            classad::parse_ad(a)
                .unwrap()
                .eval_attr("ClusterId")
                .as_int()
                .unwrap()
        })
        .collect();
    assert_eq!(offered, [early]);
    let (node, addr) = fake_node().await;
    let grant = |job: String| slot_grant(&addr, &job, "grant-claim");
    let r = deliver(
        &mut leader,
        2,
        1,
        vec![grant(format!("{early}.0")), grant(format!("{later}.0"))],
    )
    .await;
    assert!(r.results[0].accepted, "{:?}", r.results);
    assert!(r.results[1].error.contains("deferred"), "{:?}", r.results);
    let seen = node.0.clone();
    until("the slot to be claimed", || {
        !seen.lock().unwrap().claims.is_empty()
    })
    .await;
    // Claimed at once, activated only at its DeferralTime.
    assert!(seen.lock().unwrap().activations.is_empty());
    until("the deferred job to be activated", || {
        !seen.lock().unwrap().activations.is_empty()
    })
    .await;
    assert!(unix_now() >= now + 3);
    until("the late job to be held", || {
        let st = running.schedd.lock();
        st.queue
            .get(aerie_node::schedd::job::JobId::new(late, 0))
            .is_some_and(|a| a.eval_attr("JobStatus").as_int() == Some(5))
    })
    .await;
    let held = query(&mut c, &format!("ClusterId == {late}"), false).await;
    assert_eq!(
        held[0].eval_attr("HoldReason").as_str(),
        Some("Job missed deferred execution time")
    );
    assert_eq!(held[0].eval_attr("HoldReasonCode").as_int(), Some(20));
    until("the deferred job to complete", || {
        let st = running.schedd.lock();
        st.queue
            .get(aerie_node::schedd::job::JobId::new(early, 0))
            .is_none()
    })
    .await;
    let h = query(&mut c, &format!("ClusterId == {early}"), true).await;
    assert_eq!(h[0].eval_attr("JobStatus").as_int(), Some(4));
    assert!(h[0].eval_attr("JobStartDate").as_int().unwrap() >= now + 3);
    drop((c, leader));
    running.stop().await;
}
