#include "sim/cli/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "isa/error.h"
#include "sim/cli/interrupt.h"

namespace fracsim::cli {

namespace {

ConfigError cannot_write(const std::string& path, int err) {
  return ConfigError(fmt::format("{}: cannot write file ({})", path, std::strerror(err)));
}

}  // namespace

void check_writable(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  const fs::file_status st = fs::status(target, ec);
  if (!ec && fs::is_directory(st)) throw cannot_write(path, EISDIR);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st)) {
    const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw cannot_write(path, errno);
    ::close(fd);
    return;
  }
  // The folder takes a new file: the one write_file_atomically's temporary would be.
  const fs::path probe =
      target.parent_path() / fmt::format(".{}.probe-{}", target.filename().string(), ::getpid());
  set_pending_temporary(probe.string());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  const int err = errno;
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
  }
  set_pending_temporary("");
  if (fd < 0) throw cannot_write(path, err);
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  auto fail = [&](int err) { return cannot_write(path, err); };
  // A device or a pipe (-o /dev/null, -o /dev/stdout) is written in place: renaming a file
  // over it would replace the device itself.
  std::error_code ec;
  const fs::file_status st = fs::status(target, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st)) {
    const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw fail(errno);
    size_t done = 0;
    while (done < contents.size()) {
      const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        ::close(fd);
        throw fail(err);
      }
      done += static_cast<size_t>(n);
    }
    if (::close(fd) != 0) throw fail(errno);
    return;
  }
  // Hidden, and unique per process and call, so that concurrent writers (sweep runs) and a
  // glob for the results never meet a temporary.
  static std::atomic<unsigned> counter{0};
  fs::path tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    tmp = target.parent_path() / fmt::format(".{}.tmp-{}-{}", target.filename().string(),
                                             ::getpid(), counter++);
    // Named before it exists, so that a signal at any point finds it (interrupt.h).
    set_pending_temporary(tmp.string());
    // 0666 less the umask, as a file the program opened itself would have.
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt > 100)) {
      const int err = errno;
      set_pending_temporary("");
      throw fail(err);
    }
  }
  const char* p = contents.data();
  size_t left = contents.size();
  int err = 0;
  while (left > 0 && err == 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && std::rename(tmp.c_str(), target.c_str()) != 0) err = errno;
  if (err != 0) ::unlink(tmp.c_str());
  set_pending_temporary("");
  if (err != 0) throw fail(err);
}

void make_directories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw ConfigError(fmt::format("{}: cannot create directory ({})", path, ec.message()));
}

void check_directory_writable(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path dir = fs::absolute(fs::path(path));
  std::error_code ec;
  while (!fs::exists(dir, ec) && dir.has_relative_path()) dir = dir.parent_path();
  auto fail = [&](int err) {
    return ConfigError(fmt::format("{}: cannot create directory ({})", path, std::strerror(err)));
  };
  if (!fs::is_directory(dir, ec)) throw fail(ENOTDIR);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) throw fail(errno);
}

}  // namespace fracsim::cli
