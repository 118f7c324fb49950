use super::*;

#[test]
fn a_typo_is_matched_to_the_nearest_key_and_an_unrelated_word_to_none() {
    let keys = ["in_flight", "batch_max", "batches_in_flight", "mode"];
    assert_eq!(did_you_mean("batch_mx", &keys), Some("batch_max"));
    assert_eq!(did_you_mean("in-flight", &keys), Some("in_flight"));
    assert_eq!(did_you_mean("colour", &keys), None);
    assert_eq!(did_you_mean("mod", &keys), Some("mode"));
}

#[test]
fn lines_and_columns_count_from_one_in_characters() {
    let text = "a = 1\n# é\nb = \"x\"\r\n";
    assert_eq!(line_of(text, 0), (1, 1, "a = 1"));
    assert_eq!(line_of(text, text.find('b').unwrap() + 4), (3, 5, "b = \"x\""));
    assert_eq!(line_of(text, text.find('#').unwrap() + 2), (2, 3, "# é"));
}

#[test]
fn a_problem_shows_its_line_with_a_caret_under_the_value() {
    let text = "[delivery]\nbatch_max = \"lots\"\n";
    let start = text.find("\"lots\"").unwrap();
    let problem = Problem::new("delivery.batch_max", "found \"lots\"", At::Span(start..start + 6));
    let err = ConfigError { file: "b.toml".into(), text: text.into(), problems: vec![problem] };
    assert_eq!(
        err.to_string(),
        "error: delivery.batch_max: found \"lots\"\n --> b.toml:2:13\n  |\n2 | batch_max = \"lots\"\n  |             ^^^^^^\n\nerror: b.toml has 1 problem"
    );
}

#[test]
fn a_secret_line_is_located_but_not_shown() {
    let text = "[broker]\npasscode = 7\n";
    let mut problem = Problem::new("broker.passcode", "found a value (not shown)", At::Span(20..21));
    problem.show_line = false;
    let err = ConfigError { file: "b.toml".into(), text: text.into(), problems: vec![problem] };
    let shown = err.to_string();
    assert_eq!(
        shown,
        "error: broker.passcode: found a value (not shown)\n --> b.toml:2:12\n\nerror: b.toml has 1 problem"
    );
}
