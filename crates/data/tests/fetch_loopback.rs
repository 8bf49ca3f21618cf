//! `fetch` end to end against a local HTTP server on 127.0.0.1 serving
//! archives generated here. No other address is contacted.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use dpaudit_data::fetch::{fetch, FetchOptions, FileStatus};
use dpaudit_data::files::sha256_hex;
use dpaudit_data::idx::encode_u8;
use dpaudit_data::{load_dir, DataError, DatasetKind, Source};
use flate2::write::GzEncoder;

/// A minimal HTTP/1.1 server: GET of a known path answers 200 with its bytes,
/// anything else 404. Records every requested path.
struct Server {
    base: String,
    requests: Arc<Mutex<Vec<String>>>,
}

fn serve(files: Vec<(&str, Vec<u8>)>) -> Server {
    let files: HashMap<String, Vec<u8>> = files
        .into_iter()
        .map(|(k, v)| (format!("/{k}"), v))
        .collect();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&requests);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            loop {
                let mut header = String::new();
                match reader.read_line(&mut header) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if header == "\r\n" => break,
                    Ok(_) => {}
                }
            }
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .to_string();
            log.lock().unwrap().push(path.clone());
            let (status, body) = match files.get(&path) {
                Some(b) => ("200 OK", b.as_slice()),
                None => ("404 Not Found", b"not found".as_slice()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body);
        }
    });
    Server { base, requests }
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn tar_gz(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), flate2::Compression::default()));
    for (path, data) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, path, data.as_slice())
            .unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// Names in `dir`, sorted (hidden temporaries included).
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Four tiny gzipped IDX files: 3 training and 2 test images.
fn fmnist_fixture() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "train-images-idx3-ubyte.gz",
            gz(&encode_u8(&[3, 28, 28], &[7u8; 3 * 784])),
        ),
        (
            "train-labels-idx1-ubyte.gz",
            gz(&encode_u8(&[3], &[1, 5, 9])),
        ),
        (
            "t10k-images-idx3-ubyte.gz",
            gz(&encode_u8(&[2, 28, 28], &[200u8; 2 * 784])),
        ),
        ("t10k-labels-idx1-ubyte.gz", gz(&encode_u8(&[2], &[0, 0]))),
    ]
}

fn cifar_batch(labels: &[u8]) -> Vec<u8> {
    labels
        .iter()
        .flat_map(|&l| std::iter::once(l).chain(std::iter::repeat_n(l * 10, 3072)))
        .collect()
}

fn cifar_fixture(with_test_batch: bool) -> Vec<u8> {
    let mut entries: Vec<(String, Vec<u8>)> = (1..=5)
        .map(|i| {
            (
                format!("cifar-10-batches-bin/data_batch_{i}.bin"),
                cifar_batch(&[i, 0]),
            )
        })
        .collect();
    if with_test_batch {
        entries.push((
            "cifar-10-batches-bin/test_batch.bin".to_string(),
            cifar_batch(&[9]),
        ));
    }
    entries.push((
        "cifar-10-batches-bin/batches.meta.txt".to_string(),
        b"airplane\n".to_vec(),
    ));
    entries.push((
        "cifar-10-batches-bin/readme.html".to_string(),
        b"<html>".to_vec(),
    ));
    let refs: Vec<(&str, Vec<u8>)> = entries
        .iter()
        .map(|(p, d)| (p.as_str(), d.clone()))
        .collect();
    tar_gz(&refs)
}

fn options(server: &Server, to: &Path, sha256: &[(&str, String)]) -> FetchOptions {
    FetchOptions {
        to: to.to_path_buf(),
        url_base: Some(server.base.clone()),
        sha256: sha256
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        timeout_s: Some(10),
    }
}

