//! Shuffling audits of the Batched Gaussian Mechanism (BGM): the
//! Worst-Case threat model of Annamalai et al. 2024 (§4.1, Algorithm 4),
//! setting by setting, as library code. `docs/canary-games.md` states the
//! game, the likelihood ratios and the decisions taken where the paper is
//! silent.
//!
//! An experiment file lists settings (σ or a target Poisson ε, T, E, B,
//! sampler, audited dataset pair, runs, δ, confidence, seed). For each
//! setting the report gives, side by side:
//! - the Poisson ε that people report (PLD accountant, q = 1/T, T·E steps;
//!   Annamalai et al. 2024 §5, "calibrated as if Poisson subsampling were
//!   used");
//! - the Chua et al. 2024 lower bound for shuffle-then-batch
//!   (`dpaudit_accounting::shuffle_lower_bound`);
//! - the empirical ε lower bound from simulated runs (the (ε, δ) region of
//!   Annamalai et al. 2024 Eq. (1), tested by the rank test of
//!   `dpaudit_audit::rank_test`; Clopper–Pearson on both error rates, their
//!   Algorithm 5, for `same_data`), with its confidence and
//!   threshold-selection policy.
//!
//! Partial shuffling (Annamalai et al. 2024 §4.3, Algorithm 2) searches the
//! adversary's guess k on runs from seed streams disjoint from the
//! evaluation runs and bounds ε at the chosen k on the evaluation runs, so
//! the reported bound stays valid at its confidence (the paper maximises over
//! k on the same observations; the per-guess same-data numbers are reported,
//! labelled).
//!
//! Two ways to turn runs into a bound (`evaluation` of a setting):
//! - `"scores"` (the default): every evaluation score is held, the threshold
//!   chosen on one random half and bounded on the other (`split`). About
//!   160–190 bytes per run and hypothesis at the peak: for up to some 10⁷
//!   runs per hypothesis.
//! - `{ counts = { selection_runs = N } }`: bounded memory, for 10⁸–10⁹
//!   runs ([`crate::bgm::counts`]): a threshold chosen on `N` separate
//!   selection runs, the evaluation runs reduced to counts on a grid fixed
//!   in advance.
//!
//! Every setting is validated (sampler parameters and memory included)
//! before any simulation starts ([`prepare_all`]); a scores-mode experiment
//! that cannot fit in memory is refused with the estimate. The simulation
//! runs on any [`BgmEngine`](crate::bgm::engine::BgmEngine); the out-dir, shards and merges are
//! [`crate::bgm::runner`].

//!
//! Layout: [`setting`] (the experiment file, its settings and their
//! preparation: noise, accounting, memory), [`run`] (simulation, bounds, the
//! report of a setting and the summary).

pub mod run;
pub mod setting;

pub use run::*;
pub use setting::*;

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::error::Result;

    fn parse(text: &str) -> Result<BgmExperiment> {
        BgmExperiment::from_toml(Path::new("t.toml"), text)
    }

    const SETTING: &str = r#"
[[settings]]
name = "t"
steps = 10
epochs = 1
expected_batch_size = 10
noise_multiplier = 1.0
sampler = { partial_shuffle = { buffer_size = 15 } }
dataset = "shuffle_worst_case"
runs = 1000
delta = 1e-5
confidence = 0.95
seed = 0
"#;

    #[test]
    fn bad_buffer_size_is_refused_before_simulation_naming_the_field() {
        let e = parse(SETTING).unwrap();
        let err = prepare_all(Path::new("t.toml"), &e)
            .unwrap_err()
            .to_string();
        assert!(err.contains("buffer_size"), "{err}");
        assert!(
            err.contains("multiple of batch_size = 10")
                && err.contains("steps × expected_batch_size = 100 records"),
            "{err}"
        );
        assert!(err.contains("t.toml: settings[0]"), "{err}");
        // K > n = T·B = 100.
        let e = parse(&SETTING.replace("buffer_size = 15", "buffer_size = 110")).unwrap();
        let err = prepare(e.settings[0].clone()).unwrap_err().to_string();
        assert!(
            err.contains("buffer_size") && err.contains("= 100"),
            "{err}"
        );
    }

    #[test]
    fn noise_must_be_given_exactly_once() {
        let both = SETTING.replace(
            "noise_multiplier = 1.0",
            "noise_multiplier = 1.0\nepsilon = 1.0",
        );
        let err = prepare(parse(&both).unwrap().settings[0].clone())
            .unwrap_err()
            .to_string();
        assert!(err.contains("exactly one"), "{err}");
        let none = SETTING.replace("noise_multiplier = 1.0", "");
        let err = prepare(parse(&none).unwrap().settings[0].clone())
            .unwrap_err()
            .to_string();
        assert!(err.contains("exactly one"), "{err}");
    }

    #[test]
    fn missing_dp_fields_and_unknown_fields_are_refused() {
        let err = parse(&SETTING.replace("delta = 1e-5\n", ""))
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing field `delta`"), "{err}");
        let err = parse(&SETTING.replace("seed = 0", "seed = 0\nsede = 1"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `sede`"), "{err}");
        assert!(err.contains("t.toml"), "{err}");
    }

    #[test]
    fn calibrated_sigma_reaches_the_target_poisson_epsilon() {
        // σ for ε = 1.0 at q = 0.01, 100 steps, δ = 1e-5 is 0.902 (PLD,
        // reproduced by dp_accounting's PLD accountant; Annamalai et al.
        // 2024 §5 calibrates the same way).
        let text = SETTING
            .replace("noise_multiplier = 1.0", "epsilon = 1.0")
            .replace("steps = 10", "steps = 100")
            .replace("buffer_size = 15", "buffer_size = 100");
        let p = prepare(parse(&text).unwrap().settings[0].clone()).unwrap();
        assert!(
            (p.noise_multiplier - 0.902).abs() < 0.01,
            "σ = {}",
            p.noise_multiplier
        );
        assert_eq!(p.guesses, vec![1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    }
}
