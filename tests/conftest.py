"""Settings for every test here, however pytest is launched: one torch thread per process.

Tests run processes side by side, and on two cores two processes of two threads each train about 6x slower than with one
(their OpenMP threads wait for each other). Results depend bitwise on the thread count; every comparison is between runs
that inherit this setting, and `test_contract::test_two_torch_threads_are_reproducible_too` checks two threads."""
import os
os.environ['OMP_NUM_THREADS'] = '1'  # every process a test starts
import torch
torch.set_num_threads(1)  # and this one, whatever imported torch before

def pytest_sessionfinish(session, exitstatus):
    """End this process's warm interpreters (`fastrepro.warm`) and wait for them, as an interpreter's exit does: an xdist
    worker may leave without running `atexit`, and `tools/test.sh` counts only the CPU-seconds of processes waited for."""
    import sys
    if (warm := sys.modules.get('fastrepro.warm')) is not None: warm.shutdown_warm()
