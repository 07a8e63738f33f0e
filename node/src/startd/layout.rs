//! The slots a startd makes of its machine, from the HTCondor configuration an admin already
//! has: `NUM_CPUS`, `MEMORY` (less `RESERVED_MEMORY`) and `DISK` (or the execute directory's
//! free space less `RESERVED_DISK`) over the detected machine; then `NUM_SLOTS_TYPE_<N>` slots
//! of each `SLOT_TYPE_<N>` (or, with no types, `NUM_SLOTS` slots of the default type 0: one
//! partitionable slot holding everything unless `SLOT_TYPE_0_PARTITIONABLE` is false, then one
//! static slot per core); `SLOT_TYPE_<N>_PARTITIONABLE`, the consumption policy
//! (`CONSUMPTION_POLICY`, `CONSUMPTION_CPUS/MEMORY/DISK`), `SLOT_WEIGHT`, `START`, `RANK` and
//! `STARTD_ATTRS`, each of which a `SLOT_TYPE_<N>_` prefixed knob overrides for its type.
//!
//! The arithmetic is HTCondor 23.9.6's (`src/condor_startd.V6/slot_builder.cpp`:
//! `countTypes`, `parse_share_value`, `compute_local_resource`, `buildSlotRequest`;
//! `ResAttributes.cpp`: `AvailAttributes::decrement`, `computeAutoShares`;
//! `Resource.cpp`: `SlotType::param`, `publish_static`), checked against the real startd's ads
//! in `node/tests/fixtures/startd/`:
//! * a share is a percentage (`25%`), a fraction (`1/4`), `auto`, or an absolute amount (cpus,
//!   MiB, KiB) read as C's `atof` reads it, so `mem=1g` is 1 MiB, as 23.9.6 has it;
//! * `SLOT_TYPE_<N>` is either one bare share for everything (`1/4`) or `name=share` items
//!   (`cpus=`, `mem=`/`memory=`/`ram=`, `disk=`, `swap=`, any prefix of them), separated by
//!   commas when there is one, else by blanks; a bare share among items is the default for
//!   the resources not named;
//! * explicit shares are taken in slot order; what is left is then divided evenly among the
//!   slots whose share is `auto` (cores as a real number, memory and disk in whole units);
//! * a slot that does not fit is an error naming the type and what was left (HTCondor's
//!   startd exits with "Ran out of system resources").
//!
//! Left out: swap (`swap=` is parsed and not divided: Aerie advertises no `VirtualMemory`),
//! custom machine resources (GPUs), `minimal` shares, backfill slots, per-slot `EXECUTE`
//! directories.
use super::machine::Machine;
use super::Resources;
use aerie_config::{Config, ConfigError, Origin};

/// HTCondor's `Consumption<Resource>` expressions of a partitionable slot with a consumption
/// policy: how much of the slot a match consumes (the negotiator evaluates them against the
/// job).
#[derive(Clone, Debug, PartialEq)]
pub struct Consumption {
    /// `ConsumptionCpus`.
    pub cpus: String,
    /// `ConsumptionMemory`.
    pub memory: String,
    /// `ConsumptionDisk`.
    pub disk: String,
}

/// One slot the startd advertises at start (dynamic slots come later, from claims).
#[derive(Clone, Debug, PartialEq)]
pub struct SlotSpec {
    /// `SlotID`: 1, 2, ... in type order (type 0 first, then 1, 2, ...).
    pub id: u32,
    /// `SlotTypeID`: the N of `SLOT_TYPE_<N>` (0 for the default type).
    pub type_id: u32,
    /// A partitionable slot (`SLOT_TYPE_<N>_PARTITIONABLE`).
    pub partitionable: bool,
    /// What the slot holds. Cores may be fractional (4 cores in 3 auto slots); the ad shows
    /// them as HTCondor does, `(int)(cpus + 0.1)`.
    pub resources: Resources,
    /// The consumption policy of a partitionable slot that has one.
    pub consumption: Option<Consumption>,
    /// `SlotWeight`'s expression (`SLOT_WEIGHT`, default `Cpus`).
    pub slot_weight: String,
    /// `Start`'s expression (`START`, default `true`).
    pub start: String,
    /// `Rank`'s expression (`RANK`, default `0.0`).
    pub rank: String,
    /// The `STARTD_ATTRS` (and `SLOT<n>_STARTD_ATTRS`) the slot advertises: name and
    /// expression, in the order listed; attributes with no value are left out.
    pub startd_attrs: Vec<(String, String)>,
}

