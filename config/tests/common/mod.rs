//! Access to the reference HTCondor 23.9.6 (a chroot, see scripts/reference.sh) for the
//! differential tests. Tests FAIL with a clear message when it is missing.
#![allow(dead_code)]
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The chroot holding the real HTCondor.
pub fn root() -> PathBuf {
    let dir = std::env::var("AERIE_REFERENCE_DIR")
        .unwrap_or_else(|_| "/var/lib/aerie-reference".to_string());
    let root = PathBuf::from(dir).join("htcondor-root");
    assert!(
        root.join("usr/bin/condor_config_val").exists(),
        "the reference HTCondor 23.9.6 is missing at {} (install it with scripts/reference.sh htcondor, \
         or point AERIE_REFERENCE_DIR at it)",
        root.display()
    );
    root
}

/// Fails, naming the cause, when the chroot's /proc is not mounted: HTCondor reads the
/// machine (NUM_CPUS, MEMORY...) from it, and without it its defaults differ from ours
/// ("NUM_CPUS: 0 vs 2") for no fault of either side.
pub fn require_proc() {
    let root = root();
    assert!(
        root.join("proc/self/status").exists(),
        "{}/proc is not mounted (scripts/test.sh unmounts it when it ends): run `scripts/reference.sh htcondor` to mount it again",
        root.display()
    );
}

/// A pair of scratch trees with the same files: one inside the chroot for HTCondor
/// (`/srv/config-diff/<name>` as it sees it), one on the host for Aerie. `@DIR@` in a file's
/// text stands for the tree's own directory, so includes work on both sides.
pub struct Scratch {
    /// HTCondor's tree, as a host path.
    pub theirs_host: PathBuf,
    /// HTCondor's tree, as HTCondor sees it.
    pub theirs: String,
    /// Aerie's tree.
    pub ours: PathBuf,
}

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let theirs = format!("/srv/config-diff/{name}");
        let theirs_host = root().join(theirs.trim_start_matches('/'));
        let ours =
            std::env::temp_dir().join(format!("aerie-config-diff-{}-{name}", std::process::id()));
        for d in [&theirs_host, &ours] {
            let _ = std::fs::remove_dir_all(d);
            std::fs::create_dir_all(d).expect("create scratch dir");
        }
        Scratch {
            theirs_host,
            theirs,
            ours,
        }
    }

    /// Writes a file into both trees.
    pub fn write(&self, rel: &str, text: &str) {
        for (dir, shown) in [
            (&self.theirs_host, self.theirs.clone()),
            (&self.ours, self.ours.display().to_string()),
        ] {
            let p = dir.join(rel);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).expect("mkdir");
            }
            std::fs::write(&p, text.replace("@DIR@", &shown)).expect("write config file");
        }
    }

    /// The file as HTCondor sees it.
    pub fn theirs_path(&self, rel: &str) -> String {
        format!("{}/{}", self.theirs, rel)
    }

    /// The file on our side.
    pub fn ours_path(&self, rel: &str) -> PathBuf {
        self.ours.join(rel)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.ours);
    }
}

/// Output of a condor_config_val run.
pub struct Run {
    pub ok: bool,
    /// Killed by a signal, or hung (HTCondor 23.9.6 crashes or loops on a few odd inputs).
    pub crashed: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs condor_config_val in the chroot with CONDOR_CONFIG set to `config` (a path inside it).
pub fn condor_config_val(config: &str, args: &[&str]) -> Run {
    let root = root();
    // HTCondor loops forever on a reference loop (A = $(B), B = $(A)): give it 20 s
    let out = Command::new("timeout")
        .arg("-s")
        .arg("KILL")
        .arg("20")
        .arg("chroot")
        .arg(&root)
        .arg("env")
        .arg(format!("CONDOR_CONFIG={config}"))
        .arg("condor_config_val")
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run chroot {} condor_config_val: {e} (tests need root)",
                root.display()
            )
        });
    Run {
        ok: out.status.success(),
        crashed: out.status.code().is_none_or(|c| c == 124 || c == 137),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Parses `condor_config_val -dump [-expanded]` output into name -> value (multi-line `@=`
/// values joined with newlines, their display indentation removed).
pub fn parse_dump(text: &str) -> BTreeMap<String, (String, String)> {
    let is_name = |n: &str| {
        !n.is_empty()
            && n.bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"_./".contains(&c))
    };
    let mut m: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut last: Option<String> = None;
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if l.starts_with("# ") || l == "#" || l.starts_with("#\t") {
            continue;
        }
        if let Some(name) = l.strip_suffix(" @=end").filter(|n| is_name(n)) {
            let mut body = Vec::new();
            for b in lines.by_ref() {
                if b == "@end" {
                    break;
                }
                body.push(b.strip_prefix("   ").unwrap_or(b).to_string());
            }
            m.insert(
                name.to_ascii_uppercase(),
                (name.to_string(), body.join("\n")),
            );
            last = None;
            continue;
        }
        if let Some(i) = l.find(" = ").filter(|&i| is_name(&l[..i])) {
            last = Some(l[..i].to_ascii_uppercase());
            m.insert(
                l[..i].to_ascii_uppercase(),
                (l[..i].to_string(), l[i + 3..].to_string()),
            );
        } else if let Some(name) = l.strip_suffix(" =").filter(|n| is_name(n)) {
            last = Some(name.to_ascii_uppercase());
            m.insert(name.to_ascii_uppercase(), (name.to_string(), String::new()));
        } else if let Some(v) = last.as_ref().and_then(|k| m.get_mut(k)) {
            // an expanded value with newlines goes on over the next lines
            v.1.push('\n');
            v.1.push_str(l);
        }
    }
    m
}

