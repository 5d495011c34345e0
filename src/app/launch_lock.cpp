#include "app/launch_lock.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

namespace tandem::app {

namespace {

std::mutex g_mutex;
std::map<std::string, int> g_held; // path -> fd, for this process's launches

std::string lock_path(const std::string& state_dir, const std::string& token) {
    return fmt::format("{}/launch/{}.lock", state_dir, token);
}

} // namespace

Status hold_launch_lock(const std::string& state_dir, const std::string& token) {
    const std::string path = lock_path(state_dir, token);
    std::error_code ec;
    std::filesystem::create_directories(state_dir + "/launch", ec);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        const int err = errno;
        return fail(ErrorKind::config,
                    fmt::format("cannot record a job in {}: its launch lock {} cannot be made: {}", state_dir,
                                path, std::strerror(err)),
                    err == EROFS || err == EACCES ? "the state folder must be writable to launch (TANDEM_HOME)"
                                                  : "");
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        ::close(fd);
        return fail(ErrorKind::internal, fmt::format("cannot lock {}: {}", path, std::strerror(err)));
    }
    std::lock_guard lock(g_mutex);
    g_held[path] = fd;
    return {};
}

void release_launch_lock(const std::string& state_dir, const std::string& token) {
    const std::string path = lock_path(state_dir, token);
    std::lock_guard lock(g_mutex);
    auto it = g_held.find(path);
    if (it == g_held.end()) {
        return;
    }
    ::unlink(path.c_str()); // before close: nobody can take a lock on a file that is about to go
    ::close(it->second);
    g_held.erase(it);
}

AbandonedLaunch::~AbandonedLaunch() {
    if (m_fd >= 0) {
        ::unlink(m_path.c_str());
        ::close(m_fd);
    }
}

std::unique_ptr<AbandonedLaunch> take_abandoned_launch(const std::string& state_dir, const std::string& token) {
    const std::string path = lock_path(state_dir, token);
    {
        std::lock_guard lock(g_mutex);
        if (g_held.count(path)) {
            return nullptr; // this very process is the launch (a group follows its pipeline's stages)
        }
    }
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        // No lock file: the launch released it (and then stored the id, or failed the job), or never got
        // as far as taking it. Either way nobody holds it.
        return std::make_unique<AbandonedLaunch>(path, -1);
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd);
        return nullptr; // the launch is alive and submitting
    }
    return std::make_unique<AbandonedLaunch>(path, fd);
}

} // namespace tandem::app
