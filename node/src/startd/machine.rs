//! What the execute machine has, as HTCondor's startd detects it: cores, memory, the free disk
//! of the execute directory, the platform (`Arch`, `OpSys`, `OpSysAndVer`...), the load average
//! and the keyboard and console idle times.
//!
//! The rules follow HTCondor 23.9.6's `src/condor_sysapi` (`arch.cpp` for the platform names,
//! `phys_mem.cpp`, `free_fs_blocks.cpp`, `load_avg.cpp`, `idle_time.cpp`) and
//! `src/condor_startd.V6/ResAttributes.cpp` (`MachAttributes`). Each rule is a pure function of
//! the raw readings ([`Readings`], [`IdleReadings`]) so the tests give exact inputs; only
//! [`read`], [`read_load_avg`] and [`read_idle`] touch `/proc`, `/etc`, `/dev` and the file
//! system, and they hand their readings to the pure part.
use std::path::Path;

/// What the platform is, with HTCondor's names for it (`sysapi_condor_arch`,
/// `sysapi_opsys*`, `sysapi_utsname*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Platform {
    /// `Arch`: `X86_64`, `INTEL`, `PPC64`..., or what `uname -m` says for others (`aarch64`).
    pub arch: String,
    /// `OpSys`: `LINUX`, or the kernel name upper-cased elsewhere.
    pub opsys: String,
    /// `OpSysAndVer`: the distribution name and major version, e.g. `Debian13`, `RedHat9`.
    pub opsys_and_ver: String,
    /// `OpSysLegacy`: `LINUX`.
    pub opsys_legacy: String,
    /// `OpSysName` (also `OpSysShortName`): the distribution (`Debian`, `Ubuntu`, `RedHat`...),
    /// `LINUX` when none is recognised.
    pub opsys_name: String,
    /// `OpSysLongName`: the first line of `/etc/issue` (or the first of HTCondor's other
    /// candidates naming a distribution), trimmed, e.g. `Debian GNU/Linux 13`.
    pub opsys_long_name: String,
    /// `OpSysMajorVer`: the first number in the long name.
    pub opsys_major_ver: i64,
    /// `OpSysVer`: major * 100 + up to two digits of minor (`13` -> 1300, `9.4` -> 904).
    pub opsys_ver: i64,
    /// `UtsnameSysname`, `UtsnameNodename`, `UtsnameRelease`, `UtsnameVersion`,
    /// `UtsnameMachine`: `uname(2)` as is.
    pub utsname: Utsname,
}

/// The five fields of `uname(2)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Utsname {
    /// `sysname`, e.g. `Linux`.
    pub sysname: String,
    /// `nodename`, the host name.
    pub nodename: String,
    /// `release`, the kernel release.
    pub release: String,
    /// `version`, the kernel build.
    pub version: String,
    /// `machine`, e.g. `x86_64`.
    pub machine: String,
}

/// Everything [`Machine::from_readings`] needs, as read from the machine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Readings {
    /// `uname(2)`.
    pub utsname: Utsname,
    /// The first line of each file HTCondor looks in for the distribution, in its order:
    /// `/etc/issue`, `/etc/redhat-release`, `/etc/system-release`, `/etc/issue.net`
    /// (`None` for a file that does not exist).
    pub issue_lines: Vec<Option<String>>,
    /// `/etc/os-release`, whose `PRETTY_NAME` is used when no issue file names a distribution.
    pub os_release: Option<String>,
    /// Cores the process may use (HTCondor's `DETECTED_CPUS`, hyperthreads counted as
    /// `COUNT_HYPERTHREAD_CPUS` defaults).
    pub cpus: u32,
    /// `/proc/meminfo`.
    pub meminfo: String,
    /// The memory limit of the process's cgroup in bytes, if it has one.
    pub cgroup_memory_limit: Option<u64>,
    /// Free space of the execute directory's file system available to unprivileged users,
    /// in KiB, or `None` when it could not be read.
    pub execute_free_kib: Option<u64>,
}

/// The machine as detected, before the configuration (`NUM_CPUS`, `MEMORY`, `DISK`,
/// `RESERVED_*`) has its say; that is [`super::layout`]'s job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// The platform names.
    pub platform: Platform,
    /// Detected cores (`DETECTED_CPUS`).
    pub cpus: u32,
    /// Detected memory in MiB (`DETECTED_MEMORY`): `MemTotal`, capped by the cgroup limit.
    pub memory_mib: i64,
    /// Free disk of the execute directory in KiB, before `RESERVED_DISK`; 0 when unknown.
    pub disk_kib: i64,
}

