//! Downloading a dataset from its official URL, verifying SHA-256, unpacking.
//!
//! # Atomicity
//!
//! Every file is streamed into a hidden temporary file in the destination
//! directory while it is hashed. Only when every file of the dataset has its
//! expected SHA-256 is anything moved into place: plain files by `rename` (atomic
//! within one directory), archives by unpacking the wanted members into a
//! temporary folder in the destination and renaming its top-level entry. On
//! any error, the temporaries are deleted and the destination holds nothing
//! new. Existing files are never overwritten.
//!
//! # Pinned checksums (facts, with their sources)
//!
//! - Fashion-MNIST: the four `.gz` files at the official S3 address listed
//!   in the zalandoresearch/fashion-mnist README. SHA-256 and sizes from
//!   TensorFlow Datasets' `url_checksums/fashion_mnist.txt`. The Debian
//!   package's `.gz` files hash differently: each is 23–24 bytes shorter,
//!   the length of the stored original file name, so they appear to be
//!   re-gzipped copies; their content is checked by the loader's test.
//! - CIFAR-10 binary: `cifar-10-binary.tar.gz` from the Toronto page.
//!   SHA-256 and size from TensorFlow Datasets' `url_checksums/cifar10.txt`;
//!   the page itself publishes only the MD5 `c32a1d4ab5d03f1284b67883e8d87530`,
//!   recorded in [`RemoteFile::md5`] but not checked.
//! - Purchase-100 has no official host. The address commonly used (by Shokri
//!   et al.'s own code and ML Privacy Meter) is
//!   `https://www.comp.nus.edu.sg/~reza/files/dataset_purchase.tgz`; no
//!   checksum is published, so fetching it requires an explicit SHA-256.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use flate2::read::GzDecoder;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::dataset::DatasetKind;
use crate::error::{DataError, Result};
use crate::files::sha256_hex;

/// One file to download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFile {
    /// File name under the URL base (and in the destination, if kept).
    pub name: &'static str,
    /// Pinned lowercase hex SHA-256, if one is known.
    pub sha256: Option<&'static str>,
    /// The MD5 the publisher lists, for reference only (not checked).
    pub md5: Option<&'static str>,
    /// Size in bytes, for reference.
    pub bytes: Option<u64>,
}

/// What to do with verified downloads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unpack {
    /// Keep the files as downloaded (Fashion-MNIST's `.gz` files are read as they are).
    Keep,
    /// Extract `members` (archive paths, all at or under `root`) from a
    /// `.tar.gz` and move `root` into the destination.
    TarGz {
        root: &'static str,
        members: &'static [&'static str],
    },
}

/// Where and what to download for a dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The dataset.
    pub kind: DatasetKind,
    /// The official URL base; file URLs are `{url_base}/{name}`.
    pub url_base: &'static str,
    /// The files.
    pub files: Vec<RemoteFile>,
    /// What to do with them.
    pub unpack: Unpack,
}

const CIFAR10_MEMBERS: &[&str] = &[
    "cifar-10-batches-bin/data_batch_1.bin",
    "cifar-10-batches-bin/data_batch_2.bin",
    "cifar-10-batches-bin/data_batch_3.bin",
    "cifar-10-batches-bin/data_batch_4.bin",
    "cifar-10-batches-bin/data_batch_5.bin",
    "cifar-10-batches-bin/test_batch.bin",
    "cifar-10-batches-bin/batches.meta.txt",
];

