//! A job's CPU load, for the slot's `CondorLoadAvg`. Desktop policies compare it with the
//! machine's `LoadAvg` (`NonCondorLoadAvg = LoadAvg - CondorLoadAvg` is the owner's load:
//! seed 001's `UWCS_DESKTOP`), so counting a busy slot as a load of 1.0 whatever its job
//! does would make a job using four cores look like an owner using three.
//!
//! HTCondor's startd sums the CPU time of the job's process family every polling interval and
//! averages the rate over about a minute (`Resource::compute_condor_usage`,
//! `src/condor_startd.V6/Resource.cpp`, with `ProcFamily` usage from the procd). Here the
//! family is the job's process group (the starter starts every job in a group of its own), read
//! from `/proc/<pid>/stat`, and the rate is smoothed with a one-minute exponential average,
//! as the kernel's own one-minute load average is.
use std::collections::HashMap;
use std::fs;
use std::io;

/// Seconds over which [`LoadMeter`] averages (the one-minute load average's window).
pub const WINDOW_SECONDS: f64 = 60.0;

/// The CPU seconds (user and system) used so far by the live processes of every process
/// group, read in one pass over `/proc` (a node with many jobs reads it once per tick, not
/// once per job).
pub fn cpu_by_process_group() -> io::Result<HashMap<u32, f64>> {
    let ticks = clock_ticks_per_second();
    let mut total: HashMap<u32, u64> = HashMap::new();
    for entry in fs::read_dir("/proc")? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        // A process may exit between the listing and the read: skip it.
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((group, cpu)) = parse_stat(&stat) {
            let t = total.entry(group).or_default();
            *t = t.saturating_add(cpu);
        }
    }
    Ok(total
        .into_iter()
        .map(|(g, t)| (g, t as f64 / ticks))
        .collect())
}

/// From one `/proc/<pid>/stat` line: the process group and utime + stime in clock ticks.
/// The command name (field 2) is in parentheses and may hold spaces and parentheses itself,
/// so fields are counted from the last `)`.
pub fn parse_stat(line: &str) -> Option<(u32, u64)> {
    let rest = &line[line.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(3) ppid(4) pgrp(5) ... utime(14) stime(15), so pgrp is fields[2],
    // utime fields[11] and stime fields[12].
    let pgrp = fields.get(2)?.parse().ok()?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((pgrp, utime.saturating_add(stime)))
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a system constant.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// A job's CPU load: CPU seconds used per second, averaged over [`WINDOW_SECONDS`]. Pure:
/// the caller reads the clock and the CPU time.
#[derive(Clone, Debug, Default)]
pub struct LoadMeter {
    last: Option<(f64, f64)>,
    load: f64,
}

impl LoadMeter {
    /// Takes a sample: `cpu` seconds used in total at `at` seconds (any fixed origin); the
    /// load afterwards. The first sample only sets the starting point (load 0).
    pub fn sample(&mut self, at: f64, cpu: f64) -> f64 {
        if let Some((t0, c0)) = self.last {
            let dt = at - t0;
            if dt > 0.0 {
                let rate = ((cpu - c0) / dt).max(0.0);
                let keep = (-dt / WINDOW_SECONDS).exp();
                self.load = self.load * keep + rate * (1.0 - keep);
            }
        }
        self.last = Some((at, cpu));
        self.load
    }

    /// The load now.
    pub fn load(&self) -> f64 {
        self.load
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stat_line_is_read_past_a_command_name_with_spaces_and_parentheses() {
        let line = "4242 (my (odd) job) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 \
                    123 1000 10 18446744073709551615";
        assert_eq!(parse_stat(line), Some((4242, 300)));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S 0"), None);
    }

    #[test]
    fn a_job_using_two_cores_approaches_a_load_of_two_over_a_minute() {
        let mut m = LoadMeter::default();
        assert_eq!(m.sample(0.0, 0.0), 0.0);
        let mut load = 0.0;
        for s in 1..=300 {
            load = m.sample(s as f64, 2.0 * s as f64);
        }
        // Five windows on: within 1 % of the rate (1 - e^-5).
        assert!((load - 2.0).abs() < 0.02, "{load}");
        // After one minute of the same rate from idle it is about 63 % of the way there.
        let mut m = LoadMeter::default();
        m.sample(0.0, 0.0);
        for s in 1..=60 {
            load = m.sample(s as f64, 2.0 * s as f64);
        }
        assert!(
            (load - 2.0 * (1.0 - (-1.0f64).exp())).abs() < 0.02,
            "{load}"
        );
    }

    #[test]
    fn an_idle_job_decays_to_no_load_and_time_going_nowhere_changes_nothing() {
        let mut m = LoadMeter::default();
        m.sample(0.0, 0.0);
        for s in 1..=120 {
            m.sample(s as f64, s as f64);
        }
        let busy = m.load();
        assert_eq!(m.sample(120.0, 500.0), busy, "no time passed");
        let mut load = busy;
        for s in 121..=600 {
            load = m.sample(s as f64, 120.0);
        }
        assert!(load < 0.01 && busy > 0.8, "{busy} then {load}");
    }

    #[test]
    fn this_process_group_has_a_cpu_time() {
        // SAFETY: getpgrp only reads the calling process's group.
        let pgid = unsafe { libc::getpgrp() } as u32;
        let groups = cpu_by_process_group().unwrap();
        assert!(groups.contains_key(&pgid));
        assert!(!groups.contains_key(&(u32::MAX - 7)));
    }
}