/// Why the machine could not be read.
#[derive(Debug, PartialEq, Eq)]
pub struct MachineError(pub String);

impl std::fmt::Display for MachineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for MachineError {}

impl Machine {
    /// The machine from raw readings. Fails only when the memory cannot be found (HTCondor's
    /// startd refuses to start then too, asking for `MEMORY` to be set).
    pub fn from_readings(r: &Readings) -> Result<Machine, MachineError> {
        let total_kib = meminfo_total_kib(&r.meminfo).ok_or_else(|| {
            MachineError(
                "/proc/meminfo has no MemTotal line; set MEMORY in the configuration".into(),
            )
        })?;
        let mut memory_mib = (total_kib / 1024) as i64;
        if let Some(limit) = r.cgroup_memory_limit.filter(|&l| l > 0 && l < (1 << 60)) {
            memory_mib = memory_mib.min((limit / (1024 * 1024)) as i64);
        }
        Ok(Machine {
            platform: platform(&r.utsname, &r.issue_lines, r.os_release.as_deref()),
            cpus: r.cpus.max(1),
            memory_mib,
            disk_kib: r.execute_free_kib.map(|k| k as i64).unwrap_or(0),
        })
    }
}

fn meminfo_total_kib(meminfo: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// HTCondor's `Arch` for a `uname -m` (`sysapi_translate_arch`).
pub fn condor_arch(machine: &str) -> String {
    match machine {
        "i86pc" | "i686" | "i586" | "i486" | "i386" => "INTEL",
        "ia64" => "IA64",
        "x86_64" | "amd64" => "X86_64",
        "Power Macintosh" | "ppc" | "ppc32" => "PPC",
        "ppc64" => "PPC64",
        other => other,
    }
    .to_string()
}

/// The distribution HTCondor recognises in a line (`sysapi_find_linux_name`), `LINUX` if none.
pub fn linux_name(info: &str) -> &'static str {
    let lc = info.to_ascii_lowercase();
    let has = |s: &str| lc.contains(s);
    if has("red") && has("hat") {
        "RedHat"
    } else if has("fedora") {
        "Fedora"
    } else if has("ubuntu") {
        "Ubuntu"
    } else if has("debian") {
        "Debian"
    } else if has("scientific") && has("cern") {
        "SLCern"
    } else if has("scientific") && has("slf") {
        "SLFermi"
    } else if has("scientific") {
        "SL"
    } else if has("centos") {
        "CentOS"
    } else if has("rocky") {
        "Rocky"
    } else if has("almalinux") {
        "AlmaLinux"
    } else if has("amazon linux") {
        "AmazonLinux"
    } else if has("opensuse") {
        "openSUSE"
    } else if has("suse") {
        "SUSE"
    } else {
        "LINUX"
    }
}

/// An issue file's first line as HTCondor trims it: trailing blanks, and the `\n` / `\l`
/// escapes Debian and Ubuntu end `/etc/issue` with.
fn trim_issue(line: &str) -> String {
    let mut s = line.trim_end().to_string();
    while s.len() > 2 && (s.ends_with("\\n") || s.ends_with("\\l")) {
        s.truncate(s.len() - 2);
        s = s.trim_end().to_string();
    }
    s
}

/// The long name (`sysapi_get_linux_info`): the first issue line naming a distribution, else
/// `/etc/os-release`'s `PRETTY_NAME`, else `Unknown`.
fn linux_long_name(issue_lines: &[Option<String>], os_release: Option<&str>) -> String {
    for line in issue_lines.iter().flatten() {
        let t = trim_issue(line);
        if linux_name(&t) != "LINUX" {
            return t;
        }
    }
    os_release
        .and_then(|text| {
            text.lines()
                .find(|l| l.contains("PRETTY_NAME"))
                .and_then(|l| {
                    let (_, rest) = l.split_once('"')?;
                    Some(rest.split('"').next().unwrap_or(rest).to_string())
                })
        })
        .unwrap_or_else(|| "Unknown".into())
}

/// The digits after the first run of non-digits (`sysapi_find_major_version`).
fn major_version(long: &str) -> i64 {
    if long == "Unknown" {
        return 0;
    }
    let digits: String = long
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().unwrap_or(0)
}