impl Manifest {
    /// The official sources of `kind` (see the module docs for where the checksums come from).
    pub fn official(kind: DatasetKind) -> Manifest {
        match kind {
            DatasetKind::Fmnist => Manifest {
                kind,
                url_base: "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com",
                files: vec![
                    RemoteFile {
                        name: "train-images-idx3-ubyte.gz",
                        sha256: Some(
                            "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
                        ),
                        md5: Some("8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
                        bytes: Some(26_421_880),
                    },
                    RemoteFile {
                        name: "train-labels-idx1-ubyte.gz",
                        sha256: Some(
                            "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
                        ),
                        md5: Some("25c81989df183df01b3e8a0aad5dffbe"),
                        bytes: Some(29_515),
                    },
                    RemoteFile {
                        name: "t10k-images-idx3-ubyte.gz",
                        sha256: Some(
                            "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
                        ),
                        md5: Some("bef4ecab320f06d8554ea6380940ec79"),
                        bytes: Some(4_422_102),
                    },
                    RemoteFile {
                        name: "t10k-labels-idx1-ubyte.gz",
                        sha256: Some(
                            "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
                        ),
                        md5: Some("bb300cfdad3c16e7a12a480ee83cd310"),
                        bytes: Some(5_148),
                    },
                ],
                unpack: Unpack::Keep,
            },
            DatasetKind::Cifar10 => Manifest {
                kind,
                url_base: "https://www.cs.toronto.edu/~kriz",
                files: vec![RemoteFile {
                    name: "cifar-10-binary.tar.gz",
                    sha256: Some(
                        "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd",
                    ),
                    md5: Some("c32a1d4ab5d03f1284b67883e8d87530"),
                    bytes: Some(170_052_171),
                }],
                unpack: Unpack::TarGz {
                    root: "cifar-10-batches-bin",
                    members: CIFAR10_MEMBERS,
                },
            },
            DatasetKind::Purchase100 => Manifest {
                kind,
                url_base: "https://www.comp.nus.edu.sg/~reza/files",
                files: vec![RemoteFile {
                    name: "dataset_purchase.tgz",
                    sha256: None,
                    md5: None,
                    bytes: None,
                }],
                unpack: Unpack::TarGz {
                    root: "dataset_purchase",
                    members: &["dataset_purchase"],
                },
            },
        }
    }
}

/// Options of [`fetch`].
#[derive(Debug, Clone, Default)]
pub struct FetchOptions {
    /// Destination directory (created if missing).
    pub to: PathBuf,
    /// Replaces the official URL base (a mirror, or a local server in tests).
    pub url_base: Option<String>,
    /// Expected SHA-256 by file name; replaces the pinned value. Required for
    /// files without one (Purchase-100).
    pub sha256: HashMap<String, String>,
    /// Seconds without progress before a download is abandoned (default 60).
    pub timeout_s: Option<u64>,
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    /// Downloaded and verified.
    Downloaded,
    /// Already in the destination with the expected SHA-256; not downloaded.
    AlreadyPresent,
}

/// One file of a [`FetchReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FetchedFile {
    /// File name.
    pub name: String,
    /// The URL it was (or would have been) downloaded from.
    pub url: String,
    /// Its verified SHA-256.
    pub sha256: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// What happened.
    pub status: FileStatus,
}

/// The result of [`fetch`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FetchReport {
    /// The dataset.
    pub dataset: DatasetKind,
    /// The destination directory; pass it as the data directory when loading.
    pub dir: PathBuf,
    /// The downloaded files.
    pub files: Vec<FetchedFile>,
    /// The unpacked folder or file, for archives.
    pub unpacked: Option<PathBuf>,
}

/// Downloads `kind` from its official URLs (or `options.url_base`), verifies
/// every file's SHA-256, and unpacks into `options.to` (see the module docs).
pub fn fetch(kind: DatasetKind, options: &FetchOptions) -> Result<FetchReport> {
    fetch_manifest(&Manifest::official(kind), options)
}

/// [`fetch`] for an explicit manifest.
pub fn fetch_manifest(manifest: &Manifest, options: &FetchOptions) -> Result<FetchReport> {
    let base = options
        .url_base
        .as_deref()
        .unwrap_or(manifest.url_base)
        .trim_end_matches('/')
        .to_string();
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Err(DataError::InvalidArgument {
            parameter: "url_base",
            value: base,
            expected: "an http:// or https:// URL".to_string(),
        });
    }
    let expected = expected_checksums(manifest, options)?;
    let to = &options.to;
    std::fs::create_dir_all(to).map_err(|source| DataError::Io {
        path: to.clone(),
        action: "cannot create the destination directory",
        source,
    })?;

    if let Unpack::TarGz { root, .. } = manifest.unpack {
        let dest = to.join(root);
        if dest.exists() {
            return Err(DataError::AlreadyExists {
                path: dest,
                reason: "this fetch would unpack there".to_string(),
            });
        }
    }

    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(30))
        .timeout_read(Duration::from_secs(options.timeout_s.unwrap_or(60)))
        .build();
    // Check what is already there before downloading anything.
    let mut present = vec![None; manifest.files.len()];
    if manifest.unpack == Unpack::Keep {
        for (i, (file, want)) in manifest.files.iter().zip(&expected).enumerate() {
            let dest = to.join(file.name);
            if !dest.exists() {
                continue;
            }
            let bytes = std::fs::read(&dest).map_err(|source| DataError::Io {
                path: dest.clone(),
                action: "cannot read the existing file",
                source,
            })?;
            let found = sha256_hex(&bytes);
            if &found != want {
                return Err(DataError::AlreadyExists {
                    path: dest,
                    reason: format!("its SHA-256 is {found}, not the expected {want}"),
                });
            }
            present[i] = Some(bytes.len() as u64);
        }
    }

    // Download and verify everything before moving anything into place.
    let mut downloaded = Vec::new();
    let mut report_files = Vec::new();
    for ((file, want), present) in manifest.files.iter().zip(&expected).zip(present) {
        let url = format!("{base}/{}", file.name);
        let (bytes, status) = match present {
            Some(bytes) => (bytes, FileStatus::AlreadyPresent),
            None => {
                let (tmp, bytes) = download_verified(&agent, &url, file.name, want, to)?;
                downloaded.push((tmp, to.join(file.name)));
                (bytes, FileStatus::Downloaded)
            }
        };
        report_files.push(FetchedFile {
            name: file.name.to_string(),
            url,
            sha256: want.clone(),
            bytes,
            status,
        });
    }

    let unpacked = match manifest.unpack {
        Unpack::Keep => {
            for (tmp, dest) in downloaded {
                tmp.persist_noclobber(&dest).map_err(|e| DataError::Io {
                    path: dest.clone(),
                    action: "cannot move the verified download into place",
                    source: e.error,
                })?;
            }
            None
        }
        Unpack::TarGz { root, members } => {
            let Some((tmp, _)) = downloaded.first() else {
                return Err(DataError::InvalidArgument {
                    parameter: "manifest",
                    value: format!("{} files", manifest.files.len()),
                    expected: "exactly one archive to unpack".to_string(),
                });
            };
            let archive_name = manifest.files[0].name;
            Some(unpack_tar_gz(tmp.path(), archive_name, root, members, to)?)
        }
    };
    Ok(FetchReport {
        dataset: manifest.kind,
        dir: to.clone(),
        files: report_files,
        unpacked,
    })
}

