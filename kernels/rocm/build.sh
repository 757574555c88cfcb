#!/bin/sh
# Builds the ROCm kernels into kernels/rocm/build/libgorstar_kernels_rocm.a for `go build -tags rocm`.
# Needs hipcc (Debian: apt-get install hipcc). Targets: gfx90a always, gfx942 when this hipcc knows
# it; override with GORSTAR_ROCM_ARCHS="gfx90a gfx1100".
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="$here/build"
mkdir -p "$out"
command -v hipcc >/dev/null || { echo "build.sh: hipcc not found (apt-get install hipcc)" >&2; exit 1; }

# hipcc leaves an empty directory per source file (adamw-1a2b3c, ...) in TMPDIR: give it one of its
# own and remove it at the end.
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/gorstar-hipcc-XXXXXX")
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT

archs=${GORSTAR_ROCM_ARCHS:-}
if [ -z "$archs" ]; then
    archs=gfx90a
    probe="$out/probe.hip"
    echo '__global__ void probe() {}' > "$probe"
    if hipcc --offload-arch=gfx942 -c "$probe" -o "$out/probe.o" 2>/dev/null; then archs="$archs gfx942"; fi
    rm -f "$probe" "$out/probe.o"
fi
flags="-O3 -fPIC -std=c++17 -Wall"
for a in $archs; do flags="$flags --offload-arch=$a"; done
echo "build.sh: hipcc for $archs" >&2

# One hipcc per source file, in parallel.
rm -f "$out"/*.o
pids=""
for src in "$here"/*.hip; do
    obj="$out/$(basename "$src" .hip).o"
    hipcc $flags -c "$src" -o "$obj" &
    pids="$pids $!"
done
fail=0
for pid in $pids; do wait "$pid" || fail=1; done
[ "$fail" = 0 ] || { echo "build.sh: a hipcc compile failed" >&2; exit 1; }
rm -f "$out/libgorstar_kernels_rocm.a"
ar rcs "$out/libgorstar_kernels_rocm.a" "$out"/*.o
echo "$out/libgorstar_kernels_rocm.a"
