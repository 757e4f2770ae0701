// What the Brain service's streams use, owned by the server (brain_server.h) and shared by every
// stream and by Hello admission.
#pragma once

#include <string>

#include "brain/v1/brain.pb.h"
#include "server/access_control.h"
#include "server/batch_scheduler.h"
#include "server/brain_directory.h"
#include "server/checkpoint/checkpointer.h"
#include "telemetry/metrics.h"

namespace fieldbrain::server {

struct ServiceDeps {
  BrainDirectory* directory = nullptr;  // where every robot's brain is; not owned
  BatchScheduler* scheduler = nullptr;
  telemetry::Metrics* metrics = nullptr;  // nullable
  brain::v1::ServerLimits limits;
  int max_frame_hz = 0;  // per robot; 0 = no limit (server_config.h)
  int frame_burst = 1;
  const AccessControl* access = nullptr;  // who may drive which robot; not owned
  Checkpointer* checkpointer = nullptr;   // nullable: no --checkpoint_dir
  std::string version;
};

}  // namespace fieldbrain::server
