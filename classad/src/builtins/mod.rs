//! Built-in functions of libclassad 23 and those HTCondor registers on top of it, in families
//! as libclassad's own function table groups them (the FunctionCall constructor in
//! src/classad/fnCall.cpp; HTCondor adds its functions in
//! src/condor_utils/compat_classad.cpp):
//!
//! | family | module | functions |
//! |---|---|---|
//! | type predicates | `types` | isUndefined, isError, isString, isInteger, ... |
//! | lists | `lists` | member, identicalMember, size, sum, avg, min, max, anyCompare, allCompare |
//! | time | [`time`] | time, currentTime, getYear, ..., splitTime, formatTime, interval |
//! | strings | `strings` | strcat, join, toUpper, toLower, substr, strcmp, stricmp |
//! | versions | `version` | versioncmp, versionLE, ..., version_in_range |
//! | pattern matching | `pattern` | regexp, regexpMember, regexps, replace, replaceAll |
//! | conversion | `conversion` | int, real, string, bool, absTime, relTime |
//! | mathematics | `math` | floor, ceil, ceiling, round, pow, quantize, random |
//! | expressions | `meta` | ifThenElse, eval, unparse, unresolved, debug |
//! | string lists | `stringlist` | stringListsIntersect and HTCondor's stringList* |
//! | HTCondor's | `condor` | splitUserName, splitSlotName, split, userHome, userMap, evalInEachContext, countMatches, argsToList, listToArgs, envV1ToV2, mergeEnvironment |
//!
//! Two modules serve the families rather than being one: `c_number` (what C does to numbers
//! that several families inherit: strtod, the casts of a double) and [`args_env`] (the job
//! argument and environment string grammar of HTCondor's ArgList and Env classes,
//! src/condor_utils/condor_arglist.cpp and env.cpp).
//!
//! A call's name is resolved once, when the expression is parsed ([`Builtin::lookup`], as
//! libclassad's MakeFunctionCall looks it up in its table); evaluating a call is one `match` on
//! the resolved [`Builtin`], never a name lookup. Each function keeps the reference's argument
//! checks: a wrong number of arguments is `error`, undefined arguments usually give
//! `undefined`. Arguments are evaluated when a function asks for them (`Args`), because
//! some evaluate only some of them (`ifThenElse`) or none (`unparse`).
pub mod args_env;
mod c_number;
mod condor;
mod conversion;
mod lists;
mod math;
mod meta;
mod pattern;
mod stringlist;
mod strings;
pub mod time;
mod types;
mod version;

pub use c_number::strtod;
pub use conversion::{to_int_value, to_real_value, to_string_value};
pub use stringlist::split_list;

use crate::eval::{self, Ctx, Env};
use crate::expr::{Call, Expr};
use crate::value::Value;

macro_rules! builtins {
    ($($family:literal { $($v:ident => $n:literal),* $(,)? })*) => {
        /// A built-in function, resolved from its name when the call is parsed.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Builtin {
            $($(
                #[doc = concat!("`", $n, "()`, of the ", $family, " family.")]
                $v,
            )*)*
        }
        impl Builtin {
            /// Resolve a function name (case-insensitive).
            pub fn lookup(name: &str) -> Option<Builtin> {
                $($( if name.eq_ignore_ascii_case($n) { return Some(Builtin::$v); } )*)*
                None
            }
            /// The function's name as libclassad's table spells it.
            pub fn name(self) -> &'static str {
                match self { $($(Builtin::$v => $n),*),* }
            }
            /// Every built-in function name.
            pub const ALL: &'static [&'static str] = &[$($($n),*),*];
        }
    };
}

