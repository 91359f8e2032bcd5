"""Adapters for the published benchmark's datasets, read from their official release layouts.

Each adapter class declares its `info` (title, layout, access, environment variable, classes) and its
`Options`; `crsbench datasets` lists them from those declarations.
"""

PUBLISHED_KINDS = ("isic2019", "aptos2019", "chexpert", "mimic_cxr")
