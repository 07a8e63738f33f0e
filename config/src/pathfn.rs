//! The path macro functions `$F[fqdpnxbwua](X)`, `$BASENAME(X)` and `$DIRNAME(X)`:
//! f full path, q quote, a quote for arguments (single quotes), d parent directory (one per d),
//! p directory path, n base name without extension, x extension with its dot, b bare (no
//! trailing `/` for p and d, no leading `.` for x), w/u use `\` or `/` as the separator.
use crate::expand::Kind;

fn is_sep(c: u8) -> bool {
    c == b'/' || c == b'\\'
}

/// Index where the file name starts (0 when there is no directory part).
fn basename_start(s: &str) -> usize {
    s.as_bytes()
        .iter()
        .rposition(|&c| is_sep(c))
        .map(|i| i + 1)
        .unwrap_or(0)
}

/// Index of the `.` of the extension, or the end when there is none.
fn ext_start(s: &str, name_start: usize) -> usize {
    match s[name_start..].rfind('.') {
        Some(i) => name_start + i,
        None => s.len(),
    }
}

/// Start of the last `dirs` directory components before the file name.
fn basename_plus_dirs(s: &str, dirs: usize) -> usize {
    let b = s.as_bytes();
    let mut end = basename_start(s);
    let mut count = 0;
    while count < dirs && end > 0 {
        // end points just after a separator; find the separator before the previous component
        let mut i = end - 1;
        while i > 0 && !is_sep(b[i - 1]) {
            i -= 1;
        }
        end = i;
        count += 1;
    }
    end
}

/// HTCondor's unquoting of the value: surrounding `"..."` or `'...'` are removed; then a
/// leading `"` (or the requested quote) is removed, with a trailing one if it matches. No
/// whitespace is trimmed.
fn unquote(v: &str, quote: Option<char>) -> &str {
    let mut s = v;
    let b = s.as_bytes();
    if b.len() > 1 && b[0] == b[b.len() - 1] && (b[0] == b'"' || b[0] == b'\'') {
        s = &s[1..s.len() - 1];
    }
    let first = s.chars().next();
    if let Some(q) = first.filter(|c| *c == '"' || Some(*c) == quote) {
        s = &s[1..];
        if s.ends_with(q) {
            s = &s[..s.len() - 1];
        }
    }
    s
}

/// Applies a path function; `flags` is the text between `$` and `(` (e.g. `Fnx`).
pub(crate) fn apply(kind: Kind, flags: &str, value: &str) -> String {
    let (mut parts, mut dirs, mut quoted, mut full, mut bare, mut argq) =
        (0u8, 0usize, false, false, false, false);
    let mut to_sep: Option<char> = None;
    match kind {
        Kind::Basename => parts = 1 | 2,
        Kind::Dirname => parts = 4,
        _ => {
            for c in flags.bytes().skip(1) {
                match c | 0x20 {
                    b'x' => parts |= 1,
                    b'n' => parts |= 2,
                    b'p' => parts |= 4,
                    b'd' => {
                        parts |= 8;
                        dirs += 1
                    }
                    b'a' => argq = true,
                    b'b' => bare = true,
                    b'f' => full = true,
                    b'w' => to_sep = Some('\\'),
                    b'u' => to_sep = Some('/'),
                    b'q' => quoted = true,
                    _ => {}
                }
            }
        }
    }
    let quote = quoted.then_some(if argq { '\'' } else { '"' });
    let mut buf = unquote(value, quote).to_string();
    if full && !buf.starts_with('/') {
        if let Ok(cwd) = std::env::current_dir() {
            buf = format!("{}/{}", cwd.display(), buf);
        }
    }
    if let Some(sep) = to_sep {
        buf = buf
            .chars()
            .map(|c| if c == '/' || c == '\\' { sep } else { c })
            .collect();
    }
    let end = buf.len();
    let ixn = basename_start(&buf);
    let ixx = ext_start(&buf, ixn);
    if ixn == 0 && parts & 3 != 0 {
        parts &= !(4 | 8);
    }
    let (start, stop) = match parts & 0xF {
        1 => (if bare && ixx < end { ixx + 1 } else { ixx }, end),
        3 => (ixn, end),
        2 => (ixn, ixx),
        0 | 7 | 5 => (0, end),
        4 => (0, if bare && ixn > 0 { ixn - 1 } else { ixn }),
        6 => (0, ixx),
        _ => {
            if ixn > 0 {
                let st = basename_plus_dirs(&buf, dirs);
                match parts & 3 {
                    2 => (st, ixx),
                    0 => (st, if bare { ixn - 1 } else { ixn }),
                    _ => (st, end),
                }
            } else {
                (0, 0)
            }
        }
    };
    let out = buf.get(start..stop.max(start)).unwrap_or("").to_string();
    if quoted {
        let q = if argq { '\'' } else { '"' };
        format!("{q}{out}{q}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_of_a_path() {
        let p = "/usr/local/lib/file.tar.gz";
        let f = |fl: &str| apply(Kind::Filename, fl, p);
        assert_eq!(f("Fn"), "file.tar");
        assert_eq!(f("Fx"), ".gz");
        assert_eq!(f("Fbx"), "gz");
        assert_eq!(f("Fp"), "/usr/local/lib/");
        assert_eq!(f("Fpb"), "/usr/local/lib");
        assert_eq!(f("Fd"), "lib/");
        assert_eq!(f("Fdd"), "local/lib/");
        assert_eq!(f("Fdn"), "lib/file.tar");
        assert_eq!(f("Fnx"), "file.tar.gz");
        assert_eq!(f("Fq"), "\"/usr/local/lib/file.tar.gz\"");
        assert_eq!(f("Fb"), p);
        assert_eq!(apply(Kind::Basename, "BASENAME", p), "file.tar.gz");
        assert_eq!(apply(Kind::Dirname, "DIRNAME", p), "/usr/local/lib/");
        assert_eq!(apply(Kind::Filename, "Fp", "bare.txt"), "");
        assert_eq!(apply(Kind::Filename, "Fd", "bare.txt"), "");
    }
}
