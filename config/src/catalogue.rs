//! The catalogue: every knob Aerie reads, with its type, its default and what it means. One
//! table, in code. Defaults are HTCondor 23.9.6's: `Param` defaults are the text of HTCondor's
//! parameter table (what `condor_config_val` prints with an empty configuration; a test checks
//! this against the real program), `Builtin` ones are values the HTCondor daemons use in code
//! when the knob is not set (`condor_config_val` says "Not defined" for those), `Aerie` ones are
//! Aerie's own knobs. Names with `<...>` are families built from user names
//! (`GROUP_QUOTA_<group>`, `<name>_LIMIT`).

/// The type of a knob's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KnobType {
    /// true/false.
    Bool,
    /// Integer.
    Int,
    /// Real number.
    Real,
    /// Text.
    Str,
    /// List separated by commas and/or whitespace.
    List,
    /// A ClassAd expression.
    Expr,
    /// Seconds (or a number with a unit for Aerie's knobs).
    Duration,
    /// A file or directory.
    Path,
}

/// Which part of the central manager reads the knob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Area {
    /// Pool-wide settings.
    Pool,
    /// The collector.
    Collector,
    /// Absent ads.
    AbsentAds,
    /// The negotiator.
    Negotiator,
    /// The accountant (user priorities).
    Accountant,
    /// Accounting groups and quotas.
    Groups,
    /// Concurrency limits.
    ConcurrencyLimits,
    /// The defrag daemon.
    Defrag,
    /// Startd policy, which the negotiator models.
    StartdPolicy,
    /// Job scheduling (schedd side knobs the CM needs to know).
    JobScheduling,
    /// HTCondor's high availability (what Aerie's Raft group replaces).
    HighAvailability,
    /// Monitoring.
    Monitoring,
    /// Aerie's own knobs (Raft, addresses, TLS, data directory).
    AerieNode,
}

/// Where a knob's default comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultKind {
    /// HTCondor's parameter table; visible to `condor_config_val` and to macros.
    Param,
    /// The value HTCondor's daemons use in code when the knob is unset; not visible to macros.
    Builtin,
    /// No default: unset means "off" or "none".
    NoDefault,
    /// Aerie's own default; visible to macros.
    Aerie,
}

/// One knob of the catalogue.
#[derive(Debug, Clone, Copy)]
pub struct Knob {
    /// Name as HTCondor spells it; `<...>` marks a part built from a user name.
    pub name: &'static str,
    /// Value type.
    pub ty: KnobType,
    /// Who reads it.
    pub area: Area,
    /// Where the default comes from.
    pub kind: DefaultKind,
    /// The default, raw (may contain macros).
    pub default: Option<&'static str>,
    /// One-line meaning.
    pub meaning: &'static str,
}

impl Knob {
    /// The default that applies when the knob is not set and HTCondor's table has none.
    pub fn builtin_default(&self) -> Option<&'static str> {
        match self.kind {
            DefaultKind::Builtin => self.default,
            _ => None,
        }
    }

    /// True for a family of names (`GROUP_QUOTA_<group>`).
    pub fn is_pattern(&self) -> bool {
        self.name.contains('<')
    }

    /// Whether `name` is this knob or a member of this family.
    pub fn matches(&self, name: &str) -> bool {
        match (self.name.find('<'), self.name.find('>')) {
            (Some(a), Some(b)) => {
                let (pre, suf) = (&self.name[..a], &self.name[b + 1..]);
                name.len() > pre.len() + suf.len()
                    && name.is_char_boundary(pre.len())
                    && name.is_char_boundary(name.len() - suf.len())
                    && name[..pre.len()].eq_ignore_ascii_case(pre)
                    && name[name.len() - suf.len()..].eq_ignore_ascii_case(suf)
            }
            _ => self.name.eq_ignore_ascii_case(name),
        }
    }
}

const fn k(
    name: &'static str,
    ty: KnobType,
    area: Area,
    kind: DefaultKind,
    default: Option<&'static str>,
    meaning: &'static str,
) -> Knob {
    Knob {
        name,
        ty,
        area,
        kind,
        default,
        meaning,
    }
}

use Area::*;
use DefaultKind::*;
use KnobType::*;

