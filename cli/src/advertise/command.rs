//! condor_advertise's commands as Aerie takes them, and what each asks of an ad: the `MyType`
//! of an update must agree with the command; a query ad of an invalidation picks its ads by
//! `Name` or by `Requirements`, as HTCondor's collector does.
use super::file::FileAd;
use classad::{Expr, Value};

/// What a command does with the ads of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Publish (or replace) each ad.
    Update,
    /// Each ad is a query ad: remove the ads it picks.
    Invalidate,
}

/// One condor_advertise command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdCommand {
    /// Its name as condor_advertise spells it (`UPDATE_STARTD_AD`).
    pub name: &'static str,
    /// Update or invalidate.
    pub action: Action,
    /// The `MyType`s of the ads it is about, the usual one first; empty for the generic
    /// commands, which take every type that has no command of its own.
    pub types: &'static [&'static str],
}

const fn cmd(name: &'static str, action: Action, types: &'static [&'static str]) -> AdCommand {
    AdCommand {
        name,
        action,
        types,
    }
}

const MACHINE: &[&str] = &["Machine"];
const SCHEDULER: &[&str] = &["Scheduler"];
const SUBMITTER: &[&str] = &["Submitter"];
/// HTCondor's masters advertise `MyType = "DaemonMaster"`; `Master` is Aerie's own name.
const MASTER: &[&str] = &["DaemonMaster", "Master"];
const NEGOTIATOR: &[&str] = &["Negotiator"];
const COLLECTOR: &[&str] = &["Collector"];
const GENERIC: &[&str] = &[];

/// The commands `cmctl advertise` takes. `UPDATE_STARTD_AD_WITH_ACK` is `UPDATE_STARTD_AD`:
/// every update gets an answer over gRPC.
pub const COMMANDS: &[AdCommand] = &[
    cmd("UPDATE_STARTD_AD", Action::Update, MACHINE),
    cmd("UPDATE_STARTD_AD_WITH_ACK", Action::Update, MACHINE),
    cmd("UPDATE_SCHEDD_AD", Action::Update, SCHEDULER),
    cmd("UPDATE_SUBMITTOR_AD", Action::Update, SUBMITTER),
    cmd("UPDATE_MASTER_AD", Action::Update, MASTER),
    cmd("UPDATE_NEGOTIATOR_AD", Action::Update, NEGOTIATOR),
    cmd("UPDATE_COLLECTOR_AD", Action::Update, COLLECTOR),
    cmd("UPDATE_AD_GENERIC", Action::Update, GENERIC),
    cmd("INVALIDATE_STARTD_ADS", Action::Invalidate, MACHINE),
    cmd("INVALIDATE_SCHEDD_ADS", Action::Invalidate, SCHEDULER),
    cmd("INVALIDATE_SUBMITTOR_ADS", Action::Invalidate, SUBMITTER),
    cmd("INVALIDATE_MASTER_ADS", Action::Invalidate, MASTER),
    cmd("INVALIDATE_NEGOTIATOR_ADS", Action::Invalidate, NEGOTIATOR),
    cmd("INVALIDATE_COLLECTOR_ADS", Action::Invalidate, COLLECTOR),
    cmd("INVALIDATE_ADS_GENERIC", Action::Invalidate, GENERIC),
];

const NO_TABLE: &str = "Aerie's collector has no table of its own for these ads: send them \
                        with UPDATE_AD_GENERIC and remove them with INVALIDATE_ADS_GENERIC";
const ACCOUNTING: &str = "Aerie keeps the accountant in its replicated state, not in collector \
                          ads: see and change it with cmctl userprio";

/// condor_advertise's other commands, and why Aerie does not take them.
const REFUSED: &[(&str, &str)] = &[
    ("UPDATE_ACCOUNTING_AD", ACCOUNTING),
    ("INVALIDATE_ACCOUNTING_ADS", ACCOUNTING),
    (
        "MERGE_STARTD_AD",
        "it merges a negotiator's attributes into a slot ad, which Aerie's collector does not do",
    ),
    (
        "UPDATE_OWN_SUBMITTOR_AD",
        "it relies on HTCondor's authentication of the user: send the ad with \
         UPDATE_SUBMITTOR_AD",
    ),
    ("UPDATE_CKPT_SRVR_AD", NO_TABLE),
    ("UPDATE_LICENSE_AD", NO_TABLE),
    ("UPDATE_STORAGE_AD", NO_TABLE),
    ("UPDATE_HAD_AD", NO_TABLE),
    ("UPDATE_GRID_AD", NO_TABLE),
    ("INVALIDATE_CKPT_SRVR_ADS", NO_TABLE),
    ("INVALIDATE_LICENSE_ADS", NO_TABLE),
    ("INVALIDATE_STORAGE_ADS", NO_TABLE),
    ("INVALIDATE_HAD_ADS", NO_TABLE),
    ("INVALIDATE_GRID_ADS", NO_TABLE),
];

/// The command named `name` (case-insensitively); an error says why Aerie does not take a
/// command of condor_advertise's, or lists the commands when the name is unknown.
pub fn lookup(name: &str) -> Result<&'static AdCommand, String> {
    if let Some(c) = COMMANDS.iter().find(|c| c.name.eq_ignore_ascii_case(name)) {
        return Ok(c);
    }
    if let Some((n, why)) = REFUSED.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
        return Err(format!("{n} is not taken by Aerie: {why}"));
    }
    let names: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
    Err(format!(
        "unknown command name {name}; it is one of {}",
        names.join(", ")
    ))
}

