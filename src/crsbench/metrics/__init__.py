"""Classification metrics on predicted probabilities: per-case (`classification` for discrimination and proper
scores, `calibration` for calibration errors, both on inputs checked by `validation`) and with case weights
(`weighted`, what the bootstrap resamples). Each is checked against scikit-learn in the tests."""

from crsbench.core.faces import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__, {
    **{name: "classification" for name in (
        "auroc_per_class", "auroc_macro", "balanced_accuracy", "quadratic_kappa", "brier", "nll", "evaluate")},
    **{name: "calibration" for name in ("ece", "ece_adaptive", "ece_classwise", "calibration_error_debiased")},
})
