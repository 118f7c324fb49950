use super::*;

#[test]
fn globs_match_runs_and_single_characters() {
    assert!(glob_matches("Civ*", "Civitas") && glob_matches("Civ*", "Civ") && glob_matches("*", "x"));
    assert!(glob_matches("A?c*d", "Abcxxd") && !glob_matches("A?c", "Ac") && !glob_matches("Civ*", "Vox"));
    assert!(glob_matches("a*b*c", "aXbYbZc") && !glob_matches("a*b*c", "aXbYbZ"));
}
