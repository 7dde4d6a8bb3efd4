"The public API of fastrepro, as `fastai.vision.all` gathers fastai's: `from fastrepro.all import *`."
from .seed import *
from .data import *
from .callback import *
from .learner import *
from .verify import *
from .examples import *
from .fingerprint import *
from .manifest import *
from .sweep import *
from .resume import *
from .diverge import *
from .elastic import *
from . import seed, data, callback, learner, verify, examples, fingerprint, manifest, sweep, resume, diverge, elastic

__all__ = [n for m in (seed, data, callback, learner, verify, examples, fingerprint, manifest, sweep, resume, diverge, elastic) for n in m.__all__]
