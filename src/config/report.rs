//! Configuration problems, each shown as cargo shows a bad `Cargo.toml`: the key and what is
//! wrong, then the file, line and column with the line itself and a caret under the value,
//! or the environment variable that set it.

use std::fmt;
use std::ops::Range;

/// Where a problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum At {
    /// These bytes of the file.
    Span(Range<usize>),
    /// The key is not in the file; this is the table it would be in (shown as the place).
    Near(Range<usize>),
    /// A value set by this environment variable.
    Env(String),
    /// The file as a whole.
    File,
}

/// One thing wrong with a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The key, as `agents[0].protocol` (empty for a syntax error).
    pub key: String,
    /// What is wrong: what was found and what is allowed.
    pub message: String,
    pub at: At,
    /// A suggestion, such as the key that was probably meant.
    pub help: Option<String>,
    /// More about the place, such as that a default applies.
    pub note: Option<String>,
    /// Whether the line may be shown (not for a passcode, or a URL with credentials).
    pub show_line: bool,
}

impl Problem {
    pub fn new(key: &str, message: &str, at: At) -> Problem {
        Problem {
            key: key.to_owned(),
            message: message.to_owned(),
            at,
            help: None,
            note: None,
            show_line: true,
        }
    }
}

/// Why a configuration cannot be used: every problem found in one reading.
#[derive(Debug, thiserror::Error)]
pub struct ConfigError {
    /// The file, as named on the command line.
    pub file: String,
    /// Its text, to show the lines problems are on (empty if it could not be read).
    pub text: String,
    pub problems: Vec<Problem>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for problem in &self.problems {
            self.write_problem(f, problem)?;
            writeln!(f)?;
        }
        let n = self.problems.len();
        write!(f, "error: {} has {n} problem{}", self.file, if n == 1 { "" } else { "s" })
    }
}

impl ConfigError {
    fn write_problem(&self, f: &mut fmt::Formatter<'_>, p: &Problem) -> fmt::Result {
        match p.key.as_str() {
            "" => writeln!(f, "error: {}", p.message)?,
            key => writeln!(f, "error: {key}: {}", p.message)?,
        }
        let file = &self.file;
        match &p.at {
            At::Env(var) => writeln!(f, " --> the environment variable {var} (over {file})")?,
            At::File => writeln!(f, " --> {file}")?,
            At::Span(span) | At::Near(span) => {
                let (line, col, text) = line_of(&self.text, span.start);
                let gutter = " ".repeat(line.to_string().len());
                writeln!(f, "{gutter}--> {file}:{line}:{col}")?;
                if p.show_line {
                    let end = span.end.min(self.text.len());
                    let value = self.text.get(span.start.min(end)..end).unwrap_or("");
                    let width = value.split('\n').next().unwrap_or("").chars().count().max(1);
                    let caret = format!("{}{}", " ".repeat(col - 1), "^".repeat(width));
                    writeln!(f, "{gutter} |\n{line} | {text}\n{gutter} | {caret}")?;
                }
            }
        }
        if let Some(note) = &p.note {
            writeln!(f, "  = note: {note}")?;
        }
        if let Some(help) = &p.help {
            writeln!(f, "  = help: {help}")?;
        }
        Ok(())
    }
}

/// The line number and column (both from 1, the column in characters) of byte `at`, and
/// the text of its line.
fn line_of(text: &str, at: usize) -> (usize, usize, &str) {
    let at = at.min(text.len());
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line = text[..start].matches('\n').count() + 1;
    let col = text[start..at].chars().count() + 1;
    (line, col, text[start..end].trim_end_matches('\r'))
}

/// The candidate nearest to `word` if it is near enough to be a typo.
pub fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (distance(word, c), *c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(1))
        .min()
        .map(|(_, c)| c)
}

/// Edit distance (insertions, deletions, substitutions) between two words.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1).min(row[j] + 1).min(diagonal + usize::from(ca != *cb));
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