/// major * 100 + up to two minor digits (`sysapi_translate_opsys_version`).
fn opsys_version(long: &str) -> i64 {
    if long == "Unknown" {
        return 0;
    }
    let rest: String = long.chars().skip_while(|c| !c.is_ascii_digit()).collect();
    let major_len = rest.chars().take_while(|c| c.is_ascii_digit()).count();
    let major: i64 = rest[..major_len].parse().unwrap_or(0);
    let mut minor = 0;
    if let Some(after) = rest[major_len..].strip_prefix('.') {
        for c in after.chars().take(2).take_while(|c| c.is_ascii_digit()) {
            minor = minor * 10 + c.to_digit(10).unwrap_or(0) as i64;
        }
    }
    major * 100 + minor
}

/// The platform names from `uname(2)` and the distribution files (`init_arch`).
pub fn platform(u: &Utsname, issue_lines: &[Option<String>], os_release: Option<&str>) -> Platform {
    let (opsys, legacy, name, long) = if u.sysname.eq_ignore_ascii_case("linux") {
        let long = linux_long_name(issue_lines, os_release);
        let name = linux_name(&long).to_string();
        ("LINUX".to_string(), "LINUX".to_string(), name, long)
    } else {
        // Other Unixes: "<sysname> <release>" names everything.
        let long = format!("{} {}", u.sysname, u.release);
        let up = u.sysname.to_ascii_uppercase();
        (up.clone(), up, u.sysname.clone(), long)
    };
    let major = major_version(&long);
    let opsys_ver = opsys_version(&long);
    Platform {
        arch: condor_arch(&u.machine),
        opsys,
        opsys_and_ver: format!("{name}{major}"),
        opsys_legacy: legacy,
        opsys_name: name,
        opsys_long_name: long,
        opsys_major_ver: major,
        opsys_ver,
        utsname: u.clone(),
    }
}

/// The 1-minute load average from `/proc/loadavg` text (`load_avg.cpp`).
pub fn parse_load_avg(text: &str) -> Result<f64, MachineError> {
    text.split_whitespace()
        .next()
        .and_then(|f| f.parse::<f64>().ok())
        .ok_or_else(|| {
            MachineError(format!(
                "/proc/loadavg does not start with a number: {text:?}"
            ))
        })
}

/// One device's access time, as `dev_idle_time` sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceAtime {
    /// The device's last access, Unix seconds.
    At(i64),
    /// The device could not be stat'ed, or is one of `/dev/null`'s kind (same major number):
    /// it counts as last used at the epoch, i.e. idle for ever.
    Never,
}

/// The raw readings behind `KeyboardIdle` and `ConsoleIdle` on Linux (`idle_time.cpp`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleReadings {
    /// When they were read, Unix seconds.
    pub now: i64,
    /// The terminals of logged-in users (utmp `USER_PROCESS` entries, or every `/dev/tty*`
    /// and `/dev/pts/*` when `STARTD_HAS_BAD_UTMP`); `None` when utmp could not be read,
    /// which HTCondor counts as infinitely idle (`INT_MAX`).
    pub ttys: Option<Vec<DeviceAtime>>,
    /// The `CONSOLE_DEVICES` (`mouse`, `console` by default); empty when the knob is unset,
    /// and then there is no `ConsoleIdle`.
    pub console: Vec<DeviceAtime>,
    /// The last X event condor_kbdd reported, Unix seconds, 0 when none.
    pub last_x_event: i64,
}

/// The machine's keyboard and console idle times in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Idle {
    /// `KeyboardIdle`: since any terminal, console device or X input was used.
    pub keyboard: i64,
    /// `ConsoleIdle`: since a console device or X input was used; `None` when it cannot be
    /// known (no console devices and no condor_kbdd), and the ad then has none.
    pub console: Option<i64>,
}

fn device_idle(d: &DeviceAtime, now: i64) -> i64 {
    match d {
        DeviceAtime::At(t) if *t > now => 0,
        DeviceAtime::At(t) => now - t,
        DeviceAtime::Never => now,
    }
}

