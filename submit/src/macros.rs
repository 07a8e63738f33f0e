//! The submit hash: the commands and macros of a submit file as condor_submit keeps them
//! (submit_utils.cpp `SubmitMacroSet`), and their expansion.
//!
//! Submit macros are expanded by the very code that expands configuration macros
//! (config.cpp `expand_macro`), so Aerie reuses `aerie_config`'s expander
//! ([`aerie_config::expand_macros`]); what differs is the table it looks names up in:
//! - the loop variables of the current `queue` statement (`$(Item)`, or the named ones) come
//!   first, as condor_submit inserts them into the hash itself;
//! - then the file's own commands and macros (case-insensitive), where a value that names
//!   itself (`X = $(X) more`) is expanded against the previous value when it is stored;
//! - then the submit defaults (submit_utils.cpp `SubmitMacroDefaults`): the live
//!   `$(Cluster)`/`$(ClusterId)`, `$(Process)`/`$(ProcId)`, `$(Row)`/`$(ItemIndex)`,
//!   `$(Step)`, `$(Node)`, `$(JobId)`, the machine's `$(ARCH)`, `$(OPSYS)`...,
//!   `$(SUBMIT_FILE)`, `$(SUBMIT_TIME)`, `$(Year)`/`$(Month)`/`$(Day)`, `$(SPOOL)`.
//!
//! The configuration is not visible: `$(FULL_HOSTNAME)` is empty in a submit file, as in
//! condor_submit. `$ENV(NAME)` reads the submitter's environment through the [`Host`].
use crate::error::At;
use crate::host::Host;
use aerie_config::MacroEnv;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

/// One command or macro of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name as written.
    pub name: String,
    /// The raw value (self-references already expanded).
    pub raw: String,
    /// Where it was set (its last assignment).
    pub line: usize,
}

/// The submit hash, with the defaults and live values a job is built against.
#[derive(Debug, Clone, Default)]
pub struct Macros {
    entries: HashMap<String, Entry>,
    order: Vec<String>,
    loop_vars: HashMap<String, String>,
    defaults: HashMap<String, String>,
    /// The names (lowercase) something looked up: a command's handler or a `$(...)`.
    used: RefCell<HashSet<String>>,
    /// The loop variables of queue statements, as named.
    queue_vars: Vec<String>,
}

struct View<'a> {
    macros: &'a Macros,
    host: &'a dyn Host,
}

impl MacroEnv for View<'_> {
    fn lookup_raw(&self, name: &str) -> Option<String> {
        self.macros.lookup_raw(name)
    }
    fn getenv(&self, name: &str) -> Option<String> {
        self.host.getenv(name)
    }
}

impl Macros {
    /// An empty hash with these default macros (names are case-insensitive).
    pub fn with_defaults(defaults: &[(&str, String)]) -> Macros {
        let mut m = Macros::default();
        for (k, v) in defaults {
            m.defaults.insert(k.to_ascii_lowercase(), v.clone());
        }
        m
    }

    /// Sets a default macro (also the live `Process`, `Step`...).
    pub fn set_default(&mut self, name: &str, value: String) {
        self.defaults.insert(name.to_ascii_lowercase(), value);
    }

    fn lookup_raw(&self, name: &str) -> Option<String> {
        let key = name.to_ascii_lowercase();
        self.used.borrow_mut().insert(key.clone());
        if let Some(v) = self.loop_vars.get(&key) {
            return Some(v.clone());
        }
        if let Some(e) = self.entries.get(&key) {
            return Some(e.raw.clone());
        }
        self.defaults.get(&key).cloned()
    }

    /// Stores `name = raw` from `line`, expanding references to `name` itself first.
    pub fn set(
        &mut self,
        name: &str,
        raw: &str,
        line: usize,
        host: &dyn Host,
    ) -> Result<(), String> {
        let raw = if raw.contains('$') {
            aerie_config::expand_self_references(raw, name, &View { macros: self, host })?
        } else {
            raw.to_string()
        };
        let key = name.to_ascii_lowercase();
        if !self.entries.contains_key(&key) {
            self.order.push(key.clone());
        }
        self.entries.insert(
            key,
            Entry {
                name: name.to_string(),
                raw,
                line,
            },
        );
        Ok(())
    }

