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

/// Committed files say `kind = "panoramia"`; the line is left out of the
/// config, so a file with it and one without (as `dpaudit panoramia` still
/// takes them) give the same config and fingerprint; a file of another kind
/// is refused, naming the file and `dpaudit run`.
#[test]
fn the_kind_line_changes_nothing_and_another_kind_is_refused() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../experiments/panoramia/fmnist-lenet-smoke.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let line = "kind = \"panoramia\"\n";
    assert!(text.contains(&format!("\n{line}")), "{}", path.display());
    let with = PanoramiaConfig::load(&path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.toml");
    std::fs::write(&plain, text.replacen(line, "", 1)).unwrap();
    let without = PanoramiaConfig::load(&plain).unwrap();
    assert_eq!(with.fingerprint(), without.fingerprint());
    assert_eq!(
        serde_json::to_value(&with).unwrap(),
        serde_json::to_value(&without).unwrap()
    );
    let bgm = dir.path().join("bgm.toml");
    std::fs::write(&bgm, text.replacen(line, "kind = \"bgm\"\n", 1)).unwrap();
    let e = PanoramiaConfig::load(&bgm).unwrap_err().to_string();
    assert!(e.contains("bgm.toml") && e.contains("dpaudit run"), "{e}");
}
