// How an engine reports where a cycle's time goes, without depending on telemetry:
// telemetry implements StageTimingSink, the engines call it.
//
// Both engines report three spans per batch, since the cycle runs as three fused passes:
//   kPredict  step 1: error against the last prediction, confidence (open cycle)
//   kEvolve   steps 2-3 and the field's reduction: imprint, evolve, pooled features
//   kMotor    steps 4-6: features, motors, reward and prediction learning (close cycle)
// kImprint, kGradient and kMemory name stages that a later engine may time on their own (the
// HRR memory will report kMemory).
#pragma once

namespace fieldbrain {

enum class Stage { kImprint, kEvolve, kGradient, kMotor, kPredict, kMemory, kCount };

inline const char* StageName(Stage s) {
  switch (s) {
    case Stage::kImprint: return "imprint";
    case Stage::kEvolve: return "evolve";
    case Stage::kGradient: return "gradient";
    case Stage::kMotor: return "motor";
    case Stage::kPredict: return "predict";
    case Stage::kMemory: return "memory";
    case Stage::kCount: break;  // the count, not a stage
  }
  return "unknown";  // kCount, or a value cast from out of range
}

class StageTimingSink {
 public:
  virtual ~StageTimingSink() = default;
  // `seconds` of stage `s` for one batch of `batch_size` robots (CUDA events on GPU,
  // steady clock on CPU).
  virtual void RecordStage(Stage s, double seconds, int batch_size) = 0;
};

}  // namespace fieldbrain
