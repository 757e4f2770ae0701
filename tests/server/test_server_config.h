// The daemon configuration the in-process server tests start from: the CPU engine, the small
// field, 4 robots, one engine thread, loopback on a free port.
#pragma once

#include "server/server_config.h"

namespace fieldbrain::server::testing {

inline ServerConfig TestServerConfig() {
  ServerConfig c;
  c.listen = "127.0.0.1:0";
  c.engine = "cpu";
  c.field = "small";
  c.max_robots = 4;
  c.threads = 1;
  c.batch_window_us = 200;
  c.idle_keep_s = 60;
  c.shutdown_deadline_s = 5;
  c.max_frame_hz = 0;  // tests that flood on purpose measure other things; the limit has its own test
  c.stream_idle_timeout_s = 0;  // tests that pause on purpose (slow sanitizer builds too); its own test
  return c;
}

}  // namespace fieldbrain::server::testing
