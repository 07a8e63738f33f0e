//! Reading a submit file into its statements, as condor_submit's parser does
//! (submit_utils.cpp `parse_up_to_q_line`, config.cpp `Parse_macros` with the submit syntax):
//! `#` comments, lines continued with a trailing `\`, `name = value` commands (`+Attr = v` is
//! stored as `MY.Attr`), and `queue` statements whose item list may run over several lines up
//! to a line starting with `)`.
use crate::error::{At, SubmitError};

/// One statement of a submit file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    /// `name = value`: sets a command or a macro.
    Assign {
        /// The name as written (`+Attr` already turned into `MY.Attr`).
        name: String,
        /// The value, trimmed, macros not yet expanded.
        value: String,
        /// Its line.
        line: usize,
    },
    /// `queue ...`.
    Queue {
        /// What follows the keyword on its line, macros not yet expanded.
        args: String,
        /// The lines of a multi-line item list (after the line with `(`, up to the line
        /// starting with `)`), trimmed, comments dropped; `None` for a one-line statement.
        body: Option<Vec<String>>,
        /// The line of the `queue` keyword.
        line: usize,
    },
}

/// Logical lines: (first physical line number, text with continuations joined).
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let (start, mut acc) = match pending.take() {
            Some((start, acc)) => {
                // a comment line inside a continuation is skipped, as HTCondor 23 does
                if raw.trim_start().starts_with('#') {
                    pending = Some((start, acc));
                    continue;
                }
                (start, acc + raw.trim_start())
            }
            None => (i + 1, raw.to_string()),
        };
        let trimmed_end = acc.trim_end().len();
        acc.truncate(trimmed_end);
        if let Some(stripped) = acc.strip_suffix('\\') {
            pending = Some((start, stripped.to_string()));
        } else {
            out.push((start, acc));
        }
    }
    if let Some(p) = pending {
        out.push(p);
    }
    out
}

/// Whether `line` (trimmed) is a queue statement; returns its arguments.
fn queue_args(line: &str) -> Option<&str> {
    let head = line.get(..5)?;
    if !head.eq_ignore_ascii_case("queue") {
        return None;
    }
    let rest = &line[5..];
    match rest.chars().next() {
        None => Some(""),
        Some(c) if c.is_whitespace() || c == '(' => Some(rest.trim()),
        _ => None,
    }
}

/// Words that start HTCondor's conditional and include syntax, which Aerie does not take.
const UNSUPPORTED: &[&str] = &[
    "if", "elif", "else", "endif", "include", "use", "error", "warning",
];

/// Parses a submit file's text into statements. `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Vec<Statement>, SubmitError> {
    let lines = logical_lines(text);
    let mut out = Vec::new();
    let mut it = lines.into_iter();
    while let Some((line, raw)) = it.next() {
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(args) = queue_args(t) {
            let multi = args.contains('(') && !args.ends_with(')');
            let body = if multi {
                let mut body = Vec::new();
                let mut closed = false;
                for (_, l) in it.by_ref() {
                    let l = l.trim();
                    if l.starts_with('#') {
                        continue;
                    }
                    if l.starts_with(')') {
                        closed = true;
                        break;
                    }
                    body.push(l.to_string());
                }
                if !closed {
                    return Err(At::new(line, "queue").error(
                        file,
                        format!(
                            "reached the end of the file without the closing ')' of the queue statement on line {line}"
                        ),
                    ));
                }
                Some(body)
            } else {
                None
            };
            out.push(Statement::Queue {
                args: args.to_string(),
                body,
                line,
            });
            continue;
        }
        let Some(eq) = t.find('=') else {
            let word = t.split_whitespace().next().unwrap_or(t);
            let message = if UNSUPPORTED.iter().any(|u| word.eq_ignore_ascii_case(u)) {
                format!("'{word}' statements are not supported by Aerie's submit")
            } else {
                format!("expected 'name = value' or a queue statement, found '{t}'")
            };
            return Err(At::new(line, word).error(file, message));
        };
        let name = t[..eq].trim();
        let value = t[eq + 1..].trim();
        let name = match name.strip_prefix('+') {
            Some(attr) => format!("MY.{}", attr.trim()),
            None => name.to_string(),
        };
        let bare = name
            .strip_prefix("MY.")
            .or_else(|| name.strip_prefix("my."))
            .unwrap_or(&name);
        let valid = !bare.is_empty()
            && bare
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '+');
        if !valid {
            return Err(At::new(line, &name).error(
                file,
                format!("'{name}' is not a valid command or macro name"),
            ));
        }
        out.push(Statement::Assign {
            name,
            value: value.to_string(),
            line,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuations_comments_and_plus_attrs() {
        let s = parse(
            "f.sub",
            "# c\nexecutable = /bin/echo\narguments = a \\\n  b \\\n# skipped\n  c\n+Foo = \"x\"\nqueue 2\n",
        )
        .unwrap();
        assert_eq!(
            s,
            vec![
                Statement::Assign {
                    name: "executable".into(),
                    value: "/bin/echo".into(),
                    line: 2
                },
                Statement::Assign {
                    name: "arguments".into(),
                    value: "a b c".into(),
                    line: 3
                },
                Statement::Assign {
                    name: "MY.Foo".into(),
                    value: "\"x\"".into(),
                    line: 7
                },
                Statement::Queue {
                    args: "2".into(),
                    body: None,
                    line: 8
                },
            ]
        );
    }

    #[test]
    fn multi_line_queue_body_and_unclosed_error() {
        let s = parse("f.sub", "queue x in (\n a\n # no\n b\n)\n").unwrap();
        assert_eq!(
            s,
            vec![Statement::Queue {
                args: "x in (".into(),
                body: Some(vec!["a".into(), "b".into()]),
                line: 1
            }]
        );
        let e = parse("f.sub", "executable = x\nqueue x in (\n a\n").unwrap_err();
        assert_eq!((e.line, e.command.as_str()), (2, "queue"));
        assert!(e.to_string().starts_with("f.sub, line 2, queue: "), "{e}");
    }

    #[test]
    fn a_line_without_equals_names_its_line() {
        let e = parse("f.sub", "executable = x\nbogus line\n").unwrap_err();
        assert_eq!((e.line, e.command.as_str()), (2, "bogus"));
        let e = parse("f.sub", "if true\n").unwrap_err();
        assert!(e.message.contains("not supported"), "{e}");
    }
}
