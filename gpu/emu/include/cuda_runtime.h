// What nvcc includes in every .cu file: the runtime API and the vector types (gpu/emu/).
#pragma once

#include "cuda_runtime_api.h"
