//! `dpaudit bench`.

/// The training loops' read-back period, the default of
/// `--read-back-every`: `dpaudit_train::engine::LOOP_READ_BACK_EVERY`, which
/// this crate cannot name (it links libtorch); a test of the companion
/// binary checks that the two are equal.
pub const LOOP_READ_BACK_EVERY: u64 = 16;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// `cpu` or `cuda`.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Timed steps per row and step kind.
    #[arg(long, default_value_t = 3)]
    pub iters: usize,
    /// Untimed steps before timing.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Only rows whose model is one of these (`wrn16_4`, `lenet5`, `mlp`).
    #[arg(long, value_delimiter = ',')]
    pub models: Vec<String>,
    /// Explicit rows instead of the standard ones: `model:batch[:replicas]`,
    /// comma-separated (e.g. `wrn16_4:64,lenet5:100:64`).
    #[arg(long, value_delimiter = ',')]
    pub rows: Vec<String>,
    /// Only the replica rows (`M > 1`), or none of them.
    #[arg(long)]
    pub replicas_only: bool,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The real training step (sampler, batch gathered on the device,
    /// canary, DP-SGD, per-step scores) against the engine's step alone on a
    /// pre-built batch of the same model.
    #[arg(long, conflicts_with = "overhead")]
    pub end_to_end: bool,
    /// The loop's cost per step with a model whose compute is negligible
    /// (MLP 8 → 1 → 2 on 8 features of the Purchase-100 stand-in, 2 records per replica), for M = 1, 64, 512, 4096.
    #[arg(long)]
    pub overhead: bool,
    /// The microbatch oracle of every model on `--device` (the cases of the
    /// model oracle tests): for GPU hosts, which have no cargo.
    #[arg(long, conflicts_with_all = ["end_to_end", "overhead"])]
    pub oracle: bool,
    /// Rounds of `--iters` steps, the two kinds interleaved (non-private and
    /// DP; loop and engine for `--end-to-end` and `--overhead`); each kind's
    /// best round counts.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Largest replica count of `--overhead` (smaller for quick runs).
    #[arg(long, default_value_t = 4096)]
    pub max_replicas: usize,
    /// The DP noise generator of `--end-to-end` and `--overhead`: `auto` (a
    /// replayable run's default: ChaCha20 on the host on the CPU, Philox on
    /// the device on a GPU), `host` or `device`.
    #[arg(long, default_value = "auto", value_parser = ["auto", "host", "device"])]
    pub noise: String,
    /// How often the loop of `--end-to-end` and `--overhead` reads its step
    /// reports back from the device (each read-back waits for the device);
    /// the training loops' default is 16. The engine-only step reads every step.
    #[arg(long, default_value_t = LOOP_READ_BACK_EVERY, value_parser = clap::value_parser!(u64).range(1..))]
    pub read_back_every: u64,
    /// The memory layout of every convolution: `auto` (channels last for
    /// replica-stacked convolutions with under 16 input channels per group on
    /// the CPU, contiguous otherwise),
    /// `contiguous` or `channels-last`.
    #[arg(long, default_value = "auto", value_parser = ["auto", "contiguous", "channels-last"])]
    pub conv_layout: String,
    /// With `--end-to-end` or `--overhead`: after each row, the libtorch
    /// operators of a loop step and an engine step by name (`iters` more
    /// steps of each, counted apart from the timings), to see what a step
    /// dispatches: on a GPU each is at least one kernel launch.
    #[arg(long)]
    pub op_names: bool,
}