impl SlotSpec {
    /// A slot with HTCondor's defaults for everything but its resources (the simulator's).
    pub fn plain(id: u32, partitionable: bool, resources: Resources) -> SlotSpec {
        SlotSpec {
            id,
            type_id: 0,
            partitionable,
            resources,
            consumption: None,
            slot_weight: "Cpus".into(),
            start: "true".into(),
            rank: "0.0".into(),
            startd_attrs: Vec::new(),
        }
    }
}

/// The machine's slots and totals.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// `TotalCpus` (`NUM_CPUS`), `TotalMemory` (`MEMORY` less `RESERVED_MEMORY`, MiB) and
    /// `TotalDisk` (KiB: all of the execute file system's free space when a slot takes an
    /// `auto` share of disk, else what the slots took).
    pub total: Resources,
    /// The slots, by `SlotID`.
    pub slots: Vec<SlotSpec>,
}

/// A share of one resource (`parse_share_value`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Share {
    /// What is left after the explicit shares, divided among the `auto` slots.
    Auto,
    /// A part of the machine's total, 0..=1.
    Part(f64),
    /// An amount in the resource's unit.
    Amount(f64),
}

/// C's `atof`: the longest leading decimal number, 0 when none.
fn atof(s: &str) -> f64 {
    let s = s.trim_start();
    let b = s.as_bytes();
    let mut end = 0;
    let mut seen_dot = false;
    let mut seen_digit = false;
    if end < b.len() && (b[end] == b'+' || b[end] == b'-') {
        end += 1;
    }
    while end < b.len() {
        match b[end] {
            b'0'..=b'9' => seen_digit = true,
            b'.' if !seen_dot => seen_dot = true,
            _ => break,
        }
        end += 1;
    }
    if !seen_digit {
        return 0.0;
    }
    s[..end].parse().unwrap_or(0.0)
}

fn parse_share(v: &str) -> Result<Share, String> {
    let v = v.trim();
    if v.eq_ignore_ascii_case("auto") || v.eq_ignore_ascii_case("automatic") {
        return Ok(Share::Auto);
    }
    if v.eq_ignore_ascii_case("min") || v.eq_ignore_ascii_case("minimal") {
        return Err(format!(
            "the share {v:?} (fractional cores) is not supported"
        ));
    }
    if v.contains('%') {
        return Ok(Share::Part(atof(v) / 100.0));
    }
    if let Some((_, denom)) = v.split_once('/') {
        let d = atof(denom);
        if d <= 0.0 {
            return Err(format!("{v:?} is not a fraction"));
        }
        return Ok(Share::Part(atof(v) / d));
    }
    Ok(Share::Amount(atof(v)))
}

/// What one `SLOT_TYPE_<N>` asks for, before `auto` is resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Request {
    cpus: Option<f64>,
    memory: Option<i64>,
    disk: Option<i64>,
}

/// `compute_local_resource`: a part of `total`, or an amount, and never below `min`.
fn local(total: f64, share: Share, min: f64) -> Option<f64> {
    match share {
        Share::Auto => None,
        Share::Part(p) => Some((p * total).max(min)),
        Share::Amount(a) => Some(a.max(min)),
    }
}

