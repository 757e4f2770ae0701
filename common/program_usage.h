// What `--help` and `--version` print for each of fieldbrain's programs.
//
// absl's default --help lists only flags defined in a file named after the program (brain-sim has
// none, so it printed "No flags matched") and names each file by the build machine's path. Every
// program calls SetProgramUsage once, before absl::ParseCommandLine: --help then lists exactly the
// flags defined in `flag_files` (base names, e.g. "brain_sim_main.cc"), each group headed by the
// file's base name, never a path; --version prints "<program> <FIELDBRAIN_VERSION>".
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace fieldbrain {

void SetProgramUsage(absl::string_view program, absl::string_view usage, std::vector<std::string> flag_files);

}  // namespace fieldbrain
