//! The one error type of the training crate.

/// Everything that can go wrong in `dpaudit-train`. Messages say what was
/// wrong, where (field, layer, step) and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// A configuration value is out of its valid range.
    #[error("invalid value for `{field}`: {value} ({expected})")]
    InvalidConfig {
        /// The field name, as in the TOML config.
        field: String,
        /// The offending value, printed.
        value: String,
        /// What was expected instead.
        expected: String,
    },
    /// A tensor handed to the engine has the wrong shape.
    #[error("shape mismatch in {what}: got {got:?}, expected {expected}")]
    Shape {
        /// Which tensor.
        what: String,
        /// Its actual shape.
        got: Vec<i64>,
        /// The shape that was expected, in words.
        expected: String,
    },
    /// The model asked for a layer the DP engine refuses.
    #[error("`{layer}` is not supported: {reason}")]
    Unsupported {
        /// The layer or option.
        layer: String,
        /// Why it is refused.
        reason: String,
    },
    /// A per-sample gradient override does not fit the batch or the model.
    #[error("override for slot {slot} of replica {replica}: {reason}")]
    Override {
        /// Slot index in the batch.
        slot: usize,
        /// Replica index.
        replica: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The loss became NaN or infinite.
    #[error("the training loss is not finite at step {step} (loss sum {loss}); stopping the run")]
    NonFiniteLoss {
        /// Zero-based step index.
        step: u64,
        /// The loss sum observed.
        loss: f64,
    },
    /// A per-sample norm, clip coefficient or clipped sum is NaN or infinite.
    #[error("step {step}, layer `{layer}`: the {what} is not finite (NaN or infinite); stopping the run before the update")]
    NonFinite {
        /// Zero-based step index.
        step: u64,
        /// The layer, as named by `Model::layers` (or `overrides`).
        layer: String,
        /// Which quantity.
        what: String,
    },
    /// The layers that recorded themselves in a forward pass are not the
    /// layers the model lists.
    #[error("the model's forward pass does not match Model::layers: {reason}")]
    LayerRecords {
        /// What does not match.
        reason: String,
    },
    /// The configuration, its DP fields or a memory estimate refused
    /// (`dpaudit_plan`, where they are checked without libtorch), with
    /// their own messages.
    #[error(transparent)]
    Plan(#[from] dpaudit_plan::PlanError),
    /// libtorch reported an error.
    #[error("libtorch error in {context}: {source}")]
    Torch {
        /// What the engine was doing.
        context: String,
        /// The libtorch error.
        #[source]
        source: tch::TchError,
    },
    /// Reading or writing a checkpoint failed.
    #[error("checkpoint `{path}`: {reason}")]
    Checkpoint {
        /// The file.
        path: String,
        /// What failed.
        reason: String,
    },
    /// The step's DP noise could not be drawn as defined; no update is made
    /// with it.
    #[error("DP noise of step {step}: {reason}")]
    Noise {
        /// The step.
        step: u64,
        /// What failed.
        reason: String,
    },
}

impl TrainError {
    /// Wrap a libtorch error with what the engine was doing.
    pub fn torch(context: impl Into<String>) -> impl FnOnce(tch::TchError) -> Self {
        let context = context.into();
        move |source| TrainError::Torch { context, source }
    }

    /// The same error with `layer` (as named by `Model::layers`) prefixed to
    /// the context of a libtorch error; other errors are returned unchanged.
    pub fn in_layer(self, layer: &str) -> Self {
        match self {
            TrainError::Torch { context, source } => TrainError::Torch {
                context: format!("layer `{layer}`, {context}"),
                source,
            },
            other => other,
        }
    }
}

/// Run `f`, a sequence of libtorch calls chained with `?`, and wrap its error
/// as [`TrainError::Torch`] with `context` (what the engine was doing).
pub fn torch<T>(context: &str, f: impl FnOnce() -> Result<T, tch::TchError>) -> Result<T> {
    f().map_err(|source| TrainError::Torch {
        context: context.to_string(),
        source,
    })
}

/// A [`TrainError::InvalidConfig`] for `field`, its `value` and what was expected.
pub fn invalid(
    field: &str,
    value: impl std::fmt::Display,
    expected: impl Into<String>,
) -> TrainError {
    TrainError::InvalidConfig {
        field: field.into(),
        value: value.to_string(),
        expected: expected.into(),
    }
}

/// Result alias of this crate.
pub type Result<T, E = TrainError> = std::result::Result<T, E>;