// In the order of libclassad's table, HTCondor's additions last.
builtins! {
    "type predicate" {
        IsUndefined => "isUndefined", IsError => "isError", IsString => "isString",
        IsInteger => "isInteger", IsReal => "isReal", IsList => "isList", IsClassAd => "isClassAd",
        IsBoolean => "isBoolean", IsAbsTime => "isAbsTime", IsRelTime => "isRelTime",
    }
    "list" {
        Member => "member", IdenticalMember => "identicalMember",
        Size => "size", Sum => "sum", Avg => "avg", Min => "min", Max => "max",
        AnyCompare => "anyCompare", AllCompare => "allCompare",
    }
    "time" {
        Time => "time", CurrentTime => "currentTime", TimeZoneOffset => "timeZoneOffset",
        DayTime => "dayTime", GetYear => "getYear", GetMonth => "getMonth",
        GetDayOfYear => "getDayOfYear", GetDayOfMonth => "getDayOfMonth",
        GetDayOfWeek => "getDayOfWeek", GetDays => "getDays", GetHours => "getHours",
        GetMinutes => "getMinutes", GetSeconds => "getSeconds", SplitTime => "splitTime",
        FormatTime => "formatTime",
    }
    "string" {
        Strcat => "strcat", Join => "join", ToUpper => "toUpper", ToLower => "toLower",
        Substr => "substr", Strcmp => "strcmp", Stricmp => "stricmp",
    }
    "version" {
        VersionCmp => "versioncmp", VersionLE => "versionLE", VersionLT => "versionLT",
        VersionGE => "versionGE", VersionGT => "versionGT", VersionEQ => "versionEQ",
        VersionInRange => "version_in_range",
    }
    "pattern matching" {
        Regexp => "regexp", RegexpMember => "regexpMember", Regexps => "regexps",
        Replace => "replace", ReplaceAll => "replaceAll",
    }
    "conversion" {
        Int => "int", Real => "real", String => "string", Bool => "bool",
        AbsTime => "absTime", RelTime => "relTime",
    }
    "expression" {
        Unparse => "unparse", Unresolved => "unresolved",
    }
    "mathematics" {
        Floor => "floor", Ceil => "ceil", Ceiling => "ceiling", Round => "round", Pow => "pow",
        Log => "log", Quantize => "quantize", Random => "random",
    }
    "expression" {
        IfThenElse => "ifThenElse",
    }
    "time" {
        Interval => "interval",
    }
    "expression" {
        Eval => "eval",
    }
    "string list" {
        StringListsIntersect => "stringListsIntersect",
    }
    "expression" {
        Debug => "debug",
    }
    "HTCondor" {
        EnvV1ToV2 => "envV1ToV2", MergeEnvironment => "mergeEnvironment",
        ListToArgs => "listToArgs", ArgsToList => "argsToList",
    }
    "string list" {
        StringListSize => "stringListSize", StringListSum => "stringListSum",
        StringListAvg => "stringListAvg", StringListMin => "stringListMin",
        StringListMax => "stringListMax", StringListMember => "stringListMember",
        StringListIMember => "stringListIMember",
        StringListSubsetMatch => "stringListSubsetMatch",
        StringListISubsetMatch => "stringListISubsetMatch",
        StringListRegexpMember => "stringList_regexpMember",
    }
    "HTCondor" {
        UserHome => "userHome", UserMap => "userMap", SplitUserName => "splitUserName",
        SplitSlotName => "splitSlotName", Split => "split",
        EvalInEachContext => "evalInEachContext", CountMatches => "countMatches",
    }
}

/// One call's argument expressions and the scope they are evaluated in.
pub(crate) struct Args<'c, 'a> {
    /// The evaluation's shared state (depth, failure).
    pub ctx: &'c Ctx,
    /// MY, TARGET and the enclosing ads where the call stands.
    pub env: Env<'a>,
    exprs: &'a [Expr],
}

impl<'a> Args<'_, 'a> {
    /// How many arguments the call has.
    pub fn len(&self) -> usize {
        self.exprs.len()
    }

    /// Whether the call has no arguments.
    pub fn is_empty(&self) -> bool {
        self.exprs.is_empty()
    }

    /// The `i`th argument's expression, unevaluated.
    pub fn expr(&self, i: usize) -> &'a Expr {
        &self.exprs[i]
    }

    /// The `i`th argument's value.
    pub fn eval(&self, i: usize) -> Value {
        eval::eval(self.ctx, self.env, &self.exprs[i])
    }

    /// The `i`th argument's value, or `default` when the call has fewer arguments.
    pub fn eval_or(&self, i: usize, default: Value) -> Value {
        if i < self.len() {
            self.eval(i)
        } else {
            default
        }
    }
}

/// The arguments of a function that takes `required` arguments and then an optional string
/// (the pattern functions' options, stringListsIntersect's delimiters), checked as libclassad
/// checks them: any `error` argument makes the call `error`, else any `undefined` one makes it
/// `undefined`; the optional string must be a string and is empty when absent.
fn args_and_option(a: &Args, required: usize) -> Result<(Vec<Value>, String), Value> {
    if !(required..=required + 1).contains(&a.len()) {
        return Err(Value::Error);
    }
    let v: Vec<Value> = (0..a.len()).map(|i| a.eval(i)).collect();
    if v.iter().any(Value::is_error) {
        return Err(Value::Error);
    }
    if v.iter().any(Value::is_undefined) {
        return Err(Value::Undefined);
    }
    let option = match v.get(required) {
        Some(Value::Str(s)) => s.to_string(),
        Some(_) => return Err(Value::Error),
        None => String::new(),
    };
    Ok((v, option))
}

