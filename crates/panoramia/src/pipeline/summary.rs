//! `summary.md`: the report in words and one table row per target.

use super::artifacts::AuditReport;

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "∞ (no DP)".to_string(), |e| format!("{e:.3}"))
}

/// `summary.md`.
pub fn summary(r: &AuditReport) -> String {
    let mut s = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(s, "# PANORAMIA audit\n");
    let _ = writeln!(s, "**ε̃ meaning.** {}.\n", r.epsilon_tilde_meaning);
    let _ = writeln!(
        s,
        "- data: {} ({}), D_f = {} training records of the target",
        r.data_source,
        if r.synthetic_data {
            "SYNTHETIC stand-in"
        } else {
            "real"
        },
        r.target_training_records
    );
    let _ = writeln!(
        s,
        "- split: D_G = {}, helper's generated set = {}, classifier train = {} + {} generated, validation = {} + {} generated, audit m = {} ({} members by the coins)",
        r.split.generator,
        r.split.helper,
        r.split.classifier_train,
        r.split.classifier_train,
        r.split.classifier_validation,
        r.split.classifier_validation,
        r.split.audit,
        r.audit_members
    );
    let _ = writeln!(s, "- generator: {}", r.generator);
    let _ = writeln!(
        s,
        "- generator quality: a classifier tells real D_G from generated records with held-out accuracy {:.3} (0.5 = indistinguishable; {} + {} held out)",
        r.quality.accuracy, r.quality.test_per_class, r.quality.test_per_class
    );
    if let Some(f) = &r.filter {
        let _ = writeln!(
            s,
            "- filter (Kazmi et al. 2024, App. B.1): a real-vs-generated classifier (validation accuracy {:.3}, {} + {} records) kept {} of {} generated candidates ({:.1} %) with P(generated) < {}",
            f.fit.best_validation_accuracy,
            f.validation_per_class,
            f.validation_per_class,
            f.kept,
            f.drawn,
            100.0 * f.keep_rate(),
            f.threshold
        );
    }
    let _ = writeln!(s, "- labels of generated records: {}", r.generated_labels);
    if let Some(a) = r.generator_label_agreement {
        let _ = writeln!(
            s,
            "- the labeler gives {:.1} % of generated records the class the generator drew them for",
            100.0 * a
        );
    }
    if let Some(a) = r.labeler_accuracy {
        let _ = writeln!(
            s,
            "- labeler (labels generated images): test accuracy {a:.3}"
        );
    }
    let _ = writeln!(
        s,
        "- confidence {} (each test at {:.3}), threshold selection `{}`{}",
        r.confidence,
        (1.0 - r.confidence) / 2.0,
        r.selection,
        if r.selection_valid {
            ""
        } else {
            " (the paper's practice: the best threshold on the audit set itself; NOT valid at the stated confidence)"
        }
    );
    let _ = writeln!(s, "- reference ordering (O(1) column): {}", r.reference);
    let _ = writeln!(s, "- side information: {}", r.mia_losses);
    if r.classifier_seeds > 1 {
        let _ = writeln!(
            s,
            "- baseline: {} seeds; seed 0 validation accuracy {:.3} (epoch {}); c_lb = {:.4} ± {:.4} (mean ± sd over seeds)",
            r.classifier_seeds,
            r.baseline_fit.best_validation_accuracy,
            r.baseline_fit.best_epoch,
            r.c_lb,
            r.c_lb_sd
        );
        let _ = writeln!(
            s,
            "- seeds: the baseline and every MIA are trained (stacked: the network trained, the regressions fitted) {} times \
             (seed k of each shares initialisation and minibatch order); each seed's c_lb and {{c+ε}}_lb are one-sided bounds at level {:.3} each; ε̃ below is the mean over seeds \
             of each seed's ε̃ ± its standard deviation, a summary of the measurement's spread over classifier training (the \
             audit set is the same for every seed, so its own sampling is not in the spread), and in brackets the half-width of \
             the 95 % confidence interval of that mean (Student's t), as the paper reports its repetitions (App. C.1). \
             \"paper\": the paper's estimator, each classifier's seed with the best validation accuracy (Kazmi et al. 2024, App. C.1)",
            r.classifier_seeds,
            (1.0 - r.confidence) / 2.0
        );
    } else {
        let _ = writeln!(
            s,
            "- baseline: validation accuracy {:.3} (epoch {}), c_lb = {:.4}",
            r.baseline_fit.best_validation_accuracy, r.baseline_fit.best_epoch, r.c_lb
        );
    }
    if let Some(ceil) = r.c_lb_ceiling {
        let _ = writeln!(
            s,
            "- ceiling: with {} audit members no bound can exceed {ceil:.4} at this level",
            r.audit_members
        );
        if ceil > 0.0 && r.c_lb >= 0.99 * ceil {
            let _ = writeln!(
                s,
                "- **c_lb is at the ceiling**: the baseline tells (almost) every member from generated data, so no target \
                 can show {{c+ε}}_lb above it and ε̃ is 0 whatever the target leaks (Kazmi et al. 2024, §C.3: the synthetic \
                 data is not good enough). A better generator (quality accuracy nearer 0.5) or a larger audit set is needed."
            );
        }
    }
    let _ = writeln!(s, "- randomness: {}\n", r.mode_meaning);
    table(&mut s, r);
    s
}

