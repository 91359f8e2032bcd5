"""`crsbench select`: from a team's own images and a shortlist of encoders to a recommendation.

Pure parts, each in its own module: `task` (task type and class counts from the labels), `budget`
(seeds, fractions and perturbations fitted to a time budget from measured costs), `advice` (the
recommendation in plain words from a scored result), `cohort_checks` (what the data must hold for the
protocol). The edges: `source` (DATA -> dataset options), `measure` (per-image costs), `cached` (the
embeddings the cache already holds), `compose` (the ordinary suite file). `workflow` strings them into
`prepare_selection` (cohort in, planned suite out); `api.select` runs, scores and advises, returning a
`Selection`; `crsbench.cli.commands.select` only parses the command line and renders that value.
"""
