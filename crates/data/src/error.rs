//! The one error type of this crate.
//!
//! Every variant names the file (or URL, or parameter), where in it the
//! problem was found (byte offset or line), and what was expected, so that a
//! user can fix the input without reading the code.

use std::fmt;
use std::path::PathBuf;

/// Where in a file a problem was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// A byte offset from the start of the (decompressed) content.
    Byte(u64),
    /// A 1-based line number of a text file.
    Line(usize),
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Byte(offset) => write!(f, "byte offset {offset}"),
            Position::Line(line) => write!(f, "line {line}"),
        }
    }
}

/// Errors of the data crate: parsing, loading, transforming and fetching datasets.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// A file exists but could not be read or written.
    #[error("{path}: {action}: {source}")]
    Io {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },

    /// A file the dataset needs is not there.
    #[error("{path}: file not found; expected {expected} ({hint})")]
    MissingFile {
        path: PathBuf,
        expected: String,
        hint: String,
    },

    /// The content ends before a complete structure.
    #[error("{file}: truncated: the content ends at byte offset {offset}, expected {expected}")]
    Truncated {
        file: String,
        offset: u64,
        expected: String,
    },

    /// A header field does not identify the expected format.
    #[error(
        "{file}: wrong magic number at byte offset {offset}: found {found}, expected {expected}"
    )]
    BadMagic {
        file: String,
        offset: u64,
        found: String,
        expected: String,
    },

    /// A size or count in the content is not the one the format requires.
    #[error("{file}: wrong size at byte offset {offset}: found {found}, expected {expected}")]
    WrongSize {
        file: String,
        offset: u64,
        found: String,
        expected: String,
    },

    /// A class label outside the dataset's range.
    #[error("{file}: label {label} out of range at {position}: expected {expected}")]
    LabelOutOfRange {
        file: String,
        position: Position,
        label: i64,
        expected: String,
    },

    /// A text field that does not parse.
    #[error("{file}: line {line}, field {field}: cannot use {found:?}: expected {expected}")]
    Parse {
        file: String,
        line: usize,
        /// 1-based field index within the line.
        field: usize,
        found: String,
        expected: String,
    },

    /// A text line with the wrong number of fields.
    #[error("{file}: line {line}: found {found} comma-separated fields, expected {expected}")]
    FieldCount {
        file: String,
        line: usize,
        found: usize,
        expected: usize,
    },

    /// A file without a single record.
    #[error("{file}: no records: expected {expected}")]
    Empty { file: String, expected: String },

    /// Gzip data that does not decompress.
    #[error("{file}: not a valid gzip stream: {source}")]
    Gzip {
        file: String,
        #[source]
        source: std::io::Error,
    },

    /// Two files of one split that disagree on the number of records.
    #[error("{images} holds {image_count} images but {labels} holds {label_count} labels; expected the same count")]
    CountMismatch {
        images: String,
        image_count: usize,
        labels: String,
        label_count: usize,
    },

    /// A parameter of a transformation or request is invalid.
    #[error("invalid {parameter} = {value}: expected {expected}")]
    InvalidArgument {
        parameter: &'static str,
        value: String,
        expected: String,
    },

    /// A download failed.
    #[error("downloading {url}: {message}")]
    Http { url: String, message: String },

    /// A file to download with neither a pinned nor a given SHA-256.
    #[error("{file}: no SHA-256 is published for {dataset}, and a download is never used unverified: expected one given explicitly (--sha256 HEX)")]
    MissingChecksum { file: String, dataset: String },

    /// Downloaded bytes whose SHA-256 is not the pinned one.
    #[error("{file} from {url}: SHA-256 mismatch: expected {expected}, found {found}; the download was discarded and nothing was written")]
    ChecksumMismatch {
        file: String,
        url: String,
        expected: String,
        found: String,
    },

    /// A verified archive that lacks what the dataset needs, or cannot be unpacked.
    #[error("{archive}: {message}")]
    Archive { archive: String, message: String },

    /// The operating system's entropy source could not be read (secure mode).
    #[error("reading 256 bits of OS entropy for a secure run: {reason}; nothing was trained (a replayable run does not need it, but is not private against whoever has its config)")]
    Entropy { reason: String },

    /// A destination that exists and is not the verified file we would write.
    #[error("{path} already exists and {reason}; remove it first to fetch again")]
    AlreadyExists { path: PathBuf, reason: String },
}

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, DataError>;