/// The expected SHA-256 of every file: the override if given, else the pinned value.
fn expected_checksums(manifest: &Manifest, options: &FetchOptions) -> Result<Vec<String>> {
    for name in options.sha256.keys() {
        if !manifest.files.iter().any(|f| f.name == name) {
            let names: Vec<&str> = manifest.files.iter().map(|f| f.name).collect();
            return Err(DataError::InvalidArgument {
                parameter: "sha256",
                value: name.clone(),
                expected: format!("a file of {}: {}", manifest.kind, names.join(", ")),
            });
        }
    }
    manifest
        .files
        .iter()
        .map(|f| {
            let given = options
                .sha256
                .get(f.name)
                .map(|s| s.trim().to_ascii_lowercase());
            let Some(want) = given.or_else(|| f.sha256.map(str::to_string)) else {
                return Err(DataError::MissingChecksum {
                    file: f.name.to_string(),
                    dataset: manifest.kind.to_string(),
                });
            };
            if want.len() != 64 || !want.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(DataError::InvalidArgument {
                    parameter: "sha256",
                    value: want,
                    expected: "64 hexadecimal digits".to_string(),
                });
            }
            Ok(want)
        })
        .collect()
}

/// Largest download accepted (CIFAR-10 is 170 MB).
const MAX_DOWNLOAD_BYTES: u64 = 4 << 30;

/// Streams `url` into a temporary file in `dir`, hashing as it goes; returns
/// it only if its SHA-256 is `want` (the temporary is deleted otherwise).
fn download_verified(
    agent: &ureq::Agent,
    url: &str,
    name: &str,
    want: &str,
    dir: &Path,
) -> Result<(tempfile::NamedTempFile, u64)> {
    let http = |message: String| DataError::Http {
        url: url.to_string(),
        message,
    };
    let response = agent.get(url).call().map_err(|e| match e {
        ureq::Error::Status(code, r) => http(format!("HTTP status {code} {}", r.status_text())),
        ureq::Error::Transport(t) => http(t.to_string()),
    })?;
    // With the mode of an ordinary new file: it is persisted as the dataset file.
    let mut tmp =
        crate::atomic::temp_file_in(dir, ".dpaudit-fetch-").map_err(|source| DataError::Io {
            path: dir.to_path_buf(),
            action: "cannot create a temporary file",
            source,
        })?;
    let mut reader = response.into_reader().take(MAX_DOWNLOAD_BYTES + 1);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|e| http(format!("reading the body after {total} bytes: {e}")))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_DOWNLOAD_BYTES {
            return Err(http(format!("the body exceeds {MAX_DOWNLOAD_BYTES} bytes")));
        }
        hasher.update(&buf[..n]);
        tmp.write_all(&buf[..n]).map_err(|source| DataError::Io {
            path: tmp.path().to_path_buf(),
            action: "cannot write the download",
            source,
        })?;
    }
    tmp.flush().map_err(|source| DataError::Io {
        path: tmp.path().to_path_buf(),
        action: "cannot write the download",
        source,
    })?;
    let found = hex::encode(hasher.finalize());
    if found != want {
        return Err(DataError::ChecksumMismatch {
            file: name.to_string(),
            url: url.to_string(),
            expected: want.to_string(),
            found,
        });
    }
    Ok((tmp, total))
}

