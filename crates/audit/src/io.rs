//! Reading scores from files.
//!
//! **CSV** (RFC 4180, read with the `csv` crate). Fields are separated by
//! commas and may be quoted (`"0.5","1"`, a quote inside a quoted field
//! doubled); records end in `\n`, `\r\n` or a lone `\r` (old Mac files);
//! a UTF-8 byte-order mark before the header is skipped, and blank lines
//! (empty or only spaces) are skipped anywhere. The first record is a header
//! that must name exactly one `score` column and exactly one `member` column
//! (1 = the target/canary was included, 0 = not), in any position; other
//! columns are ignored. Every record has as many fields as the header.
//! Spaces around a field are ignored. Scores must be finite numbers;
//! `member` must be `0` or `1` (`0.0`/`1.0` are accepted too). The file
//! must be UTF-8. Every error names the file and the 1-based line where
//! the offending record starts (a lone `\r` counts as a line end), and
//! quotes at most [`QUOTE_BYTES`] bytes of what it found, with the total
//! length when it cut.
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

/// The most bytes of a file's content an error message quotes.
pub const QUOTE_BYTES: usize = 100;

/// `bytes` for an error message: at most [`QUOTE_BYTES`] of them, cut on a
/// character boundary and followed by `…` and the total length when longer;
/// invalid UTF-8 shows as U+FFFD and control characters escaped (`\r`), so
/// a file with unexpected line ends cannot flood the terminal. The data
/// crate quotes its files with it too (`dpaudit_data::files::excerpt`).
pub fn excerpt(bytes: &[u8]) -> String {
    let mut cut = bytes.len().min(QUOTE_BYTES);
    // Back off to the start of a UTF-8 character (at most 3 continuation bytes).
    let mut back = 0;
    while cut < bytes.len() && cut > 0 && back < 3 && bytes[cut] & 0xC0 == 0x80 {
        cut -= 1;
        back += 1;
    }
    let mut out = String::new();
    for c in String::from_utf8_lossy(&bytes[..cut]).chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if cut < bytes.len() {
        out.push_str(&format!("… ({} bytes)", bytes.len()));
    }
    out
}

/// Reads scores from `path`: NPY when the name ends in `.npy`, else CSV.
pub fn read_scores(path: &Path) -> Result<Observations<'static>> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"))
    {
        return read_npy(path);
    }
    let bytes = std::fs::read(path).map_err(|source| AuditError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_csv_bytes(path, &bytes)
}

fn parse_member(field: &[u8]) -> Option<bool> {
    match field {
        b"1" | b"1.0" => Some(true),
        b"0" | b"0.0" => Some(false),
        _ => None,
    }
}

/// The 1-based line of byte `offset`: one more than the line ends before it,
/// where `\n`, `\r\n` and a lone `\r` each end a line.
fn line_at(bytes: &[u8], offset: usize) -> usize {
    let before = &bytes[..offset.min(bytes.len())];
    let lone_cr = before
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b == b'\r' && bytes.get(i + 1) != Some(&b'\n'))
        .count();
    1 + lone_cr + before.iter().filter(|&&b| b == b'\n').count()
}

/// Where the record the reader returned last starts: its position is where
/// the reader stopped after the previous record, so skip the line ends (and
/// the byte-order mark) between the two.
fn record_start(bytes: &[u8], record: &csv::ByteRecord) -> usize {
    let from = record.position().map_or(0, |p| p.byte()) as usize;
    let mut at = from.min(bytes.len());
    if at == 0 && bytes.starts_with(b"\xef\xbb\xbf") {
        at = 3;
    }
    while at < bytes.len() && matches!(bytes[at], b'\r' | b'\n') {
        at += 1;
    }
    at
}

/// The physical line starting at byte `start`, without its line end.
fn line_from(bytes: &[u8], start: usize) -> &[u8] {
    let rest = &bytes[start.min(bytes.len())..];
    let end = rest
        .iter()
        .position(|&b| b == b'\r' || b == b'\n')
        .unwrap_or(rest.len());
    &rest[..end]
}

/// A record holding one field of nothing but spaces: a blank line.
fn is_blank(record: &csv::ByteRecord) -> bool {
    record.len() == 1 && record[0].trim_ascii().is_empty()
}

/// Parses CSV text (see the module docs); `path` is only used in messages.
pub fn parse_csv(path: &Path, text: &str) -> Result<Observations<'static>> {
    parse_csv_bytes(path, text.as_bytes())
}