/// `buildSlotRequest` for one type's description.
fn slot_request(desc: &str, total: &Resources) -> Result<Request, String> {
    let delims: &[char] = if desc.contains('\n') {
        &['\n']
    } else if desc.contains(',') {
        &[',', '\r', '\n']
    } else {
        &[',', ' ', '\t', '\r', '\n']
    };
    let mut default = Share::Auto;
    let (mut cpus, mut mem, mut disk) = (None, None, None);
    for item in desc.split(delims).map(str::trim).filter(|s| !s.is_empty()) {
        let Some((name, value)) = item.split_once('=') else {
            let share = parse_share(item)?;
            if matches!(share, Share::Amount(_)) || matches!(share, Share::Part(p) if p > 1.0) {
                return Err(format!(
                    "{item:?} is invalid: give a percentage (like \"25%\"), a fraction (like \
                     \"1/4\"), or list the resources (like \"cpus=1, mem=25%, disk=25%\")"
                ));
            }
            default = share;
            continue;
        };
        let value = value.split(':').next().unwrap_or("").trim();
        if value.is_empty() {
            return Err(format!("{item:?} has no share"));
        }
        let share = parse_share(value)?;
        let name = name.trim().to_ascii_lowercase();
        let prefix_of = |full: &str| full.starts_with(name.as_str());
        if prefix_of("cpus") {
            cpus = Some(share);
        } else if prefix_of("ram") || prefix_of("memory") {
            mem = Some(share);
        } else if prefix_of("swap") || prefix_of("virtualmemory") {
            // Parsed for the error it may hold; swap is not divided.
        } else if prefix_of("disk") {
            disk = Some(share);
        } else if matches!(share, Share::Amount(a) if a > 0.0) {
            return Err(format!("unknown resource {:?}", name));
        }
    }
    // Resources named get HTCondor's minimums (1 core, 1 MiB, 1 MiB of disk); the others
    // take the default share with a minimum of 1 core and 1 MiB and no minimum of disk.
    Ok(Request {
        cpus: match cpus {
            Some(s) => local(total.cpus, s, 1.0),
            None => local(total.cpus, default, 1.0),
        },
        memory: match mem {
            Some(s) => local(total.memory, s, 1.0),
            None => local(total.memory, default, 1.0),
        }
        .map(|m| m as i64),
        disk: match disk {
            Some(s) => local(total.disk, s, 1024.0),
            None => local(total.disk, default, 0.0),
        }
        .map(|d| d as i64),
    })
}

/// The error for `knob`, with where it was set.
fn knob_error(cfg: &Config, knob: &str, message: impl Into<String>) -> ConfigError {
    let mut e = ConfigError::new(message).with_knob(knob);
    if let Some(Origin::File(l)) = cfg.lookup(knob).map(|f| f.origin) {
        e.location = Some(l);
    }
    e
}

/// `SLOT_TYPE_<type_id>_<name>`, else `<name>` (HTCondor's `SlotType::param`), expanded;
/// `None` when neither is set (in the files or HTCondor's defaults) or it is empty. Aerie's
/// catalogue defaults are not consulted: the startd's own defaults apply (`RANK` unset is a
/// `Rank` of 0.0, not the catalogue's 0).
fn type_param(
    cfg: &Config,
    type_id: u32,
    name: &str,
) -> Result<Option<(String, String)>, ConfigError> {
    let typed = format!("SLOT_TYPE_{type_id}_{name}");
    if let Some(v) = cfg.expanded(&typed)? {
        return Ok(Some((typed, v)));
    }
    Ok(cfg.expanded(name)?.map(|v| (name.to_string(), v)))
}

/// An expression knob's text, checked to parse.
fn expr_param(cfg: &Config, type_id: u32, name: &str) -> Result<Option<String>, ConfigError> {
    let Some((knob, text)) = type_param(cfg, type_id, name)? else {
        return Ok(None);
    };
    classad::parse_expr(&text).map_err(|e| {
        knob_error(
            cfg,
            &knob,
            format!("'{text}' is not a valid ClassAd expression ({e})"),
        )
    })?;
    Ok(Some(text))
}

fn bool_param(cfg: &Config, type_id: u32, name: &str, default: bool) -> Result<bool, ConfigError> {
    let typed = format!("SLOT_TYPE_{type_id}_{name}");
    if cfg.expanded(&typed)?.is_some() {
        return Ok(cfg.bool(&typed)?.unwrap_or(default));
    }
    Ok(cfg.bool(name)?.unwrap_or(default))
}

/// The configuration with the detected machine put in place of the host's own
/// `DETECTED_CPUS`/`DETECTED_CORES`/`DETECTED_MEMORY` (an admin's own values stay), so
/// `NUM_CPUS = $(DETECTED_CPUS)` and friends see the machine being laid out.
fn with_detected(cfg: &Config, m: &Machine) -> Result<Config, ConfigError> {
    let mut c = cfg.clone();
    for (name, value) in [
        ("DETECTED_CPUS", m.cpus.to_string()),
        ("DETECTED_CORES", m.cpus.to_string()),
        ("DETECTED_MEMORY", m.memory_mib.to_string()),
    ] {
        let admin_set = matches!(
            c.lookup(name).map(|f| f.origin),
            Some(Origin::File(_) | Origin::Environment | Origin::Override)
        );
        if !admin_set {
            c.set(name, &value)?;
        }
    }
    Ok(c)
}

