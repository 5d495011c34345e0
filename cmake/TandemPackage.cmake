# `cpack -G DEB` in a build folder (scripts/package does it for a Release build): tandem_VERSION_ARCH.deb, the
# files `cmake --install` installs (cmake/TandemInstall.cmake) under /usr.
set(TANDEM_PACKAGE_MAINTAINER "tandem maintainers <maintainers@users.noreply.a-seed-840f469f.example>"
  CACHE STRING "The Maintainer: line of the .deb")
set(CPACK_PACKAGE_NAME tandem)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "one task spec, run on Slurm, Kubernetes or this machine")
set(CPACK_PACKAGE_DESCRIPTION "tandem launches a task (SkyPilot task YAML) on the best of the clusters
it is configured with: Slurm (slurmrestd or SSH), Kubernetes, or this machine.
It plans where a task fits and explains why, submits plain native objects (an
sbatch script, a batch/v1 Job), follows the job's state and output, and keeps
a record of every job on this machine. Nothing is installed on the clusters.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${TANDEM_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
# dpkg-shlibdeps reads the libraries both programs link (libfmt9, libxxhash0, libcpp-httplib0.11, libssl3...).
# It cannot see the two tandem loads with dlopen on first use (net/dl_library.hpp): libcurl.so.4 for https
# (Kubernetes) and proxies, libssh2.so.1 for Slurm over SSH. They are listed here.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libcurl4, libssh2-1")
include(CPack)