/// Parses the bytes of a CSV file (see the module docs); `path` is only used
/// in messages.
pub fn parse_csv_bytes(path: &Path, bytes: &[u8]) -> Result<Observations<'static>> {
    let csv_err = |line: usize, message: String| AuditError::Csv {
        path: path.to_path_buf(),
        line,
        message,
    };
    if let Err(e) = std::str::from_utf8(bytes) {
        return Err(csv_err(
            line_at(bytes, e.valid_up_to()),
            "the file is not valid UTF-8 text".into(),
        ));
    }
    // Lone `\r`, `\n` and `\r\n` all end a record (csv's default
    // terminator); field counts are checked here, to say which line and
    // what the header was.
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .buffer_capacity(1 << 16)
        .from_reader(bytes);
    let mut record = csv::ByteRecord::new();
    let read_err = |record: &csv::ByteRecord, e: csv::Error| {
        csv_err(line_at(bytes, record_start(bytes, record)), e.to_string())
    };
    // The header: the first record that is not blank.
    loop {
        if !reader
            .read_byte_record(&mut record)
            .map_err(|e| read_err(&record, e))?
        {
            return Err(csv_err(
                1,
                "the file is empty; expected a header with `score` and `member` columns".into(),
            ));
        }
        if !is_blank(&record) {
            break;
        }
    }
    let header_start = record_start(bytes, &record);
    let header_line = line_at(bytes, header_start);
    let header = excerpt(line_from(bytes, header_start));
    let names: Vec<&[u8]> = record.iter().map(<[u8]>::trim_ascii).collect();
    let columns = |name: &str| -> Vec<usize> {
        names
            .iter()
            .enumerate()
            .filter(|(_, n)| **n == name.as_bytes())
            .map(|(i, _)| i)
            .collect()
    };
    let (score_cols, member_cols) = (columns("score"), columns("member"));
    let (Some(&score_col), Some(&member_col)) = (score_cols.first(), member_cols.first()) else {
        return Err(csv_err(
            header_line,
            format!(
                "header `{header}` lacks a `score` and/or a `member` column; expected both, e.g. `score,member`"
            ),
        ));
    };
    for (name, cols) in [("score", &score_cols), ("member", &member_cols)] {
        if cols.len() > 1 {
            let positions: Vec<String> = cols.iter().map(|c| (c + 1).to_string()).collect();
            return Err(csv_err(
                header_line,
                format!(
                    "header `{header}` has {} `{name}` columns (columns {}); expected exactly one",
                    cols.len(),
                    positions.join(" and ")
                ),
            ));
        }
    }
    let width = names.len();
    let mut scores = Vec::new();
    let mut members = Vec::new();
    while reader
        .read_byte_record(&mut record)
        .map_err(|e| read_err(&record, e))?
    {
        if record.len() != width {
            if is_blank(&record) {
                continue;
            }
            return Err(csv_err(
                line_at(bytes, record_start(bytes, &record)),
                format!(
                    "found {} fields, expected {width} as in the header (`{header}`)",
                    record.len(),
                ),
            ));
        }
        let s = record[score_col].trim_ascii();
        let Some(score) = std::str::from_utf8(s)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
        else {
            return Err(csv_err(
                line_at(bytes, record_start(bytes, &record)),
                format!("column `score`: `{}` is not a number", excerpt(s)),
            ));
        };
        if !score.is_finite() {
            return Err(AuditError::NonFiniteScore {
                location: format!(
                    "{}:{}",
                    path.display(),
                    line_at(bytes, record_start(bytes, &record))
                ),
                value: score,
            });
        }
        let m = record[member_col].trim_ascii();
        let Some(member) = parse_member(m) else {
            return Err(AuditError::InvalidMember {
                location: format!(
                    "{}:{}",
                    path.display(),
                    line_at(bytes, record_start(bytes, &record))
                ),
                found: excerpt(m),
            });
        };
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
pub fn parse_npy(path: &Path, bytes: &[u8]) -> Result<Observations<'static>> {
    let header = npy_header(path, bytes, bytes.len() as u64)?;
    let data = &bytes[header.data_start..];
    let mut rows = RowDecoder::new(path, header.rows);
    if header.fortran {
        let (scores, members) = data.split_at(8 * header.rows);
        rows.scores(scores)?;
        rows.members(members)?;
    } else {
        rows.interleaved(data)?;
    }
    rows.finish()
}

