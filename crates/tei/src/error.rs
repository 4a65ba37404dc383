//! [`TeiParseError`]: a line that is not a valid command or response, and why.

use std::fmt;

/// A line that does not parse: the line's first word (its keyword, empty for an empty
/// line) and what is wrong with it. `Display` reads `keyword: what`, e.g. `go: nodes
/// needs a value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TeiParseError {
    /// The first word of the line (`go`, `info`, …); empty for an empty line.
    pub keyword: String,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

/// What is wrong with a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// An empty line where a response was expected.
    EmptyLine,
    /// The keyword is not a command (runner → engine).
    UnknownCommand,
    /// The keyword is not a response (engine → runner).
    UnknownResponse,
    /// `field` ends the line: its value is missing.
    MissingValue {
        /// The field (`nodes`, `size`, `score cp`, …).
        field: &'static str,
    },
    /// `field`'s value is not a number of its kind (an integer, or a non-negative one).
    NotANumber {
        /// The field.
        field: &'static str,
        /// The value as sent.
        value: String,
    },
    /// `field`'s value is a number outside its range.
    OutOfRange {
        /// The field.
        field: &'static str,
        /// The value as sent.
        value: String,
        /// Smallest value allowed.
        min: i64,
        /// Largest value allowed.
        max: i64,
    },
    /// A word where something else was expected.
    Unexpected {
        /// The word found.
        found: String,
        /// What the grammar allows there.
        expected: &'static str,
    },
    /// The line ends where `expected` should follow.
    Missing {
        /// What the grammar requires there.
        expected: &'static str,
    },
}

impl TeiParseError {
    pub(crate) fn new(keyword: &str, kind: ParseErrorKind) -> TeiParseError {
        TeiParseError { keyword: keyword.to_string(), kind }
    }
}

impl fmt::Display for TeiParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keyword = &self.keyword;
        match &self.kind {
            ParseErrorKind::EmptyLine => f.write_str("empty line"),
            ParseErrorKind::UnknownCommand => write!(f, "unknown command {keyword:?}"),
            ParseErrorKind::UnknownResponse => write!(f, "unknown response {keyword:?}"),
            ParseErrorKind::MissingValue { field } => write!(f, "{keyword}: {field} needs a value"),
            ParseErrorKind::NotANumber { field, value } => {
                write!(f, "{keyword}: {field} value {value:?} is not a number")
            }
            ParseErrorKind::OutOfRange { field, value, min, max } => {
                write!(f, "{keyword}: {field} value {value} is out of range ({min} to {max})")
            }
            ParseErrorKind::Unexpected { found, expected } => {
                write!(f, "{keyword}: unexpected {found:?}, expected {expected}")
            }
            ParseErrorKind::Missing { expected } => write!(f, "{keyword}: expected {expected}"),
        }
    }
}

impl std::error::Error for TeiParseError {}
