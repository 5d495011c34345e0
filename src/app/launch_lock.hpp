#pragma once
// Whether the launch that recorded a job is still alive. A launch takes an exclusive flock on
// <state>/launch/<token>.lock (its job's submit token) before it records the job, and gives it up once the
// job's remote id is stored (or the job has failed). The kernel drops the lock when the process dies,
// however it dies (SIGKILL included), so a `status` that can take the lock knows nobody is submitting
// that job any more and may settle it: find what the launch submitted, or say it submitted nothing.

#include <memory>
#include <string>

#include "core/error.hpp"

namespace tandem::app {

// Takes the lock for `token`, held by this process until release_launch_lock() or its exit.
Status hold_launch_lock(const std::string& state_dir, const std::string& token);
// Gives it up and removes the file.
void release_launch_lock(const std::string& state_dir, const std::string& token);

// The lock of a launch that is gone, held by the caller until this object is destroyed (the file goes
// with it); null while that launch still holds it.
class AbandonedLaunch {
public:
    AbandonedLaunch(std::string path, int fd) : m_path(std::move(path)), m_fd(fd) {}
    ~AbandonedLaunch();
    AbandonedLaunch(const AbandonedLaunch&) = delete;
    AbandonedLaunch& operator=(const AbandonedLaunch&) = delete;

private:
    std::string m_path;
    int m_fd; // -1 when the lock file was already gone
};
std::unique_ptr<AbandonedLaunch> take_abandoned_launch(const std::string& state_dir, const std::string& token);

} // namespace tandem::app
