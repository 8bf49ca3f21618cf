//! Bad input gives clear errors that say where (file and line) and what was
//! expected: NaN/inf scores, one class empty, member values other than 0/1,
//! δ ≥ 1, malformed CSV lines, NPY headers whose shape overflows; and a
//! byte-order mark before a CSV header is accepted.

use std::path::Path;

use dpaudit_audit::io::{npy_v1_preamble, parse_csv, parse_npy, to_npy};
use dpaudit_audit::observations::{Observations, Selection};
use dpaudit_audit::region::{eps_delta_lower_bound, RegionConfig};
use dpaudit_audit::AuditError;

fn csv_error(text: &str) -> String {
    parse_csv(Path::new("s.csv"), text).unwrap_err().to_string()
}

#[test]
fn reads_good_csv_with_extra_columns() {
    let obs = parse_csv(
        Path::new("s.csv"),
        "run,member,score\r\n0,1,2.5\n\n1,0,-1e3\n2,1.0,0\n",
    )
    .unwrap();
    assert_eq!(obs.scores(), &[2.5, -1000.0, 0.0]);
    assert_eq!(obs.members(), &[true, false, true]);
}

#[test]
fn non_finite_scores_name_the_line() {
    for bad in ["NaN", "inf", "-inf"] {
        let msg = csv_error(&format!("score,member\n1.0,1\n{bad},0\n"));
        assert!(
            msg.contains("s.csv:3") && msg.contains("not finite"),
            "{msg}"
        );
    }
}

#[test]
fn one_empty_class_is_refused() {
    let msg = csv_error("score,member\n1.0,1\n2.0,1\n");
    assert!(
        msg.contains("no non-member scores") && msg.contains("s.csv"),
        "{msg}"
    );
    let msg = csv_error("score,member\n");
    assert!(msg.contains("no member scores"), "{msg}");
}

#[test]
fn member_must_be_zero_or_one() {
    for bad in ["2", "yes", "-1", "0.5", ""] {
        let msg = csv_error(&format!("score,member\n1.0,1\n2.0,{bad}\n"));
        assert!(
            msg.contains("s.csv:3") && msg.contains("expected 0 or 1"),
            "{bad}: {msg}"
        );
    }
}

#[test]
fn malformed_lines_name_the_line() {
    let msg = csv_error("score,member\n1.0,1\n2.0,0\n3.0\n");
    assert!(
        msg.contains("s.csv:4") && msg.contains("found 1 fields, expected 2"),
        "{msg}"
    );
    let msg = csv_error("score,member\n1.0,1\nabc,0\n");
    assert!(
        msg.contains("s.csv:3") && msg.contains("`abc` is not a number"),
        "{msg}"
    );
    let msg = csv_error("value,label\n1.0,1\n");
    assert!(msg.contains("s.csv:1") && msg.contains("`score`"), "{msg}");
    let msg = csv_error("");
    assert!(msg.contains("empty"), "{msg}");
}

#[test]
fn delta_at_least_one_is_refused() {
    let obs = Observations::from_classes(&[1.0, 2.0], &[0.0, 0.5]).unwrap();
    for delta in [1.0, 2.0, -0.1, f64::NAN] {
        let cfg = RegionConfig {
            confidence: 0.95,
            delta,
            selection: Selection::SameData,
        };
        let err = eps_delta_lower_bound(&obs, &cfg).unwrap_err();
        assert!(
            matches!(err, AuditError::InvalidParameter { name: "delta", .. }),
            "{err}"
        );
        assert!(err.to_string().contains("[0, 1)"));
    }
}

#[test]
fn npy_round_trip_and_errors() {
    let obs = Observations::from_classes(&[1.5, 2.0], &[0.25]).unwrap();
    let bytes = to_npy(&obs);
    assert_eq!(parse_npy(Path::new("s.npy"), &bytes).unwrap(), obs);
    // Bad magic.
    let msg = parse_npy(Path::new("s.npy"), b"not an npy file")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("byte 0") && msg.contains("magic"), "{msg}");
    // Member value 0.5 in row 1.
    let bad = Observations::from_classes(&[1.5], &[0.25]).unwrap();
    let mut bytes = to_npy(&bad);
    let n = bytes.len();
    bytes[n - 8..].copy_from_slice(&0.5_f64.to_le_bytes());
    let msg = parse_npy(Path::new("s.npy"), &bytes)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("row 1") && msg.contains("expected 0 or 1"),
        "{msg}"
    );
    // NaN score in row 0.
    let mut bytes = to_npy(&bad);
    let start = n - 32;
    bytes[start..start + 8].copy_from_slice(&f64::NAN.to_le_bytes());
    let msg = parse_npy(Path::new("s.npy"), &bytes)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("row 0") && msg.contains("not finite"), "{msg}");
    // Truncated data.
    let bytes = to_npy(&obs);
    let msg = parse_npy(Path::new("s.npy"), &bytes[..bytes.len() - 3])
        .unwrap_err()
        .to_string();
    assert!(msg.contains("expected 48"), "{msg}");
}

/// An NPY v1 file with the header `dict` (padded as NumPy does) and `data`.
fn npy_with_header(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = npy_v1_preamble(dict);
    out.extend_from_slice(data);
    out
}

#[test]
fn npy_shape_that_overflows_is_a_clear_error() {
    // (2⁶⁰ + 4) rows × 16 bytes = 2⁶⁴ + 64 bytes: the product wraps to 64 in
    // unchecked 64-bit arithmetic, so give the file exactly 64 data bytes.
    let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (1152921504606846980, 2), }";
    let bytes = npy_with_header(dict, &[0_u8; 64]);
    let msg = parse_npy(Path::new("big.npy"), &bytes)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("big.npy")
            && msg.contains("1152921504606846980")
            && msg.contains("more than any file can hold")
            && msg.contains("64 bytes of data"),
        "{msg}"
    );
    // A shape that does not even fit a 64-bit count.
    let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999999, 2), }";
    let msg = parse_npy(Path::new("big.npy"), &npy_with_header(dict, &[]))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("cannot parse shape"), "{msg}");
}

#[test]
fn csv_with_a_byte_order_mark_is_read() {
    let obs = parse_csv(Path::new("s.csv"), "\u{feff}score,member\n2.0,1\n1.0,0\n").unwrap();
    assert_eq!(obs.scores(), &[2.0, 1.0]);
    assert_eq!(obs.members(), &[true, false]);
    // Only before the header: elsewhere it is a stray character, reported.
    let msg = csv_error("score,member\n\u{feff}2.0,1\n1.0,0\n");
    assert!(
        msg.contains("s.csv:2") && msg.contains("not a number"),
        "{msg}"
    );
}