/// `calc_idle_time_cpp` for Unix: the least idle terminal, lowered by the console devices and
/// condor_kbdd's last X event.
pub fn idle_times(r: &IdleReadings) -> Idle {
    const INT_MAX: i64 = i32::MAX as i64;
    let now = r.now;
    let mut keyboard = match &r.ttys {
        None => INT_MAX,
        Some(ttys) => ttys
            .iter()
            .map(|d| device_idle(d, now))
            .min()
            .unwrap_or(INT_MAX),
    };
    let mut console: Option<i64> = None;
    for d in &r.console {
        let idle = device_idle(d, now);
        keyboard = keyboard.min(idle);
        console = Some(console.map_or(idle, |c| c.min(idle)));
    }
    keyboard = keyboard.min(now - r.last_x_event);
    if r.last_x_event != 0 {
        let x = now - r.last_x_event;
        console = Some(console.map_or(x, |c| c.min(x)));
    }
    if let Some(c) = console {
        keyboard = keyboard.min(c);
    }
    Idle { keyboard, console }
}

/// The names of the terminals with a logged-in user in a Linux utmp file (`struct utmp`,
/// 384 bytes a record: `ut_type` at 0, `ut_line[32]` at 8; `USER_PROCESS` is 7).
pub fn utmp_user_lines(bytes: &[u8]) -> Vec<String> {
    const RECORD: usize = 384;
    const USER_PROCESS: i16 = 7;
    bytes
        .chunks_exact(RECORD)
        .filter(|r| i16::from_ne_bytes([r[0], r[1]]) == USER_PROCESS)
        .filter_map(|r| {
            let line = &r[8..40];
            let end = line.iter().position(|&b| b == 0).unwrap_or(line.len());
            let s = String::from_utf8_lossy(&line[..end]).into_owned();
            (!s.is_empty()).then_some(s)
        })
        .collect()
}

// ---- The thin part: reads the machine. ----

fn first_line(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|t| t.lines().next().unwrap_or("Unknown").to_string())
}

/// The memory limit of this process's cgroup (v2), in bytes.
fn cgroup_memory_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    let max = std::fs::read_to_string(format!("/sys/fs/cgroup{}/memory.max", path.trim())).ok()?;
    max.trim().parse().ok()
}

/// Free KiB of the file system holding `dir`, as an unprivileged user may use it.
pub fn free_kib(dir: &Path) -> Result<u64, MachineError> {
    let st = nix::sys::statvfs::statvfs(dir).map_err(|e| {
        MachineError(format!(
            "cannot statvfs the execute directory {}: {e}",
            dir.display()
        ))
    })?;
    Ok(st.blocks_available() as u64 * st.fragment_size() as u64 / 1024)
}

/// Reads the machine: `uname(2)`, the distribution files, the cores this process may use,
/// `/proc/meminfo`, the cgroup memory limit and the free space of `execute_dir`. A missing
/// execute directory is logged and gives no disk (the startd then has nothing to give slots
/// unless `DISK` is set).
pub fn read(execute_dir: &Path) -> Result<Readings, MachineError> {
    let u = nix::sys::utsname::uname().map_err(|e| MachineError(format!("uname: {e}")))?;
    let s = |o: &std::ffi::OsStr| o.to_string_lossy().into_owned();
    let utsname = Utsname {
        sysname: s(u.sysname()),
        nodename: s(u.nodename()),
        release: s(u.release()),
        version: s(u.version()),
        machine: s(u.machine()),
    };
    let issue_lines = [
        "/etc/issue",
        "/etc/redhat-release",
        "/etc/system-release",
        "/etc/issue.net",
    ]
    .iter()
    .map(|p| first_line(p))
    .collect();
    let meminfo = std::fs::read_to_string("/proc/meminfo")
        .map_err(|e| MachineError(format!("cannot read /proc/meminfo: {e}")))?;
    let execute_free_kib = match free_kib(execute_dir) {
        Ok(k) => Some(k),
        Err(e) => {
            tracing::warn!(error = %e, "no disk detected");
            None
        }
    };
    Ok(Readings {
        utsname,
        issue_lines,
        os_release: std::fs::read_to_string("/etc/os-release").ok(),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        meminfo,
        cgroup_memory_limit: cgroup_memory_limit(),
        execute_free_kib,
    })
}

/// The 1-minute load average of the machine now.
pub fn read_load_avg() -> Result<f64, MachineError> {
    let text = std::fs::read_to_string("/proc/loadavg")
        .map_err(|e| MachineError(format!("cannot read /proc/loadavg: {e}")))?;
    parse_load_avg(&text)
}

