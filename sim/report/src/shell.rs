//! Rerun lines are commands to paste into a shell: every word that needs quoting is quoted.

/// `s` as one POSIX shell word: as is when it holds only safe characters, else in single
/// quotes (a single quote inside becomes `'\''`).
pub fn quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:=,@%+".contains(&b));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_that_need_quotes_get_them() {
        assert_eq!(quote("scenarios/a.toml"), "scenarios/a.toml");
        assert_eq!(quote("my dir/team cfg.yaml"), "'my dir/team cfg.yaml'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("k=2,3"), "k=2,3");
    }
}
