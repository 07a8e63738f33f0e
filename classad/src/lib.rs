//! The HTCondor ClassAd language as libclassad 23 (with HTCondor's extra functions) has it:
//! parse (new `[a = 1; b = "x"]` and old one-attribute-per-line syntax), evaluate (three-valued
//! logic, MY/TARGET scoping, lists that keep their element expressions and evaluate them where
//! and when libclassad does, every built-in), unparse exactly as the reference prints, and
//! match (symmetric match, rank).
//!
//! Lookups never allocate: attribute names carry a precomputed case-insensitive hash and ads
//! index their attributes by it.
#![warn(missing_docs)]

pub mod ad;
pub mod builtins;
pub mod cache;
pub mod dump;
pub mod error;
pub mod eval;
pub mod expr;
pub mod format;
pub mod json;
pub mod lexer;
pub mod list;
pub mod matching;
pub mod name;
pub mod parser;
pub mod printf;
pub mod value;

pub use ad::{Attr, ClassAd};
pub use builtins::Builtin;
pub use cache::{parse_old_ads_cached, AttrCache};
pub use dump::parse_old_dumps;
pub use error::ParseError;
pub use eval::{EvalLimit, MAX_EVAL_STEPS};
pub use expr::{BinOp, Expr, ExprList, References, ScopeKw, UnOp};
pub use list::List;
pub use matching::{matches, rank, symmetric_match};
pub use name::Name;
pub use value::Value;

/// Parse one expression (new syntax; string escapes as in new ClassAds).
pub fn parse_expr(text: &str) -> Result<Expr, ParseError> {
    parser::parse_expr(text)
}

/// Parse one ad: new syntax if the text starts with `[`, otherwise old syntax.
pub fn parse_ad(text: &str) -> Result<ClassAd, ParseError> {
    if text.trim_start().starts_with('[') {
        parser::parse_new_ad(text)
    } else {
        parser::parse_old_ad(text)
    }
}

/// Parse blank-line separated old-syntax ads (a `condor_status -long` dump), as libclassad
/// reads them: a line that does not parse ends its ad. See [`parse_old_ads_strict`].
pub fn parse_old_ads(text: &str) -> Result<Vec<ClassAd>, ParseError> {
    parser::parse_old_ads(text)
}

/// Parse blank-line separated old-syntax ads, failing at the first line that does not parse.
pub fn parse_old_ads_strict(text: &str) -> Result<Vec<ClassAd>, ParseError> {
    parser::parse_old_ads_strict(text)
}

/// Evaluate an expression with no ads.
pub fn eval(e: &Expr) -> Value {
    eval::eval_in(e, None, None)
}

#[cfg(test)]
mod tests;
