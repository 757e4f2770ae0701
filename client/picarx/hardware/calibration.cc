#include "client/picarx/hardware/calibration.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace fieldbrain::picarx {
namespace {

// "[a,b,c]" (spaces already removed) to exactly `n` finite numbers.
absl::StatusOr<std::vector<double>> ParseList(absl::string_view value, size_t n) {
  if (!absl::ConsumePrefix(&value, "[") || !absl::ConsumeSuffix(&value, "]")) {
    return absl::InvalidArgumentError("expected a list like [1, 2]");
  }
  std::vector<double> out;
  for (absl::string_view item : absl::StrSplit(value, ',')) {
    double v = 0;
    if (!absl::SimpleAtod(item, &v) || !std::isfinite(v)) {
      return absl::InvalidArgumentError(absl::StrCat("'", item, "' is not a number"));
    }
    out.push_back(v);
  }
  if (out.size() != n) return absl::InvalidArgumentError(absl::StrCat("expected ", n, " numbers, got ", out.size()));
  return out;
}

absl::StatusOr<float> ParseDegrees(absl::string_view value) {
  double v = 0;
  if (!absl::SimpleAtod(value, &v) || !std::isfinite(v)) return absl::InvalidArgumentError("expected a number of degrees");
  if (std::abs(v) > 45.0) return absl::InvalidArgumentError("an offset over 45 degrees is not a calibration");
  return float(v);
}

}  // namespace

absl::StatusOr<Calibration> ParseCalibration(const std::string& text) {
  Calibration c;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;  // fileDB skips such lines too
    const std::string key(absl::StripAsciiWhitespace(line.substr(0, eq)));
    std::string value(line.substr(eq + 1));
    value.erase(std::remove(value.begin(), value.end(), ' '), value.end());
    value.erase(std::remove(value.begin(), value.end(), '\r'), value.end());
    absl::Status bad;
    if (key == "picarx_dir_servo" || key == "picarx_cam_pan_servo" || key == "picarx_cam_tilt_servo") {
      absl::StatusOr<float> deg = ParseDegrees(value);
      if (!deg.ok()) {
        bad = deg.status();
      } else if (key == "picarx_dir_servo") {
        c.steering_offset_deg = *deg;
      } else if (key == "picarx_cam_pan_servo") {
        c.pan_offset_deg = *deg;
      } else {
        c.tilt_offset_deg = *deg;
      }
    } else if (key == "picarx_dir_motor") {
      absl::StatusOr<std::vector<double>> dirs = ParseList(value, 2);
      if (!dirs.ok()) {
        bad = dirs.status();
      } else if (((*dirs)[0] != 1 && (*dirs)[0] != -1) || ((*dirs)[1] != 1 && (*dirs)[1] != -1)) {
        bad = absl::InvalidArgumentError("motor directions must be 1 or -1");
      } else {
        c.motor_direction = {int((*dirs)[0]), int((*dirs)[1])};
      }
    } else if (key == "line_reference" || key == "cliff_reference") {
      absl::StatusOr<std::vector<double>> refs = ParseList(value, 3);
      if (!refs.ok()) {
        bad = refs.status();
      } else {
        auto& target = key == "line_reference" ? c.line_reference : c.cliff_reference;
        for (int i = 0; i < 3; ++i) {
          if ((*refs)[i] < 0 || (*refs)[i] > 4095) bad = absl::InvalidArgumentError("references are ADC values, 0-4095");
          target[i] = float((*refs)[i]);
        }
      }
    }
    if (!bad.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": ", key, " = ", value, ": ", bad.message()));
    }
  }
  return c;
}

absl::StatusOr<Calibration> ReadCalibration(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": not a regular file"));
  }
  std::ifstream in(path);
  if (!in) {
    const int error = errno;
    if (error == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no calibration file"));
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": ", std::strerror(error)));
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<Calibration> c = ParseCalibration(text.str());
  if (!c.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", c.status().message()));
  return c;
}

}  // namespace fieldbrain::picarx
