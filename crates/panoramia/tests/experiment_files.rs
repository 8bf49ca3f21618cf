//! Every committed PANORAMIA experiment file parses and validates.

use dpaudit_panoramia::PanoramiaConfig;

#[test]
fn committed_experiment_files_are_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/panoramia");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let cfg =
                PanoramiaConfig::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(!cfg.targets.is_empty());
            n += 1;
        }
    }
    assert!(n >= 5, "{n} files in {}", dir.display());
}
