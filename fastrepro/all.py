"""The names a fastai user calls, as `fastai.vision.all` gathers fastai's: `from fastrepro.all import *`.

Everything else (plumbing, constants, the pieces these are built from) stays importable from its module; each module's
docs page lists its own names. The optional extras are imported on their own: `fastrepro.mlflow` (`MLflowReproCallback`),
`fastrepro.registry` (`register_model`) and `fastrepro.distributed`."""
from .seed import set_seed, stream_seed, purpose_seeds
from .numerics import numerics_state
from .bits import same_bits
from .fingerprint import hash_state_dict, fingerprint_folder, fingerprint_dls
from .manifest import load_manifest, last_manifest
from .diff import diff_manifests
from .data import keyed_loader
from .record import record_artifact
from .dvc import MetricsFileCallback
from .elastic import process_bs
from .callback import ReproCallback
from .learner import repro_learner
from .verify import verify_reproducible
from .examples import digits_path, digits_dblock, digits_cnn, every_nth_image, tabular_frame, wine_learner, stock_drift
from .sweep import seed_sweep, load_sweep, compare_sweeps, variance_sources
from .checkpoint import ReproCheckpoint, load_checkpoint
from .resume import verify_resume  # also adds `Learner.resume`
from .trace import TraceCallback, load_trace
from .diverge import compare_traces, find_divergence
from .lock import lock_run
from .reproduce import reproduce
from .drill import drill, verify_log
from .cli import manifest_summary

__all__ = ['set_seed', 'stream_seed', 'purpose_seeds', 'numerics_state', 'same_bits', 'hash_state_dict',
           'fingerprint_folder', 'fingerprint_dls', 'load_manifest', 'diff_manifests', 'keyed_loader',
           'record_artifact', 'last_manifest', 'MetricsFileCallback', 'process_bs', 'ReproCallback', 'repro_learner',
           'verify_reproducible', 'digits_path', 'digits_dblock', 'digits_cnn', 'every_nth_image', 'tabular_frame',
           'wine_learner', 'stock_drift', 'seed_sweep', 'load_sweep', 'compare_sweeps', 'variance_sources',
           'ReproCheckpoint', 'load_checkpoint', 'verify_resume', 'TraceCallback', 'load_trace', 'compare_traces',
           'find_divergence', 'lock_run', 'reproduce', 'drill', 'verify_log', 'manifest_summary']
