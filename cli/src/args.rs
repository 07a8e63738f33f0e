//! Option matching shared by the commands that take HTCondor's command lines (one dash or
//! two, abbreviated down to a minimum length as condor's tools allow: `-const` for
//! `-constraint`).

/// Whether `a` is option `name` given as `-name`/`--name` or a prefix of it at least `min`
/// characters long.
pub fn is_arg(a: &str, name: &str, min: usize) -> bool {
    let Some(s) = a.strip_prefix("--").or_else(|| a.strip_prefix('-')) else {
        return false;
    };
    !s.is_empty() && s.len() >= min && name.starts_with(s)
}

#[cfg(test)]
mod tests {
    use super::is_arg;

    #[test]
    fn options_match_with_one_or_two_dashes_down_to_their_minimum() {
        assert!(is_arg("-const", "constraint", 5));
        assert!(is_arg("--constraint", "constraint", 5));
        assert!(!is_arg("-con", "constraint", 5));
        assert!(!is_arg("constraint", "constraint", 5));
        assert!(!is_arg("-constraints", "constraint", 5));
        assert!(!is_arg("-", "constraint", 0));
    }
}