#[test]
fn fmnist_downloads_verifies_and_loads_then_skips_when_present() {
    let fixture = fmnist_fixture();
    let sums: Vec<(&str, String)> = fixture.iter().map(|(n, b)| (*n, sha256_hex(b))).collect();
    let server = serve(fixture.clone());
    let tmp = tempfile::tempdir().unwrap();
    let to = tmp.path().join("fmnist");

    let report = fetch(DatasetKind::Fmnist, &options(&server, &to, &sums)).unwrap();
    assert_eq!(report.files.len(), 4);
    assert!(report
        .files
        .iter()
        .all(|f| f.status == FileStatus::Downloaded));
    assert_eq!(listing(&to), {
        let mut n: Vec<String> = fixture.iter().map(|(n, _)| n.to_string()).collect();
        n.sort();
        n
    });
    for (name, bytes) in &fixture {
        assert_eq!(
            &std::fs::read(to.join(name)).unwrap(),
            bytes,
            "{name} stored byte for byte"
        );
    }
    // Stored with the mode of an ordinary new file (not a temporary's 0600).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let probe = tmp.path().join("probe");
        std::fs::File::create(&probe).unwrap();
        for (name, _) in &fixture {
            assert_eq!(mode(&to.join(name)), mode(&probe), "{name}");
        }
    }
    let splits = load_dir(DatasetKind::Fmnist, &to).unwrap();
    assert_eq!(splits.train.labels(), &[1, 5, 9]);
    assert_eq!(splits.test.len(), 2);
    assert!(matches!(splits.source(), Source::Real { .. }));

    // A second fetch verifies what is there and downloads nothing.
    let before = server.requests.lock().unwrap().len();
    let again = fetch(DatasetKind::Fmnist, &options(&server, &to, &sums)).unwrap();
    assert!(again
        .files
        .iter()
        .all(|f| f.status == FileStatus::AlreadyPresent));
    assert_eq!(server.requests.lock().unwrap().len(), before);
}