/// One row per target, then where the plots are.
fn table(s: &mut String, r: &AuditReport) {
    use std::fmt::Write as _;
    let many = r.classifier_seeds > 1;
    let pm = |v: f64, sd: f64| {
        if many {
            format!("{v:.4} ± {sd:.4}")
        } else {
            format!("{v:.4}")
        }
    };
    let _ = writeln!(
        s,
        "| target | accountant ε (δ) | σ | train acc | test acc | c_lb | {{c+ε}}_lb | ε̃ (not a bound) | excess at fixed thresholds (not a bound) |{} O(1) ε lower bound, RM;RN (δ = 0) |",
        if many { " ε̃ paper (best-validation seeds) |" } else { "" }
    );
    let _ = writeln!(
        s,
        "|---|---|---|---|---|---|---|---|---|{}---|",
        if many { "---|" } else { "" }
    );
    for t in &r.targets {
        let paper = match (&t.paper_choice, many) {
            (Some(p), true) => format!(
                " {:.4} (b seed {}, MIA seed {}) |",
                p.epsilon_tilde, p.baseline_seed, p.mia_seed
            ),
            (None, true) => " — |".to_string(),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "| {} | {} ({:.0e}) | {:.3} | {:.4} | {:.4} | {} | {} | {} | {} |{paper} {:.4} (m = {}) |",
            t.name,
            opt(t.accountant_epsilon),
            t.delta,
            t.noise_multiplier,
            t.train_accuracy,
            t.test_accuracy,
            pm(t.c_lb, t.c_lb_sd),
            pm(t.c_plus_epsilon_lb, t.c_plus_epsilon_lb_sd),
            match t.epsilon_tilde_ci95 {
                Some(h) if many => format!("{} [± {h:.4}]", pm(t.epsilon_tilde, t.epsilon_tilde_sd)),
                _ => pm(t.epsilon_tilde, t.epsilon_tilde_sd),
            },
            pm(t.band_excess, t.band_excess_sd),
            t.o1_epsilon,
            t.o1_pairs
        );
    }
    if let Some(o) = &r.ordering {
        let _ = writeln!(
            s,
            "\nOrdering: Spearman's ρ between ε̃ and the O(1) ε over the {} targets = {:.3}; the most leaky target by O(1) \
             ({}) and the least ({}) differ in ε̃ by {:.1} times the larger of their standard deviations over seeds{} \
             (where O(1) ties, the smallest over the tied targets). \
             The excess at fixed thresholds (the mean over r = {} of the top r's bound c_r(MIA) − c_r(b), each at level {:.3}; \
             docs/panoramia.md): ρ = {:.3}, separation {:.1} standard deviations.",
            r.targets.len(),
            o.spearman_rho,
            tied_names(&o.most_leaky),
            tied_names(&o.least_leaky),
            o.separation_in_sd,
            o.separation_in_ci95.map_or_else(String::new, |c| format!(
                " and by {c:.1} times the larger half-width of their 95 % confidence intervals of the mean"
            )),
            super::band::BAND
                .iter()
                .map(|f| format!("{}", (f * r.split.audit as f64 / 2.0).round()))
                .collect::<Vec<_>>()
                .join(", "),
            (1.0 - r.confidence) / 2.0,
            o.band_spearman_rho,
            o.band_separation_in_sd
        );
    }
    let _ = writeln!(
        s,
        "\nPlots: `plots/pr-<target>.svg` (precision–recall of b and the MIA, with the points giving c_lb and {{c+ε}}_lb), `plots/samples.png` (generated), `plots/real.png` (D_G)."
    );
}

/// `` `a` `` or `` tied: `a`, `b` `` (a tie of the reference).
fn tied_names(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.len() {
        1 => quoted[0].clone(),
        _ => format!("tied: {}", quoted.join(", ")),
    }
}
