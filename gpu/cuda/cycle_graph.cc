#include "gpu/cuda/cycle_graph.h"

#include <vector>

#include "gpu/cuda/cuda_check.h"

namespace fieldbrain::cuda {
namespace {

// Where a pointer lives, for copy nodes captured with cudaMemcpyDefault.
absl::StatusOr<bool> IsDevicePointer(const void* p) {
  cudaPointerAttributes attr{};
  FB_CUDA_CHECK(cudaPointerGetAttributes(&attr, p));
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

absl::StatusOr<cudaMemcpyKind> DirectionOf(const cudaMemcpy3DParms& copy) {
  if (copy.kind != cudaMemcpyDefault) return copy.kind;
  bool src_device = copy.srcArray != nullptr, dst_device = copy.dstArray != nullptr;
  if (!src_device) {
    absl::StatusOr<bool> d = IsDevicePointer(copy.srcPtr.ptr);
    if (!d.ok()) return d.status();
    src_device = *d;
  }
  if (!dst_device) {
    absl::StatusOr<bool> d = IsDevicePointer(copy.dstPtr.ptr);
    if (!d.ok()) return d.status();
    dst_device = *d;
  }
  if (src_device) return dst_device ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
  return dst_device ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost;
}

}  // namespace

absl::StatusOr<CycleGraph> CycleGraph::Capture(cudaStream_t stream, absl::FunctionRef<absl::Status()> enqueue) {
  CycleGraph g;
  FB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  const absl::Status enqueued = enqueue();
  cudaGraph_t raw = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &raw);  // always ends the capture
  g.graph_ = Graph(raw);
  if (!enqueued.ok()) return enqueued;
  FB_CUDA_CHECK(ended);

  cudaGraphExec_t exec = nullptr;
  FB_CUDA_CHECK(cudaGraphInstantiate(&exec, g.graph_.get(), 0));
  g.exec_ = GraphExec(exec);

  size_t count = 0;
  FB_CUDA_CHECK(cudaGraphGetNodes(g.graph_.get(), nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  FB_CUDA_CHECK(cudaGraphGetNodes(g.graph_.get(), nodes.data(), &count));
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    FB_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeMemcpy) continue;
    cudaMemcpy3DParms copy{};
    FB_CUDA_CHECK(cudaGraphMemcpyNodeGetParams(node, &copy));
    absl::StatusOr<cudaMemcpyKind> kind = DirectionOf(copy);
    if (!kind.ok()) return kind.status();
    CountCopy(g.per_launch_, *kind, int64_t(copy.extent.width) * int64_t(copy.extent.height) * int64_t(copy.extent.depth));
  }
  return g;
}

absl::Status CycleGraph::Launch(cudaStream_t stream, CudaCounters& counters) const {
  ++counters.graph_launches;
  FB_CUDA_CHECK(cudaGraphLaunch(exec_.get(), stream));
  counters.h2d_copies += per_launch_.h2d_copies;
  counters.d2h_copies += per_launch_.d2h_copies;
  counters.h2d_bytes += per_launch_.h2d_bytes;
  counters.d2h_bytes += per_launch_.d2h_bytes;
  return absl::OkStatus();
}

}  // namespace fieldbrain::cuda