/// The machine's totals after the configuration's overrides (`MachAttributes`, `sysapi`).
fn totals(cfg: &Config, m: &Machine) -> Result<(Resources, bool), ConfigError> {
    let cpus = cfg.int_or("NUM_CPUS", m.cpus as i64)?;
    if cpus < 1 {
        return Err(knob_error(
            cfg,
            "NUM_CPUS",
            format!("NUM_CPUS is {cpus}; it must be at least 1"),
        ));
    }
    let memory = match cfg.int("MEMORY")? {
        Some(v) if v > 0 => v,
        _ => m.memory_mib,
    };
    let memory = (memory - cfg.int_or("RESERVED_MEMORY", 0)?).max(0);
    if memory <= 0 {
        return Err(knob_error(
            cfg,
            "RESERVED_MEMORY",
            "no memory is left for slots (MEMORY less RESERVED_MEMORY is not positive)",
        ));
    }
    // DISK, when it is an integer, is the disk (KiB) as is; otherwise the free space less
    // RESERVED_DISK (MiB).
    let (disk, from_config) = match cfg
        .expanded("DISK")?
        .and_then(|v| v.trim().parse::<i64>().ok())
    {
        Some(d) => (d, true),
        None => (
            (m.disk_kib - cfg.int_or("RESERVED_DISK", 0)? * 1024).max(0),
            false,
        ),
    };
    Ok((
        Resources {
            cpus: cpus as f64,
            memory: memory as f64,
            disk: disk as f64,
        },
        from_config,
    ))
}

/// How many slots of each type (`countTypes`): index 0 is the default type.
fn counts(cfg: &Config, max_types: u32, num_cpus: i64) -> Result<(Vec<i64>, bool), ConfigError> {
    for bad in ["SLOT_TYPE_0", "NUM_SLOTS_TYPE_0"] {
        if cfg.expanded(bad)?.is_some() {
            return Err(knob_error(
                cfg,
                bad,
                format!("{bad} cannot be set: type 0 is HTCondor's default slot type"),
            ));
        }
    }
    let mut n = vec![0i64; max_types as usize];
    for (t, count) in n.iter_mut().enumerate().skip(1) {
        let knob = format!("NUM_SLOTS_TYPE_{t}");
        *count = cfg.int_or(&knob, 0)?;
        if *count < 0 {
            return Err(knob_error(cfg, &knob, format!("{knob} is negative")));
        }
    }
    if n.iter().any(|&c| c > 0) {
        return Ok((n, false));
    }
    let pslot = cfg.bool_or("SLOT_TYPE_0_PARTITIONABLE", true)?;
    n[0] = cfg.int_or("NUM_SLOTS", if pslot { 1 } else { num_cpus })?;
    Ok((n, pslot))
}

