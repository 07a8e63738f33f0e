//! The job's arguments, in HTCondor's two syntaxes (`condor_utils/condor_arglist.cpp`).
//!
//! A job ad carries its arguments either as `Arguments` (the "new", V2 raw syntax) or as `Args`
//! (the "old", V1 raw syntax); `Arguments` wins when both are there, as in
//! `ArgList::AppendArgsFromClassAd`.
//!
//! - V1 raw (Unix, `AppendArgsV1Raw_unix`): arguments are separated by spaces, tabs, CR or LF,
//!   and every other character is literal; there is no quoting, so an argument cannot hold
//!   white space.
//! - V2 raw (`split_args`): white space separates arguments; a single quote starts a quoted
//!   section that runs to the next single quote, inside which white space is literal and `''`
//!   is one literal `'`; a quoted section joins the characters around it into one argument
//!   (`a'b c'd` is `ab cd`), and `''` alone is an empty argument. Double quotes are ordinary
//!   characters here (they only matter in the submit file's V2 *quoted* form, which
//!   condor_submit strips before writing `Arguments`). A quote left open is an error.

use std::fmt;

/// An argument string that cannot be split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgsError {
    /// The byte offset in the raw string where the unbalanced quote starts.
    pub offset: usize,
    /// The text from that quote on, as `split_args` reports it.
    pub rest: String,
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Unbalanced quote starting here: {}", self.rest)
    }
}

impl std::error::Error for ArgsError {}

fn is_arg_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// Splits a V1 raw argument string (the job ad's `Args`) on white space.
pub fn split_v1(raw: &str) -> Vec<String> {
    raw.split(is_arg_space)
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect()
}

/// Splits a V2 raw argument string (the job ad's `Arguments`, or `Environment`'s entries).
pub fn split_v2(raw: &str) -> Result<Vec<String>, ArgsError> {
    let mut out = Vec::new();
    let mut buf = String::new();
    let mut in_token = false;
    let mut chars = raw.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c == '\'' {
            in_token = true;
            loop {
                match chars.next() {
                    None => {
                        return Err(ArgsError {
                            offset: at,
                            rest: raw[at..].to_string(),
                        })
                    }
                    Some((_, '\'')) => {
                        if chars.peek().map(|&(_, n)| n) == Some('\'') {
                            chars.next();
                            buf.push('\'');
                        } else {
                            break;
                        }
                    }
                    Some((_, q)) => buf.push(q),
                }
            }
        } else if is_arg_space(c) {
            if in_token {
                out.push(std::mem::take(&mut buf));
                in_token = false;
            }
        } else {
            in_token = true;
            buf.push(c);
        }
    }
    if in_token {
        out.push(buf);
    }
    Ok(out)
}

/// Joins arguments into V2 raw syntax so that [`split_v2`] gives them back: an argument with
/// white space or a quote is quoted whole, a quote doubled, an empty argument is `''`
/// (HTCondor's `join_args` quotes only the special characters; both split back the same).
pub fn join_v2<S: AsRef<str>>(args: &[S]) -> String {
    let mut out = String::new();
    for arg in args {
        let arg = arg.as_ref();
        if !out.is_empty() {
            out.push(' ');
        }
        if arg.is_empty() {
            out.push_str("''");
        } else if arg.chars().any(|c| is_arg_space(c) || c == '\'') {
            out.push('\'');
            out.push_str(&arg.replace('\'', "''"));
            out.push('\'');
        } else {
            out.push_str(arg);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2(raw: &str) -> Vec<String> {
        split_v2(raw).unwrap()
    }

    #[test]
    fn v1_splits_on_any_white_space_and_keeps_quotes_literal() {
        assert_eq!(
            split_v1("  a\tb\r\nc  'd e' \"f\" "),
            ["a", "b", "c", "'d", "e'", "\"f\""]
        );
        assert!(split_v1("   ").is_empty());
        // condor_submit 23.9.6 writes `args = one  two\"x 'q r'` as this `Args`.
        assert_eq!(split_v1("one two\"x 'q r'"), ["one", "two\"x", "'q", "r'"]);
    }

    #[test]
    fn v2_quoting_as_split_args_does() {
        assert_eq!(v2("one 'two three' four"), ["one", "two three", "four"]);
        assert_eq!(v2("a'b c'd"), ["ab cd"]);
        assert_eq!(v2("'it''s' x"), ["it's", "x"]);
        assert_eq!(v2("'' x ''"), ["", "x", ""]);
        assert_eq!(
            v2("\"double\" \"quotes are\""),
            ["\"double\"", "\"quotes", "are\""]
        );
        assert_eq!(v2("  \t "), Vec::<String>::new());
        assert_eq!(v2("'\ttab\nnl'"), ["\ttab\nnl"]);
        // condor_submit 23.9.6 writes
        // `arguments = "one 'two three' ""dq"" a'b c'd '' 'it''s'"` as this `Arguments`.
        assert_eq!(
            v2("one two' 'three \"dq\" ab' 'cd '' it''''s"),
            ["one", "two three", "\"dq\"", "ab cd", "", "it's"]
        );
    }

    #[test]
    fn v2_unbalanced_quote_names_where() {
        let err = split_v2("ok 'not closed").unwrap_err();
        assert_eq!(err.offset, 3);
        assert_eq!(
            err.to_string(),
            "Unbalanced quote starting here: 'not closed"
        );
        assert!(split_v2("'it''").is_err());
    }

    #[test]
    fn join_v2_round_trips() {
        let args = ["plain", "two words", "it's", "", "tab\there", "\"q\""];
        let joined = join_v2(&args);
        assert_eq!(joined, "plain 'two words' 'it''s' '' 'tab\there' \"q\"");
        assert_eq!(v2(&joined), args);
    }
}
