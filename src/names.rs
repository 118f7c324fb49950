//! Agent names: the rule for a name that can be put into a destination, and the `*`/`?`
//! globs that configured names match them with. Used by every layer; depends on none.

/// A name that can be put into a destination: no separators, spaces or control characters.
pub fn is_agent_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && !name.chars().any(|c| c == '/' || c.is_whitespace() || c.is_control())
}

/// Whether an agent name is a glob (`*` any run of characters, `?` one character).
pub fn is_glob(name: &str) -> bool {
    name.contains(['*', '?'])
}

/// Matches `name` against a glob of `*` and `?`.
pub fn glob_matches(glob: &str, name: &str) -> bool {
    let (g, n): (Vec<char>, Vec<char>) = (glob.chars().collect(), name.chars().collect());
    let (mut gi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        match g.get(gi) {
            Some('*') => {
                star = Some(gi);
                mark = ni;
                gi += 1;
            }
            Some(&c) if c == '?' || c == n[ni] => {
                gi += 1;
                ni += 1;
            }
            _ => match star {
                Some(s) => {
                    gi = s + 1;
                    mark += 1;
                    ni = mark;
                }
                None => return false,
            },
        }
    }
    g[gi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
#[path = "names_tests.rs"]
mod tests;