/// Lays out the slots of machine `m` as configuration `cfg` says. Errors name the knob and
/// where it was set.
pub fn layout(cfg: &Config, m: &Machine) -> Result<Layout, ConfigError> {
    let cfg = &with_detected(cfg, m)?;
    let (total, disk_from_config) = totals(cfg, m)?;
    let max_types = cfg.int_or("MAX_SLOT_TYPES", 10)?.clamp(1, 1000) as u32;
    let (counts, type0_partitionable) = counts(cfg, max_types, total.cpus as i64)?;

    // First pass: explicit shares, in slot order (AvailAttributes::decrement).
    let mut avail_cpus = total.cpus as i64;
    let mut avail_mem = total.memory as i64;
    let mut avail_disk = total.disk as i64;
    let (mut auto_cpus, mut auto_mem, mut auto_disk) = (0i64, 0i64, 0i64);
    let mut planned: Vec<(u32, Request)> = Vec::new();
    for (t, &count) in counts.iter().enumerate() {
        let t = t as u32;
        let (knob, desc) = if t == 0 {
            ("SLOT_TYPE_0".to_string(), "auto".to_string())
        } else {
            let knob = format!("SLOT_TYPE_{t}");
            let desc = cfg.expanded(&knob)?.unwrap_or_default();
            (knob, desc)
        };
        for j in 0..count {
            let req = slot_request(&desc, &total)
                .map_err(|e| knob_error(cfg, &knob, format!("slot type {t}: {e}")))?;
            let new_cpus = req
                .cpus
                .map_or(avail_cpus, |c| (avail_cpus as f64 - c) as i64);
            let new_mem = avail_mem - req.memory.unwrap_or(0);
            let new_disk = avail_disk - req.disk.unwrap_or(0);
            if new_cpus < 0 || new_mem < 0 || new_disk < 0 {
                return Err(knob_error(
                    cfg,
                    &knob,
                    format!(
                        "cannot allocate slot {} of type {t}: it asks for {} cpus, {} MiB \
                         memory, {} KiB disk; left: {avail_cpus} cpus, {avail_mem} MiB, \
                         {avail_disk} KiB",
                        j + 1,
                        req.cpus.map_or("auto".into(), |c| c.to_string()),
                        req.memory.map_or("auto".into(), |c| c.to_string()),
                        req.disk.map_or("auto".into(), |c| c.to_string()),
                    ),
                ));
            }
            (avail_cpus, avail_mem, avail_disk) = (new_cpus, new_mem, new_disk);
            auto_cpus += req.cpus.is_none() as i64;
            auto_mem += req.memory.is_none() as i64;
            auto_disk += req.disk.is_none() as i64;
            planned.push((t, req));
        }
    }

    // Second pass: `auto` shares get an even part of what is left (computeAutoShares).
    let mut slots = Vec::with_capacity(planned.len());
    for (i, (t, req)) in planned.into_iter().enumerate() {
        let id = i as u32 + 1;
        let short = |what: &str| {
            knob_error(
                cfg,
                &format!("SLOT_TYPE_{t}"),
                format!("slot {id} (type {t}): too little {what} is left for its auto share"),
            )
        };
        let cpus = match req.cpus {
            Some(c) => c,
            None => {
                let c = avail_cpus as f64 / auto_cpus as f64;
                if c < 1.0 {
                    return Err(short("cpus"));
                }
                c
            }
        };
        let memory = match req.memory {
            Some(m) => m,
            None => {
                let m = avail_mem / auto_mem;
                if m < 1 {
                    return Err(short("memory"));
                }
                m
            }
        };
        let disk = match req.disk {
            Some(d) => d,
            None => {
                let d = avail_disk / auto_disk;
                if d <= 0 {
                    return Err(short("disk"));
                }
                d
            }
        };
        let partitionable = if t == 0 {
            type0_partitionable
        } else {
            bool_param(cfg, t, "PARTITIONABLE", false)?
        };
        slots.push(slot_spec(
            cfg,
            id,
            t,
            partitionable,
            Resources {
                cpus,
                memory: memory as f64,
                disk: disk as f64,
            },
        )?);
    }
    // TotalDisk: everything when an auto share took the rest, else what was provisioned.
    let total_disk = if auto_disk > 0 || disk_from_config {
        total.disk
    } else {
        total.disk - avail_disk as f64
    };
    Ok(Layout {
        total: Resources {
            disk: total_disk,
            ..total
        },
        slots,
    })
}

