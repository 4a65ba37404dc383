#!/usr/bin/env bash
# Prepares the one call that a session lent a GPU machine makes first (issue 41): builds
# the wgpu binary here, puts it stripped and compressed in .gpu/ (ignored by git, sent with
# `carry`) beside the Vulkan loader's Debian package (the GPU machine may have NVIDIA's
# Vulkan driver but no loader), checks that everything that travels fits the device tool's
# 64 MiB, and prints the exact call to make.
#
#   scripts/gpu-bundle.sh                    # build, bundle, check, print the call
#   scripts/gpu-bundle.sh --fusion           # the same, with the fused build as well
#   scripts/gpu-bundle.sh --no-build         # bundle the binary already built (below)
#   scripts/gpu-bundle.sh --no-build --fusion
#
# The plain `--features wgpu` build (target/release/bredon) always goes in. With
# --fusion, the same with burn's kernel fusion (`--features wgpu-fusion`, kept as
# target/release/bredon-fusion) goes in too, and gpu-check.sh measures its training step
# beside the plain one. It is off by default: it adds ~14 MB that the tree can no longer
# spare (docs/gpu.md), and fusion (with autotune and the vulkan compiler) gave no speed on
# an H100 when last tried. Cargo keeps both builds' dependencies, so after the first time
# each rebuild is incremental. Cold on 2 cores one build takes about half an hour, both
# about an hour: start it early.
#
# The GPU machine reaches no registry: nothing is built or installed there but what this
# bundle carries. scripts/gpu-check.sh unpacks it (the loader only where the machine has
# none) and prints every figure of the issue.
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=$((64 * 1024 * 1024))
BUNDLE=.gpu

BUILD=1
FUSION=0
for arg in "$@"; do
  case "$arg" in
    --no-build) BUILD=0 ;;
    --fusion) FUSION=1 ;;
    *)
      echo "error: unknown argument '$arg' (expected --no-build and/or --fusion)" >&2
      exit 2
      ;;
  esac
done

BIN=target/release/bredon
FUSED=target/release/bredon-fusion
if [ "$BUILD" = 1 ]; then
  if [ "$FUSION" = 1 ]; then
    cargo build --release -p bredon-cli --features wgpu-fusion
    cp "$BIN" "$FUSED.tmp" && mv "$FUSED.tmp" "$FUSED"
  fi
  cargo build --release -p bredon-cli --features wgpu
fi
if "$BIN" devices 2>&1 | grep -q "^(wgpu: not in this build"; then
  echo "error: $BIN was not built with --features wgpu" >&2
  exit 1
fi

# pack BINARY NAME: $BUNDLE/NAME.xz, stripped, with its sha256.
pack() {
  rm -f "$BUNDLE/$2" "$BUNDLE/$2.xz" "$BUNDLE/$2.xz.sha256"
  strip -o "$BUNDLE/$2" "$1"
  xz -T0 -6 "$BUNDLE/$2"
  (cd "$BUNDLE" && sha256sum "$2.xz" >"$2.xz.sha256")
}
mkdir -p "$BUNDLE"
pack "$BIN" bredon
rm -f "$BUNDLE"/bredon-fusion.xz*
if [ "$FUSION" = 0 ]; then
  echo "note: the fused build stays out (give --fusion to measure it too)"
elif [ -x "$FUSED" ]; then
  pack "$FUSED" bredon-fusion
else
  echo "error: --fusion, but no $FUSED (build it: scripts/gpu-bundle.sh --fusion)" >&2
  exit 1
fi

# The Vulkan loader (libvulkan.so.1) and GLVND's dispatch libraries, as the device tool's
# notes say: Debian's amd64 packages, unpacked there only when `ldconfig -p` lacks them.
# NVIDIA's Vulkan driver is in libGLX_nvidia, which needs GLVND: with the loader alone
# (the H200, 2026-12-04) it "could not get vkCreateInstance" and wgpu found no adapter.
LOADERS=(libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
missing=()
for pkg in "${LOADERS[@]}"; do
  ls "$BUNDLE/${pkg}"_*.deb >/dev/null 2>&1 || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  lists=$(mktemp -d)
  o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
  mkdir -p "$lists/partial"
  apt-get "${o[@]}" update -qq
  (cd "$BUNDLE" && apt-get "${o[@]}" download "${missing[@]}")
  rm -rf "$lists"
fi

# What travels: tracked files that exist, untracked files git does not ignore, the bundle.
tree_bytes=$( (git ls-files -z; git ls-files -z --others --exclude-standard) |
  xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
bundle_bytes=$(du -sb "$BUNDLE" | cut -f1)
total=$((tree_bytes + bundle_bytes))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo "travels: working tree $(mib "$tree_bytes") + $BUNDLE $(mib "$bundle_bytes") = $(mib "$total") of the device tool's 64 MiB"
ls -l "$BUNDLE"
if [ "$total" -gt "$LIMIT" ]; then
  echo "error: over the device tool's limit; retire superseded files from the tree (experiments/seeds/README.md says how)" >&2
  exit 1
fi

cat <<'EOF'

The device call (one run, about 8 minutes; device time is 15 minutes a session):
  carry:     [".gpu"]
  timeout_s: 600
  command:   bash scripts/gpu-check.sh .gpu/bredon.xz wgpu 2>&1 | tee $OUT/gpu-check.log
EOF