/// Extracts `members` of the verified archive into a temporary folder in
/// `to`, then renames `root` into `to`. Returns the final path of `root`.
fn unpack_tar_gz(
    archive: &Path,
    archive_name: &str,
    root: &str,
    members: &[&str],
    to: &Path,
) -> Result<PathBuf> {
    let bad = |message: String| DataError::Archive {
        archive: archive_name.to_string(),
        message,
    };
    let staging = tempfile::Builder::new()
        .prefix(".dpaudit-unpack-")
        .tempdir_in(to)
        .map_err(|source| DataError::Io {
            path: to.to_path_buf(),
            action: "cannot create a temporary folder",
            source,
        })?;
    let file = File::open(archive).map_err(|source| DataError::Io {
        path: archive.to_path_buf(),
        action: "cannot reopen the download",
        source,
    })?;
    let mut tar = tar::Archive::new(GzDecoder::new(BufReader::new(file)));
    let mut found = vec![false; members.len()];
    let entries = tar
        .entries()
        .map_err(|e| bad(format!("not a tar.gz archive: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(format!("corrupt tar entry: {e}")))?;
        let path = entry
            .path()
            .map_err(|e| bad(format!("bad entry path: {e}")))?;
        let path = path.to_string_lossy();
        let path = path.strip_prefix("./").unwrap_or(&path).to_string();
        let Some(i) = members.iter().position(|&m| m == path) else {
            continue;
        };
        if !entry.header().entry_type().is_file() {
            return Err(bad(format!("{path} is not a regular file")));
        }
        // `path` equals one of our own member names, so it cannot escape `staging`.
        let dest = staging.path().join(&path);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|source| DataError::Io {
                path: parent.to_path_buf(),
                action: "cannot create a folder while unpacking",
                source,
            })?;
        }
        let mut out = File::create(&dest).map_err(|source| DataError::Io {
            path: dest.clone(),
            action: "cannot create a file while unpacking",
            source,
        })?;
        std::io::copy(&mut entry, &mut out)
            .map_err(|e| bad(format!("cannot extract {path}: {e}")))?;
        found[i] = true;
    }
    let missing: Vec<&str> = members
        .iter()
        .zip(&found)
        .filter(|(_, &f)| !f)
        .map(|(&m, _)| m)
        .collect();
    if !missing.is_empty() {
        return Err(bad(format!(
            "the verified archive lacks {}",
            missing.join(", ")
        )));
    }
    let dest = to.join(root);
    if dest.exists() {
        return Err(DataError::AlreadyExists {
            path: dest,
            reason: "it appeared during the fetch".to_string(),
        });
    }
    std::fs::rename(staging.path().join(root), &dest).map_err(|source| DataError::Io {
        path: dest.clone(),
        action: "cannot move the unpacked files into place",
        source,
    })?;
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_checksums_are_well_formed() {
        for kind in DatasetKind::ALL {
            let m = Manifest::official(kind);
            for f in &m.files {
                if let Some(s) = f.sha256 {
                    assert_eq!(s.len(), 64, "{}", f.name);
                    assert!(s
                        .bytes()
                        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
                }
            }
        }
    }

    #[test]
    fn purchase_requires_an_explicit_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let opts = FetchOptions {
            to: dir.path().join("p"),
            url_base: Some("http://127.0.0.1:9".into()),
            ..Default::default()
        };
        let err = fetch(DatasetKind::Purchase100, &opts).unwrap_err();
        assert!(matches!(err, DataError::MissingChecksum { .. }), "{err}");
        assert!(err.to_string().contains("--sha256 HEX"), "{err}");
        assert!(
            !dir.path().join("p").exists(),
            "nothing created before the checks pass"
        );
    }

    #[test]
    fn bad_overrides_are_refused() {
        // Refused before any connection; the loopback discard port is never reached.
        let mut opts = FetchOptions {
            to: PathBuf::from("/nonexistent"),
            url_base: Some("http://127.0.0.1:9".into()),
            ..Default::default()
        };
        opts.sha256.insert("nope.gz".into(), "00".repeat(32));
        let err = fetch(DatasetKind::Fmnist, &opts).unwrap_err();
        assert!(
            err.to_string().contains("expected a file of fmnist"),
            "{err}"
        );
        opts.sha256.clear();
        opts.sha256
            .insert("cifar-10-binary.tar.gz".into(), "xyz".into());
        let err = fetch(DatasetKind::Cifar10, &opts).unwrap_err();
        assert!(err.to_string().contains("64 hexadecimal digits"), "{err}");
        opts.sha256.clear();
        opts.url_base = Some("ftp://x".into());
        assert!(fetch(DatasetKind::Cifar10, &opts).is_err());
    }
}
