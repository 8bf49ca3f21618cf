//! The IDX file format of (Fashion-)MNIST, unsigned-byte arrays only.
//!
//! Format (LeCun et al., "THE MNIST DATABASE", file formats section): a 4-byte
//! magic number `00 00 08 n` (zero, zero, data type 0x08 = unsigned byte,
//! number of dimensions `n`), then `n` big-endian u32 sizes, then the
//! product of the sizes bytes of data in row-major order. Nothing may follow.

use crate::error::{DataError, Result};

/// A parsed IDX array of unsigned bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdxArray {
    /// The sizes of the dimensions, outermost first.
    pub dims: Vec<usize>,
    /// The values in row-major order.
    pub data: Vec<u8>,
}

/// Byte offset of the data of an IDX file with `ndims` dimensions.
pub fn header_len(ndims: usize) -> usize {
    4 + 4 * ndims
}

/// Parses an IDX array of unsigned bytes with exactly `ndims` dimensions from
/// its (already decompressed) content. `file` names the source in errors.
pub fn parse_u8(bytes: &[u8], ndims: u8, file: &str) -> Result<IdxArray> {
    let expected_magic = 0x0000_0800u32 | u32::from(ndims);
    let magic = read_u32_be(bytes, 0, file, || {
        format!("the 4-byte IDX magic number 0x{expected_magic:08x}")
    })?;
    if magic != expected_magic {
        return Err(DataError::BadMagic {
            file: file.to_string(),
            offset: 0,
            found: format!("0x{magic:08x}"),
            expected: format!("0x{expected_magic:08x} (IDX, unsigned bytes, {ndims} dimensions)"),
        });
    }
    let mut dims = Vec::with_capacity(usize::from(ndims));
    for d in 0..usize::from(ndims) {
        let offset = 4 + 4 * d;
        let size = read_u32_be(bytes, offset, file, || {
            format!("the big-endian u32 size of dimension {d}")
        })?;
        dims.push(size as usize);
    }
    let start = header_len(usize::from(ndims));
    let total = dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let Some(total) = total else {
        return Err(DataError::WrongSize {
            file: file.to_string(),
            offset: 4,
            found: format!("dimensions {dims:?}"),
            expected: "dimensions whose product fits in memory".to_string(),
        });
    };
    let available = bytes.len() - start;
    if available < total {
        return Err(DataError::Truncated {
            file: file.to_string(),
            offset: bytes.len() as u64,
            expected: format!(
                "{total} data bytes after the header (dimensions {dims:?}), found only {available}"
            ),
        });
    }
    if available > total {
        return Err(DataError::WrongSize {
            file: file.to_string(),
            offset: (start + total) as u64,
            found: format!("{} trailing bytes", available - total),
            expected: format!("the file to end after {total} data bytes (dimensions {dims:?})"),
        });
    }
    Ok(IdxArray {
        dims,
        data: bytes[start..].to_vec(),
    })
}

fn read_u32_be(
    bytes: &[u8],
    offset: usize,
    file: &str,
    what: impl FnOnce() -> String,
) -> Result<u32> {
    match bytes.get(offset..offset + 4) {
        Some(b) => Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        None => Err(DataError::Truncated {
            file: file.to_string(),
            offset: bytes.len() as u64,
            expected: what(),
        }),
    }
}

/// Encodes an unsigned-byte IDX array (for fixtures and tests).
pub fn encode_u8(dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, dims.len() as u8];
    for d in dims {
        out.extend_from_slice(&d.to_be_bytes());
    }
    out.extend_from_slice(data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_small_array() {
        let bytes = encode_u8(&[2, 3], &[1, 2, 3, 4, 5, 6]);
        let a = parse_u8(&bytes, 2, "x").unwrap();
        assert_eq!(a.dims, vec![2, 3]);
        assert_eq!(a.data, vec![1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn wrong_magic_names_offset_and_expectation() {
        let bytes = encode_u8(&[2], &[1, 2]);
        let err = parse_u8(&bytes, 3, "labels.idx").unwrap_err();
        assert_eq!(
            err.to_string(),
            "labels.idx: wrong magic number at byte offset 0: found 0x00000801, \
             expected 0x00000803 (IDX, unsigned bytes, 3 dimensions)"
        );
        let mut float_type = bytes.clone();
        float_type[2] = 0x0d;
        assert!(matches!(
            parse_u8(&float_type, 1, "f"),
            Err(DataError::BadMagic { .. })
        ));
    }

    #[test]
    fn truncation_and_trailing_bytes_are_errors() {
        let bytes = encode_u8(&[2, 3], &[1, 2, 3, 4, 5, 6]);
        for cut in 0..bytes.len() {
            assert!(
                matches!(
                    parse_u8(&bytes[..cut], 2, "f"),
                    Err(DataError::Truncated { .. })
                ),
                "cut {cut}"
            );
        }
        let mut long = bytes.clone();
        long.push(0);
        let err = parse_u8(&long, 2, "f").unwrap_err();
        assert!(
            matches!(err, DataError::WrongSize { offset: 18, .. }),
            "{err}"
        );
    }

    #[test]
    fn overflowing_dimensions_are_an_error() {
        let bytes = encode_u8(&[u32::MAX, u32::MAX, u32::MAX], &[]);
        assert!(parse_u8(&bytes, 3, "f").is_err());
    }
}
