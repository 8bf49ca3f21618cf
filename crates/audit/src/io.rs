//! Reading scores from files.
//!
//! **CSV.** The first line is a header (a UTF-8 byte-order mark before it is
//! skipped). It must name a `score` column and a `member` column (1 = the
//! target/canary was included, 0 = not); other columns are ignored. Fields are separated by commas; quoted fields are not
//! supported. Blank lines are skipped. Scores must be finite numbers;
//! `member` must be `0` or `1` (`0.0`/`1.0` are accepted too). Every error
//! names the file and the 1-based line.
//!
//! **NPY.** A little-endian float64 array of shape `(N, 2)` (`'<f8'`, C or
//! Fortran order, format version 1, 2 or 3): column 0 is the score, column 1
//! the member flag (0.0 or 1.0). E.g. in NumPy:
//! `np.save("scores.npy", np.column_stack([scores, members]).astype("<f8"))`.
//! Errors name the byte offset (header) or the row (data). The size the
//! header promises is computed with checked arithmetic and compared with the
//! file before anything is allocated.

use std::path::Path;

use crate::error::{AuditError, Result};
use crate::observations::Observations;

/// Reads scores from `path`: NPY when the name ends in `.npy`, else CSV.
pub fn read_scores(path: &Path) -> Result<Observations> {
    let bytes = std::fs::read(path).map_err(|source| AuditError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"))
    {
        parse_npy(path, &bytes)
    } else {
        let text = std::str::from_utf8(&bytes).map_err(|e| AuditError::Csv {
            path: path.to_path_buf(),
            line: 1 + bytes[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count(),
            message: "the file is not valid UTF-8 text".into(),
        })?;
        parse_csv(path, text)
    }
}

fn parse_member(field: &str) -> Option<bool> {
    match field {
        "1" | "1.0" => Some(true),
        "0" | "0.0" => Some(false),
        _ => None,
    }
}

/// Parses CSV text (see the module docs); `path` is only used in messages.
pub fn parse_csv(path: &Path, text: &str) -> Result<Observations> {
    let csv_err = |line: usize, message: String| AuditError::Csv {
        path: path.to_path_buf(),
        line,
        message,
    };
    // Spreadsheet programs write a byte-order mark before the header.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')));
    let (header_line, header) = lines
        .by_ref()
        .find(|(_, l)| !l.trim().is_empty())
        .ok_or_else(|| {
            csv_err(
                1,
                "the file is empty; expected a header with `score` and `member` columns".into(),
            )
        })?;
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let find = |name: &str| names.iter().position(|&n| n == name);
    let (Some(score_col), Some(member_col)) = (find("score"), find("member")) else {
        return Err(csv_err(
            header_line,
            format!("header `{header}` lacks a `score` and/or a `member` column; expected both, e.g. `score,member`"),
        ));
    };
    let mut scores = Vec::new();
    let mut members = Vec::new();
    for (line, text) in lines {
        if text.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = text.split(',').map(str::trim).collect();
        if fields.len() != names.len() {
            return Err(csv_err(
                line,
                format!(
                    "found {} fields, expected {} as in the header (`{header}`)",
                    fields.len(),
                    names.len()
                ),
            ));
        }
        let s = fields[score_col];
        let score: f64 = s
            .parse()
            .map_err(|_| csv_err(line, format!("column `score`: `{s}` is not a number")))?;
        if !score.is_finite() {
            return Err(AuditError::NonFiniteScore {
                location: format!("{}:{line}", path.display()),
                value: score,
            });
        }
        let m = fields[member_col];
        let member = parse_member(m).ok_or_else(|| AuditError::InvalidMember {
            location: format!("{}:{line}", path.display()),
            found: m.to_string(),
        })?;
        scores.push(score);
        members.push(member);
    }
    let file = path.display().to_string();
    Observations::new(scores, members).map_err(|e| match e {
        AuditError::EmptyClass { class, .. } => AuditError::EmptyClass {
            class,
            context: format!(" in {file}"),
        },
        other => other,
    })
}

/// Parses NPY bytes (see the module docs); `path` is only used in messages.
pub fn parse_npy(path: &Path, bytes: &[u8]) -> Result<Observations> {
    let npy_err = |offset: usize, message: String| AuditError::Npy {
        path: path.to_path_buf(),
        offset,
        message,
    };
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(npy_err(0, "missing the NPY magic `\\x93NUMPY`".into()));
    }
    let major = bytes[6];
    let (header_len, header_start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(npy_err(8, "truncated header length".into()));
            }
            (
                u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                12,
            )
        }
        v => {
            return Err(npy_err(
                6,
                format!("unsupported NPY format version {v}; expected 1, 2 or 3"),
            ))
        }
    };
    let data_start = header_start + header_len;
    if bytes.len() < data_start {
        return Err(npy_err(
            header_start,
            format!("header of {header_len} bytes runs past the end of the file"),
        ));
    }
    let header = String::from_utf8_lossy(&bytes[header_start..data_start]);
    let compact: String = header.chars().filter(|c| !c.is_whitespace()).collect();
    if !(compact.contains("'descr':'<f8'") || compact.contains("'descr':'float64'")) {
        return Err(npy_err(
            header_start,
            format!(
                "dtype in `{}` is not little-endian float64; expected '<f8'",
                header.trim()
            ),
        ));
    }
    let fortran = compact.contains("'fortran_order':True");
    let shape_start = compact
        .find("'shape':(")
        .ok_or_else(|| npy_err(header_start, "header lacks 'shape'".into()))?
        + "'shape':(".len();
    let shape_end = compact[shape_start..]
        .find(')')
        .ok_or_else(|| npy_err(header_start, "unterminated 'shape'".into()))?
        + shape_start;
    let dims: Vec<usize> = compact[shape_start..shape_end]
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| {
            npy_err(
                header_start,
                format!(
                    "cannot parse shape `({})`",
                    &compact[shape_start..shape_end]
                ),
            )
        })?;
    let [rows, 2] = dims[..] else {
        return Err(npy_err(
            header_start,
            format!(
                "shape {:?} is not (N, 2); expected column 0 = score, column 1 = member",
                dims
            ),
        ));
    };
    let Some(need) = rows.checked_mul(2 * 8) else {
        return Err(npy_err(
            header_start,
            format!(
                "shape ({rows}, 2) would need {rows} × 16 bytes of data, more than any file can hold; \
                 the file has {} bytes of data",
                bytes.len() - data_start
            ),
        ));
    };
    if bytes.len() - data_start != need {
        return Err(npy_err(
            data_start,
            format!(
                "data has {} bytes, expected {need} for shape ({rows}, 2) float64",
                bytes.len() - data_start
            ),
        ));
    }
    let value = |k: usize| {
        let o = data_start + 8 * k;
        f64::from_le_bytes(bytes[o..o + 8].try_into().unwrap_or([0; 8]))
    };
    let at = |row: usize, col: usize| {
        if fortran {
            value(col * rows + row)
        } else {
            value(row * 2 + col)
        }
    };
    let mut scores = Vec::with_capacity(rows);
    let mut members = Vec::with_capacity(rows);
    for row in 0..rows {
        let s = at(row, 0);
        if !s.is_finite() {
            return Err(AuditError::NonFiniteScore {
                location: format!("{} row {row}", path.display()),
                value: s,
            });
        }
        let m = at(row, 1);
        let member = if m == 1.0 {
            true
        } else if m == 0.0 {
            false
        } else {
            return Err(AuditError::InvalidMember {
                location: format!("{} row {row}", path.display()),
                found: m.to_string(),
            });
        };
        scores.push(s);
        members.push(member);
    }
    let file = path.display().to_string();
    Observations::new(scores, members).map_err(|e| match e {
        AuditError::EmptyClass { class, .. } => AuditError::EmptyClass {
            class,
            context: format!(" in {file}"),
        },
        other => other,
    })
}

/// Encodes scores as the NPY layout this module reads (for tests and tools).
pub fn to_npy(obs: &Observations) -> Vec<u8> {
    let mut header = format!(
        "{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, 2), }}",
        obs.len()
    );
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for (&s, &m) in obs.scores().iter().zip(obs.members()) {
        out.extend_from_slice(&s.to_le_bytes());
        out.extend_from_slice(&(if m { 1.0_f64 } else { 0.0 }).to_le_bytes());
    }
    out
}
