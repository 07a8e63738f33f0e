//! Security against a live 3-CM cluster: who may connect, and what each identity may do.
//!
//! Every client here is built from a certificate of the test pool (or of another pool, or none)
//! and calls the CMs' real services: plaintext and wrong-CA clients are refused at the
//! handshake, a client that expects a CM refuses a server that is not one, each role may call
//! exactly its levels, and the commands only the leader writes are refused from an admin.
use aerie_core::accountant::{AccountantCommand, Usage};
use aerie_core::state::{Command, Request};
use aerie_proto::admin::{self as pb, admin_client::AdminClient};
use aerie_proto::collector::{
    collector_client::CollectorClient, DigestRequest, QueryFormat, QueryRequest, QueryTextRequest,
};
use aerie_security::{Role, Transport};
use aerie_tests::*;
use std::path::Path;
use std::time::Duration;
use tonic::transport::Channel;

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const CMCTL: &str = env!("CARGO_BIN_EXE_aerie-cmctl");

fn now() -> i64 {
    unix_now()
}

/// A channel to the CM at `addr` presenting `name`'s certificate from `dir`.
fn channel_as(dir: &Path, name: &str, addr: &str, role: Role) -> Channel {
    let t = Transport::load(dir, name, now()).expect("load a test certificate");
    t.endpoint(addr, role)
        .expect("endpoint")
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(5))
        .connect_lazy()
}

fn write_req(cmd: Command) -> pb::WriteRequest {
    pb::WriteRequest {
        command_json: serde_json::to_string(&Request::new(cmd)).unwrap(),
        forwarded: false,
    }
}

fn set_factor(name: &str, v: f64) -> Command {
    Command::Accountant(AccountantCommand::SetFactor {
        name: name.into(),
        value: v,
    })
}