/// Every knob Aerie reads.
pub const CATALOGUE: &[Knob] = &[
    k("CONDOR_HOST", Str, Pool, NoDefault, None, "Host name(s) of the central manager(s); a list in an HA pool"),
    k("COLLECTOR_HOST", List, Pool, Param, Some("$(CONDOR_HOST)"), "Address(es) of the collector(s) daemons report to"),
    k("COLLECTOR_NAME", Str, Collector, Param, Some("My Pool - $(CONDOR_HOST)"), "Long name of the pool, published in the collector ad"),
    k("COLLECTOR_PORT", Int, Collector, Param, Some("9618"), "Well-known collector port"),
    k("UPDATE_INTERVAL", Duration, Collector, Param, Some("300"), "Seconds between ad updates sent by daemons (startds)"),
    k("COLLECTOR_UPDATE_INTERVAL", Duration, Collector, Param, Some("900"), "Seconds between updates of the collector's own ad"),
    k("MASTER_UPDATE_INTERVAL", Duration, Collector, Param, Some("300"), "Seconds between master ad updates"),
    k("CLASSAD_LIFETIME", Duration, Collector, Builtin, Some("900"), "Seconds an ad lives without an update before it expires (collector built-in value)"),
    k("ABSENT_REQUIREMENTS", Expr, AbsentAds, Builtin, Some("False"), "Expression on an expiring slot ad: if True the ad becomes absent instead of removed"),
    k("ABSENT_EXPIRE_ADS_AFTER", Duration, AbsentAds, Builtin, Some("2592000"), "Seconds an absent ad is kept; 0 keeps it forever (collector built-in value)"),
    k("EXPIRE_INVALIDATED_ADS", Bool, AbsentAds, Builtin, Some("False"), "Treat an invalidation as an expiry, so the ad may become absent"),
    k("COLLECTOR_PERSISTENT_AD_LOG", Path, AbsentAds, NoDefault, None, "File where absent and offline ads persist across collector restarts"),
    k("OFFLINE_EXPIRE_ADS_AFTER", Duration, AbsentAds, NoDefault, None, "Seconds an offline ad is kept"),
    k("CONDOR_VIEW_HOST", List, Collector, Param, Some(""), "View collector(s) every update is forwarded to (commas and/or spaces)"),
    k("KEEP_POOL_HISTORY", Bool, Collector, Param, Some(""), "Write pool history (HTCondorView); unset means false"),
    k("POOL_HISTORY_DIR", Path, Collector, Param, Some(""), "Directory of the pool history files"),
    k("POOL_HISTORY_MAX_STORAGE", Int, Collector, Param, Some("10000000"), "Maximum bytes of pool history"),
    k("COLLECTOR_QUERY_WORKERS", Int, Collector, Param, Some("4"), "Parallel query workers of the collector"),
    k("COLLECTOR_QUERY_WORKERS_PENDING", Int, Collector, Param, Some("50"), "Queries allowed to wait for a worker"),
    k("COLLECTOR_MAX_FILE_DESCRIPTORS", Int, Collector, Param, Some("10240"), "File descriptors the collector may use"),
    k("COLLECTOR_REQUIREMENTS", Expr, Collector, NoDefault, None, "Ads not matching this expression are refused by the collector"),
    k("COLLECTOR_STATS_SWEEP", Duration, Collector, Param, Some("14400"), "Seconds between sweeps of collector update statistics"),
    k("COLLECTOR_FORWARD_FILTERING", Bool, Collector, Param, Some("false"), "Forward to view collectors only ads whose watched attributes changed"),
    k("COLLECTOR_FORWARD_WATCH_LIST", List, Collector, Param, Some("State,Cpus,Memory,IdleJobs,ClaimId,Capability,ClaimIdList,ChildClaimIds"), "Attributes whose change forces forwarding"),
    k("COLLECTOR_FORWARD_PROJECTION", List, Collector, Param, Some(""), "Attributes forwarded to view collectors (all when empty)"),
    k("COLLECTOR_SOCKET_BUFSIZE", Int, Collector, Param, Some("10000*1024"), "UDP socket buffer of the collector, bytes"),
    k("NEGOTIATOR_INTERVAL", Duration, Negotiator, Param, Some("60"), "Seconds between the starts of negotiation cycles"),
    k("NEGOTIATOR_CYCLE_DELAY", Duration, Negotiator, Builtin, Some("20"), "Minimum seconds between the end of one cycle and the start of the next (negotiator built-in value)"),
    k("NEGOTIATOR_MIN_INTERVAL", Duration, Negotiator, Param, Some("5"), "Minimum seconds between cycles"),
    k("NEGOTIATOR_UPDATE_INTERVAL", Duration, Negotiator, Param, Some("300"), "Seconds between negotiator ad updates"),
    k("NEGOTIATOR_TIMEOUT", Duration, Negotiator, Param, Some("30"), "Network timeout of the negotiator, seconds"),
    k("NEGOTIATOR_MAX_TIME_PER_CYCLE", Duration, Negotiator, Param, Some("1200"), "Time limit of one negotiation cycle, seconds"),
    k("NEGOTIATOR_MAX_TIME_PER_SUBMITTER", Duration, Negotiator, Param, Some("60"), "Time limit per submitter in a cycle, seconds"),
    k("NEGOTIATOR_MAX_TIME_PER_SCHEDD", Duration, Negotiator, Param, Some("120"), "Time limit per schedd in a cycle, seconds"),
    k("NEGOTIATOR_MAX_TIME_PER_PIESPIN", Duration, Negotiator, Param, Some("120"), "Time limit of one pie spin, seconds"),
    k("NEGOTIATOR_SLOT_CONSTRAINT", Expr, Negotiator, Param, Some(""), "Only slots matching this expression are seen by this negotiator"),
    k("NEGOTIATOR_JOB_CONSTRAINT", Expr, Negotiator, Param, Some(""), "Only jobs matching this expression are negotiated"),
    k("NEGOTIATOR_SLOT_POOLSIZE_CONSTRAINT", Expr, Negotiator, Param, Some(""), "Slots counted in the pool size (pie) must match this"),
    k("NEGOTIATOR_CONSIDER_PREEMPTION", Bool, Negotiator, Param, Some("true"), "Consider busy slots (preemption); false matches only idle slots"),
    k("NEGOTIATOR_CONSIDER_EARLY_PREEMPTION", Bool, Negotiator, Param, Some("false"), "Consider slots whose jobs are still within their retirement time"),
    k("NEGOTIATOR_PRE_JOB_RANK", Expr, Negotiator, Param, Some("(10000000 * My.Rank) + (1000000 * (RemoteOwner =?= UNDEFINED)) - (100000 * Cpus) - Memory"), "First sort key of candidate slots, before the job's Rank"),
    k("NEGOTIATOR_POST_JOB_RANK", Expr, Negotiator, Param, Some("(RemoteOwner =?= UNDEFINED) * (ifthenElse(isUndefined(KFlops), 1000, Kflops) - SlotID - 1.0e10*(Offline=?=True))"), "Sort key of candidate slots after the job's Rank"),
    k("NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION", Bool, Groups, Param, Some("true"), "Do not scale group quotas down when they exceed the pool"),
    k("NEGOTIATE_ALL_JOBS_IN_CLUSTER", Bool, Negotiator, Param, Some(""), "Give every job an autocluster of its own, so a rejection skips only that job; unset means false"),
    k("PREEMPTION_REQUIREMENTS", Expr, Negotiator, Param, Some("False"), "When priority preemption of a running job is allowed"),
    k("PREEMPTION_REQUIREMENTS_STABLE", Bool, Negotiator, Builtin, Some("True"), "PREEMPTION_REQUIREMENTS gives the same value throughout a cycle"),
    k("PREEMPTION_RANK", Expr, Negotiator, Param, Some("(RemoteUserPrio * 1000000) - ifThenElse(isUndefined(TotalJobRuntime), 0, TotalJobRuntime)"), "Ranks slots whose jobs would be preempted; higher is preferred"),
    k("PREEMPTION_RANK_STABLE", Bool, Negotiator, Builtin, Some("True"), "PREEMPTION_RANK gives the same value throughout a cycle"),
    k("NEGOTIATOR_USE_SLOT_WEIGHTS", Bool, Negotiator, Param, Some("true"), "Count slots by SLOT_WEIGHT (else each slot is 1)"),
    k("NEGOTIATOR_USE_WEIGHTED_DEMAND", Bool, Negotiator, Param, Some("true"), "Weigh submitter demand by requested slot weight"),
    k("NEGOTIATOR_INFORM_STARTD", Bool, Negotiator, Param, Some("false"), "Tell the startd about each match"),
    k("NEGOTIATOR_DEPTH_FIRST", Bool, Negotiator, Param, Some("false"), "Fill one machine before the next (depth-first partitionable matching)"),
    k("NEGOTIATOR_MATCH_EXPRS", List, Negotiator, Param, Some(""), "Knobs inserted into the job ad as NegotiatorMatchExpr<name> on a match"),
    k("NEGOTIATOR_IGNORE_USER_PRIORITIES", Bool, Negotiator, Param, Some("false"), "Ignore fair share; negotiate in submitter order"),
    k("NEGOTIATOR_NAME", Str, Negotiator, NoDefault, None, "Name of this negotiator (several negotiators in one pool)"),
    k("NEGOTIATOR_STATE_FILE", Path, Negotiator, Param, Some(""), "File of the negotiator's saved state"),
    k("NEGOTIATOR_DISCOUNT_SUSPENDED_RESOURCES", Bool, Negotiator, Param, Some("false"), "Suspended jobs do not count toward usage"),
    k("NEGOTIATOR_MATCHLIST_CACHING", Bool, Negotiator, Param, Some("true"), "Cache the sorted slot list between jobs of one autocluster"),
    k("NEGOTIATOR_RESOURCE_REQUEST_LIST_SIZE", Int, Negotiator, Param, Some("200"), "Resource requests fetched from a schedd at once"),
    k("NEGOTIATOR_PREFETCH_REQUESTS", Bool, Negotiator, Param, Some("true"), "Fetch resource requests from schedds before the cycle"),
    k("NEGOTIATOR_PREFETCH_REQUESTS_MAX_TIME", Duration, Negotiator, Param, Some("60"), "Time limit of the prefetch, seconds"),
    k("NEGOTIATOR_CROSS_SLOT_PRIOS", Bool, Negotiator, Param, Some("false"), "Publish Slot<N>_RemoteUserPrio cross-slot attributes"),
    k("NEGOTIATOR_SOCKET_CACHE_SIZE", Int, Negotiator, Param, Some("500"), "Connections to schedds and startds kept open"),
    k("NEGOTIATOR_TRIM_SHUTDOWN_THRESHOLD", Int, Negotiator, Param, Some("0"), "Trim slots about to shut down from matching (0 = off)"),
    k("NEGOTIATOR_READ_CONFIG_BEFORE_CYCLE", Bool, Negotiator, Param, Some("false"), "Re-read the configuration before each cycle"),
    k("NEGOTIATOR_UPDATE_AFTER_CYCLE", Bool, Negotiator, Param, Some("false"), "Send the negotiator ad right after each cycle"),
    k("NEGOTIATOR_NUM_THREADS", Int, Negotiator, Param, Some("1"), "Matchmaking threads"),
    k("SLOT_WEIGHT", Expr, Negotiator, Param, Some("Cpus"), "Weight of a slot in the pie and in usage (cores by default)"),
    k("SIGNIFICANT_ATTRIBUTES", List, JobScheduling, NoDefault, None, "Job attributes that define an autocluster (schedd)"),
    k("PRIORITY_HALFLIFE", Duration, Accountant, Param, Some("86400"), "Half-life of the real user priority decay, seconds"),
    k("DEFAULT_PRIO_FACTOR", Real, Accountant, Param, Some("1000"), "Priority factor given to a new submitter"),
    k("NICE_USER_PRIO_FACTOR", Real, Accountant, Param, Some("1e10"), "Priority factor of nice_user jobs"),
    k("REMOTE_PRIO_FACTOR", Real, Accountant, Param, Some("1e7"), "Priority factor of submitters from other domains"),
    k("ACCOUNTANT_LOCAL_DOMAIN", Str, Accountant, Param, Some(""), "Domain that counts as local for REMOTE_PRIO_FACTOR"),
    k("ACCOUNTANT_DATABASE_FILE", Path, Accountant, Param, Some("$(SPOOL)/Accountantnew.log"), "File of the accountant's state (HTCondor)"),
    k("ACCOUNTANT_HOST", Str, Accountant, Param, Some(""), "Host of a remote accountant (empty: the negotiator's own)"),
    k("MAX_ACCOUNTANT_DATABASE_SIZE", Int, Accountant, Param, Some("1000000"), "Bytes of accountant log before it is compacted"),
    k("ACCOUNTING_DOMAIN", Str, Accountant, Param, Some("$(UID_DOMAIN)"), "Domain appended to submitter names"),
    k("NICE_USER_ACCOUNTING_GROUP_NAME", Str, Accountant, Param, Some("nice-user"), "Accounting group nice_user jobs are charged to"),
    k("GROUP_NAMES", List, Groups, Param, Some(""), "All accounting groups and subgroups (dot-separated hierarchy)"),
    k("GROUP_QUOTA_<group>", Real, Groups, NoDefault, None, "Static quota of a group, in slot weight"),
    k("GROUP_QUOTA_DYNAMIC_<group>", Real, Groups, NoDefault, None, "Quota of a group as a fraction of its parent's"),
    k("GROUP_ACCEPT_SURPLUS", Bool, Groups, Param, Some("false"), "Every group may use other groups' unused quota"),
    k("GROUP_ACCEPT_SURPLUS_<group>", Bool, Groups, NoDefault, None, "Per-group override of GROUP_ACCEPT_SURPLUS"),
    k("GROUP_AUTOREGROUP", Bool, Groups, Param, Some("false"), "Jobs of a group over quota may also negotiate as <none>"),
    k("GROUP_AUTOREGROUP_<group>", Bool, Groups, NoDefault, None, "Per-group override of GROUP_AUTOREGROUP"),
    k("GROUP_PRIO_FACTOR_<group>", Real, Groups, NoDefault, None, "Priority factor of new submitters in a group"),
    k("GROUP_SORT_EXPR", Expr, Groups, Param, Some("ifThenElse(AccountingGroup=?=\"<none>\",3.4e+38,ifThenElse(GroupQuota>0,GroupResourcesInUse/GroupQuota,3.3e+38))"), "Order in which groups negotiate (smallest positive first)"),
    k("GROUP_QUOTA_MAX_ALLOCATION_ROUNDS", Int, Groups, Param, Some("3"), "Rounds of surplus allocation per cycle"),
    k("GROUP_QUOTA_ROUND_ROBIN_RATE", Real, Groups, Param, Some("1.0e100"), "Slots given per round-robin step when allocating surplus"),
    k("CONCURRENCY_LIMIT_DEFAULT", Real, ConcurrencyLimits, Param, Some("2308032"), "Capacity of a concurrency limit name with no <NAME>_LIMIT"),
    k("CONCURRENCY_LIMIT_DEFAULT_<set>", Real, ConcurrencyLimits, NoDefault, None, "Capacity of names <SET>.<member> with no <NAME>_LIMIT"),
    k("<name>_LIMIT", Real, ConcurrencyLimits, NoDefault, None, "Capacity of the named concurrency limit (names are case-insensitive)"),
    k("DEFRAG_INTERVAL", Duration, Defrag, Param, Some("600"), "Seconds between defrag policy evaluations"),
    k("DEFRAG_DRAINING_MACHINES_PER_HOUR", Real, Defrag, Param, Some("0"), "Machines to start draining per hour"),
    k("DEFRAG_MAX_WHOLE_MACHINES", Int, Defrag, Param, Some("-1"), "Stop draining when this many machines are whole (-1: no limit)"),
    k("DEFRAG_MAX_CONCURRENT_DRAINING", Int, Defrag, Param, Some("-1"), "Stop draining while this many machines drain (-1: no limit)"),
    k("DEFRAG_DRAINING_START_EXPR", Expr, Defrag, Param, Some("FALSE"), "START of a machine while it drains"),
    k("DEFRAG_REQUIREMENTS", Expr, Defrag, Param, Some(""), "Machines that may be drained"),
    k("DEFRAG_RANK", Expr, Defrag, Param, Some("-ExpectedMachineGracefulDrainingBadput"), "Preference among machines to drain"),
    k("DEFRAG_WHOLE_MACHINE_EXPR", Expr, Defrag, Param, Some("Cpus == TotalSlotCpus"), "When a machine counts as whole"),
    k("DEFRAG_DRAINING_SCHEDULE", Str, Defrag, Param, Some("graceful"), "How to drain: graceful, quick or fast"),
    k("DEFRAG_CANCEL_REQUIREMENTS", Expr, Defrag, Param, Some("$(DEFRAG_WHOLE_MACHINE_EXPR)"), "Draining stops when this becomes true"),
    k("DEFRAG_NAME", Str, Defrag, Param, Some(""), "Name of the defrag daemon ad"),
    k("DEFRAG_UPDATE_INTERVAL", Duration, Defrag, Param, Some("300"), "Seconds between defrag ad updates"),
    k("DEFRAG_STATE_FILE", Path, Defrag, NoDefault, None, "File where the defrag daemon keeps its state"),
    k("START", Expr, StartdPolicy, Param, Some("True"), "When the slot is willing to start a job"),
    k("SUSPEND", Expr, StartdPolicy, Param, Some("False"), "When a running job is suspended"),
    k("CONTINUE", Expr, StartdPolicy, Param, Some("True"), "When a suspended job continues"),
    k("PREEMPT", Expr, StartdPolicy, Param, Some("False"), "When a running job is evicted (machine policy)"),
    k("KILL", Expr, StartdPolicy, Param, Some("False"), "When a vacating job is killed at once"),
    k("WANT_SUSPEND", Expr, StartdPolicy, Param, Some("False"), "Suspend (true) or evict (false) when SUSPEND/PREEMPT fire"),
    k("WANT_VACATE", Expr, StartdPolicy, Param, Some("True"), "Let an evicted job vacate gracefully"),
    k("WANT_SUSPEND_VANILLA", Expr, StartdPolicy, NoDefault, None, "WANT_SUSPEND for vanilla jobs (old startd)"),
    k("WANT_VACATE_VANILLA", Expr, StartdPolicy, NoDefault, None, "WANT_VACATE for vanilla jobs (old startd)"),
    k("SUSPEND_VANILLA", Expr, StartdPolicy, NoDefault, None, "SUSPEND for vanilla jobs (old startd)"),
    k("CONTINUE_VANILLA", Expr, StartdPolicy, NoDefault, None, "CONTINUE for vanilla jobs (old startd)"),
    k("PREEMPT_VANILLA", Expr, StartdPolicy, NoDefault, None, "PREEMPT for vanilla jobs (old startd)"),
    k("KILL_VANILLA", Expr, StartdPolicy, NoDefault, None, "KILL for vanilla jobs (old startd)"),
    k("RANK", Expr, StartdPolicy, Builtin, Some("0"), "The slot's preference among jobs; higher may preempt lower"),
    k("IS_OWNER", Expr, StartdPolicy, Param, Some("False"), "While true the slot stays in the Owner state"),
    k("MAXJOBRETIREMENTTIME", Expr, StartdPolicy, Builtin, Some("0"), "Seconds a job may run on after it is preempted"),
    k("MachineMaxVacateTime", Expr, StartdPolicy, Param, Some("$(MaxVacateTime)"), "Seconds a vacating job gets before it is killed"),
    k("CLAIM_WORKLIFE", Duration, StartdPolicy, Param, Some("1200"), "Seconds after which a claim takes no new jobs"),
    k("MATCH_TIMEOUT", Duration, StartdPolicy, Param, Some("120"), "Seconds a Matched slot waits for its claim"),
    k("RunBenchmarks", Expr, StartdPolicy, Param, Some("LastBenchmark == 0"), "When an Unclaimed slot runs benchmarks"),
    k("STARTD_ATTRS", List, StartdPolicy, Param, Some(""), "Knobs published in the slot ad"),
    k("STARTD_EXPRS", List, StartdPolicy, NoDefault, None, "Old name of STARTD_ATTRS"),
    k("STARTD_JOB_ATTRS", List, StartdPolicy, Param, Some(""), "Job attributes copied into the slot ad"),
    k("NUM_SLOTS", Int, StartdPolicy, NoDefault, None, "Number of static slots (default: one per core)"),
    k("NUM_CPUS", Int, StartdPolicy, Param, Some("$(DETECTED_CPUS_LIMIT)"), "Cores the startd advertises"),
    k("SLOT_TYPE_<n>", Str, StartdPolicy, NoDefault, None, "Resources of slot type N (cpus=, mem=, disk=, swap=, or a fraction)"),
    k("NUM_SLOTS_TYPE_<n>", Int, StartdPolicy, NoDefault, None, "Number of slots of type N"),
    k("SLOT_TYPE_<n>_PARTITIONABLE", Bool, StartdPolicy, NoDefault, None, "Slot type N is partitionable"),
    k("SLOT<n>_STARTD_ATTRS", List, StartdPolicy, NoDefault, None, "STARTD_ATTRS added for slot N"),
    k("MODIFY_REQUEST_EXPR_REQUESTCPUS", Expr, StartdPolicy, Param, Some("quantize(RequestCpus,{1})"), "Rounding of requested cores for a dynamic slot"),
    k("MODIFY_REQUEST_EXPR_REQUESTMEMORY", Expr, StartdPolicy, Param, Some("quantize(RequestMemory,{128})"), "Rounding of requested memory for a dynamic slot"),
    k("MODIFY_REQUEST_EXPR_REQUESTDISK", Expr, StartdPolicy, Param, Some("quantize(RequestDisk,{1024})"), "Rounding of requested disk for a dynamic slot"),
    k("MUST_MODIFY_REQUEST_EXPRS", Bool, StartdPolicy, Param, Some("false"), "Keep the modified requests even when the partitionable slot no longer matches them"),
    k("JOB_DEFAULT_REQUESTMEMORY", Expr, JobScheduling, Param, Some("ifthenelse(MemoryUsage =!= UNDEFINED,MemoryUsage,(ImageSize+1023)/1024)"), "request_memory of a job that gives none"),
    k("JOB_DEFAULT_REQUESTCPUS", Expr, JobScheduling, Param, Some("1"), "request_cpus of a job that gives none"),
    k("JOB_DEFAULT_REQUESTDISK", Expr, JobScheduling, Param, Some("DiskUsage"), "request_disk of a job that gives none"),
    k("IS_VALID_CHECKPOINT_PLATFORM", Expr, StartdPolicy, NoDefault, None, "Standard-universe checkpoint compatibility (obsolete)"),
    k("ALIVE_INTERVAL", Duration, JobScheduling, NoDefault, None, "Schedd keep-alive interval to claimed startds, seconds"),
    k("MAX_CLAIM_ALIVES_MISSED", Int, JobScheduling, Param, Some("6"), "Keep-alives missed before a claim is dropped"),
    k("JOB_RENICE_INCREMENT", Expr, StartdPolicy, Param, Some("0"), "Nice increment of running jobs"),
    k("SLOTS_CONNECTED_TO_CONSOLE", Int, StartdPolicy, Param, Some("0"), "Slots that notice console activity"),
    k("SLOTS_CONNECTED_TO_KEYBOARD", Int, StartdPolicy, Param, Some("0"), "Slots that notice keyboard activity"),
    k("DISCONNECTED_KEYBOARD_IDLE_BOOST", Duration, StartdPolicy, Param, Some("1200"), "Idle seconds added for slots not connected to the keyboard"),
    k("CONSUMPTION_POLICY", Bool, StartdPolicy, Param, Some("false"), "Partitionable slots use consumption policies"),
    k("SCHEDD_INTERVAL", Duration, JobScheduling, Param, Some(""), "Seconds between schedd ad updates and periodic work"),
    k("MINUTE", Int, StartdPolicy, Param, Some("60"), "60, for policy expressions"),
    k("HOUR", Int, StartdPolicy, Param, Some("3600"), "3600, for policy expressions"),
    k("StateTimer", Expr, StartdPolicy, Param, Some("(time() - EnteredCurrentState)"), "Seconds in the current state"),
    k("ActivityTimer", Expr, StartdPolicy, Param, Some("(time() - EnteredCurrentActivity)"), "Seconds in the current activity"),
    k("StartIdleTime", Expr, StartdPolicy, Param, Some("15 * $(MINUTE)"), "Keyboard idle time before a desktop starts jobs"),
    k("ContinueIdleTime", Expr, StartdPolicy, Param, Some("5 * $(MINUTE)"), "Keyboard idle time before a suspended job continues"),
    k("MaxSuspendTime", Expr, StartdPolicy, Param, Some("10 * $(MINUTE)"), "Longest suspension before eviction"),
    k("MaxVacateTime", Expr, StartdPolicy, Param, Some("10 * $(MINUTE)"), "Longest vacate before kill"),
    k("BackgroundLoad", Real, StartdPolicy, Param, Some("0.3"), "Load below which the CPU counts as idle"),
    k("HighLoad", Real, StartdPolicy, Param, Some("0.5"), "Load above which the CPU counts as busy"),
    k("SmallJob", Expr, StartdPolicy, Param, Some("(TARGET.ImageSize <  (15 * 1024))"), "Job image below 15 MB"),
    k("BigJob", Expr, StartdPolicy, Param, Some("(TARGET.ImageSize >= (50 * 1024))"), "Job image of 50 MB or more"),
    k("MediumJob", Expr, StartdPolicy, Param, Some("(TARGET.ImageSize >= (15 * 1024) && TARGET.ImageSize < (50 * 1024))"), "Job image between 15 and 50 MB"),
    k("IsVanilla", Expr, StartdPolicy, Param, Some("(TARGET.JobUniverse == $(VANILLA))"), "The candidate job is vanilla universe"),
    k("HAD_LIST", List, HighAvailability, Param, Some(""), "host:port of every HAD daemon, in CONDOR_HOST order"),
    k("REPLICATION_LIST", List, HighAvailability, Param, Some(""), "host:port of every replication daemon"),
    k("HAD_CONNECTION_TIMEOUT", Duration, HighAvailability, Param, Some("5"), "Seconds HAD waits for its peers"),
    k("HAD_USE_PRIMARY", Bool, HighAvailability, Param, Some("false"), "The first HAD_LIST entry is the primary central manager"),
    k("HAD_CONTROLLEE", Str, HighAvailability, Builtin, Some("NEGOTIATOR"), "Daemon HAD keeps running on exactly one central manager"),
    k("HAD_USE_REPLICATION", Bool, HighAvailability, Param, Some("false"), "Replicate the accountant state file"),
    k("HAD_USE_SHARED_PORT", Bool, HighAvailability, Param, Some("false"), "HAD listens through the shared port"),
    k("HAD_UPDATE_INTERVAL", Duration, HighAvailability, Param, Some("300"), "Seconds between HAD ad updates"),
    k("REPLICATION_INTERVAL", Duration, HighAvailability, Param, Some("300"), "Seconds between replication rounds"),
    k("MAX_TRANSFER_LIFETIME", Duration, HighAvailability, Param, Some("300"), "Time limit of one state transfer, seconds"),
    k("MASTER_NEGOTIATOR_CONTROLLER", Str, HighAvailability, NoDefault, None, "Daemon that controls the negotiator (HAD in an HA pool)"),
    k("MASTER_HAD_BACKOFF_CONSTANT", Duration, HighAvailability, NoDefault, None, "Master's restart back-off for HAD, seconds"),
    k("STATE_FILE", Path, HighAvailability, Builtin, Some("$(SPOOL)/Accountantnew.log"), "File replicated between central managers"),
    k("DAEMON_LIST", List, Pool, Param, Some("MASTER"), "Daemons the master runs"),
    k("DC_DAEMON_LIST", List, Pool, Param, Some(""), "Daemons that speak the DaemonCore protocol"),
    k("SPOOL", Path, Pool, Param, Some("$(LOCAL_DIR)/spool"), "Spool directory"),
    k("LOG", Path, Pool, Param, Some("$(LOCAL_DIR)/log"), "Log directory"),
    k("LOCAL_DIR", Path, Pool, Param, Some("$(TILDE)"), "Base of the local directories"),
    k("RELEASE_DIR", Path, Pool, Param, Some("/usr"), "Installation directory"),
    k("UID_DOMAIN", Str, Pool, Param, Some("$(FULL_HOSTNAME)"), "Domain of user identities (submitter names are user@UID_DOMAIN)"),
    k("FILESYSTEM_DOMAIN", Str, Pool, Param, Some("$(FULL_HOSTNAME)"), "Machines sharing a file system"),
    k("USE_SHARED_PORT", Bool, Pool, Param, Some("true"), "Daemons listen through the shared port daemon"),
    k("SHARED_PORT_PORT", Int, Pool, Param, Some("$(COLLECTOR_PORT)"), "Port of the shared port daemon"),
    k("GANGLIAD_INTERVAL", Duration, Monitoring, Param, Some("60"), "Seconds between gangliad publications"),
    k("GANGLIAD_VERBOSITY", Int, Monitoring, Param, Some("0"), "Metrics with a higher Verbosity are not published"),
    k("GANGLIAD_REQUIREMENTS", Expr, Monitoring, Param, Some(""), "Constraint on the ads gangliad reads"),
    k("GANGLIAD_METRICS_CONFIG_DIR", Path, Monitoring, Param, Some("$(ETC)/ganglia.d"), "Directory of metric definition files"),
    k("GANGLIAD_PER_EXECUTE_NODE_METRICS", Bool, Monitoring, Param, Some("true"), "Publish per-execute-node metrics"),
    k("GANGLIA_SEND_DATA_FOR_ALL_HOSTS", Bool, Monitoring, Param, Some("false"), "Publish metrics for hosts Ganglia does not monitor"),
    k("GANGLIA_GSTAT_COMMAND", Str, Monitoring, Param, Some("gstat --all --mpifile --gmond_ip=localhost --gmond_port=8649"), "Command listing the hosts Ganglia monitors"),
    k("GANGLIAD_DEFAULT_CLUSTER", Str, Monitoring, NoDefault, None, "Default Ganglia cluster of a metric"),
    k("GANGLIAD_DEFAULT_MACHINE", Str, Monitoring, NoDefault, None, "Default machine of a metric"),
    k("GANGLIAD_DEFAULT_IP", Str, Monitoring, NoDefault, None, "Default IP of a metric"),
    k("GANGLIAD_MIN_METRIC_LIFETIME", Duration, Monitoring, NoDefault, None, "Minimum lifetime (DMAX) of a metric"),
    k("LOCAL_CONFIG_FILE", List, Pool, Param, Some(""), "Files read after the main configuration file"),
    k("LOCAL_CONFIG_DIR", List, Pool, Param, Some(""), "Directories whose files are read after the main file, in lexical order"),
    k("LOCAL_CONFIG_DIR_EXCLUDE_REGEXP", Str, Pool, Param, Some("^((\\..*)|(.*\\.pl)|(.*\\.py)|(.*\\.sh)|(.*~)|(#.*)|(.*\\.rpmsave)|(.*\\.rpmnew)|(.*\\.dpkg-old)|(.*\\.dpkg-dist)|(.*\\.cfsaved))$"), "File names in LOCAL_CONFIG_DIR that are skipped"),
    k("REQUIRE_LOCAL_CONFIG_FILE", Bool, Pool, Param, Some("true"), "A missing LOCAL_CONFIG_FILE is an error"),
    k("AERIE_NODE_ID", Int, AerieNode, Aerie, Some("0"), "This central manager's Raft node id (unique in AERIE_CMS); 0 means derive it from AERIE_CMS and the host name"),
    k("AERIE_CMS", List, AerieNode, Aerie, Some(""), "Peers of the Raft group: id=host:port entries (3 or 5), the same on every central manager"),
    k("AERIE_RAFT_ADDRESS", Str, AerieNode, Aerie, Some("0.0.0.0:9620"), "Address this node's Raft endpoint listens on"),
    k("AERIE_ADMIN_ADDRESS", Str, AerieNode, Aerie, Some("127.0.0.1:9621"), "Address of the admin API (cmctl)"),
    k("AERIE_METRICS_ADDRESS", Str, AerieNode, Aerie, Some("127.0.0.1:9622"), "Address of the Prometheus metrics endpoint (empty: off)"),
    k("AERIE_COLLECTOR_ADDRESS", Str, AerieNode, Aerie, Some("0.0.0.0:$(COLLECTOR_PORT)"), "Address the collector listens on"),
    k("AERIE_DATA_DIR", Path, AerieNode, Aerie, Some("/var/lib/aerie"), "Directory of the Raft log, snapshots and node state"),
    k("AERIE_ELECTION_TIMEOUT", Duration, AerieNode, Aerie, Some("1500ms"), "Minimum Raft election timeout (the maximum is twice this)"),
    k("AERIE_HEARTBEAT_INTERVAL", Duration, AerieNode, Aerie, Some("250ms"), "Raft leader heartbeat interval"),
    k("AERIE_SNAPSHOT_INTERVAL", Int, AerieNode, Aerie, Some("10000"), "Raft log entries between snapshots"),
    k("AERIE_TLS_CERT", Path, AerieNode, Aerie, Some(""), "PEM certificate of this node (Raft and admin TLS; empty: no TLS)"),
    k("AERIE_TLS_KEY", Path, AerieNode, Aerie, Some(""), "PEM private key of AERIE_TLS_CERT"),
    k("AERIE_TLS_CA", Path, AerieNode, Aerie, Some(""), "PEM CA bundle peers' certificates must chain to"),
    k("AERIE_COLLECTOR_MAX_AD_SIZE", Int, AerieNode, Aerie, Some("1048576"), "Largest ad the collector accepts, bytes"),
    k("AERIE_LOG_LEVEL", Str, AerieNode, Aerie, Some("info"), "Log filter (tracing env-filter syntax)"),
];

