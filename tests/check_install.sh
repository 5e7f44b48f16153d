#!/bin/sh
# A non-editable `pip install .` into a fresh venv, then specc used from an empty
# folder: shipped specs by name, devices, and a copied spec that still finds the
# block library, its claims and the hardware files (all package data).
#
#   sh tests/check_install.sh            (PYTHON=python3.12 to pick the interpreter;
#                                         VENV_ARGS=--system-site-packages to reuse installed deps)
# tests/test_install.py runs it when SPECC_INSTALL_TEST=1.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/specc-install.XXXXXX")
trap 'rm -rf "$work"' EXIT

# install from a clean copy of the tree (tracked and new files), so the build
# writes nothing into the checkout and nothing outside the package is seen
mkdir "$work/src"
(cd "$repo" && git ls-files -co --exclude-standard -z | xargs -0 tar cf -) | (cd "$work/src" && tar xf -)
"${PYTHON:-python3}" -m venv ${VENV_ARGS:-} "$work/venv"
"$work/venv/bin/python" -m pip install -q "$work/src"
rm -rf "$work/src"                     # the installed package must not need the sources

mkdir "$work/empty"
cd "$work/empty"
export PATH="$work/venv/bin:$PATH"
unset SPECC_PATH || true
echo "installed: $(python -c 'import specc, os; print(os.path.dirname(specc.__file__))')"
specc eval qwen3_8b 'params()' 'device_memory(device=rtx_4090)'
cp "$repo/specs/qwen3_8b.yaml" my_qwen.yaml
specc eval my_qwen.yaml 'params()' 'device_memory(device=rtx_4090)' \
    'weight_bytes() / weight_bytes(spec=qwen3_32b)'
python -c 'import specc; r = specc.load("my_qwen.yaml").eval("params()"); print("api:", type(r.value).__name__, r)'
specc verify my_qwen.yaml > verify.txt       # exit 1 on any FAIL/XPASS/ERROR stops the script
grep -E '^[0-9]+ pass' verify.txt | tail -n 1     # the totals line
# a first verify of a shipped spec (an empty cache) reads its shipped compiled form: no sympy
shipped=$(python -c 'import specc, os; print(os.path.join(os.path.dirname(specc.__file__), "specs", "qwen3_8b.yaml"))')
SPECC_CACHE_DIR="$work/fresh-cache" python -X importtime -m specc verify "$shipped" > first.txt 2> imports.txt
if grep -q ' sympy$' imports.txt; then echo "first verify: compiled"; else echo "first verify: shipped forms"; fi
