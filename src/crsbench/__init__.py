"""CRS-Bench: which frozen image encoder should a medical imaging team use?"""

__version__ = "0.1.0"
