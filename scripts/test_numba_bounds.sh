#!/usr/bin/env bash
# The lower bound of the supported numba range, tested (doc/numba.md).
#
# setup.py pins numba>=LOW,<HIGH.  The main job (scripts/test.sh) tests what pip
# picks in that range, the newest release; this script tests LOW: it builds a venv
# at $RBD_NUMBA_VENV (default: .venv-numba-min) with numba LOW and the llvmlite and
# numpy pinned below, installs rbd_ros into it with --no-deps (plus scipy, daqp,
# urdf-parser-py and pytest: nothing else), compiles the kernels into a numba cache inside that
# venv (never the sources' __pycache__, which holds the main venv's cache), and runs
# the core and numba tests that need no ROS, Pinocchio or MuJoCo.
# Everything it needs it installs itself; a second run reuses the venv.
# Extra arguments go to pytest.  Exit status: pytest's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${RBD_NUMBA_VENV:-$root/.venv-numba-min}
py=${PYTHON:-python3}

# The lower bound and what it is tested with.  NUMBA must be the lower bound in
# setup.py (checked below); llvmlite is the one numba 0.62.0 requires (0.45.x),
# numpy the newest 1.x (numpy 2 is tested by the main job), scipy setup.py's lower
# bound (numba's np.linalg calls its LAPACK), daqp the one setup.py requires (the QP
# solver of the contact friction cones, which rbd_precompile warms; no dependencies).
NUMBA=0.62.0
LLVMLITE=0.45.1
NUMPY=1.26.4
SCIPY=1.11.4
DAQP=0.11.0
TESTS=(
  test/test_numba_compat.py      # numba's private API as _numba_compat.py uses it
  test/test_core_byte_order.py   # numba's array typecode cache (the byte-order claim)
  test/test_core_compile.py      # no call compiles a second specialisation; warm-up lists
  test/test_core_registry.py     # every public function: fast path == checked path == twin
  test/test_core_reference.py    # kernels == numpy twins on random trees, every joint type
  test/test_core_errors.py
  test/test_core_bounds.py
  test/test_core_singular_inertia.py
  test/test_core_fast_path.py    # plain arrays only; kernels check lengths, never write the model
  test/test_core_identities.py
  test/test_core_closed_form.py
  test/test_core_spatial.py
  test/test_core_compensation.py
  test/test_core_observer.py
  test/test_runtime.py           # the node's numba kernels (ROS-free part)
  test/test_robot_urdf.py
)

low=$(sed -n 's/.*"numba>=\([0-9.]*\),<[0-9.]*".*/\1/p' "$root/setup.py")
if [ "$low" != "$NUMBA" ] && [ "$low.0" != "$NUMBA" ]; then
  echo "scripts/test_numba_bounds.sh tests numba $NUMBA but setup.py's lower bound is '$low':" \
       "update NUMBA (and LLVMLITE, NUMPY) here together with setup.py" >&2
  exit 2
fi

stamp="$venv/.rbd_numba_min_installed"
if [ ! -f "$stamp" ] || [ "$0" -nt "$stamp" ] || [ "$root/setup.py" -nt "$stamp" ]; then
  if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
  fi
  "$venv/bin/pip" install -q "numba==$NUMBA" "llvmlite==$LLVMLITE" "numpy==$NUMPY" \
    "scipy==$SCIPY" "daqp==$DAQP" "urdf-parser-py>=0.0.4" "pytest>=7"
  # under a lock on the source tree, as scripts/venv.sh: both write rbd_ros.egg-info
  flock "$root" "$venv/bin/pip" install -q --no-deps -e "$root"
  touch "$stamp"
fi

export NUMBA_CACHE_DIR="$venv/numba_cache"
export RBD_EXPECT_NUMBA="$NUMBA"     # test_numba_compat: the venv really has the lower bound
cd "$root"
echo "numba lower bound: $("$venv/bin/python" -c 'import numba, numpy, llvmlite; print("numba", numba.__version__, "llvmlite", llvmlite.__version__, "numpy", numpy.__version__)')"
"$venv/bin/python" -m rbd_ros.precompile --quiet
exec "$venv/bin/python" -m pytest -q "${TESTS[@]}" "$@"
