"""The probe stage: linear probes on frozen embeddings (`linear`), solved for every C at once by a batched
L-BFGS (`solver`)."""

from crsbench.core.faces import lazy_face

__getattr__, __dir__, __all__ = lazy_face(__name__, {
    "ProbeConfig": "linear", "FittedProbe": "linear", "fit_probe": "linear", "DEFAULT_C_GRID": "linear",
})