/// The catalogue entry for `name`: an exact entry, else the family with the longest fixed part
/// (so `GROUP_QUOTA_DYNAMIC_x` is a dynamic quota, not a static quota of `DYNAMIC_x`).
pub fn find(name: &str) -> Option<&'static Knob> {
    if let Some(k) = CATALOGUE
        .iter()
        .find(|k| !k.is_pattern() && k.name.eq_ignore_ascii_case(name))
    {
        return Some(k);
    }
    CATALOGUE
        .iter()
        .filter(|k| k.is_pattern() && k.matches(name))
        .max_by_key(|k| {
            k.name.len() - k.name.find('>').unwrap_or(0) + k.name.find('<').unwrap_or(0)
        })
}

/// The knobs a part of the central manager reads.
pub fn by_area(area: Area) -> impl Iterator<Item = &'static Knob> {
    CATALOGUE.iter().filter(move |k| k.area == area)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_defaults() {
        let d = |n: &str| find(n).and_then(|k| k.default);
        assert_eq!(d("PRIORITY_HALFLIFE"), Some("86400"));
        assert_eq!(d("DEFAULT_PRIO_FACTOR"), Some("1000"));
        assert_eq!(d("NEGOTIATOR_INTERVAL"), Some("60"));
        assert_eq!(d("CLASSAD_LIFETIME"), Some("900"));
        assert_eq!(d("ABSENT_EXPIRE_ADS_AFTER"), Some("2592000"));
    }

    #[test]
    fn families() {
        assert_eq!(
            find("GROUP_QUOTA_group_physics.hep").unwrap().name,
            "GROUP_QUOTA_<group>"
        );
        assert_eq!(
            find("group_quota_dynamic_group_physics").unwrap().name,
            "GROUP_QUOTA_DYNAMIC_<group>"
        );
        assert_eq!(
            find("GROUP_ACCEPT_SURPLUS_x").unwrap().name,
            "GROUP_ACCEPT_SURPLUS_<group>"
        );
        assert_eq!(
            find("GROUP_ACCEPT_SURPLUS").unwrap().name,
            "GROUP_ACCEPT_SURPLUS"
        );
        assert_eq!(find("XSW_LIMIT").unwrap().name, "<name>_LIMIT");
        assert_eq!(
            find("CONCURRENCY_LIMIT_DEFAULT_LARGE").unwrap().name,
            "CONCURRENCY_LIMIT_DEFAULT_<set>"
        );
        assert_eq!(
            find("SLOT_TYPE_2_PARTITIONABLE").unwrap().name,
            "SLOT_TYPE_<n>_PARTITIONABLE"
        );
        assert!(find("NO_SUCH_KNOB_AT_ALL").is_none());
    }

    #[test]
    fn names_are_unique_and_aerie_knobs_are_prefixed() {
        let mut seen = std::collections::HashSet::new();
        for k in CATALOGUE {
            assert!(
                seen.insert(k.name.to_ascii_uppercase()),
                "duplicate {}",
                k.name
            );
            assert_eq!(k.kind == Aerie, k.name.starts_with("AERIE_"), "{}", k.name);
            assert!(!k.meaning.is_empty());
        }
    }

    #[test]
    fn param_defaults_are_htcondors_table() {
        for k in CATALOGUE.iter().filter(|k| k.kind == Param) {
            assert_eq!(
                crate::defaults::default_raw(k.name),
                k.default,
                "{}",
                k.name
            );
        }
        for k in CATALOGUE
            .iter()
            .filter(|k| matches!(k.kind, Builtin | NoDefault) && !k.is_pattern())
        {
            assert_eq!(
                crate::defaults::default_raw(k.name),
                None,
                "{} must not be in the param table",
                k.name
            );
        }
    }
}
