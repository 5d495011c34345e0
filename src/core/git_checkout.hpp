#pragma once
// The shell that checks out a git workdir (`workdir: {url, ref}`) where a job runs, shared by every
// backend: each runs it on every node before setup, into a directory of its own choosing, and a failed
// clone ends the node with git's message and exit code before setup or run start.
//
// The node's environment carries TANDEM_GIT_URL and TANDEM_GIT_REF (empty: the default branch), and, as
// in SkyPilot, the secrets GIT_TOKEN (https; sent as an HTTP header through git's environment, so it is
// in no URL, no command line and no .git/config) and GIT_SSH_KEY (the private key itself, for ssh URLs;
// written to a mode-600 file that is removed afterwards).

#include <string>
#include <utility>
#include <vector>

#include "core/spec.hpp"

namespace tandem {

// Defines the bash function `tandem_git_checkout DIR` (fixed text: no user input in it).
std::string git_checkout_function();

// The environment the function reads: TANDEM_GIT_URL, TANDEM_GIT_REF, and GIT_URL as SkyPilot sets it.
std::vector<std::pair<std::string, std::string>> git_checkout_environment(const GitWorkdir& git);

} // namespace tandem
