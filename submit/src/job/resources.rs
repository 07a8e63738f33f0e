//! What a job asks of the pool: `request_cpus`/`request_memory`/`request_disk` and custom
//! `request_<name>`, `concurrency_limits`, and who is charged: `accounting_group`,
//! `accounting_group_user`, `nice_user` (submit_utils.cpp `SetRequestResources`,
//! `SetConcurrencyLimits`, `SetAccountingGroup`).
use super::{is_attr_name, B};
use crate::error::{At, SubmitError};
use crate::units::parse_bytes;

impl B<'_> {
    /// `request_cpus`, `request_memory` (MiB), `request_disk` (KiB) and `request_<name>`
    /// (`SetRequestResources`).
    pub(super) fn requests(&mut self) -> Result<(), SubmitError> {
        let s = self.j.settings;
        // the special ones
        let mem = self.param("request_memory", Some("RequestMemory"))?;
        let disk = self.param("request_disk", Some("RequestDisk"))?;
        let cpus = self.param("request_cpus", Some("RequestCpus"))?;
        let defaulted = |b: &Self, given: Option<(String, At)>, attr: &str, default: &str| {
            given.or_else(|| {
                (!b.has(attr) && b.j.cluster_ad.is_none())
                    .then(|| (default.to_string(), At::default()))
            })
        };
        if let Some((v, at)) = defaulted(self, cpus, "RequestCpus", &s.default_request_cpus) {
            if !v.eq_ignore_ascii_case("undefined") {
                self.expr("RequestCpus", &v, &at)?;
            }
        }
        if let Some((v, at)) = defaulted(self, disk, "RequestDisk", &s.default_request_disk) {
            match parse_bytes(&v, 1024) {
                Some(kb) => self.int("RequestDisk", kb),
                None if v.eq_ignore_ascii_case("undefined") => {}
                None => self.expr("RequestDisk", &v, &at)?,
            }
        }
        if let Some((v, at)) = defaulted(self, mem, "RequestMemory", &s.default_request_memory) {
            match parse_bytes(&v, 1 << 20) {
                Some(mb) => self.int("RequestMemory", mb),
                None if v.eq_ignore_ascii_case("undefined") => {}
                None => self.expr("RequestMemory", &v, &at)?,
            }
        }
        // custom resources: request_<name> = expr
        let custom: Vec<(String, String, usize)> = self
            .j
            .macros
            .entries()
            .filter_map(|e| {
                let lower = e.name.to_ascii_lowercase();
                let tag = lower.strip_prefix("request_")?;
                let special = ["cpus", "cpu", "memory", "disk", "gpus", "gpu"];
                (tag.len() >= 2 && !tag.starts_with('_') && !special.contains(&tag)).then(|| {
                    (
                        e.name.clone(),
                        e.name["request_".len()..].to_string(),
                        e.line,
                    )
                })
            })
            .collect();
        for (name, tag, _) in custom {
            if let Some((v, at)) = self.param(&name, None)? {
                self.expr(&format!("Request{tag}"), &v, &at)?;
            }
        }
        // GPUs come with their own Require/Available matching (`SetRequestGpus`), not built yet
        match self.param("request_gpus", Some("RequestGPUs"))? {
            Some((_, at)) => Err(self.err(&at, "request_gpus is not supported by Aerie yet")),
            None => Ok(()),
        }
    }

    pub(super) fn concurrency_limits(&mut self) -> Result<(), SubmitError> {
        let limits = self.param("concurrency_limits", None)?;
        let expr = self.param("concurrency_limits_expr", None)?;
        match (limits, expr) {
            (Some((_, at)), Some(_)) => Err(self.err(
                &at,
                "concurrency_limits and concurrency_limits_expr can't be used together",
            )),
            (Some((v, at)), None) => {
                let mut list: Vec<String> = v
                    .to_ascii_lowercase()
                    .split(|c: char| c == ',' || c.is_ascii_whitespace())
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                for l in &list {
                    // name[.sub][:increment]; the increment is not checked (NegotiationUtils.cpp
                    // `ParseConcurrencyLimit`)
                    let name = l.split(':').next().unwrap_or("");
                    let valid = match name.split_once('.') {
                        Some((head, sub)) => is_attr_name(head) && is_attr_name(sub),
                        None => is_attr_name(name),
                    };
                    if !valid {
                        return Err(self.err(&at, format!("Invalid concurrency limit '{l}'")));
                    }
                }
                list.sort();
                let joined = list.join(",");
                if !joined.is_empty() {
                    self.string("ConcurrencyLimits", &joined);
                }
                Ok(())
            }
            (None, Some((v, at))) => self.expr("ConcurrencyLimits", &v, &at),
            (None, None) => Ok(()),
        }
    }

    pub(super) fn accounting_group(&mut self) -> Result<(), SubmitError> {
        let mut group = self.param("accounting_group", Some("AccountingGroup"))?;
        let (nice, _) = self.param_bool("nice_user", Some("NiceUser"), false)?;
        if nice {
            if group.is_none() {
                let g = self.j.settings.nice_user_group.clone();
                if !g.is_empty() {
                    group = Some((g, At::default()));
                }
            }
            // nice-user jobs may be preempted at once unless they say otherwise
            self.int("MaxJobRetirementTime", 0);
        }
        let gu = self.param("accounting_group_user", Some("AcctGroupUser"))?;
        if group.is_none() && gu.is_none() {
            return Ok(());
        }
        let (user, user_at) = gu.unwrap_or_else(|| (self.j.who.user.clone(), At::default()));
        let valid = |s: &str| {
            !s.is_empty()
                && !s.contains(|c: char| c.is_whitespace() || c == '@' || c == '"' || c == '\'')
        };
        if let Some((g, at)) = &group {
            if !valid(g) {
                return Err(self.err(at, format!("Invalid accounting_group: {g}")));
            }
        }
        if !valid(&user) {
            return Err(self.err(&user_at, format!("Invalid accounting_group_user: {user}")));
        }
        self.string("AcctGroupUser", &user);
        match group {
            Some((g, _)) => {
                self.string("AcctGroup", &g);
                self.string("AccountingGroup", &format!("{g}.{user}"));
            }
            None => self.string("AccountingGroup", &user),
        }
        Ok(())
    }
}
