#!/usr/bin/env bash
# The test suite: every notebook under nbdev-test and every test in tests/ under pytest, each with its timings.
#
#   bash tools/test.sh           the whole suite, as .ci/run runs it
#   bash tools/test.sh --fast    the inner loop: pytest -m "not slow", and only the notebooks changed since the last commit
#
# Run it from the project's virtual environment (see the README).
set -euo pipefail
cd "$(dirname "$0")/.."
# MLflow sends usage telemetry unless it sees a CI variable or pytest: off, so the notebooks behave the same under CI=true.
export MLFLOW_DISABLE_TELEMETRY=true
# One torch thread per process, for the notebooks as tests/conftest.py sets it for pytest: two processes with two OpenMP
# threads each on two cores wait on each other's spinning threads, and a 3 s fit takes 17 s.
export OMP_NUM_THREADS=1

case "${1:-}" in
  "") ;;
  --fast)
    changed=$({ git diff --name-only --diff-filter=d HEAD -- 'nbs/*.ipynb'; git ls-files -o --exclude-standard -- 'nbs/*.ipynb'; } | xargs -r -n1 basename)
    if [ -n "$changed" ]; then
      echo "== nbdev-test, the notebooks changed since the last commit: $(echo $changed)"
      nbdev-test --n-workers 2 --timing --file-re "^($(echo "$changed" | sed 's/[.]/[.]/g' | paste -sd'|'))$"
    else echo "== no notebook changed since the last commit"; fi
    echo "== pytest -m 'not slow'"
    exec pytest -q -rs -m "not slow and not cpu_matrix" -n 2 --durations=10 tests ;;
  *) echo "usage: bash tools/test.sh [--fast]" >&2; exit 2 ;;
esac

# Fresh runs fork from warm interpreters (fastrepro.warm; FASTREPRO_WARM=0 starts them cold), but processes the tests start
# themselves still import torch and fastai, one core each, and the tests wait on them one phase at a time; so the notebooks
# and pytest's two workers run side by side and keep both cores busy to the end.
# pytest hands out whole files (a file's fixtures train once), the longest first.
LONGEST_FIRST="tests/test_resume.py tests/test_sweep.py tests/test_distributed.py tests/test_mlflow.py tests/test_apps.py tests/test_manifest.py"
nb_log=$(mktemp)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -f "$nb_log"' EXIT
start=$SECONDS
# tools/nbtest.py is nbdev-test with the longest notebooks started first (in name order the longest ran on alone at the end),
# each in a fresh process of its own
( python tools/nbtest.py --n-workers 2 && rc=0 || rc=$?; echo "-- nbdev-test: $((SECONDS - start)) s"; exit $rc ) > "$nb_log" 2>&1 &
nb_pid=$!
echo "== pytest (and nbdev-test beside it; its output follows pytest's)"
set +e
pytest -q -rs --durations=25 -n 2 --dist loadfile -m "not cpu_matrix" $LONGEST_FIRST tests
py_rc=$?
echo "-- pytest: $((SECONDS - start)) s"
wait $nb_pid
nb_rc=$?
set -e
echo "== nbdev-test (exit $nb_rc)"
cat "$nb_log"
# CPU-seconds of pytest and all it started: the other figure to compare runs by, with the notebooks' own line above (their
# processes are the forkserver's children, so `times` does not count them). Both figures follow
# the machine's speed, which changes from hour to hour (the same work: 1898 and 3128 CPU-s in two runs of one morning),
# so compare runs made close together.
times > "$nb_log.times"
echo "-- CPU time of pytest and what it started (user, system): $(tail -1 "$nb_log.times")"
rm -f "$nb_log.times"
if [ $nb_rc -ne 0 ] || [ $py_rc -ne 0 ]; then echo "FAILED: nbdev-test exit $nb_rc, pytest exit $py_rc"; exit 1; fi
