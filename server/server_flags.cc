#include "server/server_flags.h"

#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"

// Defined in test_hook_flags.cc, apart, so that --help does not offer it to operators.
ABSL_DECLARE_FLAG(int64_t, test_fail_engine_after_batches);
ABSL_DECLARE_FLAG(std::string, test_inject_device_fault);

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "gRPC listen address, host:port (use 0.0.0.0:50051 to accept robots on the network)");
ABSL_FLAG(std::string, health_probe, "",
          "probe mode: ask the gRPC health service of the daemon at this host:port (plaintext) whether "
          "it serves, print the answer and exit 0 (SERVING) or 1 (anything else); starts no daemon. "
          "For a container's HEALTHCHECK: --health_probe=127.0.0.1:50051");
ABSL_FLAG(std::string, serve, "both",
          "services this process runs: both (robots' brains and the Memory service), brain (no Memory "
          "service) or memory (the Memory service alone: no engine, no robot sessions). A sticky "
          "device error ends the process (exit 3) and with it every service it runs: run the Memory "
          "service apart (docs/deploying.md) so that its faults and its memory never reach the robots");
ABSL_FLAG(std::string, engine, "auto",
          "compute engine: auto (CUDA when a device is present, else CPU), cpu, or cuda");
ABSL_FLAG(std::string, field, "auto",
          "field shape per brain: default (64 channels x 32^3), small (32 channels x 16^3), tiny (16 "
          "channels x 8^3: load tests, where the engine's share must vanish), or auto (default on "
          "the CUDA engine, small on the CPU engine)");
ABSL_FLAG(int, max_robots, 64, "brain slots allocated at start (1-4096): robots served at once");
ABSL_FLAG(int, max_batch, 0,
          "most robots per batched engine cycle (1..max_robots); 0 = min(max_robots, 64). Each "
          "batch row costs one spare field of memory");
ABSL_FLAG(int, batch_window_us, 200,
          "microseconds a batch waits for more robots' frames after the first arrives (0-1000000)");
ABSL_FLAG(int, max_message_bytes, 16 * 1024,
          "largest request accepted (1024-4194304 bytes); a larger one ends its stream with "
          "RESOURCE_EXHAUSTED");
ABSL_FLAG(int, idle_keep_s, 60,
          "seconds a disconnected robot's brain is kept for a resume with its token (0 = release "
          "at once)");
ABSL_FLAG(int, hello_timeout_s, 10,
          "seconds a new stream may take to send its Hello before it is ended with "
          "DEADLINE_EXCEEDED (1-3600)");
ABSL_FLAG(double, stream_idle_timeout_s, 1.0,
          "seconds a running stream may send no frame before it is ended with DEADLINE_EXCEEDED, its "
          "brain kept for a resume (0 = never; else 0.05-3600). Behind a proxy, keepalive pings end "
          "at the proxy: this is how the daemon notices a vanished robot");
ABSL_FLAG(int, max_frame_hz, 1000,
          "per-robot frame-rate limit: frames per second on average (0 = no limit, up to 100000); "
          "frames beyond it are answered RATE_LIMITED and not run");
ABSL_FLAG(int, frame_burst, 200, "frames a robot may send at once before --max_frame_hz applies (1-100000)");
ABSL_FLAG(int, shutdown_deadline_s, 5,
          "seconds SIGTERM/SIGINT waits for streams to finish before cancelling them (0-600)");
ABSL_FLAG(std::string, tls_cert, "", "TLS: the server's PEM certificate chain (with --tls_key); empty = plaintext");
ABSL_FLAG(std::string, tls_key, "", "TLS: the server's PEM private key");
ABSL_FLAG(std::string, tls_client_ca, "",
          "mutual TLS: a PEM CA bundle; every client must present a certificate it signed");
ABSL_FLAG(std::string, tokens_file, "",
          "bearer tokens and the robot ids / Memory spaces each may use (docs/security.md); empty = "
          "anyone who reaches the port; re-read on SIGHUP");
ABSL_FLAG(std::string, checkpoint_dir, "",
          "keep every robot's brain here (one file each, docs/checkpoint-format.md), so a restarted "
          "daemon gives it back to a Hello with its resume token; empty = brains live in memory only");
ABSL_FLAG(int, checkpoint_every_cycles, 500,
          "checkpoint a robot every this many of its cycles (0 = only on disconnect, idle expiry and "
          "shutdown)");
ABSL_FLAG(std::string, metrics_listen, "",
          "Prometheus /metrics address, host:port; empty = no metrics endpoint");
ABSL_FLAG(int, threads, 0, "CPU engine worker threads; 0 = all cores");
ABSL_FLAG(int64_t, memory_arena_bytes, fieldbrain::server::kDefaultMemoryArenaBytes,
          "bytes the Memory service's HRR spaces may take in all, on the engine's device, the CUDA "
          "backend's one shared cuBLAS work area (32 MiB from Hopper on) included (0 = no Memory "
          "service; else 1 MiB to 1 TiB)");
ABSL_FLAG(int, memory_max_request_vectors, fieldbrain::server::kDefaultMemoryMaxRequestVectors,
          "most vectors one Memory request may name or make (1-65536); a Cleanup compares at most "
          "16 times as many pairs. Bounds how long one request holds up the Memory requests queued "
          "behind it (the default: a few ms on one CPU core at dimension 1024)");

namespace fieldbrain::server {

ServerConfig ConfigFromFlags() {
  ServerConfig c;
  c.listen = absl::GetFlag(FLAGS_listen);
  c.serve = absl::GetFlag(FLAGS_serve);
  c.engine = absl::GetFlag(FLAGS_engine);
  c.field = absl::GetFlag(FLAGS_field);
  c.max_robots = absl::GetFlag(FLAGS_max_robots);
  c.max_batch = absl::GetFlag(FLAGS_max_batch);
  c.batch_window_us = absl::GetFlag(FLAGS_batch_window_us);
  c.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  c.idle_keep_s = absl::GetFlag(FLAGS_idle_keep_s);
  c.hello_timeout_s = absl::GetFlag(FLAGS_hello_timeout_s);
  c.stream_idle_timeout_s = absl::GetFlag(FLAGS_stream_idle_timeout_s);
  c.max_frame_hz = absl::GetFlag(FLAGS_max_frame_hz);
  c.frame_burst = absl::GetFlag(FLAGS_frame_burst);
  c.shutdown_deadline_s = absl::GetFlag(FLAGS_shutdown_deadline_s);
  c.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  c.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  c.tls_key = absl::GetFlag(FLAGS_tls_key);
  c.tls_client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  c.tokens_file = absl::GetFlag(FLAGS_tokens_file);
  c.checkpoint_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  c.checkpoint_every_cycles = absl::GetFlag(FLAGS_checkpoint_every_cycles);
  c.threads = absl::GetFlag(FLAGS_threads);
  c.memory_arena_bytes = absl::GetFlag(FLAGS_memory_arena_bytes);
  c.memory_max_request_vectors = absl::GetFlag(FLAGS_memory_max_request_vectors);
  c.test_fail_engine_after_batches = absl::GetFlag(FLAGS_test_fail_engine_after_batches);
  c.test_inject_device_fault = absl::GetFlag(FLAGS_test_inject_device_fault);
  return c;
}

std::string HealthProbeTargetFromFlags() { return absl::GetFlag(FLAGS_health_probe); }

}  // namespace fieldbrain::server
