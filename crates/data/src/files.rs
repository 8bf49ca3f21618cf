//! Reading source files: whole-file reads with their SHA-256, and gzip detection.

use std::borrow::Cow;
use std::io::Read;
use std::path::{Path, PathBuf};

use flate2::read::GzDecoder;
use sha2::{Digest, Sha256};

use crate::dataset::SourceFile;
use crate::error::{DataError, Result};

/// Upper bound on decompressed content (Fashion-MNIST's largest file is 47 MB
/// decompressed), so a corrupt or hostile stream cannot exhaust memory.
pub const MAX_DECOMPRESSED_BYTES: u64 = 1 << 30;

/// File content in error messages: the score files' rule
/// ([`dpaudit_audit::io::excerpt`], at most [`QUOTE_BYTES`] bytes, control
/// characters escaped), so every crate quotes files alike.
pub use dpaudit_audit::io::{excerpt, QUOTE_BYTES};

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Reads a whole file and records its path, size and SHA-256.
pub fn read_with_digest(path: &Path) -> Result<(Vec<u8>, SourceFile)> {
    let bytes = std::fs::read(path).map_err(|source| DataError::Io {
        path: path.to_path_buf(),
        action: "cannot read",
        source,
    })?;
    let file = SourceFile {
        path: path.to_path_buf(),
        sha256: sha256_hex(&bytes),
        bytes: bytes.len() as u64,
    };
    Ok((bytes, file))
}

/// Whether `bytes` start with the gzip magic number `1f 8b` (RFC 1952 §2.3.1).
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// The content of `bytes`, gunzipped if it starts with the gzip magic number.
/// `file` names the source in errors.
pub fn maybe_gunzip<'a>(bytes: &'a [u8], file: &str) -> Result<Cow<'a, [u8]>> {
    if !is_gzip(bytes) {
        return Ok(Cow::Borrowed(bytes));
    }
    let mut out = Vec::new();
    let mut decoder = GzDecoder::new(bytes).take(MAX_DECOMPRESSED_BYTES + 1);
    match decoder.read_to_end(&mut out) {
        Ok(_) if out.len() as u64 > MAX_DECOMPRESSED_BYTES => Err(DataError::WrongSize {
            file: file.to_string(),
            offset: 0,
            found: format!("more than {MAX_DECOMPRESSED_BYTES} decompressed bytes"),
            expected: format!("at most {MAX_DECOMPRESSED_BYTES} bytes after gunzip"),
        }),
        Ok(_) => Ok(Cow::Owned(out)),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(DataError::Truncated {
            file: file.to_string(),
            offset: bytes.len() as u64,
            expected: "the rest of the gzip stream (compressed data and its 8-byte trailer)"
                .to_string(),
        }),
        Err(source) => Err(DataError::Gzip {
            file: file.to_string(),
            source,
        }),
    }
}

/// The first of `names` that exists in `dir`, or a [`DataError::MissingFile`]
/// for the first name.
pub fn find_one_of(dir: &Path, names: &[&str], hint: &str) -> Result<PathBuf> {
    for name in names {
        let p = dir.join(name);
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(DataError::MissingFile {
        path: dir.join(names.first().copied().unwrap_or_default()),
        expected: if names.len() > 1 {
            format!("one of {}", names.join(", "))
        } else {
            "this file".to_string()
        },
        hint: hint.to_string(),
    })
}

/// A short name for error messages: the path as given.
pub fn display_name(path: &Path) -> String {
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn sha256_of_abc_matches_fips_180_2() {
        // FIPS 180-2, Appendix B.1: SHA-256("abc").
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn raw_bytes_pass_through_and_gzip_is_inflated() {
        assert_eq!(
            &*maybe_gunzip(b"\x00\x00\x08\x01", "f").unwrap(),
            b"\x00\x00\x08\x01"
        );
        let data: Vec<u8> = (0..=255).cycle().take(5000).collect();
        assert_eq!(&*maybe_gunzip(&gz(&data), "f").unwrap(), &data[..]);
    }

    #[test]
    fn truncated_gzip_is_an_error_naming_the_file() {
        let data: Vec<u8> = (0..=255).cycle().take(5000).collect();
        let z = gz(&data);
        for cut in [2, 10, z.len() / 2, z.len() - 1] {
            let err = maybe_gunzip(&z[..cut], "train.gz").unwrap_err();
            assert!(err.to_string().starts_with("train.gz: "), "{err}");
        }
    }
}