/// The access time of `/dev/<name>`, or [`DeviceAtime::Never`] when it cannot be stat'ed or
/// shares `/dev/null`'s major device number.
fn device_atime(name: &str, null_major: Option<u64>) -> DeviceAtime {
    use std::os::unix::fs::MetadataExt;
    if name.is_empty() || name.starts_with("unix:") {
        return DeviceAtime::Never;
    }
    match std::fs::metadata(Path::new("/dev").join(name)) {
        Ok(m) if m.atime() != 0 && null_major != Some(nix::sys::stat::major(m.rdev())) => {
            DeviceAtime::At(m.atime())
        }
        _ => DeviceAtime::Never,
    }
}

/// Reads the terminals and console devices now (`CONSOLE_DEVICES` and `STARTD_HAS_BAD_UTMP`
/// as configured); `last_x_event` is condor_kbdd's, 0 without one.
pub fn read_idle(
    now: i64,
    console_devices: &[String],
    bad_utmp: bool,
    last_x_event: i64,
) -> IdleReadings {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let null_major = std::fs::metadata("/dev/null")
        .ok()
        .filter(|m| m.file_type().is_char_device() || m.file_type().is_block_device())
        .map(|m| nix::sys::stat::major(m.rdev()));
    let ttys = if bad_utmp {
        let mut names: Vec<String> = std::fs::read_dir("/dev")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with("tty") || n.starts_with("pty"))
            .collect();
        names.extend(
            std::fs::read_dir("/dev/pts")
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .map(|n| format!("pts/{n}")),
        );
        Some(names)
    } else {
        std::fs::read("/var/run/utmp")
            .or_else(|_| std::fs::read("/var/adm/utmp"))
            .ok()
            .map(|b| utmp_user_lines(&b))
    };
    IdleReadings {
        now,
        ttys: ttys.map(|names| names.iter().map(|n| device_atime(n, null_major)).collect()),
        console: console_devices
            .iter()
            .map(|d| device_atime(d, null_major))
            .collect(),
        last_x_event,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn debian() -> Readings {
        Readings {
            utsname: Utsname {
                sysname: "Linux".into(),
                nodename: "vm".into(),
                release: "6.18.44".into(),
                version: "#1 SMP".into(),
                machine: "x86_64".into(),
            },
            issue_lines: vec![Some("Debian GNU/Linux 13 \\n \\l".into()), None, None, None],
            os_release: None,
            cpus: 2,
            meminfo: "MemTotal:       24684084 kB\nMemFree: 1 kB\n".into(),
            cgroup_memory_limit: None,
            execute_free_kib: Some(1_000_000),
        }
    }

    #[test]
    fn debian_is_named_as_the_reference_startd_names_it() {
        // The reference startd in the Debian 13 chroot advertised exactly these.
        let m = Machine::from_readings(&debian()).unwrap();
        let p = &m.platform;
        assert_eq!(p.arch, "X86_64");
        assert_eq!(p.opsys, "LINUX");
        assert_eq!(p.opsys_and_ver, "Debian13");
        assert_eq!(p.opsys_legacy, "LINUX");
        assert_eq!(p.opsys_name, "Debian");
        assert_eq!(p.opsys_long_name, "Debian GNU/Linux 13");
        assert_eq!(p.opsys_major_ver, 13);
        assert_eq!(p.opsys_ver, 1300);
        // 24684084 kB is 24105.55 MiB: DetectedMemory = 24105.
        assert_eq!(m.memory_mib, 24105);
        assert_eq!(m.cpus, 2);
        assert_eq!(m.disk_kib, 1_000_000);
    }

    #[test]
    fn os_release_names_the_distribution_when_no_issue_file_does() {
        let mut r = debian();
        r.issue_lines = vec![Some("Welcome \\n".into()), None];
        r.os_release =
            Some("NAME=\"Rocky Linux\"\nPRETTY_NAME=\"Rocky Linux 9.4 (Blue Onyx)\"\n".into());
        let p = Machine::from_readings(&r).unwrap().platform;
        assert_eq!(p.opsys_long_name, "Rocky Linux 9.4 (Blue Onyx)");
        assert_eq!(p.opsys_and_ver, "Rocky9");
        assert_eq!(p.opsys_ver, 904);
        r.issue_lines = vec![];
        r.os_release = None;
        let p = Machine::from_readings(&r).unwrap().platform;
        assert_eq!((p.opsys_name.as_str(), p.opsys_ver), ("LINUX", 0));
        assert_eq!(p.opsys_long_name, "Unknown");
    }

    #[test]
    fn the_cgroup_limit_caps_memory_and_a_missing_memtotal_is_an_error() {
        let mut r = debian();
        r.cgroup_memory_limit = Some(4096 * 1024 * 1024);
        assert_eq!(Machine::from_readings(&r).unwrap().memory_mib, 4096);
        r.cgroup_memory_limit = Some(u64::MAX); // "max": no limit
        assert_eq!(Machine::from_readings(&r).unwrap().memory_mib, 24105);
        r.meminfo = "MemFree: 3 kB\n".into();
        let e = Machine::from_readings(&r).unwrap_err();
        assert!(e.0.contains("MemTotal") && e.0.contains("MEMORY"), "{e}");
    }

    #[test]
    fn arch_names_follow_sysapi_translate_arch() {
        assert_eq!(condor_arch("i686"), "INTEL");
        assert_eq!(condor_arch("amd64"), "X86_64");
        assert_eq!(condor_arch("ppc64"), "PPC64");
        assert_eq!(condor_arch("aarch64"), "aarch64");
    }

    #[test]
    fn load_average_is_the_first_field() {
        assert_eq!(parse_load_avg("1.60 0.90 0.50 2/300 1234\n").unwrap(), 1.6);
        assert!(parse_load_avg("").is_err());
    }

    fn idle(ttys: Option<Vec<DeviceAtime>>, console: Vec<DeviceAtime>, x: i64) -> Idle {
        idle_times(&IdleReadings {
            now: 10_000,
            ttys,
            console,
            last_x_event: x,
        })
    }

    #[test]
    fn keyboard_idle_is_the_least_idle_terminal_or_console_device() {
        use DeviceAtime::*;
        // No utmp, no console devices and no condor_kbdd: idle since the epoch (HTCondor
        // lowers the infinite tty idle time to `now - last_x_event` with no X event), and no
        // ConsoleIdle.
        assert_eq!(
            idle(None, vec![], 0),
            Idle {
                keyboard: 10_000,
                console: None
            }
        );
        // No logged-in user, console devices: both are the console's idle time.
        assert_eq!(
            idle(Some(vec![]), vec![At(9_000), Never], 0),
            Idle {
                keyboard: 1_000,
                console: Some(1_000)
            }
        );
        // A busy terminal lowers KeyboardIdle only.
        assert_eq!(
            idle(Some(vec![At(9_990), At(5_000)]), vec![At(9_000)], 0),
            Idle {
                keyboard: 10,
                console: Some(1_000)
            }
        );
        // condor_kbdd's X event lowers both; a clock in the future counts as just used.
        assert_eq!(
            idle(Some(vec![At(20_000)]), vec![], 9_500),
            Idle {
                keyboard: 0,
                console: Some(500)
            }
        );
    }

    #[test]
    fn this_host_reads() {
        // The thin part on the machine running the tests: whatever it has, it reads.
        let r = read(Path::new("/")).unwrap();
        let m = Machine::from_readings(&r).unwrap();
        assert!(m.cpus >= 1 && m.memory_mib > 0 && m.disk_kib > 0, "{m:?}");
        assert!(!m.platform.arch.is_empty());
        assert!(read_load_avg().unwrap() >= 0.0);
        let i = idle_times(&read_idle(r_now(), &["console".into()], false, 0));
        assert!(i.keyboard >= 0);
    }

    fn r_now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    }

    #[test]
    fn utmp_records_of_logged_in_users_name_their_terminals() {
        let rec = |ty: i16, line: &str| {
            let mut r = vec![0u8; 384];
            r[..2].copy_from_slice(&ty.to_ne_bytes());
            r[8..8 + line.len()].copy_from_slice(line.as_bytes());
            r
        };
        let mut bytes = rec(2, "~"); // BOOT_TIME
        bytes.extend(rec(7, "pts/0"));
        bytes.extend(rec(8, "pts/1")); // DEAD_PROCESS
        bytes.extend(rec(7, "tty1"));
        bytes.extend([0u8; 100]); // a torn record is ignored
        assert_eq!(utmp_user_lines(&bytes), vec!["pts/0", "tty1"]);
    }
}