/// What an NPY header says about the data that follows.
struct NpyHeader {
    /// Byte offset of the data.
    data_start: usize,
    /// Rows of the `(N, 2)` array.
    rows: usize,
    /// Column-major data (all scores, then all member flags).
    fortran: bool,
}

/// Parses and checks the header at the start of `head` (the whole file or
/// its first bytes) of a file of `file_len` bytes.
fn npy_header(path: &Path, head: &[u8], file_len: u64) -> Result<NpyHeader> {
    let npy_err = |offset: usize, message: String| AuditError::Npy {
        path: path.to_path_buf(),
        offset,
        message,
    };
    if head.len() < 10 || &head[..6] != b"\x93NUMPY" {
        return Err(npy_err(0, "missing the NPY magic `\\x93NUMPY`".into()));
    }
    let major = head[6];
    let (header_len, header_start) = match major {
        1 => (u16::from_le_bytes([head[8], head[9]]) as usize, 10),
        2 | 3 => {
            if head.len() < 12 {
                return Err(npy_err(8, "truncated header length".into()));
            }
            (
                u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize,
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
    if (head.len() as u64) < data_start as u64 || file_len < data_start as u64 {
        return Err(npy_err(
            header_start,
            format!("header of {header_len} bytes runs past the end of the file"),
        ));
    }
    let header = String::from_utf8_lossy(&head[header_start..data_start]);
    let compact: String = header.chars().filter(|c| !c.is_whitespace()).collect();
    if !(compact.contains("'descr':'<f8'") || compact.contains("'descr':'float64'")) {
        return Err(npy_err(
            header_start,
            format!(
                "dtype in `{}` is not little-endian float64; expected '<f8'",
                excerpt(header.trim().as_bytes())
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
                    excerpt(&compact.as_bytes()[shape_start..shape_end])
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
    let data_len = file_len - data_start as u64;
    let Some(need) = rows.checked_mul(2 * 8) else {
        return Err(npy_err(
            header_start,
            format!(
                "shape ({rows}, 2) would need {rows} × 16 bytes of data, more than any file can hold; \
                 the file has {data_len} bytes of data"
            ),
        ));
    };
    if data_len != need as u64 {
        return Err(npy_err(
            data_start,
            format!("data has {data_len} bytes, expected {need} for shape ({rows}, 2) float64"),
        ));
    }
    Ok(NpyHeader {
        data_start,
        rows,
        fortran,
    })
}

/// Turns little-endian float64 data into validated scores and member flags,
/// row by row, naming the row of the first bad value.
struct RowDecoder<'a> {
    path: &'a Path,
    scores: Vec<f64>,
    members: Vec<bool>,
}

impl<'a> RowDecoder<'a> {
    fn new(path: &'a Path, rows: usize) -> Self {
        Self {
            path,
            scores: Vec::with_capacity(rows),
            members: Vec::with_capacity(rows),
        }
    }

    fn score(&mut self, v: f64) -> Result<()> {
        if !v.is_finite() {
            return Err(AuditError::NonFiniteScore {
                location: format!("{} row {}", self.path.display(), self.scores.len()),
                value: v,
            });
        }
        self.scores.push(v);
        Ok(())
    }

    fn member(&mut self, v: f64) -> Result<()> {
        let member = if v == 1.0 {
            true
        } else if v == 0.0 {
            false
        } else {
            return Err(AuditError::InvalidMember {
                location: format!("{} row {}", self.path.display(), self.members.len()),
                found: v.to_string(),
            });
        };
        self.members.push(member);
        Ok(())
    }

    fn values(bytes: &[u8]) -> impl Iterator<Item = f64> + '_ {
        bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
    }

    /// Row-major data: score, member, score, member, ...
    fn interleaved(&mut self, bytes: &[u8]) -> Result<()> {
        for pair in bytes.chunks_exact(16) {
            let (s, m) = pair.split_at(8);
            let s = f64::from_le_bytes(s.try_into().unwrap_or([0; 8]));
            let m = f64::from_le_bytes(m.try_into().unwrap_or([0; 8]));
            if s.is_finite() && (m == 0.0 || m == 1.0) {
                self.scores.push(s);
                self.members.push(m == 1.0);
            } else {
                // The slow path names the row and what is wrong.
                self.score(s)?;
                self.member(m)?;
            }
        }
        Ok(())
    }

    /// Column-major data: a run of scores.
    fn scores(&mut self, bytes: &[u8]) -> Result<()> {
        Self::values(bytes).try_for_each(|v| self.score(v))
    }

    /// Column-major data: a run of member flags.
    fn members(&mut self, bytes: &[u8]) -> Result<()> {
        Self::values(bytes).try_for_each(|v| self.member(v))
    }

    fn finish(self) -> Result<Observations<'static>> {
        let file = self.path.display().to_string();
        Observations::new(self.scores, self.members).map_err(|e| match e {
            AuditError::EmptyClass { class, .. } => AuditError::EmptyClass {
                class,
                context: format!(" in {file}"),
            },
            other => other,
        })
    }
}

/// Reads an NPY file in blocks (the data never sits in memory twice): the
/// header, then the data decoded as it arrives.
fn read_npy(path: &Path) -> Result<Observations<'static>> {
    use std::io::Read;
    let io_err = |source| AuditError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io_err)?;
    let file_len = file.metadata().map_err(io_err)?.len();
    // The header length sits in the first 12 bytes; read them, then the rest.
    let mut head = vec![0_u8; (file_len.min(12)) as usize];
    file.read_exact(&mut head).map_err(io_err)?;
    let header_len = match head.get(6) {
        Some(1) if head.len() >= 10 => u16::from_le_bytes([head[8], head[9]]) as usize + 10,
        Some(2 | 3) if head.len() >= 12 => {
            u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize + 12
        }
        _ => head.len(),
    };
    let header_len = header_len.min(file_len as usize);
    if header_len > head.len() {
        let mut rest = vec![0_u8; header_len - head.len()];
        file.read_exact(&mut rest).map_err(io_err)?;
        head.extend_from_slice(&rest);
    }
    let header = npy_header(path, &head, file_len)?;
    let mut rows = RowDecoder::new(path, header.rows);
    // 1 MiB blocks, a whole number of rows (row-major) or values (column-major).
    let mut block = vec![0_u8; 1 << 20];
    let mut read_block = |len: usize, block: &mut Vec<u8>| -> Result<()> {
        block.resize(len, 0);
        file.read_exact(block).map_err(io_err)
    };
    let data = 16 * header.rows;
    if header.fortran {
        let half = data / 2;
        for scores in [true, false] {
            let mut done = 0;
            while done < half {
                let len = (half - done).min(1 << 20);
                read_block(len, &mut block)?;
                if scores {
                    rows.scores(&block)?;
                } else {
                    rows.members(&block)?;
                }
                done += len;
            }
        }
    } else {
        let mut done = 0;
        while done < data {
            let len = (data - done).min(1 << 20);
            read_block(len, &mut block)?;
            rows.interleaved(&block)?;
            done += len;
        }
    }
    rows.finish()
}

/// The start of an NPY version 1.0 file whose header is the Python dict
/// literal `dict`: magic, version, header length, and `dict` padded with
/// spaces and a newline to a multiple of 64 bytes, as NumPy writes it. The
/// data follows (for tests and tools).
pub fn npy_v1_preamble(dict: &str) -> Vec<u8> {
    let mut header = dict.to_string();
    let total = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out
}

/// Encodes scores as the NPY layout this module reads (for tests and tools).
pub fn to_npy(obs: &Observations) -> Vec<u8> {
    let mut out = npy_v1_preamble(&format!(
        "{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, 2), }}",
        obs.len()
    ));
    for (&s, &m) in obs.scores().iter().zip(obs.members()) {
        out.extend_from_slice(&s.to_le_bytes());
        out.extend_from_slice(&(if m { 1.0_f64 } else { 0.0 }).to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_cut_on_a_character_boundary_and_escape_control_characters() {
        assert_eq!(excerpt(b"a\rb\n"), "a\\rb\\n");
        assert_eq!(excerpt(&[b'x'; 100]), "x".repeat(100));
        // 40 × 3 bytes: 33 characters (99 bytes) fit, the 34th would be cut.
        let s = "€".repeat(40);
        assert_eq!(
            excerpt(s.as_bytes()),
            format!("{}… (120 bytes)", "€".repeat(33))
        );
    }

    #[test]
    fn lines_end_in_lf_crlf_or_a_lone_cr() {
        let b = b"a\nb\r\nc\rd";
        let lines: Vec<usize> = [0, 2, 5, 7].iter().map(|&o| line_at(b, o)).collect();
        assert_eq!(lines, [1, 2, 3, 4]);
    }
}