/// Every knob as HTCondor expands it for this configuration.
pub fn htcondor_expanded(config: &str) -> Result<BTreeMap<String, (String, String)>, String> {
    let r = condor_config_val(config, &["-dump", "-expanded"]);
    if r.crashed {
        return Err("CRASHED".to_string());
    }
    if !r.ok || r.stderr.contains("Configuration Error") || r.stderr.contains("ERROR") {
        return Err(r.stderr);
    }
    Ok(parse_dump(&r.stdout))
}

/// Knobs whose value depends on the process or the moment, never compared.
pub const VOLATILE: &[&str] = &[
    "SUBSYSTEM",
    "LOCALNAME",
    "ISTOOL",
    "DETECTED_MEMORY",
    "PID",
    "PPID",
    "USERNAME",
    "REAL_UID",
    "REAL_GID",
];

/// Compares our expansion with HTCondor's for `names` (upper case); returns the mismatches.
pub fn compare(
    ours: &aerie_config::Config,
    theirs: &BTreeMap<String, (String, String)>,
    names: &[String],
) -> Vec<String> {
    compare_mapped(ours, theirs, names, None)
}

/// Like [`compare`], with our tree's directory replaced by HTCondor's in our values.
pub fn compare_mapped(
    ours: &aerie_config::Config,
    theirs: &BTreeMap<String, (String, String)>,
    names: &[String],
    map: Option<(&str, &str)>,
) -> Vec<String> {
    let names: Vec<String> = names.iter().map(|n| n.to_ascii_uppercase()).collect();
    let mut bad = Vec::new();
    for n in &names {
        if VOLATILE.contains(&n.as_str()) {
            continue;
        }
        // values drawn at random ($RANDOM_INTEGER, $RANDOM_CHOICE) differ on every lookup
        if let Some(f) = ours.lookup(n) {
            let first = ours.expand(&f.raw).ok();
            if f.raw.contains("$RANDOM_") || (0..8).any(|_| ours.expand(&f.raw).ok() != first) {
                continue;
            }
        }
        let their = theirs.get(n).map(|(_, v)| v.clone());
        let our = match ours.lookup(n) {
            None => None,
            Some(_) => match ours.expand(&ours.lookup(n).map(|f| f.raw).unwrap_or_default()) {
                Ok(v) => Some(v),
                Err(e) => Some(format!("<error {e}>")),
            },
        };
        let our = match (our, map) {
            (Some(v), Some((from, to))) => Some(v.replace(from, to)),
            (v, _) => v,
        };
        // -dump prints each line of a multi-line value trimmed (both ends)
        let trim_lines = |v: Option<String>| {
            v.map(|v| {
                if v.contains('\n') {
                    v.lines().map(str::trim).collect::<Vec<_>>().join("\n")
                } else {
                    v
                }
            })
        };
        let (their, our) = (trim_lines(their), trim_lines(our));
        if their != our {
            bad.push(format!("{n}: HTCondor {their:?} vs Aerie {our:?}"));
        }
    }
    bad
}

/// Loads the same file on our side.
pub fn load(path: &Path) -> Result<aerie_config::Config, aerie_config::ConfigError> {
    aerie_config::Config::load(path, &aerie_config::LoadOptions::default())
}

/// HTCondor's knobs with an empty configuration.
pub fn null_dump() -> &'static BTreeMap<String, (String, String)> {
    static D: std::sync::OnceLock<BTreeMap<String, (String, String)>> = std::sync::OnceLock::new();
    D.get_or_init(|| parse_dump(&condor_config_val("/dev/null", &["-dump"]).stdout))
}

/// The knobs a configuration defines: ours from files, plus any HTCondor shows that an empty
/// configuration does not have.
pub fn defined_names(
    ours: &aerie_config::Config,
    theirs: &BTreeMap<String, (String, String)>,
) -> Vec<String> {
    let null = null_dump();
    let mut v: Vec<String> = ours
        .entries()
        .map(|e| e.name.to_ascii_uppercase())
        .collect();
    for (k, (_, val)) in theirs {
        if null.get(k).map(|(_, v)| v) != Some(val) && !v.contains(k) {
            v.push(k.clone());
        }
    }
    v.sort();
    v.dedup();
    v
}

/// Loads a file of a scratch tree on both sides and compares every knob it defines (plus
/// `extra`); panics with the list of differences.
pub fn check_file(s: &Scratch, rel: &str, extra: &[&str]) -> usize {
    let theirs = htcondor_expanded(&s.theirs_path(rel))
        .unwrap_or_else(|e| panic!("HTCondor rejected {rel}: {e}"));
    let ours = load(&s.ours_path(rel)).unwrap_or_else(|e| panic!("Aerie rejected {rel}: {e}"));
    let mut names = defined_names(&ours, &theirs);
    names.extend(extra.iter().map(|e| e.to_ascii_uppercase()));
    let from = s.ours.display().to_string();
    let bad = compare_mapped(
        &ours,
        &theirs,
        &names,
        Some((from.as_str(), s.theirs.as_str())),
    );
    assert!(
        bad.is_empty(),
        "{rel}: {} of {} knobs differ:\n{}",
        bad.len(),
        names.len(),
        bad.join("\n")
    );
    names.len()
}
