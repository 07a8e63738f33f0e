//! Read-only queries against the applied state (answered after the linearizability check).
use aerie_core::state::PoolState;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, Default)]
struct UserprioArgs {
    /// The caller's clock (Unix seconds) for age computations; defaults to the state's time.
    #[serde(default)]
    now: Option<i64>,
}

/// How many of the latest cycle records the "negotiator" query returns.
pub const NEGOTIATOR_STATUS_CYCLES: usize = 10;

/// Runs query `kind` with JSON `args`, returning JSON text.
pub fn run(state: &PoolState, kind: &str, args: &str) -> Result<String, String> {
    let v = match kind {
        "state" => serde_json::to_value(state).map_err(|e| format!("encoding state: {e}"))?,
        "userprio" => {
            let a: UserprioArgs = if args.trim().is_empty() {
                UserprioArgs::default()
            } else {
                serde_json::from_str(args).map_err(|e| format!("bad userprio arguments {args:?}: {e}"))?
            };
            let now = a.now.unwrap_or(state.now);
            json!({
                "now": now,
                "last_tick": state.accountant.last_tick(),
                "params": state.accountant.params(),
                "rows": state.accountant.userprio_rows(now),
                "groups": state.groups,
            })
        }
        "policy" => json!({
            "groups": state.groups,
            "limits": state.limits,
            "drains": state.drains,
        }),
        "ads" => json!(state.ads),
        "cycles" => json!(state.cycles),
        // The admin service adds "leader" (see AdminService::do_query).
        "negotiator" => json!({
            "paused": state.negotiator.paused,
            "cycle_requests": state.negotiator.cycle_requests,
            "cycles": state.cycles.iter().rev().take(NEGOTIATOR_STATUS_CYCLES).rev().collect::<Vec<_>>(),
        }),
        "summary" => json!({
            "applied_commands": state.applied_commands,
            "now": state.now,
            "submitters": state.accountant.records().count(),
            "groups": state.groups.len(),
            "limits": state.limits.len(),
        }),
        other => {
            return Err(format!(
                "bad value: unknown query {other:?} (known: state, userprio, policy, ads, cycles, negotiator, summary)"
            ))
        }
    };
    Ok(v.to_string())
}