    /// Sets the loop variables of a queue statement's current item.
    pub fn set_loop_vars(&mut self, vars: &[(String, String)]) {
        for (k, v) in vars {
            if !self.queue_vars.iter().any(|q| q.eq_ignore_ascii_case(k)) {
                self.queue_vars.push(k.clone());
            }
            self.loop_vars.insert(k.to_ascii_lowercase(), v.clone());
        }
    }

    /// Ends a queue statement: its loop variables keep the value `<Queue_item>` for the rest
    /// of the file, as condor_submit's `cleanup_vars` leaves them.
    pub fn end_queue(&mut self, vars: &[String]) {
        for v in vars {
            self.loop_vars
                .insert(v.to_ascii_lowercase(), "<Queue_item>".into());
        }
    }

    /// The file's entry for a command, under its name or its alternative name (the entry
    /// found counts as used).
    pub fn entry(&self, name: &str, alt: Option<&str>) -> Option<&Entry> {
        let found = self
            .entries
            .get(&name.to_ascii_lowercase())
            .or_else(|| alt.and_then(|a| self.entries.get(&a.to_ascii_lowercase())));
        if let Some(e) = found {
            self.used.borrow_mut().insert(e.name.to_ascii_lowercase());
        }
        found
    }

    /// condor_submit's warnings about what nothing used (`warn_unused`): commands no handler
    /// read and macros no value referred to (a typo, or a command Aerie does not implement),
    /// and unused queue variables. `+Attr`, `MY.Attr` and other dotted names are not reported.
    pub fn unused(&self, app: &str) -> Vec<String> {
        let used = self.used.borrow();
        let mut out = Vec::new();
        for e in self.entries() {
            let key = e.name.to_ascii_lowercase();
            if e.name.contains('.') || used.contains(&key) {
                continue;
            }
            out.push(format!(
                "the line '{} = {}' was unused by {app}. Is it a typo?",
                e.name, e.raw
            ));
        }
        for v in &self.queue_vars {
            if !used.contains(&v.to_ascii_lowercase()) {
                out.push(format!(
                    "the Queue variable '{v}' was unused by {app}. Is it a typo?"
                ));
            }
        }
        out
    }

    /// Every entry of the file, in the order first set.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.order.iter().filter_map(|k| self.entries.get(k))
    }

    /// Expands the macros in `text`.
    pub fn expand(&self, text: &str, host: &dyn Host) -> Result<String, String> {
        aerie_config::expand_macros(text, &View { macros: self, host })
    }

    /// A command's value as condor_submit's `submit_param` gives it: looked up under `name`,
    /// then `alt`, expanded and trimmed; `None` when it is not set or expands to nothing. The
    /// error (a macro that cannot be expanded) comes with the command's place.
    pub fn param(
        &self,
        name: &str,
        alt: Option<&str>,
        host: &dyn Host,
    ) -> Result<Option<(String, At)>, (At, String)> {
        let key = name.to_ascii_lowercase();
        let from_loop = self
            .loop_vars
            .get(&key)
            .map(|v| (v.clone(), At::new(0, name)));
        let found = from_loop.or_else(|| {
            self.entry(name, alt)
                .map(|e| (e.raw.clone(), At::new(e.line, &e.name)))
        });
        let Some((raw, at)) = found else {
            return Ok(None);
        };
        let v = self.expand(&raw, host).map_err(|m| (at.clone(), m))?;
        let v = v.trim();
        Ok((!v.is_empty()).then(|| (v.to_string(), at)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::RealHost;

    #[test]
    fn loop_vars_then_file_then_defaults() {
        let mut m = Macros::with_defaults(&[("Cluster", "7".into()), ("Item", "".into())]);
        m.set("word", "hi $(Cluster)", 1, &RealHost).unwrap();
        m.set("WORD", "$(word) there", 2, &RealHost).unwrap();
        let (v, at) = m.param("Word", None, &RealHost).unwrap().unwrap();
        assert_eq!((v.as_str(), at.line), ("hi 7 there", 2));
        m.set_loop_vars(&[("word".into(), "looped".into())]);
        assert_eq!(
            m.expand("$(WORD)/$(missing:dflt)/$(FULL_HOSTNAME)", &RealHost)
                .unwrap(),
            "looped/dflt/"
        );
        m.set("empty", "$(nothing)", 3, &RealHost).unwrap();
        assert_eq!(m.param("empty", None, &RealHost).unwrap(), None);
    }
}
