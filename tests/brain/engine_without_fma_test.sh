#!/usr/bin/env bash
# The contraction policy on the host (docs/decisions.md, "Parity by construction"): the CPU
# engine's and HRR backend's machine code holds no fused multiply-add (x86 vfmadd/vfmsub/vfnmadd,
# Arm fmadd/fmsub/fmla/fmls), whatever -march the build chose. Usage: engine_without_fma_test.sh LIB...
set -euo pipefail
failed=0
for lib in "$@"; do
  fused=$(objdump -d --no-show-raw-insn "$lib" | grep -cE '\s(vfn?m(add|sub)[0-9]*[sp][sd]|fn?m(add|sub)|fml[as])\s' || true)
  echo "$(basename "$lib"): $fused fused multiply-add instructions"
  [[ $fused -eq 0 ]] || failed=1
done
exit $failed
