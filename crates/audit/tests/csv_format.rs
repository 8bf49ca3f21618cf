//! The CSV score format (`dpaudit_audit::io`): RFC 4180 quoting, every line
//! end in use (`\n`, `\r\n`, a lone `\r`), a byte-order mark, blank lines;
//! a header with exactly one `score` and one `member` column; and errors that
//! quote at most `QUOTE_BYTES` bytes of the file, however long its lines.

use std::path::Path;

use dpaudit_audit::io::{parse_csv, read_scores};

fn csv_error(text: &str) -> String {
    parse_csv(Path::new("s.csv"), text).unwrap_err().to_string()
}

#[test]
fn quoted_fields_and_a_quoted_header_are_read() {
    let obs = parse_csv(
        Path::new("s.csv"),
        "\"score\",\"member\"\n\"0.5\",\"1\"\n\" -2 \",0\n3,\"1.0\"\n",
    )
    .unwrap();
    assert_eq!(obs.scores(), &[0.5, -2.0, 3.0]);
    assert_eq!(obs.members(), &[true, false, true]);
    // An ignored column may hold commas, doubled quotes and line breaks when quoted.
    let obs = parse_csv(
        Path::new("s.csv"),
        "note,score,member\n\"a, \"\"b\"\"\nc\",1.5,1\nplain,0.5,0\n",
    )
    .unwrap();
    assert_eq!(obs.scores(), &[1.5, 0.5]);
    assert_eq!(obs.members(), &[true, false]);
}

#[test]
fn every_line_end_is_read_and_errors_count_lines_in_it() {
    for end in ["\n", "\r\n", "\r"] {
        let text = ["score,member", "0.5,1", "", "0.25,0", "  ", "1,1", ""].join(end);
        let obs = parse_csv(Path::new("s.csv"), &text).unwrap();
        assert_eq!(obs.scores(), &[0.5, 0.25, 1.0], "{end:?}");
        assert_eq!(obs.members(), &[true, false, true], "{end:?}");
        // The bad record is on line 5 (line 3 and 4 are a blank and a record).
        let text = ["score,member", "0.5,1", "", "0.25,0", "abc,1", ""].join(end);
        let msg = csv_error(&text);
        assert!(
            msg.contains("s.csv:5:") && msg.contains("`abc` is not a number"),
            "{end:?}: {msg}"
        );
    }
    // A byte-order mark before a quoted header, CRLF line ends.
    let obs = parse_csv(
        Path::new("s.csv"),
        "\u{feff}\"score\",\"member\"\r\n1,1\r\n0,0\r\n",
    )
    .unwrap();
    assert_eq!(obs.scores(), &[1.0, 0.0]);
}

#[test]
fn a_big_file_with_cr_line_ends_is_read_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mac.csv");
    let mut text = String::from("score,member\r");
    for i in 0..20_000 {
        text.push_str(&format!("{}.5,{}\r", i, i % 2));
    }
    std::fs::write(&path, &text).unwrap();
    let obs = read_scores(&path).unwrap();
    assert_eq!(obs.len(), 20_000);
}

#[test]
fn errors_quote_at_most_a_hundred_bytes_of_a_line() {
    // One line of 1 MB without a `score` column: the header is quoted cut.
    let long = format!("{}\n1,2\n", "x;".repeat(500_000));
    let msg = csv_error(&long);
    assert!(
        msg.contains("s.csv:1") && msg.contains("lacks a `score`"),
        "{}",
        &msg[..msg.len().min(300)]
    );
    assert!(msg.len() < 400, "{} bytes: {}", msg.len(), &msg[..300]);
    assert!(msg.contains("… (1000000 bytes)"), "{msg}");
    // A long score field, and a long member field.
    let msg = csv_error(&format!("score,member\n{},1\n", "7".repeat(100_000) + "x"));
    assert!(msg.len() < 400 && msg.contains("s.csv:2"), "{msg}");
    assert!(msg.contains("… (100001 bytes)"), "{msg}");
    let msg = csv_error(&format!("score,member\n1,{}\n", "é".repeat(100_000)));
    assert!(msg.len() < 400 && msg.contains("s.csv:2"), "{msg}");
    // Cut on a character boundary: 50 two-byte characters fit in 100 bytes.
    assert!(
        msg.contains(&format!("`{}… (200000 bytes)`", "é".repeat(50))),
        "{msg}"
    );
    // The field-count error quotes the header, cut too.
    let header = format!("score,member,{}", "c".repeat(1000));
    let msg = csv_error(&format!("{header}\n1,1\n"));
    assert!(
        msg.contains("s.csv:2") && msg.contains("found 2 fields, expected 3") && msg.len() < 400,
        "{msg}"
    );
}

#[test]
fn duplicate_score_or_member_columns_are_refused_with_both_positions() {
    let msg = csv_error("score,member,score\n1,1,2\n0,0,3\n");
    assert!(
        msg.contains("s.csv:1")
            && msg.contains("2 `score` columns")
            && msg.contains("columns 1 and 3"),
        "{msg}"
    );
    let msg = csv_error("run, member ,score,member\n0,1,2,0\n");
    assert!(
        msg.contains("2 `member` columns") && msg.contains("columns 2 and 4"),
        "{msg}"
    );
    // Quoting does not hide a duplicate.
    let msg = csv_error("\"score\",member,score\n1,1,2\n");
    assert!(msg.contains("columns 1 and 3"), "{msg}");
}

#[test]
fn errors_in_quoted_crlf_files_after_a_bom_name_file_line_and_field() {
    let bom_crlf = |rows: &[&str]| format!("\u{feff}{}\r\n", rows.join("\r\n"));
    let msg = csv_error(&bom_crlf(&[
        "\"score\",\"member\"",
        "\"0.5\",\"1\"",
        "\"0.25\",\"2\"",
    ]));
    assert!(
        msg.contains("s.csv:3") && msg.contains("member value `2`"),
        "{msg}"
    );
    let msg = csv_error(&bom_crlf(&["\"score\",\"member\"", "\"x\",\"1\""]));
    assert!(
        msg.contains("s.csv:2:") && msg.contains("column `score`: `x`"),
        "{msg}"
    );
    let msg = csv_error(&bom_crlf(&["\"score\",\"member\"", "\"NaN\",\"1\""]));
    assert!(
        msg.contains("s.csv:2") && msg.contains("score NaN"),
        "{msg}"
    );
}
