#!/usr/bin/env bash
# Two rules every kernel file of a CUDA target must keep, read from the PTX nvcc makes of it with
# that target's own flags:
# - the contraction policy (docs/decisions.md, "Parity by construction" and "Fused multiply-adds"):
#   every float multiply and add rounded explicitly (.rn, which ptxas may not fuse). The fma.rn
#   the PTX holds are the model's own model::mul_add, written out; with contraction on, nvcc
#   leaves plain mul/add without .rn for ptxas to fuse, which is what fails here;
# - every kernel declares its launch bound (FB_KERNEL, gpu/cuda/kernel_macros.h): a .maxntid on
#   every .entry, which the emulation build enforces at each launch as a card does.
# Usage: kernels_ptx_test.sh NVCC TARGET_DIR SOURCE.cu... (TARGET_DIR: the target's
# CMakeFiles/<name>.dir, whose flags.make holds the flags the build uses).
set -euo pipefail
nvcc=$1
target_dir=$2
shift 2

flags_line=$(grep -E '^CUDA_FLAGS = ' "$target_dir/flags.make" | sed 's/^CUDA_FLAGS = //')
defines=$(grep -E '^CUDA_DEFINES = ' "$target_dir/flags.make" | sed 's/^CUDA_DEFINES = //' || true)
includes_file="$target_dir/includes_CUDA.rsp"
# One architecture is enough to read the PTX: drop the fat binary's list.
read -r -a flags <<<"$(sed -E 's/--generate-code=[^ ]+//g' <<<"$flags_line")"
read -r -a define_args <<<"$defines"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failed=0
for source in "$@"; do
  ptx="$scratch/$(basename "$source").ptx"
  (cd "$(dirname "$target_dir")/.." && "$nvcc" "${define_args[@]}" --options-file "$includes_file" "${flags[@]}" \
    -arch=compute_90 -ptx "$source" -o "$ptx")
  fused=$(grep -c 'fma\.rn\.f32' "$ptx" || true)
  unrounded=$(grep -cE '^\s*(mul|add|sub)\.f32' "$ptx" || true)
  rounded=$(grep -cE '^\s*(mul|add|sub)\.rn\.f32' "$ptx" || true)
  entries=$(grep -cE '^(\.visible )?\.entry' "$ptx" || true)
  bounded=$(grep -cE '^\s*\.maxntid' "$ptx" || true)
  echo "$(basename "$source"): fma.rn.f32 $fused, mul/add/sub without .rn $unrounded, with .rn $rounded;" \
    "kernels $entries, with a launch bound $bounded"
  if [[ $unrounded -ne 0 || $rounded -eq 0 ]]; then
    echo "  FAIL: $source is compiled with FMA contraction allowed" >&2
    failed=1
  fi
  if [[ $entries -ne $bounded ]]; then
    echo "  FAIL: $source has a kernel without a launch bound (declare it with FB_KERNEL)" >&2
    failed=1
  fi
done
exit $failed