/// `MyType` as Aerie's collector compares it: case-insensitively, `Slot` and `Startd` being
/// names of the machine table and `Schedd` of the scheduler's.
pub fn same_type(a: &str, b: &str) -> bool {
    fn canonical(t: &str) -> String {
        match t.to_ascii_lowercase().as_str() {
            "slot" | "startd" => "machine".into(),
            "schedd" => "scheduler".into(),
            other => other.into(),
        }
    }
    canonical(a) == canonical(b)
}

/// The specific (not generic) command of `action` for ads of `my_type`, if there is one.
fn specific(action: Action, my_type: &str) -> Option<&'static AdCommand> {
    COMMANDS
        .iter()
        .find(|c| c.action == action && c.types.iter().any(|t| same_type(t, my_type)))
}

impl AdCommand {
    /// Whether ads of `my_type` belong to this command.
    pub fn takes(&self, my_type: &str) -> bool {
        if self.types.is_empty() {
            specific(self.action, my_type).is_none()
        } else {
            self.types.iter().any(|t| same_type(t, my_type))
        }
    }

    /// The update command for ads of `my_type`, as condor_advertise picks one when no
    /// command is given (`UPDATE_AD_GENERIC` for a type without its own).
    pub fn for_type(my_type: &str) -> Result<&'static AdCommand, String> {
        if my_type.eq_ignore_ascii_case("Query") {
            return Err(
                "MyType \"Query\" is a query ad: name the INVALIDATE_ command that \
                        removes the ads it picks"
                    .into(),
            );
        }
        Ok(specific(Action::Update, my_type).unwrap_or_else(|| {
            lookup("UPDATE_AD_GENERIC").expect("UPDATE_AD_GENERIC is in COMMANDS")
        }))
    }

    /// What the command's ads are, for messages: `"Machine" ads`, `ads of a type without a
    /// command of its own`.
    fn what(&self) -> String {
        match self.types {
            [] => "ads of a type without a command of its own".into(),
            [t] => format!("{t:?} ads"),
            ts => {
                let q: Vec<String> = ts.iter().map(|t| format!("{t:?}")).collect();
                format!("{} ads", q.join(" or "))
            }
        }
    }

    /// Why an ad of `my_type` does not belong to this command.
    fn disagrees(&self, my_type: &str) -> String {
        match (self.types, specific(self.action, my_type)) {
            ([], Some(own)) => format!(
                "{my_type:?} has a command of its own, {}; {} is for {}",
                own.name,
                self.name,
                self.what()
            ),
            _ => format!(
                "{my_type:?} does not agree with {}, which {} {}",
                self.name,
                match self.action {
                    Action::Update => "sends",
                    Action::Invalidate => "removes",
                },
                self.what()
            ),
        }
    }

    /// Checks one ad of an update: its `MyType`, when it has one, must belong to the command
    /// (HTCondor's collector would file it under the command's table whatever its type). An
    /// ad without a `MyType` is left to the collector, which refuses it.
    pub fn check_update(&self, ad: &FileAd) -> Result<(), String> {
        match ad.ad.eval_attr("MyType") {
            Value::Str(t) if t.eq_ignore_ascii_case("Query") => Err(ad.fault(
                "MyType",
                "\"Query\" is a query ad: name an INVALIDATE_ command to remove the ads it picks",
            )),
            Value::Str(t) if !self.takes(&t) => Err(ad.fault("MyType", &self.disagrees(&t))),
            _ => Ok(()),
        }
    }

    /// What one query ad of an invalidation removes. The ads' type is its `TargetType` (or,
    /// for an ad that is not a query ad, its own `MyType`), which must belong to the command;
    /// without either, the command's types. As HTCondor's collector does, a `Name` picks the
    /// ad of that name (at the host of `MyAddress`, when given) and `Requirements` is then not
    /// looked at; without a `Name`, `Requirements` picks every ad it is true for.
    pub fn invalidation(&self, ad: &FileAd) -> Result<Invalidation, String> {
        let string = |attr: &str| match ad.ad.eval_attr(attr) {
            Value::Str(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
            _ => None,
        };
        let target = match (string("TargetType"), string("MyType")) {
            (Some(t), _) => Some(("TargetType", t)),
            (None, Some(m)) if !m.eq_ignore_ascii_case("Query") => Some(("MyType", m)),
            _ => None,
        };
        let types: Vec<String> = match target {
            Some((_, t)) if t.eq_ignore_ascii_case("Any") && self.types.is_empty() => {
                vec!["Any".into()]
            }
            Some((_, t)) if t.eq_ignore_ascii_case("Any") => owned(self.types),
            Some((attr, t)) if !self.takes(&t) => {
                return Err(ad.fault(attr, &self.disagrees(&t)));
            }
            Some((_, t)) => vec![t],
            None if self.types.is_empty() => {
                return Err(ad.fault(
                    "TargetType",
                    &format!(
                        "missing: {} needs the MyType of the ads to remove (or \"Any\")",
                        self.name
                    ),
                ))
            }
            None => owned(self.types),
        };
        let select = if let Some(name) = string("Name") {
            if types == ["Any"] {
                return Err(ad.fault(
                    "TargetType",
                    "\"Any\" picks ads by Requirements only: give the MyType of the ad named \
                     in Name",
                ));
            }
            Select::Name {
                name,
                addr: string("MyAddress").unwrap_or_default(),
            }
        } else if let Some(e) = ad.ad.lookup("Requirements") {
            Select::Constraint(e.clone())
        } else {
            return Err(ad.fault(
                "Requirements",
                "missing, and no Name either: a query ad names the ad to remove (Name) or \
                 says which ads to remove (Requirements); HTCondor's collector ignores it",
            ));
        };
        Ok(Invalidation { types, select })
    }
}

fn owned(types: &[&str]) -> Vec<String> {
    types.iter().map(|t| t.to_string()).collect()
}

/// Which ads one query ad removes.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalidation {
    /// The `MyType`s of the ads to remove; `["Any"]` for every type.
    pub types: Vec<String>,
    /// How they are picked.
    pub select: Select,
}

/// How a query ad picks the ads to remove.
#[derive(Debug, Clone)]
pub enum Select {
    /// The ad named `name`; only the one at the host of `addr` (a daemon address) when that
    /// is not empty.
    Name {
        /// The ads' `Name`.
        name: String,
        /// The daemon's address (`MyAddress`), or empty for every ad of that name.
        addr: String,
    },
    /// Every ad for which the expression is true (evaluated in the ad: `MY.` works,
    /// `TARGET.` is undefined, as in HTCondor's collector).
    Constraint(Expr),
}

impl PartialEq for Select {
    /// Expressions compare as written (`Expr` has no equality of its own).
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Select::Name { name, addr }, Select::Name { name: n2, addr: a2 }) => {
                name == n2 && addr == a2
            }
            (Select::Constraint(a), Select::Constraint(b)) => a.to_string() == b.to_string(),
            _ => false,
        }
    }
}
