//! The statistics never call the figures: no source file of `dpaudit-audit`
//! outside `src/figures/` names the `figures` module (ARCHITECTURE.md,
//! "Code map"). The figures read the statistics, never the other way round.

use std::path::{Path, PathBuf};

#[test]
fn no_statistics_file_names_the_figures() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let figures = src.join("figures");
    let files: Vec<PathBuf> = walkdir::WalkDir::new(&src)
        .into_iter()
        .map(|entry| entry.unwrap().into_path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    assert!(files.len() > 20, "found only {} source files", files.len());
    assert!(files.iter().any(|f| f.starts_with(&figures)));
    let offenders: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with(&figures) && !f.ends_with("lib.rs"))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .any(|l| l.contains("figures::"))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "statistics files that call the figures: {offenders:?}"
    );
}