#[test]
fn fmnist_debian_files_do_not_match_the_pinned_upstream_checksums() {
    // The Debian package's .gz files are not byte-identical to upstream's
    // (each is 23-24 bytes shorter), so serving them under the official
    // manifest must fail verification: a real wrong-checksum case.
    let dir = Path::new("/usr/share/datasets/fashion-mnist");
    let names = [
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    ];
    let files: Vec<(&str, Vec<u8>)> = names
        .iter()
        .map(|n| (*n, std::fs::read(dir.join(n)).unwrap()))
        .collect();
    let server = serve(files);
    let tmp = tempfile::tempdir().unwrap();
    let err = fetch(DatasetKind::Fmnist, &options(&server, tmp.path(), &[])).unwrap_err();
    let DataError::ChecksumMismatch { file, expected, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(file, "train-images-idx3-ubyte.gz");
    // Pinned value: TensorFlow Datasets url_checksums/fashion_mnist.txt.
    assert_eq!(
        expected,
        "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84"
    );
    assert!(err.to_string().contains("nothing was written"), "{err}");
    assert!(
        listing(tmp.path()).is_empty(),
        "left behind: {:?}",
        listing(tmp.path())
    );
}

#[test]
fn one_bad_file_of_four_leaves_nothing_behind() {
    let fixture = fmnist_fixture();
    let mut sums: Vec<(&str, String)> = fixture.iter().map(|(n, b)| (*n, sha256_hex(b))).collect();
    sums[3].1 = "0".repeat(64); // the last file is checked after three good ones
    let server = serve(fixture);
    let tmp = tempfile::tempdir().unwrap();
    let err = fetch(DatasetKind::Fmnist, &options(&server, tmp.path(), &sums)).unwrap_err();
    assert!(
        matches!(err, DataError::ChecksumMismatch { ref file, .. } if file == "t10k-labels-idx1-ubyte.gz"),
        "{err}"
    );
    assert_eq!(server.requests.lock().unwrap().len(), 4);
    assert!(
        listing(tmp.path()).is_empty(),
        "left behind: {:?}",
        listing(tmp.path())
    );
}

#[test]
fn cifar10_unpacks_and_loads() {
    let archive = cifar_fixture(true);
    let sum = sha256_hex(&archive);
    let server = serve(vec![("cifar-10-binary.tar.gz", archive)]);
    let tmp = tempfile::tempdir().unwrap();
    let report = fetch(
        DatasetKind::Cifar10,
        &options(
            &server,
            tmp.path(),
            &[("cifar-10-binary.tar.gz", sum.clone())],
        ),
    )
    .unwrap();
    assert_eq!(
        report.unpacked.as_deref(),
        Some(tmp.path().join("cifar-10-batches-bin").as_path())
    );
    assert_eq!(report.files[0].sha256, sum);
    // The archive itself is not kept, and readme.html was not asked for.
    assert_eq!(listing(tmp.path()), vec!["cifar-10-batches-bin"]);
    assert_eq!(listing(&tmp.path().join("cifar-10-batches-bin")).len(), 7);
    // `load_dir` accepts the destination: it finds the archive's folder.
    let splits = load_dir(DatasetKind::Cifar10, tmp.path()).unwrap();
    assert_eq!(splits.train.labels(), &[1, 0, 2, 0, 3, 0, 4, 0, 5, 0]);
    assert_eq!(splits.test.labels(), &[9]);
    assert!((splits.test.features()[0] - 90.0 / 255.0).abs() < 1e-6);

    // Unpacking again would overwrite: refused before any download.
    let before = server.requests.lock().unwrap().len();
    let err = fetch(
        DatasetKind::Cifar10,
        &options(&server, tmp.path(), &[("cifar-10-binary.tar.gz", sum)]),
    )
    .unwrap_err();
    assert!(matches!(err, DataError::AlreadyExists { .. }), "{err}");
    assert_eq!(server.requests.lock().unwrap().len(), before);
}

#[test]
fn cifar10_wrong_checksum_leaves_nothing_behind() {
    // No override: the pinned SHA-256 of the real archive cannot match the fixture.
    let server = serve(vec![("cifar-10-binary.tar.gz", cifar_fixture(true))]);
    let tmp = tempfile::tempdir().unwrap();
    let err = fetch(DatasetKind::Cifar10, &options(&server, tmp.path(), &[])).unwrap_err();
    assert!(matches!(err, DataError::ChecksumMismatch { .. }), "{err}");
    assert!(
        listing(tmp.path()).is_empty(),
        "left behind: {:?}",
        listing(tmp.path())
    );
}

#[test]
fn verified_archive_missing_a_member_leaves_nothing_behind() {
    let archive = cifar_fixture(false);
    let sum = sha256_hex(&archive);
    let server = serve(vec![("cifar-10-binary.tar.gz", archive)]);
    let tmp = tempfile::tempdir().unwrap();
    let err = fetch(
        DatasetKind::Cifar10,
        &options(&server, tmp.path(), &[("cifar-10-binary.tar.gz", sum)]),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("lacks cifar-10-batches-bin/test_batch.bin"),
        "{err}"
    );
    assert!(
        listing(tmp.path()).is_empty(),
        "left behind: {:?}",
        listing(tmp.path())
    );
}

#[test]
fn purchase100_with_explicit_checksum_unpacks_and_loads() {
    let mut text = String::new();
    for (label, bit) in [(100, '1'), (1, '0'), (42, '1')] {
        text.push_str(&label.to_string());
        for _ in 0..600 {
            text.push(',');
            text.push(bit);
        }
        text.push('\n');
    }
    let archive = tar_gz(&[("dataset_purchase", text.into_bytes())]);
    let sum = sha256_hex(&archive);
    let server = serve(vec![("dataset_purchase.tgz", archive)]);
    let tmp = tempfile::tempdir().unwrap();
    fetch(
        DatasetKind::Purchase100,
        &options(&server, tmp.path(), &[("dataset_purchase.tgz", sum)]),
    )
    .unwrap();
    assert_eq!(listing(tmp.path()), vec!["dataset_purchase"]);
    let splits = load_dir(DatasetKind::Purchase100, tmp.path()).unwrap();
    assert_eq!(splits.train.labels(), &[99, 0, 41]);
    assert!(splits.test.is_empty());
}

#[test]
fn http_404_is_an_error_naming_the_url() {
    let server = serve(vec![]);
    let tmp = tempfile::tempdir().unwrap();
    let err = fetch(DatasetKind::Cifar10, &options(&server, tmp.path(), &[])).unwrap_err();
    let DataError::Http { url, message } = &err else {
        panic!("{err}")
    };
    assert_eq!(url, &format!("{}/cifar-10-binary.tar.gz", server.base));
    assert!(message.contains("404"), "{message}");
    assert!(listing(tmp.path()).is_empty());
}

#[test]
fn existing_different_file_is_never_overwritten() {
    let fixture = fmnist_fixture();
    let sums: Vec<(&str, String)> = fixture.iter().map(|(n, b)| (*n, sha256_hex(b))).collect();
    let server = serve(fixture);
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("train-labels-idx1-ubyte.gz"), b"mine").unwrap();
    let err = fetch(DatasetKind::Fmnist, &options(&server, tmp.path(), &sums)).unwrap_err();
    assert!(matches!(err, DataError::AlreadyExists { .. }), "{err}");
    assert_eq!(
        std::fs::read(tmp.path().join("train-labels-idx1-ubyte.gz")).unwrap(),
        b"mine"
    );
    assert_eq!(listing(tmp.path()), vec!["train-labels-idx1-ubyte.gz"]);
}
