//! `dpaudit data info|fetch`: inspect the datasets, or download them.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context};
use dpaudit_data::fetch::{self, FetchOptions, FileStatus, Manifest};
use dpaudit_data::{load, DatasetKind, Source, SourceFile};
use serde::Serialize;

/// The datasets, as named on the command line.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum DatasetArg {
    /// Fashion-MNIST (default directory: /usr/share/datasets/fashion-mnist, Debian package dataset-fashion-mnist).
    Fmnist,
    /// CIFAR-10, binary version.
    Cifar10,
    /// Purchase-100 (Shokri et al. 2017), text version.
    Purchase100,
}

impl From<DatasetArg> for DatasetKind {
    fn from(d: DatasetArg) -> Self {
        match d {
            DatasetArg::Fmnist => DatasetKind::Fmnist,
            DatasetArg::Cifar10 => DatasetKind::Cifar10,
            DatasetArg::Purchase100 => DatasetKind::Purchase100,
        }
    }
}

#[derive(Debug, clap::Subcommand)]
pub enum DataCommand {
    /// Counts, class histogram, source path and checksum of a dataset.
    ///
    /// Reads the real files from --data-dir, or else from the dataset's default
    /// directory; when there are none, reports on the synthetic stand-in and says so.
    Info(InfoArgs),
    /// Download a dataset from its official URL, verify its SHA-256 and unpack it.
    ///
    /// Nothing is written unless every file has its expected SHA-256.
    Fetch(FetchArgs),
}

#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// The dataset.
    #[arg(value_enum)]
    pub dataset: DatasetArg,
    /// Directory with the real files (required to be complete when given).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Seed of the synthetic stand-in, used only when no real files are found.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print a JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct FetchArgs {
    /// The dataset.
    #[arg(value_enum)]
    pub dataset: DatasetArg,
    /// Destination directory (created if missing); pass it later as --data-dir.
    #[arg(long)]
    pub to: PathBuf,
    /// Download from this URL base instead of the official one (a mirror).
    #[arg(long)]
    pub url_base: Option<String>,
    /// Expected SHA-256, replacing the pinned one: HEX for a one-file dataset,
    /// or FILE=HEX (repeatable). Required for purchase100, which has no published checksum.
    #[arg(long)]
    pub sha256: Vec<String>,
    /// Seconds without progress before a download is abandoned.
    #[arg(long, default_value_t = 60)]
    pub timeout_s: u64,
    /// Print a JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cmd: DataCommand) -> anyhow::Result<()> {
    match cmd {
        DataCommand::Info(a) => info(a),
        DataCommand::Fetch(a) => fetch_cmd(a),
    }
}

/// The JSON of `dpaudit data info`.
#[derive(Debug, Serialize)]
struct Info {
    dataset: DatasetKind,
    /// The directory of the real files, or "synthetic".
    source: String,
    synthetic: bool,
    /// Seed of the synthetic stand-in; null for real data.
    seed: Option<u64>,
    files: Vec<SourceFile>,
    shape: Vec<usize>,
    num_classes: usize,
    class_names: Vec<String>,
    train_count: usize,
    test_count: usize,
    train_histogram: Vec<usize>,
    test_histogram: Vec<usize>,
}