async fn started() -> (Cluster, String) {
    let c = Cluster::start(BIN.into(), 3, &[]).expect("start the cluster");
    wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("a leader");
    let addr = c.addr(1);
    (c, addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_wrong_ca_and_impostor_connections_are_refused() {
    let (_c, addr) = started().await;
    let pool = test_pool();

    // Plaintext: the server speaks only TLS.
    let plain = Transport::Insecure
        .endpoint(&addr, Role::Cm)
        .unwrap()
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(5))
        .connect_lazy();
    let e = AdminClient::new(plain)
        .status(pb::StatusRequest {})
        .await
        .expect_err("a plaintext client must be refused");
    assert_ne!(e.code(), tonic::Code::Ok);

    // A certificate of another pool's CA: the server does not trust it (and it does not
    // trust the server).
    let other = tempfile::tempdir().unwrap();
    aerie_security::pki::init(
        other.path(),
        "other",
        &aerie_security::pki::default_holders(1, &[]),
        5,
    )
    .unwrap();
    let e = AdminClient::new(channel_as(other.path(), "admin", &addr, Role::Cm))
        .status(pb::StatusRequest {})
        .await
        .expect_err("a client of another CA must be refused");
    assert_ne!(e.code(), tonic::Code::Ok);

    // A client expecting an execute node refuses the CM (its certificate is not one), so a
    // stolen node certificate could not pose as a CM to nodes either.
    let e = AdminClient::new(channel_as(pool, "admin", &addr, Role::Execute))
        .status(pb::StatusRequest {})
        .await
        .expect_err("a server without the expected role must be refused");
    assert_ne!(e.code(), tonic::Code::Ok);

    // The pool's own admin certificate works.
    let ok = AdminClient::new(channel_as(pool, "admin", &addr, Role::Cm))
        .status(pb::StatusRequest {})
        .await
        .expect("the admin reads the status");
    assert_eq!(ok.into_inner().id, 1, "node 1 answered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_identity_may_do_what_its_level_allows_and_no_more() {
    let (_c, addr) = started().await;
    let pool = test_pool();
    let admin = || AdminClient::new(channel_as(pool, "admin", &addr, Role::Cm));
    let node = || AdminClient::new(channel_as(pool, "exec1", &addr, Role::Cm));

    // ADMINISTRATOR: an admin changes a factor; an execute node may not.
    let r = admin()
        .write(write_req(set_factor("alice@pool", 500.0)))
        .await
        .expect("the admin writes")
        .into_inner();
    assert!(r.ok, "{}", r.error);
    let e = node()
        .write(write_req(set_factor("alice@pool", 1.0)))
        .await
        .expect_err("an execute node may not change priorities");
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    for part in ["exec1@execute", "ADMINISTRATOR"] {
        assert!(e.message().contains(part), "{:?} lacks {part}", e.message());
    }

    // Internal commands: not even an admin may tick the ledger or record a cycle.
    let tick = Command::Accountant(AccountantCommand::Tick {
        now: now() + 10 * 365 * 86_400,
        usage: Vec::<Usage>::new(),
    });
    let e = admin()
        .write(write_req(tick))
        .await
        .expect_err("a Tick from outside the CMs must be refused");
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    assert!(e.message().contains("only the leader"), "{}", e.message());

    // READ: anyone in the pool queries the collector; only CMs call Digest and Raft.
    let q = QueryRequest {
        ad_type: "Any".into(),
        constraint: String::new(),
        projection: vec![],
        absent: false,
        limit: 0,
    };
    CollectorClient::new(channel_as(pool, "exec1", &addr, Role::Cm))
        .query(q)
        .await
        .expect("an execute node may read");
    let e = CollectorClient::new(channel_as(pool, "admin", &addr, Role::Cm))
        .digest(DigestRequest::default())
        .await
        .expect_err("Digest is for CMs only");
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    assert!(
        e.message().contains("only central managers"),
        "{}",
        e.message()
    );

    // ADVERTISE_STARTD: a CM's certificate may not advertise ads into another CM.
    let e = CollectorClient::new(channel_as(pool, "cm2", &addr, Role::Cm))
        .advertise(aerie_proto::collector::AdBatch::default())
        .await
        .expect_err("a CM may not advertise");
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cmctl_without_credentials_says_how_to_get_them() {
    let (_c, addr) = started().await;
    let out = std::process::Command::new(CMCTL)
        .args(["cluster", "status"])
        .env("AERIE_CMS", &addr)
        .env_remove("AERIE_CREDENTIALS")
        .output()
        .expect("run cmctl");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    // Without a /etc/aerie/credentials on this machine, the message names the way out.
    if !Path::new(aerie_security::transport::SYSTEM_CREDENTIALS).exists() {
        assert!(err.contains("AERIE_CREDENTIALS"), "{err}");
        assert!(err.contains("aerie-cm security init"), "{err}");
    }
}

/// The private attributes of a slot ad (its claim capability) never leave the CMs through any
/// query path: collector queries (plain, projected, constrained, streamed, rendered as text,
/// -absent), the
/// replicated absent ads and the whole state over the admin API, `cmctl status -long`, and
/// the CMs' logs. Only CM peers see them (relay and digest), which the refusals above cover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_attributes_leave_the_cms_by_no_query_path() {
    const SECRET: &str = "c4p4b1l1ty-0f-th3-sl0t";
    let config = "ABSENT_REQUIREMENTS = Absentable =?= true\nABSENT_EXPIRE_ADS_AFTER = 0\n";
    let c = Cluster::start_with_config(daemon_bin(BIN), 3, &[], config).expect("start");
    // All three CMs members first: CM 2 takes the ads, and a CM not yet admitted has no
    // leader to hand its absent ads to.
    wait_formed(&c.running(), Duration::from_secs(20))
        .await
        .expect("leader");
    let addr = c.addr(2);
    let ad = |name: &str, extra: &str| aerie_proto::collector::Ad {
        text: format!(
            "MyType = \"Machine\"\nName = \"{name}\"\nMachine = \"{}\"\n\
             MyAddress = \"<10.9.0.1:9618>\"\nState = \"Claimed\"\nActivity = \"Busy\"\n\
             ClaimId = \"<10.9.0.1:9618>#{SECRET}\"\nCapability = \"{SECRET}\"\n\
             _condor_privSecret = \"{SECRET}\"\nTransferKey = \"{SECRET}\"\n{extra}",
            name.split('@').nth(1).unwrap_or("host")
        ),
    };
    let admin = || CollectorClient::new(channel_as(test_pool(), "admin", &addr, Role::Cm));
    let sent = admin()
        .advertise(aerie_proto::collector::AdBatch {
            ads: vec![
                ad("slot1@live", ""),
                ad("slot1@gone", "Absentable = true\nClassAdLifetime = 2\n"),
            ],
        })
        .await
        .expect("advertise")
        .into_inner();
    assert_eq!(sent.accepted, 2, "{sent:?}");

    // The absent ad is committed through Raft by the leader once its lifetime passes (a few
    // seconds alone; the deadline is for a machine running the whole suite at once).
    eventually(
        "slot1@gone stored as absent",
        Duration::from_secs(60),
        || {
            let a = addr.clone();
            async move {
                let ads = query(&a, aerie_core::admin::AdsQuery, true).await?;
                Ok(ads
                    .values()
                    .any(|recs| recs.keys().any(|k| k.contains("slot1@gone")))
                    .then_some(()))
            }
        },
    )
    .await
    .expect("absent ad");

    let mut seen = Vec::new();
    for (absent, projection, constraint) in [
        (false, vec![], ""),
        (false, vec!["ClaimId".to_string(), "Capability".into()], ""),
        (
            false,
            vec![],
            "ClaimId =!= undefined || Capability =!= undefined",
        ),
        (true, vec![], ""),
    ] {
        for ad_type in ["Machine", "Any"] {
            let q = QueryRequest {
                ad_type: ad_type.into(),
                constraint: constraint.into(),
                projection: projection.clone(),
                absent,
                limit: 0,
            };
            let r = admin().query(q.clone()).await.expect("query").into_inner();
            seen.push((format!("Query {ad_type} {q:?}"), r.ads.join("\n")));
            let mut s = admin()
                .query_stream(q.clone())
                .await
                .expect("stream")
                .into_inner();
            let mut text = String::new();
            while let Some(chunk) = s.message().await.expect("chunk") {
                text.push_str(&chunk.ads.join("\n"));
            }
            seen.push((format!("QueryStream {ad_type} {q:?}"), text));
        }
    }
    // The text the CMs render for cmctl (-long, and -af naming the private attributes).
    let private = [
        "ClaimId",
        "Capability",
        "_condor_privSecret",
        "TransferKey",
        "Name",
    ];
    for (format, projection) in [
        (QueryFormat::Long, vec![]),
        (QueryFormat::Autoformat, private.map(String::from).to_vec()),
    ] {
        for absent in [false, true] {
            let q = QueryTextRequest {
                query: Some(QueryRequest {
                    ad_type: "Any".into(),
                    projection: projection.clone(),
                    absent,
                    ..Default::default()
                }),
                format: format.into(),
            };
            let mut s = admin()
                .query_text(q.clone())
                .await
                .expect("text")
                .into_inner();
            let mut text = Vec::new();
            while let Some(chunk) = s.message().await.expect("chunk") {
                text.extend(chunk.text);
            }
            let text = String::from_utf8_lossy(&text).into_owned();
            assert!(text.contains("slot1@"), "QueryText {q:?}: {text}");
            seen.push((format!("QueryText {q:?}"), text));
        }
    }
    let ads = query(&addr, aerie_core::admin::AdsQuery, true)
        .await
        .expect("ads");
    seen.push(("AdsQuery".into(), format!("{ads:?}")));
    let state = query(&addr, aerie_core::admin::StateQuery, true)
        .await
        .expect("state");
    seen.push(("StateQuery".into(), format!("{state:?}")));
    let (code, out, err) = run_cmctl(
        CMCTL,
        std::slice::from_ref(&addr),
        &["status", "-long"],
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("slot1@live"), "{out}");
    seen.push(("cmctl status -long".into(), out));
    let (_, out, _) = run_cmctl(
        CMCTL,
        std::slice::from_ref(&addr),
        &["status", "-absent", "-long"],
        None,
    );
    seen.push(("cmctl status -absent -long".into(), out));
    for id in c.ids() {
        seen.push((format!("log of CM {id}"), c.log(id)));
    }
    for (path, text) in &seen {
        assert!(
            !text.contains(SECRET),
            "{path} shows a private attribute:\n{text}"
        );
    }
    // And the queries did see the ads (the test would pass vacuously otherwise).
    assert!(seen[0].1.contains("slot1@live"), "{}", seen[0].1);
    assert!(
        seen[12].1.contains("slot1@gone"),
        "{}: {}",
        seen[12].0,
        seen[12].1
    );
}
