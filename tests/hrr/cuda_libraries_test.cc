// cuFFT and cuBLAS open at run time with every entry point the CUDA backend calls (no GPU needed:
// only the libraries of the toolkit the build used). A misspelt symbol or soname fails here, on
// any machine with the toolkit, rather than on the first GPU that runs a cleanup.
#include "gtest/gtest.h"
#include "gpu/hrr/cuda/cuda_libraries.h"

namespace fieldbrain::hrr::cuda {
namespace {

TEST(CudaLibraries, OpenWithEveryEntryPoint) {
  const absl::Status loaded = LoadCudaLibraries();
  ASSERT_TRUE(loaded.ok()) << loaded;
  EXPECT_NE(Cufft().create, nullptr);
  EXPECT_NE(Cufft().exec_c2r, nullptr);
  EXPECT_NE(Cublas().sgemm, nullptr);
  // A call that needs no device: the library answers through the loaded pointer.
  EXPECT_STREQ(Cublas().status_name(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_EQ(LoadCudaLibraries().code(), loaded.code());  // once per process, the same answer
}

}  // namespace
}  // namespace fieldbrain::hrr::cuda
