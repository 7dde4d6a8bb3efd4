"""Reproducible fastai training by construction

Modules:

- `fastrepro.all`: The names a fastai user calls, as `fastai.vision.all` gathers fastai's: `from fastrepro.all import *`."""

__version__ = "0.0.1"