fn info(args: InfoArgs) -> anyhow::Result<()> {
    let kind = DatasetKind::from(args.dataset);
    let splits =
        load(kind, args.data_dir.as_deref(), args.seed).with_context(|| match &args.data_dir {
            Some(d) => format!("loading {kind} from {}", d.display()),
            None => format!("loading {kind}"),
        })?;
    let (files, seed) = match splits.source() {
        Source::Real { files, .. } => (files.clone(), None),
        Source::Synthetic { seed } => (Vec::new(), Some(*seed)),
    };
    let info = Info {
        dataset: kind,
        source: splits.source().label(),
        synthetic: splits.source().is_synthetic(),
        seed,
        files,
        shape: splits.train.shape().to_vec(),
        num_classes: splits.train.num_classes(),
        class_names: splits.train.class_names().to_vec(),
        train_count: splits.train.len(),
        test_count: splits.test.len(),
        train_histogram: splits.train.class_histogram(),
        test_histogram: splits.test.class_histogram(),
    };
    if args.json {
        return emit(&format!("{}\n", serde_json::to_string_pretty(&info)?));
    }
    let mut out = String::new();
    writeln!(out, "dataset      : {kind}")?;
    writeln!(out, "source       : {}", splits.source())?;
    if info.synthetic {
        let looked = match kind.default_dir() {
            Some(d) => format!("no files in {}", d.display()),
            None => "no --data-dir given".to_string(),
        };
        writeln!(
            out,
            "WARNING      : SYNTHETIC data ({looked}); these are not the real records"
        )?;
    }
    writeln!(out, "record shape : {:?}", info.shape)?;
    writeln!(out, "classes      : {}", info.num_classes)?;
    writeln!(out, "train        : {} records", info.train_count)?;
    writeln!(out, "test         : {} records", info.test_count)?;
    if kind == DatasetKind::Purchase100 && !info.synthetic {
        writeln!(
            out,
            "               (no official test split: split these records with a seed)"
        )?;
    }
    writeln!(out, "class histogram (label, name, train, test):")?;
    let width = info.class_names.iter().map(String::len).max().unwrap_or(0);
    for (c, name) in info.class_names.iter().enumerate() {
        writeln!(
            out,
            "  {c:>3}  {name:<width$}  {:>6}  {:>6}",
            info.train_histogram[c], info.test_histogram[c]
        )?;
    }
    if !info.files.is_empty() {
        writeln!(out, "files (SHA-256, bytes, path):")?;
        for f in &info.files {
            writeln!(out, "  {}  {:>10}  {}", f.sha256, f.bytes, f.path.display())?;
        }
    }
    emit(&out)
}

fn fetch_cmd(args: FetchArgs) -> anyhow::Result<()> {
    let kind = DatasetKind::from(args.dataset);
    let manifest = Manifest::official(kind);
    let mut sha256 = HashMap::new();
    for spec in &args.sha256 {
        let (name, hex) = match spec.split_once('=') {
            Some((name, hex)) => (name.to_string(), hex.to_string()),
            None if manifest.files.len() == 1 => (manifest.files[0].name.to_string(), spec.clone()),
            None => bail!(
                "--sha256 {spec}: {kind} has {} files; write FILE=HEX with FILE one of {}",
                manifest.files.len(),
                manifest
                    .files
                    .iter()
                    .map(|f| f.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        if sha256.insert(name.clone(), hex).is_some() {
            bail!("--sha256 given twice for {name}");
        }
    }
    let options = FetchOptions {
        to: args.to.clone(),
        url_base: args.url_base.clone(),
        sha256,
        timeout_s: Some(args.timeout_s),
    };
    let report = fetch::fetch(kind, &options)
        .with_context(|| format!("fetching {kind} into {}", args.to.display()))?;
    if args.json {
        return emit(&format!("{}\n", serde_json::to_string_pretty(&report)?));
    }
    let mut out = String::new();
    for f in &report.files {
        let what = match f.status {
            FileStatus::Downloaded => "downloaded",
            FileStatus::AlreadyPresent => "already present",
        };
        writeln!(
            out,
            "{what:<16} {}  {:>10} bytes  sha256 {}  ({})",
            f.name, f.bytes, f.sha256, f.url
        )?;
    }
    if let Some(p) = &report.unpacked {
        writeln!(out, "unpacked into    {}", p.display())?;
    }
    writeln!(
        out,
        "use it with: dpaudit data info {kind} --data-dir {}",
        report.dir.display()
    )?;
    emit(&out)
}

/// Writes `text` to stdout; a closed pipe (`dpaudit data info ... | head`) is not an error.
fn emit(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}
