//! Identity binds what may be sent, and what one identity may cost (issue 16, items 4 and 8),
//! against a live CM: a startd with `exec1`'s certificate advertises its own slot but not
//! `exec2`'s, and cannot invalidate `exec2`'s; an admin may send any ad; a caller over its
//! per-identity budget of ads or admin writes is refused with `RESOURCE_EXHAUSTED` naming the
//! knob and the caller, while other callers go on.
use aerie_core::accountant::AccountantCommand;
use aerie_core::state::{Command, Request};
use aerie_proto::admin::{self as apb, admin_client::AdminClient};
use aerie_proto::collector::{collector_client::CollectorClient, Ad, AdBatch, InvalidateRequest};
use aerie_security::{Role, Transport};
use aerie_tests::*;
use std::time::Duration;
use tonic::transport::Channel;

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");

/// A channel to the CM at `addr` presenting `name`'s test certificate.
fn channel_as(name: &str, addr: &str) -> Channel {
    let t = Transport::load(test_pool(), name, unix_now()).expect("load a test certificate");
    t.endpoint(addr, Role::Cm)
        .expect("endpoint")
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(5))
        .connect_lazy()
}

fn slot(n: u32, machine: &str) -> Ad {
    Ad {
        text: format!(
            "MyType = \"Machine\"\nName = \"slot{n}@{machine}\"\nMachine = \"{machine}\"\n\
             MyAddress = \"<127.0.0.1:9618>\"\nState = \"Unclaimed\"\nActivity = \"Idle\"\n\
             Cpus = 1\nMemory = 1024\nClassAdLifetime = 600\n"
        ),
    }
}

fn batch(ads: Vec<Ad>) -> AdBatch {
    AdBatch { ads }
}

async fn machines(addr: &str) -> Vec<String> {
    collector_ads(addr, "Machine", "", &[])
        .await
        .unwrap_or_default()
        .into_iter()
        .filter_map(|a| a.eval_attr("Name").as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_startd_sends_only_its_own_ads_and_every_identity_has_a_budget() {
    test_pool();
    let c = Cluster::start(
        BIN.into(),
        1,
        &[
            ("AERIE_COLLECTOR_MAX_UPDATE_RATE_PER_IDENTITY", "20"),
            ("AERIE_ADMIN_MAX_WRITE_RATE_PER_IDENTITY", "0.01"),
        ],
    )
    .expect("start a CM");
    wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("a leader");
    let addr = c.addr(1);
    let exec1 = || CollectorClient::new(channel_as("exec1", &addr));
    let exec2 = || CollectorClient::new(channel_as("exec2", &addr));

    // Each startd advertises its own slot; exec1's ad for exec2's machine is refused, naming
    // the attribute and both identities, and counted in the summary.
    let s = exec2()
        .advertise(batch(vec![slot(1, "exec2")]))
        .await
        .expect("exec2 advertises")
        .into_inner();
    assert_eq!((s.accepted, s.rejected), (1, 0), "{s:?}");
    let s = exec1()
        .advertise(batch(vec![slot(1, "exec1"), slot(2, "exec2")]))
        .await
        .expect("exec1 advertises")
        .into_inner();
    assert_eq!((s.accepted, s.rejected), (1, 1), "{s:?}");
    let e = &s.results[1].error;
    assert!(
        e.contains("Machine") && e.contains("exec2") && e.contains("exec1@execute"),
        "{e}"
    );
    let names = machines(&addr).await;
    assert!(names.contains(&"slot1@exec1".to_string()), "{names:?}");
    assert!(!names.contains(&"slot2@exec2".to_string()), "{names:?}");

    // exec1 cannot invalidate exec2's slot; exec2 can.
    let inv = |name: &str| InvalidateRequest {
        ad_type: "Machine".into(),
        name: name.into(),
        addr: String::new(),
    };
    let e = exec1()
        .invalidate(inv("slot1@exec2"))
        .await
        .expect_err("exec1 may not invalidate exec2's slot");
    assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
    assert!(e.message().contains("exec2"), "{}", e.message());
    assert!(machines(&addr).await.contains(&"slot1@exec2".to_string()));
    let r = exec2()
        .invalidate(inv("slot1@exec2"))
        .await
        .expect("exec2 invalidates its own slot")
        .into_inner();
    assert!(r.found);

    // An admin may advertise any machine's ads (cmctl advertise, condor_advertise).
    let s = CollectorClient::new(channel_as("admin", &addr))
        .advertise(batch(vec![slot(3, "exec3")]))
        .await
        .expect("the admin advertises")
        .into_inner();
    assert_eq!(s.accepted, 1, "{s:?}");

    // Over its budget of ads (20 a second), exec3 is refused naming the knob and itself;
    // exec1 is not slowed by exec3.
    let many: Vec<Ad> = (0..30).map(|i| slot(i, "exec3")).collect();
    let s = CollectorClient::new(channel_as("exec3", &addr))
        .advertise(batch(many))
        .await
        .expect("a partly accepted batch")
        .into_inner();
    assert!(s.accepted <= 21 && s.rejected >= 9, "{s:?}");
    let over = s.results.iter().find(|r| !r.ok).unwrap();
    assert!(
        over.error
            .contains("AERIE_COLLECTOR_MAX_UPDATE_RATE_PER_IDENTITY")
            && over.error.contains("exec3@"),
        "{}",
        over.error
    );
    let e = CollectorClient::new(channel_as("exec3", &addr))
        .advertise(batch(vec![slot(99, "exec3")]))
        .await
        .expect_err("a batch refused whole for the budget is an error");
    assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e:?}");
    let s = exec1()
        .advertise(batch(vec![slot(1, "exec1")]))
        .await
        .expect("exec1 is not slowed by exec3")
        .into_inner();
    assert_eq!(s.accepted, 1, "{s:?}");

    // Admin writes: a burst of two, then RESOURCE_EXHAUSTED naming the knob and the admin.
    let write = || apb::WriteRequest {
        command_json: serde_json::to_string(&Request::new(Command::Accountant(
            AccountantCommand::SetFactor {
                name: "alice@pool".into(),
                value: 10.0,
            },
        )))
        .unwrap(),
        forwarded: false,
    };
    let admin = || AdminClient::new(channel_as("admin", &addr));
    for _ in 0..2 {
        let r = admin().write(write()).await.expect("within the burst");
        assert!(r.into_inner().ok);
    }
    let e = admin()
        .write(write())
        .await
        .expect_err("over the admin write budget");
    assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e:?}");
    assert!(
        e.message()
            .contains("AERIE_ADMIN_MAX_WRITE_RATE_PER_IDENTITY")
            && e.message().contains("admin@admin"),
        "{}",
        e.message()
    );
}