/// Evaluate a function call.
pub(crate) fn call(ctx: &Ctx, env: Env<'_>, c: &Call) -> Value {
    let Some(f) = c.func else {
        return Value::Error;
    };
    let a = &Args {
        ctx,
        env,
        exprs: &c.args,
    };
    use Builtin as B;
    match f {
        B::IsUndefined
        | B::IsError
        | B::IsString
        | B::IsInteger
        | B::IsReal
        | B::IsList
        | B::IsClassAd
        | B::IsBoolean
        | B::IsAbsTime
        | B::IsRelTime => types::is_type(f, a),
        B::Member | B::IdenticalMember => lists::member(f, a),
        B::Size => lists::size(a),
        B::Sum | B::Avg => lists::sum_avg(f, a),
        B::Min | B::Max => lists::min_max(f, a),
        B::AnyCompare | B::AllCompare => lists::compare(f, a),
        B::Time => time::epoch_time(a),
        B::CurrentTime => time::current_time(a),
        B::TimeZoneOffset => time::time_zone_offset(a),
        B::DayTime => time::day_time(a),
        B::GetYear
        | B::GetMonth
        | B::GetDayOfYear
        | B::GetDayOfMonth
        | B::GetDayOfWeek
        | B::GetDays
        | B::GetHours
        | B::GetMinutes
        | B::GetSeconds => time::get_field(f, a),
        B::SplitTime => time::split_time(a),
        B::FormatTime => time::format_time(a),
        B::Interval => time::interval(a),
        B::Strcat | B::Join => strings::strcat(a, f == B::Join),
        B::ToUpper | B::ToLower => strings::change_case(f, a),
        B::Substr => strings::substr(a),
        B::Strcmp | B::Stricmp => strings::compare(f, a),
        B::VersionCmp
        | B::VersionLE
        | B::VersionLT
        | B::VersionGE
        | B::VersionGT
        | B::VersionEQ => version::compare(f, &c.name, a),
        B::VersionInRange => version::in_range(a),
        B::Regexp | B::RegexpMember => pattern::regexp(f, a),
        B::Regexps | B::Replace | B::ReplaceAll => pattern::substitute(f, a),
        B::Int => conversion::int(a),
        B::Real => conversion::real(a),
        B::String => conversion::string(a),
        B::Bool => conversion::bool(a),
        B::AbsTime | B::RelTime => conversion::time(a, f == B::RelTime),
        B::Floor | B::Ceil | B::Ceiling | B::Round => math::round(f, a),
        B::Pow => math::pow(a),
        // fnCall.cpp leaves log() commented out of its table: a call is an error, as for a
        // name it does not know.
        B::Log => Value::Error,
        B::Quantize => math::quantize(a),
        B::Random => math::random(a),
        B::IfThenElse => meta::if_then_else(a),
        B::Eval => meta::eval(a),
        B::Unparse => meta::unparse(a),
        B::Unresolved => meta::unresolved(a),
        B::Debug => meta::debug(a),
        B::StringListsIntersect => stringlist::intersect(a),
        B::StringListSize
        | B::StringListSum
        | B::StringListAvg
        | B::StringListMin
        | B::StringListMax => stringlist::summarize(f, a),
        B::StringListMember
        | B::StringListIMember
        | B::StringListSubsetMatch
        | B::StringListISubsetMatch => stringlist::member(f, a),
        B::StringListRegexpMember => stringlist::regexp_member(a),
        B::SplitUserName | B::SplitSlotName => condor::split_name(f, a),
        B::Split => condor::split(a),
        B::EvalInEachContext | B::CountMatches => condor::eval_in_each_context(f, a),
        B::UserHome => condor::user_home(a),
        B::UserMap => condor::user_map(a),
        B::ArgsToList | B::ListToArgs => condor::args(f, a),
        B::EnvV1ToV2 => condor::env_v1_to_v2(a),
        B::MergeEnvironment => condor::merge_environment(a),
    }
}