/// The policy and attributes of slot `id` of type `t`.
fn slot_spec(
    cfg: &Config,
    id: u32,
    t: u32,
    partitionable: bool,
    resources: Resources,
) -> Result<SlotSpec, ConfigError> {
    let consumption = if partitionable && bool_param(cfg, t, "CONSUMPTION_POLICY", false)? {
        let one = |asset: &str| -> Result<String, ConfigError> {
            Ok(
                expr_param(cfg, t, &format!("CONSUMPTION_{asset}"))?.unwrap_or_else(|| {
                    let a = &asset[..1].to_string();
                    let name = format!("Request{a}{}", asset[1..].to_ascii_lowercase());
                    format!("ifthenelse(target.{name} =?= undefined, 0, target.{name})")
                }),
            )
        };
        Some(Consumption {
            cpus: one("CPUS")?,
            memory: one("MEMORY")?,
            disk: one("DISK")?,
        })
    } else {
        None
    };
    // STARTD_ATTRS (or SLOT_TYPE_<t>_STARTD_ATTRS), then SLOT<id>_STARTD_ATTRS; each value is
    // SLOT<id>_<attr>, else <attr>, each with its SLOT_TYPE_<t>_ override.
    let mut names: Vec<String> = Vec::new();
    for list in [
        type_param(cfg, t, "STARTD_ATTRS")?.map(|(_, v)| v),
        type_param(cfg, t, &format!("SLOT{id}_STARTD_ATTRS"))?.map(|(_, v)| v),
    ]
    .into_iter()
    .flatten()
    {
        names.extend(aerie_config::split_list(&list));
    }
    let mut startd_attrs: Vec<(String, String)> = Vec::new();
    for name in names {
        let value = match expr_param(cfg, t, &format!("SLOT{id}_{name}"))? {
            Some(v) => Some(v),
            None => expr_param(cfg, t, &name)?,
        };
        if let Some(v) = value {
            startd_attrs.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
            startd_attrs.push((name, v));
        }
    }
    Ok(SlotSpec {
        id,
        type_id: t,
        partitionable,
        resources,
        consumption,
        slot_weight: expr_param(cfg, t, "SLOT_WEIGHT")?.unwrap_or_else(|| "Cpus".into()),
        start: expr_param(cfg, t, "START")?.unwrap_or_else(|| "true".into()),
        rank: expr_param(cfg, t, "RANK")?.unwrap_or_else(|| "0.0".into()),
        startd_attrs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::startd::machine::{Platform, Utsname};
    use aerie_config::LoadOptions;

    pub(crate) fn machine() -> Machine {
        Machine {
            platform: Platform {
                arch: "X86_64".into(),
                opsys: "LINUX".into(),
                opsys_and_ver: "Debian13".into(),
                opsys_legacy: "LINUX".into(),
                opsys_name: "Debian".into(),
                opsys_long_name: "Debian GNU/Linux 13".into(),
                opsys_major_ver: 13,
                opsys_ver: 1300,
                utsname: Utsname::default(),
            },
            cpus: 8,
            memory_mib: 16000,
            disk_kib: 50_000_000,
        }
    }

    fn cfg(text: &str) -> Config {
        let opts = LoadOptions {
            local_config: false,
            env_overrides: false,
            ..LoadOptions::for_subsystem("STARTD")
        };
        Config::parse_str(text, "test.conf", &opts).unwrap()
    }

    fn shape(l: &Layout) -> Vec<(u32, u32, bool, f64, f64, f64)> {
        l.slots
            .iter()
            .map(|s| {
                (
                    s.id,
                    s.type_id,
                    s.partitionable,
                    s.resources.cpus,
                    s.resources.memory,
                    s.resources.disk,
                )
            })
            .collect()
    }

    #[test]
    fn detection_fills_what_the_configuration_leaves_out() {
        let l = layout(&cfg(""), &machine()).unwrap();
        assert_eq!(shape(&l), vec![(1, 0, true, 8.0, 16000.0, 50_000_000.0)]);
        assert_eq!(l.total.cpus, 8.0);
        // NUM_CPUS in terms of the detected cores sees the machine given, not this host.
        let l = layout(
            &cfg("NUM_CPUS = $(DETECTED_CPUS) - 2\nRESERVED_DISK = 1000"),
            &machine(),
        )
        .unwrap();
        assert_eq!(l.total.cpus, 6.0);
        assert_eq!(l.total.disk, 50_000_000.0 - 1_024_000.0);
    }

    #[test]
    fn static_type_zero_gives_a_slot_per_core_with_even_shares() {
        let l = layout(
            &cfg("SLOT_TYPE_0_PARTITIONABLE = false\nNUM_CPUS = 3"),
            &machine(),
        )
        .unwrap();
        assert_eq!(l.slots.len(), 3);
        assert!(l
            .slots
            .iter()
            .all(|s| !s.partitionable && s.resources.cpus == 1.0));
        assert_eq!(l.slots[2].resources.memory, 5333.0);
    }

    #[test]
    fn shares_parse_as_htcondor_parses_them() {
        assert_eq!(parse_share("25%"), Ok(Share::Part(0.25)));
        assert_eq!(parse_share("1/4"), Ok(Share::Part(0.25)));
        assert_eq!(parse_share(" Auto "), Ok(Share::Auto));
        assert_eq!(parse_share("1g"), Ok(Share::Amount(1.0)));
        assert_eq!(parse_share("2.5"), Ok(Share::Amount(2.5)));
        assert!(parse_share("1/0").is_err());
        assert!(parse_share("minimal").is_err());
    }

    #[test]
    fn a_bare_share_is_the_default_for_resources_not_named() {
        let total = Resources {
            cpus: 8.0,
            memory: 16000.0,
            disk: 1000.0 * 1024.0,
        };
        let r = slot_request("c=2 50%", &total).unwrap();
        assert_eq!(r.cpus, Some(2.0));
        assert_eq!(r.memory, Some(8000));
        assert_eq!(r.disk, Some(512_000));
        // Commas, when present, are the only separators besides newlines.
        let r = slot_request("cpus = 1, memory = 100", &total).unwrap();
        assert_eq!((r.cpus, r.memory, r.disk), (Some(1.0), Some(100), None));
        assert!(slot_request("2", &total)
            .unwrap_err()
            .contains("percentage"));
        assert!(slot_request("gpus=1", &total)
            .unwrap_err()
            .contains("unknown resource"));
        assert_eq!(
            slot_request("gpus=0, cpus=1", &total).unwrap().cpus,
            Some(1.0)
        );
        assert!(slot_request("cpus=", &total)
            .unwrap_err()
            .contains("no share"));
    }

    #[test]
    fn overcommitted_types_are_an_error_naming_the_knob_and_line() {
        let e = layout(
            &cfg("NUM_SLOTS_TYPE_1 = 3\nSLOT_TYPE_1 = cpus=3, mem=100\n"),
            &machine(),
        )
        .unwrap_err();
        assert_eq!(e.knob.as_deref(), Some("SLOT_TYPE_1"));
        assert_eq!(e.location.as_ref().map(|l| l.line), Some(2));
        assert!(
            e.message.contains("cannot allocate slot 3 of type 1"),
            "{e}"
        );
        let e = layout(&cfg("SLOT_TYPE_0 = 1/2"), &machine()).unwrap_err();
        assert_eq!(e.knob.as_deref(), Some("SLOT_TYPE_0"));
        let e = layout(&cfg("MEMORY = 100\nRESERVED_MEMORY = 100"), &machine()).unwrap_err();
        assert!(e.message.contains("no memory"), "{e}");
        let e = layout(
            &cfg("NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 50%\nSTART = ((\n"),
            &machine(),
        )
        .unwrap_err();
        assert_eq!(e.knob.as_deref(), Some("START"));
    }

    #[test]
    fn per_type_knobs_override_the_global_ones() {
        let l = layout(
            &cfg(
                "NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 50%\nSLOT_TYPE_1_PARTITIONABLE = true\n\
                 NUM_SLOTS_TYPE_2 = 1\nSLOT_TYPE_2 = 50%\nSLOT_TYPE_2_PARTITIONABLE = true\n\
                 CONSUMPTION_POLICY = true\nSLOT_TYPE_2_CONSUMPTION_POLICY = false\n\
                 SLOT_TYPE_1_CONSUMPTION_DISK = 0\n\
                 SLOT_WEIGHT = Memory\nSLOT_TYPE_2_SLOT_WEIGHT = Cpus * 3\n\
                 STARTD_ATTRS = Site\nSite = \"a\"\nSLOT2_Site = \"b\"\nSLOT2_STARTD_ATTRS = Extra\n\
                 Extra = 1\n",
            ),
            &machine(),
        )
        .unwrap();
        let (a, b) = (&l.slots[0], &l.slots[1]);
        let c = a.consumption.as_ref().unwrap();
        assert_eq!(c.cpus, "quantize(target.RequestCpus,{1})");
        assert_eq!(c.disk, "0");
        assert!(b.consumption.is_none());
        assert_eq!(
            (a.slot_weight.as_str(), b.slot_weight.as_str()),
            ("Memory", "Cpus * 3")
        );
        assert_eq!(
            a.startd_attrs,
            vec![("Site".to_string(), "\"a\"".to_string())]
        );
        assert_eq!(
            b.startd_attrs,
            vec![
                ("Site".to_string(), "\"b\"".to_string()),
                ("Extra".to_string(), "1".to_string())
            ]
        );
        // Explicit disk shares only: TotalDisk is what the slots took.
        let l = layout(
            &cfg("NUM_SLOTS_TYPE_1 = 2\nSLOT_TYPE_1 = cpus=1, mem=10, disk=10%"),
            &machine(),
        )
        .unwrap();
        assert_eq!(l.total.disk, 10_000_000.0);
    }
}
