//! Physical lines to logical lines: whitespace trimming and backslash continuation, with the
//! comment rules of HTCondor 23 (a `#` line never continues; a `#` line inside a continuation
//! is treated as whitespace, keeping only its last character so a trailing `\` still
//! continues).

/// One logical line of a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogicalLine {
    /// Trimmed text with continuations joined (no separator is inserted).
    pub text: String,
    /// 1-based number of the first physical line.
    pub line: u32,
    /// 1-based number of the last physical line.
    pub end_line: u32,
}

/// Splits `text` into logical lines. Blank and comment lines are kept (the parser skips them)
/// so that line numbers stay right.
pub(crate) fn logical_lines(text: &str) -> Vec<LogicalLine> {
    let mut out = Vec::new();
    let mut buf = String::new();
    let mut start = 0u32;
    let mut continuing = false;
    let body = text.strip_suffix('\n').unwrap_or(text);
    if body.is_empty() && text.len() <= 1 {
        return out;
    }
    let mut last = 0u32;
    for (idx, raw) in body.split('\n').enumerate() {
        let lineno = idx as u32 + 1;
        last = lineno;
        let trimmed = raw.trim_matches(|c: char| c.is_ascii_whitespace());
        let mut piece: &str = trimmed;
        let first = !continuing;
        let in_comment = piece.starts_with('#');
        if first {
            start = lineno;
            buf.clear();
        } else if in_comment {
            // inside a continuation a comment line counts as whitespace, except its last char
            piece = match piece.char_indices().last() {
                Some((i, _)) => &piece[i..],
                None => "",
            };
        }
        buf.push_str(piece);
        if buf.ends_with('\\') && !(first && in_comment) {
            buf.pop();
            continuing = true;
            continue;
        }
        if buf.ends_with('\\') && first && in_comment {
            buf.pop();
        }
        continuing = false;
        out.push(LogicalLine {
            text: std::mem::take(&mut buf),
            line: start,
            end_line: lineno,
        });
    }
    if continuing {
        out.push(LogicalLine {
            text: buf,
            line: start,
            end_line: last,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<(String, u32)> {
        logical_lines(s)
            .into_iter()
            .map(|l| (l.text, l.line))
            .collect()
    }

    #[test]
    fn continuation_joins_trimmed_pieces_without_separator() {
        assert_eq!(
            texts("E = a \\\n   b\\\nc\nF = 1\n"),
            vec![("E = a bc".into(), 1), ("F = 1".into(), 4)]
        );
    }

    #[test]
    fn comment_line_does_not_continue() {
        assert_eq!(
            texts("# c \\\nG = two"),
            vec![("# c ".into(), 1), ("G = two".into(), 2)]
        );
    }

    #[test]
    fn comment_inside_continuation_keeps_last_char() {
        assert_eq!(
            texts("A = x \\\n# hidden \\\ny"),
            vec![("A = x y".into(), 1)]
        );
    }

    #[test]
    fn continuation_at_eof_is_kept() {
        assert_eq!(texts("A = x \\"), vec![("A = x ".into(), 1)]);
    }

    #[test]
    fn crlf_and_blank_lines() {
        assert_eq!(
            texts("A = 1\r\n\r\nB = 2\r\n"),
            vec![("A = 1".into(), 1), ("".into(), 2), ("B = 2".into(), 3)]
        );
    }
}
