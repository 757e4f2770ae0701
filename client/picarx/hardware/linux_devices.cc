#include "client/picarx/hardware/linux_devices.h"

#include <fcntl.h>
#include <gpiod.h>
#include <linux/i2c-dev.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fieldbrain::picarx {
namespace {

constexpr char kConsumer[] = "picarx-brainstem";

std::string Errno() { return std::strerror(errno); }

class GpiodLine final : public GpioLine {
 public:
  GpiodLine(std::string name, gpiod_line* line) : name_(std::move(name)), line_(line) {}
  ~GpiodLine() override { gpiod_line_release(line_); }
  absl::Status Set(bool high) override {
    if (gpiod_line_set_value(line_, high ? 1 : 0) != 0) {
      return absl::UnavailableError(absl::StrCat("gpio ", name_, ": set failed: ", Errno()));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<bool> Get() override {
    const int v = gpiod_line_get_value(line_);
    if (v < 0) return absl::UnavailableError(absl::StrCat("gpio ", name_, ": read failed: ", Errno()));
    return v == 1;
  }

 private:
  const std::string name_;
  gpiod_line* const line_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<LinuxI2cBus>> LinuxI2cBus::Open(const std::string& device, int address) {
  const int fd = ::open(device.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot open ", device, ": ", Errno(),
        " (is I2C enabled (raspi-config, dtparam=i2c_arm=on) and is this user in group i2c?)"));
  }
  if (::ioctl(fd, I2C_SLAVE, address) < 0) {
    const std::string error = Errno();
    ::close(fd);
    return absl::UnavailableError(absl::StrFormat("%s: cannot address device 0x%02x: %s", device, address, error));
  }
  return std::unique_ptr<LinuxI2cBus>(new LinuxI2cBus(device, address, fd));
}

LinuxI2cBus::~LinuxI2cBus() { ::close(fd_); }

absl::Status LinuxI2cBus::Write(std::span<const uint8_t> bytes) {
  const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
  if (n != ssize_t(bytes.size())) {
    return absl::UnavailableError(absl::StrFormat("i2c write to 0x%02x on %s failed: %s", address_, device_,
                                                  n < 0 ? Errno() : "short write"));
  }
  return absl::OkStatus();
}

absl::Status LinuxI2cBus::Read(std::span<uint8_t> bytes) {
  const ssize_t n = ::read(fd_, bytes.data(), bytes.size());
  if (n != ssize_t(bytes.size())) {
    return absl::UnavailableError(absl::StrFormat("i2c read from 0x%02x on %s failed: %s", address_, device_,
                                                  n < 0 ? Errno() : "short read"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<GpioChip>> GpioChip::Open(const std::string& name) {
  gpiod_chip* chip = gpiod_chip_open_by_name(name.c_str());
  if (chip == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot open GPIO chip ", name, ": ", Errno(),
                                               " (is this user in group gpio?)"));
  }
  return std::unique_ptr<GpioChip>(new GpioChip(name, chip));
}

GpioChip::~GpioChip() { gpiod_chip_close(chip_); }

absl::StatusOr<std::unique_ptr<GpioLine>> GpioChip::RequestOutput(unsigned offset, bool initial_high) {
  const std::string name = absl::StrCat(name_, ":", offset);
  gpiod_line* line = gpiod_chip_get_line(chip_, offset);
  if (line == nullptr || gpiod_line_request_output(line, kConsumer, initial_high ? 1 : 0) != 0) {
    return absl::UnavailableError(absl::StrCat("gpio ", name, ": cannot request as output: ", Errno()));
  }
  return std::make_unique<GpiodLine>(name, line);
}

absl::StatusOr<std::unique_ptr<GpioLine>> GpioChip::RequestInput(unsigned offset) {
  const std::string name = absl::StrCat(name_, ":", offset);
  gpiod_line* line = gpiod_chip_get_line(chip_, offset);
  // Pulled down, as SunFounder's driver does: an unconnected echo reads low, never "open space".
  if (line == nullptr || gpiod_line_request_input_flags(line, kConsumer, GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN) != 0) {
    return absl::UnavailableError(absl::StrCat("gpio ", name, ": cannot request as input: ", Errno()));
  }
  return std::make_unique<GpiodLine>(name, line);
}

}  // namespace fieldbrain::picarx
